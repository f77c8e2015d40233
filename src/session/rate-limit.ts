/**
 * The arithmetic of a login or refresh answered 429 (docs/session.md#rate-limits): how long
 * nothing is sent, and the error a call gets meanwhile. The send gate (send-gate.ts) keeps the
 * run of 429s and the time the session may send again.
 */
import { BACKOFF } from "../client/retry-policy.js";
import { RenewalFailedError } from "./errors.js";

/**
 * Why the last renewal (refresh or login) did not give a new token. A rate limit keeps which
 * operation was limited; its wait is the session's `renewNotBefore`, and every text about it is
 * made from what is left of that wait when it is said.
 */
export type RenewalFailure =
  { rateLimited: true; operation: "refresh" | "login" } | { rateLimited: false; message: string };

/**
 * How long nothing is sent after the `run`-th 429 in a row on a login or refresh. The first 429
 * of a run: exactly the service's Retry-After, or without one the first back-off step (500 ms
 * plus jitter under 250 ms). Each further 429 in a row doubles the wait (from the Retry-After, or
 * from 500 ms), plus jitter, up to `capMs` (15 min); never shorter than the Retry-After of that
 * answer, however long it is.
 */
export function rateLimitWaitMs(
  run: number,
  retryAfterSec: number | null,
  capMs: number,
  random: () => number,
): number {
  const asked = retryAfterSec === null ? 0 : retryAfterSec * 1000;
  if (run === 1 && retryAfterSec !== null) return asked;
  const unit = Math.max(asked, BACKOFF.baseMs);
  const grown = unit * 2 ** Math.min(run - 1, 30) + Math.floor(random() * BACKOFF.jitterMs);
  return Math.max(asked, Math.min(capMs, grown));
}

/**
 * The error for a call whose token could not be renewed (nothing executed). After a rate limit
 * it names the whole seconds until the session sends again (`leftMs` of the wait, rounded up), as
 * `retryAfter` and once in its text; otherwise why the renewal failed (`failure`, else `fallback`).
 */
export function renewalFailedError(
  failure: RenewalFailure | null,
  leftMs: number,
  fallback: string,
  what: string,
): RenewalFailedError {
  if (failure?.rateLimited) {
    const left = Math.max(0, Math.ceil(leftMs / 1000));
    const limited = `the session could not be renewed: the ${failure.operation} was rate-limited by the service (429)`;
    return new RenewalFailedError(`${limited}; retry after ${left} s; ${what}`, true, left, limited);
  }
  return new RenewalFailedError(
    `the session could not be renewed (${failure?.message ?? fallback}); ${what}`,
    false,
    null,
  );
}
