/**
 * A booking calendar's reading applied to the account's passes (docs/passes.md#from-a-booking-calendar):
 * a new booking issues a pass (its code goes out once), a booking whose guest or dates changed
 * updates its pass (same code), a booking gone or cancelled revokes its pass. A feed that suddenly
 * lists nothing while passes it made are live is not applied. Reading the feed and fetching it
 * are the poller's (calendar-poller.ts).
 *
 * A read is planned in full before anything is changed: a read that would take the account past
 * its capacity (MAX_PASSES, the passes already kept included) changes nothing. Every change is
 * handled as it starts (no rejection is left unhandled while the others run). A store that fails
 * part-way (a full disk, Redis gone) leaves the changes it did make, each one whole: they are
 * handed back in ApplyIncomplete so their messages go out, and the next read completes the rest
 * (bookings are matched by `ref`: nothing is issued twice, nothing is lost).
 */
import type { Pass, PassDoor } from "./pass.js";
import {
  MAX_PASSES,
  type BookingPass,
  LaterReadBegun,
  type PassBook,
  type PassChange,
  type ReadFence,
} from "./pass-book.js";
import { isLive } from "./pass.js";
import type { Booking } from "./calendar.js";

export interface SyncChanges {
  issued: { pass: Pass; code: string }[];
  updated: Pass[];
  revoked: Pass[];
}

/** Why a read was not applied, or only in part: the word of `pass/calendar-failed`'s `reason`. */
export class CalendarRefused extends Error {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
  }
}

export class EmptyFeedRefused extends CalendarRefused {
  constructor(message: string) {
    super(message, "empty-feed");
  }
}

/** The read would take the account past its capacity: nothing was changed. */
export class CapacityRefused extends CalendarRefused {
  constructor(message: string) {
    super(message, "capacity");
  }
}

/** Part of the read was applied before the store failed: `changes` is what was (each change whole). */
export class ApplyIncomplete extends CalendarRefused {
  constructor(
    message: string,
    readonly changes: SyncChanges,
  ) {
    super(message, "store");
  }
}

/**
 * A later read of the calendar began (on this instance or another) while this one was applied:
 * the writes after that were refused, and the later read applies the feed
 * (docs/passes.md#from-a-booking-calendar). `changes` is what this read did write (each whole):
 * its messages go out.
 */
export class ReadSuperseded extends CalendarRefused {
  constructor(readonly changes: SyncChanges) {
    super("a later read of the calendar began: it applies the feed", "superseded");
  }
}

/** Bookings handled in one turn of the event loop. */
const SLICE = 200;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** A change's promise with its outcome handled from the start (never an unhandled rejection). */
function settle<T>(p: Promise<T>): Promise<Settled<T>> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

function sameDoors(a: PassDoor[], b: PassDoor[]): boolean {
  return a.length === b.length && a.every((d, i) => d.deviceId === b[i].deviceId);
}

/** What a read changes, decided before anything is written. */
interface Plan {
  issue: BookingPass[];
  update: { id: string; change: PassChange }[];
  revoke: Pass[];
  /**
   * Passes revoked by hand whose booking moved: they take its dates and stay revoked (no code, no
   * message), since a booking revoked by hand still bounds a cleaner's turnover window
   * (docs/passes.md#between-guests-the-turnover-window).
   */
  follow: { id: string; change: PassChange }[];
}

/**
 * The plan of a read. `doors` null: the node's doors could not be resolved, so nothing is issued
 * and nothing lengthened; a pass whose booking got shorter or moved keeps only the part of its
 * window the booking still has (none left: revoked), with the doors it has.
 */
async function planOf(
  book: PassBook,
  source: string,
  bookings: readonly Booking[],
  doors: PassDoor[] | null,
  now: number,
  /** `issue: false`: no new pass (the node's output reaches nobody: docs/passes.md#no-code-goes-nowhere); changes and revocations still apply. */
  issue: boolean,
  /** Events the feed lists as blocked time (no booking): a feed that lists them is read, not empty. */
  blocked: number,
): Promise<Plan> {
  const all = await book.fromSource(source);
  const mine = all.filter((p) => p.revoked === null);
  // A booking whose pass was revoked by hand (a flow's revoke, the sidebar) gets no new pass while
  // that pass is kept: the owner took the guest's access back, a later read must not give it again.
  const handRevoked = new Map(
    all.filter((p) => p.revoked !== null && p.revokedBy !== "calendar" && p.ref !== null).map((p) => [p.ref!, p]),
  );
  const live = mine.filter((p) => isLive(p, now));
  // A feed that lists only blocked time (Airbnb's, once its last guest cancelled) is a real feed:
  // its cancellations apply (docs/passes.md#blocked-time-and-placeholder-names).
  if (bookings.length === 0 && blocked === 0 && live.length > 0)
    throw new EmptyFeedRefused(
      `the calendar lists no booking while ${live.length} pass${live.length === 1 ? "" : "es"} made from it ${live.length === 1 ? "is" : "are"} live: not applied (a feed gone wrong is not a cancellation of every booking)`,
    );
  const byRef = new Map(mine.filter((p) => p.ref !== null).map((p) => [p.ref!, p]));
  const seen = new Set<string>();
  const plan: Plan = { issue: [], update: [], revoke: [], follow: [] };
  let n = 0;
  for (const b of bookings) {
    if (++n % (SLICE * 10) === 0) await nextTurn();
    if (seen.has(b.ref)) continue;
    seen.add(b.ref);
    const p = byRef.get(b.ref);
    if (p === undefined) {
      const held = handRevoked.get(b.ref);
      if (held !== undefined && (held.from !== b.from || held.until !== b.until))
        plan.follow.push({
          id: held.id,
          change: { guest: held.guest, doors: held.doors, from: b.from, until: b.until },
        });
      if (doors !== null && issue && held === undefined)
        plan.issue.push({
          guest: b.guest,
          doors,
          from: b.from,
          until: b.until,
          uses: null,
          ref: b.ref,
          source,
          ...(b.booking !== undefined ? { booking: b.booking } : {}),
        });
      continue;
    }
    if (doors !== null) {
      if (p.guest !== b.guest || p.from !== b.from || p.until !== b.until || !sameDoors(p.doors, doors))
        plan.update.push({
          id: p.id,
          change: { guest: b.guest, doors, from: b.from, until: b.until, booking: b.booking },
        });
      continue;
    }
    // Doors unknown: only ever narrower.
    const from = Date.parse(b.from) > Date.parse(p.from) ? b.from : p.from;
    const until = Date.parse(b.until) < Date.parse(p.until) ? b.until : p.until;
    if (!(Date.parse(until) > Date.parse(from))) {
      if (isLive(p, now)) plan.revoke.push(p);
    } else if (p.guest !== b.guest || from !== p.from || until !== p.until)
      plan.update.push({ id: p.id, change: { guest: b.guest, doors: p.doors, from, until, booking: b.booking } });
  }
  plan.revoke.push(...live.filter((p) => p.ref === null || !seen.has(p.ref)));
  return plan;
}

export async function applyBookings(
  book: PassBook,
  source: string,
  bookings: readonly Booking[],
  doors: PassDoor[] | null,
  codeLength: number,
  now: number,
  /**
   * `issue: false`: no new pass, as the node's output reaches nobody (docs/passes.md#no-code-goes-nowhere);
   * changes and revocations still apply. `capacity`: the account's (MAX_PASSES). `blocked`: the
   * feed's events skipped as blocked time. `stamp`: the read's (PassBook.readStamp, taken as it
   * began): each write is refused once a later read of this calendar has begun, on any instance
   * (ReadSuperseded).
   */
  opts: { issue?: boolean; capacity?: number; blocked?: number; stamp?: number } = {},
): Promise<SyncChanges> {
  const capacity = opts.capacity ?? MAX_PASSES;
  const fence: ReadFence | undefined = opts.stamp === undefined ? undefined : { source, stamp: opts.stamp };
  const plan = await planOf(book, source, bookings, doors, now, opts.issue !== false, opts.blocked ?? 0);
  if (plan.issue.length > 0) {
    // Counted before anything is written: the passes the account keeps (every source's) and the new ones.
    const kept = (await book.list()).length;
    if (kept + plan.issue.length > capacity)
      throw new CapacityRefused(
        `the calendar would add ${plan.issue.length} passes to the ${kept} the account keeps, more than its ${capacity}: not applied`,
      );
  }
  // Started together: the book writes its file once for many changes (its writes are coalesced).
  // In slices, with a turn of the event loop between: 10,000 bookings never hold Node-RED for long.
  const issuing: Promise<Settled<{ pass: Pass; code: string } | null>>[] = [];
  let n = 0;
  for (const x of plan.issue) {
    if (++n % SLICE === 0) await nextTurn();
    // null: another read (this instance's or another's) issued this booking's pass first.
    issuing.push(settle(book.issueBooking(x, codeLength, fence)));
  }
  const updating = plan.update.map((u) => settle(book.update(u.id, u.change, fence)));
  const revoking = plan.revoke.map((p) => settle(book.revoke({ id: p.id, byCalendar: true, fence })));
  const following = plan.follow.map((u) => settle(book.update(u.id, u.change, fence)));
  const [issued, updated, revoked, followed] = await Promise.all([
    Promise.all(issuing),
    Promise.all(updating),
    Promise.all(revoking),
    Promise.all(following),
  ]);
  const changes: SyncChanges = {
    issued: issued.flatMap((r) => (r.ok && r.value !== null ? [r.value] : [])),
    updated: updated.flatMap((r) => (r.ok && r.value !== null ? [r.value] : [])),
    revoked: revoked.flatMap((r) => (r.ok ? r.value : [])),
  };
  const failed = [...issued, ...updated, ...revoked, ...followed].filter((r) => !r.ok);
  if (failed.length > 0 && failed.every((r) => (r as { error: unknown }).error instanceof LaterReadBegun))
    throw new ReadSuperseded(changes);
  if (failed.length > 0) {
    const first = (failed[0] as { error: unknown }).error;
    throw new ApplyIncomplete(
      `${failed.length} of the read's ${issued.length + updated.length + revoked.length + followed.length} changes could not be stored (${first instanceof Error ? first.message : String(first)}); the others were applied, the rest is tried again at the next read`,
      changes,
    );
  }
  return changes;
}
