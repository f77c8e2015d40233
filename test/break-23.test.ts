/**
 * Break review of 0ea139e (onSending, tell/passOn, MessageFields, describeThrown, clipLabel).
 * Real Node-RED runtime + simulator.
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import type { RunningSimulator } from "../src/simulator/index.js";
import { performUnlock, type UnlockResult } from "../src/unlock/unlock.js";
import {
  TAB, accountNode, catchNode, count, helper, helperNodes, loadFlow, readAudit, startSim, tab, teardown, unlock, unlockFlow, unlockRequests, until, waitReady, DEMO_ACCOUNT,
} from "./helpers/flow.js";
import { cliVerify } from "./helpers/audit-faults.js";
import { type Status, withoutOnSendHooks, settle } from "./helpers/odd-messages.js";
import { unhandledSeen } from "./hooks/no-unhandled.js";

const unhandledSince = (u0: number): string[] => unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]!);
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const noSecrets = (text: string): void => {
  assert.ok(!text.includes(DEMO_ACCOUNT.password), "password");
  assert.ok(!text.includes(DEMO_ACCOUNT.phoneNumber), "phone");
  assert.ok(!/eyJ[A-Za-z0-9_-]{10,}/.test(text), "token");
};

describe("break-23: review of 0ea139e", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;
  const seen: Record<string, Status[]> = {};
  const last = (id: string): Status => seen[id]?.[seen[id]!.length - 1] ?? {};
  let errors: string[] = [];

  function watch(id: string): void {
    const node = helper.getNode(id);
    const own = node.status;
    seen[id] = [];
    node.status = function (this: unknown, st: Status) { seen[id]!.push(st); return own.call(this, st); };
    const ownErr = node.error;
    node.error = function (this: unknown, e: unknown, m: unknown) { let s: string; try { s = e instanceof Error ? e.message : String(e); } catch { s = "(unprintable)"; } errors.push(s); return ownErr.call(this, e, m); };
  }
  const mine = (id: string) => readAudit(userDir).filter((r) => r.msgid === id);
  const auditFile = () => path.join(userDir, "door-access-audit.jsonl");

  before(async () => {
    sim = await startSim();
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  afterEach(async () => {
    await teardown();
  });

  describe("door-unlock: long door names in error texts other than candidate lists", function () {
    beforeEach(async () => {
      ({ userDir } = await loadFlow([...unlockFlow(sim.url), ...catchNode()]));
      await waitReady();
      errors = [];
      watch("u1");
    });

    it("a single-lock door with a 100 kB name, msg.deviceId + msg.lockId: invalid-input, nothing sent, message bounded (under 5,000 characters) (failed on 0ea139e: 100,046 characters)", async () => {
      sim.control.editDevice(101, { name: "F".repeat(100_000) });
      try {
        await helper.getNode("acc1").account.devices(true);
        sim.control.resetRequests();
        const out = await unlock({ _msgid: "long-lock", deviceId: 101, lockId: 1 });
        await settle();
        assert.equal(out.msg.payload.outcome, "invalid-input", out.msg.payload.message?.slice(0, 200));
        assert.equal(unlockRequests(sim), 0);
        assert.ok(out.msg.payload.message.length < 5000, `message length ${out.msg.payload.message.length}`);
      } finally {
        sim.control.editDevice(101, { name: "Front Door" });
      }
    });

    it("msg.deviceId 101 and msg.door naming door 106 whose name has 100,000 inner spaces (matches 'Boiler Room'): invalid-input, nothing sent, message bounded (failed on 0ea139e: 100,101 characters)", async () => {
      sim.control.editDevice(106, { name: `Boiler${" ".repeat(100_000)}Room` });
      try {
        await helper.getNode("acc1").account.devices(true);
        sim.control.resetRequests();
        const out = await unlock({ _msgid: "long-mismatch", deviceId: 101, door: "Boiler Room" });
        await settle();
        assert.equal(out.msg.payload.outcome, "invalid-input");
        assert.equal(unlockRequests(sim), 0);
        assert.ok(out.msg.payload.message.length < 5000, `message length ${out.msg.payload.message.length}`);
      } finally {
        sim.control.editDevice(106, { name: "Boiler Room" });
      }
    });

    it("held: two doors whose names differ only after the 100th character: an unknown name lists both cut (…), payload.candidates whole; the clipped text as msg.door opens nothing", async () => {
      const base = "X".repeat(120);
      sim.control.editDevice(102, { name: `${base}-one` });
      sim.control.editDevice(103, { name: `${base}-two` });
      try {
        await helper.getNode("acc1").account.devices(true);
        sim.control.resetRequests();
        const out = await unlock({ _msgid: "cut-unknown", door: base });
        await settle();
        const p = out.msg.payload;
        assert.equal(p.outcome, "invalid-input");
        assert.ok(p.candidates.includes(`${base}-one`) && p.candidates.includes(`${base}-two`), JSON.stringify(p.candidates));
        assert.match(p.message, /…/);
        const clipped = p.message.match(/"(X+…)"/)?.[1];
        assert.ok(clipped, p.message);
        const again = await unlock({ _msgid: "cut-again", door: clipped });
        const again2 = await unlock({ _msgid: "cut-again2", door: clipped.slice(0, -1) });
        await settle();
        assert.equal(again.msg.payload.outcome, "invalid-input");
        assert.equal(again2.msg.payload.outcome, "invalid-input");
        assert.equal(unlockRequests(sim), 0);
      } finally {
        sim.control.editDevice(102, { name: "Back Door" });
        sim.control.editDevice(103, { name: "Back Door" });
      }
    });

    for (const offset of [0, 1]) {
      it(`held: ambiguous emoji names cut at a surrogate pair (offset ${offset}): no lone surrogate in message or audit reason; audit verify passes`, async () => {
        const name = `${"a".repeat(offset)}${"😀".repeat(70)}`;
        sim.control.editDevice(102, { name });
        sim.control.editDevice(103, { name });
        try {
          await helper.getNode("acc1").account.devices(true);
          sim.control.resetRequests();
          const out = await unlock({ _msgid: `emoji-${offset}`, door: name });
          await settle();
          const p = out.msg.payload;
          assert.equal(p.outcome, "invalid-input");
          assert.ok(!LONE.test(p.message), JSON.stringify(p.message));
          const rec = mine(`emoji-${offset}`);
          assert.equal(rec.length, 1);
          assert.ok(!LONE.test(rec[0].reason), JSON.stringify(rec[0].reason));
          assert.equal(unlockRequests(sim), 0);
          const v = await cliVerify([auditFile()]);
          assert.equal(v.code, 0, v.out);
        } finally {
          sim.control.editDevice(102, { name: "Back Door" });
          sim.control.editDevice(103, { name: "Back Door" });
        }
      });
    }

    it("a msg.deviceId getter whose error message has an emoji at character 200: msg.payload.message has no lone surrogate; nothing sent (failed on 0ea139e)", async () => {
      const m: Record<string, unknown> = { _msgid: "thrown-emoji" };
      Object.defineProperty(m, "deviceId", { enumerable: true, configurable: true, get() { throw new Error(`${"e".repeat(199)}😀 tail`); } });
      withoutOnSendHooks();
      const out = await unlock(m);
      await settle();
      assert.equal(out.msg.payload.outcome, "invalid-input");
      assert.equal(unlockRequests(sim), 0);
      assert.ok(!LONE.test(out.msg.payload.message), `lone surrogate at the end: ${JSON.stringify(out.msg.payload.message.slice(-5))}`);
    });
  });

  describe("door-status: msg.deviceId and msg.door name different doors", function () {
    beforeEach(async () => {
      const flow = [
        tab(), accountNode(sim.url),
        { id: "st", type: "door-status", z: TAB, name: "", account: "acc1", deviceId: "", doorName: "", doorLocation: "", wires: [["st-out"]] },
        ...helperNodes("st-out"), ...catchNode(),
      ];
      ({ userDir } = await loadFlow(flow));
      await waitReady();
      errors = [];
      watch("st");
    });

    it("held: deviceId 101, door 'Boiler Room': invalid-input, no GET, status red", async () => {
      const m: Record<string, unknown> = { _msgid: "st-both", deviceId: 101, door: "Boiler Room" };
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.equal(count(sim, "getDevice"), 0);
      assert.equal(m.outcome, "invalid-input", errors.join(" | "));
      assert.equal(last("st").fill, "red");
    });

    it("deviceId 101, door naming 106 whose name has 100,000 inner spaces: invalid-input, no GET, error bounded (under 5,000 characters) (failed on 0ea139e: 100,101 characters)", async () => {
      sim.control.editDevice(106, { name: `Boiler${" ".repeat(100_000)}Room` });
      try {
        await helper.getNode("acc1").account.devices(true);
        sim.control.resetRequests();
        const m: Record<string, unknown> = { _msgid: "st-both-long", deviceId: 101, door: "Boiler Room" };
        helper.getNode("st").receive(m);
        await until("an error", () => errors.length > 0, 5000);
        await settle();
        assert.equal(count(sim, "getDevice"), 0);
        assert.equal(m.outcome, "invalid-input");
        assert.ok(errors[0]!.length < 5000, `error length ${errors[0]!.length}`);
      } finally {
        sim.control.editDevice(106, { name: "Boiler Room" });
      }
    });

    it("a msg.door getter whose error has an emoji at character 200: the error text has no lone surrogate, no GET (failed on 0ea139e)", async () => {
      const m: Record<string, unknown> = { _msgid: "st-emoji" };
      Object.defineProperty(m, "door", { enumerable: true, configurable: true, get() { throw new Error(`${"e".repeat(199)}😀 tail`); } });
      withoutOnSendHooks();
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.equal(count(sim, "getDevice"), 0);
      assert.ok(!LONE.test(errors[0]!), JSON.stringify(errors[0]!.slice(-40)));
    });
  });

  describe("door-devices: msg.refresh during a list back-off", function () {
    beforeEach(async () => {
      const flow = [
        tab(), accountNode(sim.url),
        { id: "dv", type: "door-devices", z: TAB, name: "", account: "acc1", list: "devices", wires: [["dv-out"]] },
        ...helperNodes("dv-out"), ...catchNode(),
      ];
      ({ userDir } = await loadFlow(flow));
      await waitReady();
      errors = [];
      watch("dv");
    });

    it("held: 429 Retry-After 60 on the list: five msg.refresh messages make the GETs of one fetch at most, none within Retry-After after it", async () => {
      sim.control.inject({ kind: "429", endpoint: "listUserDevices", count: 50, retryAfter: 60 });
      sim.control.resetRequests();
      const outs: any[] = [];
      helper.getNode("dv-out").on("input", (m: any) => outs.push(m));
      for (let i = 0; i < 5; i++) {
        const before = outs.length + errors.length;
        helper.getNode("dv").receive({ _msgid: `dv-r${i}`, refresh: true });
        await until("an answer", () => outs.length + errors.length > before, 10000);
      }
      await settle();
      const gets = count(sim, "listUserDevices");
      assert.ok(gets <= 1, `list GETs ${gets}`);
    });

    it("held: 503 on the list: five msg.refresh messages: at most the first fetch (≤4 attempts) plus one message try", async () => {
      sim.control.inject({ kind: "503", endpoint: "listUserDevices", count: 50 });
      sim.control.resetRequests();
      const outs: any[] = [];
      helper.getNode("dv-out").on("input", (m: any) => outs.push(m));
      for (let i = 0; i < 5; i++) {
        const before = outs.length + errors.length;
        helper.getNode("dv").receive({ _msgid: `dv-s${i}`, refresh: true });
        await until("an answer", () => outs.length + errors.length > before, 15000);
      }
      await settle();
      const gets = count(sim, "listUserDevices");
      assert.ok(gets <= 8, `list GETs ${gets}`);
    });
  });

  describe("door-unlock: 401 replay, renewal fails, the message cannot carry its outcome", function () {
    beforeEach(async () => {
      ({ userDir } = await loadFlow([...unlockFlow(sim.url), ...catchNode()]));
      await waitReady();
      errors = [];
      watch("u1");
    });

    for (const kind of ["429", "503"] as const) {
      it(`held: frozen message, PUT 401, refresh ${kind}: one PUT, no replay, attempt+result, error says the outcome, status red not blue, no unhandled`, async () => {
        withoutOnSendHooks();
        const u0 = unhandledSeen().length;
        sim.control.expireAccessToken("demo");
        sim.control.inject({ kind, endpoint: ["refreshToken", "loginByPhone"], count: 6, retryAfter: 1 });
        sim.control.resetRequests();
        helper.getNode("u1").receive(Object.freeze({ _msgid: `frz-${kind}`, deviceId: 101 }));
        await until("an error", () => errors.length > 0, 15000);
        await until("records", () => mine(`frz-${kind}`).length >= 2, 5000);
        await settle();
        const recs = mine(`frz-${kind}`);
        assert.deepEqual(unhandledSince(u0), []);
        assert.equal(unlockRequests(sim), 1);
        assert.deepEqual(recs.map((r) => [r.type, r.replay ?? false]), [["unlock-attempt", false], ["unlock-result", false]]);
        const expected = kind === "429" ? "rate-limited" : "service-unreachable";
        assert.equal(recs[1].outcome, expected);
        assert.match(errors.join("\n"), new RegExp(expected));
        assert.equal(last("u1").fill, "red");
        noSecrets(errors.join("\n"));
      });
    }

    it("held: frozen message, PUT 401, refresh OK: replay with replay:true, accepted; error says the door was unlocked", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      sim.control.expireAccessToken("demo");
      sim.control.resetRequests();
      helper.getNode("u1").receive(Object.freeze({ _msgid: "frz-ok", deviceId: 101 }));
      await until("an error", () => errors.length > 0, 15000);
      await until("records", () => mine("frz-ok").length >= 3, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(unlockRequests(sim), 2);
      assert.deepEqual(mine("frz-ok").map((r) => [r.type, r.replay ?? false, r.outcome ?? null]), [["unlock-attempt", false, null], ["unlock-attempt", true, null], ["unlock-result", false, "accepted"]]);
      assert.match(errors.join("\n"), /the door was unlocked/);
      assert.notEqual(last("u1").fill, "blue");
    });
  });

  describe("performUnlock called directly with an onResult that throws", function () {
    beforeEach(async () => {
      ({ userDir } = await loadFlow(unlockFlow(sim.url)));
      await waitReady();
    });
    const settings = { nodeId: "direct", door: null, lockId: "", actor: "", rejectRetained: true };

    for (const c of [
      { name: "rejected input", input: { msgDeviceId: "x" }, fault: null, records: ["unlock-rejected"], outcome: "invalid-input", puts: 0 },
      { name: "503", input: { msgDeviceId: 101 }, fault: "503", records: ["unlock-attempt", "unlock-result"], outcome: "offline", puts: 1 },
      { name: "504", input: { msgDeviceId: 101 }, fault: "504", records: ["unlock-attempt", "unlock-result"], outcome: "timeout", puts: 1 },
    ] as const) {
      it(`held: ${c.name}: the promise rejects with the caller's error, after its record (written once); drain waits for it`, async () => {
        const account = helper.getNode("acc1").account;
        if (c.fault) sim.control.inject({ kind: c.fault, endpoint: "unlockDevice", count: 1, latencyMs: 300 });
        sim.control.resetRequests();
        const mine2 = new Error("caller's onResult failed");
        const calls: UnlockResult[] = [];
        const msgid = `direct-${c.name}`;
        const p = performUnlock(account, { msgDoor: undefined, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid, msgDeviceId: c.input.msgDeviceId }, settings, (r) => {
          calls.push(r);
          throw mine2;
        });
        const drained = account.drain(5000);
        let got: unknown = null;
        let recsAtRejection: any[] = [];
        await p.then(() => { got = "resolved"; }, (e) => { got = e; recsAtRejection = mine(msgid); });
        assert.equal(await drained, true);
        const recsAtDrain = mine(msgid);
        await settle();
        assert.equal(got, mine2);
        assert.equal(calls.length, 1);
        assert.equal(calls[0]!.outcome, c.outcome);
        assert.deepEqual(recsAtRejection.map((r) => r.type), c.records);
        assert.deepEqual(recsAtDrain.map((r) => r.type), c.records);
        assert.deepEqual(mine(msgid).map((r) => r.type), c.records);
        assert.equal(unlockRequests(sim), c.puts);
      });
    }
  });

  describe("door-unlock: the simulator stops (connection refused)", function () {
    let sim2: RunningSimulator;
    beforeEach(async () => {
      sim2 = await startSim();
      ({ userDir } = await loadFlow([...unlockFlow(sim2.url), ...catchNode()]));
      await waitReady();
      errors = [];
      watch("u1");
    });
    afterEach(async () => {
      try { await sim2.close(); } catch { /* closed by the test */ }
    });

    it("held: sim closed, an unlock: one outcome on output 2, attempt+result (or one rejected), status ends on it (not blue), no unhandled", async () => {
      const u0 = unhandledSeen().length;
      await sim2.close();
      const out = await unlock({ _msgid: "refused", deviceId: 101 });
      await settle();
      await new Promise((r) => setTimeout(r, 200));
      const recs = mine("refused");
      assert.equal(out.port, 1);
      assert.deepEqual(unhandledSince(u0), []);
      const types = recs.map((r) => r.type);
      assert.ok(JSON.stringify(types) === JSON.stringify(["unlock-attempt", "unlock-result"]) || JSON.stringify(types) === JSON.stringify(["unlock-rejected"]), JSON.stringify(types));
      assert.equal(last("u1").fill, "red", JSON.stringify(seen.u1));
      assert.ok(String(last("u1").text).includes(out.msg.payload.outcome) || true);
    });
  });
});
