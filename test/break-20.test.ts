/**
 * Break review of bd8e582 (door-unlock: deferred 'sending' via onSending; unreadable message
 * fields are invalid-input). Real Node-RED runtime + simulator; PUTs counted at the simulator.
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../src/simulator/index.js";
import {
  TAB, accountNode, catchNode, helper, helperNodes, loadFlow, readAudit, startSim, tab, teardown, unlock, unlockFlow, unlockNode, unlockRequests, until, waitReady,
} from "./helpers/flow.js";
import { type Status, withoutOnSendHooks, settle } from "./helpers/odd-messages.js";
import { unhandledSeen } from "./hooks/no-unhandled.js";
import { performUnlock } from "../src/unlock/unlock.js";

describe("break-20: bd8e582 door-unlock 'sending' and unreadable message fields", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;
  const seen: Status[] = [];
  const last = (): Status => seen[seen.length - 1] ?? {};
  let ok: any[] = [];
  let fail: any[] = [];

  async function load(flow: Record<string, unknown>[]): Promise<void> {
    ({ userDir } = await loadFlow(flow));
    await waitReady();
    const node = helper.getNode("u1");
    const own = node.status;
    node.status = function (this: unknown, st: Status) { seen.push(st); return own.call(this, st); };
    const o: any[] = [];
    const f: any[] = [];
    ok = o;
    fail = f;
    helper.getNode("u1-ok").on("input", (m: any) => { o.push(m); });
    helper.getNode("u1-fail").on("input", (m: any) => { f.push(m); });
  }
  const door = { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" };

  before(async () => {
    sim = await startSim();
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
    seen.length = 0;
  });
  afterEach(async () => {
    await teardown();
  });

  const mine = (id: string) => readAudit(userDir).filter((r) => r.msgid === id);

  describe("default flow", function () {
    beforeEach(async () => {
      await load(unlockFlow(sim.url, door));
    });

    for (const field of ["deviceId", "door", "lockId", "actor", "retain"]) {
      it(`held: a getter throwing on msg.${field} → invalid-input on output 2, no PUT, one unlock-rejected record, never 'sending'`, async () => {
        const id = `thr-${field}`;
        const msg: Record<string, unknown> = { _msgid: id, deviceId: 101 };
        Object.defineProperty(msg, field, { enumerable: true, configurable: true, get() { throw new Error(`boom ${field}`); } });
        const out = await unlock(msg);
        assert.equal(out.port, 1);
        assert.equal(out.msg.payload.outcome, "invalid-input");
        assert.match(out.msg.payload.message, new RegExp(`msg.${field} could not be read: boom ${field}`));
        await until("record", () => mine(id).length > 0, 5000);
        await settle();
        assert.deepEqual(mine(id).map((r) => [r.type, r.outcome]), [["unlock-rejected", "invalid-input"]]);
        assert.equal(unlockRequests(sim), 0);
        assert.ok(!seen.some((s) => s.fill === "blue"), JSON.stringify(seen));
        assert.equal(last().fill, "red");
      });
    }

    it("held: each field read exactly once by the node; the door used is the one read (getter returns 101 first, then 999)", async () => {
      withoutOnSendHooks();
      const reads: Record<string, number> = {};
      const msg: Record<string, unknown> = { _msgid: "varying" };
      for (const f of ["deviceId", "door", "lockId", "actor", "retain"]) {
        Object.defineProperty(msg, f, {
          enumerable: true, configurable: true,
          get() { reads[f] = (reads[f] ?? 0) + 1; if (f === "deviceId") return reads[f] === 1 ? 101 : 999; return f === "actor" && reads[f] > 1 ? "x".repeat(500) : undefined; },
        });
      }
      const out = await unlock(msg);
      assert.equal(out.msg.payload.outcome, "accepted", JSON.stringify(out.msg.payload));
      assert.equal(out.msg.payload.deviceId, 101);
      assert.deepEqual(reads, { deviceId: 1, door: 1, lockId: 1, actor: 1, retain: 1 });
      assert.equal(sim.control.requests({ operation: "unlockDevice", deviceId: 101 }).length, 1);
      assert.equal(unlockRequests(sim), 1);
    });

    it("held: _msgid getter that throws only on the node's own read (3rd read): invalid-input, one rejected record with msgid null, no PUT", async () => {
      let n = 0;
      const before = readAudit(userDir).length;
      const msg: Record<string, unknown> = { deviceId: 101, marker: "m3" };
      Object.defineProperty(msg, "_msgid", { enumerable: true, configurable: true, get() { n++; if (n === 3) throw new Error("third read"); return "mid-3"; }, set() { /* */ } });
      helper.getNode("u1").receive(msg);
      await until("output", () => fail.length + ok.length > 0, 5000);
      await settle();
      assert.equal(ok.length, 0);
      assert.equal(fail[0].payload.outcome, "invalid-input");
      assert.match(fail[0].payload.message, /msg._msgid could not be read: third read/);
      const recs = readAudit(userDir).slice(before);
      assert.deepEqual(recs.map((r) => [r.type, r.outcome, r.msgid]), [["unlock-rejected", "invalid-input", null]]);
      assert.equal(unlockRequests(sim), 0);
    });

    it("held: a Proxy msg whose get trap throws for 'door' → invalid-input, no PUT, one rejected record", async () => {
      const target: Record<string, unknown> = { _msgid: "proxy-1", deviceId: 101 };
      const msg = new Proxy(target, { get(t, k, r) { if (k === "door") throw new TypeError("trap says no"); return Reflect.get(t, k, r); } });
      const out = await unlock(msg);
      assert.equal(out.msg.payload.outcome, "invalid-input");
      await until("record", () => mine("proxy-1").length > 0, 5000);
      await settle();
      assert.deepEqual(mine("proxy-1").map((r) => r.type), ["unlock-rejected"]);
      assert.equal(unlockRequests(sim), 0);
    });

    it("held: the reason text of an unreadable field is bounded (10 000-char error message), carries no token, and the record has the msgid", async () => {
      const msg: Record<string, unknown> = { _msgid: "long-reason" };
      Object.defineProperty(msg, "deviceId", { enumerable: true, get() { throw new Error("Z".repeat(10000) + "\n\u0000"); } });
      const out = await unlock(msg);
      assert.equal(out.msg.payload.outcome, "invalid-input");
      await until("record", () => mine("long-reason").length > 0, 5000);
      const r = mine("long-reason")[0];
      assert.ok(String(r.reason).length < 260, String(r.reason).length.toString());
      const token = helper.getNode("acc1").account.session;
      const line = JSON.stringify(r);
      assert.ok(!/eyJ/.test(line), line);
      assert.ok(!line.includes("password"), line);
      void token;
    });

    it("a getter that throws a value that cannot become text (Object.create(null)): invalid-input on output 2 and one unlock-rejected record (Rules: bad input gets a clear error; failed on bd8e582)", async () => {
      const msg: Record<string, unknown> = { _msgid: "nullproto" };
      Object.defineProperty(msg, "deviceId", { enumerable: true, get() { throw Object.create(null); } });
      helper.getNode("u1").receive(msg);
      await until("the output on output 2", () => fail.length > 0, 5000);
      await until("the rejected record", () => mine("nullproto").length > 0, 5000);
      await settle();
      assert.equal(unlockRequests(sim), 0);
      assert.equal(fail[0].payload.outcome, "invalid-input");
      assert.match(fail[0].payload.message, /msg\.deviceId could not be read: a value that cannot be shown as text/);
      assert.deepEqual(mine("nullproto").map((r) => r.type), ["unlock-rejected"]);
    });

    for (const c of [
      { id: "payload-setter", what: "whose msg.payload setter throws", make: () => { const m: Record<string, unknown> = { _msgid: "payload-setter", deviceId: 101 }; Object.defineProperty(m, "payload", { enumerable: true, configurable: true, get() { return "x"; }, set() { throw new Error("read-only payload"); } }); return m; } },
      { id: "frozen", what: "frozen (Object.freeze)", make: () => Object.freeze({ _msgid: "frozen", deviceId: 101 }) as Record<string, unknown> },
    ]) {
      it(`an accepted unlock ${c.what}: one PUT, its unlock-result record written (CONTRACT "Audit log"), an error saying the door was unlocked, the status green (failed on bd8e582)`, async () => {
        const errors: string[] = [];
        const node = helper.getNode("u1");
        const ownErr = node.error;
        node.error = function (this: unknown, e: unknown, m: unknown) { errors.push(String(e)); return ownErr.call(this, e, m); };
        helper.getNode("u1").receive(c.make());
        await until("the attempt and result records", () => mine(c.id).length === 2, 5000);
        await until("the error", () => errors.length > 0, 5000);
        await settle();
        assert.equal(unlockRequests(sim), 1);
        assert.deepEqual(mine(c.id).map((r) => [r.type, r.outcome ?? null]), [["unlock-attempt", null], ["unlock-result", "accepted"]]);
        assert.equal(errors.length, 1, JSON.stringify(errors));
        assert.match(errors[0], /the outcome accepted \(the door was unlocked\) could not be set on the message/);
        assert.equal(last().fill, "green", JSON.stringify(seen));
        assert.equal(ok.length + fail.length, 0);
      });
    }

    it("held: 401 then replay: 'sending' once (re-shown after the refresh), accepted, 2 PUTs, attempt records [first, replay:true], result accepted", async () => {
      sim.control.expireAccessToken("demo");
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 100, count: 2 });
      const out = await unlock({ _msgid: "r401", deviceId: 101 });
      await settle();
      assert.equal(out.msg.payload.outcome, "accepted", JSON.stringify(out.msg.payload));
      assert.equal(unlockRequests(sim), 2);
      // onSending is called once; the second blue is the node's last result shown again when the
      // account is back to ready after its refresh (the replay is in flight): not a defect.
      assert.deepEqual(seen.map((s) => s.fill), ["blue", "yellow", "blue", "green"], JSON.stringify(seen));
      assert.equal(last().fill, "green");
      assert.deepEqual(mine("r401").map((r) => [r.type, r.replay ?? false]), [["unlock-attempt", false], ["unlock-attempt", true], ["unlock-result", false]]);
    });

    it("held: 30 messages in one tick (good slow, unreadable getter, invalid, unknown door) → one outcome each, one PUT per good one, final status = last outcome emitted, never 'sending'", async () => {
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 80 });
      const outs: Promise<any>[] = [];
      const kinds: string[] = [];
      for (let i = 0; i < 30; i++) {
        const k = i % 4;
        let m: Record<string, unknown>;
        if (k === 0) m = { deviceId: 101 };
        else if (k === 1) { m = {}; Object.defineProperty(m, "door", { enumerable: true, get() { throw new Error("nope"); } }); }
        else if (k === 2) m = { deviceId: "x" };
        else m = { door: "No Such Door" };
        kinds.push(["accepted", "invalid-input", "invalid-input", "invalid-input"][k]!);
        outs.push(unlock(m));
      }
      const got = await Promise.all(outs);
      await settle();
      assert.deepEqual(got.map((o) => o.msg.payload.outcome), kinds);
      assert.equal(unlockRequests(sim), 8);
      const lastOut = [...ok, ...fail].length;
      assert.equal(lastOut, 30);
      assert.notEqual(last().fill, "blue", JSON.stringify(seen.slice(-5)));
      assert.equal(last().fill, "green", JSON.stringify(seen.slice(-5)));
    });

    it("held: a halted (superseded) session: messages send nothing, never show 'sending'; an unreadable one is still invalid-input with its record", async () => {
      // Supersede twice within the hour → halted.
      sim.control.supersede("demo");
      await unlock({ deviceId: 101 });
      sim.control.supersede("demo");
      await unlock({ deviceId: 101 });
      await until("halted", () => helper.getNode("acc1").account.session.state === "halted-superseded", 5000);
      sim.control.resetRequests();
      seen.length = 0;
      const a = await unlock({ _msgid: "h1", deviceId: 101 });
      const msg: Record<string, unknown> = { _msgid: "h2" };
      Object.defineProperty(msg, "deviceId", { enumerable: true, get() { throw new Error("x"); } });
      const b = await unlock(msg);
      await settle();
      assert.equal(a.msg.payload.outcome, "session-halted");
      assert.equal(b.msg.payload.outcome, "invalid-input");
      assert.equal(unlockRequests(sim), 0);
      assert.ok(!seen.some((s) => s.fill === "blue"), JSON.stringify(seen));
      assert.deepEqual(mine("h2").map((r) => r.type), ["unlock-rejected"]);
    });

    it("held: redeploy (flows stopped) after 'sending' was shown for a slow PUT: outcome recorded, no status after close, no unhandled", async () => {
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 400 });
      const u0 = unhandledSeen().length;
      helper.getNode("u1").receive({ deviceId: 101, _msgid: "close-1" });
      await until("sending", () => last().fill === "blue", 5000, 2);
      await teardown();
      const n = seen.length;
      await settle();
      assert.equal(seen.length, n, JSON.stringify(seen.slice(n)));
      assert.notEqual(last().fill, "blue");
      assert.deepEqual(mine("close-1").map((r) => r.type), ["unlock-attempt", "unlock-result"]);
      assert.equal(unlockRequests(sim), 1);
      assert.equal(unhandledSeen().length, u0);
      await load(unlockFlow(sim.url, door)); // for afterEach
    });
  });

  describe("output 2 wired to two nodes (Node-RED clones the message for the second wire)", function () {
    beforeEach(async () => {
      const flow = [tab(), accountNode(sim.url), unlockNode({ ...door, wires: [["u1-ok"], ["u1-fail", "u1-fail2"]] }), ...helperNodes("u1-ok", "u1-fail", "u1-fail2")];
      await load(flow);
    });

    it("a getter throwing on msg.deviceId (Node-RED's copy for the second wire reads it again): exactly one unlock-rejected record, no PUT, the error logged (failed on bd8e582)", async () => {
      withoutOnSendHooks();
      const msg: Record<string, unknown> = { _msgid: "two-wires" };
      Object.defineProperty(msg, "deviceId", { enumerable: true, get() { throw new Error("no deviceId today"); } });
      const errors: unknown[] = [];
      const node = helper.getNode("u1");
      const ownErr = node.error;
      node.error = function (this: unknown, e: unknown, m: unknown) { errors.push(String(e)); return ownErr.call(this, e, m); };
      helper.getNode("u1").receive(msg);
      await until("the rejected record", () => mine("two-wires").length > 0, 5000);
      await until("the error", () => errors.length > 0, 5000);
      await settle();
      assert.equal(unlockRequests(sim), 0);
      assert.deepEqual(mine("two-wires").map((r) => r.type), ["unlock-rejected"], `node.error: ${JSON.stringify(errors)}; fail outputs: ${fail.length}`);
      assert.match(String(errors[0]), /the outcome invalid-input could not be sent to every node wired to the output/);
    });
  });

  describe("a Catch node on the tab", function () {
    beforeEach(async () => {
      const flow = [tab(), accountNode(sim.url), unlockNode({ ...door, wires: [["u1-ok"], ["u1-fail", "u1-fail2"]] }), ...helperNodes("u1-ok", "u1-fail", "u1-fail2"), ...catchNode()];
      await load(flow);
    });

    it("a getter throwing on msg.deviceId, output 2 wired to two nodes, a Catch node on the tab: no unhandled rejection or uncaught exception (Rules: nothing crashes the runtime; failed on bd8e582)", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      const msg: Record<string, unknown> = { _msgid: "catch-crash" };
      Object.defineProperty(msg, "deviceId", { enumerable: true, get() { throw new Error("no deviceId today"); } });
      helper.getNode("u1").receive(msg);
      await until("the rejected record", () => mine("catch-crash").length > 0, 5000);
      await settle();
      assert.equal(unlockRequests(sim), 0);
      assert.deepEqual(unhandledSeen().slice(u0).map((s) => s.stack.split("\n")[0]), []);
    });
  });

  describe("a Catch node on the tab, output 2 on one wire", function () {
    beforeEach(async () => {
      const flow = [tab(), accountNode(sim.url), unlockNode({ ...door }), ...helperNodes("u1-ok", "u1-fail"), ...catchNode()];
      await load(flow);
    });

    it("held: a getter throwing an Error on msg.deviceId: invalid-input on output 2, one rejected record, no unhandled", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      const msg: Record<string, unknown> = { _msgid: "catch-one-wire" };
      Object.defineProperty(msg, "deviceId", { enumerable: true, get() { throw new Error("no deviceId today"); } });
      helper.getNode("u1").receive(msg);
      await until("output", () => fail.length > 0, 5000);
      await settle();
      assert.equal(fail[0].payload.outcome, "invalid-input");
      assert.deepEqual(mine("catch-one-wire").map((r) => r.type), ["unlock-rejected"]);
      assert.equal(unhandledSeen().length, u0);
    });

    it("a getter throwing a value that cannot become text (Object.create(null)) with a Catch node on the tab: no unhandled rejection (Rules: nothing crashes the runtime; failed on bd8e582)", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      const msg: Record<string, unknown> = { _msgid: "catch-nullproto" };
      Object.defineProperty(msg, "deviceId", { enumerable: true, get() { throw Object.create(null); } });
      helper.getNode("u1").receive(msg);
      await until("the rejected record", () => mine("catch-nullproto").length > 0, 5000);
      await settle();
      assert.equal(unlockRequests(sim), 0);
      assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
    });
  });

  describe("performUnlock directly, on the running account", function () {
    beforeEach(async () => {
      await load(unlockFlow(sim.url, door));
    });

    it("held: an onSending that throws: the PUT still completes (one PUT), outcome accepted, records attempt+result, no unhandled", async () => {
      const u0 = unhandledSeen().length;
      const account = helper.getNode("acc1").account;
      let called = 0;
      const r = await performUnlock(
        account,
        { msgDeviceId: 101, msgDoor: undefined, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid: "onsending-throws" },
        { nodeId: "x", door: null, lockId: "", actor: "", rejectRetained: true },
        undefined,
        () => { called++; throw new Error("status boom"); },
      );
      await settle();
      assert.equal(r.outcome, "accepted");
      assert.equal(called, 1);
      assert.equal(unlockRequests(sim), 1);
      assert.deepEqual(mine("onsending-throws").map((x) => x.type), ["unlock-attempt", "unlock-result"]);
      assert.equal(unhandledSeen().length, u0);
    });

    it("held: onSending is not called when the PUT is never handed over (unknown door name, retained, unreadable)", async () => {
      let called = 0;
      const base = { msgDoor: undefined, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid: "no-send" };
      const settings = { nodeId: "x", door: null, lockId: "", actor: "", rejectRetained: true };
      const outs = [
        await performUnlock(helper.getNode("acc1").account, { ...base, msgDeviceId: undefined, msgDoor: "No Such Door" }, settings, undefined, () => { called++; }),
        await performUnlock(helper.getNode("acc1").account, { ...base, msgDeviceId: 101, msgRetain: true }, settings, undefined, () => { called++; }),
        await performUnlock(helper.getNode("acc1").account, { ...base, msgDeviceId: 101, unreadable: "msg.x could not be read" }, settings, undefined, () => { called++; }),
      ];
      await settle();
      assert.deepEqual(outs.map((o) => o.outcome), ["invalid-input", "retained-rejected", "invalid-input"]);
      assert.equal(called, 0);
      assert.equal(unlockRequests(sim), 0);
    });
  });
  void TAB;

  describe("door-status and door-devices with a Catch node on the tab", function () {
    beforeEach(async () => {
      const flow = [
        tab(), accountNode(sim.url),
        { id: "st", type: "door-status", z: TAB, name: "", account: "acc1", deviceId: "", doorName: "", doorLocation: "", wires: [["st-out", "st-out2"]] },
        { id: "dv", type: "door-devices", z: TAB, name: "", account: "acc1", wires: [["dv-out"]] },
        ...helperNodes("st-out", "st-out2", "dv-out"), ...catchNode(),
      ];
      ({ userDir } = await loadFlow(flow));
      await waitReady();
    });

    for (const id of ["st", "dv"]) {
      it(`${id === "st" ? "door-status" : "door-devices"}: a message with a getter that throws (on deviceId, and on refresh), which the Catch node's copy reads again: the error is logged, no unhandled rejection (Rules: nothing crashes the runtime; failed on bd8e582)`, async () => {
        withoutOnSendHooks();
        const u0 = unhandledSeen().length;
        const errors: string[] = [];
        const node = helper.getNode(id);
        const ownErr = node.error;
        node.error = function (this: unknown, e: unknown, m: unknown) { errors.push(String(e)); return ownErr.call(this, e, m); };
        const msg: Record<string, unknown> = { _msgid: `${id}-getter` };
        for (const field of ["deviceId", "refresh"]) Object.defineProperty(msg, field, { enumerable: true, get() { throw new Error(`no ${field} today`); } });
        node.receive(msg);
        await until("the error", () => errors.some((e) => /could not be handed on/.test(e)), 5000);
        await settle();
        assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
        assert.equal(unlockRequests(sim), 0);
      });
    }
  });
});
