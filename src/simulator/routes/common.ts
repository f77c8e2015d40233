/**
 * What the simulator's route groups share: the runtime they run against, the result of an
 * /api operation, the `{ status, title, detail }` error body, reading a request body (at most
 * 64 KiB) and writing an answer. docs/simulator.md#requests-and-errors
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import type { OperationId } from "../../spec/schemas.js";
import type { FaultStore } from "../faults.js";
import type { SimState } from "../state.js";
import type { DescriptionOverride } from "../types.js";

export const MAX_BODY_BYTES = 64 * 1024;

export const STATUS_TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  413: "Payload Too Large",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

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

/** Thrown into pending waits when the simulator closes. */
export class Closed extends Error {}

export interface Result {
  status: number;
  /** JSON body; undefined = no body. */
  json?: unknown;
  headers?: Record<string, string>;
}

export function errorResult(status: number, detail: string, headers?: Record<string, string>, title?: string): Result {
  return { status, json: { status, title: title ?? STATUS_TITLES[status] ?? "Error", detail }, headers };
}

/** The matched /api route: its operation and its raw path parameters. */
export interface Route {
  operation: OperationId;
  deviceRaw: string | null;
  lockRaw: string | null;
}

/** One /api call on its way through the pipeline (routes/api.ts). */
export interface Call {
  route: Route;
  /** True when the operation takes a bearer access token. */
  bearer: boolean;
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

/**
 * An /api operation as a route group registers it. `none`: runs on the body alone (login,
 * refresh); `bearer`: runs only after the access token was accepted, for that account.
 */
export type Operation =
  | { auth: "none"; run(call: Call, opts: { withExp: boolean }): Promise<Result> }
  | { auth: "bearer"; run(call: Call, accountId: string): Result };

export class BodyTooLarge extends Error {}

/** Reads the request body, at most MAX_BODY_BYTES. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
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

/** A call's JSON body, or the 400 that refuses it (wrong Content-Type, empty, not JSON). */
export function parseJson(call: Call): { ok: true; value: unknown } | { ok: false; result: Result } {
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

/** The 400 for a body that does not have exactly the described fields. */
export function validationError(err: z.ZodError): Result {
  const detail = err.issues.map((i) => `${i.path.length ? i.path.join(".") : "body"}: ${i.message}`).join("; ");
  return errorResult(400, detail);
}

/** The names of a request's headers, lower case, each once; never a value. */
export function headerNames(req: IncomingMessage): string[] {
  const names: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i].toLowerCase();
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

/** Writes a result as the answer (JSON unless `contentType` says otherwise); no-op once answered. */
export function send(res: ServerResponse, result: Result, contentType?: string): void {
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
