/**
 * The retry policy per operation, the service's, in one place (what users see of it:
 * docs/nodes.md#door-status for reads, docs/nodes.md#door-unlock for the unlock,
 * docs/session.md#renewal for login and refresh).
 *
 * | Operation                          | Retry allowed           | Policy                                           |
 * |------------------------------------|-------------------------|--------------------------------------------------|
 * | GET device list, location list, device | yes                 | idempotent; backoff with jitter on 429 and 5xx   |
 * | POST login (all three)             | limited                 | at most one retry on 5xx; never on 400 or 401    |
 * | POST refresh                       | not with the same token | on 5xx one retry; on 400/401 log in again        |
 * | PUT unlock (both)                  | no                      | never automatic                                  |
 * | POST logout                        | yes                     | harmless to repeat                               |
 *
 * Back-off set (the service's): statuses 429, 500, 502, 503, 504; up to 4 attempts; the delay from
 * `Retry-After` when present, otherwise 500 ms doubling plus random jitter under 250 ms.
 *
 * undici's RetryHandler was considered: it has no jitter and no bound on the total time, and
 * hides the attempt count from the caller, so this small table and the loop in client.ts do it.
 */
import type { OperationId } from "../spec/schemas.js";

export interface RetryRule {
  /** Total attempts including the first. 1 = never retried. */
  maxAttempts: number;
  /** Statuses that may be retried. */
  statuses: ReadonlySet<number>;
  /** Whether a failure without an HTTP answer (network error, timeout) may be retried. */
  network: boolean;
}

const BACKOFF_STATUSES = new Set([429, 500, 502, 503, 504]);
const SERVER_ERRORS = new Set([500, 502, 503, 504]);
const NONE = new Set<number>();

const IDEMPOTENT: RetryRule = { maxAttempts: 4, statuses: BACKOFF_STATUSES, network: true };
/** Login: at most one retry, on 5xx or a network failure; never on 400/401 (nor 429). */
const LOGIN: RetryRule = { maxAttempts: 2, statuses: SERVER_ERRORS, network: true };
/** Refresh: one retry on 5xx or a network failure; on 400/401 the session logs in again. */
const REFRESH: RetryRule = { maxAttempts: 2, statuses: SERVER_ERRORS, network: true };
/** Unlock: never automatic. A repeat can open the door again. */
const NEVER: RetryRule = { maxAttempts: 1, statuses: NONE, network: false };
/** Logout: harmless to repeat, so the same bounded back-off as the idempotent reads. */
const LOGOUT: RetryRule = { maxAttempts: 4, statuses: BACKOFF_STATUSES, network: true };

export const RETRY_POLICY: Readonly<Record<OperationId, RetryRule>> = {
  listUserDevices: IDEMPOTENT,
  listUserLocations: IDEMPOTENT,
  getDevice: IDEMPOTENT,
  login: LOGIN,
  loginByPhone: LOGIN,
  loginByEmail: LOGIN,
  refreshToken: REFRESH,
  unlockDevice: NEVER,
  unlockDeviceLock: NEVER,
  logout: LOGOUT,
};

export const BACKOFF = {
  /** First delay without Retry-After. */
  baseMs: 500,
  /** Random jitter added to every computed delay: [0, jitterMs). */
  jitterMs: 250,
  /** A Retry-After longer than this is not waited for: the call fails with `retryAfter` set. */
  maxRetryAfterMs: 60_000,
  /** No retry is started that would end later than this after the first attempt. */
  totalBudgetMs: 30_000,
} as const;

/**
 * The longest Retry-After taken as it is, in seconds: the longest wait one timer keeps
 * (2^31 − 1 ms, about 24.8 days). A longer one is read as this: every wait the package names
 * (`retryAfter`, "retry after N s") is one it keeps, in whole seconds.
 */
export const MAX_RETRY_AFTER_S = 2_147_483;

/**
 * An HTTP date (RFC 9110: IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", or the obsolete RFC 850
 * and asctime forms): it starts with a day name and has a time of day. Date.parse alone would
 * also read "-5", "1.5" or "+3" as days in 2001.
 */
const HTTP_DATE = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]{0,6},? .*\b\d{2}:\d{2}:\d{2}\b/i;

/**
 * Parses `Retry-After`: delta-seconds or an HTTP date. Returns whole seconds (0 to
 * MAX_RETRY_AFTER_S), or null when absent or unreadable (a negative or fractional number,
 * anything else that is neither form).
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return null;
  const text = raw.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text), MAX_RETRY_AFTER_S);
  if (text.length > 64 || !HTTP_DATE.test(text)) return null;
  // Every HTTP date is in GMT; the asctime form does not say so (Date.parse would take local time).
  const date = Date.parse(/\b(?:GMT|UTC)\b/i.test(text) ? text : `${text} GMT`);
  if (Number.isNaN(date)) return null;
  return Math.min(MAX_RETRY_AFTER_S, Math.max(0, Math.ceil((date - nowMs) / 1000)));
}

/**
 * Delay before attempt `attempt + 1` (attempt counts from 1): Retry-After when the service
 * sent one, else 500 ms · 2^(attempt-1) + jitter under 250 ms.
 */
export function backoffDelayMs(attempt: number, retryAfterSec: number | null, random: () => number): number {
  if (retryAfterSec !== null) return retryAfterSec * 1000;
  return BACKOFF.baseMs * 2 ** (attempt - 1) + Math.floor(random() * BACKOFF.jitterMs);
}
