/**
 * A guest pass at a door-unlock node (docs/passes.md#at-a-door-unlock): msg.pass read as a code,
 * looked up in the account's pass book, and why a known pass does not open this door now. The
 * use itself is taken by the book (reserve at the check, commit before the command leaves).
 */
import type { PassBook } from "../passes/pass-book.js";
import { type Pass, passCheck, readCode, refusalText } from "../passes/pass.js";

export type PassLookup =
  | { kind: "invalid"; message: string }
  | { kind: "unknown" }
  | { kind: "found"; pass: Pass }
  | { kind: "unavailable"; message: string };

/** msg.pass, looked up in the book as every instance sees it now (docs/passes.md#where-passes-are-kept). Never names the code. */
export async function lookUpPass(book: PassBook, value: unknown): Promise<PassLookup> {
  const code = readCode(value);
  if (code === null)
    return { kind: "invalid", message: "msg.pass must be a pass code: its digits, as text or a whole number" };
  try {
    await book.refresh();
  } catch (e) {
    // The passes cannot be read (the Redis store is unreachable): no code is known or unknown.
    return { kind: "unavailable", message: `not sent: the passes cannot be read (${(e as Error).message})` };
  }
  const pass = book.find(code);
  return pass ? { kind: "found", pass } : { kind: "unknown" };
}

/**
 * Why a known pass does not open door `deviceId` at `now`, in words for the guest's flow, times in
 * `zone` (the node's); null: it may.
 */
export function passRefusal(p: Pass, deviceId: number, now: number, zone?: string): string | null {
  const why = passCheck(p, now, deviceId);
  return why === null ? null : refusalText(why, p, zone);
}
