/**
 * The one session of one account: the state machine, the single flight, the renewal timers
 * and the failure rules (docs/session.md). Everything about when to log in and when to refresh
 * is in this file; the arithmetic it needs is beside it, as pure functions: what a token pair
 * says about its lifetime and renewal (token-pair.ts), the wait after a 429 (rate-limit.ts), the
 * timers (timers.ts), and the session's types and timings (types.ts).
 *
 * States: idle → logging-in → ready ⇄ refreshing; unreachable (login failed on 5xx/network,
 * retried only when a caller needs the session, at most once a minute); halted-login-failed
 * (credentials refused); halted-superseded (another login took the account); closed;
 * store-unreachable (a shared store's renewal lock could not be had: the pair in memory is
 * still used while it is good, and this instance never logs in on its own).
 *
 * Rules (docs/session.md#login-and-start-up, docs/session.md#renewal,
 * docs/session.md#a-401-and-its-replay, docs/session.md#rate-limits):
 * - log in once at start-up (or resume the stored pair), never per call;
 * - at most one login or refresh in flight for the account; every caller waits for it;
 * - renew every 36 h or 3 h before the JWT `exp`, whichever is first;
 * - a call answered 401: refresh once, replay once; 401 again: halted-superseded;
 * - refresh 400/401: full login, at most once an hour (a second time halts as superseded);
 * - refresh 5xx/network: the client retries once; then, if the access token is still good
 *   for a while, keep it and try again later; otherwise log in;
 * - login 400/401: halted-login-failed; login 5xx/network (after the client's single
 *   retry): unreachable, not a halt;
 * - login or refresh 429: nothing is sent for the service's Retry-After (absent: the first
 *   back-off step, 500 ms plus jitter), and no longer: the next message after it tries again. Only
 *   consecutive 429s grow the wait (doubling, with jitter, at most 15 min). The renewal spacing
 *   binds the session's own timers, never a message after a Retry-After (docs/session.md#rate-limits).
 *
 * A shared store (Redis, several instances on one account): logins too run under the
 * store's renewal lock after re-reading the store, so an instance adopts the pair another
 * one obtained instead of logging in again (a 401 is first answered that way too); notices
 * from the store ("changed", "reconnected") update the pair in memory.
 *
 * Why the state machine stays one file (about 800 lines): every method left here makes a
 * transition or decides one, and they share the same fields: the pair, the one renewal in
 * flight, the waits (`renewNotBefore`, `loginNotBefore`, the once-an-hour re-login), the run of
 * 429s and the dead tokens. Split by path (login, refresh, the shared store's notices), one
 * transition would be written across files that all mutate those fields: a 401 answered by a
 * refresh that turns into a login under the store's lock crosses all three. What divides
 * without that (pure arithmetic, timers, types) is in the files named above.
 */
import { EventEmitter } from "node:events";
import type { Credentials, DoorApiClient } from "../client/client.js";
import { DoorApiError } from "../client/errors.js";
import { type Clock, systemClock } from "../util/clock.js";
import { RenewalFailedError, SessionHaltedError, SessionUnavailableError, StoreUnreachableError } from "./errors.js";
import { type RenewalFailure, rateLimitWaitMs, renewalFailedError } from "./rate-limit.js";
import { OneShotTimer, settledWithin, within } from "./timers.js";
import { type LivePair, isExpired, localExpiry, readPair, renewalDue } from "./token-pair.js";
import type { StoreEvent, StoredPair, TokenStore } from "./token-store.js";
import {
  DEFAULT_TIMINGS,
  HALTED_STATES,
  type SessionLog,
  type SessionOptions,
  type SessionSnapshot,
  type SessionState,
  type SessionTimings,
} from "./types.js";

export {
  DEFAULT_TIMINGS,
  HALTED_STATES,
  type SessionLog,
  type SessionOptions,
  type SessionSnapshot,
  type SessionState,
  type SessionTimings,
};

const silent: SessionLog = { info() {}, warn() {}, error() {} };

/** The reason given to a refresh that a 401 caused: the current access token is known bad. */
const AFTER_401 = "the service answered 401";

function is401(e: unknown): boolean {
  return e instanceof DoorApiError && e.kind === "http" && e.status === 401;
}

export class Session extends EventEmitter {
  private readonly client: DoorApiClient;
  private readonly credentials: Credentials;
  private readonly store: TokenStore;
  private readonly clock: Clock;
  private readonly log: SessionLog;
  private readonly random: () => number;
  readonly timings: SessionTimings;

  private _state: SessionState = "idle";
  private reason: string | null = null;
  private detail: string | null = null;
  private since: number;
  private pair: LivePair | null = null;
  /** The one login or refresh in flight, if any. */
  private inflight: Promise<void> | null = null;
  /** How many logins/refreshes have started (a replay's 401 during one of ours is not a takeover). */
  private renewalsStarted = 0;
  /** Per access token answered 401: renewalsStarted when its first 401 came back (see first401). */
  private readonly first401Seen = new Map<string, number>();
  private readonly renewTimer: OneShotTimer;
  // Every wait below is measured on the monotonic clock (clock.monotonic()): setting the wall
  // clock forward must not send before a Retry-After, nor setting it back stall the account.
  private lastLoginAttemptAt = Number.NEGATIVE_INFINITY;
  private loginNotBefore = Number.NEGATIVE_INFINITY;
  private lastReloginAfterRejectAt = Number.NEGATIVE_INFINITY;
  /** An operator's Reconnect that must wait for the service's Retry-After: the one login it will make. */
  private readonly reconnectTimer: OneShotTimer;
  private startPromise: Promise<void> | null = null;
  private readonly abort = new AbortController();
  /** True while this session runs work under the store's renewal lock. */
  private lockHeld = false;
  /** An access token the service answered 401 to (not sent again while the store is away). */
  private rejectedAccess: string | null = null;
  /** A refresh token known dead (rejected, or of a superseded session): never adopted again. */
  private deadRefresh: string | null = null;
  /** A shared store missed our last pair: written again when the store is back. */
  private unsaved = false;
  /** The refresh token of the pair the unsaved one replaced (what the store still holds, if nobody renewed since). */
  private unsavedBase: string | null = null;
  /** When the last refresh started (the renewal spacing is measured from it). */
  private lastRenewalStartedAt = Number.NEGATIVE_INFINITY;
  /** No renewal on demand before this (a refresh was rate-limited or failed transiently). */
  private renewNotBefore = Number.NEGATIVE_INFINITY;
  /** Why the last renewal failed without a halt (cleared by a new pair). */
  private lastRenewalFailure: RenewalFailure | null = null;
  /** 429s in a row on login or refresh (a new pair, or any other answer, ends the run). */
  private rateLimitRun = 0;
  private readonly unwatch: (() => void) | null;
  private readonly loginFirst: boolean;
  /** The `sub` claim of the last access token that had one (compared, never shown). */
  private subjectSeen: string | null = null;
  /**
   * Set by the owner of this session (src/account/registry.ts): who else in this runtime
   * may hold the same service account, added to a halt as superseded; null for none known.
   */
  otherHolders: (() => string | null) | null = null;
  private readonly storeProvesCredentials: boolean;
  private proven = false;

  constructor(options: SessionOptions) {
    super();
    this.client = options.client;
    this.credentials = options.credentials;
    // The service's error words never carry the login or password (docs/security.md#secrets).
    this.client.hideInErrors?.(options.credentials);
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.log = options.log ?? silent;
    this.random = options.random ?? Math.random;
    this.timings = { ...DEFAULT_TIMINGS, ...options.timings };
    this.since = this.clock.now();
    this.renewTimer = new OneShotTimer(this.clock);
    this.reconnectTimer = new OneShotTimer(this.clock);
    this.loginFirst = options.loginFirst === true && !this.store.shared;
    this.storeProvesCredentials = options.storeProvesCredentials === true;
    this.unwatch = this.store.watch?.((event) => void this.onStoreEvent(event)) ?? null;
  }

  get state(): SessionState {
    return this._state;
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

  /**
   * Whether the service is known to accept this session's credentials: a login with them
   * succeeded (and none was refused since), or the pair came from a store that proves them
   * (`storeProvesCredentials`). A pair resumed from a file proves nothing about the password.
   */
  get credentialsProven(): boolean {
    return this.proven;
  }

  /**
   * The account the service's access tokens name (their `sub` claim), when they carry one (the
   * spec does not promise it). Two logins with the same subject are one service account. Never
   * shown: it may be an email address or a phone number.
   */
  get subject(): string | null {
    return this.subjectSeen;
  }

  /**
   * Whether this session holds (or is obtaining) a session at the service: a login now would
   * end it. False when halted, closed, or without a pair and nothing in flight.
   */
  get live(): boolean {
    if (this._state === "closed" || HALTED_STATES.has(this._state)) return false;
    return this.pair !== null || this.inflight !== null;
  }

  /**
   * Until when (monotonic ms) the service asked this account to send no login or refresh (its
   * Retry-After, grown by consecutive 429s), or null when it did not or that has passed. Read when
   * a session of the same account replaces this one (src/account/registry.ts).
   */
  get rateLimitedUntil(): number | null {
    if (!this.lastRenewalFailure?.rateLimited) return null;
    const at = Math.max(this.loginNotBefore, this.renewNotBefore);
    return at > this.mono() ? at : null;
  }

  /**
   * A session of the same account that this one replaces was told by the service to wait until
   * `at` (monotonic ms, see rateLimitedUntil): this one sends no login or refresh before it either.
   * The Retry-After is the account's, not the session object's (docs/session.md#rate-limits).
   * Call before start().
   */
  holdUntil(at: number): void {
    if (!(at > this.mono())) return;
    this.loginNotBefore = Math.max(this.loginNotBefore, at);
    this.renewNotBefore = Math.max(this.renewNotBefore, at);
    this.lastRenewalFailure = { rateLimited: true, operation: "login" };
  }

  /** Resume the stored pair, or log in. Idempotent; resolves when the first attempt settles. */
  start(): Promise<void> {
    if (!this.startPromise) {
      this.startPromise = this.single(async () => {
        const stored = this.loginFirst ? null : await this.store.load().catch(() => null);
        const held = this.rateLimitedUntil;
        if (stored) {
          this.adoptStored(stored);
          this.log.info("resumed the stored session");
          // Already inside the single flight: call the work directly, not refresh()/login().
          if (!this.needsRenewal()) this.becomeReady();
          else if (held === null) await this.doRefresh("the stored access token is expiring");
          else if (!this.isExpired()) this.becomeReady(held - this.mono());
          else this.holdReason(held, "refresh");
        } else if (held !== null) {
          this.holdReason(held, "login");
        } else {
          await this.doLogin("start-up");
        }
      });
    }
    return this.startPromise;
  }

  /** No login or refresh at start: the service's wait (held over from the session this one replaced) still runs. */
  private holdReason(until: number, operation: "login" | "refresh"): void {
    const sec = Math.ceil((until - this.mono()) / 1000);
    this.lastRenewalFailure = { rateLimited: true, operation };
    this.setState("unreachable", `${operation} rate-limited by the service; next try in ${sec} s`);
    this.log.warn(`session: the service asked this account to wait (429); no ${operation} for ${sec} s`);
  }

  /**
   * Runs `fn` with a valid access token. A 401 is answered by one refresh (shared with
   * every other caller) and one replay; a second 401 halts the session as superseded.
   */
  async call<T>(fn: (accessToken: string) => Promise<T>): Promise<T> {
    const first = await this.token();
    try {
      return await fn(first);
    } catch (e) {
      if (!is401(e)) throw e;
      // docs/session.md#a-401-and-its-replay: the replay uses a token that a refresh (or
      // login) obtained after this 401, never the rejected one again. A renewal that failed
      // (429, 5xx, network) ends the call here: no replay, and no halt.
      const renewedAfter = await this.renewAfter401(first);
      const second = this.pair?.accessToken;
      if (this._state !== "ready" || second === undefined || second === first) {
        if (HALTED_STATES.has(this._state) || this._state === "closed") await this.token(); // throws SessionHaltedError
        if (this._state === "store-unreachable") {
          throw new StoreUnreachableError(
            `session store unreachable: ${this.reason ?? "the renewal lock could not be taken"}; the request was not repeated`,
          );
        }
        throw this.renewalFailedError("the request was answered 401 and was not repeated");
      }
      // A login or refresh of our own that starts while the replay is out (an operator's
      // Reconnect) may itself end `second`: its 401 is then no sign of another login.
      const renewals = this.renewalsStarted;
      try {
        return await fn(second);
      } catch (e2) {
        // Halted only when the rejected token came from a renewal after this call's 401
        // (docs/session.md#a-401-and-its-replay; a token renewed before it proves no takeover).
        if (
          is401(e2) &&
          renewedAfter &&
          this.pair?.accessToken === second &&
          this.renewalsStarted === renewals &&
          !this.inflight
        ) {
          this.halt(
            "halted-superseded",
            "the service rejected a freshly renewed token: another login has taken over this account",
          );
        }
        throw e2;
      }
    }
  }

  /** A valid access token, waiting (bounded) for a login or refresh in flight. */
  async token(): Promise<string> {
    let storeTried = false;
    for (let round = 0; round < 4; round++) {
      switch (this._state) {
        case "closed":
          throw new SessionHaltedError("closed", "the account is closed (redeploy in progress or node removed)");
        case "halted-login-failed":
        case "halted-superseded":
          throw new SessionHaltedError(
            this._state,
            `account halted: ${this.haltText(this.reason ?? this._state)}; an operator must redeploy or press reconnect`,
          );
        case "ready":
          if (this.pair && this.pair.accessToken === this.rejectedAccess) {
            // The service answered 401 to this token and its renewal failed: never send it
            // again. Renew on demand, but not before the service's Retry-After / the spacing.
            if (this.inflight) {
              await this.waitFor(this.inflight);
            } else if (this.mono() >= this.renewNotBefore) {
              await this.waitFor(this.refresh(AFTER_401));
            } else {
              throw this.renewalFailedError("nothing was sent");
            }
            if (this.pair && this.pair.accessToken === this.rejectedAccess && this._state === "ready")
              throw this.renewalFailedError("nothing was sent");
            break;
          }
          if (this.pair && !this.isExpired()) return this.pair.accessToken;
          // Expired (or the wall clock says so) within a refresh's Retry-After: nothing is sent
          // before it has passed (docs/session.md#rate-limits), measured on the monotonic clock.
          if (!this.inflight && this.mono() < this.renewNotBefore && this.lastRenewalFailure?.rateLimited)
            throw this.renewalFailedError("nothing was sent");
          await this.waitFor(this.inflight ?? this.refresh("the access token has expired"));
          break;
        case "unreachable": {
          const now = this.mono();
          // After a 429 the service's wait is the only one (docs/session.md#rate-limits); the
          // once-a-minute spacing is for logins that failed on 5xx or the network.
          const limited = this.lastRenewalFailure?.rateLimited === true;
          const next = limited
            ? this.loginNotBefore
            : Math.max(this.lastLoginAttemptAt + this.timings.loginRetryMs, this.loginNotBefore);
          if (this.inflight) {
            await this.waitFor(this.inflight);
          } else if (now >= next) {
            // A pair still held (its refresh was rate-limited after the access token expired) is
            // renewed with its refresh token: a login would end the session for nothing.
            await this.waitFor(
              this.pair ? this.refresh("a message needs the session") : this.login("a message needs the session"),
            );
          } else if (limited) {
            throw this.renewalFailedError("nothing was sent");
          } else {
            throw new SessionUnavailableError(
              `service unreachable: ${this.reason ?? "login failed"}; next login attempt in ${Math.ceil((next - now) / 1000)} s`,
              Math.ceil((next - now) / 1000),
            );
          }
          break;
        }
        case "store-unreachable":
          // Keep using the pair in memory while it is good; renew only through the store.
          if (this.pair && !this.isExpired() && this.pair.accessToken !== this.rejectedAccess)
            return this.pair.accessToken;
          if (this.inflight) {
            await this.waitFor(this.inflight);
          } else if (!storeTried) {
            storeTried = true;
            await this.waitFor(
              this.pair ? this.refresh("the access token needs renewal") : this.login("a message needs the session"),
            );
          } else {
            throw new StoreUnreachableError(
              `session store unreachable: ${this.reason ?? "the renewal lock could not be taken"}`,
            );
          }
          break;
        default:
          // idle, logging-in, refreshing
          await this.waitFor(this.inflight ?? this.start());
      }
    }
    throw new SessionUnavailableError(`the session did not become ready (${this._state})`);
  }

  /**
   * Runs `fn` with the access token held now, for a caller that must never cause a login or a
   * renewal (the editor's list refresh, docs/security.md#who-can-do-what-the-admin-routes):
   * nothing is sent unless the session is ready with a token that has not expired and was not
   * answered 401; a 401 is not answered by a refresh or a replay (the next call that may renew
   * the session does that).
   */
  async callWithHeldToken<T>(fn: (accessToken: string) => Promise<T>): Promise<T> {
    const token = this.heldToken();
    if (token === null) throw this.noSessionError();
    return fn(token);
  }

  /** What callWithHeldToken throws when there is no token to use. */
  noSessionError(): SessionUnavailableError {
    return new SessionUnavailableError(
      `the account has no session now (${this._state}${this.reason ? `: ${this.reason}` : ""}); nothing was sent`,
    );
  }

  /** The access token a call could use without a login or renewal, or null. */
  heldToken(): string | null {
    if (this._state !== "ready" && this._state !== "store-unreachable") return null;
    if (!this.pair || this.isExpired() || this.pair.accessToken === this.rejectedAccess) return null;
    return this.pair.accessToken;
  }

  /**
   * Operator action after a halt (or to hurry a retry while unreachable): one fresh login.
   * Never rejects (an operator's click must not be able to crash the runtime): while a login or
   * refresh is already in flight it does nothing more, and the state shows how that one ends.
   */
  async reconnect(): Promise<void> {
    if (this._state === "closed" || this.inflight) return;
    // The operator overrides the once-an-hour re-login rule, never the service's Retry-After:
    // within it, the login is made once it has passed (one, however often Reconnect is pressed).
    this.lastReloginAfterRejectAt = Number.NEGATIVE_INFINITY;
    // A refresh answered 429 binds the login too: its Retry-After is the service's word for the account.
    const notBefore = Math.max(
      this.loginNotBefore,
      this.lastRenewalFailure?.rateLimited ? this.renewNotBefore : Number.NEGATIVE_INFINITY,
    );
    const wait = notBefore - this.mono();
    if (wait > 0) {
      if (!this.reconnectTimer.pending) {
        const pairAtPress = this.pair;
        this.reconnectTimer.start(wait, () => {
          if (this._state === "closed" || this.inflight) return;
          // Something renewed meanwhile (a message after the Retry-After): that session is kept.
          if (
            this._state === "ready" &&
            this.pair !== pairAtPress &&
            this.pair &&
            this.pair.accessToken !== this.rejectedAccess &&
            !this.isExpired()
          )
            return;
          void this.login("operator reconnect").catch(() => undefined);
        });
      }
      const sec = Math.ceil(wait / 1000);
      this.log.warn(`session: reconnect requested; the service asked to wait, logging in in ${sec} s`);
      const base = (this.reason ?? "waiting").replace(/; reconnect requested: .*$/, "");
      this.setState(this._state, `${base}; reconnect requested: login in ${sec} s (the service's Retry-After)`);
      return;
    }
    this.reconnectTimer.stop();
    this.renewNotBefore = Number.NEGATIVE_INFINITY;
    await this.login("operator reconnect").catch(() => undefined);
  }

  /** The monotonic clock every wait of the session is measured on. */
  private mono(): number {
    return this.clock.monotonic();
  }

  /** Whether a login or refresh is in flight (the config node waits for it before closing). */
  get busy(): boolean {
    return this.inflight !== null;
  }

  /** Stops timers and refuses new calls; the stored pair stays for the next start. */
  async close(): Promise<void> {
    this.unwatch?.();
    this.renewTimer.stop();
    this.reconnectTimer.stop();
    this.setState("closed", null);
    // A refresh in flight has (or soon will have) consumed the refresh token at the service:
    // let it finish and persist the new pair (bounded), or the next start must log in again.
    if (this.inflight) await settledWithin(this.clock, this.inflight, this.timings.closeWaitMs);
    this.abort.abort(new Error("session closed"));
    await this.inflight?.catch(() => undefined);
  }

  /** The account was deleted: log out (best effort, bounded) and delete the stored pair. */
  async destroy(): Promise<void> {
    if (this.store.shared) {
      // The pair is the account's, used by other instances too: removing this node must not
      // end their session. Stop here; the pair stays in the shared store.
      this.log.info(
        "session: removed from this instance; the shared session stays for the other instances (no logout)",
      );
      await this.close();
      return;
    }
    await this.close();
    // Read after close(): a login or refresh that was in flight has finished (or was aborted)
    // there, and the session to end is the one it opened, not the token it replaced.
    const token = this.pair?.accessToken;
    if (token) {
      const ac = new AbortController();
      const t = this.clock.setTimeout(() => ac.abort(new Error("logout timed out")), 5_000);
      await this.client.logout(token, ac.signal).catch(() => undefined);
      this.clock.clearTimeout(t);
    }
    this.pair = null;
    await this.store.clear().catch(() => undefined);
  }

  // ---- renewal --------------------------------------------------------------------------

  /**
   * Renews after a 401 on `usedToken`. Resolves true when the pair now held comes from a renewal
   * that ended after this 401 (one this call waited for), false when it was renewed already
   * before (the 401 may then be that renewal's own doing, e.g. a Reconnect login).
   */
  private async renewAfter401(usedToken: string): Promise<boolean> {
    if (this.pair?.accessToken === usedToken) this.rejectedAccess = usedToken;
    const seen = this.first401(usedToken);
    if (this.inflight) {
      // A renewal already under way when the first 401 on this token came back may have been
      // made at the service before the request arrived (its answer in, its pair still being
      // saved): its token is one renewed before the 401, and may even be why the request was
      // refused (a Reconnect login). Only one started after that 401 counts as renewed after it.
      const startedAfter = this.renewalsStarted > seen;
      await this.waitFor(this.inflight);
      return startedAfter;
    }
    if (this.pair && this.pair.accessToken !== usedToken) return false; // someone already renewed
    if (HALTED_STATES.has(this._state) || this._state === "closed") return false;
    if (this.mono() < this.renewNotBefore) return false; // rate-limited: the call fails, no replay
    await this.waitFor(this.refresh(AFTER_401));
    return true;
  }

  /**
   * How many logins/refreshes had started when the first 401 on `token` came back (this call's,
   * or another call's on the same token). A few recent tokens are remembered, in memory only.
   */
  private first401(token: string): number {
    const known = this.first401Seen.get(token);
    if (known !== undefined) return known;
    this.first401Seen.set(token, this.renewalsStarted);
    if (this.first401Seen.size > 8) this.first401Seen.delete(this.first401Seen.keys().next().value!);
    return this.renewalsStarted;
  }

  /** How long nothing is sent after this login or refresh answered 429: one more in the run (rate-limit.ts). */
  private rateLimitWait(e: DoorApiError): number {
    // Not sent at all (the account's hold after another operation's 429): what is left of that
    // wait, and not one more in the run of this session's own 429s.
    if (e.held) return (e.retryAfter ?? 0) * 1000;
    return rateLimitWaitMs(++this.rateLimitRun, e.retryAfter, this.timings.rateLimitCapMs, this.random);
  }

  /** The error for a call whose token could not be renewed (nothing executed). */
  private renewalFailedError(what: string): RenewalFailedError {
    return renewalFailedError(
      this.lastRenewalFailure,
      this.renewNotBefore - this.mono(),
      this.reason ?? this._state,
      what,
    );
  }

  /** Single flight: a second caller gets the refresh (or login) already in flight. */
  private refresh(why: string): Promise<void> {
    return this.single(() => this.doRefresh(why));
  }

  private login(why: string): Promise<void> {
    return this.single(() => this.doLogin(why));
  }

  private single(work: () => Promise<void>): Promise<void> {
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

  private async doRefresh(why: string): Promise<void> {
    if (this._state === "closed" || HALTED_STATES.has(this._state)) return;
    if (!this.pair) return this.doLogin(why);
    this.setState("refreshing", why);
    await this.underLock(async () => {
      // Another process on the same store may have renewed while we waited for the lock.
      const stored = await this.reread();
      if (
        stored &&
        this.pair &&
        stored.refreshToken !== this.pair.refreshToken &&
        stored.refreshToken !== this.deadRefresh
      ) {
        this.adoptStored(stored);
        if (!this.isExpired()) {
          this.log.info("session: adopted the pair renewed by another process");
          this.becomeReady();
          return;
        }
      }
      const current = this.pair!;
      let fresh: { accessToken: string; refreshToken: string };
      this.lastRenewalStartedAt = this.mono();
      try {
        fresh = await this.client.refresh(current.refreshToken, this.abort.signal);
      } catch (e) {
        if (!(e instanceof DoorApiError)) throw e;
        if (e.kind === "aborted") return;
        if (e.kind === "http" && (e.status === 400 || e.status === 401)) {
          this.rateLimitRun = 0;
          // Never reuse that refresh token. Log in, but at most once an hour.
          this.deadRefresh = current.refreshToken;
          this.pair = null;
          const now = this.mono();
          if (now - this.lastReloginAfterRejectAt < this.timings.reloginWindowMs) {
            this.halt(
              "halted-superseded",
              `the refresh token was rejected (${e.status}) twice within an hour: another client is using this account`,
            );
            return;
          }
          this.lastReloginAfterRejectAt = now;
          this.log.warn(`session: the refresh token was rejected (${e.status}); logging in again`);
          await this.doLogin("refresh token rejected");
          return;
        }
        if (e.kind === "http" && e.status === 429) {
          // The service's wait, and nothing of ours on top (docs/session.md#rate-limits): a
          // message after it renews. The timer (if the token is still good) keeps the spacing.
          const wait = this.rateLimitWait(e);
          this.renewNotBefore = this.mono() + wait;
          this.lastRenewalFailure = { rateLimited: true, operation: "refresh" };
          this.log.warn(`session: refresh rate-limited (429); next try in ${Math.ceil(wait / 1000)} s`);
          if (!this.isExpired()) {
            this.becomeReady(wait);
          } else {
            this.loginNotBefore = this.renewNotBefore;
            this.setState(
              "unreachable",
              `refresh rate-limited by the service; next try in ${Math.ceil(wait / 1000)} s`,
            );
          }
          return;
        }
        this.rateLimitRun = 0;
        // 5xx, network, timeout, bad body — the client already retried once. A proactive
        // renewal may keep a token that is still good; after a 401 the token is known bad.
        this.lastRenewalFailure = {
          rateLimited: false,
          message: `refresh failed: ${e.status !== null ? e.status : e.problem}`,
        };
        if (
          why !== AFTER_401 &&
          this.pair &&
          this.pair.lifetimeMs !== null &&
          localExpiry(this.pair) - this.clock.now() > this.timings.refreshRetryMs + this.timings.expirySkewMs
        ) {
          this.log.warn(`session: refresh failed (${e.message}); keeping the current token and trying again later`);
          this.renewNotBefore = this.mono() + this.timings.minRenewalIntervalMs;
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

  private async doLogin(why: string): Promise<void> {
    if (this._state === "closed") return;
    if (!this.store.shared || this.lockHeld) return this.loginNow(why);
    // A shared store: take the lock, and use the pair another instance logged in with, if any.
    this.clearRenewal();
    this.setState("logging-in", why);
    await this.underLock(async () => {
      const stored = await this.reread();
      if (stored && stored.refreshToken !== this.pair?.refreshToken && stored.refreshToken !== this.deadRefresh) {
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
    this.lastLoginAttemptAt = this.mono();
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
        const wait = this.rateLimitWait(e);
        this.loginNotBefore = this.mono() + wait;
        this.renewNotBefore = this.loginNotBefore;
        this.lastRenewalFailure = { rateLimited: true, operation: "login" };
        this.setState("unreachable", `login rate-limited by the service; next try in ${Math.ceil(wait / 1000)} s`);
        this.log.warn(`session: login rate-limited (429); next try in ${Math.ceil(wait / 1000)} s`);
        return;
      }
      this.rateLimitRun = 0;
      // Without an HTTP answer the reason says what failed, where, and what to fix
      // ("cannot connect to <base URL> (connection refused): check the base URL").
      const failed = e.status !== null ? `login failed with ${e.status}` : e.problem;
      this.lastRenewalFailure = { rateLimited: false, message: failed };
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
    const base = this.unsaved ? this.unsavedBase : (this.pair?.refreshToken ?? this.deadRefresh);
    this.adopt(pair);
    this.lastRenewalFailure = null;
    this.renewNotBefore = Number.NEGATIVE_INFINITY;
    this.rateLimitRun = 0;
    this.unsaved = false;
    try {
      await this.store.save(pair);
    } catch (e) {
      if (this.store.shared) {
        this.unsaved = true;
        this.unsavedBase = base;
      }
      this.log.error(
        `session: could not persist the token pair to the ${this.store.description} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); a restart will have to log in again`,
      );
    }
    if (this._state !== "closed") this.becomeReady();
  }

  /**
   * Runs `work` under the store's renewal lock. A shared store that cannot be reached (or
   * whose lock stays taken) ends in state store-unreachable: no private login.
   */
  private async underLock(work: () => Promise<void>): Promise<void> {
    if (this.lockHeld) return work(); // already ours (a login that turned into a refresh)
    try {
      await this.store.withRenewalLock(async () => {
        this.lockHeld = true;
        try {
          await work();
        } finally {
          this.lockHeld = false;
        }
      });
    } catch (e) {
      if (!(e instanceof StoreUnreachableError)) throw e;
      if (this._state === "closed" || HALTED_STATES.has(this._state)) return;
      this.setState("store-unreachable", e.message);
      this.log.warn(`session: ${e.message}; keeping the session in memory, no login from this instance`);
      // Try the renewal again later (and as soon as the store is back, see onStoreEvent).
      if (this.pair) this.scheduleRenewal(this.timings.loginRetryMs);
    }
  }

  /** The stored pair, re-read under the lock; a shared store that cannot be read aborts the renewal. */
  private async reread(): Promise<StoredPair | null> {
    try {
      return await this.store.load();
    } catch (e) {
      if (e instanceof StoreUnreachableError) throw e;
      return null;
    }
  }

  /** Another instance saved a pair, or the shared store is back after an outage. */
  private async onStoreEvent(event: StoreEvent): Promise<void> {
    const idleStates: SessionState[] = ["ready", "unreachable", "store-unreachable"];
    if (!idleStates.includes(this._state) || this.inflight) return; // a renewal in flight re-reads under the lock
    try {
      if (event === "reconnected" && this.pair) {
        if (this.unsaved) {
          // Under the renewal lock, and only over the pair ours replaced (or none): another
          // instance may have stored a newer pair meanwhile, which must not be overwritten
          // (the load below adopts it instead).
          const mine = this.pair;
          await this.store.withRenewalLock(async () => {
            const stored = await this.store.load();
            if (this.pair !== mine || !this.unsaved) return;
            this.unsaved = false;
            if (
              stored === null ||
              stored.refreshToken === this.unsavedBase ||
              stored.refreshToken === mine.refreshToken
            ) {
              await this.store.save(mine);
              this.log.info("session: wrote the pair the session store missed while it was away");
            }
          });
        } else if (await this.store.restore?.(this.pair)) {
          this.log.info("session: the session store had lost the pair; restored it from memory");
        }
      }
      const stored = await this.store.load();
      if (!idleStates.includes(this._state) || this.inflight) return;
      if (stored && stored.refreshToken !== this.pair?.refreshToken && stored.refreshToken !== this.deadRefresh) {
        this.adoptStored(stored);
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
  private adoptStored(pair: StoredPair): void {
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

  private isExpired(): boolean {
    return isExpired(this.pair, this.clock.now(), this.timings.expirySkewMs);
  }

  /** Due for renewal (docs/session.md#renewal): 36 h, or 3 h before `exp`, whichever is first. */
  private needsRenewal(): boolean {
    if (!this.pair) return true;
    return this.clock.now() >= renewalDue(this.pair, this.timings);
  }

  private becomeReady(retryInMs?: number): void {
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
    const due = inMs !== undefined ? inMs : renewalDue(this.pair, this.timings) - now;
    const spacing = this.lastRenewalStartedAt + this.timings.minRenewalIntervalMs - this.mono();
    const delay = Math.max(due, 0, spacing);
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

  private clearRenewal(): void {
    this.renewTimer.stop();
  }

  /** A halt's reason as told in the log and in errors: a refused login says what to check. */
  private haltText(reason: string): string {
    return this._state === "halted-login-failed"
      ? `${reason}: check the account's phone number (or email) and password`
      : reason;
  }

  private halt(state: "halted-login-failed" | "halted-superseded", reason: string): void {
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

  /** `detail`: a few words of the reason for a node status ("connection refused"), when there are. */
  private setState(state: SessionState, reason: string | null, detail: string | null = null): void {
    if (this._state === "closed" && state !== "closed") return;
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
  private waitFor(p: Promise<void>): Promise<void> {
    const s = Math.round(this.timings.waitMs / 1000);
    return within(
      this.clock,
      p,
      this.timings.waitMs,
      () => new SessionUnavailableError(`the account is still ${this._state} after ${s} s`),
    );
  }
}
