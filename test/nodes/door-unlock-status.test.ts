/**
 * door-unlock's node status in a real Node-RED runtime against the simulator
 * (docs/nodes.md#door-unlock, docs/nodes.md#node-status): "sending" while the unlock is in
 * flight, then the outcome; an outcome is never overwritten by "sending" (the "sending" status
 * is set once the unlock is under way, off the door's path).
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { fileHandlePrototype, eio } from "../helpers/audit-faults.js";
import { readFileSync } from "node:fs";
import {
  ALL_NODES, TAB, assertAccepted, assertFailed, helper, lastStatus, loadFlow, readAudit, startSim, teardown, unlock, unlockFlow, unlockRequests, until, waitReady,
} from "../helpers/flow.js";

interface Status { fill?: string; shape?: string; text?: string }

describe("'sending' while the command is out, then the outcome; an outcome known at once is never followed by 'sending' (docs/nodes.md#door-unlock)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;
  const seen: Status[] = [];

  before(async () => {
    sim = await startSim();
    ({ userDir } = await loadFlow(unlockFlow(sim.url, { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" })));
    await waitReady();
    helper.getNode("u1").on("call:status", (call: { args: [Status] }) => seen.push(call.args[0]));
  });
  after(async () => {
    await teardown();
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
    seen.length = 0;
  });

  const last = (): Status => seen[seen.length - 1] ?? {};

  it("a slow device: \"sending\" (blue) while the PUT is in flight, then the accepted status (green), one PUT", async () => {
    sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 800 });
    const out = unlock({ deviceId: 101 });
    await until("the PUT in flight", () => sim.control.inFlight().length > 0);
    await until("the sending status", () => last().fill === "blue");
    assert.match(last().text ?? "", /sending|send/i, JSON.stringify(last()));
    assertAccepted(await out);
    await until("the accepted status", () => last().fill === "green");
    assert.equal(unlockRequests(sim), 1);
  });

  it("an outcome known at once (invalid input, nothing sent) is the status that stays: \"sending\" never follows it", async () => {
    const out = await unlock({ deviceId: "101" });
    assertFailed(out, "invalid-input", null);
    // Well past the moment a deferred "sending" would have run.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(last().fill, "red", JSON.stringify(seen));
    assert.ok(!seen.some((s) => s.fill === "blue"), `no "sending" for a message that sent nothing: ${JSON.stringify(seen)}`);
    assert.equal(unlockRequests(sim), 0);
  });

  it("every unlock's last status is its outcome, for 20 unlocks in a row (accepted and refused mixed)", async () => {
    for (let i = 0; i < 20; i++) {
      seen.length = 0;
      const out = await unlock(i % 3 === 2 ? { deviceId: 999 } : { deviceId: 101 });
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      const want = out.port === 0 ? "green" : "red";
      assert.equal(last().fill, want, `unlock ${i}: ${JSON.stringify(seen)}`);
    }
  });

  it("the attempt record cannot be written: outcome error, no PUT, and \"sending\" is never shown (it follows the command, never precedes it)", async () => {
    const { proto, orig } = await fileHandlePrototype();
    let injected = 0;
    proto.write = function () {
      proto.write = orig.write;
      injected++;
      return Promise.reject(eio("write"));
    };
    let out;
    try {
      out = await unlock({ deviceId: 101 });
    } finally {
      proto.write = orig.write;
    }
    assert.equal(injected, 1, "the injected write failure was reached");
    assertFailed(out, "error", null);
    assert.match(String(out.msg.payload.message), /not sent: the audit log could not be written/);
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(!seen.some((st) => st.fill === "blue"), `no "sending" for a command that was never sent: ${JSON.stringify(seen)}`);
    assert.equal(last().fill, "red", JSON.stringify(seen));
    assert.equal(unlockRequests(sim), 0);
  });

  it("a message whose field cannot be read (a getter that throws): invalid-input on the error output, no PUT, one unlock-rejected record (Rules: bad input gets a clear error and sends nothing)", async () => {
    const msg: Record<string, unknown> = { _msgid: "getter-throws" };
    Object.defineProperty(msg, "deviceId", { enumerable: true, get() { throw new Error("no deviceId today"); } });
    const out = await unlock(msg);
    assertFailed(out, "invalid-input", null);
    assert.match(String(out.msg.payload.message), /msg.deviceId could not be read: no deviceId today/);
    await until("the rejected record", () => readAudit(userDir).some((r) => r.msgid === "getter-throws"), 5000, 2);
    const mine = readAudit(userDir).filter((r) => r.msgid === "getter-throws");
    assert.deepEqual(mine.map((r) => [r.type, r.outcome]), [["unlock-rejected", "invalid-input"]]);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(last().fill, "red", JSON.stringify(seen));
    assert.ok(!seen.some((st) => st.fill === "blue"), JSON.stringify(seen));
    assert.equal(unlockRequests(sim), 0);
  });
});

/**
 * Node-RED's RED._ with our English catalogue (the test helper's returns the key): the status
 * texts exactly as an editor shows them.
 */
function withCatalogue(modules: unknown[]): unknown[] {
  const catalogue: Record<string, unknown> = {};
  for (const n of ["door-account", "door-devices", "door-status", "door-unlock"]) Object.assign(catalogue, JSON.parse(readFileSync(`nodes/locales/en-US/${n}.json`, "utf8")));
  const translate = (key: string, opts: Record<string, unknown> = {}): string => {
    const text = key.split(".").reduce<unknown>((o, k) => (o && typeof o === "object" ? (o as Record<string, unknown>)[k] : undefined), catalogue);
    return typeof text === "string" ? text.replace(/__(\w+)__/g, (_m, k: string) => String(opts[k])) : key;
  };
  return modules.map((m) => (red: any) => {
    red._ = translate;
    return (m as (r: any) => unknown)(red);
  });
}

describe("node status of an input refused before anything is sent: the short reason, not just the outcome (docs/nodes.md#node-status)", function () {
  this.timeout(20000);
  let sim: ReturnType<typeof startSim> extends Promise<infer S> ? S : never;

  before(async () => {
    sim = await startSim();
    const flow = [
      ...unlockFlow(sim.url),
      { id: "st", type: "door-status", z: TAB, account: "acc1", deviceId: "", doorName: "", doorLocation: "", wires: [["st-out"]] },
      { id: "st-out", type: "helper", z: TAB },
    ];
    await loadFlow(flow, { nodes: withCatalogue(ALL_NODES) });
    await waitReady();
  });
  after(async () => {
    await teardown();
    await sim.close();
  });

  it("door-unlock: msg.door names no door: 'invalid-input: no door named \"Frontdoor\" hh:mm:ss', nothing sent", async () => {
    sim.control.resetRequests();
    const p = assertFailed(await unlock({ door: "Frontdoor" }), "invalid-input", null);
    assert.match(p.message, /^no door named "Frontdoor"/);
    await until("the red status", () => lastStatus(helper.getNode("u1"))?.fill === "red");
    assert.match(lastStatus(helper.getNode("u1"))?.text ?? "", /^invalid-input: no door named "Frontdoor" \d\d:\d\d:\d\d$/);
    assert.equal(unlockRequests(sim), 0);
  });

  it("door-unlock: a long reason is cut to 40 characters: 'invalid-input: msg.deviceId must be a positive 32-bit… hh:mm:ss'", async () => {
    assertFailed(await unlock({ deviceId: "101" }), "invalid-input", null);
    await until("the status of this message", () => /msg\.deviceId/.test(lastStatus(helper.getNode("u1"))?.text ?? ""));
    const text = lastStatus(helper.getNode("u1"))?.text ?? "";
    assert.match(text, /^invalid-input: msg\.deviceId must be a positive 32-bit… \d\d:\d\d:\d\d$/);
    assert.ok(text.length <= "invalid-input: ".length + 40 + " 00:00:00".length, text);
  });

  it("door-status: msg.door names no door: the same short reason in its status", async () => {
    const st = helper.getNode("st");
    st.receive({ door: "Frontdoor" });
    await until("the red status", () => lastStatus(st)?.fill === "red");
    assert.match(lastStatus(st)?.text ?? "", /^invalid-input: no door named "Frontdoor" \d\d:\d\d:\d\d$/);
  });
});
