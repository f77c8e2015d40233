/**
 * A door-pass node's booking calendar in a real Node-RED runtime, with the simulator and a feed
 * served on loopback (docs/passes.md#from-a-booking-calendar): a new booking issues a pass whose
 * code goes out once; changed dates update it (same code); a cancelled or removed booking revokes
 * it; a feed that fails or suddenly lists nothing changes nothing; an unchanged feed is answered
 * 304 (If-None-Match); a large feed is applied.
 */
import { strict as assert } from "node:assert";
import { promises as fsp } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { MAX_PASSES } from "../../src/passes/pass-book.js";
import { forgetPassBooks } from "../../src/passes/file-pass-book.js";
import type { PassCommands } from "../../src/passes/redis-pass-book.js";
import { ISSUE } from "../../src/passes/redis-pass-scripts.js";
import {
  ALL_NODES,
  accountOf,
  deployFlows,
  assertAccepted,
  assertFailed,
  catchModule,
  catchNode,
  doorEventsNode,
  doorPassNode,
  eventsModule,
  helper,
  helperNodes,
  lastStatus,
  loadFlow,
  passModule,
  startSim,
  tab,
  teardown,
  unlock,
  unlockNode,
  unlockPuts,
  until,
  waitReady,
} from "../helpers/flow.js";
import { received } from "../helpers/odd-messages.js";
import { platformFeed } from "../helpers/calendar-fixtures.js";
import { needProgram } from "../helpers/programs.js";
import { RedisServer } from "../helpers/redis.js";
import { connect } from "node:net";
import { untilCount } from "../helpers/until.js";

const DAY = 24 * 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** A date N days from today (UTC), as iCalendar writes a date. */
function date(days: number): string {
  return new Date(Date.now() + days * DAY).toISOString().slice(0, 10).replace(/-/g, "");
}

function booking(uid: string, guest: string, fromDays: number, toDays: number, extra: string[] = []): string {
  return [
    "BEGIN:VEVENT",
    `UID:${uid}`,
    `SUMMARY:${guest}`,
    `DTSTART;VALUE=DATE:${date(fromDays)}`,
    `DTEND;VALUE=DATE:${date(toDays)}`,
    ...extra,
    "END:VEVENT",
  ].join("\r\n");
}

function feed(...events: string[]): string {
  return ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", ...events, "END:VCALENDAR", ""].join("\r\n");
}

/** A calendar on loopback: its body, ETag, and the requests it got (with their If-None-Match). */
class FeedServer {
  body = feed();
  status = 200;
  requests: { ifNoneMatch: string | null }[] = [];
  /** While true, requests wait for release(). */
  hold = false;
  private held: (() => void)[] = [];
  private server!: Server;
  url = "";
  get waiting(): number {
    return this.held.length;
  }
  release(): void {
    this.hold = false;
    for (const go of this.held.splice(0)) go();
  }
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      if (this.hold) {
        this.held.push(() => this.server.emit("request", req, res));
        return;
      }
      this.requests.push({ ifNoneMatch: req.headers["if-none-match"] ?? null });
      const etag = `"${Buffer.from(this.body).length}-${hash(this.body)}"`;
      if (this.status !== 200) {
        res.writeHead(this.status).end("down");
        return;
      }
      if (req.headers["if-none-match"] === etag) {
        res.writeHead(304).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/calendar", etag }).end(this.body);
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/listing.ics`;
  }
  async stop(): Promise<void> {
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

function hash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return h >>> 0;
}

/**
 * Holds the book's issueBooking calls that `hold` picks (by their order, from 0) until `release()`:
 * a read forced to be under way while the test deploys. `calls()`: how many were asked.
 */
function holdIssues(
  passes: { issueBooking: (...a: any[]) => Promise<unknown> },
  hold: (n: number) => boolean,
): { release: () => void; calls: () => number } {
  const issueBooking = passes.issueBooking.bind(passes);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let n = 0;
  passes.issueBooking = async (...args: any[]) => {
    if (hold(n++)) await gate;
    return issueBooking(...args);
  };
  return { release, calls: () => n };
}

describe("door-pass booking calendar (docs/passes.md#from-a-booking-calendar)", function () {
  this.timeout(40000);
  let sim: RunningSimulator;
  let cal: FeedServer;
  let outs: any[] = [];
  let caught: any[] = [];
  let events: any[] = [];

  beforeEach(async () => {
    sim = await startSim();
    cal = new FeedServer();
    await cal.start();
  });
  afterEach(async () => {
    await teardown();
    forgetPassBooks();
    await cal.stop();
    await sim.close();
  });

  function calendarFlow(calendar: Record<string, unknown> = {}, out: Record<string, unknown> = {}) {
    return [
      tab(),
      { id: "acc1", type: "door-account", name: "demo", baseUrl: sim.url, loginMethod: "phone", auditLog: "" },
      unlockNode({ deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1", acceptPasses: true }),
      doorPassNode("dp", {
        calendarUrl: cal.url,
        doors: ["Front Door"],
        checkIn: "00:00",
        checkOut: "23:59",
        timeZone: "UTC",
        ...calendar,
      }),
      ...helperNodes("u1-ok", "u1-fail"),
      { id: "dp-out", type: "helper", z: "tab1", ...out },
      ...catchNode(),
    ];
  }

  async function deploy(calendar: Record<string, unknown> = {}, account: Record<string, unknown> = {}): Promise<void> {
    await loadFlow(
      [
        tab(),
        {
          id: "acc1",
          type: "door-account",
          name: "demo",
          baseUrl: sim.url,
          loginMethod: "phone",
          auditLog: "",
          ...account,
        },
        unlockNode({ deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1", acceptPasses: true }),
        doorPassNode("dp", {
          calendarUrl: cal.url,
          doors: ["Front Door"],
          checkIn: "00:00",
          checkOut: "23:59",
          timeZone: "UTC",
          ...calendar,
        }),
        doorEventsNode("ev", { kinds: ["pass"] }),
        ...helperNodes("u1-ok", "u1-fail", "dp-out", "ev-out"),
        ...catchNode(),
      ],
      { nodes: [...ALL_NODES, passModule, eventsModule, catchModule] },
    );
    outs = received("dp-out");
    caught = received("caught");
    events = received("ev-out");
    await waitReady();
  }

  /** Reads the calendar now (the `sync` action): its answer. */
  async function sync(timeoutMs = 15_000): Promise<any> {
    const n = outs.filter((m) => m.payload.action === "synced").length;
    const c = caught.length;
    helper.getNode("dp").receive({ payload: { action: "sync" } });
    await until(
      "synced or an error",
      () => outs.filter((m) => m.payload.action === "synced").length > n || caught.length > c,
      timeoutMs,
    );
    if (caught.length > c) return { error: caught[c] };
    return outs.filter((m) => m.payload.action === "synced")[n].payload;
  }

  const issued = () => outs.filter((m) => m.payload.action === "issued").map((m) => m.payload);

  it("a new booking issues a pass whose code opens the door; changed dates update it with the same code; an unchanged feed is 304", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2));
    await deploy();
    await until("the first read's pass", () => issued().length === 1);
    const p = issued()[0];
    assert.equal(p.guest, "Ada");
    assert.equal(p.ref, "b1");
    assert.match(p.code, /^\d{8}$/);
    assert.deepEqual(
      p.doors.map((d: any) => d.deviceId),
      [101],
    );
    assertAccepted(await unlock({ pass: p.code }));
    // Moved by a day: updated, the same code still opens.
    cal.body = feed(booking("b1", "Ada", -1, 3));
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 1, revoked: 0 });
    const upd = outs.filter((m) => m.payload.action === "updated").map((m) => m.payload);
    assert.equal(upd.length, 1);
    assert.equal(upd[0].id, p.id);
    assert.equal(upd[0].code, undefined, "an update never carries the code");
    assertAccepted(await unlock({ pass: p.code }));
    // Unchanged: answered 304, nothing applied.
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 0 });
    assert.ok(cal.requests[cal.requests.length - 1].ifNoneMatch !== null, "If-None-Match sent");
  });

  it("a cancelled booking and a removed one revoke their passes; their codes open nothing", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 2), booking("b3", "Cy", -1, 2));
    await deploy();
    await until("three passes", () => issued().length === 3);
    const [a, b, c] = ["Ada", "Bo", "Cy"].map((g) => issued().find((p) => p.guest === g));
    cal.body = feed(booking("b1", "Ada", -1, 2, ["STATUS:CANCELLED"]), booking("b3", "Cy", -1, 2));
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 2 });
    assert.match(assertFailed(await unlock({ pass: a.code }), "denied", null).message, /revoked/);
    assert.match(assertFailed(await unlock({ pass: b.code }), "denied", null).message, /revoked/);
    assertAccepted(await unlock({ pass: c.code }));
  });

  // docs/passes.md#from-a-booking-calendar: a pass revoked by hand stays revoked
  it("a calendar's pass revoked by hand stays revoked while its booking is listed: the next read issues no new pass for it", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 2));
    await deploy();
    await until("two passes", () => issued().length === 2);
    const a = issued().find((p) => p.guest === "Ada");
    const c = caught.length;
    helper.getNode("dp").receive({ payload: { action: "revoke", id: a.id } });
    await until("revoked", () => outs.some((m) => m.payload.action === "revoked") || caught.length > c);
    // The feed changes for another booking: read in full again.
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 3));
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 1, revoked: 0 });
    assert.equal(issued().filter((p) => p.ref === "b1").length, 1, "no second code for the revoked booking");
    assert.match(assertFailed(await unlock({ pass: a.code }), "denied", null).message, /revoked/);
  });

  it("a booking cancelled and then listed again gets a new pass (the calendar, not a person, had revoked the old one)", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 2));
    await deploy();
    await until("two passes", () => issued().length === 2);
    const old = issued().find((p) => p.ref === "b1");
    cal.body = feed(booking("b1", "Ada", -1, 2, ["STATUS:CANCELLED"]), booking("b2", "Bo", -1, 2));
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 1 });
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 2));
    assert.deepEqual(await sync(), { action: "synced", issued: 1, updated: 0, revoked: 0 });
    const again = issued().filter((p) => p.ref === "b1")[1];
    assertAccepted(await unlock({ pass: again.code }));
    assert.match(assertFailed(await unlock({ pass: old.code }), "denied", null).message, /revoked/);
  });

  it("a feed that fails or suddenly lists nothing changes nothing: the passes keep opening, one warning", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2));
    await deploy();
    await until("the pass", () => issued().length === 1);
    const p = issued()[0];
    cal.status = 500;
    const failed = await sync();
    assert.ok("error" in failed);
    assert.match(failed.error.error.message, /calendar answered 500/);
    cal.status = 200;
    cal.body = feed();
    const empty = await sync();
    assert.ok("error" in empty);
    assert.match(empty.error.error.message, /lists no booking/);
    assertAccepted(await unlock({ pass: p.code }));
  });

  it("a failed sync reaches a Catch node with code calendar-failed, and the status keeps the reason as a timer's read does (docs/events.md#catch-errors)", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2));
    await deploy();
    await until("the pass", () => issued().length === 1);
    cal.status = 500;
    const failed = await sync();
    assert.ok("error" in failed);
    assert.equal(failed.error.error.code, "calendar-failed");
    assert.match(failed.error.error.message, /calendar answered 500/);
    const text = String(lastStatus(helper.getNode("dp"))?.text);
    assert.match(text, /^calendar: not read \d\d:\d\d:\d\d$/, `the status keeps the reason: ${text}`);
    cal.status = 200;
    cal.body = feed();
    const empty = await sync();
    assert.equal(empty.error.error.code, "calendar-failed");
    assert.match(String(lastStatus(helper.getNode("dp"))?.text), /^calendar: /);
  });

  it("the texts a person reads give local time in the node's zone, never ISO UTC: pass/issued and pass/updated messages, the node status; the events' from and until stay ISO (docs/events.md#pass)", async () => {
    const zone = "Pacific/Auckland";
    const hhmm = (ms: number) =>
      new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(
        ms,
      );
    cal.body = feed(booking("b1", "Ada", 1, 3));
    const before = Date.now();
    await deploy({ timeZone: zone, checkIn: "15:00", checkOut: "11:00" });
    await until(
      "the pass, its event and the read's status",
      () =>
        issued().length === 1 &&
        events.some((e) => e.topic === "pass/issued") &&
        /^calendar read/.test(String(lastStatus(helper.getNode("dp"))?.text)),
    );
    const after = Date.now();
    const status = String(lastStatus(helper.getNode("dp"))?.text);
    const m = /^calendar read (\d\d:\d\d):\d\d: 1 live$/.exec(status);
    assert.ok(m, status);
    assert.ok([hhmm(before), hhmm(after)].includes(m[1]), `${status} is on ${zone}'s clock`);
    cal.body = feed(booking("b1", "Ada", 1, 4));
    assert.equal((await sync()).updated, 1);
    for (const topic of ["pass/issued", "pass/updated"]) {
      const e = events.find((x) => x.topic === topic).payload;
      assert.match(e.message, / 15:00 to \w+ (\d+ \w+ )?11:00 \(Pacific\/Auckland\)$/, e.message);
      assert.doesNotMatch(e.message, /\d{4}-\d\d-\d\dT/, e.message);
      assert.ok(!Number.isNaN(Date.parse(e.from)) && e.until.endsWith("Z"), "the machine fields stay ISO");
    }
  });

  // docs/passes.md#from-a-booking-calendar: the dates in the node's zone, also across a night the clocks change
  it("an all-day booking across the night Oslo's clocks go forward opens at check-in in winter time and closes at check-out in summer time", async () => {
    cal.body = feed(
      [
        "BEGIN:VEVENT",
        "UID:dst@test",
        "SUMMARY:Spring guest",
        "DTSTART;VALUE=DATE:20270327",
        "DTEND;VALUE=DATE:20270330",
        "END:VEVENT",
      ].join("\r\n"),
    );
    await deploy({ checkIn: "15:00", checkOut: "11:00", timeZone: "Europe/Oslo" });
    await until("the pass", () => issued().length === 1);
    assert.equal(issued()[0].from, "2027-03-27T14:00:00.000Z"); // 15:00 CET
    assert.equal(issued()[0].until, "2027-03-30T09:00:00.000Z"); // 11:00 CEST
  });

  // docs/passes.md#from-a-booking-calendar: a check-in or check-out the clocks skip or repeat that night
  it("New York: check-in 02:30 on the night the clocks go forward opens at 03:30 EDT, an hour after 01:30 EST; check-out 01:30 on the night they go back is the first 01:30 (EDT); a visit that night keeps its own real hours", async () => {
    const allDay = (uid: string, from: string, to: string) =>
      [
        "BEGIN:VEVENT",
        `UID:${uid}`,
        `SUMMARY:${uid}`,
        `DTSTART;VALUE=DATE:${from}`,
        `DTEND;VALUE=DATE:${to}`,
        "END:VEVENT",
      ].join("\r\n");
    cal.body = feed(
      allDay("spring", "20270314", "20270316"),
      allDay("fall", "20271105", "20271107"),
      allDay("after-fall", "20271107", "20271109"),
      [
        "BEGIN:VEVENT",
        "UID:night-visit",
        "SUMMARY:night-visit",
        "DTSTART;TZID=America/New_York:20271107T013000",
        "DTEND;TZID=America/New_York:20271107T030000",
        "END:VEVENT",
      ].join("\r\n"),
    );
    await deploy({ checkIn: "02:30", checkOut: "01:30", timeZone: "America/New_York" });
    await until("four passes", () => issued().length === 4);
    const window = (ref: string) => {
      const p = issued().find((x) => x.ref === ref);
      return [p.from, p.until];
    };
    // 02:30 does not happen on 14 March 2027: read with the offset before the change (EST), 07:30Z is 03:30 EDT.
    assert.deepEqual(window("spring"), ["2027-03-14T07:30:00.000Z", "2027-03-16T05:30:00.000Z"]);
    // 01:30 happens twice on 7 November 2027: the first, EDT (05:30Z), not the second, EST (06:30Z).
    assert.deepEqual(window("fall"), ["2027-11-05T06:30:00.000Z", "2027-11-07T05:30:00.000Z"]);
    // 02:30 after the repeated hour happens once, EST.
    assert.deepEqual(window("after-fall"), ["2027-11-07T07:30:00.000Z", "2027-11-09T06:30:00.000Z"]);
    // A visit of a few hours that night: from the first 01:30 (EDT) to 03:00 EST, two and a half real hours.
    assert.deepEqual(window("night-visit"), ["2027-11-07T05:30:00.000Z", "2027-11-07T08:00:00.000Z"]);
  });

  // docs/passes.md#from-a-booking-calendar: a recurring booking is one pass per occurrence
  it("a weekly visit is one pass per coming occurrence, each with its own code; the visit that was moved keeps its pass's code", async () => {
    const start = new Date(Date.now() + DAY).toISOString().slice(0, 10).replace(/-/g, "");
    const weekly = (moved: boolean) =>
      feed(
        [
          "BEGIN:VEVENT",
          "UID:cleaner@test",
          "SUMMARY:Cleaner",
          `DTSTART:${start}T090000Z`,
          `DTEND:${start}T120000Z`,
          "RRULE:FREQ=WEEKLY;COUNT=3",
          "END:VEVENT",
          ...(moved
            ? [
                "BEGIN:VEVENT",
                "UID:cleaner@test",
                `RECURRENCE-ID:${start}T090000Z`,
                "SUMMARY:Cleaner",
                `DTSTART:${start}T130000Z`,
                `DTEND:${start}T160000Z`,
                "END:VEVENT",
              ]
            : []),
        ].join("\r\n"),
      );
    cal.body = weekly(false);
    // Check-out before check-in on one day: a visit of a few hours opens at its own times.
    await deploy({ checkIn: "15:00", checkOut: "11:00" });
    await until("three passes", () => issued().length === 3);
    assert.equal(new Set(issued().map((p) => p.code)).size, 3);
    assert.ok(issued().every((p) => String(p.ref).startsWith("cleaner@test@")));
    const first = issued().find((p) => String(p.ref).endsWith("T09:00:00Z"))!;
    cal.body = weekly(true);
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 1, revoked: 0 });
    const upd = outs.filter((m) => m.payload.action === "updated").map((m) => m.payload);
    assert.equal(upd[0].id, first.id);
    assert.match(upd[0].from, /T13:00:00/);
  });

  // docs/passes.md#from-a-booking-calendar: one pass per booking, whatever the number of reads
  it("two sync messages at once while the feed's answer is held: one pass and one issued message per booking", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2));
    await deploy();
    await until("the first read's pass", () => issued().length === 1);
    cal.body = feed(...Array.from({ length: 30 }, (_, i) => booking(`n${i}`, `Guest ${i}`, -1, 2 + (i % 3))));
    cal.hold = true;
    const n = outs.filter((m) => m.payload.action === "synced").length;
    helper.getNode("dp").receive({ payload: { action: "sync" } });
    helper.getNode("dp").receive({ payload: { action: "sync" } });
    await until("a read waiting", () => cal.waiting > 0);
    await new Promise((r) => setTimeout(r, 300)); // a second read, if there were one, would wait too
    cal.release();
    await until("both syncs answered", () => outs.filter((m) => m.payload.action === "synced").length === n + 2);
    const fresh = issued().filter((p) => String(p.ref).startsWith("n"));
    assert.equal(fresh.length, 30, "one issued message per booking");
    helper.getNode("dp").receive({ payload: { action: "list" } });
    await until("the list", () => outs.some((m) => m.payload.action === "list"));
    const listed = outs.find((m) => m.payload.action === "list").payload.passes as any[];
    const live = listed.filter((p) => p.state === "active" && String(p.ref).startsWith("n"));
    assert.equal(live.length, 30, "one live pass per booking");
  });

  /** The feed's events whose text matches `re`, replaced by `by` (an event, or nothing). */
  function replaceEvents(text: string, re: RegExp, by = ""): string {
    const [head, ...events] = text.split("BEGIN:VEVENT");
    const kept = events.filter((e) => !re.test(e)).map((e) => `BEGIN:VEVENT${e}`);
    const tail = kept.length > 0 ? "" : "END:VCALENDAR\r\n";
    const body = head + kept.join("");
    return by === "" ? body + tail : body.replace(/END:VCALENDAR\r\n$/, "") + by + "\r\nEND:VCALENDAR\r\n";
  }

  // docs/passes.md#blocked-time-and-placeholder-names
  it('Airbnb\'s feed: blocked time gets no pass and is never counted, updated or revoked; each "Reserved" guest is the node\'s name, "guest" and the phone\'s last 4 digits, with booking in issued, updated and list', async () => {
    cal.body = platformFeed("airbnb");
    await deploy({ name: "Apartment A" });
    await until("two passes", () => issued().length === 2);
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 0 });
    assert.deepEqual(
      issued()
        .map((p) => p.guest)
        .sort(),
      ["Apartment A guest 0007", "Apartment A guest 4821"],
    );
    const a = issued().find((p) => p.booking.phoneLast4 === "4821");
    assert.deepEqual(a.booking, {
      summary: "Reserved",
      phoneLast4: "4821",
      url: "https://www.airbnb.com/hosting/reservations/details/HMTEST4821A",
    });
    assert.ok(!issued().some((p) => /not available/i.test(p.guest)), "no pass for blocked time");
    assertAccepted(await unlock({ pass: a.code }));
    // The blocked time moves, and one block goes: nothing to count, update or revoke.
    const moved = [
      "BEGIN:VEVENT",
      `DTEND;VALUE=DATE:${date(12)}`,
      `DTSTART;VALUE=DATE:${date(4)}`,
      "UID:1418fb94e984-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d@airbnb.com",
      "SUMMARY:Airbnb (Not available)",
      "END:VEVENT",
    ].join("\r\n");
    cal.body = replaceEvents(cal.body, /Not available/, moved);
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 0 });
    // A booking moved by a day: updated, with its booking.
    cal.body = cal.body.replace(`DTEND;VALUE=DATE:${date(14)}`, `DTEND;VALUE=DATE:${date(15)}`);
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 1, revoked: 0 });
    const upd = outs.filter((m) => m.payload.action === "updated").map((m) => m.payload);
    assert.equal(upd[0].booking.phoneLast4, "0007");
    assert.equal(upd[0].guest, "Apartment A guest 0007");
    helper.getNode("dp").receive({ payload: { action: "list" } });
    await until("the list", () => outs.some((m) => m.payload.action === "list"));
    const listed = outs.find((m) => m.payload.action === "list").payload.passes as any[];
    assert.equal(listed.length, 2, "two passes: the blocks made none");
    assert.deepEqual(
      listed.map((p) => p.booking.summary),
      ["Reserved", "Reserved"],
    );
  });

  // docs/passes.md#blocked-time-and-placeholder-names
  it("Booking.com's feed gives no pass with the default list (its closed dates are blocked time); a list without its marker makes each closed date a booking, whose guest is the host's name for a guest, never 'CLOSED - Not available' (docs/passes.md#blocked-time-and-placeholder-names)", async () => {
    cal.body = platformFeed("booking-com");
    await deploy({ blocked: "Blocked\nNot available", name: "Apartment B" });
    await until("two passes", () => issued().length === 2);
    assert.deepEqual(
      issued().map((p) => p.guest),
      ["Apartment B guest", "Apartment B guest"],
    );
    assert.deepEqual(
      issued().map((p) => p.booking.summary),
      ["CLOSED - Not available", "CLOSED - Not available"],
    );
    await teardown();
    forgetPassBooks();
    await deploy({ blocked: undefined });
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 0 });
    assert.equal(issued().length, 0);
  });

  // docs/passes.md#blocked-time-and-placeholder-names
  it("a feed whose last booking is cancelled while it still lists blocked time revokes that booking's pass: blocked time is a feed's content, not an empty feed (docs/passes.md#blocked-time-and-placeholder-names)", async () => {
    const block = [
      "BEGIN:VEVENT",
      `DTSTART;VALUE=DATE:${date(20)}`,
      `DTEND;VALUE=DATE:${date(300)}`,
      "UID:blk-1@airbnb.com",
      "SUMMARY:Airbnb (Not available)",
      "END:VEVENT",
    ].join("\r\n");
    cal.body = feed(booking("b1", "Reserved", -1, 2), block);
    await deploy({ name: "Apartment A" });
    await until("the pass", () => issued().length === 1);
    const p = issued()[0];
    assertAccepted(await unlock({ pass: p.code }));
    // The guest cancels: Airbnb's feed now holds only the blocked dates.
    cal.body = feed(block);
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 1 });
    assert.match(assertFailed(await unlock({ pass: p.code }), "denied", null).message, /revoked/);
    // A feed with no event at all is still not applied.
    cal.body = feed(booking("b2", "Reserved", -1, 2), block);
    assert.deepEqual(await sync(), { action: "synced", issued: 1, updated: 0, revoked: 0 });
    cal.body = feed();
    const empty = await sync();
    assert.match(empty.error.error.message, /lists no booking/);
  });

  // docs/passes.md#from-a-booking-calendar
  it("a feed that reads again after failing is told once by pass/calendar-ok and the status, also when it comes back unchanged (answered 304) (docs/passes.md#from-a-booking-calendar)", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2));
    await deploy();
    await until("the pass", () => issued().length === 1);
    const failed = () => events.filter((m) => m.topic === "pass/calendar-failed");
    const ok = () => events.filter((m) => m.topic === "pass/calendar-ok");
    cal.status = 404;
    assert.equal((await sync()).error.error.code, "calendar-failed");
    assert.equal((await sync()).error.error.code, "calendar-failed");
    await until("one calendar-failed", () => failed().length === 1);
    assert.match(String(lastStatus(helper.getNode("dp"))?.text), /^calendar: not read/);
    // Back, with the same feed: the server answers 304 to the ETag of the last read applied.
    cal.status = 200;
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 0 });
    assert.ok(cal.requests[cal.requests.length - 1].ifNoneMatch !== null, "asked with If-None-Match: answered 304");
    await until("one calendar-ok", () => ok().length === 1);
    // The status set after the failure says the calendar is read again (a sync's answer may follow it).
    const dp = helper.getNode("dp");
    const texts = () => dp.status.getCalls().map((c: any) => String(c.args[0]?.text));
    await until("the status of a calendar read", () => {
      const t = texts();
      const i = t.map((x: string) => x.startsWith("calendar: not read")).lastIndexOf(true);
      return t.slice(i + 1).some((x: string) => /^calendar read \d\d:\d\d:\d\d: 1 live$/.test(x));
    });
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 0 });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(ok().length, 1, "told once");
    assert.equal(failed().length, 1);
  });

  // docs/passes.md#from-a-booking-calendar
  it("an event listed twice under one UID is read as its latest version (SEQUENCE, then DTSTAMP), whatever the order of the feed: a cancelled booking listed again before its cancellation gets no pass (docs/passes.md#from-a-booking-calendar)", async () => {
    const old = booking("d1", "Ada", -1, 2, ["SEQUENCE:0", "DTSTAMP:20260101T000000Z"]);
    const cancelled = booking("d1", "Ada", -1, 2, ["SEQUENCE:1", "DTSTAMP:20260102T000000Z", "STATUS:CANCELLED"]);
    const moved = booking("d2", "Bo", 1, 3, ["SEQUENCE:2", "DTSTAMP:20260103T000000Z"]);
    const first = booking("d2", "Bo", -1, 2, ["SEQUENCE:1", "DTSTAMP:20260102T000000Z"]);
    cal.body = feed(old, cancelled, first, moved, booking("b9", "Cy", -1, 2));
    await deploy();
    await until("Cy's pass and Bo's", () => issued().length === 2);
    const bo = issued().find((p) => p.ref === "d2");
    assert.equal(bo.from, iso(Date.parse(`${new Date(Date.now() + DAY).toISOString().slice(0, 10)}T00:00:00Z`)));
    // The same feed, its events in another order: nothing changes.
    cal.body = feed(booking("b9", "Cy", -1, 2), moved, cancelled, first, old);
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 0 });
    assert.equal(issued().filter((p) => p.ref === "d1").length, 0, "no pass for the cancelled booking");
  });

  // docs/passes.md#from-a-booking-calendar
  it("a feed that keeps failing the same way is told once (one pass/calendar-failed, one warning), also when the number of live passes changes meanwhile (docs/passes.md#from-a-booking-calendar)", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 2));
    await deploy();
    await until("two passes", () => issued().length === 2);
    const failed = () => events.filter((m) => m.topic === "pass/calendar-failed");
    cal.body = feed();
    assert.equal((await sync()).error.error.code, "calendar-failed");
    await until("one calendar-failed", () => failed().length === 1);
    // The host revokes a pass while the feed is empty: the same failure, told no second time.
    const c = caught.length;
    helper.getNode("dp").receive({ payload: { action: "revoke", ref: "b1" } });
    await until("revoked", () => outs.some((m) => m.payload.action === "revoked") || caught.length > c);
    assert.equal((await sync()).error.error.code, "calendar-failed");
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(failed().length, 1, "told once");
    const warned = helper
      .getNode("dp")
      .warn.getCalls()
      .filter((x: any) => /calendar:/.test(String(x.args[0])));
    assert.equal(warned.length, 1, "one warning");
  });

  // docs/passes.md#from-a-booking-calendar
  it("events of the feed that cannot be bookings (no UID, a date that does not exist) are told to the host once in a warning, the rest applied; told again only when their number changes (docs/passes.md#from-a-booking-calendar)", async () => {
    const noUid = booking("x", "Bo", 1, 3).replace("UID:x\r\n", "");
    const noDate = booking("y", "Cy", 1, 3).replace(/DTEND;VALUE=DATE:\d+/, "DTEND;VALUE=DATE:20270230");
    cal.body = feed(booking("b1", "Ada", -1, 2), noUid, noDate);
    await deploy();
    await until("Ada's pass", () => issued().length === 1);
    const warned = () =>
      helper
        .getNode("dp")
        .warn.getCalls()
        .map((x: any) => String(x.args[0]))
        .filter((w: string) => /cannot be (a )?bookings?\b/.test(w));
    await until("one warning", () => warned().length === 1);
    assert.match(warned()[0], /2 events of the feed cannot be bookings/);
    assert.doesNotMatch(warned()[0], /Bo|Cy/, "no guest's name in the log");
    cal.body = feed(booking("b1", "Ada", -1, 3), noUid, noDate);
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 1, revoked: 0 });
    assert.equal(warned().length, 1, "the same two: told once");
    cal.body = feed(booking("b1", "Ada", -1, 3), noDate);
    await sync();
    assert.equal(warned().length, 2);
    assert.match(warned()[1], /1 event of the feed cannot be a booking/);
  });

  // docs/nodes.md#door-pass
  it("a read answered 304 (the feed unchanged) is a read: the status says 'calendar read <time>: N live' again, with the time of that read (docs/nodes.md#door-pass)", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2));
    await deploy();
    await until("the pass", () => issued().length === 1);
    const dp = helper.getNode("dp");
    const reads = () =>
      dp.status
        .getCalls()
        .map((c: any) => String(c.args[0]?.text))
        .filter((x: string) => /^calendar read \d\d:\d\d:\d\d: 1 live$/.test(x)).length;
    await until("the first read's status", () => reads() === 1);
    assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 0 });
    assert.ok(cal.requests[cal.requests.length - 1].ifNoneMatch !== null, "answered 304");
    await until("the status of the unchanged read", () => reads() === 2);
  });

  // docs/passes.md#no-code-goes-nowhere
  it("a door-pass whose output reaches no node issues no calendar pass and says why in its status; once wired and deployed, the passes are issued and their codes open", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 2));
    const book = () => accountOf().account.core.passes;
    const notWired = () => /not wired/.test(lastStatus(helper.getNode("dp"))?.text ?? "");
    // Wired to nothing.
    await loadFlow(calendarFlow({ wires: [[]] }), { nodes: [...ALL_NODES, passModule, catchModule] });
    await waitReady();
    await until("the read, not wired", notWired);
    assert.equal((await book().list()).length, 0, "no pass: its code would reach nobody");
    // Wired to a node that is disabled: it reaches nobody either.
    await teardown();
    forgetPassBooks();
    await loadFlow(calendarFlow({}, { d: true }), { nodes: [...ALL_NODES, passModule, catchModule] });
    await waitReady();
    await until("the read, not wired", notWired);
    assert.equal((await book().list()).length, 0);
    // The node enabled (a modified-nodes deploy: the door-pass keeps running): the next read issues.
    await deployFlows(calendarFlow(), "nodes");
    outs = received("dp-out");
    caught = received("caught");
    assert.deepEqual(await sync(), { action: "synced", issued: 2, updated: 0, revoked: 0 });
    assert.equal(issued().length, 2);
    assertAccepted(await unlock({ pass: issued()[0].code }));
    assert.match(lastStatus(helper.getNode("dp"))?.text ?? "", /synced|calendar read/);
  });

  // docs/passes.md#deleting-a-calendar-node
  it("the deploy that deletes a door-pass revokes the calendar passes it made (pass/revoked each), not the passes a flow issued; a restart, a redeploy or disabling it revokes nothing; its status counts its own passes", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 2));
    const nodes = [...ALL_NODES, passModule, catchModule];
    const other = doorPassNode("dp9", { name: "other" });
    await loadFlow([...calendarFlow(), other, ...helperNodes("dp9-out")], { nodes });
    await waitReady();
    outs = received("dp-out");
    caught = received("caught");
    const dp9 = received("dp9-out");
    await until("two passes", () => issued().length === 2);
    const book = () => accountOf().account.core.passes;
    const now = Date.now();
    // A flow's pass through this node, and one through another node.
    const byFlow = { guest: "Cy", doors: [101], from: iso(now - DAY), until: iso(now + DAY) };
    helper.getNode("dp").receive({ payload: { action: "issue", ...byFlow } });
    helper.getNode("dp9").receive({ payload: { action: "issue", ...byFlow, guest: "Dee" } });
    await until("Cy's pass", () => issued().length === 3);
    await until("Dee's pass", () => dp9.length === 1);
    helper.getNode("dp").receive({ payload: { action: "list" } });
    await until("the list", () => outs.some((m) => m.payload.action === "list"));
    assert.equal(outs.find((m) => m.payload.action === "list").payload.passes.length, 4);
    assert.match(lastStatus(helper.getNode("dp"))?.text ?? "", /^3 live/, "its own passes, not the account's 4");
    const live = async () =>
      (await book().list())
        .filter((p: any) => p.state === "active")
        .map((p: any) => p.guest)
        .sort();
    const revokedEvents = () =>
      accountOf()
        .account.core.events.recent()
        .filter((e: any) => e.kind === "pass" && e.event === "revoked");
    // A full redeploy (the node restarts), then the node disabled: nothing revoked.
    await deployFlows([...calendarFlow(), other, ...helperNodes("dp9-out")], "full");
    await waitReady();
    await deployFlows([...calendarFlow({ d: true }), other, ...helperNodes("dp9-out")], "nodes");
    await new Promise((r) => setTimeout(r, 300)); // a revocation, if there were one, would be written by now
    assert.deepEqual(await live(), ["Ada", "Bo", "Cy", "Dee"]);
    assert.equal(revokedEvents().length, 0);
    // Enabled again, then deleted.
    await deployFlows([...calendarFlow(), other, ...helperNodes("dp9-out")], "nodes");
    const flowWithout = [...calendarFlow()].filter((n) => n.id !== "dp" && n.id !== "dp-out");
    await deployFlows([...flowWithout, other, ...helperNodes("dp9-out")], "nodes");
    await until("two pass/revoked events", () => revokedEvents().length === 2);
    assert.deepEqual(await live(), ["Cy", "Dee"], "the calendar's passes ended; the flows' stay");
    assert.deepEqual(
      revokedEvents()
        .map((e: any) => e.guest)
        .sort(),
      ["Ada", "Bo"],
    );
    const ada = issued().find((p) => p.guest === "Ada");
    assert.match(assertFailed(await unlock({ pass: ada.code }), "denied", null).message, /revoked/);
    assertAccepted(await unlock({ pass: issued().find((p) => p.guest === "Cy").code }));
  });

  // docs/passes.md#deleting-a-calendar-node
  it("a door-pass inside a subflow: redeploying or disabling its instance revokes nothing; the deploy that deletes the instance revokes the calendar passes it made (pass/revoked each) (docs/passes.md#deleting-a-calendar-node)", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 2));
    const nodes = [...ALL_NODES, passModule, catchModule];
    const subflow = (instances: string[], d = false) => [
      tab(),
      { id: "acc1", type: "door-account", name: "demo", baseUrl: sim.url, loginMethod: "phone", auditLog: "" },
      unlockNode({ deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1", acceptPasses: true }),
      ...helperNodes("u1-ok", "u1-fail", "dp-out"),
      {
        id: "sf1",
        type: "subflow",
        name: "Listing",
        info: "",
        in: [{ x: 40, y: 40, wires: [{ id: "sfdp" }] }],
        out: [{ x: 300, y: 40, wires: [{ id: "sfdp", port: 0 }] }],
      },
      {
        ...doorPassNode("sfdp", {
          name: "Apartment A",
          calendarUrl: cal.url,
          doors: ["Front Door"],
          checkIn: "00:00",
          checkOut: "23:59",
          timeZone: "UTC",
        }),
        z: "sf1",
        x: 160,
        y: 40,
        wires: [[]],
      },
      // A subflow instance is a node only with its position (x, y), as the editor stores it.
      ...instances.map((id) => ({ id, type: "subflow:sf1", z: "tab1", x: 200, y: 200, d, wires: [["dp-out"]] })),
    ];
    await loadFlow(subflow(["inst1"]), { nodes });
    await waitReady();
    outs = received("dp-out");
    await until("two passes", () => issued().length === 2);
    const book = () => accountOf().account.core.passes;
    const live = async () =>
      (await book().list())
        .filter((p: any) => p.state === "active")
        .map((p: any) => p.guest)
        .sort();
    const revokedEvents = () =>
      accountOf()
        .account.core.events.recent()
        .filter((e: any) => e.kind === "pass" && e.event === "revoked");
    // A full redeploy: the instance restarts; nothing revoked, nothing issued again.
    await deployFlows(subflow(["inst1"]), "full");
    await waitReady();
    await new Promise((r) => setTimeout(r, 1500)); // its first read, a second after the deploy
    assert.deepEqual(await live(), ["Ada", "Bo"]);
    assert.equal(revokedEvents().length, 0);
    // Disabled, then enabled again: nothing revoked.
    await deployFlows(subflow(["inst1"], true), "nodes");
    await deployFlows(subflow(["inst1"]), "nodes");
    await new Promise((r) => setTimeout(r, 300)); // a revocation, if there were one, would be written by now
    assert.deepEqual(await live(), ["Ada", "Bo"]);
    assert.equal(revokedEvents().length, 0);
    // The instance deleted.
    await deployFlows(subflow([]), "nodes");
    await until("two pass/revoked events", () => revokedEvents().length === 2);
    assert.deepEqual(await live(), [], "the deleted instance's calendar passes ended");
    assert.match(assertFailed(await unlock({ pass: issued()[0].code }), "denied", null).message, /revoked/);
  });

  // docs/passes.md#deleting-a-calendar-node
  it("a door-pass moved into a subflow (Selection to Subflow) is a deletion of the node on its tab: its calendar passes are revoked (pass/revoked each) and the instance's node keeps one pass per booking, so no old code outlives its booking (docs/passes.md#deleting-a-calendar-node)", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 2), booking("b2", "Bo", -1, 2));
    const nodes = [...ALL_NODES, passModule, catchModule];
    await loadFlow(calendarFlow(), { nodes });
    await waitReady();
    outs = received("dp-out");
    await until("two passes", () => issued().length === 2);
    const first = issued().slice();
    // The editor's "Selection to Subflow": the node keeps its id, now inside the subflow, and an instance takes its place.
    const moved = [
      ...calendarFlow().filter((n) => n.id !== "dp"),
      {
        id: "sf1",
        type: "subflow",
        name: "Listing",
        info: "",
        in: [],
        out: [{ x: 300, y: 40, wires: [{ id: "dp", port: 0 }] }],
      },
      { ...calendarFlow().find((n) => n.id === "dp"), z: "sf1", x: 160, y: 40, wires: [[]] },
      { id: "inst1", type: "subflow:sf1", z: "tab1", x: 200, y: 200, wires: [["dp-out"]] },
    ];
    // Deployed as the editor does by default (full).
    await deployFlows(moved, "full");
    await waitReady();
    const revoked = () =>
      accountOf()
        .account.core.events.recent()
        .filter((e: any) => e.kind === "pass" && e.event === "revoked")
        .map((e: any) => e.id)
        .sort();
    outs = received("dp-out");
    await until("the tab node's two passes revoked", () => revoked().length === 2);
    assert.deepEqual(revoked(), first.map((p) => p.id).sort());
    await until("the instance's passes", () => issued().length === 2);
    const live = (await accountOf().account.core.passes.list())
      .filter((p: any) => p.state === "active")
      .map((p: any) => `${p.node}:${p.guest}`)
      .sort();
    assert.deepEqual(live, ["inst1-dp:Ada", "inst1-dp:Bo"], "one live pass per booking, the instance's");
    assert.match(assertFailed(await unlock({ pass: first[0].code }), "denied", null).message, /revoked/);
  });

  // docs/passes.md#deleting-a-calendar-node
  it("the deploy that deletes a door-pass while its read is issuing passes leaves none of its calendar passes live: the read writes nothing after the deletion, the revocation waits for it, so no pass is issued whose code nobody gets (docs/passes.md#deleting-a-calendar-node)", async () => {
    cal.body = feed(booking("d1", "Ada", -1, 2));
    const nodes = [...ALL_NODES, passModule, catchModule];
    await loadFlow(calendarFlow(), { nodes });
    await waitReady();
    outs = received("dp-out");
    caught = received("caught");
    await until("Ada's pass", () => issued().length === 1);
    const passes = accountOf().account.core.passes;
    // The next read's issue waits (forced: the deletion comes while the read is applied).
    const held = holdIssues(passes, () => true);
    // The deletion numbers itself as a read of the calendar as the node closes; the read under way
    // goes on once it has (its revocation waits for that read to end).
    const readStamp = passes.readStamp.bind(passes);
    let stamps = 0;
    passes.readStamp = (source: string) => {
      stamps++;
      return readStamp(source);
    };
    const deploying: Promise<unknown>[] = [];
    try {
      cal.body = feed(booking("d1", "Ada", -1, 2), booking("d2", "Bo", -1, 2));
      helper.getNode("dp").receive({ payload: { action: "sync" } });
      await until("Bo's issue under way", () => held.calls() === 1);
      const before = stamps;
      const flowWithout = calendarFlow().filter((n: any) => n.id !== "dp" && n.id !== "dp-out");
      deploying.push(deployFlows(flowWithout, "nodes"));
      await until("the closing node numbered", () => stamps > before);
    } finally {
      held.release();
    }
    await Promise.all(deploying);
    // The revocation runs once the read is over (one read of a node at a time): by its event, Bo's
    // issue, had it been let through, is written.
    await until("Ada's pass revoked with its node", () =>
      accountOf()
        .account.core.events.recent()
        .some((e: any) => e.kind === "pass" && e.event === "revoked" && e.guest === "Ada"),
    );
    const live = ((await passes.fromSource("dp")) as any[]).filter((p) => p.revoked === null);
    assert.deepEqual(
      live.map((p) => p.guest),
      [],
      "no live pass of the deleted node (Bo's code would have gone nowhere)",
    );
  });

  it("a full redeploy while a read is applied: a running node sends each booking's code, once; none goes to the stopped node (docs/passes.md#from-a-booking-calendar)", async () => {
    cal.body = feed(booking("r1", "Ada", -1, 2));
    const nodes = [...ALL_NODES, passModule, catchModule];
    await loadFlow(calendarFlow(), { nodes });
    await waitReady();
    outs = received("dp-out");
    await until("Ada's pass", () => issued().length === 1);
    const passes = accountOf().account.core.passes;
    const held = holdIssues(passes, (n) => n === 0); // the old node's read waits; the new node's goes through
    const old = outs;
    let fresh: any[] = [];
    try {
      cal.body = feed(booking("r1", "Ada", -1, 2), booking("r2", "Bo", -1, 2));
      helper.getNode("dp").receive({ payload: { action: "sync" } });
      await until("Bo's issue under way", () => held.calls() === 1);
      await deployFlows(calendarFlow(), "full");
      fresh = received("dp-out");
    } finally {
      held.release();
    }
    const codes = () => [...old, ...fresh].filter((m) => m.payload.action === "issued" && m.payload.ref === "r2");
    for (let i = 0; i < 500 && fresh.filter((m) => m.payload.ref === "r2").length === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 300)); // a second code would come now
    const bo = ((await passes.fromSource("dp")) as any[]).filter((p) => p.ref === "r2" && p.revoked === null);
    assert.equal(bo.length, 1, "one live pass for Bo");
    assert.deepEqual(
      fresh.filter((m) => m.payload.action === "issued" && m.payload.ref === "r2").map((m) => m.payload.id),
      [bo[0].id],
      `Bo's code reached the running node's output, once (all: ${codes().length})`,
    );
  });

  // docs/passes.md#deleting-a-calendar-node
  it("the deploy that deletes a door-pass with 2,500 calendar passes is over only once every one of them is revoked: none of its codes opens after it", async function () {
    this.timeout(0);
    const events: string[] = [];
    for (let i = 0; i < 2_500; i++) events.push(booking(`del-${i}`, `Guest ${i}`, -1, 2 + (i % 30)));
    cal.body = feed(...events);
    const nodes = [...ALL_NODES, passModule, catchModule];
    await loadFlow(calendarFlow(), { nodes });
    await waitReady();
    outs = received("dp-out");
    caught = received("caught");
    await untilCount("the passes issued", () => issued().length, 2_500, 120_000);
    const flowWithout = calendarFlow().filter((n) => n.id !== "dp" && n.id !== "dp-out");
    await deployFlows(flowWithout, "nodes");
    const left = (await book().fromSource("dp")).filter((p: any) => p.revoked === null);
    assert.equal(left.length, 0, "calendar passes still live once the deploy that deleted their node is over");
    sim.control.resetRequests();
    assertFailed(await unlock({ pass: issued()[2_499].code }), "denied", null);
    assert.equal(unlockPuts(sim).length, 0);
  });

  it("a feed of 10,000 bookings (about 2 MB) is applied: 10,000 passes, each code once", async function () {
    // Bound by progress, not by the machine's speed: it fails only when no pass comes out for two minutes.
    this.timeout(0);
    const events: string[] = [];
    for (let i = 0; i < 10_000; i++) events.push(booking(`big-${i}`, `Guest ${i}`, 1 + (i % 300), 3 + (i % 300)));
    cal.body = feed(...events);
    await deploy();
    // The time it takes is the benchmark's (docs/passes.md#what-passes-cost); here only that it is applied.
    await untilCount("the passes issued", () => issued().length, 10_000, 120_000);
    assert.equal(new Set(issued().map((p) => p.code)).size, 10_000);
  });

  /** `n` events, each hourly from tomorrow with `count` occurrences. */
  function hourly(n: number, count: number): string {
    const start = new Date(Date.now() + DAY).toISOString().slice(0, 10).replace(/-/g, "");
    const ev: string[] = [];
    for (let i = 0; i < n; i++)
      ev.push(
        [
          "BEGIN:VEVENT",
          `UID:hourly-${i}@test`,
          `SUMMARY:Visit ${i}`,
          `DTSTART:${start}T${String(i % 24).padStart(2, "0")}0000Z`,
          `DTEND:${start}T${String(i % 24).padStart(2, "0")}3000Z`,
          `RRULE:FREQ=HOURLY;COUNT=${count}`,
          "END:VEVENT",
        ].join("\r\n"),
      );
    return feed(...ev);
  }

  /** The calendar warnings the door-pass node logged. */
  const calendarWarnings = () =>
    (helper.getNode("dp").warn.getCalls() as { args: unknown[] }[]).filter((c) => /calendar/.test(String(c.args[0])));
  const failedEvents = () => events.filter((m) => m.topic === "pass/calendar-failed").map((m) => m.payload);
  const book = () => accountOf().account.core.passes;
  const calendarPasses = async () => (await book().fromSource("dp")) as any[];

  // docs/passes.md#from-a-booking-calendar: a read past the account's capacity is not applied
  it("a small feed whose recurring events come to more bookings than the account's capacity (41 hourly events, COUNT=500) is not applied: no pass, one warning, Node-RED keeps running", async function () {
    this.timeout(120_000);
    cal.body = hourly(41, 500);
    assert.ok(Buffer.byteLength(cal.body) < 10_000, "a small feed");
    await deploy();
    await until("the first read's warning", () => calendarWarnings().length === 1, 60_000);
    const again = await sync();
    assert.ok("error" in again, "a sync of the same feed fails too");
    assert.equal((await calendarPasses()).length, 0, "no pass made");
    assert.equal((await book().list()).length, 0);
    assert.equal(issued().length, 0);
    assert.equal(calendarWarnings().length, 1, "one warning for the same problem");
    assert.equal(failedEvents().length, 1);
  });

  // docs/passes.md#from-a-booking-calendar: the passes already in the book count toward the capacity
  it("a read that would take a book already holding passes past the account's capacity changes nothing: one warning, a pass/calendar-failed event with reason capacity", async function () {
    this.timeout(120_000);
    cal.body = feed();
    await deploy();
    await until("the first read", () => /calendar read/.test(String(lastStatus(helper.getNode("dp"))?.text)));
    const now = Date.now();
    const held = MAX_PASSES - 100;
    await Promise.all(
      Array.from({ length: held }, (_, i) =>
        book().issue(
          {
            guest: `held ${i}`,
            doors: [{ deviceId: 101, door: null }],
            from: new Date(now).toISOString(),
            until: new Date(now + DAY).toISOString(),
            uses: null,
            ref: `held-${i}`,
          },
          8,
        ),
      ),
    );
    cal.body = hourly(41, 5); // 205 bookings: 100 more than there is room for
    const r = await sync();
    assert.ok("error" in r);
    assert.match(r.error.error.message, /205 passes to the 19900 the account keeps, more than its 20000/);
    assert.equal((await calendarPasses()).length, 0, "not one pass of the read");
    assert.equal((await book().list()).length, held);
    assert.equal(issued().length, 0);
    assert.equal(calendarWarnings().length, 1);
    assert.deepEqual(
      failedEvents().map((e) => e.reason),
      ["capacity"],
    );
  });

  // docs/passes.md#from-a-booking-calendar: a store that fails mid-apply; the next read completes it
  it("a passes file that cannot be written mid-apply: no crash, one warning, every pass kept was sent; the next read completes the rest, each booking one pass and one code", async function () {
    this.timeout(120_000);
    const n = 600;
    const list: string[] = [];
    for (let i = 0; i < n; i++) list.push(booking(`disk-${i}`, `Guest ${i}`, -1, 3));
    cal.body = feed(...list);
    // The passes file's first write goes through, every later one fails as on a full disk.
    const rename = fsp.rename;
    let writes = 0;
    let full = true;
    fsp.rename = async function (from: any, to: any) {
      if (full && /passes-[^/]*\.json$/.test(String(to)) && ++writes > 1)
        throw Object.assign(new Error("ENOSPC: no space left on device, rename"), { code: "ENOSPC" });
      return rename.call(fsp, from, to);
    } as typeof fsp.rename;
    try {
      await deploy();
      await until("the first read's warning", () => calendarWarnings().length === 1, 60_000);
      assert.ok(writes > 1, "the file failed mid-apply");
      const kept = (await calendarPasses()).filter((p) => p.revoked === null);
      await until("the messages of the passes kept", () => issued().length >= kept.length, 10_000);
      assert.ok(kept.length < n, "the first read was not applied in full");
      assert.deepEqual(
        issued()
          .map((p) => p.id)
          .sort(),
        kept.map((p) => p.id).sort(),
        "every pass kept was sent with its code, and no code was sent for a pass not kept",
      );
      assert.deepEqual(
        failedEvents().map((e) => e.reason),
        ["store"],
      );
    } finally {
      full = false;
      fsp.rename = rename;
    }
    const r = await sync();
    assert.equal(r.action, "synced", JSON.stringify(r.error?.error?.message));
    const all = await calendarPasses();
    assert.equal(all.length, n, "one pass per booking");
    assert.equal(new Set(all.map((p) => p.ref)).size, n);
    assert.equal(issued().length, n, "each booking's code sent once");
    assert.equal(new Set(issued().map((p) => p.ref)).size, n);
    assertAccepted(await unlock({ pass: issued()[n - 1].code }));
  });

  // docs/passes.md#from-a-booking-calendar: a read that cannot resolve its doors still revokes and shortens
  it("a read whose door was renamed still revokes a cancelled booking and shortens a shorter one, issues nothing and lengthens nothing, and says why (warning, status, pass/calendar-failed reason doors)", async () => {
    cal.body = feed(booking("b1", "Ada", -1, 5), booking("b2", "Bo", -1, 3), booking("b5", "Cy", -1, 2));
    await deploy();
    await until("three passes", () => issued().length === 3);
    const [a, b, c] = ["b1", "b2", "b5"].map((ref) => issued().find((p) => p.ref === ref));
    const res = await fetch(`${sim.url}/_sim/devices/101`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Main Entrance" }),
    });
    assert.equal(res.status, 204);
    await accountOf().account.directory.devices(true);
    cal.body = feed(
      booking("b1", "Ada", -1, 3),
      booking("b2", "Bo", -1, 3, ["STATUS:CANCELLED"]),
      booking("b3", "Dee", -1, 2),
      booking("b5", "Cy", -1, 6),
    );
    const r = await sync();
    assert.ok("error" in r);
    assert.match(assertFailed(await unlock({ pass: b.code }), "denied", null).message, /revoked/);
    assert.match(r.error.error.message, /doors could not be resolved/);
    assert.equal(issued().length, 3, "nothing issued");
    const upd = outs.filter((m) => m.payload.action === "updated").map((m) => m.payload);
    assert.deepEqual(
      upd.map((p) => p.id),
      [a.id],
      "the shorter booking's pass shortened, the longer one's not lengthened",
    );
    assert.ok(Date.parse(upd[0].until) < Date.parse(a.until));
    assert.equal((await calendarPasses()).find((p) => p.id === c.id).until, c.until);
    assertAccepted(await unlock({ pass: a.code }));
    assert.equal(calendarWarnings().length, 1);
    assert.deepEqual(
      failedEvents().map((e) => e.reason),
      ["doors"],
    );
    const dp = helper.getNode("dp");
    const statuses = (dp.status.getCalls() as any[]).filter((c) => c.thisValue === dp).map((c) => c.args[0]?.text);
    assert.ok(
      statuses.some((t) => /calendar: doors not found/.test(String(t))),
      `the status said why: ${statuses.join(" | ")}`,
    );
  });

  /** One command to a Redis server over a raw connection: its reply's lines (an array's items, or the one line). */
  function redisCall(port: number, ...args: string[]): Promise<string[]> {
    return new Promise((resolve, reject) => {
      const c = connect({ port, host: "127.0.0.1" });
      let got = "";
      c.on("data", (d: Buffer) => {
        got += d.toString();
        const lines = got.split("\r\n");
        const need = got.startsWith("*") ? 1 + 2 * Number(lines[0].slice(1)) : 1;
        if (lines.length > need) {
          c.destroy();
          resolve(got.startsWith("*") ? lines.slice(1, need).filter((_, i) => i % 2 === 1) : [lines[0]]);
        }
      });
      c.on("error", reject);
      c.write(`*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join(""));
    });
  }
  /** The passes stored in Redis (read commands only: they run while Redis holds writes). */
  async function storedPasses(port: number): Promise<number> {
    const [key] = await redisCall(port, "KEYS", "*:passes");
    return key === undefined ? 0 : Number((await redisCall(port, "HLEN", key))[0].slice(1));
  }

  // docs/passes.md#from-a-booking-calendar: Redis going away mid-apply; the next read completes it
  it("redis-server stopped mid-apply: no crash, one warning (pass/calendar-failed reason store); the next read completes the rest, each booking one live pass whose code was sent", async function () {
    this.timeout(150_000);
    needProgram(this, "redis-server");
    const redis = await RedisServer.start();
    try {
      const n = 300;
      const list: string[] = [];
      for (let i = 0; i < n; i++) list.push(booking(`r-${i}`, `Guest ${i}`, -1, 3));
      cal.body = feed();
      await deploy({}, { sessionStore: "redis", redisUrl: redis.url, redisKeyPrefix: "door-access:" });
      await until("the first read", () => /calendar read/.test(String(lastStatus(helper.getNode("dp"))?.text)));
      cal.body = feed(...list);
      // Mid-apply, forced: the book's first STORED pass writes (the ISSUE script) go through and are
      // answered; the next one waits until they are, then Redis stops, and it and every later write fail.
      const STORED = 100;
      const book = accountOf().account.core.passes as { redis: PassCommands };
      const store = book.redis;
      const first: Promise<unknown>[] = [];
      let stopped: Promise<void> | null = null;
      let keptAtStop = -1;
      book.redis = Object.assign(Object.create(store) as PassCommands, {
        command<T>(args: string[]): Promise<T> {
          if (args[0] !== "EVAL" || args[1] !== ISSUE) return store.command<T>(args);
          if (first.length < STORED) {
            const w = store.command<T>(args);
            first.push(w.catch(() => undefined));
            return w;
          }
          stopped ??= Promise.all(first).then(async () => {
            keptAtStop = await storedPasses(redis.port);
            await redis.stop();
          });
          return stopped.then(() => store.command<T>(args));
        },
      });
      const c = caught.length;
      try {
        helper.getNode("dp").receive({ payload: { action: "sync" } });
        await until("the sync's error", () => caught.length > c, 60_000);
      } finally {
        book.redis = store;
      }
      assert.equal(keptAtStop, STORED, "stopped mid-apply: the first writes stored, none after");
      assert.equal(calendarWarnings().length, 1);
      assert.deepEqual(
        failedEvents().map((e) => e.reason),
        ["store"],
      );
      assert.equal(issued().length, STORED, "each pass stored before Redis went away was sent with its code");
      // Back, empty (no persistence): the next read gives every booking its pass again.
      await redis.resume();
      let r: any = { error: true };
      for (let i = 0; i < 10 && "error" in r; i++) {
        r = await sync(90_000);
        if ("error" in r) await new Promise((res) => setTimeout(res, 500));
      }
      assert.equal(r.action, "synced", JSON.stringify(r.error?.error?.message));
      const live = (await calendarPasses()).filter((p) => p.revoked === null);
      assert.equal(live.length, n, "one live pass per booking");
      assert.equal(new Set(live.map((p) => p.ref)).size, n);
      await until("the messages of the read", () => issued().length >= n, 10_000);
      const sent = new Set(issued().map((p) => p.id));
      assert.deepEqual(
        live.filter((p) => !sent.has(p.id)).map((p) => p.ref),
        [],
        "every live pass's code was sent",
      );
      const last = issued().find((p) => p.id === live[live.length - 1].id);
      assertAccepted(await unlock({ pass: last.code }));
    } finally {
      await redis.stop();
    }
  });
});
