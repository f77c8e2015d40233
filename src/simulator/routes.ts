/**
 * HTTP routing of the simulator: the ten /api operations, the docs paths and the /_sim
 * control surface, all on one listener.
 *
 * Control routes (loopback only unless allowRemoteControl; never written to the request log):
 *
 *   POST   /_sim/faults                          body: FaultSpec JSON        -> 201 {id}
 *   GET    /_sim/faults                                                      -> 200 [{id, spec, remaining}]
 *   DELETE /_sim/faults                          clear every fault           -> 204
 *   DELETE /_sim/faults/:faultId                 remove one fault            -> 204 | 404
 *   GET    /_sim/devices/:id                     DeviceState                 -> 200 | 404
 *   POST   /_sim/devices/:id/online              body: {"online": boolean}   -> 200 DeviceState | 404
 *   PATCH  /_sim/devices/:id                     body: {name?, locationId?, newId?, remove?} (rename, move,
 *                                                renumber or remove a door)  -> 204 | 400 | 404
 *   GET    /_sim/accounts/:id                    {id, hasSession}            -> 200 | 404
 *   POST   /_sim/accounts/:id/expire-access      current access token -> 401 "expired"   -> 204 | 404
 *   POST   /_sim/accounts/:id/revoke-access      current access token -> 401 "revoked"   -> 204 | 404
 *   POST   /_sim/accounts/:id/expire-refresh     current refresh token -> 401 on refresh -> 204 | 404
 *   POST   /_sim/accounts/:id/supersede          a login from elsewhere  -> 204 | 404
 *   GET    /_sim/requests?operation=&accountId=&deviceId=                    -> 200 RequestLogEntry[]
 *   DELETE /_sim/requests                        clear the request log       -> 204
 *   GET    /_sim/counts                          {logins, refreshes, unlocks} -> 200
 *   POST   /_sim/rate-limit                      body: {capacity, refillPerSec} or false -> 204
 *   POST   /_sim/docs                            what /openapi.json and /openapi.yaml serve instead of the
 *                                                simulator's own description, one of: {"description": {...}}
 *                                                (another description), {"body": "...", "contentType"?: "..."}
 *                                                (a body that is not one), {"status": 404} (an error status),
 *                                                {"drop": true} (the connection closes without an answer)
 *                                                                            -> 204 | 400
 *   DELETE /_sim/docs                            serve the simulator's own description again -> 204
 *
 * Docs (no /api prefix, GET/HEAD): /openapi.json, /openapi.yaml, /openapi.pinned.json, /llms.txt.
 * The request log keeps the names of every request's headers and the value of If-None-Match,
 * never another header's value (an Authorization header shows as its name only).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { jwtVerify, SignJWT } from "jose";
import { rememberIssued } from "./issued.js";
import { z } from "zod";
import {
  LoginByEmailRequest,
  LoginRequest,
  RefreshSessionRequest,
  type OperationId,
} from "../spec/schemas.js";
import { FaultStore, TOKEN_OPERATIONS } from "./faults.js";
import { buildOpenApi, etagMatches, llmsTxt, strongEtag, toYaml } from "./openapi.js";
import { SimState, type AuthFailure, type AuthSuccess } from "./state.js";
import type { DescriptionOverride, FaultSpec, RequestLogEntry, SimulatorControl } from "./types.js";

export const MAX_BODY_BYTES = 64 * 1024;

const STATUS_TITLES: Record<number, string> = {
  400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
  413: "Payload Too Large", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
  503: "Service Unavailable", 504: "Gateway Timeout",
};

export interface Result {
  status: number;
  /** JSON body; undefined = no body. */
  json?: unknown;
  headers?: Record<string, string>;
}

function errorResult(status: number, detail: string, headers?: Record<string, string>, title?: string): Result {
  return { status, json: { status, title: title ?? STATUS_TITLES[status] ?? "Error", detail }, headers };
}

interface Route {
  operation: OperationId;
  deviceRaw: string | null;
  lockRaw: string | null;
}

type RouteMatch = { route: Route } | { notAllowed: string[] } | null;

const PATTERNS: Array<{ re: RegExp; ops: Partial<Record<string, OperationId>> }> = [
  { re: /^\/api\/auth\/login$/, ops: { POST: "login" } },
  { re: /^\/api\/auth\/login-by-phone$/, ops: { POST: "loginByPhone" } },
  { re: /^\/api\/auth\/login-by-email$/, ops: { POST: "loginByEmail" } },
  { re: /^\/api\/auth\/refresh$/, ops: { POST: "refreshToken" } },
  { re: /^\/api\/auth\/logout$/, ops: { POST: "logout" } },
  { re: /^\/api\/device\/([^/]+)$/, ops: { GET: "getDevice" } },
  { re: /^\/api\/device\/([^/]+)\/unlock$/, ops: { PUT: "unlockDevice" } },
  { re: /^\/api\/device\/([^/]+)\/unlock\/([^/]+)$/, ops: { PUT: "unlockDeviceLock" } },
  { re: /^\/api\/user\/location$/, ops: { GET: "listUserLocations" } },
  { re: /^\/api\/user\/device$/, ops: { GET: "listUserDevices" } },
];

function matchRoute(method: string, path: string): RouteMatch {
  for (const p of PATTERNS) {
    const m = p.re.exec(path);
    if (!m) continue;
    const op = p.ops[method];
    if (!op) return { notAllowed: Object.keys(p.ops) };
    return { route: { operation: op, deviceRaw: m[1] ?? null, lockRaw: m[2] ?? null } };
  }
  return null;
}

/** Parses an int32 path segment; null when it is not one. */
function int32(raw: string | null): number | null {
  if (raw === null || !/^-?[0-9]{1,10}$/.test(raw)) return null;
  const n = Number(raw);
  return n >= -2147483648 && n <= 2147483647 ? n : null;
}

const BEARER_OPS: readonly OperationId[] = ["logout", "getDevice", "unlockDevice", "unlockDeviceLock", "listUserLocations", "listUserDevices"];

class BodyTooLarge extends Error {}

/** Reads the request body, at most MAX_BODY_BYTES. */
function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > MAX_BODY_BYTES) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        done = true;
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks));
    });
    req.on("error", (err) => {
      if (done) return;
      done = true;
      reject(err);
    });
  });
}

export class Closed extends Error {}

/** The names of a request's headers, lower case, each once; never a value. */
function headerNames(req: IncomingMessage): string[] {
  const names: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

export interface Runtime {
  state: SimState;
  faults: FaultStore;
  secret: Uint8Array;
  /** Access tokens carry the account in `sub` (SimulatorOptions.subClaim). */
  subClaim: boolean;
  /** Resolves after ms (real time); rejects with Closed when the simulator closes. */
  sleep(ms: number): Promise<void>;
  baseUrl(): string;
  isClosed(): boolean;
  /** What the live docs paths serve instead of the simulator's own description (null: its own). */
  descriptionOverride: DescriptionOverride | null;
}

interface Call {
  route: Route;
  deviceId: number | null;
  lockId: number | null;
  body: Buffer;
  /** Bearer claims when the token's signature checked out (expiry is decided separately). */
  claims: { sub?: unknown; sid?: unknown; jti?: unknown } | null;
  authError: string | null;
  accountId: string | null;
  remote: string;
  contentType: string;
  /** The id (jti) of the access token a login or refresh issued (request log only). */
  issuedJti?: string;
}

/** The request handler for one simulator. */
export function createHandler(rt: Runtime, control: SimulatorControl) {
  const { state } = rt;
  const liveCache = new Map<string, { body: string; etag: string }>();
  const pinnedJson = JSON.stringify(buildOpenApi(), null, 2);
  const pinned = { body: pinnedJson, etag: strongEtag(pinnedJson) };
  /** The override the cache was built for (a new one empties it). */
  let cachedFor: DescriptionOverride | null = null;

  function doc(kind: "json" | "yaml"): { body: string; etag: string } {
    const override = rt.descriptionOverride;
    if (override !== cachedFor) {
      liveCache.clear();
      cachedFor = override;
    }
    let cached = liveCache.get(kind);
    if (!cached) {
      const description = override && "description" in override ? override.description : buildOpenApi(rt.baseUrl());
      const body = kind === "json" ? JSON.stringify(description, null, 2) : toYaml(description);
      cached = { body, etag: strongEtag(body) };
      liveCache.set(kind, cached);
    }
    return cached;
  }

  // ------------------------------------------------------------------ sending

  function send(res: ServerResponse, result: Result, contentType?: string): void {
    if (res.headersSent || res.destroyed) return;
    const headers: Record<string, string | number> = { ...(result.headers ?? {}) };
    if (result.json === undefined) {
      headers["Content-Length"] = 0;
      res.writeHead(result.status, headers);
      res.end();
      return;
    }
    const body = Buffer.from(JSON.stringify(result.json));
    headers["Content-Type"] = contentType ?? "application/json; charset=utf-8";
    headers["Content-Length"] = body.length;
    res.writeHead(result.status, headers);
    res.end(body);
  }

  // ------------------------------------------------------------------ auth

  async function decodeBearer(req: IncomingMessage): Promise<{ claims: Call["claims"]; error: string | null }> {
    const header = req.headers.authorization;
    if (!header) return { claims: null, error: "Authorization header missing" };
    const m = /^Bearer ([A-Za-z0-9_.~+/=-]+)$/.exec(header.trim());
    if (!m) return { claims: null, error: "Authorization header is not 'Bearer <token>'" };
    // Tokens issued without `sub` (subClaim: false) name their account through their record.
    const withAccount = (claims: NonNullable<Call["claims"]>): Call["claims"] =>
      rt.subClaim || claims.sub !== undefined || typeof claims.jti !== "string" ? claims : { ...claims, sub: state.accountOfAccessToken(claims.jti) ?? undefined };
    try {
      const { payload } = await jwtVerify(m[1]!, rt.secret, { algorithms: ["HS256"], currentDate: new Date(state.now()) });
      return { claims: withAccount(payload), error: null };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === "ERR_JWT_EXPIRED") {
        // The signature was valid: keep the claims so the log and faults know the account.
        const payload = JSON.parse(Buffer.from(m[1]!.split(".")[1] ?? "", "base64url").toString("utf8")) as NonNullable<Call["claims"]>;
        return { claims: withAccount(payload), error: "access token has expired" };
      }
      return { claims: null, error: "access token is invalid" };
    }
  }

  function authorize(call: Call): AuthSuccess | AuthFailure {
    if (call.authError !== null || call.claims === null) return { ok: false, reason: call.authError ?? "access token is invalid" };
    return state.authorize(call.claims);
  }

  async function signAccess(sub: string, sid: string, jti: string, iat: number, exp: number | null): Promise<string> {
    const jwt = new SignJWT({ sid }).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setJti(jti).setIssuedAt(iat);
    if (rt.subClaim) jwt.setSubject(sub);
    if (exp !== null) jwt.setExpirationTime(exp);
    const token = await jwt.sign(rt.secret);
    rememberIssued(token);
    return token;
  }

  // ------------------------------------------------------------------ operations

  function parseJson(call: Call): { ok: true; value: unknown } | { ok: false; result: Result } {
    if (!/^application\/([a-z.+-]*\+)?json\s*(;.*)?$/i.test(call.contentType)) {
      return { ok: false, result: errorResult(400, "Content-Type must be application/json") };
    }
    if (call.body.length === 0) return { ok: false, result: errorResult(400, "request body is missing") };
    try {
      return { ok: true, value: JSON.parse(call.body.toString("utf8")) };
    } catch {
      return { ok: false, result: errorResult(400, "request body is not valid JSON") };
    }
  }

  function validationError(err: z.ZodError): Result {
    const detail = err.issues
      .map((i) => `${i.path.length ? i.path.join(".") : "body"}: ${i.message}`)
      .join("; ");
    return errorResult(400, detail);
  }

  async function execute(call: Call, opts: { withExp: boolean }): Promise<Result> {
    const op = call.route.operation;
    switch (op) {
      case "login":
      case "loginByPhone":
      case "loginByEmail": {
        const json = parseJson(call);
        if (!json.ok) return json.result;
        const schema = op === "loginByEmail" ? LoginByEmailRequest : LoginRequest;
        const parsed = schema.safeParse(json.value);
        if (!parsed.success) return validationError(parsed.error);
        const body = parsed.data as { phoneNumber?: string; email?: string; password: string };
        const account = state.accountByIdentity(body);
        if (!account || !SimState.passwordMatches(account, body.password)) {
          return errorResult(401, "wrong credentials");
        }
        const session = state.startSession(account.id);
        const issued = state.issueTokens(session, opts.withExp);
        const AccessToken = await signAccess(account.id, session.sid, issued.access.jti, issued.iat, issued.exp);
        call.issuedJti = issued.access.jti;
        return { status: 200, json: { AccessToken, RefreshToken: issued.refresh.token } };
      }
      case "refreshToken": {
        const json = parseJson(call);
        if (!json.ok) return json.result;
        const parsed = RefreshSessionRequest.safeParse(json.value);
        if (!parsed.success) return validationError(parsed.error);
        const consumed = state.consumeRefreshToken(parsed.data.refreshToken);
        if (!consumed.ok) return errorResult(consumed.status, consumed.detail);
        const issued = state.issueTokens(consumed.session, opts.withExp);
        const AccessToken = await signAccess(
          consumed.session.accountId, consumed.session.sid, issued.access.jti, issued.iat, issued.exp,
        );
        call.issuedJti = issued.access.jti;
        return { status: 200, json: { AccessToken, RefreshToken: issued.refresh.token } };
      }
      default:
        break;
    }
    // Bearer operations
    const auth = authorize(call);
    if (!auth.ok) return errorResult(401, auth.reason, { "WWW-Authenticate": 'Bearer error="invalid_token"' });
    const accountId = auth.accountId;
    switch (op) {
      case "logout":
        state.endSession(accountId, "logged-out");
        return { status: 200 };
      case "listUserDevices":
        return { status: 200, json: state.visibleDoors(accountId).map((d) => state.deviceView(d)) };
      case "listUserLocations":
        return { status: 200, json: state.locationsView(accountId) };
      default:
        break;
    }
    if (call.deviceId === null) return errorResult(400, "deviceId must be an int32 integer");
    if (op === "unlockDeviceLock" && call.lockId === null) return errorResult(400, "lockId must be an int32 integer");
    const door = state.doors.get(call.deviceId);
    // A door the account cannot see is unknown to it (404), for all three device operations.
    if (!door || !state.isVisible(accountId, door)) return errorResult(404, `device ${call.deviceId} not found`);
    const key = state.keyFor(accountId, door.seed.id);
    if (op === "getDevice") {
      if (!key) return errorResult(403, "the account holds no key to this device");
      return { status: 200, json: state.deviceView(door) };
    }
    if (op === "unlockDevice") {
      if (!key || key.lockIds !== undefined) return errorResult(403, "the account holds no key to this whole device");
      if (!door.online) return errorResult(503, "device is offline or out of range");
      state.recordUnlock(door, accountId, null);
      return { status: 200 };
    }
    // unlockDeviceLock
    const lockId = call.lockId!;
    if (!door.locks.some((l) => l.id === lockId)) return errorResult(404, `device ${door.seed.id} has no lock ${lockId}`);
    if (!key || (key.lockIds !== undefined && !key.lockIds.includes(lockId))) {
      return errorResult(403, "the account holds no key to this lock");
    }
    if (!door.online) return errorResult(503, "device is offline or out of range");
    state.recordUnlock(door, accountId, lockId);
    return { status: 200 };
  }

  /** The rate-limit bucket key: the account when known, else the login identity or the peer. */
  function rateKey(call: Call): string {
    if (call.accountId) return `account:${call.accountId}`;
    const op = call.route.operation;
    if (op === "login" || op === "loginByPhone" || op === "loginByEmail") {
      try {
        const body = JSON.parse(call.body.toString("utf8")) as Record<string, unknown>;
        const identity = op === "loginByEmail" ? body?.email : body?.phoneNumber;
        if (typeof identity === "string") return `login:${identity.toLowerCase()}`;
      } catch {
        // not JSON: falls back to the peer
      }
    }
    return `peer:${call.remote}`;
  }

  /** Resolves the account behind a call without changing any state (for faults, log, rate limit). */
  function resolveAccount(call: Call): string | null {
    const op = call.route.operation;
    if (BEARER_OPS.includes(op)) return typeof call.claims?.sub === "string" ? call.claims.sub : null;
    let value: unknown;
    try {
      value = JSON.parse(call.body.toString("utf8"));
    } catch {
      return null;
    }
    if (value === null || typeof value !== "object") return null;
    const body = value as Record<string, unknown>;
    if (op === "refreshToken") {
      return typeof body.refreshToken === "string" ? (state.refreshTokens.get(body.refreshToken)?.accountId ?? null) : null;
    }
    if (op === "loginByEmail") return typeof body.email === "string" ? (state.accountByIdentity({ email: body.email })?.id ?? null) : null;
    return typeof body.phoneNumber === "string" ? (state.accountByIdentity({ phoneNumber: body.phoneNumber })?.id ?? null) : null;
  }

  function countSuccess(op: OperationId, result: Result): void {
    if (result.status !== 200) return;
    if (op === "login" || op === "loginByPhone" || op === "loginByEmail") state.counters.logins++;
    if (op === "refreshToken") state.counters.refreshes++;
  }

  // ------------------------------------------------------------------ faults

  async function applyFault(fault: FaultSpec, call: Call, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const op = call.route.operation;
    // A status or drop fault with latencyMs answers only after that long (a slow failure: a
    // renewal that hangs, then fails).
    if (fault.latencyMs !== undefined && ["429", "500", "502", "503", "504", "drop"].includes(fault.kind)) await rt.sleep(fault.latencyMs);
    switch (fault.kind) {
      case "429":
        send(res, errorResult(429, "injected fault: too many requests", { "Retry-After": String(fault.retryAfter ?? 1) }, fault.title));
        return true;
      case "500":
      case "502":
      case "503":
      case "504": {
        const status = Number(fault.kind);
        if (status === 504 && fault.executed) await execute(call, { withExp: true });
        const headers = fault.retryAfter !== undefined ? { "Retry-After": String(fault.retryAfter) } : undefined;
        send(res, errorResult(status, `injected fault: ${STATUS_TITLES[status]}`, headers, fault.title));
        return true;
      }
      case "drop":
        if (fault.executed) await execute(call, { withExp: true });
        req.socket.destroy();
        return true;
      case "non-json": {
        const body = "<html><body>upstream error: this is not JSON</body></html>";
        res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
        res.end(body);
        return true;
      }
      case "truncated": {
        const body = JSON.stringify(
          TOKEN_OPERATIONS.includes(op)
            ? { AccessToken: "x".repeat(200), RefreshToken: "rt_" + "y".repeat(43) }
            : { id: call.deviceId ?? 0, name: "truncated".repeat(20), online: true },
        );
        res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
        res.write(body.slice(0, Math.floor(body.length / 2)), () => {
          setImmediate(() => res.socket?.destroy());
        });
        return true;
      }
      case "huge": {
        const size = fault.sizeBytes ?? 8 * 1024 * 1024;
        await sendHuge(res, size);
        return true;
      }
      case "empty-token-pair":
        send(res, { status: 200, json: {} });
        return true;
      default:
        return false; // latency, jwt-without-exp, wrong-content-type, slow-headers: handled in the normal flow
    }
  }

  /** Streams `{"padding":"aaa..."}` of exactly `size` bytes, honouring back-pressure. */
  async function sendHuge(res: ServerResponse, size: number): Promise<void> {
    const prefix = '{"padding":"';
    const suffix = '"}';
    let remaining = Math.max(0, size - prefix.length - suffix.length);
    res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Content-Length": prefix.length + remaining + suffix.length });
    res.write(prefix);
    const chunk = Buffer.alloc(64 * 1024, "a");
    while (remaining > 0 && !res.destroyed && !rt.isClosed()) {
      const n = Math.min(chunk.length, remaining);
      remaining -= n;
      const ok = res.write(n === chunk.length ? chunk : chunk.subarray(0, n));
      if (!ok) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off("drain", done);
            res.off("close", done);
            resolve();
          };
          res.on("drain", done);
          res.on("close", done);
        });
      }
    }
    if (!res.destroyed) res.end(suffix);
  }

  async function sendSlow(res: ServerResponse, result: Result, delayMs: number): Promise<void> {
    await rt.sleep(delayMs);
    if (res.destroyed) return;
    const headers: Record<string, string | number> = { ...(result.headers ?? {}) };
    const body = result.json === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(result.json));
    if (result.json !== undefined) headers["Content-Type"] = "application/json; charset=utf-8";
    headers["Content-Length"] = body.length;
    res.writeHead(result.status, headers);
    res.flushHeaders();
    const pieces = 8;
    const step = Math.ceil(body.length / pieces) || 1;
    for (let i = 0; i < body.length; i += step) {
      if (res.destroyed) return;
      res.write(body.subarray(i, i + step));
      await rt.sleep(25);
    }
    res.end();
  }

  // ------------------------------------------------------------------ /api

  async function handleApi(req: IncomingMessage, res: ServerResponse, entry: RequestLogEntry, route: Route): Promise<void> {
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
      route, deviceId, lockId, body, claims: null, authError: null, accountId: null,
      remote: req.socket.remoteAddress ?? "unknown",
      contentType: String(req.headers["content-type"] ?? ""),
    };
    if (BEARER_OPS.includes(op)) {
      const decoded = await decodeBearer(req);
      call.claims = decoded.claims;
      call.authError = decoded.error;
    }
    call.accountId = resolveAccount(call);
    entry.accountId = call.accountId;
    if (typeof call.claims?.jti === "string") entry.tokenId = call.claims.jti;

    const fault = rt.faults.take({ operation: op, deviceId, accountId: call.accountId });
    entry.fault = fault?.kind ?? null;
    if (fault && (await applyFault(fault, call, req, res))) return;
    if (fault?.kind === "latency") await rt.sleep(fault.latencyMs ?? 1000);

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
    countSuccess(op, result);
    if (fault?.kind === "slow-headers") {
      await sendSlow(res, result, fault.latencyMs ?? 2000);
      return;
    }
    send(res, result, fault?.kind === "wrong-content-type" ? "text/html; charset=utf-8" : undefined);
  }

  // ------------------------------------------------------------------ docs

  function handleDocs(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(res, errorResult(405, `${req.method} is not allowed on ${path}`, { Allow: "GET, HEAD" }));
      return;
    }
    const override = rt.descriptionOverride;
    if (override && (path === "/openapi.json" || path === "/openapi.yaml")) {
      if ("drop" in override) {
        req.socket.destroy();
        return;
      }
      if ("status" in override) {
        send(res, errorResult(override.status, `injected: ${path} answers ${override.status}`));
        return;
      }
      if ("body" in override) {
        const raw = Buffer.from(override.body);
        res.writeHead(200, { "Content-Type": override.contentType ?? "application/json; charset=utf-8", "Content-Length": raw.length, "X-Spec-Source": "live" });
        res.end(req.method === "HEAD" ? undefined : raw);
        return;
      }
    }
    let content: { body: string; etag: string };
    let type: string;
    let source: string | null = "live";
    if (path === "/openapi.json") {
      content = doc("json");
      type = "application/json; charset=utf-8";
    } else if (path === "/openapi.yaml") {
      content = doc("yaml");
      type = "application/yaml; charset=utf-8";
    } else if (path === "/openapi.pinned.json") {
      content = pinned;
      type = "application/json; charset=utf-8";
      source = "pinned";
    } else {
      const body = llmsTxt();
      content = { body, etag: strongEtag(body) };
      type = "text/plain; charset=utf-8";
      source = null;
    }
    const headers: Record<string, string | number> = { ETag: content.etag, "Cache-Control": "no-cache" };
    if (source) headers["X-Spec-Source"] = source;
    if (etagMatches(req.headers["if-none-match"], content.etag)) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    const body = Buffer.from(content.body);
    headers["Content-Type"] = type;
    headers["Content-Length"] = body.length;
    res.writeHead(200, headers);
    res.end(req.method === "HEAD" ? undefined : body);
  }

  // ------------------------------------------------------------------ control

  async function handleControl(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname.replace(/\/+$/, "");
    const method = req.method ?? "GET";
    const ok = (json: unknown, status = 200) => send(res, { status, json });
    const none = () => send(res, { status: 204 });
    let body: unknown;
    const readJson = async (): Promise<unknown> => {
      const raw = await readBody(req);
      if (raw.length === 0) return undefined;
      return JSON.parse(raw.toString("utf8"));
    };
    try {
      let m: RegExpExecArray | null;
      if (path === "/_sim/faults") {
        if (method === "POST") {
          body = await readJson();
          return ok({ id: control.inject(body as FaultSpec) }, 201);
        }
        if (method === "GET") return ok(rt.faults.list());
        if (method === "DELETE") {
          control.clearFaults();
          return none();
        }
      } else if ((m = /^\/_sim\/faults\/([^/]+)$/.exec(path))) {
        if (method === "DELETE") {
          return rt.faults.remove(decodeURIComponent(m[1]!)) ? none() : send(res, errorResult(404, "no such fault"));
        }
      } else if ((m = /^\/_sim\/devices\/([^/]+)$/.exec(path))) {
        if (method === "GET") return ok(control.device(Number(m[1])));
        if (method === "PATCH") {
          body = await readJson();
          const parsed = z
            .strictObject({ name: z.string().min(1).optional(), locationId: z.int().optional(), newId: z.int().min(1).max(2147483647).optional(), remove: z.boolean().optional() })
            .safeParse(body);
          if (!parsed.success) return send(res, errorResult(400, "body must be {name?, locationId?, newId?, remove?}"));
          control.editDevice(Number(m[1]), parsed.data);
          return none();
        }
      } else if ((m = /^\/_sim\/devices\/([^/]+)\/online$/.exec(path))) {
        if (method === "POST") {
          body = await readJson();
          const parsed = z.strictObject({ online: z.boolean() }).safeParse(body);
          if (!parsed.success) return send(res, errorResult(400, 'body must be {"online": true|false}'));
          control.setOnline(Number(m[1]), parsed.data.online);
          return ok(control.device(Number(m[1])));
        }
      } else if ((m = /^\/_sim\/accounts\/([^/]+)$/.exec(path))) {
        if (method === "GET") {
          const id = decodeURIComponent(m[1]!);
          state.requireAccount(id);
          return ok({ id, hasSession: control.hasSession(id) });
        }
      } else if ((m = /^\/_sim\/accounts\/([^/]+)\/(expire-access|revoke-access|expire-refresh|supersede)$/.exec(path))) {
        if (method === "POST") {
          const id = decodeURIComponent(m[1]!);
          const action = m[2]!;
          if (action === "expire-access") control.expireAccessToken(id);
          else if (action === "revoke-access") control.revokeAccessToken(id);
          else if (action === "expire-refresh") control.expireRefreshToken(id);
          else control.supersede(id);
          return none();
        }
      } else if (path === "/_sim/requests") {
        if (method === "GET") {
          const filter: { operation?: string; accountId?: string; deviceId?: number } = {};
          const q = url.searchParams;
          if (q.has("operation")) filter.operation = q.get("operation")!;
          if (q.has("accountId")) filter.accountId = q.get("accountId")!;
          if (q.has("deviceId")) filter.deviceId = Number(q.get("deviceId"));
          return ok(control.requests(filter));
        }
        if (method === "DELETE") {
          control.resetRequests();
          return none();
        }
      } else if (path === "/_sim/counts") {
        if (method === "GET") return ok(control.counts());
      } else if (path === "/_sim/docs") {
        if (method === "POST") {
          body = await readJson();
          const parsed = z
            .union([
              z.strictObject({ description: z.record(z.string(), z.unknown()) }),
              z.strictObject({ body: z.string(), contentType: z.string().min(1).optional() }),
              z.strictObject({ status: z.int().min(400).max(599) }),
              z.strictObject({ drop: z.literal(true) }),
            ])
            .safeParse(body);
          if (!parsed.success) {
            return send(res, errorResult(400, 'body must be {"description": {...}}, {"body": "...", "contentType"?: "..."}, {"status": 400-599} or {"drop": true}'));
          }
          control.serveDescription(parsed.data as DescriptionOverride);
          return none();
        }
        if (method === "DELETE") {
          control.serveDescription(null);
          return none();
        }
      } else if (path === "/_sim/rate-limit") {
        if (method === "POST") {
          body = await readJson();
          const parsed = z
            .union([z.literal(false), z.strictObject({ capacity: z.number().positive(), refillPerSec: z.number().min(0) })])
            .safeParse(body);
          if (!parsed.success) return send(res, errorResult(400, "body must be {capacity, refillPerSec} or false"));
          control.setRateLimit(parsed.data);
          return none();
        }
      } else {
        return send(res, errorResult(404, `no control route ${path}`));
      }
      return send(res, errorResult(405, `${method} is not allowed on ${path}`));
    } catch (err) {
      if (err instanceof BodyTooLarge) return send(res, errorResult(413, "body too large", { Connection: "close" }));
      if (err instanceof SyntaxError) return send(res, errorResult(400, "body is not valid JSON"));
      const message = (err as Error).message;
      return send(res, errorResult(/^unknown /.test(message) ? 404 : 400, message));
    }
  }

  // ------------------------------------------------------------------ entry point

  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://sim.invalid");
    const path = url.pathname;
    const method = req.method ?? "GET";
    try {
      if (path === "/_sim" || path.startsWith("/_sim/")) {
        await handleControl(req, res, url);
        return;
      }
      const entry: RequestLogEntry = {
        seq: state.nextSeq(), method, path, operation: "unknown", status: 0, accountId: null,
        deviceId: null, lockId: null, fault: null, startedAt: state.now(), endedAt: 0, tokenId: null, issuedTokenId: null,
        headers: headerNames(req),
        ifNoneMatch: typeof req.headers["if-none-match"] === "string" ? req.headers["if-none-match"].slice(0, 200) : null,
      };
      let logged = false;
      state.open.add(entry);
      const log = () => {
        if (logged) return;
        logged = true;
        entry.status = res.headersSent ? res.statusCode : 0;
        entry.endedAt = state.now();
        state.pushLog(entry);
      };
      // Logged as soon as the response is complete (or the connection is gone).
      res.once("finish", log);
      res.once("close", log);
      if (path === "/openapi.json" || path === "/openapi.yaml" || path === "/openapi.pinned.json" || path === "/llms.txt") {
        entry.operation = "docs";
        handleDocs(req, res, path);
        return;
      }
      const match = matchRoute(method, path);
      if (match === null) {
        send(res, errorResult(404, `no operation at ${path}`));
        return;
      }
      if ("notAllowed" in match) {
        send(res, errorResult(405, `${method} is not allowed on ${path}`, { Allow: match.notAllowed.join(", ") }));
        return;
      }
      await handleApi(req, res, entry, match.route);
    } catch (err) {
      if (err instanceof Closed || rt.isClosed()) {
        res.socket?.destroy();
        return;
      }
      send(res, errorResult(500, `simulator error: ${(err as Error).message}`));
    }
  };
}
