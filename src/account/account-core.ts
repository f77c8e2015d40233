/**
 * The part of an account that exists once per account, however many config nodes name it:
 * the HTTP client, the one session (one login, one refresh in flight, one stored pair), the
 * device directory and the location cache. Keyed by `accountKey(baseUrl, method, identity)`
 * (src/account/registry.ts shares one core between the nodes of one runtime); each
 * node's Account (account.ts) adds its own audit log. Knows nothing of Node-RED.
 */
import { type ClientOptions, type Credentials, DoorApiClient } from "../client/client.js";
import { DeviceDirectory } from "../doors/directory.js";
import {
  DEVICE_LIST_TTL_MS,
  DeviceListUnavailableError,
  isRateLimit,
  listRetryDelayMs,
  renewalLimited,
  retryAfterSecOf,
} from "../doors/list-policy.js";
import { DEFAULT_KEY_PREFIX, RedisTokenStore } from "../session/redis-store.js";
import { Session, type SessionLog, type SessionSnapshot, type SessionTimings } from "../session/session.js";
import { FileTokenStore, type TokenStore, accountKey } from "../session/token-store.js";
import {
  type AccountRecords,
  fileRecords,
  memoryRecords,
  recordsFileBeside,
  redisRecords,
} from "../session/account-records.js";
import type { Device, Location } from "../spec/schemas.js";
import { type AccountEvents, accountEvents } from "./events.js";
import type { PassBook } from "../passes/pass-book.js";
import { passBookFor } from "../passes/file-pass-book.js";
import { RedisPassBook } from "../passes/redis-pass-book.js";
import { type Clock, systemClock } from "../util/clock.js";

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

export interface AccountCoreOptions {
  baseUrl: string;
  credentials: Credentials;
  /** Where the token pair is kept (a file under the Node-RED user directory, named from the account key). */
  tokenFile: string;
  /** Node-RED's credential secret, when set: the stored pair is encrypted with it. */
  secret?: string | null;
  /** Replaces the file store (tests, or the shared store of several instances). */
  store?: TokenStore;
  /** Which store to build when `store` is not given (default: the file store). */
  sessionStore?: SessionStoreChoice;
  clock?: Clock;
  log?: SessionLog;
  timings?: Partial<SessionTimings>;
  client?: Omit<ClientOptions, "baseUrl" | "clock">;
  deviceListTtlMs?: number;
  /**
   * The editor's sign-in: log in at start even when a pair is stored, so the password typed is
   * checked (docs/session.md#signing-in-from-the-editor). A shared store's pair is still used.
   */
  checkCredentials?: boolean;
}

export function identityOf(credentials: Credentials): string {
  return credentials.method === "email" ? credentials.email : credentials.phoneNumber;
}

export class AccountCore {
  readonly client: DoorApiClient;
  readonly session: Session;
  readonly directory: DeviceDirectory;
  readonly clock: Clock;
  /** Small records kept beside the token pair: the door-unlock lockouts (docs/access-rules.md#what-ends-a-lockout). */
  readonly records: AccountRecords;
  /** accountKey(baseUrl, method, identity): a hash, never the identity in clear. */
  readonly key: string;
  /** What an operator is told of this account (docs/events.md): shared with every core of the same key. */
  readonly events: AccountEvents;
  private readonly detachEvents: () => void;
  private locationCache: { at: number; list: Location[] } | null = null;
  private locationFetch: Promise<Location[]> | null = null;
  /** The location list's back-off, as the device list's (directory.ts): monotonic; no fetch within a Retry-After, one message try per window. */
  private locationBackoff = {
    failures: 0,
    lastError: null as unknown,
    retryAt: Number.NEGATIVE_INFINITY,
    notBefore: Number.NEGATIVE_INFINITY,
    tryUsed: false,
  };
  private closed = false;
  private started: Promise<void> | null = null;
  private warmTimer: unknown = null;
  private warmOnReady: ((snap: SessionSnapshot) => void) | null = null;
  /** The store this core built (and closes); a store passed in is the caller's. */
  private readonly ownStore: TokenStore | null;
  private redisPasses: RedisPassBook | null = null;

  constructor(readonly options: AccountCoreOptions) {
    this.clock = options.clock ?? systemClock;
    const log = options.log;
    this.client = new DoorApiClient({
      ...options.client,
      baseUrl: options.baseUrl,
      clock: this.clock,
      onRetry: ({ operation, attempt, delayMs, error }) =>
        log?.warn(`${operation}: attempt ${attempt} failed (${error.status ?? error.kind}); retrying in ${delayMs} ms`),
    });
    this.key = accountKey(options.baseUrl, options.credentials.method, identityOf(options.credentials));
    const choice = options.sessionStore ?? { kind: "file" };
    this.ownStore = options.store
      ? null
      : choice.kind === "redis"
        ? new RedisTokenStore({
            url: choice.url,
            password: choice.password ?? null,
            keyPrefix: choice.keyPrefix ?? DEFAULT_KEY_PREFIX,
            accountKey: this.key,
            // Node-RED's credential secret differs between instances; the account's password does not.
            secret: choice.secret === undefined ? options.credentials.password : choice.secret,
            lockTtlMs: choice.lockTtlMs,
            lockWaitMs: choice.lockWaitMs,
            onProblem: (m) => log?.warn(m),
            onUnreachable: (m) => (m ? log?.warn(m) : log?.info("the Redis session store is reachable again")),
          })
        : new FileTokenStore({
            filePath: options.tokenFile,
            accountKey: this.key,
            secret: options.secret ?? null,
            password: options.credentials.password,
            onProblem: (m) => log?.warn(m),
          });
    const store = options.store ?? this.ownStore!;
    // Beside the pair, in the same store (src/session/account-records.ts).
    const now = () => this.clock.now();
    this.records =
      this.ownStore instanceof RedisTokenStore
        ? redisRecords(this.ownStore, now)
        : this.ownStore !== null
          ? fileRecords(recordsFileBeside(options.tokenFile, this.key), { now, onProblem: (m) => log?.warn(m) })
          : memoryRecords(now);
    this.session = new Session({
      client: this.client,
      credentials: options.credentials,
      store,
      clock: this.clock,
      log,
      timings: options.timings,
      random: options.client?.random,
      loginFirst: options.checkCredentials === true,
      // The Redis store seals the pair under a key from the password, unless given another secret.
      storeProvesCredentials: !options.store && choice.kind === "redis" && choice.secret === undefined,
    });
    this.events = accountEvents(this.key);
    this.client.observer = this.events;
    this.detachEvents = this.events.attach(this);
    this.directory = new DeviceDirectory(
      () =>
        this.session
          .call((t) => this.client.listDevices(t))
          .then((list) => {
            this.events.doorsListed(list);
            return list;
          }),
      {
        ttlMs: options.deviceListTtlMs ?? DEVICE_LIST_TTL_MS,
        now: () => this.clock.now(),
        monotonic: () => this.clock.monotonic(),
      },
    );
  }

  /** Resume the stored pair, or log in (once, however many nodes call it). */
  start(): Promise<void> {
    return this.session.start();
  }

  /**
   * start() and then one device list fetch, so names resolve without a fetch on the unlock
   * path. Never rejects. Called once per core by its owner.
   */
  startAndWarm(): Promise<void> {
    if (!this.started) {
      this.started = this.session.start().then(() => this.warmDevices());
    }
    return this.started;
  }

  /**
   * Fetches the device list once the session is ready, so names resolve without a fetch on the
   * unlock path; a failed fetch is tried again after the directory's back-off (30 s doubling, at
   * most every 15 min, never sooner than a Retry-After). Waits while the session is not ready
   * (no login is started for it: only messages may cause one). Stops when the list is there
   * or the core closes. Never rejects.
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
        const inMs = this.directory.retryInMs() ?? 0;
        this.stopWarming();
        this.warmTimer = this.clock.setTimeout(() => {
          this.warmTimer = null;
          this.warmDevices();
        }, inMs);
      },
    );
  }

  private stopWarming(): void {
    if (this.warmTimer !== null) this.clock.clearTimeout(this.warmTimer);
    this.warmTimer = null;
    if (this.warmOnReady) this.session.off("state", this.warmOnReady);
    this.warmOnReady = null;
  }

  /** The account's guest passes (docs/passes.md#where-passes-are-kept): one book per account, read on first use. */
  get passes(): PassBook {
    // On Redis, in the account's store, shared by every instance (one book per core: Redis holds the truth).
    if (this.ownStore instanceof RedisTokenStore)
      return (this.redisPasses ??= new RedisPassBook(
        this.ownStore,
        () => this.clock.now(),
        (m) => this.options.log?.warn(m),
      ));
    return passBookFor(
      this.key,
      this.options.tokenFile,
      () => this.clock.now(),
      (m) => this.options.log?.warn(m),
      this.options.secret ?? null,
    );
  }

  /** A closed core tells the account's events nothing more (a core that replaces it does). */
  private stopEvents(): void {
    this.detachEvents();
    if (this.client.observer === this.events) this.client.observer = null;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  devices(force = false): Promise<Device[]> {
    return this.directory.devices(force);
  }

  /**
   * A forced device list fetch that never logs in or renews (the editor's refresh): made only
   * with the access token the session holds now, else nothing is sent (SessionUnavailableError).
   */
  refreshDevicesWithHeldToken(): Promise<Device[]> {
    // Checked first: without a token to use, the directory is not touched (no back-off, no try used).
    if (this.session.heldToken() === null) return Promise.reject(this.session.noSessionError());
    return this.directory.refreshWith(() =>
      this.session
        .callWithHeldToken((t) => this.client.listDevices(t))
        .then((list) => {
          this.events.doorsListed(list);
          return list;
        }),
    );
  }

  /** The location list, cached like the device list (single flight). */
  async locations(force = false): Promise<Location[]> {
    const c = this.locationCache;
    if (!force && c && this.clock.now() - c.at < (this.options.deviceListTtlMs ?? DEVICE_LIST_TTL_MS)) return c.list;
    if (!this.locationFetch) {
      const bo = this.locationBackoff;
      const m = this.clock.monotonic();
      if (m < bo.notBefore || (m < bo.retryAt && bo.tryUsed)) {
        if (c) return c.list;
        throw new LocationListUnavailableError(bo.lastError, this.locationsNextTryInMs());
      }
      if (m < bo.retryAt) bo.tryUsed = true;
      this.locationFetch = this.session
        .call((t) => this.client.listLocations(t))
        .then(
          (list) => {
            this.locationCache = { at: this.clock.now(), list };
            this.locationBackoff = {
              failures: 0,
              lastError: null,
              retryAt: Number.NEGATIVE_INFINITY,
              notBefore: Number.NEGATIVE_INFINITY,
              tryUsed: false,
            };
            return list;
          },
          (e: unknown) => {
            bo.lastError = e;
            const retryAfterSec = retryAfterSecOf(e);
            const now = this.clock.monotonic();
            if (renewalLimited(e)) {
              // Nothing was sent for the list: the session's wait only, no back-off of the list's own (as the device list's).
              bo.notBefore = Math.max(bo.notBefore, now + retryAfterSec * 1000);
              bo.tryUsed = false;
              throw new LocationListUnavailableError(e, this.locationsNextTryInMs());
            }
            bo.failures++;
            bo.retryAt = now + listRetryDelayMs(bo.failures, retryAfterSec);
            bo.notBefore = now + retryAfterSec * 1000;
            // Rate-limited: the message learns when the list will be fetched again (as the device list's).
            throw isRateLimit(e) ? new LocationListUnavailableError(e, this.locationsNextTryInMs()) : e;
          },
        )
        .finally(() => {
          this.locationFetch = null;
        });
    }
    return this.locationFetch;
  }

  /** How long until a message may make the location list be fetched again (ms, ≥ 0). */
  private locationsNextTryInMs(): number {
    const bo = this.locationBackoff;
    const at = bo.tryUsed ? Math.max(bo.notBefore, bo.retryAt) : bo.notBefore;
    return Math.max(0, at - this.clock.monotonic());
  }

  /** GET /api/device/{id} with the idempotent retry policy and the 401 rule. */
  getDevice(deviceId: number): Promise<Device> {
    return this.session
      .call((t) => this.client.getDevice(t, deviceId))
      .then((d) => {
        if (typeof d.online === "boolean") this.events.door(d.id, d.name ?? null, d.online);
        return d;
      });
  }

  /** Stop (redeploy or shutdown): the stored pair stays, so the next start resumes it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWarming();
    this.stopEvents();
    await this.session.close();
    await Promise.allSettled([this.client.close(), this.ownStore?.close?.()]);
  }

  /** The account was deleted: log out and delete the stored pair. */
  async destroy(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWarming();
    this.stopEvents();
    await this.session.destroy();
    await Promise.allSettled([this.client.close(), this.ownStore?.close?.()]);
  }
}

/** The location list could not be fetched: its back-off (or Retry-After) still runs, or this message's fetch was rate-limited. */
export class LocationListUnavailableError extends DeviceListUnavailableError {
  override readonly name = "LocationListUnavailableError";
  override readonly list: string = "location list";
  constructor(cause: unknown, retryInMs: number) {
    super(cause, retryInMs);
    this.message = `the location list is unavailable (${(cause as Error)?.message ?? String(cause)}); next try in ${Math.ceil(retryInMs / 1000)} s`;
  }
}
