/**
 * Door names as text: the key a name is compared by (case, runs of spaces and the spaces around
 * "/" folded, in time linear in its length: docs/doors.md#message-overrides), the distance that
 * orders the closest names, and how a list of candidates is spelled in a message (at most 10,
 * each cut to 100 characters). Used by the device directory (directory.ts) and door selection
 * (select.ts).
 */
import { clip } from "../util/text.js";

/** At most this many candidates are spelled out in a message. */
export const MAX_LISTED = 10;

/** Case-insensitive, whitespace-tolerant key: trims, folds runs of spaces, " / " around slashes. */
export function normalizeDoorKey(s: string): string {
  // Linear in the length: runs of whitespace are folded first, so the slash rule meets at most one
  // space on each side (a /\s*\/\s*/ over a long run of spaces backtracks: 8 s for 100,000 spaces,
  // a door name from the service or a msg.door from a flow, stalling the runtime).
  return s
    .normalize("NFC")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/ ?\/ ?/g, " / ")
    .replace(/ {2,}/g, " ")
    .toLowerCase();
}

/** A name or location as the list gives it: trimmed, or null when it is missing or blank. */
export function text(s: string | null | undefined): string | null {
  if (typeof s !== "string") return null;
  const t = s.trim();
  return t.length > 0 ? t : null;
}

/** `s` as a JSON string: its quotes and any control character plain to see. */
export function quote(s: string): string {
  return JSON.stringify(s);
}

/** `"a", "b", "c"` with at most MAX_LISTED entries, then "and N more". */
export function listCandidates(items: string[]): string {
  const shown = items
    .slice(0, MAX_LISTED)
    .map((label) => quote(clipLabel(label)))
    .join(", ");
  const more = items.length - MAX_LISTED;
  return more > 0 ? `${shown} and ${more} more` : shown;
}

/** A label as a message spells it: at most LISTED_LABEL characters (a door name is the service's, of any length). */
const LISTED_LABEL = 100;
export function clipLabel(label: string): string {
  return clip(label, LISTED_LABEL, "…");
}

/** Edit distance between `a` and `b`, counted up to `limit` (anything further is `limit`). */
export function levenshtein(a: string, b: string, limit: number): number {
  if (a === b) return 0;
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let prev = new Array<number>(b.length + 1);
  let cur = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = cur[0];
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (cur[j] < rowMin) rowMin = cur[j];
    }
    if (rowMin >= limit) return limit;
    [prev, cur] = [cur, prev];
  }
  return Math.min(prev[b.length], limit);
}
