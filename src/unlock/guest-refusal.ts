/**
 * Why a guest's code did not open, as data (docs/passes.md#at-a-door-unlock): the
 * `payload.passRefusal` of a door-unlock that accepts passes, from which a guest page builds its
 * answer in the guest's language (docs/passes.md#at-a-door-panel). Times are instants with the
 * zone to read them in: the pass's own, else the node's. Never the code.
 */
import { type Bookings, type Pass, type PassRefusal, nextOpen, passCheck } from "../passes/pass.js";
import type { AccessState } from "./access-state.js";

/**
 * `unknown`: no pass has the code; `locked-out`: the node refuses every message until `at`;
 * the others are a pass's (`not-yet` is passCheck's `upcoming`, `gone`: the pass no longer exists).
 */
export type GuestRefusalWhy = "unknown" | "locked-out" | "not-yet" | "gone" | Exclude<PassRefusal, "upcoming">;

export interface GuestRefusal {
  why: GuestRefusalWhy;
  /**
   * ISO instant: when the pass ended (`expired`), opens (`not-yet`; with weekly hours or turnover
   * windows, its first window), opens next (`closed`, outside its weekly hours or turnover windows;
   * absent when it does not open again), or the lockout ends (`locked-out`).
   */
  at?: string;
  /** IANA zone a person reads `at` in. */
  timeZone: string;
}

/**
 * A known pass refused for `word` (passCheck's, or a store's) at `now`. Outside its weekly hours
 * or turnover windows (`closed`, read from `bookings`), `at` is when it opens next, absent when it
 * does not open again.
 */
export function passRefused(
  word: PassRefusal | "gone",
  pass: Pass,
  nodeZone: string,
  now: number,
  bookings?: Bookings,
): GuestRefusal {
  const own = (pass as { timeZone?: unknown }).timeZone;
  const timeZone = typeof own === "string" && own !== "" ? own : nodeZone;
  const iso = (at: number | null) => (at === null ? undefined : new Date(at).toISOString());
  if (word === "expired") return { why: "expired", at: pass.until, timeZone };
  // With weekly hours or turnover windows, when it opens is its first window, as the refusal's words say (pass.ts refusalText).
  if (word === "upcoming")
    return { why: "not-yet", at: iso(nextOpen(pass, Date.parse(pass.from), bookings)) ?? pass.from, timeZone };
  if (word === "closed") {
    const at = iso(nextOpen(pass, now, bookings));
    return at === undefined ? { why: "closed", timeZone } : { why: "closed", at, timeZone };
  }
  return { why: word, timeZone };
}

/** A code no pass has. */
export function unknownCode(nodeZone: string): GuestRefusal {
  return { why: "unknown", timeZone: nodeZone };
}

/** The node is locked out until `until` (ms): the same for every message, whatever it holds. */
export function lockedOut(until: number, nodeZone: string): GuestRefusal {
  return { why: "locked-out", at: new Date(until).toISOString(), timeZone: nodeZone };
}

/**
 * The passRefusal of outcome `r` at a node that accepts passes (undefined: none): the one it
 * carries, else, on `denied`, a pass refused (its state or door now), a code no pass has (`pass`
 * null), or the node locked out.
 */
export function guestRefusal(
  node: { access?: { ok: true; state: AccessState } | { ok: false } | null; acceptPasses?: boolean },
  r: { outcome: string; reason?: string; deviceId: number | null; retryAfter?: number; passRefusal?: GuestRefusal },
  pass: Pass | null,
  now: number,
  bookings: Bookings,
): GuestRefusal | undefined {
  const state = node.access?.ok ? node.access.state : null;
  if (r.passRefusal !== undefined || r.outcome !== "denied" || state === null || node.acceptPasses !== true)
    return r.passRefusal;
  const zone = state.rules.timeZone;
  if (r.reason === "locked-out") {
    // The lockout that answered (a door's, or the node's): it ends when the answer says to retry.
    const until = r.retryAfter !== undefined ? now + r.retryAfter * 1000 : state.lockout(now).until;
    return until === null ? undefined : lockedOut(until, zone);
  }
  if (r.reason !== "pass") return undefined;
  if (pass === null) return unknownCode(zone);
  return passRefused(passCheck(pass, now, r.deviceId ?? undefined, bookings) ?? "used-up", pass, zone, now, bookings);
}
