/**
 * The race of two reads of one booking calendar (docs/passes.md#from-a-booking-calendar), forced:
 * the older read has planned its changes and is about to write its first one when a newer read
 * (of a feed in which a booking was cancelled and another moved again) begins and is applied in
 * full. The older read's writes must then all be refused, so its older answer undoes nothing.
 */
import { strict as assert } from "node:assert";
import { type PassBook } from "../../src/passes/pass-book.js";
import { ReadSuperseded, applyBookings } from "../../src/passes/calendar-sync.js";
import type { Booking } from "../../src/passes/calendar.js";

const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A book whose first calendar write (issueBooking, update or revoke) waits for `before()` to end;
 * every other call goes straight to `book`.
 */
export function firstWriteWaits(book: PassBook, before: () => Promise<unknown>): PassBook {
  let hook: (() => Promise<unknown>) | undefined = before;
  const once = async () => {
    const h = hook;
    hook = undefined;
    if (h) await h();
  };
  return new Proxy(book, {
    get(target, key) {
      const v = Reflect.get(target, key, target) as unknown;
      if (typeof v !== "function") return v;
      if (key === "issueBooking" || key === "update" || key === "revoke")
        return async (...args: unknown[]) => {
          await once();
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      return (v as (...a: unknown[]) => unknown).bind(target);
    },
  });
}

/**
 * `older` and `newer` are two books on one store (two instances on one Redis), or one book twice
 * (one runtime: a redeploy's new node beside the old one's read). Asserts the rule.
 */
export async function olderReadAfterNewer(older: PassBook, newer: PassBook): Promise<void> {
  const now = Date.now();
  const doors = [{ deviceId: 101, door: "Front Door" }];
  const at = (ref: string, fromH: number, untilH: number): Booking => ({
    ref,
    guest: `Guest ${ref}`,
    from: iso(now + fromH * HOUR),
    until: iso(now + untilH * HOUR),
  });
  await applyBookings(newer, "cal-1", [at("keep", 0, 24), at("move", 0, 24)], doors, 8, now);
  // The older read's feed: "late" booked, "move" lengthened to 48 h. The newer one's, fetched
  // after: "late" cancelled again, "move" at 36 h.
  const olderFeed = [at("keep", 0, 24), at("move", 0, 48), at("late", 2, 30)];
  const newerFeed = [at("keep", 0, 24), at("move", 0, 36)];
  let newerChanges: Awaited<ReturnType<typeof applyBookings>> | null = null;
  const olderStamp = await older.readStamp("cal-1");
  const racing = firstWriteWaits(older, async () => {
    const stamp = await newer.readStamp("cal-1");
    newerChanges = await applyBookings(newer, "cal-1", newerFeed, doors, 8, now, { stamp });
  });
  const outcome = await applyBookings(racing, "cal-1", olderFeed, doors, 8, now, { stamp: olderStamp }).then(
    (c) => c,
    (e: unknown) => e,
  );
  assert.ok(newerChanges !== null, "the newer read ran while the older one was about to write");
  assert.ok(outcome instanceof ReadSuperseded, `the older read is superseded, not applied: ${String(outcome)}`);
  assert.deepEqual(
    outcome.changes,
    { issued: [], updated: [], revoked: [] },
    "nothing of the older read was written after the newer one began: no code for the cancelled booking",
  );
  const passes = await newer.list();
  assert.deepEqual(
    passes.filter((p) => p.ref === "late"),
    [],
    "the booking cancelled before it was applied never got a pass",
  );
  const live = passes.filter((p) => p.state === "active" || p.state === "upcoming");
  assert.deepEqual(live.map((p) => p.ref).sort(), ["keep", "move"]);
  assert.equal(
    live.find((p) => p.ref === "move")!.until,
    newerFeed[1].until,
    "the moved booking keeps the newer window",
  );
}
