/**
 * A pass with weekly hours in a real Node-RED runtime against the simulator, on both books (the
 * passes file, and the account's Redis store): a door-unlock with Accept passes opens for it
 * inside its windows and refuses it outside them with reason `pass`, naming the next opening in
 * local time in the pass's zone, and sends nothing; bad hours are invalid input naming the field,
 * and nothing is stored (docs/passes.md#issue, docs/passes.md#at-a-door-unlock). PUTs are counted
 * at the simulator. The window arithmetic on the nights the clocks change: test/passes/pass.test.ts.
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { forgetPassBooks } from "../../src/passes/pass-book.js";
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

    before(async function () {
      if (store === "redis") needProgram(this, "redis-server");
      if (store === "redis") redis = await RedisServer.start();
    });
    after(async () => {
      await redis?.stop();
    });
    beforeEach(async () => {
      sim = await startSim();
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
          ...helperNodes("u1-ok", "u1-fail", "dp-out"),
          ...catchNode(),
        ],
        { nodes: NODES },
      );
      outs = received("dp-out");
      caught = received("caught");
      await waitReady();
    });
    afterEach(async () => {
      await teardown();
      forgetPassBooks();
      await sim.close();
    });

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

    for (const [what, hours, field] of [
      ["a day 8", { schedule: [{ days: [8], from: "08:00", to: "12:00" }] }, "schedule"],
      ["a window from 8:00", { schedule: [{ days: [2], from: "8:00", to: "12:00" }] }, "schedule"],
      [
        "a zone that is none",
        { schedule: [{ days: [2], from: "08:00", to: "12:00" }], timeZone: "Mars/Olympus" },
        "timeZone",
      ],
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
