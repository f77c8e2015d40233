/**
 * The pipeline every /api call goes through, whichever route group runs it: match the path
 * (paths and methods from the service's operation table), read the body (at most 64 KiB),
 * identify the caller, apply an injected fault, take a rate-limit token, run the operation,
 * answer. docs/simulator.md#requests-and-errors
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { OPERATIONS, type OperationId } from "../../spec/schemas.js";
import type { RequestLogEntry } from "../types.js";
import { authorize, countSuccess, decodeBearer, rateKey, resolveAccount } from "./auth.js";
import {
  BodyTooLarge,
  MAX_BODY_BYTES,
  errorResult,
  readBody,
  send,
  type Call,
  type Operation,
  type Result,
  type Route,
  type Runtime,
} from "./common.js";
import { applyFault, sendSlow } from "./fault-replies.js";

/** Every operation of the service, each registered by its route group (routes.ts). */
export type OperationTable = Record<OperationId, Operation>;

type RouteMatch = { route: Route } | { notAllowed: string[] } | null;

/** `/api/device/{deviceId}/unlock` -> /^\/api\/device\/([^/]+)\/unlock$/ */
const PATTERNS = (Object.keys(OPERATIONS) as OperationId[]).map((operation) => ({
  operation,
  method: OPERATIONS[operation].method,
  re: new RegExp(`^${OPERATIONS[operation].path.replace(/\{[^}]+\}/g, "([^/]+)")}$`),
}));

/** Parses an int32 path segment; null when it is not one. */
function int32(raw: string | null): number | null {
  if (raw === null || !/^-?[0-9]{1,10}$/.test(raw)) return null;
  const n = Number(raw);
  return n >= -2147483648 && n <= 2147483647 ? n : null;
}

export interface Api {
  /** The operation at this method and path; `notAllowed` (405) for a known path; null (404). */
  match(method: string, path: string): RouteMatch;
  /** Handles a matched /api call, filling in its request log entry. */
  handle(req: IncomingMessage, res: ServerResponse, entry: RequestLogEntry, route: Route): Promise<void>;
}

export function createApi(rt: Runtime, operations: OperationTable): Api {
  const { state } = rt;

  function match(method: string, path: string): RouteMatch {
    for (const p of PATTERNS) {
      const m = p.re.exec(path);
      if (!m) continue;
      if (p.method !== method) return { notAllowed: [p.method] };
      return { route: { operation: p.operation, deviceRaw: m[1] ?? null, lockRaw: m[2] ?? null } };
    }
    return null;
  }

  async function execute(call: Call, opts: { withExp: boolean }): Promise<Result> {
    const operation = operations[call.route.operation];
    if (operation.auth === "none") return operation.run(call, opts);
    const auth = authorize(rt, call);
    if (!auth.ok) return errorResult(401, auth.reason, { "WWW-Authenticate": 'Bearer error="invalid_token"' });
    return operation.run(call, auth.accountId);
  }

  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    entry: RequestLogEntry,
    route: Route,
  ): Promise<void> {
    const op = route.operation;
    entry.operation = op;
    const deviceId = int32(route.deviceRaw);
    const lockId = int32(route.lockRaw);
    entry.deviceId = deviceId;
    entry.lockId = lockId;

    let body: Buffer;
    try {
      body = await readBody(req);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        send(res, errorResult(413, `request body exceeds ${MAX_BODY_BYTES} bytes`, { Connection: "close" }));
        return;
      }
      throw err;
    }

    const call: Call = {
      route,
      bearer: operations[op].auth === "bearer",
      deviceId,
      lockId,
      body,
      claims: null,
      authError: null,
      accountId: null,
      remote: req.socket.remoteAddress ?? "unknown",
      contentType: String(req.headers["content-type"] ?? ""),
    };
    if (call.bearer) {
      const decoded = await decodeBearer(rt, req);
      call.claims = decoded.claims;
      call.authError = decoded.error;
    }
    call.accountId = resolveAccount(rt, call);
    entry.accountId = call.accountId;
    if (typeof call.claims?.jti === "string") entry.tokenId = call.claims.jti;

    const fault = rt.faults.take({ operation: op, deviceId, accountId: call.accountId });
    entry.fault = fault?.kind ?? null;
    if (fault && (await applyFault(rt, fault, call, req, res, execute))) return;
    if (fault?.kind === "latency") await rt.sleep(fault.latencyMs ?? 1000);

    // Logout is never rate limited.
    if (op !== "logout") {
      const taken = state.takeRateToken(rateKey(call));
      if (!taken.ok) {
        send(res, errorResult(429, "rate limit exceeded", { "Retry-After": String(taken.retryAfterSec) }));
        return;
      }
    }

    const result = await execute(call, { withExp: fault?.kind !== "jwt-without-exp" });
    if (call.issuedJti !== undefined) entry.issuedTokenId = call.issuedJti;
    if (rt.isClosed()) return;
    countSuccess(rt, op, result);
    if (fault?.kind === "slow-headers") {
      await sendSlow(rt, res, result, fault.latencyMs ?? 2000);
      return;
    }
    send(res, result, fault?.kind === "wrong-content-type" ? "text/html; charset=utf-8" : undefined);
  }

  return { match, handle };
}
