/**
 * The one session of one account, as callers use it (docs/session.md): start (resume the stored
 * pair, or log in once), call (a valid token; a 401 answered by one refresh and one replay),
 * token, Reconnect, close and destroy. It is made of parts that own their fields and are asked:
 * its status (session-status.ts: the state, checked against the one table of allowed changes in
 * transitions.ts), the pair it holds (held-pair.ts: the tokens and what is known about them), its
 * renewals (renewals.ts: the single flight of logins and refreshes, their failures, the renewal
 * timer, halts), the send gate (send-gate.ts: the not-before times, the run of 429s, the spacing
 * of renewals) and the store sync (store-sync.ts: the renewal lock, the pair a shared store
 * missed, the store's notices). The arithmetic is beside them, as pure functions (token-pair.ts,
 * rate-limit.ts, timers.ts), and the types and timings are in types.ts.
 *
 * States (docs/session.md#login-and-start-up): idle → logging-in → ready ⇄ refreshing;
 * unreachable (login failed on 5xx/network, retried only when a caller needs the session, at most
 * once a minute); halted-login-failed (credentials refused); halted-superseded (another login
 * took the account); closed; store-unreachable (a shared store's renewal lock could not be had:
 * the pair in memory is still used while it is good, and this instance never logs in on its own).
 *
 * Rules here (docs/session.md#login-and-start-up, docs/session.md#a-401-and-its-replay,
 * docs/session.md#rate-limits):
 * - log in once at start-up (or resume the stored pair), never per call;
 * - a call answered 401: refresh once, replay once; 401 again: halted-superseded;
 * - after a 429 nothing is sent for the service's Retry-After, and no longer: the next message
 *   after it tries again. An operator's Reconnect within it logs in once it has passed.
 */
import { EventEmitter } from "node:events";
import type { DoorApiClient } from "../client/client.js";
import { DoorApiError } from "../client/errors.js";
import { type Clock, systemClock } from "../util/clock.js";
import { SessionHaltedError, SessionUnavailableError, StoreUnreachableError } from "./errors.js";
import { HeldPair } from "./held-pair.js";
import { AFTER_401, Renewals } from "./renewals.js";
import { SendGate } from "./send-gate.js";
import { SessionStatus } from "./session-status.js";
import { StoreSync } from "./store-sync.js";
import { OneShotTimer, settledWithin } from "./timers.js";
import type { LivePair } from "./token-pair.js";
import type { TokenStore } from "./token-store.js";
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

function is401(e: unknown): boolean {
  return e instanceof DoorApiError && e.kind === "http" && e.status === 401;
}

export class Session extends EventEmitter {
  readonly timings: SessionTimings;
  /**
   * Set by the owner of this session (src/account/registry.ts): who else in this runtime
   * may hold the same service account, added to a halt as superseded; null for none known.
   */
  otherHolders: (() => string | null) | null = null;
  private readonly client: DoorApiClient;
  private readonly store: TokenStore;
  private readonly clock: Clock;
  private readonly log: SessionLog;
  /** When a login or refresh may be sent (send-gate.ts). */
  private readonly gate: SendGate;
  private readonly status: SessionStatus;
  private readonly held: HeldPair;
  private readonly renewals: Renewals;
  /** An operator's Reconnect that must wait for the service's Retry-After: the one login it will make. */
  private readonly reconnectTimer: OneShotTimer;
  private startPromise: Promise<void> | null = null;
  private readonly unwatch: (() => void) | null;
  private readonly loginFirst: boolean;

  constructor(options: SessionOptions) {
    super();
    this.client = options.client;
    // The service's error words never carry the login or password (docs/security.md#secrets).
    this.client.hideInErrors?.(options.credentials);
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.log = options.log ?? silent;
    this.timings = { ...DEFAULT_TIMINGS, ...options.timings };
    this.gate = new SendGate(this.clock, this.timings, options.random ?? Math.random);
    this.status = new SessionStatus(this.clock, this.log, () => this.emit("state", this.snapshot()));
    this.held = new HeldPair(this.clock, this.timings, this.log, options.storeProvesCredentials === true);
    this.renewals = new Renewals({
      client: this.client,
      credentials: options.credentials,
      store: this.store,
      clock: this.clock,
      log: this.log,
      timings: this.timings,
      gate: this.gate,
      sync: new StoreSync(this.store, this.log),
      status: this.status,
      held: this.held,
      otherHolders: () => this.otherHolders?.() ?? null,
      halted: (error) => this.emit("halt", error),
    });
    this.reconnectTimer = new OneShotTimer(this.clock);
    this.loginFirst = options.loginFirst === true && !this.store.shared;
    this.unwatch = this.store.watch?.((event) => void this.renewals.onStoreEvent(event)) ?? null;
  }

  /**
   * Asks the status for a change of state, checked against the table (transitions.ts) like every
   * change: what a test of the table forces on a live session. Nothing in the package calls it.
   */
  setState(state: SessionState, reason: string | null, detail: string | null = null): void {
    this.status.set(state, reason, detail);
  }

  snapshot(): SessionSnapshot {
    return {
      state: this.status.state,
      reason: this.status.reason,
      detail: this.status.detail,
      since: this.status.since,
      accessExpiresAt: this.held.pair?.exp ?? null,
      renewAt: this.renewals.renewAt,
    };
  }

  /** The pair in use, or null (read by tests and the config node's checks; changed only by the renewals). */
  get pair(): LivePair | null {
    return this.held.pair;
  }

  /** An access token the service answered 401 to, or null. */
  get rejectedAccess(): string | null {
    return this.held.rejectedAccess;
  }

  get state(): SessionState {
    return this.status.state;
  }

  /**
   * Whether the service is known to accept this session's credentials: a login with them
   * succeeded (and none was refused since), or the pair came from a store that proves them
   * (`storeProvesCredentials`). A pair resumed from a file proves nothing about the password.
   */
  get credentialsProven(): boolean {
    return this.held.proven;
  }

  /**
   * The account the service's access tokens name (their `sub` claim), when they carry one (the
   * spec does not promise it). Two logins with the same subject are one service account. Never
   * shown: it may be an email address or a phone number.
   */
  get subject(): string | null {
    return this.held.subject;
  }

  /**
   * Whether this session holds (or is obtaining) a session at the service: a login now would
   * end it. False when halted, closed, or without a pair and nothing in flight.
   */
  get live(): boolean {
    if (this.status.state === "closed" || HALTED_STATES.has(this.status.state)) return false;
    return this.held.pair !== null || this.renewals.inflight !== null;
  }

  /**
   * Until when (monotonic ms) the service asked this account to send no login or refresh (its
   * Retry-After, grown by consecutive 429s), or null when it did not or that has passed. Read when
   * a session of the same account replaces this one (src/account/registry.ts).
   */
  get rateLimitedUntil(): number | null {
    return this.gate.rateLimitedUntil;
  }

  /**
   * A session of the same account that this one replaces was told by the service to wait until
   * `at` (monotonic ms, see rateLimitedUntil): this one sends no login or refresh before it either.
   * The Retry-After is the account's, not the session object's (docs/session.md#rate-limits).
   * Call before start().
   */
  holdUntil(at: number): void {
    this.gate.holdUntil(at);
  }

  /** Resume the stored pair, or log in. Idempotent; resolves when the first attempt settles. */
  start(): Promise<void> {
    if (!this.startPromise) {
      this.startPromise = this.renewals.single(async () => {
        const stored = this.loginFirst ? null : await this.store.load().catch(() => null);
        const held = this.rateLimitedUntil;
        if (stored) {
          this.held.adoptStored(stored);
          this.log.info("resumed the stored session");
          // Already inside the single flight: call the work directly, not refresh()/login().
          if (!this.held.needsRenewal()) this.renewals.becomeReady();
          else if (held === null) await this.renewals.doRefresh("the stored access token is expiring");
          else if (!this.held.isExpired()) this.renewals.becomeReady(held - this.clock.monotonic());
          else this.holdReason(held, "refresh");
        } else if (held !== null) {
          this.holdReason(held, "login");
        } else {
          await this.renewals.doLogin("start-up");
        }
      });
    }
    return this.startPromise;
  }

  /** No login or refresh at start: the service's wait (held over from the session this one replaced) still runs. */
  private holdReason(until: number, operation: "login" | "refresh"): void {
    const sec = Math.ceil((until - this.clock.monotonic()) / 1000);
    this.gate.held(operation);
    this.status.set("unreachable", `${operation} rate-limited by the service; next try in ${sec} s`);
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
      const renewedAfter = await this.renewals.renewAfter401(first);
      const second = this.held.pair?.accessToken;
      if (this.status.state !== "ready" || second === undefined || second === first) {
        if (HALTED_STATES.has(this.status.state) || this.status.state === "closed") await this.token(); // throws SessionHaltedError
        if (this.status.state === "store-unreachable") {
          throw new StoreUnreachableError(
            `session store unreachable: ${this.status.reason ?? "the renewal lock could not be taken"}; the request was not repeated`,
          );
        }
        throw this.renewals.renewalFailedError("the request was answered 401 and was not repeated");
      }
      // A login or refresh of our own that starts while the replay is out (an operator's
      // Reconnect) may itself end `second`: its 401 is then no sign of another login.
      const renewals = this.renewals.started;
      try {
        return await fn(second);
      } catch (e2) {
        // Halted only when the rejected token came from a renewal after this call's 401
        // (docs/session.md#a-401-and-its-replay; a token renewed before it proves no takeover).
        if (
          is401(e2) &&
          renewedAfter &&
          this.held.pair?.accessToken === second &&
          this.renewals.started === renewals &&
          !this.renewals.inflight
        ) {
          this.renewals.halt(
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
      switch (this.status.state) {
        case "closed":
          throw new SessionHaltedError("closed", "the account is closed (redeploy in progress or node removed)");
        case "halted-login-failed":
        case "halted-superseded":
          throw new SessionHaltedError(
            this.status.state,
            `account halted: ${this.renewals.haltText(this.status.reason ?? this.status.state)}; an operator must redeploy or press reconnect`,
          );
        case "ready":
          if (this.held.pair && this.held.pair.accessToken === this.held.rejectedAccess) {
            // The service answered 401 to this token and its renewal failed: never send it
            // again. Renew on demand, but not before the service's Retry-After / the spacing.
            if (this.renewals.inflight) {
              await this.renewals.waitFor(this.renewals.inflight);
            } else if (this.gate.mayRenew()) {
              await this.renewals.waitFor(this.renewals.refresh(AFTER_401));
            } else {
              throw this.renewals.renewalFailedError("nothing was sent");
            }
            if (
              this.held.pair &&
              this.held.pair.accessToken === this.held.rejectedAccess &&
              this.status.state === "ready"
            )
              throw this.renewals.renewalFailedError("nothing was sent");
            break;
          }
          if (this.held.pair && !this.held.isExpired()) return this.held.pair.accessToken;
          // Expired (or the wall clock says so) within a refresh's Retry-After: nothing is sent
          // before it has passed (docs/session.md#rate-limits), measured on the monotonic clock.
          if (!this.renewals.inflight && this.gate.rateLimitedNow())
            throw this.renewals.renewalFailedError("nothing was sent");
          await this.renewals.waitFor(this.renewals.inflight ?? this.renewals.refresh("the access token has expired"));
          break;
        case "unreachable": {
          const now = this.clock.monotonic();
          // After a 429 the service's wait is the only one (docs/session.md#rate-limits); the
          // once-a-minute spacing is for logins that failed on 5xx or the network (send-gate.ts).
          const limited = this.gate.rateLimited;
          const next = this.gate.nextLoginAt();
          if (this.renewals.inflight) {
            await this.renewals.waitFor(this.renewals.inflight);
          } else if (now >= next) {
            // A pair still held (its refresh was rate-limited after the access token expired) is
            // renewed with its refresh token: a login would end the session for nothing.
            await this.renewals.waitFor(
              this.held.pair
                ? this.renewals.refresh("a message needs the session")
                : this.renewals.login("a message needs the session"),
            );
          } else if (limited) {
            throw this.renewals.renewalFailedError("nothing was sent");
          } else {
            throw new SessionUnavailableError(
              `service unreachable: ${this.status.reason ?? "login failed"}; next login attempt in ${Math.ceil((next - now) / 1000)} s`,
              Math.ceil((next - now) / 1000),
            );
          }
          break;
        }
        case "store-unreachable":
          // Keep using the pair in memory while it is good; renew only through the store.
          if (this.held.pair && !this.held.isExpired() && this.held.pair.accessToken !== this.held.rejectedAccess)
            return this.held.pair.accessToken;
          if (this.renewals.inflight) {
            await this.renewals.waitFor(this.renewals.inflight);
          } else if (!storeTried) {
            storeTried = true;
            await this.renewals.waitFor(
              this.held.pair
                ? this.renewals.refresh("the access token needs renewal")
                : this.renewals.login("a message needs the session"),
            );
          } else {
            throw new StoreUnreachableError(
              `session store unreachable: ${this.status.reason ?? "the renewal lock could not be taken"}`,
            );
          }
          break;
        default:
          // idle, logging-in, refreshing
          await this.renewals.waitFor(this.renewals.inflight ?? this.start());
      }
    }
    throw new SessionUnavailableError(`the session did not become ready (${this.status.state})`);
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
      `the account has no session now (${this.status.state}${this.status.reason ? `: ${this.status.reason}` : ""}); nothing was sent`,
    );
  }

  /** The access token a call could use without a login or renewal, or null. */
  heldToken(): string | null {
    if (this.status.state !== "ready" && this.status.state !== "store-unreachable") return null;
    if (!this.held.pair || this.held.isExpired() || this.held.pair.accessToken === this.held.rejectedAccess)
      return null;
    return this.held.pair.accessToken;
  }

  /**
   * Operator action after a halt (or to hurry a retry while unreachable): one fresh login.
   * Never rejects (an operator's click must not be able to crash the runtime): while a login or
   * refresh is already in flight it does nothing more, and the state shows how that one ends.
   */
  async reconnect(): Promise<void> {
    if (this.status.state === "closed" || this.renewals.inflight) return;
    // The operator overrides the once-an-hour re-login rule, never the service's Retry-After:
    // within it, the login is made once it has passed (one, however often Reconnect is pressed).
    // The account's hold after any 429 with Retry-After (a PUT's too) is a wait like the login's.
    const wait = Math.max(this.gate.reconnectWait(), this.client.heldForMs());
    if (wait > 0) {
      if (!this.reconnectTimer.pending) {
        const pairAtPress = this.held.pair;
        const fire = (): void => {
          if (this.status.state === "closed" || this.renewals.inflight) return;
          // A timer may fire a moment before the wait it was set for (the event loop's cached
          // time): what is left of it is waited out first, so the login is not refused as held.
          const left = Math.max(this.gate.reconnectWait(), this.client.heldForMs());
          if (left > 0) {
            this.reconnectTimer.start(left + 1, fire);
            return;
          }
          // Something renewed meanwhile (a message after the Retry-After): that session is kept.
          if (
            this.status.state === "ready" &&
            this.held.pair !== pairAtPress &&
            this.held.pair &&
            this.held.pair.accessToken !== this.held.rejectedAccess &&
            !this.held.isExpired()
          )
            return;
          void this.renewals.login("operator reconnect").catch(() => undefined);
        };
        this.reconnectTimer.start(wait, fire);
      }
      const sec = Math.ceil(wait / 1000);
      this.log.warn(`session: reconnect requested; the service asked to wait, logging in in ${sec} s`);
      const base = (this.status.reason ?? "waiting").replace(/; reconnect requested: .*$/, "");
      this.status.set(this.status.state, `${base}; reconnect requested: login in ${sec} s (the service's Retry-After)`);
      return;
    }
    this.reconnectTimer.stop();
    await this.renewals.login("operator reconnect").catch(() => undefined);
  }

  /** Whether a login or refresh is in flight (the config node waits for it before closing). */
  get busy(): boolean {
    return this.renewals.inflight !== null;
  }

  /** Stops timers and refuses new calls; the stored pair stays for the next start. */
  async close(): Promise<void> {
    this.unwatch?.();
    this.renewals.clearRenewal();
    this.reconnectTimer.stop();
    this.status.set("closed", null);
    // A refresh in flight has (or soon will have) consumed the refresh token at the service:
    // let it finish and persist the new pair (bounded), or the next start must log in again.
    if (this.renewals.inflight) await settledWithin(this.clock, this.renewals.inflight, this.timings.closeWaitMs);
    this.renewals.abortFlight();
    await this.renewals.inflight?.catch(() => undefined);
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
    const token = this.held.pair?.accessToken;
    if (token) {
      const ac = new AbortController();
      const t = this.clock.setTimeout(() => ac.abort(new Error("logout timed out")), 5_000);
      await this.client.logout(token, ac.signal).catch(() => undefined);
      this.clock.clearTimeout(t);
    }
    this.held.drop();
    await this.store.clear().catch(() => undefined);
  }
}
