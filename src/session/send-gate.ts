/**
 * When the session may send a login or a refresh (docs/session.md#rate-limits,
 * docs/session.md#renewal, docs/session.md#connection-errors): the not-before times after a 429
 * (`loginNotBefore`, `renewNotBefore`), the run of consecutive 429s, the once-a-minute spacing of
 * logins that failed on 5xx or the network, the once-an-hour re-login after a refused refresh
 * token, and the spacing of renewals. The session (session.ts) asks this gate and tells it what
 * happened; the arithmetic of a 429's wait is in rate-limit.ts.
 *
 * Every wait here is measured on the monotonic clock (clock.monotonic()): setting the wall clock
 * forward must not send before a Retry-After, nor setting it back stall the account.
 */
import type { DoorApiError } from "../client/errors.js";
import type { Clock } from "../util/clock.js";
import type { RenewalFailedError } from "./errors.js";
import { type RenewalFailure, rateLimitWaitMs, renewalFailedError } from "./rate-limit.js";
import type { SessionTimings } from "./types.js";

export class SendGate {
  private lastLoginAttemptAt = Number.NEGATIVE_INFINITY;
  private loginNotBefore = Number.NEGATIVE_INFINITY;
  private lastReloginAfterRejectAt = Number.NEGATIVE_INFINITY;
  /** When the last refresh started (the renewal spacing is measured from it). */
  private lastRenewalStartedAt = Number.NEGATIVE_INFINITY;
  /** No renewal on demand before this (a refresh was rate-limited or failed transiently). */
  private renewNotBefore = Number.NEGATIVE_INFINITY;
  /** Why the last renewal failed without a halt (cleared by a new pair). */
  private lastRenewalFailure: RenewalFailure | null = null;
  /** 429s in a row on login or refresh (a new pair, or any other answer, ends the run). */
  private rateLimitRun = 0;

  constructor(
    private readonly clock: Clock,
    private readonly timings: SessionTimings,
    private readonly random: () => number,
  ) {}

  /** The monotonic clock every wait of the session is measured on. */
  mono(): number {
    return this.clock.monotonic();
  }

  /** Whether the last renewal (login or refresh) was answered 429. */
  get rateLimited(): boolean {
    return this.lastRenewalFailure?.rateLimited === true;
  }

  /** Until when (monotonic ms) the service asked for no login or refresh, or null (see Session.rateLimitedUntil). */
  get rateLimitedUntil(): number | null {
    if (!this.lastRenewalFailure?.rateLimited) return null;
    const at = Math.max(this.loginNotBefore, this.renewNotBefore);
    return at > this.mono() ? at : null;
  }

  /** No login or refresh before `at` (monotonic ms): the Retry-After of the session this one replaces. */
  holdUntil(at: number): void {
    if (!(at > this.mono())) return;
    this.loginNotBefore = Math.max(this.loginNotBefore, at);
    this.renewNotBefore = Math.max(this.renewNotBefore, at);
    this.lastRenewalFailure = { rateLimited: true, operation: "login" };
  }

  /** At start-up, a held wait stopped this `operation` from being sent. */
  held(operation: "login" | "refresh"): void {
    this.lastRenewalFailure = { rateLimited: true, operation };
  }

  /** Whether a renewal on demand may be sent now (no Retry-After or spacing binds). */
  mayRenew(): boolean {
    return this.mono() >= this.renewNotBefore;
  }

  /** Within a refresh's (or login's) Retry-After: nothing is sent before it has passed. */
  rateLimitedNow(): boolean {
    return this.mono() < this.renewNotBefore && this.rateLimited;
  }

  /**
   * When the next login may be sent while unreachable: after a 429 the service's wait is the
   * only one; the once-a-minute spacing is for logins that failed on 5xx or the network.
   */
  nextLoginAt(): number {
    return this.rateLimited
      ? this.loginNotBefore
      : Math.max(this.lastLoginAttemptAt + this.timings.loginRetryMs, this.loginNotBefore);
  }

  loginStarted(): void {
    this.lastLoginAttemptAt = this.mono();
  }

  refreshStarted(): void {
    this.lastRenewalStartedAt = this.mono();
  }

  /** A new pair: every wait and the run of 429s end. */
  renewed(): void {
    this.lastRenewalFailure = null;
    this.renewNotBefore = Number.NEGATIVE_INFINITY;
    this.rateLimitRun = 0;
  }

  /** An answer that is not a 429 ends the run of 429s. */
  endRun(): void {
    this.rateLimitRun = 0;
  }

  /** A login or refresh failed on 5xx, the network or a bad body (after the client's retry). */
  failed(message: string): void {
    this.rateLimitRun = 0;
    this.lastRenewalFailure = { rateLimited: false, message };
  }

  /** A refresh failed transiently and the token is kept: no renewal on demand within the spacing. */
  spaceRenewal(): void {
    this.renewNotBefore = this.mono() + this.timings.minRenewalIntervalMs;
  }

  /** A login answered 429: nothing is sent for the returned wait (ms). */
  loginRateLimited(e: DoorApiError): number {
    const wait = this.rateLimitWait(e);
    this.loginNotBefore = this.mono() + wait;
    this.renewNotBefore = this.loginNotBefore;
    this.lastRenewalFailure = { rateLimited: true, operation: "login" };
    return wait;
  }

  /** A refresh answered 429: no renewal for the returned wait (ms), nor a login when the token has expired. */
  refreshRateLimited(e: DoorApiError, expired: boolean): number {
    const wait = this.rateLimitWait(e);
    this.renewNotBefore = this.mono() + wait;
    this.lastRenewalFailure = { rateLimited: true, operation: "refresh" };
    if (expired) this.loginNotBefore = this.renewNotBefore;
    return wait;
  }

  /**
   * A refresh token refused (400/401): true when a login may follow (at most once an hour, the
   * time is then recorded); false for a second refusal within the hour (a halt).
   */
  reloginAfterReject(): boolean {
    const now = this.mono();
    if (now - this.lastReloginAfterRejectAt < this.timings.reloginWindowMs) return false;
    this.lastReloginAfterRejectAt = now;
    return true;
  }

  /**
   * An operator's Reconnect: it overrides the once-an-hour re-login rule, never the service's
   * Retry-After. Returns how long (ms) its login must still wait; 0 or less: now (and the
   * renewal wait is then forgotten).
   */
  reconnectWait(): number {
    this.lastReloginAfterRejectAt = Number.NEGATIVE_INFINITY;
    // A refresh answered 429 binds the login too: its Retry-After is the service's word for the account.
    const notBefore = Math.max(this.loginNotBefore, this.rateLimited ? this.renewNotBefore : Number.NEGATIVE_INFINITY);
    const wait = notBefore - this.mono();
    if (wait <= 0) this.renewNotBefore = Number.NEGATIVE_INFINITY;
    return wait;
  }

  /** The delay of a scheduled renewal due in `dueMs`: never sooner than the spacing after the last one. */
  renewalDelay(dueMs: number): number {
    const spacing = this.lastRenewalStartedAt + this.timings.minRenewalIntervalMs - this.mono();
    return Math.max(dueMs, 0, spacing);
  }

  /** The error for a call whose token could not be renewed (nothing executed). */
  renewalFailedError(fallback: string, what: string): RenewalFailedError {
    return renewalFailedError(this.lastRenewalFailure, this.renewNotBefore - this.mono(), fallback, what);
  }

  /** How long nothing is sent after this login or refresh answered 429: one more in the run (rate-limit.ts). */
  private rateLimitWait(e: DoorApiError): number {
    // Not sent at all (the account's hold after another operation's 429): what is left of that
    // wait, and not one more in the run of this session's own 429s.
    if (e.held) return (e.retryAfter ?? 0) * 1000;
    return rateLimitWaitMs(++this.rateLimitRun, e.retryAfter, this.timings.rateLimitCapMs, this.random);
  }
}
