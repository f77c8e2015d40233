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
import { FileTokenStore, type TokenStore, accountKey } from "../session/token-store.js";
import { PHONE_PATTERN, type Device, type Location } from "../spec/schemas.js";
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
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) problems.push("the email address is missing or malformed");
    else credentials = { method, email, password };
  } else if (LOGIN_METHODS.includes(method)) {
    const phone = typeof s.phoneNumber === "string" ? s.phoneNumber.trim() : "";
    if (!PHONE_PATTERN.test(phone)) problems.push("the phone number must be + followed by 9 to 13 digits");
    else credentials = { method, phoneNumber: phone, password };
  }
  if (problems.length > 0 || credentials === null) return { ok: false, problems };
  return { ok: true, baseUrl, credentials };
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
    const store =
      options.store ??
      new FileTokenStore({
        filePath: options.tokenFile,
        accountKey: accountKey(options.baseUrl, options.credentials.method, identity),
        secret: options.secret ?? null,
        onProblem: (m) => log?.warn(m),
      });
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
    await this.session.close();
    await Promise.allSettled([this.client.close(), this.audit.close()]);
  }

  /** The account was deleted: log out and delete the stored pair. */
  async destroy(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.session.destroy();
    await Promise.allSettled([this.client.close(), this.audit.close()]);
  }
}
