/**
 * One API account on one environment, as the nodes use it: its client, its one session,
 * its device directory (24 h cache) — the shared core, account-core.ts — and the node's own
 * audit log. Knows nothing of Node-RED; each config node `door-account` owns one of these.
 */
import { EventEmitter } from "node:events";
import type { Credentials, DoorApiClient, LoginMethod } from "../client/client.js";
import { BaseUrlError, parseBaseUrl } from "../client/base-url.js";
import { type AuditLog, type AuditLogOptions, openAuditLog } from "../audit/audit-log.js";
import type { DeviceDirectory } from "../doors/directory.js";
import type { SessionHaltedError } from "../session/errors.js";
import type { Session, SessionSnapshot } from "../session/session.js";
import { DEFAULT_KEY_PREFIX } from "../session/redis-store.js";
import { LoginByEmailRequest, PHONE_PATTERN, type Device, type Location } from "../spec/schemas.js";
import type { Clock } from "../util/clock.js";
import { AccountCore, type AccountCoreOptions, type SessionStoreChoice } from "./account-core.js";
import {
  type DescriptionCheckLog,
  type ServiceDescriptionCheck,
  acquireDescriptionCheck,
} from "./description-check.js";

export { AccountCore, type SessionStoreChoice };
/** How long closing an account waits for unlocks in flight (Node-RED gives a node 15 s to close). */
export const ACCOUNT_DRAIN_MS = 10_000;

export const LOGIN_METHODS: readonly LoginMethod[] = ["phone", "email", "login"];

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
export function checkAccountSettings(
  s: AccountSettings,
): { ok: true; baseUrl: string; credentials: Credentials } | { ok: false; problems: string[] } {
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
    if (email === "") problems.push("the email address is missing");
    else if (!LoginByEmailRequest.shape.email.safeParse(email).success) problems.push("the email address is malformed");
    else credentials = { method, email, password };
  } else if (LOGIN_METHODS.includes(method)) {
    const phone = typeof s.phoneNumber === "string" ? s.phoneNumber.trim() : "";
    if (phone === "") problems.push("the phone number is missing");
    else if (!PHONE_PATTERN.test(phone)) problems.push("the phone number must be + followed by 9 to 13 digits");
    else credentials = { method, phoneNumber: phone, password };
  }
  if (problems.length > 0 || credentials === null) return { ok: false, problems };
  return { ok: true, baseUrl, credentials };
}

export type SessionStoreKind = "file" | "redis";
export const SESSION_STORES: readonly SessionStoreKind[] = ["file", "redis"];

/** Checks the session store part of an account's configuration. */
export function checkStoreSettings(s: {
  sessionStore?: unknown;
  redisUrl?: unknown;
  redisKeyPrefix?: unknown;
  redisPassword?: unknown;
}): { ok: true; store: SessionStoreChoice } | { ok: false; problems: string[] } {
  const kind =
    s.sessionStore === undefined || s.sessionStore === null || s.sessionStore === "" ? "file" : s.sessionStore;
  if (kind === "file") return { ok: true, store: { kind: "file" } };
  if (kind !== "redis")
    return { ok: false, problems: [`the session store must be one of ${SESSION_STORES.join(", ")}`] };
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
  } else if (url.password) {
    // The URL is a node property, kept in the flow file; the password is a credential
    // (docs/security.md#secrets). The problem never quotes the URL.
    problems.push(
      "the Redis URL must not hold a password: put it in the Redis password field (an ACL user name may stay in the URL)",
    );
  }
  const prefix =
    s.redisKeyPrefix === undefined || s.redisKeyPrefix === null || s.redisKeyPrefix === ""
      ? DEFAULT_KEY_PREFIX
      : s.redisKeyPrefix;
  if (typeof prefix !== "string" || prefix.length > 100 || /\s/.test(prefix))
    problems.push("the Redis key prefix must be at most 100 characters without spaces");
  if (problems.length > 0) return { ok: false, problems };
  const password = typeof s.redisPassword === "string" && s.redisPassword.length > 0 ? s.redisPassword : null;
  return { ok: true, store: { kind: "redis", url: raw, password, keyPrefix: prefix as string } };
}

export interface AccountOptions extends AccountCoreOptions {
  auditLogPath: string;
  /** Rotation of the audit log (`auditMaxBytes`, `auditKeep`); the first account of a path sets them. */
  audit?: AuditLogOptions;
  /**
   * The account's shared part (client, session, device directory) when several config nodes
   * use one account: this Account then adds only its own audit log and never closes the core
   * (its owner, src/account/registry.ts, does). Without it the Account builds its own.
   */
  core?: AccountCore;
  /**
   * The service description check (docs/service-description.md): where the description is
   * (src/account/description-check.ts descriptionUrl) and where its findings go. Absent or
   * null: off (`specCheck` unticked).
   */
  descriptionCheck?: { url: URL; log: DescriptionCheckLog } | null;
}

/**
 * What one config node uses: the account's shared core (one session per account, see
 * account-core.ts) plus the node's own audit log. The session's "state" and "halt" events are
 * forwarded while this Account is open.
 */
export class Account extends EventEmitter {
  readonly core: AccountCore;
  readonly client: DoorApiClient;
  readonly session: Session;
  readonly directory: DeviceDirectory;
  readonly audit: AuditLog;
  readonly clock: Clock;
  /** The service description check, when on; it runs beside the session and never touches it. */
  readonly descriptionCheck: ServiceDescriptionCheck | null;
  private closed = false;
  private readonly releaseDescriptionCheck: () => void;
  private readonly unwatchDescription: () => void;
  /** Unlocks in flight (attempt written, result not yet): close() waits for their results. */
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly ownCore: boolean;
  private readonly onState = (s: SessionSnapshot) => this.emit("state", s);
  private readonly onHalt = (e: SessionHaltedError) => this.emit("halt", e);

  constructor(readonly options: AccountOptions) {
    super();
    this.ownCore = !options.core;
    this.core = options.core ?? new AccountCore(options);
    this.client = this.core.client;
    this.session = this.core.session;
    this.directory = this.core.directory;
    this.clock = this.core.clock;
    this.session.on("state", this.onState);
    this.session.on("halt", this.onHalt);
    this.audit = openAuditLog(options.auditLogPath, options.audit);
    // One check per description in this runtime: copies of this account share it (description-check.ts).
    const check = options.descriptionCheck;
    const shared = check
      ? acquireDescriptionCheck({
          url: check.url,
          clock: this.clock,
          log: check.log,
          heldForMs: () => this.client.heldForMs(),
        })
      : null;
    this.descriptionCheck = shared?.check ?? null;
    this.releaseDescriptionCheck = shared ? () => shared.release() : () => undefined;
    this.descriptionCheck?.startAfter(this.session);
    this.unwatchDescription =
      this.descriptionCheck?.watch((d) => this.core.events.descriptionDiffers(d)) ?? (() => undefined);
  }

  /**
   * Work that writes audit records (an unlock, from its attempt to its result): the audit log
   * stays open for it when the account closes (bounded by drain()). Returns `work`.
   */
  track<T>(work: Promise<T>): Promise<T> {
    this.inflight.add(work);
    const done = () => this.inflight.delete(work);
    work.then(done, done);
    return work;
  }

  /** How many tracked unlocks are in flight. */
  get unlocksInFlight(): number {
    return this.inflight.size;
  }

  /**
   * Waits until every tracked unlock has settled (its result record written), at most `maxMs`.
   * Resolves true if all settled in time. Never rejects.
   */
  async drain(maxMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | null = null;
    const settled = (async () => {
      while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
      return true;
    })();
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), maxMs);
    });
    try {
      return await Promise.race([settled, timeout]);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  start(): Promise<void> {
    return this.core.start();
  }

  snapshot(): SessionSnapshot {
    return this.session.snapshot();
  }

  devices(force = false): Promise<Device[]> {
    return this.core.devices(force);
  }

  /** The shared core's device-list warm-up (fetched once ready, retried with back-off). */
  warmDevices(): void {
    this.core.warmDevices();
  }

  /** The location list, cached like the device list (single flight). */
  locations(force = false): Promise<Location[]> {
    return this.core.locations(force);
  }

  /** GET /api/device/{id} with the idempotent retry policy and the 401 rule. */
  getDevice(deviceId: number): Promise<Device> {
    return this.core.getDevice(deviceId);
  }

  private detach(): void {
    this.unwatchDescription();
    this.releaseDescriptionCheck();
    this.session.off("state", this.onState);
    this.session.off("halt", this.onHalt);
  }

  /**
   * Stop (redeploy or shutdown): the stored pair stays, so the next start resumes it. A shared
   * core stays open. Unlocks in flight finish first (at most `drainMs`), so their result records
   * are written before the log closes (docs/audit-log.md#records).
   */
  async close(drainMs = ACCOUNT_DRAIN_MS): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.detach();
    const drained = await this.drain(drainMs);
    await Promise.allSettled([this.ownCore ? this.core.close() : Promise.resolve(), this.releaseAudit(drained)]);
  }

  /** The account was deleted: log out and delete the stored pair (an own core only; a shared one is its owner's). */
  async destroy(drainMs = ACCOUNT_DRAIN_MS): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.detach();
    const drained = await this.drain(drainMs);
    await Promise.allSettled([this.ownCore ? this.core.destroy() : Promise.resolve(), this.releaseAudit(drained)]);
  }

  /**
   * Lets go of the audit log. When the drain bound expired with unlocks still in flight, their
   * requests may have reached the service: the log stays open (this reference held) until each
   * has written its result (docs/audit-log.md#records: every command that was sent gets its
   * closing record), bounded by the client's own answer time-outs. The close itself
   * does not wait for that (Node-RED's close time-out); a redeployed account on the same path
   * meanwhile shares this very writer (one writer, one chain).
   */
  private releaseAudit(drained: boolean): Promise<void> {
    if (drained || this.inflight.size === 0) return this.audit.close();
    void (async () => {
      while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
      await this.audit.close();
    })().catch(() => undefined);
    return Promise.resolve();
  }
}
