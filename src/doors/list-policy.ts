/**
 * The rules the device list and the location list share (docs/doors.md#the-device-list): how
 * long a fetched list is served, how long the next fetch waits after a failure, and the error a
 * message gets while that wait runs. One place for each: the device directory (directory.ts)
 * and the location cache (src/account/account-core.ts) both use these.
 */

/** How long a fetched list is served from the cache before it is fetched again: 24 h. */
export const DEVICE_LIST_TTL_MS = 24 * 60 * 60 * 1000;

/** After a failed list fetch the next one waits 30 s, doubling up to 15 min (then every 15 min). */
export const LIST_RETRY_BASE_MS = 30_000;
export const LIST_RETRY_CAP_MS = 15 * 60_000;

/**
 * The wait (ms) before the next list fetch after `failures` failed fetches in a row: 30 s,
 * doubling up to 15 min, and never less than the last failure's `Retry-After` (`retryAfterSec`, 0
 * when there was none).
 */
export function listRetryDelayMs(failures: number, retryAfterSec: number): number {
  return Math.max(
    Math.min(LIST_RETRY_CAP_MS, LIST_RETRY_BASE_MS * 2 ** Math.min(failures - 1, 10)),
    retryAfterSec * 1000,
  );
}

/** The `Retry-After` (s) a failed fetch carries (a 429's), or 0. */
export function retryAfterSecOf(e: unknown): number {
  return Number((e as { retryAfter?: unknown }).retryAfter) || 0;
}

/**
 * The device list could not be had for a message: the back-off after the last failure still
 * runs, or the fetch for this message was rate-limited. `retryInMs`: until a message may make
 * the list be fetched again.
 */
export class DeviceListUnavailableError extends Error {
  override readonly name: string = "DeviceListUnavailableError";
  /** Which list, in words ("device list", "location list"). */
  readonly list: string = "device list";
  constructor(
    override readonly cause: unknown,
    readonly retryInMs: number,
  ) {
    super(
      `the device list is unavailable (${(cause as Error)?.message ?? String(cause)}); next try in ${Math.ceil(retryInMs / 1000)} s`,
    );
  }
}

/** A failure that is the service's rate limit: a 429 answer, or a renewal it limited (duck-typed: no HTTP here). */
export function isRateLimit(e: unknown): boolean {
  const x = e as { status?: unknown; rateLimited?: unknown } | null;
  return typeof x === "object" && x !== null && (x.status === 429 || x.rateLimited === true);
}

/**
 * A list fetch that sent nothing because the session's renewal (login or refresh) was
 * rate-limited (a RenewalFailedError with `rateLimited`, duck-typed); not a 429 on the list itself.
 * Its wait is the service's, and the list adds no back-off of its own to it (docs/session.md#rate-limits).
 */
export function renewalLimited(e: unknown): boolean {
  const x = e as { status?: unknown; rateLimited?: unknown } | null;
  return typeof x === "object" && x !== null && x.rateLimited === true && x.status !== 429;
}
