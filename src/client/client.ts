/**
 * The service client: one undici Pool per account, JSON in and out, every request body and
 * every response body validated with zod, every failure a DoorApiError, and the service's retry
 * policy (retry-policy.ts) applied per operation. It knows nothing about sessions: callers
 * hand it the access token. See session/session.ts for the 401 rule; connection-errors.ts for
 * what a failure without an HTTP answer says.
 */
import type { Dispatcher, Pool as UndiciPool } from "undici";
import type { z } from "zod";
import {
  Device,
  DeviceList,
  ErrorResponse,
  LocationList,
  LoginByEmailRequest,
  LoginRequest,
  OPERATIONS,
  RefreshSessionRequest,
  TokenPair,
  type Location,
  type OperationId,
} from "../spec/schemas.js";
import { type Clock, sleep, systemClock } from "../util/clock.js";
import { controlCharsAsSpaces } from "../util/text.js";
import { parseBaseUrl } from "./base-url.js";
import { abortedError, transportError } from "./connection-errors.js";
import { DoorApiError } from "./errors.js";
import { BACKOFF, RETRY_POLICY, backoffDelayMs, parseRetryAfter } from "./retry-policy.js";
import { undiciPool } from "./pool.js";

/** undici's Pool, loaded without the rest of undici (pool.ts); every account needs it, so now. */
const Pool = undiciPool();

export type LoginMethod = "phone" | "email" | "login";

export type Credentials =
  | { method: "phone" | "login"; phoneNumber: string; password: string }
  | { method: "email"; email: string; password: string };

export interface ClientOptions {
  baseUrl: string;
  /** TCP/TLS connect timeout (default 10 s). */
  connectTimeoutMs?: number;
  /** Time to the response headers (default 20 s). */
  headersTimeoutMs?: number;
  /** Time between body chunks (default 20 s). */
  bodyTimeoutMs?: number;
  /** Largest response body read (default 4 MiB); larger is an invalid-response error. */
  maxBodyBytes?: number;
  /** Sockets per account (default 32). */
  connections?: number;
  clock?: Clock;
  random?: () => number;
  /** Called before each retry, for the account's log (no secrets in it). */
  onRetry?: (info: { operation: OperationId; attempt: number; delayMs: number; error: DoorApiError }) => void;
}

interface Req {
  op: OperationId;
  path: string;
  token?: string;
  body?: unknown;
}

/** What the client saw, for the account's events (docs/events.md#session): never a body, a header or a token. */
export interface ClientObserver {
  /** The service answered (any status); a request got no answer (a few words why); a 429 holds the account. */
  answered(): void;
  unreachable(brief: string): void;
  held(): void;
}

export class DoorApiClient {
  readonly baseUrl: URL;
  /** Told what the client saw (the account's events); null: nobody listens. */
  observer: ClientObserver | null = null;
  private readonly pool: UndiciPool;
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly maxBodyBytes: number;
  private readonly onRetry: ClientOptions["onRetry"];
  private readonly timeouts: { connectMs: number; headersMs: number };
  /**
   * Until when (monotonic ms) the service asked this account to send nothing: the latest 429
   * answer with Retry-After, to any operation (docs/session.md#a-retry-after-holds-the-account).
   * One client per account, so every node and config-node copy of the account shares it.
   */
  private heldUntil = Number.NEGATIVE_INFINITY;
  /** The service has answered a request of this client: its base URL is right (docs/session.md#connection-errors). */
  private answered = false;
  /** The logins and passwords of the account (hideInErrors): hidden in the service's error words. */
  private readonly sentSecrets = new Set<string>();

  constructor(options: ClientOptions) {
    this.baseUrl = parseBaseUrl(options.baseUrl);
    this.prefix = this.baseUrl.pathname.replace(/\/+$/, "");
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
    this.onRetry = options.onRetry;
    this.timeouts = { connectMs: options.connectTimeoutMs ?? 10_000, headersMs: options.headersTimeoutMs ?? 20_000 };
    this.pool = new Pool(this.baseUrl.origin, {
      connections: options.connections ?? 32,
      connect: { timeout: this.timeouts.connectMs },
      headersTimeout: this.timeouts.headersMs,
      bodyTimeout: options.bodyTimeoutMs ?? 20_000,
      keepAliveTimeout: 10_000,
    });
  }

  // ---- the ten operations -------------------------------------------------------------

  /**
   * The account's login and password, hidden in the service's error words from now on (also
   * before any login: a session resumed from its stored pair never logs in).
   */
  hideInErrors(credentials: Credentials): void {
    this.sentSecrets.add(credentials.password);
    if (credentials.method === "email") this.sentSecrets.add(credentials.email);
    else this.sentSecrets.add(credentials.phoneNumber).add(credentials.phoneNumber.replace(/^\+/, ""));
  }

  async login(credentials: Credentials, signal?: AbortSignal) {
    this.hideInErrors(credentials);
    if (credentials.method === "email") {
      const body = validateBody("loginByEmail", LoginByEmailRequest, {
        email: credentials.email,
        password: credentials.password,
      });
      return this.send(
        { op: "loginByEmail", path: OPERATIONS.loginByEmail.path, body },
        (b) => parseJson("loginByEmail", TokenPair, b),
        signal,
      );
    }
    const op = credentials.method === "login" ? "login" : "loginByPhone";
    const body = validateBody(op, LoginRequest, {
      phoneNumber: credentials.phoneNumber,
      password: credentials.password,
    });
    return this.send({ op, path: OPERATIONS[op].path, body }, (b) => parseJson(op, TokenPair, b), signal);
  }

  async refresh(refreshToken: string, signal?: AbortSignal) {
    const body = validateBody("refreshToken", RefreshSessionRequest, { refreshToken });
    return this.send(
      { op: "refreshToken", path: OPERATIONS.refreshToken.path, body },
      (b) => parseJson("refreshToken", TokenPair, b),
      signal,
    );
  }

  async logout(accessToken: string, signal?: AbortSignal): Promise<void> {
    await this.send({ op: "logout", path: OPERATIONS.logout.path, token: accessToken }, () => undefined, signal);
  }

  async listDevices(accessToken: string, signal?: AbortSignal): Promise<Device[]> {
    return this.send(
      { op: "listUserDevices", path: OPERATIONS.listUserDevices.path, token: accessToken },
      (b) => parseJson("listUserDevices", DeviceList, b),
      signal,
    );
  }

  async listLocations(accessToken: string, signal?: AbortSignal): Promise<Location[]> {
    return this.send(
      { op: "listUserLocations", path: OPERATIONS.listUserLocations.path, token: accessToken },
      (b) => parseJson("listUserLocations", LocationList, b),
      signal,
    );
  }

  async getDevice(accessToken: string, deviceId: number, signal?: AbortSignal): Promise<Device> {
    const path = `/api/device/${checkId("getDevice", "deviceId", deviceId)}`;
    return this.send({ op: "getDevice", path, token: accessToken }, (b) => parseJson("getDevice", Device, b), signal);
  }

  /** Sends one unlock command. Never retried (RETRY_POLICY.unlockDevice/unlockDeviceLock). */
  async unlock(accessToken: string, deviceId: number, lockId: number | null, signal?: AbortSignal): Promise<void> {
    const d = checkId("unlockDevice", "deviceId", deviceId);
    if (lockId === null) {
      await this.send(
        { op: "unlockDevice", path: `/api/device/${d}/unlock`, token: accessToken },
        () => undefined,
        signal,
      );
    } else {
      const l = checkId("unlockDeviceLock", "lockId", lockId);
      await this.send(
        { op: "unlockDeviceLock", path: `/api/device/${d}/unlock/${l}`, token: accessToken },
        () => undefined,
        signal,
      );
    }
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => this.pool.destroy());
  }

  // ---- the retry loop, one place ------------------------------------------------------

  /** How long (ms) the account must still send nothing; 0 when it may send. No I/O: the unlock path asks it. */
  heldForMs(): number {
    return Math.max(0, this.heldUntil - this.clock.monotonic());
  }

  /** The end of the hold on the monotonic clock, or null when not held: a core that replaces this one keeps it. */
  get heldUntilMonotonic(): number | null {
    return this.heldForMs() > 0 ? this.heldUntil : null;
  }

  /**
   * Holds the account until `at` (monotonic ms): a client of a new core of the account waits what
   * the service asked the one it replaces to wait (src/account/registry.ts). Never shortens a hold.
   */
  holdUntil(at: number): void {
    this.heldUntil = Math.max(this.heldUntil, at);
    if (this.heldForMs() > 0) this.observer?.held();
  }

  /** A 429 with Retry-After holds the whole account for that long (never shortens a longer hold). */
  private holdFor(retryAfterSec: number): void {
    this.heldUntil = Math.max(this.heldUntil, this.clock.monotonic() + retryAfterSec * 1000);
  }

  /** The error of a request not sent because the account is held: 429 in all but the sending. */
  private heldError(op: OperationId, leftMs: number, attempts: number): DoorApiError {
    const left = Math.ceil(leftMs / 1000);
    return new DoorApiError({
      operation: op,
      kind: "http",
      status: 429,
      retryAfter: left,
      mayHaveReached: false,
      held: true,
      attempts,
      message: `${op}: not sent: the service asked this account to wait (429); retry after ${left} s`,
    });
  }

  private async send<T>(req: Req, parse: (body: Buffer | null) => T, signal?: AbortSignal): Promise<T> {
    const rule = RETRY_POLICY[req.op];
    const started = this.clock.now();
    for (let attempt = 1; ; attempt++) {
      // docs/session.md#a-retry-after-holds-the-account: nothing is sent while the service's wait
      // runs (a logout at close excepted). An idempotent read waits a short one out inside its
      // bounded retry; anything else fails at once, not sent.
      const heldMs = req.op === "logout" ? 0 : this.heldForMs();
      if (heldMs > 0) {
        const waits =
          rule.maxAttempts > 1 &&
          rule.statuses.has(429) &&
          heldMs <= BACKOFF.maxRetryAfterMs &&
          this.clock.now() - started + heldMs <= BACKOFF.totalBudgetMs;
        if (!waits) throw this.heldError(req.op, heldMs, attempt - 1);
        await sleep(this.clock, heldMs, signal).catch((reason) => {
          throw abortedError(req.op, reason);
        });
        attempt--;
        continue;
      }
      let error: DoorApiError;
      try {
        return await this.once(req, parse, signal);
      } catch (e) {
        if (!(e instanceof DoorApiError)) throw e;
        error = e;
      }
      if (error.kind === "http" && error.status === 429 && error.retryAfter !== null) {
        this.holdFor(error.retryAfter);
        this.observer?.held();
      }
      const retryable =
        attempt < rule.maxAttempts &&
        (error.kind === "http"
          ? error.status !== null && rule.statuses.has(error.status)
          : (error.kind === "network" || error.kind === "timeout") && rule.network);
      if (!retryable) throw error.withAttempts(attempt);
      const delayMs = backoffDelayMs(attempt, error.retryAfter, this.random);
      if (error.retryAfter !== null && delayMs > BACKOFF.maxRetryAfterMs) throw error.withAttempts(attempt);
      if (this.clock.now() - started + delayMs > BACKOFF.totalBudgetMs) throw error.withAttempts(attempt);
      this.onRetry?.({ operation: req.op, attempt, delayMs, error });
      await sleep(this.clock, delayMs, signal).catch((reason) => {
        throw abortedError(req.op, reason);
      });
    }
  }

  private async once<T>(req: Req, parse: (body: Buffer | null) => T, signal?: AbortSignal): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (req.token !== undefined) headers.authorization = `Bearer ${req.token}`;
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers["content-type"] = "application/json";
    }
    const method = OPERATIONS[req.op].method;
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({ path: this.prefix + req.path, method, headers, body, signal });
    } catch (e) {
      const error = this.transportError(req.op, e, signal);
      if (error.kind !== "aborted") this.observer?.unreachable(error.brief ?? error.kind);
      throw error;
    }
    const status = res.statusCode;
    this.answered = true;
    this.observer?.answered();
    const contentType = String(res.headers["content-type"] ?? "");
    const isJson = /^application\/([a-z0-9.+-]*\+)?json\b/i.test(contentType);
    if (status >= 200 && status < 300) {
      const expectsBody = req.op !== "logout" && req.op !== "unlockDevice" && req.op !== "unlockDeviceLock";
      if (!expectsBody) {
        // The command was accepted with the status line; the body (spec: none) is not ours to judge.
        await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
        return parse(null);
      }
      if (!isJson) {
        await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
        throw new DoorApiError({
          operation: req.op,
          kind: "invalid-response",
          status,
          mayHaveReached: true,
          message: `${req.op}: the service answered ${status} with content type "${contentType.slice(0, 60) || "none"}" instead of JSON`,
        });
      }
      const buf = await this.readBody(req.op, res, signal);
      return parse(buf);
    }
    // An error status: read the ErrorResponse (for logs only) and Retry-After.
    const retryAfter = parseRetryAfter(res.headers["retry-after"], this.clock.now());
    let title: string | null = null;
    let detail: string | null = null;
    if (isJson) {
      try {
        const parsed = ErrorResponse.safeParse(JSON.parse((await this.readBody(req.op, res, signal)).toString("utf8")));
        if (parsed.success) {
          // The service's words may quote what was sent (a login, a token): hidden before they
          // reach a message, a log line or the editor (docs/security.md#secrets).
          const secrets = this.secretsOf(req);
          title = clip(hideSecrets(parsed.data.title, secrets));
          detail = clip(hideSecrets(parsed.data.detail, secrets));
        }
      } catch {
        /* an unreadable error body changes nothing: callers branch on the status */
      }
    } else {
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    }
    throw new DoorApiError({
      operation: req.op,
      kind: "http",
      status,
      title,
      detail,
      retryAfter,
      mayHaveReached: true,
      message: `${req.op}: the service answered ${status}${title ? ` (${title})` : ""}`,
    });
  }

  /** What a request sent that is secret (its token, the string fields of its body), and every login and password sent before. */
  private secretsOf(req: Req): string[] {
    const out = new Set(this.sentSecrets);
    if (req.token) out.add(req.token);
    if (req.body && typeof req.body === "object") {
      for (const v of Object.values(req.body as Record<string, unknown>)) if (typeof v === "string") out.add(v);
    }
    return [...out];
  }

  private transportError(op: OperationId, e: unknown, signal?: AbortSignal): DoorApiError {
    return transportError(op, e, signal, this.baseUrl, this.timeouts, this.answered);
  }

  private async readBody(op: OperationId, res: Dispatcher.ResponseData, signal?: AbortSignal): Promise<Buffer> {
    const declared = Number(res.headers["content-length"]);
    if (Number.isFinite(declared) && declared > this.maxBodyBytes) {
      res.body.destroy();
      throw tooLarge(op, this.maxBodyBytes);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > this.maxBodyBytes) {
          res.body.destroy();
          throw tooLarge(op, this.maxBodyBytes);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (e) {
      if (e instanceof DoorApiError) throw e;
      const t = this.transportError(op, e, signal);
      throw new DoorApiError({
        operation: op,
        kind: t.kind === "aborted" ? "aborted" : "invalid-response",
        status: res.statusCode,
        mayHaveReached: true,
        message: `${op}: the response body from the service was cut off (${t.kind})`,
        cause: e,
      });
    }
    return Buffer.concat(chunks);
  }
}

// ---- helpers ----------------------------------------------------------------------------

/** Shortest secret hidden: a shorter one would blank ordinary words. */
const HIDE_MIN = 4;

/** `text` with every occurrence of each secret (in any letter case) replaced by "[hidden]", longest first. */
export function hideSecrets(text: string | null | undefined, secrets: readonly string[]): string | null | undefined {
  if (typeof text !== "string" || text === "") return text;
  let out = text;
  for (const secret of [...secrets].filter((x) => x.length >= HIDE_MIN).sort((a, b) => b.length - a.length)) {
    out = out.replace(new RegExp(secret.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi"), "[hidden]");
  }
  return out;
}

function clip(s: string | null | undefined): string | null {
  if (s === null || s === undefined) return null;
  return controlCharsAsSpaces(s).slice(0, 200);
}

function tooLarge(op: OperationId, max: number): DoorApiError {
  return new DoorApiError({
    operation: op,
    kind: "invalid-response",
    status: 200,
    mayHaveReached: true,
    message: `${op}: the response body is larger than ${max} bytes and was not read`,
  });
}

function checkId(op: OperationId, field: string, value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > 2147483647) {
    throw new DoorApiError({
      operation: op,
      kind: "invalid-response",
      mayHaveReached: false,
      message: `${op}: ${field} must be a positive 32-bit integer`,
    });
  }
  return value;
}

function validateBody<S extends z.ZodType>(op: OperationId, schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    // Name the fields only: the values are credentials.
    const fields = [...new Set(parsed.error.issues.map((i) => i.path.join(".") || "body"))].join(", ");
    throw new DoorApiError({
      operation: op,
      kind: "invalid-response",
      mayHaveReached: false,
      message: `${op}: request not sent, invalid ${fields}`,
    });
  }
  return parsed.data;
}

function parseJson<S extends z.ZodType>(op: OperationId, schema: S, body: Buffer | null): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse((body ?? Buffer.alloc(0)).toString("utf8"));
  } catch {
    throw new DoorApiError({
      operation: op,
      kind: "invalid-response",
      status: 200,
      mayHaveReached: true,
      message: `${op}: the service answered 200 with a body that is not JSON`,
    });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const where = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join(".") || "body"}: ${i.message}`)
      .join("; ");
    throw new DoorApiError({
      operation: op,
      kind: "invalid-response",
      status: 200,
      mayHaveReached: true,
      message: `${op}: the response does not match the spec (${where})`,
    });
  }
  return parsed.data;
}
