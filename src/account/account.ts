/**
 * One API account on one environment, as the nodes use it: its client, its one session,
 * its device directory (24 h cache) and its audit log. Knows nothing of Node-RED; the
 * config node `door-account` owns one of these.
 */
import { EventEmitter } from "node:events";
import { type ClientOptions, type Credentials, DoorApiClient, type LoginMethod } from "../client/client.js";
import { BaseUrlError, parseBaseUrl } from "../client/base-url.js";
import { type AuditLog, openAuditLog } from "../audit/audit-log.js";
import { DeviceDirectory } from "../doors/directory.js";
import { SessionHaltedError } from "../session/errors.js";
import { Session, type SessionLog, type SessionSnapshot, type SessionTimings } from "../session/session.js";
import { DEFAULT_KEY_PREFIX, RedisTokenStore } from "../session/redis-store.js";
import { FileTokenStore, type TokenStore, accountKey } from "../session/token-store.js";
import { LoginByEmailRequest, PHONE_PATTERN, type Device, type Location } from "../spec/schemas.js";
import { type Clock, systemClock } from "../util/clock.js";

export const LOGIN_METHODS: readonly LoginMethod[] = ["phone", "email", "login"];
export const DEVICE_LIST_TTL_MS = 24 * 3600_000;

export interface AccountSettings {
  baseUrl: unknown;
  loginMethod: unknown;
  phoneNumber?: unknown;
  email?: unknown;
  password?: unknown;
}

/**
 * Checks the account's configuration. Returns the credentials ready to use, or the list of
 * problems in plain words (never echoing a secret value).
 */
export function checkAccountSettings(s: AccountSettings): { ok: true; baseUrl: string; credentials: Credentials } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  let baseUrl = "";
  try {
    baseUrl = parseBaseUrl(s.baseUrl).href.replace(/\/+$/, "");
  } catch (e) {
    problems.push(e instanceof BaseUrlError ? e.message : "base URL is invalid");
  }
  const method = (s.loginMethod === undefined || s.loginMethod === "" ? "phone" : s.loginMethod) as LoginMethod;
  if (!LOGIN_METHODS.includes(method)) problems.push(`login method must be one of ${LOGIN_METHODS.join(", ")}`);
  const password = typeof s.password === "string" ? s.password : "";
  if (password.length === 0) problems.push("the password is missing");
  let credentials: Credentials | null = null;
  if (method === "email") {
    const email = typeof s.email === "string" ? s.email.trim() : "";
    // The very schema the login request is validated with: an address accepted here is one the
    // client will send (a looser check let "ops@example.c" through to fail at every login).
    if (!LoginByEmailRequest.shape.email.safeParse(email).success) problems.push("the email address is missing or malformed");
    else credentials = { method, email, password };
  } else if (LOGIN_METHODS.includes(method)) {
    const phone = typeof s.phoneNumber === "string" ? s.phoneNumber.trim() : "";
    if (!PHONE_PATTERN.test(phone)) problems.push("the phone number must be + followed by 9 to 13 digits");
    else credentials = { method, phoneNumber: phone, password };
  }
  if (problems.length > 0 || credentials === null) return { ok: false, problems };
  return { ok: true, baseUrl, credentials };
}

export type SessionStoreKind = "file" | "redis";
export const SESSION_STORES: readonly SessionStoreKind[] = ["file", "redis"];

/** Where the session's pair lives: a file (one instance), or Redis (several instances on one account). */
export type SessionStoreChoice =
  | { kind: "file" }
  | {
      kind: "redis";
      /** redis:// or rediss:// (TLS). */
      url: string;
      password?: string | null;
      keyPrefix?: string;
      /** Seals the pair in Redis; every instance needs the same one (default: the account's password). */
      secret?: string | null;
      lockTtlMs?: number;
      lockWaitMs?: number;
    };

/** Checks the session store part of an account's configuration. */
export function checkStoreSettings(s: { sessionStore?: unknown; redisUrl?: unknown; redisKeyPrefix?: unknown; redisPassword?: unknown }): { ok: true; store: SessionStoreChoice } | { ok: false; problems: string[] } {
  const kind = s.sessionStore === undefined || s.sessionStore === null || s.sessionStore === "" ? "file" : s.sessionStore;
  if (kind === "file") return { ok: true, store: { kind: "file" } };
  if (kind !== "redis") return { ok: false, problems: [`the session store must be one of ${SESSION_STORES.join(", ")}`] };
  const problems: string[] = [];
  const raw = typeof s.redisUrl === "string" ? s.redisUrl.trim() : "";
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    /* reported below */
  }
  if (!url || (url.protocol !== "redis:" && url.protocol !== "rediss:") || !url.hostname) {
    problems.push("the Redis URL must be redis://host[:port][/db] or rediss://host[:port][/db] (TLS)");
  }
  const prefix = s.redisKeyPrefix === undefined || s.redisKeyPrefix === null || s.redisKeyPrefix === "" ? DEFAULT_KEY_PREFIX : s.redisKeyPrefix;
  if (typeof prefix !== "string" || prefix.length > 100 || /\s/.test(prefix)) problems.push("the Redis key prefix must be at most 100 characters without spaces");
  if (problems.length > 0) return { ok: false, problems };
  const password = typeof s.redisPassword === "string" && s.redisPassword.length > 0 ? s.redisPassword : null;
  return { ok: true, store: { kind: "redis", url: raw, password, keyPrefix: prefix as string } };
}

export interface AccountOptions {
  baseUrl: string;
  credentials: Credentials;
  /** Where the token pair is kept (a file under the Node-RED user directory). */
  tokenFile: string;
  /** Node-RED's credential secret, when set: the stored pair is encrypted with it. */
  secret?: string | null;
  auditLogPath: string;
  /** Replaces the file store (tests, or the shared store of several instances). */
  store?: TokenStore;
  /** Which store to build when `store` is not given (default: the file store). */
  sessionStore?: SessionStoreChoice;
  clock?: Clock;
  log?: SessionLog;
  timings?: Partial<SessionTimings>;
  client?: Omit<ClientOptions, "baseUrl" | "clock">;
  deviceListTtlMs?: number;
}

export class Account extends EventEmitter {
  readonly client: DoorApiClient;
  readonly session: Session;
  readonly directory: DeviceDirectory;
  readonly audit: AuditLog;
  readonly clock: Clock;
  private locationCache: { at: number; list: Location[] } | null = null;
  private locationFetch: Promise<Location[]> | null = null;
  private closed = false;
  private warmTimer: unknown = null;
  private warmOnReady: ((snap: SessionSnapshot) => void) | null = null;
  /** The store this account built (and closes); a store passed in is the caller's. */
  private readonly ownStore: TokenStore | null;

  constructor(readonly options: AccountOptions) {
    super();
    this.clock = options.clock ?? systemClock;
    const log = options.log;
    this.client = new DoorApiClient({
      ...options.client,
      baseUrl: options.baseUrl,
      clock: this.clock,
      onRetry: ({ operation, attempt, delayMs, error }) =>
        log?.warn(`${operation}: attempt ${attempt} failed (${error.status ?? error.kind}); retrying in ${delayMs} ms`),
    });
    const identity = options.credentials.method === "email" ? options.credentials.email : options.credentials.phoneNumber;
    const key = accountKey(options.baseUrl, options.credentials.method, identity);
    const choice = options.sessionStore ?? { kind: "file" };
    this.ownStore = options.store
      ? null
      : choice.kind === "redis"
        ? new RedisTokenStore({
            url: choice.url,
            password: choice.password ?? null,
            keyPrefix: choice.keyPrefix,
            accountKey: key,
            // Node-RED's credential secret differs between instances; the account's password does not.
            secret: choice.secret === undefined ? options.credentials.password : choice.secret,
            lockTtlMs: choice.lockTtlMs,
            lockWaitMs: choice.lockWaitMs,
            onProblem: (m) => log?.warn(m),
            onUnreachable: (m) => (m ? log?.warn(m) : log?.info("the Redis session store is reachable again")),
          })
        : new FileTokenStore({
            filePath: options.tokenFile,
            accountKey: key,
            secret: options.secret ?? null,
            onProblem: (m) => log?.warn(m),
          });
    const store = options.store ?? this.ownStore!;
    this.session = new Session({ client: this.client, credentials: options.credentials, store, clock: this.clock, log, timings: options.timings });
    this.session.on("state", (s: SessionSnapshot) => this.emit("state", s));
    this.session.on("halt", (e: SessionHaltedError) => this.emit("halt", e));
    this.directory = new DeviceDirectory(() => this.session.call((t) => this.client.listDevices(t)), {
      ttlMs: options.deviceListTtlMs ?? DEVICE_LIST_TTL_MS,
      now: () => this.clock.now(),
    });
    this.audit = openAuditLog(options.auditLogPath);
  }

  start(): Promise<void> {
    return this.session.start();
  }

  snapshot(): SessionSnapshot {
    return this.session.snapshot();
  }

  devices(force = false): Promise<Device[]> {
    return this.directory.devices(force);
  }

  /**
   * Fetches the device list once the session is ready, so names resolve without a fetch on the
   * unlock path; a failed fetch is tried again after the directory's back-off (30 s doubling, at
   * most every 15 min, never sooner than a Retry-After). Waits while the session is not ready
   * (no login is started for it: only messages may cause one). Stops when the list is there
   * or the account closes. Never rejects.
   */
  warmDevices(): void {
    if (this.closed || this.directory.cached() !== null) return;
    if (this.session.state !== "ready") {
      if (this.warmOnReady) return;
      this.warmOnReady = (snap: SessionSnapshot) => {
        if (snap.state !== "ready") return;
        this.session.off("state", this.warmOnReady!);
        this.warmOnReady = null;
        this.warmDevices();
      };
      this.session.on("state", this.warmOnReady);
      return;
    }
    this.directory.fetchNow().then(
      () => undefined,
      () => {
        if (this.closed) return;
        const at = this.directory.nextRetryAt() ?? this.clock.now();
        this.clock.clearTimeout(this.warmTimer);
        this.warmTimer = this.clock.setTimeout(() => {
          this.warmTimer = null;
          this.warmDevices();
        }, Math.max(0, at - this.clock.now()));
      },
    );
  }

  private stopWarming(): void {
    if (this.warmTimer !== null) this.clock.clearTimeout(this.warmTimer);
    this.warmTimer = null;
    if (this.warmOnReady) this.session.off("state", this.warmOnReady);
    this.warmOnReady = null;
  }

  /** The location list, cached like the device list (single flight). */
  async locations(force = false): Promise<Location[]> {
    const c = this.locationCache;
    if (!force && c && this.clock.now() - c.at < (this.options.deviceListTtlMs ?? DEVICE_LIST_TTL_MS)) return c.list;
    if (!this.locationFetch) {
      this.locationFetch = this.session
        .call((t) => this.client.listLocations(t))
        .then((list) => {
          this.locationCache = { at: this.clock.now(), list };
          return list;
        })
        .finally(() => {
          this.locationFetch = null;
        });
    }
    return this.locationFetch;
  }

  /** GET /api/device/{id} with the idempotent retry policy and the 401 rule. */
  getDevice(deviceId: number): Promise<Device> {
    return this.session.call((t) => this.client.getDevice(t, deviceId));
  }

  /** Stop (redeploy or shutdown): the stored pair stays, so the next start resumes it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWarming();
    await this.session.close();
    await Promise.allSettled([this.client.close(), this.audit.close(), this.ownStore?.close?.()]);
  }

  /** The account was deleted: log out and delete the stored pair. */
  async destroy(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWarming();
    await this.session.destroy();
    await Promise.allSettled([this.client.close(), this.audit.close(), this.ownStore?.close?.()]);
  }
}
