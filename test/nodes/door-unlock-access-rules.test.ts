/**
 * door-unlock's access rules in a real Node-RED runtime against the simulator, one row of the
 * rule table at a time (docs/access-rules.md): actors with `*` (#actors), the schedule in a time
 * zone (#schedule, #time-zone-and-daylight-saving), the cooldown per door and lock (#cooldown),
 * the PIN and its lockout (#pin-and-lockout), the order of the rules and "a refusal counts for no
 * other rule" (#order-of-the-rules), rules that cannot be read (#configuration-errors), and what
 * the node does with them at run time: the `denied` outcome, its audit record, msg.pin, the node
 * status (#the-node-at-run-time). Commands are counted at the simulator's request log.
 *
 * Time: the runtime's clock is faked (sinon, `Date` only: Node-RED, the account and the simulator
 * read it; timers and undici keep real time), frozen at a chosen instant and moved by the test,
 * so that "the same millisecond", a window's edge and a lockout's 15 minutes are exact.
 */
import { strict as assert } from "node:assert";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import * as path from "node:path";
import sinon from "sinon";
import { type RunningSimulator, startSimulator } from "../../src/simulator/index.js";
import { CSV_COLUMNS, csvHeader, csvRow } from "../../src/audit/reader.js";
import { NodeRedProcess } from "../helpers/node-red-process.js";
import { RedisServer } from "../helpers/redis.js";
import { needProgram } from "../helpers/programs.js";
import { fileHandlePrototype, eio } from "../helpers/audit-faults.js";
import { withEnglishText } from "../helpers/catalogue.js";
import {
  ALL_NODES,
  CREDS,
  type Output,
  accountOf,
  assertAccepted,
  assertFailed,
  count,
  helper,
  helperNodes,
  loadFlow,
  readAudit,
  startSim,
  tab,
  teardown,
  unlock,
  unlockFlow,
  unlockNode,
  unlockRequests,
  until,
  waitReady,
  deployFlows,
} from "../helpers/flow.js";
import { OTHER_PIN, TEST_PIN, WRONG_PINS, ZERO_PIN } from "../helpers/pins.js";

// ---------------------------------------------------------------------------------- set-up

/** Tuesday 2026-01-06 09:00 UTC (10:00 in Europe/Oslo, UTC+1 in winter). */
const TUESDAY_0900Z = Date.UTC(2026, 0, 6, 9, 0, 0);
const MIN = 60_000;
const H = 60 * MIN;
const DAY = 24 * H;

/**
 * Node-RED's translation as a full runtime does it: the test helper's RED._ returns the key, so
 * the nodes here get one that reads our en-US catalogues (the status texts are then the ones a
 * user sees, with their values).
 */
const TRANSLATED = withEnglishText(ALL_NODES);

/** A door-unlock node on door 101 (stored id, name and location, as the editor picks it). */
const DOOR_101 = { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" };

interface Deploy {
  /** The node's rule properties (allowActors, schedule, timeZone, cooldown). */
  rules?: Record<string, unknown>;
  /** The node's `pin` credential. */
  pin?: string;
  /** Other properties of the door-unlock node. */
  node?: Record<string, unknown>;
  /** The instant the runtime's clock shows when the flow is deployed. */
  at?: number;
}

let sim: RunningSimulator;
let clock: sinon.SinonFakeTimers;
let userDir: string;

/** Deploys one door-unlock node (u1) with its rules; the request log starts empty. */
async function deploy(d: Deploy = {}): Promise<void> {
  clock.setSystemTime(d.at ?? TUESDAY_0900Z);
  const flow = unlockFlow(sim.url, { ...DOOR_101, ...d.rules, ...d.node });
  const creds = d.pin === undefined ? CREDS : { ...CREDS, u1: { pin: d.pin } };
  ({ userDir } = await loadFlow(flow, { creds, nodes: TRANSLATED }));
  await waitReady();
  sim.control.resetRequests();
}

/** Asserts a denied outcome: output 2, the contract's payload, nothing sent for it. */
function assertDenied(out: Output, reason: string, retryAfter?: number): Record<string, unknown> {
  const p = assertFailed(out, "denied", null);
  assert.equal(p.reason, reason, JSON.stringify(p));
  assert.equal(p.mayHaveOpened, false);
  if (retryAfter === undefined) assert.ok(!("retryAfter" in p), `no retryAfter for ${reason}: ${JSON.stringify(p)}`);
  else assert.equal(p.retryAfter, retryAfter, JSON.stringify(p));
  const keys = [
    "outcome",
    "status",
    "reason",
    "deviceId",
    "lockId",
    "door",
    "actor",
    "at",
    "message",
    "mayHaveOpened",
    ...(retryAfter === undefined ? [] : ["retryAfter"]),
  ];
  assert.deepEqual(Object.keys(p).sort(), keys.sort(), "the denied payload has the fields docs/outcomes.md lists");
  return p;
}

/** The door-unlock node's last status and its node.error calls. */
function statusOf(id = "u1"): { fill?: string; shape?: string; text?: string; pinRequired?: boolean } {
  const node = helper.getNode(id);
  const calls = node.status.getCalls().filter((c: { thisValue: unknown }) => c.thisValue === node);
  return calls.length ? calls[calls.length - 1].args[0] : {};
}
function errorsOf(id = "u1"): string[] {
  const node = helper.getNode(id);
  return node.error
    .getCalls()
    .filter((c: { thisValue: unknown }) => c.thisValue === node)
    .map((c: { args: unknown[] }) => String((c.args[0] as Error)?.message ?? c.args[0]));
}
/** Status is set in the turn after the message goes out. */
const settled = (): Promise<void> => new Promise((r) => setImmediate(() => setImmediate(r)));

function rejectedRecords(): Record<string, unknown>[] {
  return readAudit(userDir).filter((r) => r.type === "unlock-rejected");
}

describe("door-unlock access rules (Node-RED runtime + simulator; docs/access-rules.md)", function () {
  this.timeout(20_000);

  before(async () => {
    clock = sinon.useFakeTimers({ now: TUESDAY_0900Z, toFake: ["Date"] });
    // The simulator reads the same (faked) clock: tokens it issues are valid at the runtime's time.
    sim = await startSim({ rateLimit: false, now: () => Date.now() });
  });
  after(async () => {
    await sim?.close();
    clock?.uninstall();
  });
  afterEach(async () => {
    await teardown();
  });

  // ------------------------------------------------------------------------------ actors
  describe("allowActors (docs/access-rules.md#actors)", () => {
    it("an actor matching an entry (`*` = any run of characters, also none) opens; another is denied as actor, with nothing sent", async () => {
      await deploy({ rules: { allowActors: ["cleaner-*", "alice"] } });
      assertAccepted(await unlock({ actor: "cleaner-anna" }));
      assertAccepted(await unlock({ actor: "cleaner-" }));
      assertAccepted(await unlock({ actor: "alice" }));
      assert.equal(unlockRequests(sim), 3);
      for (const actor of ["Cleaner-anna", "alice@example.com", "bob"]) {
        const p = assertDenied(await unlock({ actor }), "actor");
        assert.equal(p.actor, actor);
        assert.match(p.message as string, /not among the actors allowed/);
      }
      assert.equal(unlockRequests(sim), 3, "no PUT for a denied actor");
    });

    it("without msg.actor the actor is the node's own (its Actor, else node-red:<id>), and the list applies to it", async () => {
      await deploy({ rules: { allowActors: ["node-red:*"] } });
      const p = assertAccepted(await unlock({}));
      assert.equal(p.actor, "node-red:u1");
      await teardown();
      await deploy({ rules: { allowActors: ["node-red:*"] }, node: { actor: "front-panel" } });
      assertDenied(await unlock({}), "actor");
      assert.equal(unlockRequests(sim), 0);
    });

    it("an empty list lets anyone through; `*` alone too", async () => {
      await deploy({ rules: { allowActors: ["*"] } });
      assertAccepted(await unlock({ actor: "anyone at all" }));
      assert.equal(unlockRequests(sim), 1);
    });

    it("actor and schedule are decided before the door is resolved: a denied message by name makes no device-list request, even without a list", async () => {
      // No list yet: every list fetch fails (the warm-up's too), so resolving a name would need the service.
      sim.control.inject({ kind: "non-json", endpoint: "listUserDevices", count: 1000 });
      try {
        clock.setSystemTime(TUESDAY_0900Z);
        ({ userDir } = await loadFlow(unlockFlow(sim.url, { allowActors: ["alice"] }), { nodes: TRANSLATED }));
        // The account's start-up fetch has failed; the next one is not due for 30 s.
        await until("the start-up list fetch to fail", () => accountOf()?.account?.directory.retryInMs() != null);
        sim.control.resetRequests();
        const lists = () => count(sim, "listUserDevices");
        const before = lists();
        const p = assertDenied(await unlock({ actor: "mallory", door: "Front Door" }), "actor");
        assert.equal(p.deviceId, null, "a name is not looked up for a message the actor rule refuses");
        assert.equal(lists(), before, "no list request for a message the actor rule refused");
        // The same name from an allowed actor does need the list (and fails here, sending nothing).
        const allowed = await unlock({ actor: "alice", door: "Front Door" });
        assert.equal(allowed.port, 1);
        assert.notEqual(allowed.msg.payload.outcome, "denied");
        assert.equal(unlockRequests(sim), 0);
      } finally {
        sim.control.clearFaults();
      }
    });

    it("a denied message names the door as far as it is known without the service: msg.deviceId, or the node's door", async () => {
      await deploy({ rules: { allowActors: ["alice"] } });
      const byId = assertDenied(await unlock({ actor: "mallory", deviceId: 104, lockId: 2 }), "actor");
      assert.deepEqual([byId.deviceId, byId.lockId, byId.door], [104, 2, "Loading Bay"]);
      const byNode = assertDenied(await unlock({ actor: "mallory" }), "actor");
      assert.deepEqual([byNode.deviceId, byNode.lockId, byNode.door], [101, null, "Front Door"]);
      assert.equal(unlockRequests(sim), 0);
    });
  });

  // ------------------------------------------------------------------------------ schedule
  describe("schedule and time zone (docs/access-rules.md#schedule)", () => {
    // The cleaner on Tuesday mornings, 07:00-12:00 in Oslo (UTC+1 in January).
    const CLEANER = { schedule: [{ days: [2], from: "07:00", to: "12:00" }], timeZone: "Europe/Oslo" };

    it("inside the window opens; at its end (exclusive) and on another day it is denied as schedule, saying the time it saw in the zone", async () => {
      await deploy({ rules: CLEANER, at: TUESDAY_0900Z }); // 10:00 in Oslo
      assertAccepted(await unlock({}));
      clock.setSystemTime(TUESDAY_0900Z + 1 * H + 59 * MIN + 59_999); // 11:59:59.999 in Oslo
      assertAccepted(await unlock({}));
      clock.setSystemTime(TUESDAY_0900Z + 2 * H); // 12:00 in Oslo
      const p = assertDenied(await unlock({}), "schedule");
      assert.equal(p.message, "outside this node's schedule: it is Tue 12:00 in Europe/Oslo");
      clock.setSystemTime(TUESDAY_0900Z + DAY - 2 * H); // Wednesday 08:00 in Oslo
      assertDenied(await unlock({}), "schedule");
      assert.equal(unlockRequests(sim), 2, "a PUT only inside the window");
      assert.equal(count(sim, "unlockDevice", 101), 2);
    });

    it("the zone decides: 06:30 UTC is 07:30 in Oslo (inside), and the same window read in UTC refuses it", async () => {
      await deploy({ rules: CLEANER, at: TUESDAY_0900Z - 2 * H - 30 * MIN });
      assertAccepted(await unlock({}));
      await teardown();
      await deploy({ rules: { ...CLEANER, timeZone: "UTC" }, at: TUESDAY_0900Z - 2 * H - 30 * MIN });
      assertDenied(await unlock({}), "schedule");
      assert.equal(unlockRequests(sim), 0);
    });

    it("an empty zone is the runtime's zone as its dates read it: with TZ set but empty (Node.js names no zone, its dates are UTC) a node deploys, one with no rule opens as before, and a schedule is read in UTC", async () => {
      const saved = process.env.TZ;
      process.env.TZ = ""; // as a container gets from `TZ=${TZ}` when the host has none
      try {
        await deploy({});
        assert.ok(helper.getNode("u1"), "a node with no rule is created");
        assertAccepted(await unlock({}));
        await teardown();
        await deploy({ rules: { schedule: [{ days: [2], from: "09:00", to: "10:00" }] }, at: TUESDAY_0900Z });
        assert.ok(helper.getNode("u1"), "a node with a schedule and no zone is created");
        assertAccepted(await unlock({}));
        clock.setSystemTime(TUESDAY_0900Z + H);
        const p = assertDenied(await unlock({}), "schedule");
        assert.equal(p.message, "outside this node's schedule: it is Tue 10:00 in UTC");
        assert.equal(unlockRequests(sim), 1, "a PUT only inside the window (since this deploy)");
      } finally {
        if (saved === undefined) delete process.env.TZ;
        else process.env.TZ = saved;
      }
    });

    it("a runtime zone Node.js cannot name while the runtime's dates are not UTC (TZ=:/etc/localtime on an Oslo host): a schedule without a zone of its own is a configuration error, never read in UTC; a node without a schedule still opens", async () => {
      const OSLO_FILE = "/usr/share/zoneinfo/Europe/Oslo";
      assert.ok(existsSync(OSLO_FILE), `premise: the system's zone files (${OSLO_FILE})`);
      const saved = process.env.TZ;
      process.env.TZ = `:${OSLO_FILE}`; // what TZ=:/etc/localtime gives when /etc/localtime is Oslo's
      try {
        assert.equal(new Date(TUESDAY_0900Z).getHours(), 10, "premise: the runtime's dates are Oslo's");
        // Tuesday 11:30 UTC is 12:30 in Oslo: outside 07:00-12:00 there, inside it in UTC.
        await deploy({
          rules: { schedule: [{ days: [2], from: "07:00", to: "12:00" }] },
          at: TUESDAY_0900Z + 2 * H + 30 * MIN,
        });
        const errors = errorsOf();
        assert.equal(errors.length, 1, JSON.stringify(errors));
        assert.match(errors[0], /time zone/);
        assertDenied(await unlock({}), "configuration");
        assert.equal(unlockRequests(sim), 0);
        await teardown();
        await deploy({ rules: { cooldown: 30 } });
        assertAccepted(await unlock({}));
      } finally {
        if (saved === undefined) delete process.env.TZ;
        else process.env.TZ = saved;
      }
    });

    it("a window past midnight (22:00-06:00 starting Monday) lets Tuesday 05:59 through and refuses 06:00", async () => {
      const monday2200 = TUESDAY_0900Z - 11 * H; // Monday 22:00 UTC
      await deploy({
        rules: { schedule: [{ days: [1], from: "22:00", to: "06:00" }], timeZone: "UTC" },
        at: monday2200,
      });
      assertAccepted(await unlock({}));
      clock.setSystemTime(monday2200 + 7 * H + 59 * MIN); // Tuesday 05:59
      assertAccepted(await unlock({}));
      clock.setSystemTime(monday2200 + 8 * H); // Tuesday 06:00
      assertDenied(await unlock({}), "schedule");
      assert.equal(unlockRequests(sim), 2);
    });
  });

  // ------------------------------------------------------------------------------ cooldown
  describe("cooldown per door and lock (docs/access-rules.md#cooldown)", () => {
    it("a second message for the door within the cooldown is denied with retryAfter, the seconds left; after it, the door opens again", async () => {
      await deploy({ rules: { cooldown: 30 } });
      assertAccepted(await unlock({ deviceId: 101 }));
      clock.tick(400);
      assertDenied(await unlock({ deviceId: 101 }), "cooldown", 30);
      clock.tick(21_100); // 21.5 s after the command
      const p = assertDenied(await unlock({ deviceId: 101 }), "cooldown", 9);
      assert.match(p.message as string, /try again in 9 s/);
      clock.tick(8_500); // 30.0 s after the command
      assertAccepted(await unlock({ deviceId: 101 }));
      assert.equal(unlockRequests(sim), 2);
    });

    it("five messages in the same millisecond for one door send exactly one command; the four others are denied as cooldown", async () => {
      await deploy({ rules: { cooldown: 30 } });
      const outs = await Promise.all([1, 2, 3, 4, 5].map(() => unlock({ deviceId: 101 })));
      assert.equal(outs.filter((o) => o.port === 0).length, 1, JSON.stringify(outs.map((o) => o.msg.payload)));
      for (const o of outs.filter((x) => x.port === 1)) assertDenied(o, "cooldown", 30);
      assert.equal(unlockRequests(sim), 1, "one PUT at the simulator");
      await until("four unlock-rejected records", () => rejectedRecords().length >= 4);
      const rejected = rejectedRecords();
      assert.equal(rejected.length, 4);
      assert.ok(rejected.every((r) => r.outcome === "denied" && r.reason === "cooldown" && r.deviceId === 101));
    });

    it("each lock of a door, and the whole door, has its own cooldown", async () => {
      await deploy({ rules: { cooldown: 30 } });
      assertAccepted(await unlock({ deviceId: 104, lockId: 1 }));
      assertAccepted(await unlock({ deviceId: 104, lockId: 2 }));
      assertAccepted(await unlock({ deviceId: 104 }));
      assertAccepted(await unlock({ deviceId: 101 }));
      assertDenied(await unlock({ deviceId: 104, lockId: 1 }), "cooldown", 30);
      assertDenied(await unlock({ door: "Harbour Warehouse / Loading Bay", lockId: 2 }), "cooldown", 30);
      assert.equal(unlockRequests(sim), 4);
    });

    it("counts from the command sent, whatever its answer: a command answered 503 (offline) starts it", async () => {
      await deploy({ rules: { cooldown: 30 } });
      assertFailed(await unlock({ deviceId: 105 }), "offline", 503);
      assertDenied(await unlock({ deviceId: 105 }), "cooldown", 30);
      assert.equal(unlockRequests(sim), 1);
    });

    it("a message that sent nothing (its attempt record could not be written) starts no cooldown", async () => {
      await deploy({ rules: { cooldown: 30 } });
      const { proto, orig } = await fileHandlePrototype();
      proto.write = function () {
        proto.write = orig.write;
        return Promise.reject(eio("write"));
      };
      let first;
      try {
        first = await unlock({ deviceId: 101 });
      } finally {
        proto.write = orig.write;
      }
      assertFailed(first, "error", null);
      assert.equal(unlockRequests(sim), 0);
      assertAccepted(await unlock({ deviceId: 101 }));
      assert.equal(unlockRequests(sim), 1);
    });

    it("a redeploy starts the node with no cooldowns", async () => {
      await deploy({ rules: { cooldown: 300 } });
      assertAccepted(await unlock({ deviceId: 101 }));
      assertDenied(await unlock({ deviceId: 101 }), "cooldown", 300);
      await deployFlows(unlockFlow(sim.url, { ...DOOR_101, cooldown: 300, name: "front" }), "nodes", CREDS);
      assertAccepted(await unlock({ deviceId: 101 }));
      assert.equal(unlockRequests(sim), 2);
    });
  });

  // ------------------------------------------------------------------------------ PIN
  describe("PIN (docs/access-rules.md#pin-and-lockout)", () => {
    it("the right PIN as text or as a number opens; a wrong one, or one of another type, is denied as pin", async () => {
      await deploy({ pin: TEST_PIN });
      assertAccepted(await unlock({ pin: TEST_PIN }));
      assertAccepted(await unlock({ pin: Number(TEST_PIN) }));
      const wrong = assertDenied(await unlock({ pin: WRONG_PINS[0] }), "pin");
      assert.equal(wrong.message, "wrong PIN");
      assertDenied(await unlock({ pin: { pin: TEST_PIN } }), "pin");
      assertDenied(await unlock({ pin: ` ${TEST_PIN}` }), "pin");
      assert.equal(unlockRequests(sim), 2);
    });

    it("a PIN that starts with 0 matches only as text: as a number it is wrong", async () => {
      await deploy({ pin: ZERO_PIN });
      assertDenied(await unlock({ pin: Number(ZERO_PIN) }), "pin");
      assertAccepted(await unlock({ pin: ZERO_PIN }));
      assert.equal(unlockRequests(sim), 1);
    });

    it("a missing msg.pin is denied as pin and not counted as a wrong PIN: ten of them do not lock the node", async () => {
      await deploy({ pin: TEST_PIN });
      for (const pin of [undefined, null, "", undefined, undefined, null, "", undefined, undefined, undefined]) {
        const p = assertDenied(await unlock(pin === undefined ? {} : { pin }), "pin");
        assert.equal(p.message, "a PIN is needed: msg.pin is missing");
      }
      assertAccepted(await unlock({ pin: TEST_PIN }));
      assert.equal(unlockRequests(sim), 1);
    });

    // docs/access-rules.md#ending-a-lockout
    it("a PIN-only node keeps one lockout for the whole node; the host's flow ends it with msg.endLockout (a door named is refused, a message with a PIN ends nothing), one lockout-ended record names the actor, and the right PIN opens again", async () => {
      await deploy({ pin: TEST_PIN });
      for (let i = 0; i < 5; i++) assertDenied(await unlock({ pin: WRONG_PINS[i % WRONG_PINS.length] }), "pin");
      assertDenied(await unlock({ pin: TEST_PIN, deviceId: 102 }), "locked-out", 900);
      const withDoor = await unlock({ endLockout: true, deviceId: 101, actor: "owner" });
      assert.equal(withDoor.msg.payload.outcome, "invalid-input");
      const withPin = await unlock({ endLockout: true, pin: TEST_PIN, actor: "owner" });
      assert.equal(withPin.msg.payload.outcome, "invalid-input");
      assert.ok(!JSON.stringify(withPin.msg).includes(TEST_PIN), "the PIN is gone from the answer");
      assertDenied(await unlock({ pin: TEST_PIN }), "locked-out", 900);
      const ended = await unlock({ endLockout: true, actor: "owner" });
      assert.equal(ended.port, 1, "on output 2: no door was opened (docs/outcomes.md#door-unlock-outcomes)");
      assert.equal(ended.msg.payload.outcome, "lockout-ended");
      assert.deepEqual(ended.msg.payload.ended, [{ deviceId: null, door: null }]);
      assert.equal(unlockRequests(sim), 0, "ending a lockout sends nothing");
      assertAccepted(await unlock({ pin: TEST_PIN }));
      await until("the lockout-ended record", () => readAudit(userDir).some((r) => r.type === "lockout-ended"));
      const rec = readAudit(userDir).find((r) => r.type === "lockout-ended");
      assert.equal(rec.actor, "owner");
      assert.deepEqual(rec.ended, ["node"]);
    });

    // docs/audit-log.md#records
    it("the audit log tells a missing PIN from a wrong one: a denied record has the message beside the rule's word, and the CSV export has it in its message column", async () => {
      await deploy({ pin: TEST_PIN });
      assertDenied(await unlock({ _msgid: "no-pin" }), "pin");
      assertDenied(await unlock({ _msgid: "bad-pin", pin: WRONG_PINS[2] }), "pin");
      await until("both records", () => rejectedRecords().length >= 2);
      const byMsg = (id: string) => rejectedRecords().find((r) => r.msgid === id)!;
      assert.equal(byMsg("no-pin").reason, "pin");
      assert.equal(byMsg("no-pin").message, "a PIN is needed: msg.pin is missing");
      assert.equal(byMsg("bad-pin").reason, "pin");
      assert.equal(byMsg("bad-pin").message, "wrong PIN");
      assert.ok(CSV_COLUMNS.includes("message"));
      const csv =
        csvHeader() +
        rejectedRecords()
          .map((r) => csvRow(r as never))
          .join("");
      assert.match(csv.split("\r\n")[0], /,reason,message,/);
      assert.match(csv, /,pin,a PIN is needed: msg\.pin is missing,/);
      assert.match(csv, /,pin,wrong PIN,/);
      for (const pin of [TEST_PIN, ...WRONG_PINS]) assert.ok(!csv.includes(pin), "no PIN in the export");
    });

    it("msg.pin is deleted from the message on both outputs, and is in no audit record, error or status", async () => {
      await deploy({ pin: TEST_PIN });
      const ok = await unlock({ pin: TEST_PIN, topic: "front" });
      assertAccepted(ok);
      assert.ok(!("pin" in ok.msg), "no msg.pin on output 1");
      assert.equal(ok.msg.topic, "front", "the rest of the message goes on");
      const bad = await unlock({ pin: WRONG_PINS[1] });
      assertDenied(bad, "pin");
      assert.ok(!("pin" in bad.msg), "no msg.pin on output 2");
      await until(
        "both closing records",
        () => readAudit(userDir).filter((r) => r.type !== "unlock-attempt").length >= 2,
      );
      await settled();
      const audit = readFileSync(path.join(userDir, "door-access-audit.jsonl"), "utf8");
      for (const pin of [TEST_PIN, WRONG_PINS[1]]) {
        assert.ok(!audit.includes(pin), "no PIN in the audit log");
        assert.ok(!JSON.stringify(statusOf()).includes(pin), "no PIN in the status");
        assert.ok(!errorsOf().some((e) => e.includes(pin)), "no PIN in an error");
      }
    });

    it("msg.pin is deleted also by a node without a PIN, and without any rule", async () => {
      await deploy({});
      const out = await unlock({ pin: TEST_PIN });
      assertAccepted(out);
      assert.ok(!("pin" in out.msg));
      const bad = await unlock({ pin: TEST_PIN, deviceId: "101" });
      assertFailed(bad, "invalid-input", null);
      assert.ok(!("pin" in bad.msg));
      // One the message only inherits is hidden behind its own undefined.
      const inherited = Object.assign(Object.create({ pin: TEST_PIN }) as Record<string, unknown>, { deviceId: 101 });
      const out2 = await unlock(inherited);
      assertAccepted(out2);
      assert.equal(out2.msg.pin, undefined);
    });

    it("a message whose msg.pin cannot be removed (a frozen message) goes nowhere: nothing sent, no output, an error without the PIN", async () => {
      await deploy({ pin: TEST_PIN });
      const got: unknown[] = [];
      helper.getNode("u1-ok").on("input", (m: unknown) => got.push(m));
      helper.getNode("u1-fail").on("input", (m: unknown) => got.push(m));
      helper.getNode("u1").receive(Object.freeze({ _msgid: "frozen-pin", pin: TEST_PIN }));
      // The node ends the message right there (its error is the last thing it does with it).
      await until("the node's error", () => errorsOf().length > 0);
      await settled();
      assert.deepEqual(got, []);
      assert.equal(unlockRequests(sim), 0);
      const errors = errorsOf();
      assert.ok(
        errors.some((e) => /msg\.pin could not be removed/.test(e)),
        JSON.stringify(errors),
      );
      assert.ok(!errors.some((e) => e.includes(TEST_PIN)));
    });

    it("what a msg.pin getter throws is never quoted (it may hold the PIN): the message is invalid input, and its text, the audit record and the status say only that msg.pin could not be read", async () => {
      await deploy({ pin: TEST_PIN });
      const msg: Record<string, unknown> = {};
      Object.defineProperty(msg, "pin", {
        enumerable: true,
        configurable: true,
        get() {
          throw new Error(`not a PIN: ${WRONG_PINS[2]}`);
        },
      });
      const out = await unlock(msg);
      const p = assertFailed(out, "invalid-input", null);
      assert.equal(p.message, "msg.pin could not be read");
      assert.equal(unlockRequests(sim), 0);
      await until("its audit record", () => readAudit(userDir).some((r) => r.msgid === out.msg._msgid));
      await settled();
      const audit = readFileSync(path.join(userDir, "door-access-audit.jsonl"), "utf8");
      for (const text of [audit, JSON.stringify(statusOf()), ...errorsOf()])
        assert.ok(!text.includes(WRONG_PINS[2]), "the thrown PIN is nowhere");
    });

    it("a msg.pin that cannot be read (a getter that throws) is invalid input, and nothing is sent", async () => {
      await deploy({ pin: TEST_PIN });
      const msg: Record<string, unknown> = {};
      Object.defineProperty(msg, "pin", {
        enumerable: true,
        configurable: true,
        get() {
          throw new Error("no");
        },
      });
      const out = await unlock(msg);
      const p = assertFailed(out, "invalid-input", null);
      assert.match(p.message, /msg\.pin could not be read/);
      assert.equal(unlockRequests(sim), 0);
    });
  });

  // ------------------------------------------------------------------------------ lockout
  describe("lockout after 5 wrong PINs (docs/access-rules.md#pin-and-lockout)", () => {
    /** Five wrong PINs a minute apart; the last locks the node until 15 minutes after it. */
    async function lockOut(): Promise<number> {
      for (let i = 0; i < 5; i++) {
        if (i > 0) clock.tick(MIN);
        assertDenied(await unlock({ pin: WRONG_PINS[i] }), "pin");
      }
      return Date.now();
    }

    it('the fifth wrong PIN locks the node: status "locked: 5 wrong PINs, until HH:MM", the right PIN is denied as locked-out with retryAfter, until 15 minutes have passed', async () => {
      await deploy({ pin: TEST_PIN, rules: { timeZone: "UTC" } });
      const lockedAt = await lockOut(); // 09:04 UTC
      await settled();
      assert.deepEqual(statusOf(), {
        fill: "red",
        shape: "dot",
        text: "locked: 5 wrong PINs, until 09:19",
        pinRequired: true,
      });
      const p = assertDenied(await unlock({ pin: TEST_PIN }), "locked-out", 900);
      assert.match(p.message as string, /^locked: 5 wrong PINs, every message is refused until 09:19 \(UTC\)$/);
      clock.setSystemTime(lockedAt + 15 * MIN - 1);
      assertDenied(await unlock({ pin: TEST_PIN }), "locked-out", 1);
      assert.equal(unlockRequests(sim), 0, "nothing sent while locked");
      clock.setSystemTime(lockedAt + 15 * MIN);
      assertAccepted(await unlock({ pin: TEST_PIN }));
      await settled();
      assert.match(statusOf().text ?? "", /^accepted \d\d:\d\d:\d\d · rules$/);
      assert.equal(unlockRequests(sim), 1);
      await until("seven unlock-rejected records", () => rejectedRecords().length >= 7);
      const reasons = rejectedRecords().map((r) => r.reason);
      assert.deepEqual(reasons, ["pin", "pin", "pin", "pin", "pin", "locked-out", "locked-out"]);
    });

    // docs/nodes.md#node-status: every status time is on the runtime's clock.
    it("the lockout's status is on the runtime's clock, as the denied status beside it, whatever zone the rules use", async () => {
      await deploy({ pin: TEST_PIN, rules: { timeZone: "Pacific/Auckland" } });
      const lockedAt = await lockOut();
      await settled();
      const until = new Date(lockedAt + 15 * MIN);
      const hhmm = `${String(until.getHours()).padStart(2, "0")}:${String(until.getMinutes()).padStart(2, "0")}`;
      assert.equal(statusOf().text, `locked: 5 wrong PINs, until ${hhmm}`);
      // The refusal's own text names the rules' zone.
      const p = assertDenied(await unlock({ pin: TEST_PIN }), "locked-out", 900);
      assert.match(p.message as string, /\(Pacific\/Auckland\)$/);
    });

    it("wrong PINs count over a sliding 15 minutes: four, then one 15 minutes after the first, do not lock", async () => {
      await deploy({ pin: TEST_PIN });
      for (let i = 0; i < 4; i++) {
        if (i > 0) clock.tick(MIN);
        assertDenied(await unlock({ pin: WRONG_PINS[i] }), "pin");
      }
      clock.tick(12 * MIN); // 15 minutes after the first
      assertDenied(await unlock({ pin: WRONG_PINS[4] }), "pin");
      assertAccepted(await unlock({ pin: TEST_PIN }));
      assert.equal(unlockRequests(sim), 1);
    });

    // docs/access-rules.md#what-ends-a-lockout
    it("a redeploy of the node (its name changed) keeps the lockout, and its status says so before any message", async () => {
      await deploy({ pin: TEST_PIN, rules: { timeZone: "UTC" } });
      await lockOut();
      assertDenied(await unlock({ pin: TEST_PIN }), "locked-out", 900);
      clock.tick(MIN);
      await deployFlows(unlockFlow(sim.url, { ...DOOR_101, timeZone: "UTC", name: "front" }), "nodes", {
        ...CREDS,
        u1: { pin: TEST_PIN },
      });
      await until("the status of the kept lockout", () => statusOf().text === "locked: 5 wrong PINs, until 09:19");
      assertDenied(await unlock({ pin: TEST_PIN }), "locked-out", 840);
      assert.equal(unlockRequests(sim), 0);
    });

    // docs/access-rules.md#what-ends-a-lockout
    it("wrong PINs count across a redeploy: four before it and one after lock the node", async () => {
      await deploy({ pin: TEST_PIN });
      for (let i = 0; i < 4; i++) assertDenied(await unlock({ pin: WRONG_PINS[i] }), "pin");
      await deployFlows(unlockFlow(sim.url, { ...DOOR_101, name: "front" }), "nodes", {
        ...CREDS,
        u1: { pin: TEST_PIN },
      });
      const p = assertDenied(await unlock({ pin: WRONG_PINS[4] }), "pin");
      assert.match(p.message as string, /that was 5 wrong PINs within 15 minutes/);
      assertDenied(await unlock({ pin: TEST_PIN }), "locked-out", 900);
      assert.equal(unlockRequests(sim), 0);
    });

    // docs/access-rules.md#what-ends-a-lockout
    it("a deploy with an unreadable rule and then the rule fixed, the same PIN throughout, does not end the lockout", async () => {
      await deploy({ pin: TEST_PIN });
      await lockOut();
      const creds = { ...CREDS, u1: { pin: TEST_PIN } };
      await deployFlows(unlockFlow(sim.url, { ...DOOR_101, timeZone: "Not/AZone" }), "full", creds);
      assertDenied(await unlock({ pin: TEST_PIN }), "configuration");
      await deployFlows(unlockFlow(sim.url, DOOR_101), "full", creds);
      assertDenied(await unlock({ pin: TEST_PIN }), "locked-out", 900);
      assert.equal(unlockRequests(sim), 0);
    });

    // docs/access-rules.md#what-ends-a-lockout
    it("a deploy that gives the node another PIN ends the lockout and the count: the new PIN opens", async () => {
      await deploy({ pin: TEST_PIN });
      await lockOut();
      // A full deploy: every node starts again (the editor marks a node whose PIN was typed as changed).
      await deployFlows(unlockFlow(sim.url, DOOR_101), "full", { ...CREDS, u1: { pin: OTHER_PIN } });
      assertAccepted(await unlock({ pin: OTHER_PIN }));
      assert.equal(unlockRequests(sim), 1);
      await settled();
      assert.equal(statusOf().fill, "green");
    });
  });

  // ------------------------------------------------------------------------------ order
  describe("order of the rules; a refusal counts for no other (docs/access-rules.md#order-of-the-rules)", () => {
    it("rules are checked in order: actor before schedule before cooldown before PIN", async () => {
      const rules = {
        allowActors: ["alice"],
        schedule: [{ days: [2], from: "08:00", to: "12:00" }],
        timeZone: "UTC",
        cooldown: 60,
      };
      await deploy({ rules, pin: TEST_PIN });
      assertAccepted(await unlock({ actor: "alice", pin: TEST_PIN }));
      assertDenied(await unlock({ actor: "alice", pin: WRONG_PINS[0] }), "cooldown", 60);
      clock.tick(4 * H); // 13:00: outside the window, the cooldown long over
      assertDenied(await unlock({ actor: "alice", pin: WRONG_PINS[0] }), "schedule");
      assertDenied(await unlock({ actor: "bob", pin: WRONG_PINS[0] }), "actor");
      assert.equal(unlockRequests(sim), 1);
    });

    it("a message refused for its actor, the schedule or the cooldown never counts as a wrong PIN", async () => {
      const rules = {
        allowActors: ["alice"],
        schedule: [{ days: [2], from: "08:00", to: "12:00" }],
        timeZone: "UTC",
        cooldown: 60,
      };
      await deploy({ rules, pin: TEST_PIN });
      for (const pin of WRONG_PINS) assertDenied(await unlock({ actor: "mallory", pin }), "actor");
      assertAccepted(await unlock({ actor: "alice", pin: TEST_PIN }));
      for (const pin of WRONG_PINS) assertDenied(await unlock({ actor: "alice", pin }), "cooldown", 60);
      clock.tick(4 * H);
      for (const pin of WRONG_PINS) assertDenied(await unlock({ actor: "alice", pin }), "schedule");
      clock.tick(DAY * 7 - 4 * H); // next Tuesday 09:00
      assertAccepted(await unlock({ actor: "alice", pin: TEST_PIN }));
      assert.equal(unlockRequests(sim), 2);
      await until("eighteen unlock-rejected records", () => rejectedRecords().length >= 18);
      const reasons = rejectedRecords().map((r) => r.reason);
      assert.ok(!reasons.includes("pin") && !reasons.includes("locked-out"), JSON.stringify(reasons));
    });

    it("a wrong PIN starts no cooldown: the right PIN straight after it opens", async () => {
      await deploy({ rules: { cooldown: 60 }, pin: TEST_PIN });
      assertDenied(await unlock({ pin: WRONG_PINS[0] }), "pin");
      assertAccepted(await unlock({ pin: TEST_PIN }));
      assert.equal(unlockRequests(sim), 1);
    });
  });

  // ------------------------------------------------------------------------------ configuration
  describe("rules that cannot be read refuse every message (docs/access-rules.md#configuration-errors)", () => {
    const BAD: [string, Deploy, RegExp][] = [
      [
        "an unknown time zone",
        { rules: { schedule: [{ days: [1, 2, 3, 4, 5], from: "08:00", to: "18:00" }], timeZone: "Mars/Olympus_Mons" } },
        /timeZone "Mars\/Olympus_Mons" is not a time zone/,
      ],
      [
        "a time of 25:00",
        { rules: { schedule: [{ days: [2], from: "25:00", to: "26:00" }] } },
        /from must be a time "HH:MM" between 00:00 and 23:59, got "25:00"/,
      ],
      ["a 3-digit PIN", { pin: "864" }, /the PIN must be 4 to 12 digits/],
    ];
    for (const [what, d, problem] of BAD) {
      it(`${what}: one error at deploy, a red status, every message denied as configuration and nothing sent`, async () => {
        await deploy(d);
        const errors = errorsOf();
        assert.equal(errors.length, 1, JSON.stringify(errors));
        assert.match(errors[0], problem);
        await settled();
        const st = statusOf();
        assert.deepEqual(
          { fill: st.fill, shape: st.shape, text: st.text },
          { fill: "red", shape: "ring", text: "rules cannot be read: every message refused" },
        );
        for (const msg of [{}, { deviceId: 102 }, { pin: TEST_PIN, actor: "alice" }]) {
          const p = assertDenied(await unlock(msg), "configuration");
          assert.match(p.message as string, problem);
          assert.match(p.message as string, /refuses every message/);
        }
        await settled();
        assert.deepEqual(
          statusOf(),
          {
            fill: "red",
            shape: "ring",
            text: "rules cannot be read: every message refused",
            pinRequired: statusOf().pinRequired,
          },
          "the error stays in the status",
        );
        assert.equal(unlockRequests(sim), 0);
        await until("the three unlock-rejected records", () => rejectedRecords().length >= 3);
        assert.deepEqual(
          rejectedRecords().map((r) => [r.outcome, r.reason]),
          [
            ["denied", "configuration"],
            ["denied", "configuration"],
            ["denied", "configuration"],
          ],
        );
        // (The records' hash chain is left out: three digits can turn up in any hex hash. The PIN is
        // looked for as a number of its own: ".864Z" in a record's time or a port is not it.)
        const records = JSON.stringify(readAudit(userDir).map(({ prev: _prev, ...r }) => r));
        const named = (text: string, pin: string): boolean =>
          new RegExp(`(?<![0-9A-Za-z.:])${pin}(?![0-9A-Za-z])`).test(text);
        if (d.pin)
          for (const text of [...errors, JSON.stringify(statusOf()), records])
            assert.ok(!named(text, d.pin), `the unreadable PIN is never named: ${text}`);
      });
    }

    // docs/access-rules.md#a-copied-node-and-its-pin
    it("a node marked pinSet without its PIN (a copy, an import: Node-RED never copies credentials) refuses every message as configuration, says 'PIN not set: enter it again', and sends nothing", async () => {
      await deploy({ node: { pinSet: true } });
      const errors = errorsOf();
      assert.equal(errors.length, 1, JSON.stringify(errors));
      assert.match(errors[0], /PIN not set: enter it again/);
      await settled();
      assert.deepEqual(statusOf(), {
        fill: "red",
        shape: "ring",
        text: "PIN not set: enter it again",
        pinRequired: true,
      });
      for (const msg of [{}, { pin: TEST_PIN }, { pin: "" }]) {
        const p = assertDenied(await unlock(msg), "configuration");
        assert.match(p.message as string, /PIN not set: enter it again/);
      }
      assert.equal(unlockRequests(sim), 0, "nothing was sent");
      await until("the three unlock-rejected records", () => rejectedRecords().length >= 3);
      assert.deepEqual(
        rejectedRecords().map((r) => r.reason),
        ["configuration", "configuration", "configuration"],
      );
    });

    // docs/access-rules.md#a-copied-node-and-its-pin
    it("a node marked pinSet with its PIN works as a node with a PIN; a node whose mark was cleared (the dialog's Remove PIN) opens without one", async () => {
      await deploy({ node: { pinSet: true }, pin: TEST_PIN });
      assertDenied(await unlock({}), "pin");
      assertAccepted(await unlock({ pin: TEST_PIN }));
      assert.equal(unlockRequests(sim), 1);
      await teardown();
      await deploy({ node: { pinSet: false } });
      assertAccepted(await unlock({}));
    });

    it("also without a usable account: denied as configuration, not opened", async () => {
      clock.setSystemTime(TUESDAY_0900Z);
      ({ userDir } = await loadFlow(
        [
          tab(),
          unlockNode({ account: "", timeZone: "Nowhere/Land", schedule: [{ days: [1], from: "08:00", to: "09:00" }] }),
          ...helperNodes("u1-ok", "u1-fail"),
        ],
        { nodes: TRANSLATED },
      ));
      assertDenied(await unlock({ deviceId: 101 }), "configuration");
    });
  });

  // ------------------------------------------------------------------------------ run time
  describe("the node at run time (docs/access-rules.md#the-node-at-run-time)", () => {
    it("a denied message: output 2 with the contract's payload, one unlock-rejected record naming the rule, the door and the actor", async () => {
      await deploy({ rules: { allowActors: ["alice"] } });
      const out = await unlock({ actor: "bob", deviceId: 101, topic: "t" });
      const p = assertDenied(out, "actor");
      assert.deepEqual(
        { ...p, at: "x", message: "x" },
        {
          outcome: "denied",
          status: null,
          reason: "actor",
          deviceId: 101,
          lockId: null,
          door: "Front Door",
          actor: "bob",
          at: "x",
          message: "x",
          mayHaveOpened: false,
        },
      );
      assert.equal(out.msg.topic, "t");
      await until("its audit record", () => readAudit(userDir).some((r) => r.msgid === out.msg._msgid));
      const audit = readAudit(userDir).filter((r) => r.msgid === out.msg._msgid);
      assert.equal(audit.length, 1, JSON.stringify(audit));
      assert.deepEqual(
        {
          type: audit[0].type,
          outcome: audit[0].outcome,
          reason: audit[0].reason,
          actor: audit[0].actor,
          deviceId: audit[0].deviceId,
          door: audit[0].door,
        },
        {
          type: "unlock-rejected",
          outcome: "denied",
          reason: "actor",
          actor: "bob",
          deviceId: 101,
          door: "Front Door",
        },
      );
    });

    it("bad input is answered invalid-input before any rule, also from an actor the rules refuse", async () => {
      await deploy({ rules: { allowActors: ["alice"] }, pin: TEST_PIN });
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ deviceId: "101" }, /msg\.deviceId must be a positive 32-bit integer/],
        [{ door: "" }, /door name is empty/],
        [{ door: 7 }, /msg\.door must be a door name/],
        [{ deviceId: 101, door: "\u0007" }, /msg\.door does not name one door: door name contains control characters/],
        [{ lockId: 0 }, /lockId must be a positive 32-bit integer/],
        [{ actor: "" }, /msg\.actor must be a non-empty string/],
      ];
      for (const [msg, why] of cases) {
        const p = assertFailed(await unlock({ actor: "mallory", pin: WRONG_PINS[0], ...msg }), "invalid-input", null);
        assert.match(p.message, why, JSON.stringify(msg));
        assert.ok(!("reason" in p));
      }
      assertAccepted(await unlock({ actor: "alice", pin: TEST_PIN }));
      assert.equal(unlockRequests(sim), 1, "bad input counted as no wrong PIN either");
    });

    // docs/nodes.md#node-status
    it("every status says whether the node asks for a PIN (pinRequired), for a Status node and a door panel: true with a PIN, false without", async () => {
      await deploy({ pin: TEST_PIN });
      await settled();
      assert.equal(statusOf().pinRequired, true);
      assertDenied(await unlock({ pin: WRONG_PINS[0] }), "pin");
      await settled();
      assert.equal(statusOf().pinRequired, true, "also on a result's status");
      await teardown();
      await deploy({ rules: { cooldown: 30 } });
      await settled();
      assert.equal(statusOf().pinRequired, false);
    });

    it('status: "ready · rules" once deployed; "denied: <rule> <time>" after a denied message; the last outcome otherwise', async () => {
      await deploy({ rules: { cooldown: 30 } });
      await settled();
      assert.deepEqual(statusOf(), { fill: "green", shape: "dot", text: "ready · rules", pinRequired: false });
      assertAccepted(await unlock({ deviceId: 101 }));
      await settled();
      assert.match(statusOf().text ?? "", /^accepted \d\d:\d\d:\d\d · rules$/);
      assertDenied(await unlock({ deviceId: 101 }), "cooldown", 30);
      await settled();
      assert.equal(statusOf().fill, "red");
      assert.match(statusOf().text ?? "", /^denied: cooldown \d\d:\d\d:\d\d · rules$/);
    });

    it("no rule set: the node behaves as one without rules (payload, audit, status), whether the properties are empty or absent", async () => {
      for (const rules of [{ allowActors: [], schedule: [], timeZone: "", cooldown: 0 }, {}]) {
        await deploy({ rules });
        await settled();
        assert.deepEqual(statusOf(), { fill: "green", shape: "dot", text: "ready", pinRequired: false });
        const outs = await Promise.all([1, 2, 3].map(() => unlock({ deviceId: 101 })));
        for (const o of outs)
          assert.deepEqual(Object.keys(assertAccepted(o)).sort(), [
            "actor",
            "at",
            "deviceId",
            "door",
            "lockId",
            "outcome",
            "status",
          ]);
        assert.equal(unlockRequests(sim), 3, "every message sends its command");
        await settled();
        assert.match(statusOf().text ?? "", /^accepted \d\d:\d\d:\d\d$/);
        assert.deepEqual(errorsOf(), []);
        await teardown();
      }
    });
  });
});

/** An http-in flow on a real Node-RED process: POST /unlock {pin} → door-unlock (door 101, with a PIN) → the outcome. */
function restartFlow(simUrl: string, store: Record<string, unknown>): unknown[] {
  return [
    { id: "tab1", type: "tab", label: "doors" },
    {
      id: "acc1",
      type: "door-account",
      name: "front account",
      baseUrl: simUrl,
      loginMethod: "phone",
      auditLog: "audit.jsonl",
      ...store,
      credentials: { phoneNumber: CREDS.acc1.phoneNumber, password: CREDS.acc1.password },
    },
    { id: "in1", type: "http in", z: "tab1", url: "/unlock", method: "post", upload: false, wires: [["set1"]] },
    {
      id: "set1",
      type: "change",
      z: "tab1",
      rules: [{ t: "move", p: "payload.pin", pt: "msg", to: "pin", tot: "msg" }],
      wires: [["u1"]],
    },
    {
      id: "u1",
      type: "door-unlock",
      z: "tab1",
      account: "acc1",
      ...DOOR_101,
      lockId: "",
      actor: "",
      rejectRetained: true,
      pinSet: true,
      credentials: { pin: TEST_PIN },
      wires: [["out1"], ["out1"]],
    },
    { id: "out1", type: "http response", z: "tab1", statusCode: "200", headers: {}, wires: [] },
  ];
}

describe("The wrong PINs and the lockout outlive a restart of Node-RED, on the file store and on the Redis store (docs/access-rules.md#what-ends-a-lockout)", function () {
  this.timeout(180_000);
  let sim: RunningSimulator;
  let redis: RedisServer | null = null;
  const running: NodeRedProcess[] = [];

  before(async () => {
    sim = await startSimulator({ rateLimit: false });
  });
  after(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await sim?.close();
    await redis?.stop();
  });

  async function ready(rt: NodeRedProcess): Promise<void> {
    const end = Date.now() + 30_000;
    for (;;) {
      const s = await rt.accountState("acc1");
      if (s.state === "ready") return;
      if (Date.now() > end) throw new Error(`account not ready: ${JSON.stringify(s)}\n${rt.log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function restart(rt: NodeRedProcess): Promise<NodeRedProcess> {
    await rt.stop();
    const again = await NodeRedProcess.start(rt.name, rt.userDir);
    running.push(again);
    await ready(again);
    return again;
  }

  const outcome = async (rt: NodeRedProcess, pin: string) => {
    const p = await rt.post("/unlock", { pin });
    return [p.outcome, p.reason, p.retryAfter ?? null];
  };

  for (const store of ["file", "redis"] as const) {
    it(`${store} store: three wrong PINs, a restart, two more lock the node; after another restart the right PIN is still refused until the 15 minutes are over`, async function () {
      let settings: Record<string, unknown> = {};
      if (store === "redis") {
        needProgram(this, "redis-server");
        redis ??= await RedisServer.start();
        settings = { sessionStore: "redis", redisUrl: redis.url, redisKeyPrefix: "door-access:" };
      }
      let rt = await NodeRedProcess.start(`pins-${store}`);
      running.push(rt);
      await rt.deploy(restartFlow(sim.url, settings));
      await ready(rt);
      sim.control.resetRequests();
      for (let i = 0; i < 3; i++) assert.deepEqual(await outcome(rt, WRONG_PINS[i]), ["denied", "pin", null]);
      rt = await restart(rt);
      assert.deepEqual(await outcome(rt, WRONG_PINS[3]), ["denied", "pin", null]);
      assert.deepEqual(await outcome(rt, WRONG_PINS[4]), ["denied", "pin", null]);
      const [o, reason, retryAfter] = await outcome(rt, TEST_PIN);
      assert.deepEqual(
        [o, reason],
        ["denied", "locked-out"],
        "the fifth wrong PIN, two before and three after a restart, locked it",
      );
      rt = await restart(rt);
      const after = await outcome(rt, TEST_PIN);
      assert.deepEqual(after.slice(0, 2), ["denied", "locked-out"], "the lockout outlived the restart");
      assert.ok(
        (after[2] as number) > 800 && (after[2] as number) <= (retryAfter as number),
        `retryAfter ${String(after[2])}`,
      );
      assert.equal(unlockRequests(sim), 0, "nothing was sent");
      // Kept beside the session: in a file of the user directory (0600, no PIN in it), or in Redis.
      const dir = path.join(rt.userDir, "door-access");
      const records = existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith("records-")) : [];
      if (store === "file") {
        assert.equal(records.length, 1, readdirSync(dir).join(", "));
        const file = path.join(dir, records[0]);
        assert.equal(statSync(file).mode & 0o777, 0o600);
        const text = readFileSync(file, "utf8");
        for (const pin of [TEST_PIN, ...WRONG_PINS]) assert.ok(!text.includes(pin), "no PIN in the records file");
        assert.match(text, /"lockout:u1"/);
      } else {
        assert.deepEqual(records, [], "on the Redis store nothing is kept in the user directory");
      }
    });
  }
});
