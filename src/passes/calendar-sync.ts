/**
 * A booking calendar's reading applied to the account's passes (docs/passes.md#from-a-booking-calendar):
 * a new booking issues a pass (its code goes out once), a booking whose guest or dates changed
 * updates its pass (same code), a booking gone or cancelled revokes its pass. A feed that suddenly
 * lists nothing while passes it made are live is not applied. Reading the feed and fetching it
 * are the poller's (calendar-poller.ts).
 */
import type { Pass, PassDoor } from "./pass.js";
import type { PassBook } from "./pass-book.js";
import { isLive } from "./pass.js";
import type { Booking } from "./calendar.js";

export interface SyncChanges {
  issued: { pass: Pass; code: string }[];
  updated: Pass[];
  revoked: Pass[];
}

export class EmptyFeedRefused extends Error {}

/** Bookings handled in one turn of the event loop. */
const SLICE = 200;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

function sameDoors(a: PassDoor[], b: PassDoor[]): boolean {
  return a.length === b.length && a.every((d, i) => d.deviceId === b[i].deviceId);
}

export async function applyBookings(
  book: PassBook,
  source: string,
  bookings: readonly Booking[],
  doors: PassDoor[],
  codeLength: number,
  now: number,
  /** `issue: false`: no new pass (the node's output reaches nobody: docs/passes.md#no-code-goes-nowhere); changes and revocations still apply. */
  opts: { issue?: boolean } = {},
): Promise<SyncChanges> {
  const all = await book.fromSource(source);
  const mine = all.filter((p) => p.revoked === null);
  // A booking whose pass was revoked by hand (a flow's revoke, the sidebar) gets no new pass while
  // that pass is kept: the owner took the guest's access back, a later read must not give it again.
  const handRevoked = new Set(
    all.filter((p) => p.revoked !== null && p.revokedBy !== "calendar" && p.ref !== null).map((p) => p.ref!),
  );
  const live = mine.filter((p) => isLive(p, now));
  if (bookings.length === 0 && live.length > 0)
    throw new EmptyFeedRefused(
      `the calendar lists no booking while ${live.length} pass${live.length === 1 ? "" : "es"} made from it ${live.length === 1 ? "is" : "are"} live: not applied (a feed gone wrong is not a cancellation of every booking)`,
    );
  const byRef = new Map(mine.filter((p) => p.ref !== null).map((p) => [p.ref!, p]));
  const seen = new Set<string>();
  const issuing: Promise<{ pass: Pass; code: string } | null>[] = [];
  const updating: Promise<Pass | null>[] = [];
  // Started together: the book writes its file once for many changes (its writes are coalesced).
  // In slices, with a turn of the event loop between: 10,000 bookings never hold Node-RED for long.
  let n = 0;
  for (const b of bookings) {
    if (++n % SLICE === 0) await nextTurn();
    if (seen.has(b.ref)) continue;
    seen.add(b.ref);
    const p = byRef.get(b.ref);
    if (p === undefined) {
      if (handRevoked.has(b.ref) || opts.issue === false) continue;
      issuing.push(
        // null: another read (this instance's or another's) issued this booking's pass first.
        book.issueBooking(
          { guest: b.guest, doors, from: b.from, until: b.until, uses: null, ref: b.ref, source, booking: b.booking },
          codeLength,
        ),
      );
    } else if (p.guest !== b.guest || p.from !== b.from || p.until !== b.until || !sameDoors(p.doors, doors)) {
      updating.push(book.update(p.id, { guest: b.guest, doors, from: b.from, until: b.until, booking: b.booking }));
    }
  }
  const revoking = live
    .filter((p) => p.ref === null || !seen.has(p.ref))
    .map((p) => book.revoke({ id: p.id, byCalendar: true }));
  const [issued, updated, revoked] = await Promise.all([
    Promise.all(issuing),
    Promise.all(updating),
    Promise.all(revoking),
  ]);
  return {
    issued: issued.filter((x): x is { pass: Pass; code: string } => x !== null),
    updated: updated.filter((p): p is Pass => p !== null),
    revoked: revoked.flat(),
  };
}
