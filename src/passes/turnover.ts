/**
 * A cleaner's turnover window (docs/passes.md#between-guests-the-turnover-window): a pass issued
 * with `turnover` (a door-pass node with a booking calendar) opens only between a check-out and the
 * next check-in of the bookings on the pass's doors: that calendar's, and those of every other
 * calendar of the account on those doors (calendarsFor). The windows are worked out at each
 * check from the calendar's passes as they are in the book now (no window is stored), so a booking
 * that moves or is cancelled moves or ends them at once. Nothing here can open a pass wider than its
 * own dates and weekly hours: this only narrows them (pass.ts checks those first).
 */

/**
 * What the check reads of a pass (pass.ts's Pass has these fields): a calendar's booking, or the
 * cleaner's pass. Written here so that this file imports nothing of pass.ts, which imports it.
 */
export interface TurnoverPass {
  doors: readonly { deviceId: number }[];
  from: string;
  until: string;
  revoked: string | null;
  revokedBy?: "calendar";
  /** The door-pass node whose calendar bounds this pass (the cleaner's). */
  turnover?: string;
}

/** A check-out with no check-in booked after it opens the turnover window for at most this long. */
export const TURNOVER_MAX_MS = 30 * 24 * 3600_000;

/** The passes a door-pass node's booking calendar made (its bookings), as a pass book keeps them now. */
export interface Bookings {
  bookingsOf(source: string): readonly TurnoverPass[];
  /** The calendars (door-pass node ids) with a pass on one of `doors`; absent: only the one a pass names. */
  calendarsOn?(doors: readonly { deviceId: number }[]): Iterable<string>;
}

/**
 * The calendars whose bookings bound turnover pass `p`: every calendar of the book, not only the one
 * it names. A listing on two platforms is read by two door-pass nodes, and each platform's guests
 * are only blocked time in the other's feed: a stay of either closes the cleaner's door on its
 * doors (bounds() keeps the bookings on a door of `p`).
 */
function calendarsFor(p: TurnoverPass, bookings: Bookings): Iterable<string> {
  return bookings.calendarsOn?.(p.doors) ?? [p.turnover!];
}

/** A stay: a booking's window in ms. */
interface Stay {
  from: number;
  until: number;
}

/** A booking's window in ms, kept beside the times it was parsed from (a calendar's update changes them in place). */
const parsed = Symbol("turnover stay");
type Parsed = TurnoverPass & { [parsed]?: { from: string; until: string; stay: Stay } };

function stayOf(b: Parsed): Stay {
  const c = b[parsed];
  if (c !== undefined && c.from === b.from && c.until === b.until) return c.stay;
  const stay = { from: Date.parse(b.from), until: Date.parse(b.until) };
  // Not enumerable: never written to a store nor copied by structuredClone.
  Object.defineProperty(b, parsed, {
    value: { from: b.from, until: b.until, stay },
    writable: true,
    configurable: true,
  });
  return stay;
}

/**
 * Whether calendar pass `b` is a booking that bounds cleaner's pass `p`'s turnover windows: one of
 * the calendar's passes on a door of `p`, not revoked by its calendar (a booking cancelled or gone
 * from the feed, or its node deleted). A pass revoked by hand stays a booking: its dates are still
 * in the calendar, and a guest may still come.
 */
function bounds(b: TurnoverPass, p: TurnoverPass): boolean {
  if (b.revoked !== null && b.revokedBy === "calendar") return false;
  for (const d of b.doors) for (const e of p.doors) if (d.deviceId === e.deviceId) return true;
  return false;
}

/**
 * Whether turnover pass `p` is between a check-out and the next check-in at `now` (true for a pass
 * without `turnover`): no stay on its doors is under way, and the last check-out was at most
 * TURNOVER_MAX_MS ago. No booking, no check-out yet, or no bookings to read (`bookings` absent):
 * closed. O(calendar passes of the account), no allocation but one iterator once their times are parsed.
 */
export function inTurnover(p: TurnoverPass, now: number, bookings: Bookings | undefined): boolean {
  if (p.turnover === undefined) return true;
  if (bookings === undefined) return false;
  let lastOut = Number.NEGATIVE_INFINITY;
  for (const source of calendarsFor(p, bookings)) {
    const list = bookings.bookingsOf(source);
    for (let i = 0; i < list.length; i++) {
      const b = list[i];
      if (!bounds(b, p)) continue;
      const s = stayOf(b);
      if (s.from <= now && now < s.until) return false;
      if (s.until <= now && s.until > lastOut) lastOut = s.until;
    }
  }
  return now - lastOut < TURNOVER_MAX_MS;
}

/**
 * The turnover windows of pass `p` that end after `start`, in order: from each check-out (the end
 * of a run of overlapping stays) to the next check-in, at most TURNOVER_MAX_MS. Empty without
 * bookings. For the texts that name the next window; the check itself is inTurnover().
 */
export function turnoverWindows(p: TurnoverPass, start: number, bookings: Bookings | undefined): Stay[] {
  if (p.turnover === undefined || bookings === undefined) return [];
  const stays: Stay[] = [];
  for (const source of calendarsFor(p, bookings))
    for (const b of bookings.bookingsOf(source)) if (bounds(b, p)) stays.push(stayOf(b));
  stays.sort((a, b) => a.from - b.from);
  const out: Stay[] = [];
  let i = 0;
  while (i < stays.length) {
    let end = stays[i].until;
    let j = i + 1;
    for (; j < stays.length && stays[j].from <= end; j++) end = Math.max(end, stays[j].until);
    const next = j < stays.length ? stays[j].from : Number.POSITIVE_INFINITY;
    const w = { from: end, until: Math.min(next, end + TURNOVER_MAX_MS) };
    if (w.until > start) out.push(w);
    i = j;
  }
  return out;
}
