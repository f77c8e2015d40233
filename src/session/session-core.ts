/**
 * The session's state machine and its renewals (docs/session.md#login-and-start-up,
 * docs/session.md#renewal, docs/session.md#rate-limits): the state and its checked transitions
 * (transitions.ts), the single flight of logins and refreshes, what each failure of a login or
 * refresh leads to, the renewal timer, and the pairs read from the store. Session (session.ts)
 * builds on it what callers use: start, call and its 401 replay, Reconnect, close. When a login
 * or refresh may be sent is the gate's (send-gate.ts); the store's lock and notices are
 * store-sync.ts's.
 *
 * Rules (docs/session.md#renewal, docs/session.md#rate-limits):
 * - at most one login or refresh in flight for the account; every caller waits for it;
 * - renew every 36 h or 3 h before the JWT `exp`, whichever is first;
 * - refresh 400/401: full login, at most once an hour (a second time halts as superseded);
 * - refresh 5xx/network: the client retries once; then, if the access token is still good
 *   for a while, keep it and try again later; otherwise log in;
 * - login 400/401: halted-login-failed; login 5xx/network (after the client's single
 *   retry): unreachable, not a halt;
 * - login or refresh 429: nothing is sent for the service's Retry-After, and no longer.
 *
 * A shared store (Redis, several instances on one account): logins too run under the store's
 * renewal lock after re-reading the store, so an instance adopts the pair another one obtained
 * instead of logging in again; notices from the store ("changed", "reconnected") update the pair
 * in memory.
 */
import { EventEmitter } from "node:events";
import type { Credentials, DoorApiClient } from "../client/client.js";
import { DoorApiError } from "../client/errors.js";
import { type Clock, systemClock } from "../util/clock.js";
import { type RenewalFailedError, SessionHaltedError, SessionUnavailableError } from "./errors.js";
import { SendGate } from "./send-gate.js";
import { StoreSync, isOtherPair } from "./store-sync.js";
import { OneShotTimer, within } from "./timers.js";
import { type LivePair, isExpired, localExpiry, readPair, renewalDue } from "./token-pair.js";
import type { StoreEvent, StoredPair, TokenStore } from "./token-store.js";
import { IllegalTransitionError, strictTransitions, transitionAllowed } from "./transitions.js";
import {
  DEFAULT_TIMINGS,
  HALTED_STATES,
  type SessionLog,
  type SessionOptions,
  type SessionSnapshot,
  type SessionState,
  type SessionTimings,
} from "./types.js";

const silent: SessionLog = { info() {}, warn() {}, error() {} };

/** The reason given to a refresh that a 401 caused: the current access token is known bad. */
export const AFTER_401 = "the service answered 401";

export abstract class SessionCore extends EventEmitter {
  protected readonly client: DoorApiClient;
  protected readonly credentials: Credentials;
  protected readonly store: TokenStore;
  protected readonly clock: Clock;
  protected readonly log: SessionLog;
  readonly timings: SessionTimings;
  /** When a login or refresh may be sent (send-gate.ts). */
  protected readonly gate: SendGate;
  /** The store's lock, the pair it missed, its notices (store-sync.ts). */
  protected readonly sync: StoreSync;

  protected _state: SessionState = "idle";
  protected reason: string | null = null;
  protected detail: string | null = null;
  protected since: number;
  protected pair: LivePair | null = null;
  /** The one login or refresh in flight, if any. */
  protected inflight: Promise<void> | null = null;
  /** How many logins/refreshes have started (a replay's 401 during one of ours is not a takeover). */
  protected renewalsStarted = 0;
  protected readonly renewTimer: OneShotTimer;
  protected readonly abort = new AbortController();
  /** An access token the service answered 401 to (not sent again while the store is away). */
  protected rejectedAccess: string | null = null;
  /** A refresh token known dead (rejected, or of a superseded session): never adopted again. */
  protected deadRefresh: string | null = null;
  /** The `sub` claim of the last access token that had one (compared, never shown). */
  protected subjectSeen: string | null = null;
  private readonly storeProvesCredentials: boolean;
  protected proven = false;
  /**
   * Set by the owner of this session (src/account/registry.ts): who else in this runtime
   * may hold the same service account, added to a halt as superseded; null for none known.
   */
  otherHolders: (() => string | null) | null = null;

  constructor(options: SessionOptions) {
    super();
    this.client = options.client;
    this.credentials = options.credentials;
    // The service's error words never carry the login or password (docs/security.md#secrets).
    this.client.hideInErrors?.(options.credentials);
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.log = options.log ?? silent;
    this.timings = { ...DEFAULT_TIMINGS, ...options.timings };
    this.gate = new SendGate(this.clock, this.timings, options.random ?? Math.random);
    this.sync = new StoreSync(this.store, this.log);
    this.since = this.clock.now();
    this.renewTimer = new OneShotTimer(this.clock);
    this.storeProvesCredentials = options.storeProvesCredentials === true;
  }

  snapshot(): SessionSnapshot {
    return {
      state: this._state,
      reason: this.reason,
      detail: this.detail,
      since: this.since,
      accessExpiresAt: this.pair?.exp ?? null,
      renewAt: this.renewTimer.at,
    };
  }

  /** The monotonic clock every wait of the session is measured on. */
  protected mono(): number {
    return this.clock.monotonic();
  }

  /** The error for a call whose token could not be renewed (nothing executed). */
  protected renewalFailedError(what: string): RenewalFailedError {
    return this.gate.renewalFailedError(this.reason ?? this._state, what);
  }

  /** Single flight: a second caller gets the refresh (or login) already in flight. */
  protected refresh(why: string): Promise<void> {
    return this.single(() => this.doRefresh(why));
  }

  protected login(why: string): Promise<void> {
    return this.single(() => this.doLogin(why));
  }

  protected single(work: () => Promise<void>): Promise<void> {
    if (this.inflight) return this.inflight;
    this.renewalsStarted++;
    const p = (async () => {
      try {
        await work();
      } catch (e) {
        // Every expected failure is turned into a state above; this is a bug or I/O error.
        this.log.error(`session: unexpected failure: ${(e as Error).message}`);
        if (this._state === "logging-in" || this._state === "refreshing") {
          this.setState(this.pair && !this.isExpired() ? "ready" : "unreachable", (e as Error).message);
        }
      } finally {
        this.inflight = null;
      }
    })();
    this.inflight = p;
    return p;
  }

  protected async doRefresh(why: string): Promise<void> {
    if (this._state === "closed" || HALTED_STATES.has(this._state)) return;
    if (!this.pair) return this.doLogin(why);
    this.setState("refreshing", why);
    await this.underLock(async () => {
      // Another process on the same store may have renewed while we waited for the lock.
      const stored = await this.sync.reread();
      if (stored && this.pair && isOtherPair(stored, this.pair.refreshToken, this.deadRefresh)) {
        this.adoptStored(stored);
        if (!this.isExpired()) {
          this.log.info("session: adopted the pair renewed by another process");
          this.becomeReady();
          return;
        }
      }
      const current = this.pair!;
      let fresh: { accessToken: string; refreshToken: string };
      this.gate.refreshStarted();
      try {
        fresh = await this.client.refresh(current.refreshToken, this.abort.signal);
      } catch (e) {
        if (!(e instanceof DoorApiError)) throw e;
        if (e.kind === "aborted") return;
        if (e.kind === "http" && (e.status === 400 || e.status === 401)) {
          this.gate.endRun();
          // Never reuse that refresh token. Log in, but at most once an hour.
          this.deadRefresh = current.refreshToken;
          this.pair = null;
          if (!this.gate.reloginAfterReject()) {
            this.halt(
              "halted-superseded",
              `the refresh token was rejected (${e.status}) twice within an hour: another client is using this account`,
            );
            return;
          }
          this.log.warn(`session: the refresh token was rejected (${e.status}); logging in again`);
          await this.doLogin("refresh token rejected");
          return;
        }
        if (e.kind === "http" && e.status === 429) {
          // The service's wait, and nothing of ours on top (docs/session.md#rate-limits): a
          // message after it renews. The timer (if the token is still good) keeps the spacing.
          const expired = this.isExpired();
          const wait = this.gate.refreshRateLimited(e, expired);
          this.log.warn(`session: refresh rate-limited (429); next try in ${Math.ceil(wait / 1000)} s`);
          if (!expired) {
            this.becomeReady(wait);
          } else {
            this.setState(
              "unreachable",
              `refresh rate-limited by the service; next try in ${Math.ceil(wait / 1000)} s`,
            );
          }
          return;
        }
        // 5xx, network, timeout, bad body — the client already retried once. A proactive
        // renewal may keep a token that is still good; after a 401 the token is known bad.
        this.gate.failed(`refresh failed: ${e.status !== null ? e.status : e.problem}`);
        if (
          why !== AFTER_401 &&
          this.pair &&
          this.pair.lifetimeMs !== null &&
          localExpiry(this.pair) - this.clock.now() > this.timings.refreshRetryMs + this.timings.expirySkewMs
        ) {
          this.log.warn(`session: refresh failed (${e.message}); keeping the current token and trying again later`);
          this.gate.spaceRenewal();
          this.becomeReady(this.timings.refreshRetryMs);
          return;
        }
        this.log.warn(`session: refresh failed (${e.message}); logging in again`);
        this.pair = null;
        await this.doLogin("refresh failed");
        return;
      }
      await this.accept(fresh);
    });
  }

  protected async doLogin(why: string): Promise<void> {
    if (this._state === "closed") return;
    if (!this.store.shared || this.sync.holdsLock) return this.loginNow(why);
    // A shared store: take the lock, and use the pair another instance logged in with, if any.
    this.clearRenewal();
    this.setState("logging-in", why);
    await this.underLock(async () => {
      const stored = await this.sync.reread();
      if (stored && isOtherPair(stored, this.pair?.refreshToken, this.deadRefresh)) {
        this.adoptStored(stored);
        if (!this.isExpired()) {
          this.log.info("session: adopted the pair another instance obtained (no login)");
          this.becomeReady();
          return;
        }
        return this.doRefresh(why);
      }
      await this.loginNow(why);
    });
  }

  private async loginNow(why: string): Promise<void> {
    if (this._state === "closed") return;
    this.clearRenewal();
    this.setState("logging-in", why);
    this.gate.loginStarted();
    let fresh: { accessToken: string; refreshToken: string };
    try {
      fresh = await this.client.login(this.credentials, this.abort.signal);
    } catch (e) {
      if (!(e instanceof DoorApiError)) throw e;
      if (e.kind === "aborted") return;
      this.pair = null;
      if (e.kind === "http" && (e.status === 400 || e.status === 401)) {
        this.proven = false;
        // The reason says what happened; what to fix is added once, where the halt is told
        // (haltText): the editor shows the reason beside the state's label, which says it already.
        this.halt("halted-login-failed", `the service refused the login (${e.status})`);
        return;
      }
      if (e.kind === "http" && e.status === 429) {
        // The service's wait, and no minute of ours on top (docs/session.md#rate-limits).
        const wait = this.gate.loginRateLimited(e);
        this.setState("unreachable", `login rate-limited by the service; next try in ${Math.ceil(wait / 1000)} s`);
        this.log.warn(`session: login rate-limited (429); next try in ${Math.ceil(wait / 1000)} s`);
        return;
      }
      // Without an HTTP answer the reason says what failed, where, and what to fix
      // ("cannot connect to <base URL> (connection refused): check the base URL").
      const failed = e.status !== null ? `login failed with ${e.status}` : e.problem;
      this.gate.failed(failed);
      this.setState("unreachable", failed, e.status !== null ? `login answered ${e.status}` : e.brief);
      this.log.warn(
        `session: ${e.message}${e.code ? ` [${e.code}]` : ""}; will try again when a message needs the session (at most once a minute)`,
      );
      return;
    }
    this.log.info(`session: logged in (${why})`);
    this.proven = true;
    await this.accept(fresh);
  }

  /** A new pair from login or refresh: persist it as a pair, then use it. */
  private async accept(fresh: { accessToken: string; refreshToken: string }): Promise<void> {
    const pair: StoredPair = {
      accessToken: fresh.accessToken,
      refreshToken: fresh.refreshToken,
      obtainedAt: this.clock.now(),
    };
    const replaced = this.pair?.refreshToken ?? this.deadRefresh;
    this.adopt(pair);
    this.gate.renewed();
    await this.sync.save(pair, replaced);
    if (this._state !== "closed") this.becomeReady();
  }

  /**
   * Runs `work` under the store's renewal lock. A shared store that cannot be reached (or
   * whose lock stays taken) ends in state store-unreachable: no private login.
   */
  private underLock(work: () => Promise<void>): Promise<void> {
    return this.sync.underLock(work, (e) => {
      if (this._state === "closed" || HALTED_STATES.has(this._state)) return;
      this.setState("store-unreachable", e.message);
      this.log.warn(`session: ${e.message}; keeping the session in memory, no login from this instance`);
      // Try the renewal again later (and as soon as the store is back, see onStoreEvent).
      if (this.pair) this.scheduleRenewal(this.timings.loginRetryMs);
    });
  }

  /** Another instance saved a pair, or the shared store is back after an outage. */
  protected async onStoreEvent(event: StoreEvent): Promise<void> {
    const idleStates: SessionState[] = ["ready", "unreachable", "store-unreachable"];
    if (!idleStates.includes(this._state) || this.inflight) return; // a renewal in flight re-reads under the lock
    try {
      if (event === "reconnected") await this.sync.catchUp(() => this.pair);
      const stored = await this.store.load();
      if (!idleStates.includes(this._state) || this.inflight) return;
      if (isOtherPair(stored, this.pair?.refreshToken, this.deadRefresh)) {
        this.adoptStored(stored!);
        this.log.info("session: adopted the pair renewed by another instance");
        if (!this.isExpired()) {
          this.becomeReady();
          return;
        }
      }
    } catch {
      /* the store went away again: the next renewal reports it */
    }
    if (event === "reconnected" && this._state === "store-unreachable" && !this.inflight) {
      if (!this.pair) void this.login("the session store is reachable again");
      else if (this.isExpired() || this.pair.accessToken === this.rejectedAccess)
        void this.refresh("the session store is reachable again");
      else this.becomeReady();
    }
  }

  /** A pair read from the store (ours from an earlier run, or another instance's). */
  protected adoptStored(pair: StoredPair): void {
    this.adopt(pair);
    if (this.storeProvesCredentials) this.proven = true;
  }

  /** A new pair in use (token-pair.ts reads its lifetime, and its `sub` when it has one). */
  private adopt(pair: StoredPair): void {
    const { live, subject } = readPair(pair, this.timings.minRenewalIntervalMs);
    if (subject !== null) this.subjectSeen = subject;
    if (live.exp === null)
      this.log.warn("session: the access token carries no readable exp claim; renewing on the 36 h schedule only");
    this.pair = live;
  }

  protected isExpired(): boolean {
    return isExpired(this.pair, this.clock.now(), this.timings.expirySkewMs);
  }

  /** Due for renewal (docs/session.md#renewal): 36 h, or 3 h before `exp`, whichever is first. */
  protected needsRenewal(): boolean {
    if (!this.pair) return true;
    return this.clock.now() >= renewalDue(this.pair, this.timings);
  }

  protected becomeReady(retryInMs?: number): void {
    this.setState("ready", null);
    this.scheduleRenewal(retryInMs);
  }

  private scheduleRenewal(inMs?: number): void {
    this.clearRenewal();
    // A renewal that ends after close() (it was in flight) leaves no timer behind.
    if (!this.pair || this._state === "closed") return;
    const now = this.clock.now();
    // When it is due (on the wall clock, like `exp`), but never sooner than the spacing after
    // the last renewal, measured on the monotonic clock: no timer may fire in a loop, whatever
    // the wall clock does.
    const delay = this.gate.renewalDelay(inMs !== undefined ? inMs : renewalDue(this.pair, this.timings) - now);
    this.renewTimer.start(
      delay,
      () => {
        const renew = () => {
          if (this._state === "ready" || this._state === "store-unreachable") void this.refresh("scheduled renewal");
        };
        if (!this.inflight) return renew();
        // A login or refresh is still in flight (e.g. releasing its lock): refresh() would just
        // hand back that one and this renewal would be lost. Once it settles, renew if still due,
        // else keep the schedule of the pair it brought.
        void this.inflight.then(() => {
          if (this.renewTimer.pending || this.inflight) return;
          if (this.needsRenewal()) renew();
          else if (this._state === "ready") this.scheduleRenewal();
        });
      },
      now,
    );
  }

  protected clearRenewal(): void {
    this.renewTimer.stop();
  }

  /** A halt's reason as told in the log and in errors: a refused login says what to check. */
  protected haltText(reason: string): string {
    return this._state === "halted-login-failed"
      ? `${reason}: check the account's phone number (or email) and password`
      : reason;
  }

  protected halt(state: "halted-login-failed" | "halted-superseded", reason: string): void {
    if (this._state === state) return;
    if (state === "halted-superseded" && this.pair) this.deadRefresh = this.pair.refreshToken;
    if (state === "halted-superseded") {
      let others: string | null = null;
      try {
        others = this.otherHolders?.() ?? null;
      } catch {
        /* a hint is not worth a failed halt */
      }
      if (others) reason = `${reason}; ${others}`;
    }
    this.clearRenewal();
    this.setState(state, reason);
    // Written once per halt; the config node turns this event into an error a Catch node sees.
    this.log.error(`session halted: ${this.haltText(reason)}`);
    this.emit("halt", new SessionHaltedError(state, this.haltText(reason)));
  }

  /**
   * `detail`: a few words of the reason for a node status ("connection refused"), when there are.
   * A change the transition table forbids is refused (transitions.ts).
   */
  protected setState(state: SessionState, reason: string | null, detail: string | null = null): void {
    if (this._state === "closed" && state !== "closed") return;
    if (!transitionAllowed(this._state, state)) {
      const illegal = new IllegalTransitionError(this._state, state);
      if (strictTransitions.enabled) {
        strictTransitions.seen?.(illegal);
        throw illegal;
      }
      this.log.error(illegal.message);
      return;
    }
    const changed = this._state !== state || this.reason !== reason || this.detail !== detail;
    this._state = state;
    this.reason = reason;
    this.detail = detail;
    if (changed) {
      this.since = this.clock.now();
      this.emit("state", this.snapshot());
    }
  }

  /** Waits for a login/refresh, at most `waitMs`; then the caller fails as unreachable. */
  protected waitFor(p: Promise<void>): Promise<void> {
    const s = Math.round(this.timings.waitMs / 1000);
    return within(
      this.clock,
      p,
      this.timings.waitMs,
      () => new SessionUnavailableError(`the account is still ${this._state} after ${s} s`),
    );
  }
}
