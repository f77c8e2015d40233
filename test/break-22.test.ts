/**
 * Break review of ca79a32 (describeValue never throws; door-status frozen/payload setter;
 * failMessage best effort; door-unlock undelivered outcome). Real Node-RED runtime + simulator.
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../src/simulator/index.js";
import {
  ALL_NODES, CREDS, TAB, accountNode, catchModule, catchNode, count, helper, helperNodes, loadFlow, readAudit, startSim, tab, teardown, unlock, unlockFlow, unlockNode, unlockRequests, until, waitReady, DEMO_ACCOUNT,
} from "./helpers/flow.js";
import { type Status, withoutOnSendHooks, settle, revoked } from "./helpers/odd-messages.js";
import { unhandledSeen } from "./hooks/no-unhandled.js";
import { resolveFromNodeRed } from "./helpers/runtime.js";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const completeModule: unknown = require(resolveFromNodeRed("@node-red/nodes/core/common/24-complete.js"));

const unhandledSince = (u0: number): string[] => unhandledSeen().slice(u0).map((x) => x.stack.split("\n")[0]!);

const noSecrets = (text: string): void => {
  assert.ok(!text.includes(DEMO_ACCOUNT.password), "password");
  assert.ok(!text.includes(DEMO_ACCOUNT.phoneNumber), "phone");
  assert.ok(!/eyJ[A-Za-z0-9_-]{10,}/.test(text), "token");
};

describe("break-22: review of ca79a32", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;
  const seen: Record<string, Status[]> = {};
  const last = (id: string): Status => seen[id]?.[seen[id]!.length - 1] ?? {};
  let ok: any[] = [];
  let fail: any[] = [];
  let errors: string[] = [];

  function watch(id: string): void {
    const node = helper.getNode(id);
    const own = node.status;
    seen[id] = [];
    node.status = function (this: unknown, st: Status) { seen[id]!.push(st); return own.call(this, st); };
    const ownErr = node.error;
    node.error = function (this: unknown, e: unknown, m: unknown) { let s: string; try { s = e instanceof Error ? e.message : String(e); } catch { s = "(unprintable)"; } errors.push(s); return ownErr.call(this, e, m); };
  }

  async function loadUnlock(flow: Record<string, unknown>[], nodes?: unknown[]): Promise<void> {
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
  const mine = (id: string) => readAudit(userDir).filter((r) => r.msgid === id);

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

  describe("door-devices (list=locations) and door-status (configured door)", function () {
    beforeEach(async () => {
      const flow = [
        tab(), accountNode(sim.url),
        { id: "st", type: "door-status", z: TAB, name: "", account: "acc1", ...door, wires: [["st-out"]] },
        { id: "dv", type: "door-devices", z: TAB, name: "", account: "acc1", list: "locations", wires: [["dv-out"]] },
        ...helperNodes("st-out", "dv-out"), ...catchNode(),
      ];
      ({ userDir } = await loadFlow(flow));
      await waitReady();
      errors = [];
      watch("st");
      watch("dv");
    });

    it("held: door-devices locations, msg.refresh a revoked Proxy: served (not forced), no unhandled, status not stuck", async () => {
      const u0 = unhandledSeen().length;
      const out: any[] = [];
      helper.getNode("dv-out").on("input", (m: any) => out.push(m));
      const m: Record<string, unknown> = { _msgid: "dv-rev", refresh: revoked() };
      helper.getNode("dv").receive(m);
      await until("an output or an error", () => out.length + errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.notEqual(last("dv").fill, "blue");
    });

    it("door-devices locations, msg.refresh a getter that throws: invalid-input (Rules: bad input gets a clear error and sends nothing), nothing sent, no unhandled (failed on ca79a32: outcome error)", async () => {
      const u0 = unhandledSeen().length;
      sim.control.resetRequests();
      const m: Record<string, unknown> = { _msgid: "dv-get" };
      Object.defineProperty(m, "refresh", { enumerable: true, configurable: true, get() { throw new Error("no refresh today"); } });
      helper.getNode("dv").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(sim.control.requests().length, 0, "nothing sent");
      assert.equal(m.outcome, "invalid-input", `outcome ${String(m.outcome)}; errors ${JSON.stringify(errors)}`);
    });

    it("held: door-status, configured door, msg.door a revoked Proxy: invalid-input, no GET, no unhandled", async () => {
      const u0 = unhandledSeen().length;
      sim.control.resetRequests();
      const m: Record<string, unknown> = { _msgid: "st-rev-door", door: revoked() };
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(count(sim, "getDevice"), 0);
      assert.equal(m.outcome, "invalid-input", `outcome ${String(m.outcome)}; ${errors.join(" | ")}`);
      assert.notEqual(last("st").fill, "blue");
    });

    for (const field of ["deviceId", "door"]) {
      it(`door-status, configured door, a getter that throws on msg.${field}: invalid-input (Rules: bad input gets a clear error and sends nothing), no GET (failed on ca79a32: outcome error)`, async () => {
        const u0 = unhandledSeen().length;
        sim.control.resetRequests();
        const m: Record<string, unknown> = { _msgid: `st-get-${field}` };
        Object.defineProperty(m, field, { enumerable: true, configurable: true, get() { throw new Error(`no ${field} today`); } });
        helper.getNode("st").receive(m);
        await until("an error", () => errors.length > 0, 5000);
        await settle();
        assert.deepEqual(unhandledSince(u0), []);
        assert.equal(count(sim, "getDevice"), 0);
        assert.equal(m.outcome, "invalid-input", `outcome ${String(m.outcome)}; errors ${JSON.stringify(errors)}`);
      });
    }

    it("held: door-status, odd msg.door values (String object, throwing toString, BigInt, 100 kB string): invalid-input each, no GET, bounded error", async () => {
      const u0 = unhandledSeen().length;
      sim.control.resetRequests();
      const values: unknown[] = [new String("Front Door"), { toString() { throw new Error("no text"); } }, 10n, "F".repeat(100_000)];
      const msgs = values.map((v, i) => ({ _msgid: `st-odd-${i}`, door: v }) as Record<string, unknown>);
      for (const m of msgs) helper.getNode("st").receive(m);
      await until("errors", () => errors.length >= values.length, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(count(sim, "getDevice"), 0);
      assert.deepEqual(msgs.map((m) => m.outcome), values.map(() => "invalid-input"));
      assert.ok(errors.every((e) => e.length < 2000), `error lengths ${errors.map((e) => e.length)}`);
    });
  });

  describe("door-status, frozen message, a GET that fails", function () {
    beforeEach(async () => {
      const flow = [
        tab(), accountNode(sim.url),
        { id: "st", type: "door-status", z: TAB, name: "", account: "acc1", ...door, wires: [["st-out", "st-out2"]] },
        ...helperNodes("st-out", "st-out2"), ...catchNode(),
      ];
      ({ userDir } = await loadFlow(flow));
      await waitReady();
      errors = [];
      watch("st");
    });

    it("held: door-status, frozen message, GET answers 404: the error says not-found and that msg.outcome could not be set; status red, not 'reading'; no unhandled", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      helper.getNode("st").receive(Object.freeze({ _msgid: "st-frozen-404", deviceId: 999 }));
      await until("an error", () => errors.length > 0, 8000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(last("st").fill, "red");
      assert.match(errors[0]!, /msg\.outcome could not be set/);
    });
  });

  describe("door-unlock, default flow with a configured door", function () {
    beforeEach(async () => {
      await loadUnlock(unlockFlow(sim.url, door));
    });

    it("held: _msgid a number, an object, a revoked Proxy: one PUT each, attempt+result each, no unhandled", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      const before = readAudit(userDir).length;
      const ids: unknown[] = [42, { a: 1 }, revoked()];
      for (const id of ids) helper.getNode("u1").receive({ _msgid: id, deviceId: 101 });
      await until("three outcomes or errors", () => ok.length + fail.length + errors.length >= 3, 8000);
      await settle();
      await new Promise((r) => setTimeout(r, 200));
      const recs = readAudit(userDir).slice(before);
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(unlockRequests(sim), recs.filter((r) => r.type === "unlock-attempt").length);
      assert.equal(recs.filter((r) => r.type === "unlock-result").length, recs.filter((r) => r.type === "unlock-attempt").length);
      assert.notEqual(last("u1").fill, "blue");
    });

    it("held: a message whose prototype is a Proxy (Object.create(proxy)) with a deviceId getter in the trap: one PUT, accepted, attempt+result", async () => {
      const u0 = unhandledSeen().length;
      const proto = new Proxy({}, { get(_t, k) { return k === "deviceId" ? 101 : undefined; } });
      const m = Object.create(proto) as Record<string, unknown>;
      m._msgid = "proto-proxy";
      helper.getNode("u1").receive(m);
      await until("records", () => mine("proto-proxy").length >= 2, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(unlockRequests(sim), 1);
      assert.deepEqual(mine("proto-proxy").map((r) => [r.type, r.outcome ?? null]), [["unlock-attempt", null], ["unlock-result", "accepted"]]);
    });

    it("held: a message whose prototype is a revoked Proxy: nothing sent, no unhandled, no stall, at most one rejected record", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      const m = Object.create(revoked()) as Record<string, unknown>;
      Object.defineProperty(m, "_msgid", { value: "proto-revoked", enumerable: true, writable: true, configurable: true });
      // receive() may throw for such a message (Node-RED reads it); what matters is what follows.
      try {
        helper.getNode("u1").receive(m);
      } catch {
        /* Node-RED's own read */
      }
      await new Promise((r) => setTimeout(r, 500));
      await settle();
      const recs = readAudit(userDir).filter((r) => r.msgid === "proto-revoked" || r.msgid === null);
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(unlockRequests(sim), 0);
      assert.ok(recs.filter((r) => r.type === "unlock-rejected").length <= 1);
      assert.notEqual(last("u1").fill, "blue");
    });

    for (const [what, v] of [["a BigInt", 1n], ["a String object", new String("1")], ["a number-like string", "1"]] as const) {
      it(`held: msg.lockId ${what}: invalid-input, one unlock-rejected record, no PUT, no unhandled`, async () => {
        const u0 = unhandledSeen().length;
        const out = await unlock({ _msgid: `lock-${what}`, deviceId: 104, lockId: v });
        await settle();
        assert.equal(out.msg.payload.outcome, "invalid-input", out.msg.payload.message);
        assert.deepEqual(mine(`lock-${what}`).map((r) => r.type), ["unlock-rejected"]);
        assert.equal(unlockRequests(sim), 0);
        assert.deepEqual(unhandledSince(u0), []);
      });
    }

    it("held: door renamed in the simulator between messages; msg.door odd values (String object, number-like string, throwing toString, the old name, the new name)", async () => {
      const u0 = unhandledSeen().length;
      const a = await unlock({ _msgid: "ren-0", door: "Main Street 1 / Front Door" });
      assert.equal(a.msg.payload.outcome, "accepted");
      sim.control.editDevice(101, { name: "Entrance" });
      const outs = [];
      outs.push(await unlock({ _msgid: "ren-1", door: new String("Front Door") }));
      outs.push(await unlock({ _msgid: "ren-2", door: "101" }));
      outs.push(await unlock({ _msgid: "ren-3", door: { toString() { throw new Error("x"); } } }));
      outs.push(await unlock({ _msgid: "ren-4", door: "Front Door" }));
      await settle();
      assert.deepEqual(outs.slice(0, 3).map((o) => o.msg.payload.outcome), ["invalid-input", "invalid-input", "invalid-input"]);
      assert.equal(unlockRequests(sim), 1 + outs.filter((o) => o.msg.payload.outcome === "accepted").length);
      for (const i of [1, 2, 3]) assert.deepEqual(mine(`ren-${i}`).map((r) => r.type), ["unlock-rejected"], `ren-${i}`);
      assert.deepEqual(unhandledSince(u0), []);
      sim.control.editDevice(101, { name: "Front Door" });
    });

    it("a door with a 100 kB name in the list: the unknown-name error (msg.payload.message) lists it cut short, under 5,000 characters; the audit record is bounded (failed on ca79a32: 100,176 characters)", async () => {
      sim.control.editDevice(106, { name: "B".repeat(100_000) });
      try {
        // refresh the list so the long name is cached
        await helper.getNode("acc1").account.devices(true);
        const out = await unlock({ _msgid: "long-unknown", door: "Boiler Rom" });
        await settle();
        const rec = mine("long-unknown");
        const recLine = JSON.stringify(rec);
        // and an unlock of that door by id: its records are bounded too (the door's label is capped)
        await unlock({ _msgid: "long-byid", deviceId: 106 });
        await settle();
        assert.ok(mine("long-byid").length === 2 && mine("long-byid").every((r) => JSON.stringify(r).length < 5000), JSON.stringify(mine("long-byid").map((r) => JSON.stringify(r).length)));
        assert.equal(out.msg.payload.outcome, "invalid-input");
        assert.ok(out.msg.payload.message.length < 5000, `message length ${out.msg.payload.message.length}`);
        assert.ok(recLine.length < 5000, `record bytes ${recLine.length}`);
      } finally {
        sim.control.editDevice(106, { name: "Boiler Room" });
      }
    });
  });

  describe("door-unlock, output 1 on two wires, Complete + Catch", function () {
    beforeEach(async () => {
      const flow = [
        tab(), accountNode(sim.url), unlockNode({ ...door, wires: [["u1-ok", "u1-ok2"], ["u1-fail", "u1-fail2"]] }), ...helperNodes("u1-ok", "u1-ok2", "u1-fail", "u1-fail2", "done-out"), ...catchNode(),
        { id: "cmp", type: "complete", z: TAB, name: "", scope: ["u1"], uncaught: false, wires: [["done-out"]] },
      ];
      await loadUnlock(flow, [...ALL_NODES, catchModule, completeModule]);
    });

    it("held: a deviceId getter that throws from its 2nd read on (Node-RED's copy after the unlock): one PUT, attempt+result, error says the door was unlocked, no unhandled, not blue", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      let n = 0;
      const m: Record<string, unknown> = { _msgid: "second-read" };
      Object.defineProperty(m, "deviceId", { enumerable: true, configurable: true, get() { n++; if (n >= 2) throw new Error("second read"); return 101; } });
      helper.getNode("u1").receive(m);
      await until("records", () => mine("second-read").length >= 2, 5000);
      await until("error", () => errors.length > 0, 5000);
      await settle();
      assert.equal(unlockRequests(sim), 1);
      assert.deepEqual(mine("second-read").map((r) => [r.type, r.outcome ?? null]), [["unlock-attempt", null], ["unlock-result", "accepted"]]);
      assert.match(errors.join("\n"), /the door was unlocked/);
      assert.deepEqual(unhandledSince(u0), []);
      assert.notEqual(last("u1").fill, "blue");
      noSecrets(errors.join("\n"));
    });

    it("held: account redeployed (modified-nodes deploy touching the account) while 2nd-read-throwing messages are in flight (slow PUT): each PUT gets attempt+result, no unhandled", async () => {
      withoutOnSendHooks();
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 400, count: 3 });
      const u0 = unhandledSeen().length;
      const ids = ["rd-0", "rd-1", "rd-2"];
      for (const id of ids) {
        let n = 0;
        const m: Record<string, unknown> = { _msgid: id };
        Object.defineProperty(m, "deviceId", { enumerable: true, configurable: true, get() { n++; if (n >= 2) throw new Error("second read"); return 101; } });
        helper.getNode("u1").receive(m);
      }
      await until("PUTs in flight", () => sim.control.inFlight().filter((e) => e.operation === "unlockDevice").length === 3, 5000);
      const flow = [
        tab(), accountNode(sim.url, { name: "demo renamed" }), unlockNode({ ...door, wires: [["u1-ok", "u1-ok2"], ["u1-fail", "u1-fail2"]] }), ...helperNodes("u1-ok", "u1-ok2", "u1-fail", "u1-fail2", "done-out"), ...catchNode(),
        { id: "cmp", type: "complete", z: TAB, name: "", scope: ["u1"], uncaught: false, wires: [["done-out"]] },
      ];
      await helper.setFlows(flow, "nodes", CREDS);
      await until("results", () => ids.every((id) => mine(id).some((r) => r.type === "unlock-result")), 8000);
      await settle();
      assert.equal(unlockRequests(sim), 3);
      for (const id of ids) assert.deepEqual(mine(id).map((r) => [r.type, r.outcome ?? null]), [["unlock-attempt", null], ["unlock-result", "accepted"]], id);
      assert.deepEqual(unhandledSince(u0), []);
      noSecrets(JSON.stringify(readAudit(userDir)));
    });

    it("held: account node deleted while a slow PUT is in flight: attempt+result, one PUT, no unhandled", async () => {
      withoutOnSendHooks();
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 400 });
      const u0 = unhandledSeen().length;
      helper.getNode("u1").receive(Object.freeze({ _msgid: "del-acc", deviceId: 101 }));
      await until("PUT in flight", () => sim.control.inFlight().some((e) => e.operation === "unlockDevice"), 5000);
      const dir = userDir;
      await helper.setFlows([tab(), ...helperNodes("x")], "full", {});
      await until("result", () => readAudit(dir).some((r) => r.msgid === "del-acc" && r.type === "unlock-result"), 8000);
      await settle();
      assert.deepEqual(readAudit(dir).filter((r) => r.msgid === "del-acc").map((r) => [r.type, r.outcome ?? null]), [["unlock-attempt", null], ["unlock-result", "accepted"]]);
      assert.equal(unlockRequests(sim), 1);
      assert.deepEqual(unhandledSince(u0), []);
    });
  });
});
