/**
 * The session's vocabulary: its states, the snapshot it shows, the log it writes to, its
 * timings and its options (the state is session-status.ts's, the renewals renewals.ts's, the
 * allowed changes transitions.ts's).
 */
import type { Credentials, DoorApiClient } from "../client/client.js";
import type { Clock } from "../util/clock.js";
import type { TokenStore } from "./token-store.js";

export type SessionState =
  | "idle"
  | "logging-in"
  | "ready"
  | "refreshing"
  | "unreachable"
  | "halted-login-failed"
  | "halted-superseded"
  | "closed"
  | "store-unreachable";

export const HALTED_STATES: ReadonlySet<SessionState> = new Set(["halted-login-failed", "halted-superseded"]);

export interface SessionSnapshot {
  state: SessionState;
  /** Why the session is in this state (plain words, never a secret). */
  reason: string | null;
  /** A few words of that reason for a node status ("connection refused"), when there are. */
  detail?: string | null;
  /** ms since epoch of the last state change. */
  since: number;
  /** ms since epoch when the access token expires, when known. */
  accessExpiresAt: number | null;
  /** ms since epoch of the next scheduled renewal, when one is scheduled. */
  renewAt: number | null;
}

export interface SessionLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface SessionTimings {
  /** Proactive renewal period (spec: every 36 hours). */
  renewEveryMs: number;
  /** Renew this long before `exp` if that comes first (3 hours). */
  renewBeforeExpMs: number;
  /** A token this close to `exp` is renewed before use rather than sent. */
  expirySkewMs: number;
  /** Refresh rejected (400/401) → login at most once in this window (1 hour). */
  reloginWindowMs: number;
  /** After a login failed on 5xx/network, the next is tried no sooner than this (1 minute). */
  loginRetryMs: number;
  /** How long a caller waits for a login or refresh in flight (30 s). */
  waitMs: number;
  /** After a transient refresh failure with a still-valid token, try again after this. */
  refreshRetryMs: number;
  /**
   * The renewals the session starts on its own (its timers) are never closer together than
   * this, whatever the token's lifetime and whatever the local clock says ("Renewal is bounded",
   * docs/session.md#renewal). Not added to a Retry-After: a message after one may renew.
   */
  minRenewalIntervalMs: number;
  /** Longest wait after consecutive 429s on login or refresh (15 min); a longer Retry-After is still honoured. */
  rateLimitCapMs: number;
  /** How long close() lets a login or refresh in flight finish (and persist its pair). */
  closeWaitMs: number;
}

export const DEFAULT_TIMINGS: SessionTimings = {
  renewEveryMs: 36 * 3600_000,
  renewBeforeExpMs: 3 * 3600_000,
  expirySkewMs: 60_000,
  reloginWindowMs: 3600_000,
  loginRetryMs: 60_000,
  waitMs: 30_000,
  refreshRetryMs: 15 * 60_000,
  minRenewalIntervalMs: 30_000,
  rateLimitCapMs: 15 * 60_000,
  closeWaitMs: 8_000,
};

export interface SessionOptions {
  client: DoorApiClient;
  credentials: Credentials;
  store: TokenStore;
  clock?: Clock;
  log?: SessionLog;
  timings?: Partial<SessionTimings>;
  /** Jitter source for the back-off after consecutive 429s (default Math.random). */
  random?: () => number;
  /**
   * Log in at start even when the store holds a pair (the editor's sign-in, which must check the
   * password typed: resuming a pair checks nothing). Not for a shared store: its pair is the
   * live session of other instances, and one that opens under `storeProvesCredentials` is proof.
   */
  loginFirst?: boolean;
  /**
   * The store seals the pair under a key derived from the password (the Redis store): a pair it
   * hands back was sealed by a holder of this very password, and every such holder either
   * logged in with it or opened the pair before, so adopting it proves the password.
   */
  storeProvesCredentials?: boolean;
}
