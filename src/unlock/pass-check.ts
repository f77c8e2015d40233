/**
 * A guest pass at a door-unlock node (docs/passes.md#at-a-door-unlock): a guest's code decided
 * against the node's lockout and the account's passes in one synchronous step, and why a known
 * pass does not open this door now. The use itself is taken by the book (reserve at the check,
 * commit before the command leaves).
 */
import type { PassBook } from "../passes/pass-book.js";
import { type Bookings, type Pass, passCheck, refusalText } from "../passes/pass.js";
import type { AccessState, Denied, DenyReason } from "./access-state.js";

export type CodeCheck =
  /** The node is locked out: nothing was looked up; the answer is the same for every message. */
  | { kind: "locked"; denied: Denied }
  /** No pass has the code, or its pass refuses this door now: counted as a try. */
  | { kind: "refused"; denied: Denied; pass: Pass | null }
  | { kind: "found"; pass: Pass };

/**
 * A guest's code at door `deviceId` (docs/passes.md#how-hard-a-code-is-to-guess), after the book
 * was refreshed. Synchronous, so that no other message is looked up between the lockout's test,
 * the lookup and the count of a miss: a flood cannot look up more codes than the lockout allows.
 */
export function checkCode(access: AccessState, book: PassBook, code: string, deviceId: number, now: number): CodeCheck {
  const locked = access.lockedOut(now, deviceId);
  if (locked) return { kind: "locked", denied: locked };
  const pass = book.find(code);
  if (pass === null) return { kind: "refused", denied: access.wrongCode(now, deviceId), pass: null };
  const why = passRefusal(pass, deviceId, now, access.rules.timeZone, book);
  if (why !== null) return { kind: "refused", denied: access.costTry(now, refusedBy("pass", why), deviceId), pass };
  return { kind: "found", pass };
}

/** A refusal as the access rules give one. */
export function refusedBy(reason: DenyReason, message: string): Denied {
  return { allowed: false, reason, message };
}

/**
 * Why a known pass does not open door `deviceId` at `now`, in words for the guest's flow, times in
 * local time (the pass's zone, else `zone`, the node's); null: it may.
 */
export function passRefusal(
  p: Pass,
  deviceId: number,
  now: number,
  zone: string | undefined,
  bookings: Bookings,
): string | null {
  const why = passCheck(p, now, deviceId, bookings);
  return why === null ? null : refusalText(why, p, now, zone, bookings);
}
