/**
 * What a token pair says about itself, as pure functions of the pair, the time and the
 * timings (docs/session.md#renewal): how long its access token lives (from its `exp`, and `iat`
 * when it has one), when it counts as expired, and when it is due for renewal. The session
 * (renewals.ts) decides what to do about it.
 */
import { decodeJwt } from "jose/jwt/decode";
import type { StoredPair } from "./token-store.js";
import type { SessionTimings } from "./types.js";

export interface LivePair extends StoredPair {
  /** ms since epoch from the JWT `exp`, or null when the token carries none. */
  exp: number | null;
  /**
   * The token's lifetime in ms (`exp − iat`, or `exp` − the local time it was obtained when it
   * carries no `iat`), or null without `exp`. Renewal and expiry are measured from `obtainedAt`
   * on the local clock plus this lifetime, so a local clock that is off (or jumps) cannot make
   * every fresh token look expired.
   */
  lifetimeMs: number | null;
}

/**
 * The pair with what its access token's claims say: `exp` and the lifetime, and `subject`, its
 * `sub` claim when it has a non-empty one (else null). A lifetime that is not positive (a broken
 * clock at either end) counts as `minLifetimeMs`, the shortest one the renewal spacing allows.
 */
export function readPair(pair: StoredPair, minLifetimeMs: number): { live: LivePair; subject: string | null } {
  let exp: number | null = null;
  let iat: number | null = null;
  let subject: string | null = null;
  try {
    const claims = decodeJwt(pair.accessToken);
    if (typeof claims.exp === "number" && Number.isFinite(claims.exp)) exp = claims.exp * 1000;
    if (typeof claims.iat === "number" && Number.isFinite(claims.iat)) iat = claims.iat * 1000;
    if (typeof claims.sub === "string" && claims.sub !== "") subject = claims.sub;
  } catch {
    /* not a JWT: no exp, renewed on the period only */
  }
  // `exp` is authoritative for how long the token lives; when it was issued is the service's
  // `iat` (or, without one, the local time it was obtained).
  let lifetimeMs: number | null = null;
  if (exp !== null) {
    const raw = iat !== null && iat < exp ? exp - iat : exp - pair.obtainedAt;
    lifetimeMs = Math.max(raw, minLifetimeMs);
  }
  return { live: { ...pair, exp, lifetimeMs }, subject };
}

/** When the access token expires, on the local clock (obtained + lifetime); never without `exp`. */
export function localExpiry(p: LivePair): number {
  return p.lifetimeMs === null ? Number.POSITIVE_INFINITY : p.obtainedAt + p.lifetimeMs;
}

/**
 * Whether the access token is too close to its expiry to be sent: within `expirySkewMs` of it,
 * or a quarter of its lifetime when that is shorter. No pair, or no `exp`: false.
 */
export function isExpired(p: LivePair | null, now: number, expirySkewMs: number): boolean {
  if (p === null || p.lifetimeMs === null) return false;
  const skew = Math.min(expirySkewMs, p.lifetimeMs / 4);
  return now >= localExpiry(p) - skew;
}

/**
 * When the pair is due for renewal (ms since epoch): every 36 h, or 3 h before the token
 * expires, whichever is first; for a token that lives less than 12 h, a quarter of its lifetime
 * before it expires (so a 1 h token is renewed after 45 min, not in a loop because `exp − 3 h`
 * lies in the past).
 */
export function renewalDue(p: LivePair, timings: Pick<SessionTimings, "renewEveryMs" | "renewBeforeExpMs">): number {
  const byPeriod = p.obtainedAt + timings.renewEveryMs;
  if (p.lifetimeMs === null) return byPeriod;
  const margin = Math.min(timings.renewBeforeExpMs, p.lifetimeMs / 4);
  return Math.min(byPeriod, p.obtainedAt + p.lifetimeMs - margin);
}
