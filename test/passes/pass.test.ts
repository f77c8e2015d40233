/**
 * The checks of a door-pass issue request, without a runtime (src/passes/pass.ts;
 * docs/passes.md#issue): a date that does not exist is refused naming its field, and the dates
 * that do exist at the edges of the calendar and the clock are taken as the instants they name;
 * a pass's weekly hours, read on the wall clock of its zone on the nights the clocks change.
 * In a runtime: test/nodes/door-pass.test.ts, test/nodes/door-pass-schedule.test.ts.
 */
import { strict as assert } from "node:assert";
import { type Pass, checkIssue, nextOpen, passCheck, refusalText, withinHours } from "../../src/passes/pass.js";
import { passRefused } from "../../src/unlock/guest-refusal.js";

const base = {
  guest: "Ada",
  doors: [101],
  from: "1999-01-01T00:00:00Z",
  until: "2199-01-01T00:00:00Z",
};

describe("issue: a date that does not exist is invalid input naming its field (docs/passes.md#issue)", () => {
  for (const [field, value] of [
    ["until", "2027-02-30T11:00:00+01:00"],
    ["until", "2027-02-29T11:00:00+01:00"],
    ["until", "2026-04-31T11:00:00+01:00"],
    ["until", "2027-01-01T24:00:00Z"],
    ["until", "2027-01-01T25:00:00Z"],
    ["until", "2027-01-01T10:60:00Z"],
    ["until", "2027-01-01T10:00:60Z"],
    ["until", "2027-01-01T10:00:00+25:00"],
    ["until", "2027-01-01T10:00:00+01:60"],
    ["until", "2027-13-01T10:00:00Z"],
    ["until", "2027-00-10T10:00:00Z"],
    ["from", "2026-12-00T08:00:00Z"],
    ["from", "2026-06-31T08:00:00Z"],
    ["from", "2100-02-29T08:00:00Z"],
  ] as const) {
    it(`${field} ${value}: refused, the problem names ${field} and says the date does not exist`, () => {
      const r = checkIssue({ ...base, [field]: value });
      assert.equal(r.ok, false, `accepted as ${r.ok ? r.request[field] : ""}`);
      if (r.ok) return;
      assert.equal(r.problems.length, 1, r.problems.join("; "));
      assert.match(r.problems[0], new RegExp(`^${field}: `));
      assert.match(r.problems[0], /does not exist/);
    });
  }

  for (const [value, instant] of [
    ["2028-02-29T11:00:00+01:00", "2028-02-29T10:00:00.000Z"],
    ["2000-02-29T00:00:00Z", "2000-02-29T00:00:00.000Z"],
    ["2027-12-31T23:59:59Z", "2027-12-31T23:59:59.000Z"],
    ["2027-06-30T23:59:59.999+02:00", "2027-06-30T21:59:59.999Z"],
    ["2027-06-30T12:00:00.5Z", "2027-06-30T12:00:00.500Z"],
    ["2027-06-30T12:00:00.123456789Z", "2027-06-30T12:00:00.123Z"],
    ["2027-06-30T12:00Z", "2027-06-30T12:00:00.000Z"],
    ["2027-06-30T12:00:00-00:00", "2027-06-30T12:00:00.000Z"],
    ["2027-06-30T12:00:00+14:00", "2027-06-29T22:00:00.000Z"],
    ["2027-06-30T12:00:00-12:00", "2027-07-01T00:00:00.000Z"],
    ["2027-06-30T00:00:00+05:45", "2027-06-29T18:15:00.000Z"],
  ] as const) {
    it(`until ${value} exists: taken as ${instant}`, () => {
      const r = checkIssue({ ...base, until: value });
      assert.ok(r.ok, r.ok ? "" : r.problems.join("; "));
      assert.equal(r.request.until, instant);
    });
  }
});

/** A pass with weekly hours, valid through 2027 (its code and storage do not matter here). */
function hoursPass(schedule: Pass["schedule"], timeZone: string, over: Partial<Pass> = {}): Pass {
  return {
    id: "pass-1",
    guest: "Anna",
    doors: [{ deviceId: 101, door: "Back Door" }],
    from: "2026-01-01T00:00:00.000Z",
    until: "2028-01-01T00:00:00.000Z",
    uses: null,
    used: 0,
    ref: null,
    revoked: null,
    firstUsed: null,
    issued: "2026-01-01T00:00:00.000Z",
    hash: "h",
    schedule,
    timeZone,
    ...over,
  };
}
const at = (s: string) => Date.parse(s);
const ISO_UTC = /\d{4}-\d{2}-\d{2}T|Z\b/;

describe("a pass's weekly hours: open only inside its windows, on its zone's wall clock, the nights the clocks change as the access rules read them (docs/passes.md#issue, docs/access-rules.md#time-zone-and-daylight-saving)", () => {
  it("Oslo, the night the clocks go forward (28 March 2027, 02:00 to 03:00): a Sunday window 02:30-05:00 opens at 03:00 summer time, and is refused before with that time named", () => {
    const p = hoursPass([{ days: [7], from: "02:30", to: "05:00" }], "Europe/Oslo");
    const before = at("2027-03-28T00:59:00Z"); // 01:59 winter time
    assert.equal(withinHours(p, before), false);
    assert.equal(passCheck(p, before, 101), "closed");
    assert.equal(nextOpen(p, before), at("2027-03-28T01:00:00Z"));
    assert.equal(refusalText("closed", p, before), "this code opens on Sunday 03:00");
    assert.equal(passCheck(p, at("2027-03-28T01:00:00Z"), 101), null);
    assert.equal(passCheck(p, at("2027-03-28T02:59:00Z"), 101), null, "04:59 summer time");
    assert.equal(passCheck(p, at("2027-03-28T03:00:00Z"), 101), "closed", "05:00 summer time");
  });

  it("Oslo, the same night: a window wholly inside the skipped hour (02:00-03:00) does not open that night; the refusal names the next Sunday with its date", () => {
    const p = hoursPass([{ days: [7], from: "02:00", to: "03:00" }], "Europe/Oslo");
    const t = at("2027-03-27T12:00:00Z");
    for (let m = at("2027-03-28T00:00:00Z"); m < at("2027-03-28T03:00:00Z"); m += 60_000)
      assert.equal(withinHours(p, m), false, new Date(m).toISOString());
    assert.equal(nextOpen(p, t), at("2027-04-04T00:00:00Z"));
    assert.equal(refusalText("closed", p, t), "this code opens on Sunday 4 April 02:00");
  });

  it("Oslo, the night the clocks go back (31 October 2027, 03:00 to 02:00): a window 02:30-03:00 opens both times 02:30 happens, and between them the refusal names the second", () => {
    const p = hoursPass([{ days: [7], from: "02:30", to: "03:00" }], "Europe/Oslo");
    assert.equal(withinHours(p, at("2027-10-31T00:29:00Z")), false);
    assert.equal(withinHours(p, at("2027-10-31T00:30:00Z")), true, "02:30 summer time");
    assert.equal(withinHours(p, at("2027-10-31T00:59:00Z")), true);
    const between = at("2027-10-31T01:10:00Z"); // 02:10 winter time
    assert.equal(withinHours(p, between), false);
    assert.equal(nextOpen(p, between), at("2027-10-31T01:30:00Z"));
    assert.equal(refusalText("closed", p, between), "this code opens on Sunday 02:30");
    assert.equal(withinHours(p, at("2027-10-31T01:59:00Z")), true, "02:59 winter time");
    assert.equal(withinHours(p, at("2027-10-31T02:00:00Z")), false);
  });

  it("New York, the night the clocks go forward (14 March 2027): a Sunday window 01:00-04:00 lasts two real hours, 06:00Z to 08:00Z", () => {
    const p = hoursPass([{ days: [7], from: "01:00", to: "04:00" }], "America/New_York");
    assert.equal(withinHours(p, at("2027-03-14T05:59:00Z")), false);
    assert.equal(withinHours(p, at("2027-03-14T06:00:00Z")), true);
    assert.equal(withinHours(p, at("2027-03-14T07:59:00Z")), true);
    assert.equal(withinHours(p, at("2027-03-14T08:00:00Z")), false);
    assert.equal(nextOpen(p, at("2027-03-14T08:00:00Z")), at("2027-03-21T05:00:00Z"), "the next Sunday 01:00 EDT");
  });

  it("an overnight window (Monday 22:00-06:00) runs into Tuesday; outside it the next Monday 22:00 is named in the pass's zone, never as ISO UTC", () => {
    const p = hoursPass([{ days: [1], from: "22:00", to: "06:00" }], "Europe/Oslo");
    assert.equal(withinHours(p, at("2026-12-08T04:59:00Z")), true, "Tuesday 05:59 in Oslo");
    const t = at("2026-12-08T05:00:00Z"); // Tuesday 06:00 in Oslo
    assert.equal(passCheck(p, t, 101), "closed");
    const text = refusalText("closed", p, t);
    assert.equal(text, "this code opens on Monday 22:00");
    assert.doesNotMatch(text, ISO_UTC);
  });

  it("a pass not valid yet names its first opening within its window; one whose last window is over says it does not open again", () => {
    const p = hoursPass([{ days: [2], from: "08:00", to: "12:00" }], "Europe/Oslo", {
      from: "2026-12-01T00:00:00.000Z",
      until: "2026-12-16T00:00:00.000Z",
    });
    const early = at("2026-11-20T10:00:00Z");
    assert.equal(passCheck(p, early, 101), "upcoming");
    assert.equal(refusalText("upcoming", p, early), "this pass is not valid yet: it opens on Tuesday 1 December 08:00");
    const last = at("2026-12-15T12:00:00Z"); // after its last Tuesday window, before until
    assert.equal(passCheck(p, last, 101), "closed");
    assert.match(refusalText("closed", p, last), /^this code does not open again before it ends \(Wednesday 01:00\)$/);
  });

  it("the order stays one: revoked, used up, expired and not valid yet come before the hours, the hours before the door", () => {
    const p = hoursPass([{ days: [2], from: "08:00", to: "12:00" }], "UTC");
    const closed = at("2026-12-09T10:00:00Z"); // a Wednesday
    assert.equal(passCheck(p, closed, 102), "closed");
    assert.equal(passCheck({ ...p, revoked: "2026-12-01T00:00:00.000Z" }, closed, 101), "revoked");
    assert.equal(passCheck({ ...p, uses: 1, used: 1 }, closed, 101), "used-up");
    assert.equal(passCheck(p, at("2026-12-08T10:00:00Z"), 102), "door");
  });
});

describe("issue with weekly hours: the access rules' windows and zone, bad values invalid input naming the field (docs/passes.md#issue)", () => {
  const weekly = { ...base, from: "2026-12-01T00:00:00Z", until: "2027-03-01T00:00:00Z" };
  for (const [what, extra, field] of [
    ["a schedule that is not a list", { schedule: "Tuesdays" }, "schedule"],
    ["a day 8", { schedule: [{ days: [8], from: "08:00", to: "12:00" }] }, "schedule"],
    ["no days", { schedule: [{ days: [], from: "08:00", to: "12:00" }] }, "schedule"],
    ["from 8:00", { schedule: [{ days: [2], from: "8:00", to: "12:00" }] }, "schedule"],
    ["to 25:00", { schedule: [{ days: [2], from: "08:00", to: "25:00" }] }, "schedule"],
    ["a window without length", { schedule: [{ days: [2], from: "08:00", to: "08:00" }] }, "schedule"],
    [
      "a zone that is none",
      { schedule: [{ days: [2], from: "08:00", to: "12:00" }], timeZone: "Mars/Olympus" },
      "timeZone",
    ],
    ["a zone as a number", { timeZone: 1 }, "timeZone"],
    [
      "windows none of which falls between from and until",
      {
        schedule: [{ days: [2], from: "08:00", to: "12:00" }],
        from: "2026-12-02T00:00:00Z",
        until: "2026-12-07T00:00:00Z",
      },
      "schedule",
    ],
  ] as const) {
    it(`${what}: refused, the problem names ${field}`, () => {
      const r = checkIssue({ ...weekly, ...extra });
      assert.equal(r.ok, false, "accepted");
      if (r.ok) return;
      assert.ok(r.problems.length >= 1);
      for (const p of r.problems) assert.match(p, new RegExp(`^${field}: `));
    });
  }

  it("a good schedule is kept as the access rules read it: days sorted once each, the zone under Node.js's name; [] or none is no schedule", () => {
    const r = checkIssue({
      ...weekly,
      schedule: [{ days: [4, 2, 2], from: "07:00", to: "12:00" }],
      timeZone: "europe/oslo",
    });
    assert.ok(r.ok, r.ok ? "" : r.problems.join("; "));
    assert.deepEqual(r.request.schedule, [{ days: [2, 4], from: "07:00", to: "12:00" }]);
    assert.equal(r.request.timeZone, "Europe/Oslo");
    for (const none of [undefined, null, []]) {
      const n = checkIssue({ ...weekly, schedule: none });
      assert.ok(n.ok);
      assert.equal(n.request.schedule, null);
    }
  });
});

describe("what a guest is told of a refused pass: its times as local time in the pass's own zone, else the node's, never ISO UTC (docs/passes.md#at-a-door-unlock)", () => {
  const pass = {
    id: "pass-1",
    guest: "Ada",
    doors: [{ deviceId: 101, door: "Front Door" }],
    from: "2026-12-01T14:00:00.000Z",
    until: "2026-12-05T10:00:00.000Z",
    uses: null,
    used: 0,
    ref: null,
    revoked: null,
    firstUsed: null,
    issued: "2026-11-01T00:00:00.000Z",
    hash: "0",
  };

  it("the node's zone: 'expired on Saturday 5 December 11:00 (Europe/Oslo)', and passRefusal { why, at, timeZone }", () => {
    assert.equal(
      refusalText("expired", pass, Date.parse(pass.from), "Europe/Oslo"),
      "this pass expired on Saturday 5 December 11:00 (Europe/Oslo)",
    );
    assert.equal(
      refusalText("upcoming", pass, Date.parse(pass.from) - 1, "Europe/Oslo"),
      "this pass is not valid yet: it opens on Tuesday 1 December 15:00 (Europe/Oslo)",
    );
    assert.deepEqual(passRefused("expired", pass, "Europe/Oslo", Date.parse(pass.until)), {
      why: "expired",
      at: pass.until,
      timeZone: "Europe/Oslo",
    });
    assert.deepEqual(passRefused("upcoming", pass, "Europe/Oslo", Date.parse(pass.from) - 1), {
      why: "not-yet",
      at: pass.from,
      timeZone: "Europe/Oslo",
    });
  });

  it("a pass with a zone of its own is read in it, in the words and in the data", () => {
    const own = { ...pass, timeZone: "Asia/Tokyo" };
    assert.equal(
      refusalText("expired", own, Date.parse(pass.from), "Europe/Oslo"),
      "this pass expired on Saturday 5 December 19:00 (Asia/Tokyo)",
    );
    assert.equal(passRefused("expired", own, "Europe/Oslo", Date.parse(pass.until)).timeZone, "Asia/Tokyo");
  });

  it("a pass with weekly hours: passRefusal's at is when it opens, as its words say: not valid yet, its first window; outside its hours, its next window; none left, no at (docs/passes.md#at-a-door-unlock)", () => {
    // Tuesday 1 December 2026; windows Tuesdays 07:00-12:00 in Berlin (06:00-11:00 UTC).
    const hours = { schedule: [{ days: [2], from: "07:00", to: "12:00" }], timeZone: "Europe/Berlin" };
    const weekly = { ...pass, ...hours, until: "2026-12-31T00:00:00.000Z" };
    assert.deepEqual(passRefused("upcoming", weekly, "UTC", Date.parse(pass.from) - 1), {
      why: "not-yet",
      at: "2026-12-08T06:00:00.000Z",
      timeZone: "Europe/Berlin",
    });
    assert.deepEqual(passRefused("closed", weekly, "UTC", Date.parse("2026-12-02T12:00:00Z")), {
      why: "closed",
      at: "2026-12-08T06:00:00.000Z",
      timeZone: "Europe/Berlin",
    });
    assert.equal(passRefused("closed", { ...pass, ...hours }, "UTC", Date.parse("2026-12-02T12:00:00Z")).at, undefined);
  });

  it("outside its weekly hours or turnover windows: passRefusal { why: 'closed', at: when it opens next }, without at when it does not open again (docs/passes.md#at-a-door-unlock)", () => {
    const tuesdays = {
      ...pass,
      until: "2026-12-31T00:00:00.000Z",
      schedule: [{ days: [2], from: "07:00", to: "12:00" }],
      timeZone: "Europe/Oslo",
    };
    const wednesday = Date.parse("2026-12-02T12:00:00Z");
    assert.deepEqual(passRefused("closed", tuesdays, "UTC", wednesday), {
      why: "closed",
      at: "2026-12-08T06:00:00.000Z",
      timeZone: "Europe/Oslo",
    });
    const cleaner = { ...pass, turnover: "cal" };
    const stays = [{ ...pass, id: "b", source: "cal", from: "2026-12-02T00:00:00Z", until: "2026-12-03T10:00:00Z" }];
    assert.deepEqual(passRefused("closed", cleaner, "UTC", wednesday, { bookingsOf: () => stays }), {
      why: "closed",
      at: "2026-12-03T10:00:00.000Z",
      timeZone: "UTC",
    });
    assert.deepEqual(passRefused("closed", cleaner, "UTC", wednesday, { bookingsOf: () => [] }), {
      why: "closed",
      timeZone: "UTC",
    });
  });
});

describe("a turnover pass: open only between a check-out and the next check-in of its calendar's bookings on its doors (docs/passes.md#between-guests-the-turnover-window)", () => {
  const H = 3600_000;
  const T0 = Date.parse("2027-03-10T12:00:00Z");
  const at = (h: number) => new Date(T0 + h * H).toISOString();
  const pass = (extra: Partial<Pass> = {}): Pass => ({
    id: "p1",
    guest: "Anna (cleaner)",
    doors: [{ deviceId: 101, door: null }],
    from: at(-1000),
    until: at(1000),
    uses: null,
    used: 0,
    ref: null,
    revoked: null,
    firstUsed: null,
    issued: at(-1000),
    hash: "x",
    timeZone: "UTC",
    turnover: "cal",
    ...extra,
  });
  const stay = (id: string, from: number, until: number, extra: Partial<Pass> = {}): Pass =>
    pass({ id, from: at(from), until: at(until), source: "cal", turnover: undefined, ...extra });
  const book = (...stays: Pass[]) => ({
    bookingsOf: (s: string) => stays.filter((b) => b.source === s),
    calendarsOn: () => new Set(stays.map((b) => b.source!)),
  });

  it("between a check-out and the next check-in it opens; inside a stay, before the first check-out, or with no booking at all it is closed", () => {
    const b = book(stay("a", -48, -2), stay("b", 5, 30));
    assert.equal(passCheck(pass(), T0, 101, b), null);
    assert.equal(passCheck(pass(), T0 + 6 * H, 101, b), "closed", "b's stay under way");
    assert.equal(passCheck(pass(), T0 - 10 * H, 101, b), "closed", "a's stay under way");
    assert.equal(passCheck(pass(), T0 - 100 * H, 101, b), "closed", "no check-out yet");
    assert.equal(passCheck(pass(), T0, 101, book()), "closed", "no booking");
    assert.equal(passCheck(pass(), T0, 101), "closed", "no bookings to read: closed, never wider");
  });

  it("a booking revoked by its calendar (cancelled, gone, its node deleted) bounds nothing; one revoked by hand stays a booking; a booking on other doors bounds nothing", () => {
    const cancelled = stay("b", -1, 30, { revoked: at(-3), revokedBy: "calendar" });
    assert.equal(passCheck(pass(), T0, 101, book(stay("a", -48, -2), cancelled)), null);
    const byHand = stay("b", -1, 30, { revoked: at(-3) });
    assert.equal(passCheck(pass(), T0, 101, book(stay("a", -48, -2), byHand)), "closed");
    const otherDoor = stay("b", -1, 30, { doors: [{ deviceId: 102, door: null }] });
    assert.equal(passCheck(pass(), T0, 101, book(stay("a", -48, -2), otherDoor)), null);
  });

  // docs/passes.md#between-guests-the-turnover-window: a listing on two platforms, one door-pass each
  it("a stay of another calendar on the pass's doors closes the cleaner's door too (the other platform's guest is only blocked time in this calendar's feed); its check-out opens it", () => {
    const airbnb = stay("a", -48, -2);
    const bookingCom = stay("x", -1, 30, { source: "booking-com" });
    assert.equal(
      passCheck(pass(), T0, 101, book(airbnb, bookingCom)),
      "closed",
      "the other platform's guest is staying",
    );
    assert.equal(passCheck(pass(), T0 + 31 * H, 101, book(airbnb, bookingCom)), null, "after that guest's check-out");
    assert.equal(passCheck(pass(), T0, 101, book(stay("x", -48, -2, { source: "booking-com" }))), null);
    const elsewhere = stay("x", -1, 30, { source: "booking-com", doors: [{ deviceId: 102, door: null }] });
    assert.equal(passCheck(pass(), T0, 101, book(airbnb, elsewhere)), null, "another calendar's stay on other doors");
  });

  it("a check-out with no check-in after it opens for 30 days at most; the pass's own dates and weekly hours still bound it", () => {
    const b = book(stay("a", -48, -2));
    assert.equal(passCheck(pass(), T0 + 29 * 24 * H, 101, b), null);
    assert.equal(passCheck(pass(), T0 + 30 * 24 * H, 101, b), "closed");
    assert.equal(passCheck(pass({ until: at(-1) }), T0, 101, b), "expired");
    const tuesdays = pass({ schedule: [{ days: [2], from: "08:00", to: "12:00" }] }); // T0 is a Wednesday
    assert.equal(passCheck(tuesdays, T0, 101, b), "closed");
  });

  it("a refusal names the next turnover window in the pass's zone: the next check-out to the check-in after it, inside its weekly hours", () => {
    const b = book(stay("a", -10, 2), stay("b", 50, 70));
    assert.equal(
      refusalText("closed", pass(), T0, undefined, b),
      "this code opens only between a check-out and the next check-in: next from Wednesday 14:00 to Friday 14:00",
    );
    assert.equal(nextOpen(pass(), T0, b), T0 + 2 * H);
    const mornings = pass({ schedule: [{ days: [4], from: "08:00", to: "12:00" }] });
    assert.equal(
      nextOpen(mornings, T0, b),
      Date.parse("2027-03-11T08:00:00Z"),
      "Thursday 08:00 UTC, inside the window",
    );
    assert.equal(
      refusalText("closed", pass({ until: at(1) }), T0, undefined, b),
      "this code opens only between a check-out and the next check-in, and none is booked before it ends (Wednesday 13:00)",
    );
  });
});
