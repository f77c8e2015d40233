/**
 * The session's renewals (docs/session.md#login-and-start-up, docs/session.md#renewal,
 * docs/session.md#rate-limits): the single flight of logins and refreshes, what each failure of a
 * login or refresh leads to, the renewal timer, halts, and the pairs read from the store. It owns
 * the flight and the timer; it asks the session's status (session-status.ts) to change state, the
 * held pair (held-pair.ts) what is known about tokens, the send gate (send-gate.ts) when a login
 * or refresh may be sent, and the store sync (store-sync.ts) for the store's lock and notices.
 * Session (session.ts) asks it for a refresh or a login and is told how it ends by the state.
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
import type { Credentials, DoorApiClient } from "../client/client.js";
import { DoorApiError } from "../client/errors.js";
import type { Clock } from "../util/clock.js";
import { type RenewalFailedError, SessionHaltedError, SessionUnavailableError } from "./errors.js";
import type { HeldPair } from "./held-pair.js";
import type { SendGate } from "./send-gate.js";
import type { SessionStatus } from "./session-status.js";
import { type StoreSync, isOtherPair } from "./store-sync.js";
import { OneShotTimer, within } from "./timers.js";
import { localExpiry, renewalDue } from "./token-pair.js";
import type { StoreEvent, StoredPair, TokenStore } from "./token-store.js";
import { HALTED_STATES, type SessionLog, type SessionState, type SessionTimings } from "./types.js";

/** The reason given to a refresh that a 401 caused: the current access token is known bad. */
export const AFTER_401 = "the service answered 401";

/** What the renewals work with: the session's parts, given by the session that owns them. */
export interface RenewalParts {
  client: DoorApiClient;
  credentials: Credentials;
  store: TokenStore;
  clock: Clock;
  log: SessionLog;
  timings: SessionTimings;
  gate: SendGate;
  sync: StoreSync;
  status: SessionStatus;
  held: HeldPair;
  /** Who else in this runtime may hold the same service account, for a halt as superseded. */
  otherHolders: () => string | null;
  /** A halt happened: the session tells its listeners. */
  halted: (error: SessionHaltedError) => void;
}

export class Renewals {
  /** The one login or refresh in flight, if any. */
  private flight: Promise<void> | null = null;
  /** How many logins/refreshes have started (a replay's 401 during one of ours is not a takeover). */
  private startedCount = 0;
  /** Per access token answered 401: startedCount when its first 401 came back (see first401). */
  private readonly first401Seen = new Map<string, number>();
  private readonly timer: OneShotTimer;
  private readonly abort = new AbortController();
  private readonly client: DoorApiClient;
  private readonly store: TokenStore;
  private readonly clock: Clock;
  private readonly log: SessionLog;
  private readonly timings: SessionTimings;
  private readonly gate: SendGate;
  private readonly sync: StoreSync;
  private readonly status: SessionStatus;
  private readonly held: HeldPair;

  constructor(private readonly parts: RenewalParts) {
    this.client = parts.client;
    this.store = parts.store;
    this.clock = parts.clock;
    this.log = parts.log;
    this.timings = parts.timings;
    this.gate = parts.gate;
    this.sync = parts.sync;
    this.status = parts.status;
    this.held = parts.held;
    this.timer = new OneShotTimer(this.clock);
  }

  /** The login or refresh in flight, or null. */
  get inflight(): Promise<void> | null {
    return this.flight;
  }

  /** How many logins and refreshes have started so far. */
  get started(): number {
    return this.startedCount;
  }

  /** When the renewal timer fires (wall-clock ms), or null. */
  get renewAt(): number | null {
    return this.timer.at;
  }

  /** The error for a call whose token could not be renewed (nothing executed). */
  renewalFailedError(what: string): RenewalFailedError {
    return this.gate.renewalFailedError(this.status.reason ?? this.status.state, what);
  }

  /** Aborts what is in flight (after close() waited for it). */
  abortFlight(): void {
    this.abort.abort(new Error("session closed"));
  }

  /** Single flight: a second caller gets the refresh (or login) already in flight. */
  refresh(why: string): Promise<void> {
    return this.single(() => this.doRefresh(why));
  }

  login(why: string): Promise<void> {
    return this.single(() => this.doLogin(why));
  }

  single(work: () => Promise<void>): Promise<void> {
    if (this.flight) return this.flight;
    this.startedCount++;
    const p = (async () => {
      try {
        await work();
      } catch (e) {
        // Every expected failure is turned into a state above; this is a bug or I/O error.
        this.log.error(`session: unexpected failure: ${(e as Error).message}`);
        if (this.status.state === "logging-in" || this.status.state === "refreshing") {
          this.status.set(this.held.pair && !this.held.isExpired() ? "ready" : "unreachable", (e as Error).message);
        }
      } finally {
        this.flight = null;
      }
    })();
    this.flight = p;
    return p;
  }

  async doRefresh(why: string): Promise<void> {
    if (this.status.state === "closed" || HALTED_STATES.has(this.status.state)) return;
    if (!this.held.pair) return this.doLogin(why);
    this.status.set("refreshing", why);
    await this.underLock(async () => {
      // Another process on the same store may have renewed while we waited for the lock.
      const stored = await this.sync.reread();
      if (stored && this.held.pair && isOtherPair(stored, this.held.pair.refreshToken, this.held.deadRefresh)) {
        this.held.adoptStored(stored);
        if (!this.held.isExpired()) {
          this.log.info("session: adopted the pair renewed by another process");
          this.becomeReady();
          return;
        }
      }
      const current = this.held.pair!;
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
          this.held.markDead(current.refreshToken);
          this.held.drop();
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
          const expired = this.held.isExpired();
          const wait = this.gate.refreshRateLimited(e, expired);
          this.log.warn(`session: refresh rate-limited (429); next try in ${Math.ceil(wait / 1000)} s`);
          if (!expired) {
            this.becomeReady(wait);
          } else {
            this.status.set(
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
          this.held.pair &&
          this.held.pair.lifetimeMs !== null &&
          localExpiry(this.held.pair) - this.clock.now() > this.timings.refreshRetryMs + this.timings.expirySkewMs
        ) {
          this.log.warn(`session: refresh failed (${e.message}); keeping the current token and trying again later`);
          this.gate.spaceRenewal();
          this.becomeReady(this.timings.refreshRetryMs);
          return;
        }
        this.log.warn(`session: refresh failed (${e.message}); logging in again`);
        this.held.drop();
        await this.doLogin("refresh failed");
        return;
      }
      await this.accept(fresh);
    });
  }

  async doLogin(why: string): Promise<void> {
    if (this.status.state === "closed") return;
    if (!this.store.shared || this.sync.holdsLock) return this.loginNow(why);
    // A shared store: take the lock, and use the pair another instance logged in with, if any.
    this.clearRenewal();
    this.status.set("logging-in", why);
    await this.underLock(async () => {
      const stored = await this.sync.reread();
      if (stored && isOtherPair(stored, this.held.pair?.refreshToken, this.held.deadRefresh)) {
        this.held.adoptStored(stored);
        if (!this.held.isExpired()) {
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
    if (this.status.state === "closed") return;
    this.clearRenewal();
    this.status.set("logging-in", why);
    this.gate.loginStarted();
    let fresh: { accessToken: string; refreshToken: string };
    try {
      fresh = await this.client.login(this.parts.credentials, this.abort.signal);
    } catch (e) {
      if (!(e instanceof DoorApiError)) throw e;
      if (e.kind === "aborted") return;
      this.held.drop();
      if (e.kind === "http" && (e.status === 400 || e.status === 401)) {
        this.held.loginAnswered(false);
        // The reason says what happened; what to fix is added once, where the halt is told
        // (haltText): the editor shows the reason beside the state's label, which says it already.
        this.halt("halted-login-failed", `the service refused the login (${e.status})`);
        return;
      }
      if (e.kind === "http" && e.status === 429) {
        // The service's wait, and no minute of ours on top (docs/session.md#rate-limits).
        const wait = this.gate.loginRateLimited(e);
        this.status.set("unreachable", `login rate-limited by the service; next try in ${Math.ceil(wait / 1000)} s`);
        this.log.warn(`session: login rate-limited (429); next try in ${Math.ceil(wait / 1000)} s`);
        return;
      }
      // Without an HTTP answer the reason says what failed, where, and what to fix
      // ("cannot connect to <base URL> (connection refused): check the base URL").
      const failed = e.status !== null ? `login failed with ${e.status}` : e.problem;
      this.gate.failed(failed);
      this.status.set("unreachable", failed, e.status !== null ? `login answered ${e.status}` : e.brief);
      this.log.warn(
        `session: ${e.message}${e.code ? ` [${e.code}]` : ""}; will try again when a message needs the session (at most once a minute)`,
      );
      return;
    }
    this.log.info(`session: logged in (${why})`);
    this.held.loginAnswered(true);
    await this.accept(fresh);
  }

  /** A new pair from login or refresh: persist it as a pair, then use it. */
  private async accept(fresh: { accessToken: string; refreshToken: string }): Promise<void> {
    const pair: StoredPair = {
      accessToken: fresh.accessToken,
      refreshToken: fresh.refreshToken,
      obtainedAt: this.clock.now(),
    };
    const replaced = this.held.pair?.refreshToken ?? this.held.deadRefresh;
    this.held.adopt(pair);
    this.gate.renewed();
    await this.sync.save(pair, replaced);
    if (this.status.state !== "closed") this.becomeReady();
  }

  /**
   * Runs `work` under the store's renewal lock. A shared store that cannot be reached (or
   * whose lock stays taken) ends in state store-unreachable: no private login.
   */
  private underLock(work: () => Promise<void>): Promise<void> {
    return this.sync.underLock(work, (e) => {
      if (this.status.state === "closed" || HALTED_STATES.has(this.status.state)) return;
      this.status.set("store-unreachable", e.message);
      this.log.warn(`session: ${e.message}; keeping the session in memory, no login from this instance`);
      // Try the renewal again later (and as soon as the store is back, see onStoreEvent).
      if (this.held.pair) this.scheduleRenewal(this.timings.loginRetryMs);
    });
  }

  /** Another instance saved a pair, or the shared store is back after an outage. */
  async onStoreEvent(event: StoreEvent): Promise<void> {
    const idleStates: SessionState[] = ["ready", "unreachable", "store-unreachable"];
    if (!idleStates.includes(this.status.state) || this.flight) return; // a renewal in flight re-reads under the lock
    try {
      if (event === "reconnected") await this.sync.catchUp(() => this.held.pair);
      const stored = await this.store.load();
      if (!idleStates.includes(this.status.state) || this.flight) return;
      if (isOtherPair(stored, this.held.pair?.refreshToken, this.held.deadRefresh)) {
        this.held.adoptStored(stored!);
        this.log.info("session: adopted the pair renewed by another instance");
        if (!this.held.isExpired()) {
          this.becomeReady();
          return;
        }
      }
    } catch {
      /* the store went away again: the next renewal reports it */
    }
    if (event === "reconnected" && this.status.state === "store-unreachable" && !this.flight) {
      if (!this.held.pair) void this.login("the session store is reachable again");
      else if (this.held.isExpired() || this.held.pair.accessToken === this.held.rejectedAccess)
        void this.refresh("the session store is reachable again");
      else this.becomeReady();
    }
  }

  becomeReady(retryInMs?: number): void {
    this.status.set("ready", null);
    this.scheduleRenewal(retryInMs);
  }

  private scheduleRenewal(inMs?: number): void {
    this.clearRenewal();
    // A renewal that ends after close() (it was in flight) leaves no timer behind.
    if (!this.held.pair || this.status.state === "closed") return;
    const now = this.clock.now();
    // When it is due (on the wall clock, like `exp`), but never sooner than the spacing after
    // the last renewal, measured on the monotonic clock: no timer may fire in a loop, whatever
    // the wall clock does.
    const delay = this.gate.renewalDelay(inMs !== undefined ? inMs : renewalDue(this.held.pair, this.timings) - now);
    this.timer.start(
      delay,
      () => {
        const renew = () => {
          if (this.status.state === "ready" || this.status.state === "store-unreachable")
            void this.refresh("scheduled renewal");
        };
        if (!this.flight) return renew();
        // A login or refresh is still in flight (e.g. releasing its lock): refresh() would just
        // hand back that one and this renewal would be lost. Once it settles, renew if still due,
        // else keep the schedule of the pair it brought.
        void this.flight.then(() => {
          if (this.timer.pending || this.flight) return;
          if (this.held.needsRenewal()) renew();
          else if (this.status.state === "ready") this.scheduleRenewal();
        });
      },
      now,
    );
  }

  clearRenewal(): void {
    this.timer.stop();
  }

  /** A halt's reason as told in the log and in errors: a refused login says what to check. */
  haltText(reason: string): string {
    return this.status.state === "halted-login-failed"
      ? `${reason}: check the account's phone number (or email) and password`
      : reason;
  }

  halt(state: "halted-login-failed" | "halted-superseded", reason: string): void {
    if (this.status.state === state) return;
    if (state === "halted-superseded" && this.held.pair) this.held.markDead(this.held.pair.refreshToken);
    if (state === "halted-superseded") {
      let others: string | null = null;
      try {
        others = this.parts.otherHolders();
      } catch {
        /* a hint is not worth a failed halt */
      }
      if (others) reason = `${reason}; ${others}`;
    }
    this.clearRenewal();
    this.status.set(state, reason);
    // Written once per halt; the config node turns this event into an error a Catch node sees.
    this.log.error(`session halted: ${this.haltText(reason)}`);
    this.parts.halted(new SessionHaltedError(state, this.haltText(reason)));
  }

  /** Waits for a login/refresh, at most `waitMs`; then the caller fails as unreachable. */
  waitFor(p: Promise<void>): Promise<void> {
    const s = Math.round(this.timings.waitMs / 1000);
    return within(
      this.clock,
      p,
      this.timings.waitMs,
      () => new SessionUnavailableError(`the account is still ${this.status.state} after ${s} s`),
    );
  }

  // ---- a 401 ------------------------------------------------------------------------------

  /**
   * Renews after a 401 on `usedToken`. Resolves true when the pair now held comes from a renewal
   * that ended after this 401 (one this call waited for), false when it was renewed already
   * before (the 401 may then be that renewal's own doing, e.g. a Reconnect login).
   */
  async renewAfter401(usedToken: string): Promise<boolean> {
    if (this.held.pair?.accessToken === usedToken) this.held.rejectAccess(usedToken);
    const seen = this.first401(usedToken);
    if (this.flight) {
      // A renewal already under way when the first 401 on this token came back may have been
      // made at the service before the request arrived (its answer in, its pair still being
      // saved): its token is one renewed before the 401, and may even be why the request was
      // refused (a Reconnect login). Only one started after that 401 counts as renewed after it.
      const startedAfter = this.startedCount > seen;
      await this.waitFor(this.flight);
      return startedAfter;
    }
    if (this.held.pair && this.held.pair.accessToken !== usedToken) return false; // someone already renewed
    if (HALTED_STATES.has(this.status.state) || this.status.state === "closed") return false;
    if (!this.gate.mayRenew()) return false; // rate-limited: the call fails, no replay
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
    this.first401Seen.set(token, this.startedCount);
    if (this.first401Seen.size > 8) this.first401Seen.delete(this.first401Seen.keys().next().value!);
    return this.startedCount;
  }
}
