/**
 * door-unlock's node status in a real Node-RED runtime against the simulator
 * (docs/nodes.md#door-unlock, docs/nodes.md#node-status): "sending" while a command is on its way
 * (its attempt record on disk, the request sent), never for a message that sends nothing; then the
 * last outcome. Both are shown just after the message has gone to the next node and from the
 * node's own values: a node after door-unlock that edits msg.payload or fails changes neither. An
 * outcome is never followed by "sending" (also after a 401 replay, a redeploy, a halted session,
 * odd messages), and a node that is closed or removed sets no status after its close.
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { performUnlock } from "../../src/unlock/unlock.js";
import { fileHandlePrototype, eio } from "../helpers/audit-faults.js";
import { withEnglishText } from "../helpers/catalogue.js";
import {
  ALL_NODES,
  accountNode,
  assertAccepted,
  assertFailed,
  catchNode,
  doorStatusNode,
  helper,
  helperNodes,
  lastStatus,
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
  changeModule,
  changeNode,
} from "../helpers/flow.js";
import { type Status, received, recordStatuses, settle, unhandledSince } from "../helpers/odd-messages.js";
import { unhandledSeen } from "../hooks/no-unhandled.js";

describe("'sending' while the command is out, then the outcome; an outcome known at once is never followed by 'sending' (docs/nodes.md#door-unlock)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;
  const seen: Status[] = [];

  before(async () => {
    sim = await startSim();
    ({ userDir } = await loadFlow(
      unlockFlow(sim.url, { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" }),
    ));
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

  it('a slow device: "sending" (blue) while the PUT is in flight, then the accepted status (green), one PUT', async () => {
    sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 800 });
    const out = unlock({ deviceId: 101 });
    await until("the PUT in flight", () => sim.control.inFlight().length > 0);
    await until("the sending status", () => last().fill === "blue");
    assert.match(last().text ?? "", /sending|send/i, JSON.stringify(last()));
    assertAccepted(await out);
    await until("the accepted status", () => last().fill === "green");
    assert.equal(unlockRequests(sim), 1);
  });

  it('an outcome known at once (invalid input, nothing sent) is the status that stays: "sending" never follows it', async () => {
    const out = await unlock({ deviceId: "101" });
    assertFailed(out, "invalid-input", null);
    // Well past the moment a deferred "sending" would have run.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(last().fill, "red", JSON.stringify(seen));
    assert.ok(
      !seen.some((s) => s.fill === "blue"),
      `no "sending" for a message that sent nothing: ${JSON.stringify(seen)}`,
    );
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

  it('the attempt record cannot be written: outcome error, no PUT, and "sending" is never shown (it follows the command, never precedes it)', async () => {
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
    assert.ok(
      !seen.some((st) => st.fill === "blue"),
      `no "sending" for a command that was never sent: ${JSON.stringify(seen)}`,
    );
    assert.equal(last().fill, "red", JSON.stringify(seen));
    assert.equal(unlockRequests(sim), 0);
  });

  it("a message whose field cannot be read (a getter that throws): invalid-input on the error output, no PUT, one unlock-rejected record: bad input gets a clear error and sends nothing", async () => {
    const msg: Record<string, unknown> = { _msgid: "getter-throws" };
    Object.defineProperty(msg, "deviceId", {
      enumerable: true,
      get() {
        throw new Error("no deviceId today");
      },
    });
    const out = await unlock(msg);
    assertFailed(out, "invalid-input", null);
    assert.match(String(out.msg.payload.message), /msg.deviceId could not be read: no deviceId today/);
    await until("the rejected record", () => readAudit(userDir).some((r) => r.msgid === "getter-throws"), 5000, 2);
    const mine = readAudit(userDir).filter((r) => r.msgid === "getter-throws");
    assert.deepEqual(
      mine.map((r) => [r.type, r.outcome]),
      [["unlock-rejected", "invalid-input"]],
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(last().fill, "red", JSON.stringify(seen));
    assert.ok(!seen.some((st) => st.fill === "blue"), JSON.stringify(seen));
    assert.equal(unlockRequests(sim), 0);
  });
});

describe("node status of an input refused before anything is sent: the short reason, not just the outcome (docs/nodes.md#node-status)", function () {
  this.timeout(20000);
  let sim: ReturnType<typeof startSim> extends Promise<infer S> ? S : never;

  before(async () => {
    sim = await startSim();
    const flow = [...unlockFlow(sim.url), doorStatusNode("st"), ...helperNodes("st-out")];
    // The status texts exactly as an editor shows them (the test helper's RED._ returns the key).
    await loadFlow(flow, { nodes: withEnglishText(ALL_NODES) });
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
    assert.match(
      lastStatus(helper.getNode("u1"))?.text ?? "",
      /^invalid-input: no door named "Frontdoor" \d\d:\d\d:\d\d$/,
    );
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

describe("The deferred 'sending' never outlives its unlock: a burst of mixed messages, a 401 replay, a redeploy during the PUT or in the same tick (docs/nodes.md#door-unlock)", function () {
  this.timeout(60000);
  let sim: RunningSimulator;
  const seen: Status[] = [];
  const last = (): Status => seen[seen.length - 1] ?? {};
  const settle = async () => {
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };

  before(async () => {
    sim = await startSim();
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(async () => {
    sim.control.clearFaults();
    sim.control.resetRequests();
    seen.length = 0;
    await loadFlow(unlockFlow(sim.url, { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" }));
    await waitReady();
    // On the instance (the helper's prototype spy is removed before the flows stop).
    recordStatuses(helper.getNode("u1"), seen);
  });
  afterEach(async () => {
    await teardown();
  });

  it("12 messages sent in one tick (slow accepted, invalid, retained, unknown door name mixed): each gets one outcome, one PUT per valid one, and the node's last status after all is an outcome, never 'sending'", async () => {
    sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 150 });
    const msgs: Record<string, unknown>[] = [];
    for (let i = 0; i < 12; i++) {
      msgs.push(
        [{ deviceId: 101 }, { deviceId: "101" }, { deviceId: 101, retain: true }, { door: "No Such Door" }][i % 4],
      );
    }
    const outs = await Promise.all(msgs.map((m) => unlock({ ...m })));
    await settle();
    assert.deepEqual(
      outs.map((o) => o.msg.payload.outcome),
      msgs.map((_, i) => ["accepted", "invalid-input", "retained-rejected", "invalid-input"][i % 4]),
    );
    assert.equal(unlockRequests(sim), 3);
    assert.notEqual(last().fill, "blue", JSON.stringify(seen));
    assert.equal(last().fill, "green", JSON.stringify(seen.slice(-4)));
  });

  it("a 401 replay (token expired at the service): 'sending', then the accepted status; two PUTs, one message", async () => {
    sim.control.expireAccessToken("demo");
    const out = await unlock({ deviceId: 101 });
    await settle();
    assert.equal(out.msg.payload.outcome, "accepted", JSON.stringify(out.msg.payload));
    assert.equal(unlockRequests(sim), 2);
    assert.ok(
      seen.some((s) => s.fill === "blue"),
      JSON.stringify(seen),
    );
    assert.equal(last().fill, "green", JSON.stringify(seen));
  });

  it("flows stopped (redeploy) while a slow PUT is in flight: the unlock ends with its outcome, and no status is set after the close finished (no stale 'sending'), no exception", async () => {
    sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 300 });
    helper.getNode("u1").receive({ deviceId: 101, _msgid: "in-flight" });
    await until("the PUT in flight", () => sim.control.inFlight().length > 0);
    await until("the sending status", () => last().fill === "blue");
    await teardown();
    const n = seen.length;
    await settle();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(seen.length, n, `status after close: ${JSON.stringify(seen.slice(n))}`);
    assert.equal(last().fill, "green", JSON.stringify(seen));
    assert.equal(unlockRequests(sim), 1);
    await loadFlow(unlockFlow(sim.url, { deviceId: "101" })); // for afterEach
  });

  it("a message sent and the flows stopped in the same tick (before the deferred status ran): the unlock is refused or done, no 'sending' after the close, no exception", async () => {
    helper.getNode("u1").receive({ deviceId: 101, _msgid: "same-tick" });
    const stopping = teardown();
    await stopping;
    const n = seen.length;
    await settle();
    assert.equal(seen.length, n, `status after close: ${JSON.stringify(seen.slice(n))}`);
    assert.notEqual(last().fill, "blue", JSON.stringify(seen));
    assert.ok(unlockRequests(sim) <= 1);
    await loadFlow(unlockFlow(sim.url, { deviceId: "101" })); // for afterEach
  });
});

describe("'sending' once per command, re-shown only while its replay is out; the last status is the last outcome; the sending hook can neither stop nor be called for an unlock that sends nothing (docs/nodes.md#door-unlock)", function () {
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
    recordStatuses(helper.getNode("u1"), seen);
    ok = received("u1-ok");
    fail = received("u1-fail");
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

    it("a 401, then the replay: 'sending' once (re-shown after the refresh), accepted, 2 PUTs, attempt records [first, replay:true], result accepted", async () => {
      sim.control.expireAccessToken("demo");
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 100, count: 2 });
      const out = await unlock({ _msgid: "r401", deviceId: 101 });
      await until("the result record", () => mine("r401").length === 3, 5000);
      await settle();
      assert.equal(out.msg.payload.outcome, "accepted", JSON.stringify(out.msg.payload));
      assert.equal(unlockRequests(sim), 2);
      // onSending is called once; the second blue is the node's last result shown again when the
      // account is back to ready after its refresh (the replay is in flight): not a defect.
      assert.deepEqual(
        seen.map((s) => s.fill),
        ["blue", "yellow", "blue", "green"],
        JSON.stringify(seen),
      );
      assert.equal(last().fill, "green");
      assert.deepEqual(
        mine("r401").map((r) => [r.type, r.replay ?? false]),
        [
          ["unlock-attempt", false],
          ["unlock-attempt", true],
          ["unlock-result", false],
        ],
      );
    });

    it("30 messages in one tick (good slow, unreadable getter, invalid, unknown door) → one outcome each, one PUT per good one, final status = last outcome emitted, never 'sending'", async () => {
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 80 });
      const outs: Promise<any>[] = [];
      const kinds: string[] = [];
      for (let i = 0; i < 30; i++) {
        const k = i % 4;
        let m: Record<string, unknown>;
        if (k === 0) m = { deviceId: 101 };
        else if (k === 1) {
          m = {};
          Object.defineProperty(m, "door", {
            enumerable: true,
            get() {
              throw new Error("nope");
            },
          });
        } else if (k === 2) m = { deviceId: "x" };
        else m = { door: "No Such Door" };
        kinds.push(["accepted", "invalid-input", "invalid-input", "invalid-input"][k]);
        outs.push(unlock(m));
      }
      const got = await Promise.all(outs);
      await settle();
      assert.deepEqual(
        got.map((o) => o.msg.payload.outcome),
        kinds,
      );
      assert.equal(unlockRequests(sim), 8);
      const lastOut = [...ok, ...fail].length;
      assert.equal(lastOut, 30);
      assert.notEqual(last().fill, "blue", JSON.stringify(seen.slice(-5)));
      assert.equal(last().fill, "green", JSON.stringify(seen.slice(-5)));
    });

    it("a halted (superseded) session: messages send nothing, never show 'sending'; an unreadable one is still invalid-input with its record", async () => {
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
      Object.defineProperty(msg, "deviceId", {
        enumerable: true,
        get() {
          throw new Error("x");
        },
      });
      const b = await unlock(msg);
      await until("the rejected record", () => mine("h2").length > 0, 5000);
      await settle();
      assert.equal(a.msg.payload.outcome, "session-halted");
      assert.equal(b.msg.payload.outcome, "invalid-input");
      assert.equal(unlockRequests(sim), 0);
      assert.ok(!seen.some((s) => s.fill === "blue"), JSON.stringify(seen));
      assert.deepEqual(
        mine("h2").map((r) => r.type),
        ["unlock-rejected"],
      );
    });

    it("a redeploy (flows stopped) after 'sending' was shown for a slow PUT: outcome recorded, no status after close, no unhandled", async () => {
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 400 });
      const u0 = unhandledSeen().length;
      helper.getNode("u1").receive({ deviceId: 101, _msgid: "close-1" });
      await until("sending", () => last().fill === "blue", 5000, 2);
      await teardown();
      const n = seen.length;
      await settle();
      assert.equal(seen.length, n, JSON.stringify(seen.slice(n)));
      assert.notEqual(last().fill, "blue");
      assert.deepEqual(
        mine("close-1").map((r) => r.type),
        ["unlock-attempt", "unlock-result"],
      );
      assert.equal(unlockRequests(sim), 1);
      assert.equal(unhandledSeen().length, u0);
      await load(unlockFlow(sim.url, door)); // for afterEach
    });
  });

  describe("performUnlock directly, on the running account", function () {
    beforeEach(async () => {
      await load(unlockFlow(sim.url, door));
    });

    it("an onSending that throws: the PUT still completes (one PUT), outcome accepted, records attempt+result, no unhandled", async () => {
      const u0 = unhandledSeen().length;
      const account = helper.getNode("acc1").account;
      let called = 0;
      const r = await performUnlock(
        account,
        {
          msgDeviceId: 101,
          msgDoor: undefined,
          msgLockId: undefined,
          msgActor: undefined,
          msgRetain: undefined,
          msgid: "onsending-throws",
        },
        { nodeId: "x", door: null, lockId: "", actor: "", rejectRetained: true },
        undefined,
        () => {
          called++;
          throw new Error("status boom");
        },
      );
      await settle();
      assert.equal(r.outcome, "accepted");
      assert.equal(called, 1);
      assert.equal(unlockRequests(sim), 1);
      assert.deepEqual(
        mine("onsending-throws").map((x) => x.type),
        ["unlock-attempt", "unlock-result"],
      );
      assert.equal(unhandledSeen().length, u0);
    });

    it("onSending is not called when the PUT is never handed over (unknown door name, retained, unreadable)", async () => {
      let called = 0;
      const base = {
        msgDoor: undefined,
        msgLockId: undefined,
        msgActor: undefined,
        msgRetain: undefined,
        msgid: "no-send",
      };
      const settings = { nodeId: "x", door: null, lockId: "", actor: "", rejectRetained: true };
      const outs = [
        await performUnlock(
          helper.getNode("acc1").account,
          { ...base, msgDeviceId: undefined, msgDoor: "No Such Door" },
          settings,
          undefined,
          () => {
            called++;
          },
        ),
        await performUnlock(
          helper.getNode("acc1").account,
          { ...base, msgDeviceId: 101, msgRetain: true },
          settings,
          undefined,
          () => {
            called++;
          },
        ),
        await performUnlock(
          helper.getNode("acc1").account,
          { ...base, msgDeviceId: 101, unreadable: "msg.x could not be read" },
          settings,
          undefined,
          () => {
            called++;
          },
        ),
      ];
      await settle();
      assert.deepEqual(
        outs.map((o) => o.outcome),
        ["invalid-input", "retained-rejected", "invalid-input"],
      );
      assert.equal(called, 0);
      assert.equal(unlockRequests(sim), 0);
    });
  });
});

describe("A refused connection: one outcome on output 2, its records, and the status ends on it (docs/nodes.md#node-status)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;
  const seen: Record<string, Status[]> = {};
  const last = (id: string): Status => seen[id]?.[seen[id].length - 1] ?? {};
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

  describe("door-unlock: the simulator stops (connection refused)", function () {
    let sim2: RunningSimulator;
    beforeEach(async () => {
      sim2 = await startSim();
      ({ userDir } = await loadFlow([...unlockFlow(sim2.url), ...catchNode()]));
      await waitReady();
      seen.u1 = recordStatuses(helper.getNode("u1"));
    });
    afterEach(async () => {
      try {
        await sim2.close();
      } catch {
        /* closed by the test */
      }
    });

    it("the simulator closed, an unlock: one outcome on output 2, attempt+result (or one rejected), status ends on it (not blue), no unhandled", async () => {
      const u0 = unhandledSeen().length;
      await sim2.close();
      const out = await unlock({ _msgid: "refused", deviceId: 101 });
      await settle();
      await new Promise((r) => setTimeout(r, 200));
      const recs = mine("refused");
      assert.equal(out.port, 1);
      assert.deepEqual(unhandledSince(u0), []);
      const types = recs.map((r) => r.type);
      assert.ok(
        JSON.stringify(types) === JSON.stringify(["unlock-attempt", "unlock-result"]) ||
          JSON.stringify(types) === JSON.stringify(["unlock-rejected"]),
        JSON.stringify(types),
      );
      assert.equal(last("u1").fill, "red", JSON.stringify(seen.u1));
      // The status is the failed outcome's (the test runtime shows message keys, not their text).
      assert.match(String(last("u1").text), /^door-unlock\.status\.failed/, JSON.stringify(seen.u1));
    });
  });
});

describe("The outcome status comes from the node's own values, shown once the message has gone: a next node that edits msg.payload or throws changes nothing; a removed node shows its outcome before its close and nothing after (docs/nodes.md#door-unlock)", function () {
  this.timeout(60000);
  let sim: RunningSimulator;
  before(async () => {
    sim = await startSim({ rateLimit: false });
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

  // Fixed in 531ad03.
  it("a change node after door-unlock that sets msg.payload.outcome on output 2: door-unlock's status still shows the forbidden (403) unlock it had, not the 'accepted' the next node wrote", async () => {
    const flow = [
      tab(),
      accountNode(sim.url),
      unlockNode({ wires: [["u1-ok"], ["chg"]] }),
      changeNode("chg", [{ t: "set", p: "payload.outcome", to: "accepted" }], ["u1-fail"]),
      ...helperNodes("u1-ok", "u1-fail"),
    ];
    await loadFlow(flow, { nodes: [...ALL_NODES, changeModule] });
    await waitReady();
    sim.control.resetRequests();
    const out = await unlock({ deviceId: 106, _msgid: "edited-by-next-node" }); // no key to the Boiler Room: 403
    assert.equal(out.port, 1, "output 2: the unlock failed");
    assert.equal(unlockRequests(sim), 1);
    await settle();
    const s = lastStatus(helper.getNode("u1"));
    assert.equal(
      s?.fill,
      "red",
      `the node shows the failure it had, not what the next node wrote into msg.payload: ${JSON.stringify(s)}`,
    );
    assert.match(String(s?.text), /failed/);
  });

  it("a failed message whose next node throws: one record, the status red, no unhandled rejection", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url));
    await waitReady();
    const u0 = unhandledSeen().length;
    helper.getNode("u1-fail").on("input", () => {
      throw new Error("the next node fails");
    });
    const out = await unlock({ deviceId: 106, _msgid: "next-node-throws" });
    assert.equal(out.msg.payload.outcome, "forbidden");
    await until(
      "the result record",
      () => readAudit(userDir).some((r) => r.msgid === "next-node-throws" && r.type === "unlock-result"),
      5000,
    );
    await settle();
    assert.equal(lastStatus(helper.getNode("u1"))?.fill, "red");
    assert.equal(unhandledSeen().length, u0);
  });

  it('a message still at the service ("sending") while a later one is rejected, then it is accepted: the node ends green (the last outcome), and no "sending" comes after an outcome of the same message', async () => {
    await loadFlow(unlockFlow(sim.url));
    await waitReady();
    const seen = recordStatuses(helper.getNode("u1"));
    sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 400 });
    const slow = unlock({ deviceId: 101, _msgid: "slow-accepted" });
    await until(
      "the PUT held at the service",
      () => sim.control.inFlight().some((r) => r.operation === "unlockDevice"),
      5000,
      2,
    );
    await until("sending shown", () => seen.some((x) => x.fill === "blue"), 5000, 2);
    const bad = await unlock({ deviceId: "x", _msgid: "rejected-meanwhile" });
    assert.equal(bad.msg.payload.outcome, "invalid-input");
    const ok = await slow;
    assert.equal(ok.msg.payload.outcome, "accepted");
    await settle();
    assert.equal(seen[seen.length - 1]?.fill, "green", JSON.stringify(seen));
    const lastGreen = seen.map((x) => x.fill).lastIndexOf("green");
    assert.equal(
      seen.slice(lastGreen).some((x) => x.fill === "blue"),
      false,
    );
  });

  it("the node removed by a deploy while its PUT is at the service: its outcome status is shown before its close completes, none after the deploy returned; the unlock-result is written", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url));
    await waitReady();
    const u1 = helper.getNode("u1");
    let deployed = false;
    const late: unknown[] = [];
    const all: unknown[] = [];
    const own = u1.status;
    u1.status = function (this: unknown, st: any) {
      all.push(st);
      if (deployed) late.push(st);
      return own.call(this, st);
    };
    sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 300 });
    u1.receive({ _msgid: "node-removed", deviceId: 101 });
    await until(
      "the PUT held at the service",
      () => sim.control.inFlight().some((r) => r.operation === "unlockDevice"),
      5000,
      2,
    );
    await deployFlows([tab(), accountNode(sim.url)], "full", {
      acc1: { phoneNumber: "+15550000001", password: "demo-password" },
    });
    deployed = true;
    await settle();
    assert.deepEqual(late, [], "no status from the removed node after the deploy returned");
    assert.ok(
      all.some((x: any) => x.fill === "green"),
      JSON.stringify(all),
    );
    assert.deepEqual(
      readAudit(userDir)
        .filter((r) => r.msgid === "node-removed")
        .map((r) => r.type),
      ["unlock-attempt", "unlock-result"],
    );
  });
});
