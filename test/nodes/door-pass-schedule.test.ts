/**
 * A pass with weekly hours in a real Node-RED runtime against the simulator, on both books (the
 * passes file, and the account's Redis store): a door-unlock with Accept passes opens for it
 * inside its windows and refuses it outside them with reason `pass`, naming the next opening in
 * local time in the pass's zone, and sends nothing; bad hours are invalid input naming the field,
 * and nothing is stored (docs/passes.md#issue, docs/passes.md#at-a-door-unlock). PUTs are counted
 * at the simulator. The window arithmetic on the nights the clocks change: test/passes/pass.test.ts.
 */
import { strict as assert } from "node:assert";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { forgetPassBooks } from "../../src/passes/file-pass-book.js";
import {
  ALL_NODES,
  assertAccepted,
  assertFailed,
  catchModule,
  catchNode,
  doorPassNode,
  helper,
  helperNodes,
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
import { formatOpening } from "../../src/util/week-schedule.js";
import { received } from "../helpers/odd-messages.js";
import { needProgram } from "../helpers/programs.js";
import { RedisServer } from "../helpers/redis.js";

const NODES = [...ALL_NODES, passModule, catchModule];
const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** The weekday (1..7), its English name and "HH:MM" of `at` on the wall clock of `zone`. */
function wall(at: number, zone: string): { day: number; name: string; hhmm: string } {
  const f = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    weekday: "long",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]));
  const names = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
  return { day: names.indexOf(parts.weekday) + 1, name: parts.weekday, hhmm: `${parts.hour}:${parts.minute}` };
}

/** One window of an hour or more from `start` to `end` on the wall clock of `zone` (overnight if it crosses midnight). */
function windowAround(start: number, end: number, zone: string) {
  const a = wall(start, zone);
  return { days: [a.day], from: a.hhmm, to: wall(end, zone).hhmm };
}

const DAY = 24 * HOUR;
/** A date N days from today (UTC), as iCalendar writes one. */
const date = (days: number) => new Date(Date.now() + days * DAY).toISOString().slice(0, 10).replace(/-/g, "");
/** A booking of whole days (check-in 15:00, check-out 11:00 in UTC: the calendar node's settings below). */
const booking = (uid: string, fromDays: number, toDays: number) =>
  [
    "BEGIN:VEVENT",
    `UID:${uid}`,
    `SUMMARY:Guest ${uid}`,
    `DTSTART;VALUE=DATE:${date(fromDays)}`,
    `DTEND;VALUE=DATE:${date(toDays)}`,
    "END:VEVENT",
  ].join("\r\n");
/** A listing's feed on loopback, whose bookings a test changes. */
class Feed {
  events: string[] = [];
  private server!: Server;
  url = "";
  async start(): Promise<void> {
    this.server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/calendar" });
      res.end(
        ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", ...this.events, "END:VCALENDAR", ""].join("\r\n"),
      );
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/listing.ics`;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

let outs: any[] = [];
let caught: any[] = [];

async function pass(payload: Record<string, unknown>): Promise<{ ok: any } | { error: any }> {
  const [o, c] = [outs.length, caught.length];
  helper.getNode("dp").receive({ payload });
  await until("the door-pass answer or its error", () => outs.length > o || caught.length > c, 10_000);
  return outs.length > o ? { ok: outs[o] } : { error: caught[c] };
}

for (const store of ["file", "redis"] as const) {
  describe(`a pass's weekly hours at a door-unlock, ${store} store: opens inside its windows, refused outside naming the next one in local time (docs/passes.md#at-a-door-unlock)`, function () {
    this.timeout(30_000);
    let sim: RunningSimulator;
    let redis: RedisServer | null = null;
    let feed: Feed;
    let calOuts: any[] = [];

    before(async function () {
      if (store === "redis") needProgram(this, "redis-server");
      if (store === "redis") redis = await RedisServer.start();
    });
    after(async () => {
      await redis?.stop();
    });
    beforeEach(async () => {
      sim = await startSim();
      feed = new Feed();
      await feed.start();
      const account = {
        id: "acc1",
        type: "door-account",
        name: "demo",
        baseUrl: sim.url,
        loginMethod: "phone",
        auditLog: "",
        ...(redis ? { sessionStore: "redis", redisUrl: redis.url, redisKeyPrefix: "door-access:" } : {}),
      };
      await loadFlow(
        [
          tab(),
          account,
          unlockNode({ deviceId: "101", doorName: "Back Door", doorLocation: "Main Street 1", acceptPasses: true }),
          doorPassNode("dp"),
          // A listing's calendar (docs/passes.md#between-guests-the-turnover-window); its codes go to cal-out.
          doorPassNode("cal", {
            name: "Apartment A",
            calendarUrl: feed.url,
            doors: ["Main Street 1 / Back Door"],
            checkIn: "15:00",
            checkOut: "11:00",
            timeZone: "UTC",
          }),
          ...helperNodes("u1-ok", "u1-fail", "dp-out", "cal-out"),
          ...catchNode(),
        ],
        { nodes: NODES },
      );
      outs = received("dp-out");
      calOuts = received("cal-out");
      caught = received("caught");
      await waitReady();
    });
    afterEach(async () => {
      await teardown();
      forgetPassBooks();
      await feed.stop();
      await sim.close();
    });

    /** Reads the listing's calendar now: its `synced` answer. */
    async function sync(): Promise<any> {
      const n = calOuts.filter((m) => m.payload.action === "synced").length;
      const c = caught.length;
      helper.getNode("cal").receive({ payload: { action: "sync" } });
      await until(
        "synced",
        () => calOuts.filter((m) => m.payload.action === "synced").length > n || caught.length > c,
        15_000,
      );
      assert.equal(caught.length, c, JSON.stringify(caught.slice(c)));
      return calOuts.filter((m) => m.payload.action === "synced")[n].payload;
    }

    it("inside its window the code opens (one PUT); outside, denied with reason pass, 'this code opens on <weekday> HH:MM' in the pass's zone (never ISO UTC), nothing sent; list shows the hours, state active", async () => {
      const now = Date.now();
      const inside = windowAround(now - HOUR, now + HOUR, "UTC");
      const opens = Math.floor((now + 2 * HOUR) / 60_000) * 60_000;
      const later = windowAround(opens, opens + HOUR, "Europe/Oslo");
      const base = {
        action: "issue",
        doors: ["Main Street 1 / Back Door"],
        from: iso(now - HOUR),
        until: iso(now + 30 * 24 * HOUR),
      };
      const a = await pass({ ...base, guest: `Anna (${store})`, schedule: [inside], timeZone: "UTC" });
      const b = await pass({ ...base, guest: `Bo (${store})`, schedule: [later], timeZone: "europe/oslo" });
      assert.ok("ok" in a && "ok" in b, JSON.stringify([a, b]));
      assert.deepEqual(b.ok.payload.schedule, [later]);
      assert.equal(b.ok.payload.timeZone, "Europe/Oslo", "the zone under Node.js's name");
      const book = helper.getNode("acc1").account.core.passes;
      assert.equal(book.constructor.name, store === "redis" ? "RedisPassBook" : "FilePassBook");
      sim.control.resetRequests();
      const opened = assertAccepted(await unlock({ pass: a.ok.payload.code }));
      assert.equal(opened.actor, `guest:Anna (${store})`);
      const refused = assertFailed(await unlock({ pass: b.ok.payload.code }), "denied", null);
      assert.equal(refused.reason, "pass");
      assert.equal(refused.message, `this code opens on ${wall(opens, "Europe/Oslo").name} ${later.from}`);
      assert.doesNotMatch(refused.message, /\d{4}-\d{2}-\d{2}T|Z\b/);
      assert.equal(unlockPuts(sim).length, 1, "one PUT: the pass inside its window");
      const listed = await pass({ action: "list" });
      assert.ok("ok" in listed);
      const view = listed.ok.payload.passes.find((p: any) => p.id === b.ok.payload.id);
      assert.deepEqual([view.state, view.schedule, view.timeZone], ["active", [later], "Europe/Oslo"]);
      assert.ok(!JSON.stringify(listed.ok.payload).includes(b.ok.payload.code), "a list never holds a code");
    });

    it("a turnover pass opens only between a check-out and the next check-in of its calendar, read at each message: before any check-out it is refused naming the next window in local time, after a check-out it opens, a booking moved onto now closes it, cancelled it opens again (docs/passes.md#between-guests-the-turnover-window)", async () => {
      const now = Date.now();
      feed.events = [booking("b", 2, 4), booking("c", 10, 11)];
      assert.deepEqual(await sync(), { action: "synced", issued: 2, updated: 0, revoked: 0 });
      const stay = (ref: string) => {
        const m = [...calOuts].reverse().find((o) => o.payload.ref === ref && o.payload.action !== "revoked")!;
        return { from: Date.parse(m.payload.from), until: Date.parse(m.payload.until) };
      };
      const cleaner = await pass({
        action: "issue",
        guest: `Anna (cleaner, ${store})`,
        doors: ["Main Street 1 / Back Door"],
        from: iso(now - HOUR),
        until: iso(now + 60 * DAY),
        timeZone: "UTC",
        turnover: "Apartment A",
      });
      assert.ok("ok" in cleaner, JSON.stringify(cleaner));
      assert.equal(cleaner.ok.payload.turnover, "cal", "kept as the calendar node's id");
      const code = cleaner.ok.payload.code;
      const window = (a: number, b: number) =>
        `this code opens only between a check-out and the next check-in: next from ${formatOpening(a, Date.now(), "UTC")} to ${formatOpening(b, Date.now(), "UTC")}`;
      sim.control.resetRequests();

      // No check-out yet: refused, naming b's check-out to c's check-in in the pass's zone.
      let refused = assertFailed(await unlock({ pass: code }), "denied", null);
      assert.equal(refused.reason, "pass");
      assert.equal(refused.message, window(stay("b").until, stay("c").from));
      assert.deepEqual(refused.passRefusal, { why: "closed", at: iso(stay("b").until), timeZone: "UTC" });
      assert.doesNotMatch(refused.message, /\d{4}-\d{2}-\d{2}T|Z\b/);
      assert.equal(unlockPuts(sim).length, 0, "nothing sent before a check-out");

      // The book as it is the day after a's stay: its pass, issued by the calendar while a was to
      // come, kept once over (a feed no longer lists a booking past; the book keeps its pass).
      const book = helper.getNode("acc1").account.core.passes;
      await book.issueBooking(
        {
          guest: "Guest a",
          doors: calOuts.find((o) => o.payload.ref === "b").payload.doors,
          from: iso(now - 3 * DAY),
          until: iso(now - 10 * HOUR),
          uses: null,
          ref: "a",
          source: "cal",
        },
        8,
      );
      // After a's check-out, before b's check-in: opens.
      assertAccepted(await unlock({ pass: code }));
      assert.equal(unlockPuts(sim).length, 1);

      // b moved to begin yesterday: a stay is under way, at once; the next window is b's check-out to c's check-in.
      feed.events = [booking("b", -1, 4), booking("c", 10, 11)];
      assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 1, revoked: 0 });
      refused = assertFailed(await unlock({ pass: code }), "denied", null);
      assert.equal(refused.message, window(stay("b").until, stay("c").from));
      assert.equal(unlockPuts(sim).length, 1, "nothing sent during the moved stay");

      // b cancelled: the window after a's check-out runs to c's check-in again, at once.
      feed.events = [booking("c", 10, 11)];
      assert.deepEqual(await sync(), { action: "synced", issued: 0, updated: 0, revoked: 1 });
      assertAccepted(await unlock({ pass: code }));
      assert.equal(unlockPuts(sim).length, 2, "one PUT per message inside a window, none outside");
    });

    // docs/passes.md#at-a-door-unlock: the guest page words the next opening from passRefusal
    it("outside its weekly hours the refusal as data names the next opening: passRefusal { why: closed, at (ISO), timeZone (the pass's) }, so a guest page says when the code opens in the guest's language (docs/passes.md#at-a-door-unlock)", async () => {
      const now = Date.now();
      const opens = Math.floor((now + 2 * HOUR) / 60_000) * 60_000;
      const later = windowAround(opens, opens + HOUR, "Europe/Berlin");
      const p = await pass({
        action: "issue",
        guest: `Cleaner (${store})`,
        doors: ["Main Street 1 / Back Door"],
        from: iso(now - HOUR),
        until: iso(now + 30 * 24 * HOUR),
        schedule: [later],
        timeZone: "Europe/Berlin",
      });
      assert.ok("ok" in p, JSON.stringify(p));
      sim.control.resetRequests();
      const refused = assertFailed(await unlock({ pass: p.ok.payload.code }), "denied", null);
      assert.equal(refused.reason, "pass");
      assert.deepEqual(refused.passRefusal, { why: "closed", at: iso(opens), timeZone: "Europe/Berlin" });
      assert.equal(unlockPuts(sim).length, 0, "nothing sent");
    });

    it("a booking whose pass the host revoked by hand still bounds the turnover window at its current dates: moved onto now, it closes the cleaner's door (docs/passes.md#between-guests-the-turnover-window)", async () => {
      const now = Date.now();
      feed.events = [booking("b", 2, 4), booking("c", 10, 11)];
      assert.deepEqual(await sync(), { action: "synced", issued: 2, updated: 0, revoked: 0 });
      const book = helper.getNode("acc1").account.core.passes;
      // A stay over yesterday (its pass kept by the book once over): the cleaner's window is open now.
      await book.issueBooking(
        {
          guest: "Guest a",
          doors: calOuts.find((o) => o.payload.ref === "b").payload.doors,
          from: iso(now - 3 * DAY),
          until: iso(now - 10 * HOUR),
          uses: null,
          ref: "a",
          source: "cal",
        },
        8,
      );
      const cleaner = await pass({
        action: "issue",
        guest: `Anna (cleaner, ${store})`,
        doors: ["Main Street 1 / Back Door"],
        from: iso(now - HOUR),
        until: iso(now + 60 * DAY),
        timeZone: "UTC",
        turnover: "Apartment A",
      });
      assert.ok("ok" in cleaner, JSON.stringify(cleaner));
      sim.control.resetRequests();
      assertAccepted(await unlock({ pass: cleaner.ok.payload.code }));
      // The host takes b's code back by hand (the guest comes all the same: a key, a new pass).
      const b = calOuts.find((o) => o.payload.ref === "b" && o.payload.action === "issued").payload;
      const revoked = await pass({ action: "revoke", id: b.id });
      assert.ok("ok" in revoked, JSON.stringify(revoked));
      // b moves to begin yesterday: the guest is staying now, the cleaner's door is closed.
      feed.events = [booking("b", -1, 4), booking("c", 10, 11)];
      const synced = await sync();
      assert.deepEqual([synced.issued, synced.revoked], [0, 0], "no new code for a booking revoked by hand");
      const refused = assertFailed(await unlock({ pass: cleaner.ok.payload.code }), "denied", null);
      assert.equal(refused.reason, "pass");
      assert.equal(refused.passRefusal.why, "closed");
      assert.equal(unlockPuts(sim).length, 1, "nothing sent while b's guest stays");
    });

    for (const [what, hours, field] of [
      ["a day 8", { schedule: [{ days: [8], from: "08:00", to: "12:00" }] }, "schedule"],
      ["a window from 8:00", { schedule: [{ days: [2], from: "8:00", to: "12:00" }] }, "schedule"],
      [
        "a zone that is none",
        { schedule: [{ days: [2], from: "08:00", to: "12:00" }], timeZone: "Mars/Olympus" },
        "timeZone",
      ],
      ["a turnover node without a calendar", { turnover: "dp" }, "turnover"],
      ["a turnover node that is none", { turnover: "Apartment Z" }, "turnover"],
      [
        "windows outside from and until",
        {
          schedule: [{ days: [2], from: "08:00", to: "12:00" }],
          from: "2026-12-02T00:00:00Z",
          until: "2026-12-07T00:00:00Z",
        },
        "schedule",
      ],
    ] as const) {
      it(`issue with ${what}: an error naming ${field}, code invalid-input, nothing stored`, async () => {
        const guest = `Cy ${what} (${store})`;
        const r = await pass({
          action: "issue",
          guest,
          doors: [102],
          from: "2026-12-01T00:00:00Z",
          until: "2027-03-01T00:00:00Z",
          ...hours,
        });
        assert.ok("error" in r, JSON.stringify(r));
        assert.match(r.error.error.message, new RegExp(`^door-pass: ${field}: `));
        assert.equal(r.error.error.code, "invalid-input");
        const listed = await pass({ action: "list" });
        assert.ok("ok" in listed);
        assert.equal(listed.ok.payload.passes.filter((p: any) => p.guest === guest).length, 0);
      });
    }
  });
}
