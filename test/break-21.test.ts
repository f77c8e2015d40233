/**
 * Break review of 1f34024 (door-unlock: a message that cannot carry its outcome; endMessage;
 * describeThrown). Real Node-RED runtime + simulator; PUTs counted at the simulator.
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../src/simulator/index.js";
import {
  ALL_NODES, TAB, accountNode, catchModule, catchNode, helper, helperNodes, loadFlow, readAudit, startSim, tab, teardown, unlock, unlockFlow, unlockNode, unlockRequests, until, waitReady, DEMO_ACCOUNT,
} from "./helpers/flow.js";
import { type Status, withoutOnSendHooks, settle, revoked } from "./helpers/odd-messages.js";
import { unhandledSeen } from "./hooks/no-unhandled.js";
import { resolveFromNodeRed } from "./helpers/runtime.js";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const completeModule: unknown = require(resolveFromNodeRed("@node-red/nodes/core/common/24-complete.js"));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const statusModule: unknown = require(resolveFromNodeRed("@node-red/nodes/core/common/25-status.js"));

describe("break-21: review of 1f34024, messages that cannot carry their outcome", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;
  const seen: Status[] = [];
  const last = (): Status => seen[seen.length - 1] ?? {};
  let ok: any[] = [];
  let fail: any[] = [];
  let errors: string[] = [];

  function watch(id: string): void {
    const node = helper.getNode(id);
    const own = node.status;
    node.status = function (this: unknown, st: Status) { seen.push(st); return own.call(this, st); };
    const ownErr = node.error;
    node.error = function (this: unknown, e: unknown, m: unknown) { let s: string; try { s = String(e); } catch { s = "(unprintable)"; } errors.push(s); return ownErr.call(this, e, m); };
  }

  async function load(flow: Record<string, unknown>[], nodes?: unknown[]): Promise<void> {
    ({ userDir } = await loadFlow(flow, nodes ? { nodes } : {}));
    await waitReady();
    errors = [];
    watch("u1");
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

  describe("default flow: fields that cannot be described", function () {
    beforeEach(async () => {
      await load(unlockFlow(sim.url, door));
    });

    for (const field of ["actor", "lockId"]) {
      it(`msg.${field} is a revoked Proxy: invalid-input on output 2, one unlock-rejected record, no PUT, status red (CONTRACT "Rejected inputs get one unlock-rejected record"; failed on 85ab683)`, async () => {
        const u0 = unhandledSeen().length;
        const id = `revoked-${field}`;
        const msg: Record<string, unknown> = { _msgid: id, deviceId: 101, [field]: revoked() };
        helper.getNode("u1").receive(msg);
        await until("an output or an error", () => ok.length + fail.length + errors.length > 0, 5000);
        await settle();
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(unlockRequests(sim), 0);
        assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
        assert.deepEqual(
          { outputs: [...ok, ...fail].map((m) => m.payload?.outcome), records: mine(id).map((r) => [r.type, r.outcome]), lastFill: last().fill ?? null },
          { outputs: ["invalid-input"], records: [["unlock-rejected", "invalid-input"]], lastFill: "red" },
          `node.error: ${JSON.stringify(errors)}`,
        );
      });
    }

    for (const field of ["deviceId", "door"]) {
      it(`msg.${field} is a revoked Proxy: invalid-input on output 2 (CONTRACT outcome table: a bad deviceId or door), one unlock-rejected record, no PUT (failed on 85ab683: outcome error)`, async () => {
        const id = `revoked-${field}`;
        const msg: Record<string, unknown> = { _msgid: id, [field]: revoked() };
        helper.getNode("u1").receive(msg);
        await until("an output or an error", () => ok.length + fail.length + errors.length > 0, 5000);
        await settle();
        assert.equal(unlockRequests(sim), 0);
        assert.equal(fail.length, 1, JSON.stringify(errors));
        assert.deepEqual(mine(id).map((r) => r.type), ["unlock-rejected"]);
        assert.equal(fail[0].payload.outcome, "invalid-input", `got ${fail[0].payload.outcome}: ${fail[0].payload.message}`);
      });
    }

    it("held: Symbol values in deviceId / door / lockId / actor / _msgid: invalid-input each, one rejected record each, no PUT, no unhandled", async () => {
      const u0 = unhandledSeen().length;
      const msgs: Record<string, unknown>[] = [
        { _msgid: "sym-dev", deviceId: Symbol("d") },
        { _msgid: "sym-door", door: Symbol("d") },
        { _msgid: "sym-lock", deviceId: 101, lockId: Symbol("l") },
        { _msgid: "sym-actor", deviceId: 101, actor: Symbol("a") },
      ];
      const outs = await Promise.all(msgs.map((m) => unlock(m)));
      await settle();
      assert.deepEqual(outs.map((o) => o.msg.payload.outcome), ["invalid-input", "invalid-input", "invalid-input", "invalid-input"]);
      for (const id of ["sym-dev", "sym-door", "sym-lock", "sym-actor"]) assert.deepEqual(mine(id).map((r) => r.type), ["unlock-rejected"], id);
      assert.equal(unlockRequests(sim), 0);
      assert.equal(unhandledSeen().length, u0);
    });

    it("held: a Proxy msg whose set trap throws only for 'payload', accepted: one PUT, attempt+result, error says the door was unlocked, status green", async () => {
      const target: Record<string, unknown> = { _msgid: "proxy-set", deviceId: 101 };
      const msg = new Proxy(target, { set(t, k, v, r) { if (k === "payload") throw new Error("no payload for you"); return Reflect.set(t, k, v, r); } });
      helper.getNode("u1").receive(msg);
      await until("records", () => mine("proxy-set").length === 2, 5000);
      await until("error", () => errors.length > 0, 5000);
      await settle();
      assert.equal(unlockRequests(sim), 1);
      assert.deepEqual(mine("proxy-set").map((r) => [r.type, r.outcome ?? null]), [["unlock-attempt", null], ["unlock-result", "accepted"]]);
      assert.match(errors[0]!, /accepted \(the door was unlocked\)/);
      assert.equal(last().fill, "green");
    });

    it("held: an uncopyable frozen message whose getter error has a throwing `message` getter (Error subclass): one PUT, records, an error, no unhandled", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      class Nasty extends Error { override get message(): string { throw new Error("message getter"); } }
      const m: Record<string, unknown> = { _msgid: "nasty", deviceId: 101 };
      Object.defineProperty(m, "payload", { enumerable: true, get() { return 1; }, set() { throw new Nasty(); } });
      helper.getNode("u1").receive(m);
      await until("records", () => mine("nasty").length === 2, 5000);
      await until("error", () => errors.length > 0, 5000);
      await settle();
      assert.equal(unlockRequests(sim), 1);
      assert.match(errors[0]!, /accepted \(the door was unlocked\).*a value that cannot be shown as text/);
      assert.equal(unhandledSeen().length, u0);
    });

    it("held: redeploy while a frozen message's slow PUT is in flight: attempt+result recorded, one PUT, no unhandled", async () => {
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 400 });
      const u0 = unhandledSeen().length;
      helper.getNode("u1").receive(Object.freeze({ _msgid: "frozen-close", deviceId: 101 }));
      await until("sending", () => last().fill === "blue", 5000, 2);
      await teardown();
      await settle();
      assert.deepEqual(mine("frozen-close").map((r) => [r.type, r.outcome ?? null]), [["unlock-attempt", null], ["unlock-result", "accepted"]]);
      assert.equal(unlockRequests(sim), 1);
      assert.equal(unhandledSeen().length, u0);
      await load(unlockFlow(sim.url, door)); // for afterEach
    });

    it("50 messages in one tick (good, frozen, payload setter, revoked actor, uncopyable, Symbol): one PUT per sendable, a record for each, no unhandled, status ends non-blue, no secrets in audit (failed on 85ab683: no record for a revoked actor)", async () => {
      withoutOnSendHooks();
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 60 });
      const u0 = unhandledSeen().length;
      const sendable: string[] = [];
      const rejected: string[] = [];
      for (let i = 0; i < 50; i++) {
        const id = `mix-${i}`;
        const k = i % 6;
        let m: Record<string, unknown>;
        if (k === 0) { m = { _msgid: id, deviceId: 101 }; sendable.push(id); }
        else if (k === 1) { m = Object.freeze({ _msgid: id, deviceId: 101 }); sendable.push(id); }
        else if (k === 2) { m = { _msgid: id, deviceId: 101 }; Object.defineProperty(m, "payload", { enumerable: true, get() { return 0; }, set() { throw new Error("ro"); } }); sendable.push(id); }
        else if (k === 3) { m = { _msgid: id, deviceId: 101, actor: revoked() }; rejected.push(id); }
        else if (k === 4) { m = { _msgid: id, deviceId: 101 }; Object.defineProperty(m, "extra", { enumerable: true, get() { throw new Error("no copy"); } }); sendable.push(id); }
        else { m = { _msgid: id, deviceId: Symbol("x") }; rejected.push(id); }
        helper.getNode("u1").receive(m);
      }
      await until("all records", () => {
        const a = readAudit(userDir);
        return sendable.every((id) => a.some((r) => r.msgid === id && r.type === "unlock-result"));
      }, 10000);
      await settle();
      await new Promise((r) => setTimeout(r, 300));
      const audit = readAudit(userDir);
      const text = JSON.stringify(audit);
      assert.ok(!text.includes(DEMO_ACCOUNT.password) && !text.includes(DEMO_ACCOUNT.phoneNumber) && !/eyJ/.test(text));
      assert.equal(unlockRequests(sim), sendable.length);
      assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
      assert.notEqual(last().fill, "blue", JSON.stringify(seen.slice(-3)));
      const missing = rejected.filter((id) => audit.filter((r) => r.msgid === id && r.type === "unlock-rejected").length !== 1);
      assert.deepEqual(missing, [], "messages that sent nothing without their one unlock-rejected record");
    });
  });

  describe("Complete node scoped to the unlock node, plus a Catch and a Status node", function () {
    beforeEach(async () => {
      const flow = [
        tab(), accountNode(sim.url), unlockNode({ ...door, wires: [["u1-ok", "u1-ok2"], ["u1-fail"]] }), ...helperNodes("u1-ok", "u1-ok2", "u1-fail", "done-out", "status-out"), ...catchNode(),
        { id: "cmp", type: "complete", z: TAB, name: "", scope: ["u1"], uncaught: false, wires: [["done-out"]] },
        { id: "sts", type: "status", z: TAB, name: "", scope: ["u1"], wires: [["status-out"]] },
      ];
      await load(flow, [...ALL_NODES, catchModule, completeModule, statusModule]);
    });

    it("held: an uncopyable message (getter throws on an unrelated field), accepted, output 1 on two wires: one PUT, attempt+result, an error saying the door was unlocked, no unhandled", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      const m: Record<string, unknown> = { _msgid: "cmp-1", deviceId: 101 };
      Object.defineProperty(m, "extra", { enumerable: true, get() { throw new Error("cannot copy me"); } });
      helper.getNode("u1").receive(m);
      await until("records", () => mine("cmp-1").length === 2, 5000);
      await until("error", () => errors.length > 0, 5000);
      await settle();
      assert.equal(unlockRequests(sim), 1);
      assert.deepEqual(mine("cmp-1").map((r) => [r.type, r.outcome ?? null]), [["unlock-attempt", null], ["unlock-result", "accepted"]]);
      assert.match(errors.join("\n"), /accepted \(the door was unlocked\)/);
      assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
      assert.equal(last().fill, "green");
    });

    it("held: a circular message, accepted, two wires + Complete node: both wires get it, Complete fires, one PUT, no error", async () => {
      const m: Record<string, unknown> = { _msgid: "circ", deviceId: 101 };
      m.self = m;
      const done: any[] = [];
      helper.getNode("done-out").on("input", (x: any) => done.push(x));
      const ok2: any[] = [];
      helper.getNode("u1-ok2").on("input", (x: any) => ok2.push(x));
      helper.getNode("u1").receive(m);
      await until("complete", () => done.length > 0, 5000);
      await settle();
      assert.equal(ok.length, 1);
      assert.equal(ok2.length, 1);
      assert.equal(unlockRequests(sim), 1);
      assert.deepEqual(errors, []);
    });

    it("held: accepted, single copyable message, a Complete node: exactly one complete, one PUT", async () => {
      const done: any[] = [];
      helper.getNode("done-out").on("input", (x: any) => done.push(x));
      const out = await unlock({ _msgid: "cmp-ok", deviceId: 101 });
      await until("complete", () => done.length > 0, 5000);
      await settle();
      assert.equal(out.msg.payload.outcome, "accepted");
      assert.equal(done.length, 1);
      assert.equal(unlockRequests(sim), 1);
    });
  });

  describe("door-status and door-devices", function () {
    beforeEach(async () => {
      const flow = [
        tab(), accountNode(sim.url),
        { id: "st", type: "door-status", z: TAB, name: "", account: "acc1", deviceId: "", doorName: "", doorLocation: "", wires: [["st-out"]] },
        { id: "dv", type: "door-devices", z: TAB, name: "", account: "acc1", wires: [["dv-out"]] },
        ...helperNodes("st-out", "dv-out"), ...catchNode(),
      ];
      ({ userDir } = await loadFlow(flow));
      await waitReady();
      errors = [];
    });

    it("door-status, frozen message: the GET is done, the message ends with an error saying the door was read, and the node status does not stay on 'reading' (failed on 85ab683)", async () => {
      const u0 = unhandledSeen().length;
      watch("st");
      helper.getNode("st").receive(Object.freeze({ _msgid: "st-frozen", deviceId: 101 }));
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
      assert.notEqual(last().fill, "blue", `status stayed ${JSON.stringify(last())}; errors ${JSON.stringify(errors)}`);
      assert.match(errors.join("\n"), /door #101 was read \(.*\) but the message could not carry it or be sent to every wire/);
    });

    it("door-status, msg.payload setter throws: the door was read, so the status shows its state, and the error on done says the message could not carry it; no unhandled (failed on 85ab683: status red, no word that the door was read)", async () => {
      const u0 = unhandledSeen().length;
      watch("st");
      const m: Record<string, unknown> = { _msgid: "st-ro", deviceId: 101 };
      Object.defineProperty(m, "payload", { enumerable: true, get() { return 0; }, set() { throw new Error("ro payload"); } });
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
      assert.ok(last().fill === "green" || last().fill === "yellow", JSON.stringify(last()));
      assert.match(errors.join("\n"), /door #101 was read \(.*\) but the message could not carry it or be sent to every wire: ro payload/);
    });

    it("door-status, msg.deviceId a revoked Proxy: invalid-input (msg.outcome), no GET, no unhandled (failed on 85ab683: outcome error)", async () => {
      const u0 = unhandledSeen().length;
      watch("st");
      const m: Record<string, unknown> = { _msgid: "st-rev", deviceId: revoked() };
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
      assert.equal(m.outcome, "invalid-input", `outcome ${String(m.outcome)}; ${errors.join(" | ")}`);
    });

    for (const id of ["st", "dv"]) {
      it(`held: ${id === "st" ? "door-status" : "door-devices"}: a getter (deviceId / refresh) throwing an object whose 'message' getter throws a null-prototype object: the message ends, no unhandled`, async () => {
        withoutOnSendHooks();
        const u0 = unhandledSeen().length;
        watch(id);
        const m: Record<string, unknown> = { _msgid: `${id}-nasty` };
        const nasty = { get message(): string { throw Object.create(null); } };
        for (const f of ["deviceId", "refresh"]) Object.defineProperty(m, f, { enumerable: true, get() { throw nasty; } });
        helper.getNode(id).receive(m);
        await until("an error", () => errors.length > 0, 5000);
        await settle();
        assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
      });
    }

    it("held: door-devices, frozen message and payload setter that throws: errors on done, no unhandled", async () => {
      const u0 = unhandledSeen().length;
      watch("dv");
      helper.getNode("dv").receive(Object.freeze({ _msgid: "dv-frozen" }));
      const m: Record<string, unknown> = { _msgid: "dv-ro" };
      Object.defineProperty(m, "payload", { enumerable: true, get() { return 0; }, set() { throw new Error("ro payload"); } });
      helper.getNode("dv").receive(m);
      await until("two errors", () => errors.length >= 2, 5000);
      await settle();
      assert.deepEqual(unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]), []);
    });
  });
});
