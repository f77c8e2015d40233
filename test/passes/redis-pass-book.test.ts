/**
 * The pass book on a real redis-server, two books standing for two instances (each its own
 * connection): what a booking calendar's changes (update, revoke, fromSource) do across instances
 * (docs/passes.md#where-passes-are-kept).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { RedisPassBook } from "../../src/passes/redis-pass-book.js";
import { ISSUE, PUT } from "../../src/passes/redis-pass-scripts.js";
import type { PassBook, PassTicket } from "../../src/passes/pass-book.js";
import { FilePassBook } from "../../src/passes/file-pass-book.js";
import { passRefusal } from "../../src/unlock/pass-check.js";
import { applyBookings } from "../../src/passes/calendar-sync.js";
import { olderReadAfterNewer } from "../helpers/calendar-race.js";
import { RedisTokenStore } from "../../src/session/redis-store.js";
import { StoreUnreachableError } from "../../src/session/errors.js";
import { RedisServer } from "../helpers/redis.js";
import { needProgram } from "../helpers/programs.js";

const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe("the pass book on the account's Redis store: changes on one instance are those every instance checks (docs/passes.md#where-passes-are-kept)", function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let stores: RedisTokenStore[] = [];

  before(async function () {
    needProgram(this, "redis-server");
    redis = await RedisServer.start();
  });
  after(async () => {
    await redis?.stop();
  });
  afterEach(async () => {
    await Promise.all(stores.map((s) => s.close()));
    stores = [];
    await redis.stop(); // no persistence: the next test starts empty
    await redis.resume();
  });

  /** An instance; `beforeFirstWrite` runs before its first change is written (after it has read the pass). */
  function instance(beforeFirstWrite?: () => Promise<unknown>, clock: () => number = Date.now): RedisPassBook {
    const store = new RedisTokenStore({ url: redis.url, accountKey: "acct-1", secret: "pw" });
    stores.push(store);
    let held = beforeFirstWrite;
    const commands = Object.assign(Object.create(store) as RedisTokenStore, {
      async command<T>(args: string[]): Promise<T> {
        if (held && args[0] === "EVAL" && args[1] === PUT) {
          const h = held;
          held = undefined;
          await h();
        }
        return store.command<T>(args);
      },
    });
    return new RedisPassBook(commands, clock, (m) => assert.fail(m));
  }
  /**
   * An instance on which Redis goes away just after a change of a pass is stored (after the
   * script's answer, before the read that follows it), once armed: every later command fails as
   * an unreachable store until `back()`.
   */
  function goingAwayAfterWrite(): { book: RedisPassBook; arm: () => void; back: () => void } {
    const store = new RedisTokenStore({ url: redis.url, accountKey: "acct-1", secret: "pw" });
    stores.push(store);
    let armed = false;
    let away = false;
    const commands = Object.assign(Object.create(store) as RedisTokenStore, {
      async command<T>(args: string[]): Promise<T> {
        if (away) throw new StoreUnreachableError("the Redis session store cannot be reached (gone after the write)");
        const r = await store.command<T>(args);
        // ISSUE and PUT: the scripts that store a pass.
        if (armed && args[0] === "EVAL" && (args[1] === ISSUE || args[1] === PUT)) away = true;
        return r;
      },
    });
    const book = new RedisPassBook(commands, Date.now, (m) => assert.fail(m));
    return { book, arm: () => (armed = true), back: () => ((away = false), (armed = false)) };
  }

  const now = Date.now();
  const newPass = (source?: string) => ({
    guest: "Ada",
    doors: [{ deviceId: 101, door: "Front Door" }],
    from: iso(now - HOUR),
    until: iso(now + HOUR),
    uses: null,
    ref: "b-1",
    ...(source ? { source } : {}),
  });

  it("a pass moved to another door on one instance: the other, which checked it before, no longer opens the old door", async () => {
    const [x, y] = [instance(), instance()];
    const { pass, code } = await x.issue(newPass(), 8);
    await y.refresh();
    const seen = y.find(code)!;
    const ticket = y.reserve(seen, 101)!; // y's check passed with the pass as it was
    await x.update(pass.id, { ...newPass(), doors: [{ deviceId: 102, door: "Back Door" }] });
    await assert.rejects(ticket.commit(), /not for this door/);
    await y.refresh();
    assert.deepEqual(
      y.find(code)!.doors.map((d) => d.deviceId),
      [102],
    );
    const t2 = y.reserve(y.find(code)!, 102)!;
    assert.deepEqual(await t2.commit(), { first: true });
  });

  it("a cleaner's turnover pass on two instances: a booking moved onto now on one closes it on the other at once, also for a message checked before the move; cancelled, it opens again (docs/passes.md#between-guests-the-turnover-window)", async () => {
    const [x, y] = [instance(), instance()];
    const stay = (ref: string, from: number, until: number) => ({
      ...newPass(),
      source: "cal",
      guest: `guest ${ref}`,
      ref,
      from: iso(from),
      until: iso(until),
    });
    await x.issueBooking(stay("a", now - 50 * HOUR, now - 2 * HOUR), 8);
    const b = await x.issueBooking(stay("b", now + 5 * HOUR, now + 30 * HOUR), 8);
    const { code } = await x.issue(
      { ...newPass(), guest: "Anna (cleaner)", ref: "cleaner", until: iso(now + 60 * HOUR), turnover: "cal" },
      8,
    );
    await y.refresh();
    const ticket = y.reserve(y.find(code)!, 101)!; // y's check passed: between a's check-out and b's check-in
    assert.equal(passRefusal(y.find(code)!, 101, Date.now(), "UTC", y), null);
    await x.update(b!.pass.id, { ...stay("b", now - HOUR, now + 30 * HOUR) }); // b moved to begin an hour ago
    await assert.rejects(ticket.commit(), /opens only between a check-out and the next check-in/);
    await y.refresh();
    assert.match(passRefusal(y.find(code)!, 101, Date.now(), "UTC", y)!, /next from/);
    await x.revoke({ id: b!.pass.id, byCalendar: true }); // b cancelled
    await y.refresh();
    assert.equal(passRefusal(y.find(code)!, 101, Date.now(), "UTC", y), null);
    assert.deepEqual(await y.reserve(y.find(code)!, 101)!.commit(), { first: true });
  });

  it("a stay of another calendar moved onto the cleaner's door on one instance closes the turnover window on the other at once, also for a message checked before the move; moved off again, it opens (docs/passes.md#between-guests-the-turnover-window)", async () => {
    const [x, y] = [instance(), instance()];
    const back = [{ deviceId: 102, door: "Back Door" }];
    await x.issueBooking(
      { ...newPass(), source: "cal", ref: "a", from: iso(now - 50 * HOUR), until: iso(now - 2 * HOUR) },
      8,
    );
    // Another platform's calendar of the listing: a guest staying now, on the back door only.
    const other = {
      ...newPass(),
      source: "cal-2",
      ref: "z",
      guest: "guest z",
      doors: back,
      until: iso(now + 30 * HOUR),
    };
    const z = await x.issueBooking(other, 8);
    const { code } = await x.issue(
      { ...newPass(), guest: "Anna (cleaner)", ref: "cleaner", until: iso(now + 60 * HOUR), turnover: "cal" },
      8,
    );
    await y.refresh();
    assert.equal(passRefusal(y.find(code)!, 101, Date.now(), "UTC", y), null, "z stays behind another door");
    const ticket = y.reserve(y.find(code)!, 101)!; // y's check passed before the move
    await x.update(z!.pass.id, { ...other, doors: [...back, { deviceId: 101, door: "Front Door" }] });
    await assert.rejects(ticket.commit(), /opens only between a check-out and the next check-in/);
    await y.refresh();
    assert.match(passRefusal(y.find(code)!, 101, Date.now(), "UTC", y)!, /check-out/);
    await x.update(z!.pass.id, other); // back to the back door only
    await y.refresh();
    assert.equal(passRefusal(y.find(code)!, 101, Date.now(), "UTC", y), null);
    assert.deepEqual(await y.reserve(y.find(code)!, 101)!.commit(), { first: true });
  });

  it("a revoke and an update of one pass at once on two instances: neither is lost, the code stays", async () => {
    // Forced: y has read the pass when x revokes it; only then does y write its update.
    let revoked: Awaited<ReturnType<RedisPassBook["revoke"]>> = [];
    const x = instance();
    const y = instance(async () => (revoked = await x.revoke({ ref: "b-1" })));
    const { pass, code } = await x.issue(newPass("cal-1"), 8);
    const updated = await y.update(pass.id, { ...newPass(), guest: "Ada Lovelace" });
    assert.equal(revoked.length, 1);
    assert.ok(updated);
    const [onX] = await x.fromSource("cal-1");
    const [onY] = await y.fromSource("cal-1");
    for (const p of [onX, onY]) {
      assert.equal(p.guest, "Ada Lovelace");
      assert.notEqual(p.revoked, null);
      assert.equal(p.hash, pass.hash);
    }
    await y.refresh();
    assert.equal(y.find(code)!.id, pass.id);
  });

  // docs/passes.md#from-a-booking-calendar: what was stored is sent (a new pass's code once)
  it("a booking's pass stored just before Redis goes away (the read after the write fails): its code is returned all the same, and the booking is never issued a second pass", async () => {
    const { book: x, arm, back } = goingAwayAfterWrite();
    await x.refresh();
    arm();
    const got = await x.issueBooking({ ...newPass("cal-1"), source: "cal-1", ref: "b-1" }, 8);
    assert.ok(got, "the pass stored: its code handed back");
    assert.match(got.code, /^\d{8}$/);
    back();
    const y = instance();
    await y.refresh();
    assert.equal(y.find(got.code)?.id, got.pass.id, "the code returned is the stored pass's");
    assert.equal(
      await y.issueBooking({ ...newPass("cal-1"), source: "cal-1", ref: "b-1" }, 8),
      null,
      "the booking's stored pass is never issued again: that code was the only one",
    );
    // A pass issued by a flow alike.
    arm();
    const plain = await x.issue(newPass(), 8);
    back();
    await y.refresh();
    assert.equal(y.find(plain.code)?.id, plain.pass.id);
  });

  // docs/passes.md#from-a-booking-calendar: what was stored is told as events (updated, revoked)
  it("a change stored just before Redis goes away (the read after the write fails): update and revoke answer the change they stored, so its message goes out", async () => {
    const { book: x, arm, back } = goingAwayAfterWrite();
    const { pass } = await x.issue(newPass("cal-1"), 8);
    arm();
    const updated = await x.update(pass.id, { ...newPass(), guest: "Ada Lovelace", until: iso(now + 2 * HOUR) });
    assert.equal(updated?.guest, "Ada Lovelace", "the update stored is the one answered");
    assert.equal(updated?.until, iso(now + 2 * HOUR));
    back();
    arm();
    const revoked = await x.revoke({ id: pass.id, byCalendar: true });
    back();
    assert.deepEqual(
      revoked.map((p) => [p.id, p.guest, p.revoked !== null]),
      [[pass.id, "Ada Lovelace", true]],
      "the revoke stored is the one answered, over the update",
    );
    const [kept] = await instance().fromSource("cal-1");
    assert.equal(kept.guest, "Ada Lovelace");
    assert.notEqual(kept.revoked, null);
  });

  /** Holds each book's read of its calendar's passes until every book has read them: their reads overlap. */
  function overlapping(books: RedisPassBook[]): void {
    let waiting = books.length;
    let open!: () => void;
    const all = new Promise<void>((r) => (open = r));
    for (const b of books) {
      const read = b.fromSource.bind(b);
      b.fromSource = async (source: string) => {
        const got = await read(source);
        if (--waiting === 0) open();
        await all;
        return got;
      };
    }
  }

  // docs/passes.md#from-a-booking-calendar: one pass per booking, whatever the number of instances
  it("two instances reading one calendar at once: one pass per booking, one code sent in all; a moved booking leaves no pass with the old window", async () => {
    const doors = [{ deviceId: 101, door: "Front Door" }];
    const bookings = (extra: number) =>
      Array.from({ length: 40 }, (_, i) => ({
        ref: `bk-${i}`,
        guest: `Guest ${i}`,
        from: iso(now + i * HOUR),
        until: iso(now + (i + 24 + extra) * HOUR),
      }));
    const [x, y] = [instance(), instance()];
    overlapping([x, y]);
    const reads = await Promise.all([x, y].map((b) => applyBookings(b, "cal-1", bookings(0), doors, 8, now)));
    const sent = reads.flatMap((r) => r.issued.map((i) => i.pass.ref));
    assert.equal(sent.length, 40, "one code sent per booking across both instances");
    assert.equal(new Set(sent).size, 40);
    const liveOf = async () => (await x.list()).filter((p) => p.state === "active" || p.state === "upcoming");
    assert.equal((await liveOf()).length, 40, "one live pass per booking");

    // Every booking moved a day later, read by both at once.
    const [x2, y2] = [instance(), instance()];
    overlapping([x2, y2]);
    const again = await Promise.all([x2, y2].map((b) => applyBookings(b, "cal-1", bookings(24), doors, 8, now)));
    assert.equal(again.flatMap((r) => r.issued).length, 0, "a moved booking gets no new code");
    const live = await liveOf();
    assert.equal(live.length, 40);
    for (const b of bookings(24))
      assert.deepEqual(
        live.filter((p) => p.ref === b.ref).map((p) => p.until),
        [b.until],
        `${b.ref}: one live pass, with the new window`,
      );
  });

  // docs/passes.md#from-a-booking-calendar: the newest read wins, on every instance
  it("an older read of a calendar writes nothing once a newer read has begun on another instance: the newer read's cancellation and move stay, and the cancelled booking gets no code", async () => {
    await olderReadAfterNewer(instance(), instance());
  });

  // docs/passes.md#where-passes-are-kept: a booking's pass kept before `pass-bookings` existed is found
  it("a booking's pass kept before the bookings index existed (an older version's Redis data): a read issues it no second pass", async () => {
    const x = instance();
    const { pass } = await x.issue(newPass("cal-1"), 8);
    await stores[0].command(["DEL", stores[0].keyOf("pass-bookings")]);
    const y = instance();
    assert.equal(await y.issueBooking({ ...newPass("cal-1"), source: "cal-1", ref: "b-1" }, 8), null);
    await x.revoke({ id: pass.id, byCalendar: true });
    const again = await y.issueBooking({ ...newPass("cal-1"), source: "cal-1", ref: "b-1" }, 8);
    assert.ok(again, "once revoked by its calendar, the booking listed again gets a new pass");
    assert.notEqual(again.pass.id, pass.id);
  });

  // docs/passes.md#at-a-door-unlock: one order of the reasons, at the check and in either book's store
  it("a pass is refused for the same reason at the check and by either book's store, in one order (revoked, used up, expired, not yet valid, outside its weekly hours, not for this door): generated cases on the file book and on Redis", async function () {
    this.timeout(300_000);
    const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pass-order-"));
    let now = Date.now();
    const clock = () => now;
    const file = new FilePassBook(path.join(dir, "passes.json"), path.join(dir, "pass-key"), clock, (m) =>
      assert.fail(m),
    );
    // x checks and sends; y is another instance on the same Redis store.
    const [x, y] = [instance(undefined, clock), instance(undefined, clock)];
    const from = Math.ceil((Date.now() + HOUR) / 60_000) * 60_000;
    const until = from + 10 * 60_000;
    const times = {
      "before from": from - 1,
      "at from": from,
      inside: from + 5 * 60_000,
      "before until": until - 1,
      "at until": until,
      "after until": until + 1,
    };
    const caseArb = fc.record({
      revoked: fc.boolean(),
      uses: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
      usedUp: fc.boolean(),
      wrongDoor: fc.boolean(),
      at: fc.constantFrom(...(Object.keys(times) as (keyof typeof times)[])),
      hours: fc.constantFrom("none", "all week", "elsewhere"),
    });
    // Weekly hours (docs/passes.md#issue): all week opens at every time above; "elsewhere" is the
    // one minute (UTC) in which the uses are taken, and opens at none of the times above.
    const hhmm = (ms: number) => iso(ms).slice(11, 16);
    const useAt = from + 2 * 60_000;
    const weekday = ((new Date(useAt).getUTCDay() + 6) % 7) + 1;
    const hours = {
      none: {},
      "all week": { schedule: [{ days: [1, 2, 3, 4, 5, 6, 7], from: "00:00", to: "00:00" }], timeZone: "UTC" },
      elsewhere: { schedule: [{ days: [weekday], from: hhmm(useAt), to: hhmm(useAt + 60_000) }], timeZone: "UTC" },
    };
    /** What a message with the code is told at the check, and (with a use taken before) by the store when it would send. */
    async function answers(
      book: PassBook,
      other: PassBook,
      c: {
        revoked: boolean;
        uses: number | null;
        usedUp: boolean;
        wrongDoor: boolean;
        at: keyof typeof times;
        hours: keyof typeof hours;
      },
      ticketFirst: boolean,
    ): Promise<{ check: string | null; store: string | null | undefined }> {
      now = useAt + 1;
      const door = c.wrongDoor ? 102 : 101;
      const { pass, code } = await book.issue(
        {
          guest: "Ada",
          doors: [{ deviceId: 101, door: "Front Door" }],
          from: iso(from),
          until: iso(until),
          uses: c.uses,
          ref: null,
          ...hours[c.hours],
        },
        8,
      );
      let ticket: PassTicket | null = ticketFirst ? book.reserve(pass, door) : null;
      const uses = c.uses === null ? (c.usedUp ? 2 : 0) : c.usedUp ? c.uses : c.uses - 1;
      await other.refresh();
      for (let i = 0; i < uses; i++) await other.reserve(other.find(code)!, 101)!.commit();
      if (!ticketFirst) ticket = book.reserve(book.find(code)!, door);
      if (c.revoked) await other.revoke({ id: pass.id });
      now = times[c.at];
      await book.list(); // the pass and its uses as every instance sees them now
      const check = passRefusal(book.find(code)!, door, now, undefined, book);
      let store: string | null | undefined;
      if (ticket !== null)
        store = await ticket.commit().then(
          () => null,
          (e: Error) => e.message,
        );
      return { check, store };
    }
    try {
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const onFile = await answers(file, file, c, false);
          const onRedis = await answers(x, y, c, true);
          assert.equal(onRedis.check, onFile.check, "the check, on Redis and on the file");
          assert.equal(onRedis.store, onRedis.check, "Redis's script says what the check says");
          if (onFile.store !== undefined)
            assert.equal(onFile.store, onFile.check, "the file book says what the check says");
        }),
        { numRuns: RUNS },
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
