/**
 * door-devices and door-status in a real Node-RED 4 runtime against the simulator: payloads,
 * the 24 h cache, msg.refresh, the idempotent retry, and failures caught by a Catch node with
 * msg.outcome and msg.statusCode. Requests are counted at the simulator.
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { accountNode, accountOf, catchNode, count, helper, helperNodes, loadFlow, next, startSim, tab, teardown, until, waitReady, TAB, lastStatus } from "../helpers/flow.js";
import { assertRetryAfterInText } from "../helpers/session.js";

const VISIBLE = [101, 102, 103, 104, 105, 106, 107, 201];

function send(nodeId: string, msg: Record<string, unknown>): void {
  helper.getNode(nodeId).receive(msg);
}

describe("door-devices and door-status: payloads, the 24 h cache, msg.refresh, retried reads, failures for a Catch node (docs/nodes.md#door-devices, docs/nodes.md#door-status)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSim();
    const flow = [
      tab(), accountNode(sim.url),
      { id: "dev", type: "door-devices", z: TAB, name: "", account: "acc1", list: "devices", wires: [["dev-out"]] },
      { id: "devdef", type: "door-devices", z: TAB, name: "", account: "acc1", wires: [["devdef-out"]] },
      { id: "loc", type: "door-devices", z: TAB, name: "", account: "acc1", list: "locations", wires: [["loc-out"]] },
      { id: "st", type: "door-status", z: TAB, name: "", account: "acc1", deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1", wires: [["st-out"]] },
      { id: "stmsg", type: "door-status", z: TAB, name: "", account: "acc1", deviceId: "", doorName: "", doorLocation: "", wires: [["stmsg-out"]] },
      ...helperNodes("dev-out", "devdef-out", "loc-out", "st-out", "stmsg-out"),
      ...catchNode(),
    ];
    await loadFlow(flow);
    await waitReady();
  });
  after(async () => {
    await teardown();
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });

  describe("door-devices", () => {
    it("list devices (the default when list is unset): msg.payload is the validated Device array, served from the warm cache", async () => {
      const got = next("devdef-out");
      send("devdef", { topic: "x" });
      const msg = await got;
      assert.ok(Array.isArray(msg.payload));
      assert.deepEqual(msg.payload.map((d: any) => d.id).sort(), VISIBLE);
      const front = msg.payload.find((d: any) => d.id === 101);
      assert.equal(front.name, "Front Door");
      assert.equal(front.locationName, "Main Street 1");
      assert.equal(msg.topic, "x", "the rest of the message is kept");
      assert.equal(count(sim, "listUserDevices"), 0, "warmed at deploy, served from the cache");
    });

    it("a second message is served from the cache: no new GET /api/user/device", async () => {
      for (let i = 0; i < 3; i++) {
        const got = next("dev-out");
        send("dev", {});
        assert.equal((await got).payload.length, VISIBLE.length);
      }
      assert.equal(count(sim, "listUserDevices"), 0);
    });

    it("msg.refresh === true forces exactly one fetch; a truthy non-true value does not", async () => {
      let got = next("dev-out");
      send("dev", { refresh: true });
      await got;
      assert.equal(count(sim, "listUserDevices"), 1);
      got = next("dev-out");
      send("dev", { refresh: "yes" });
      await got;
      assert.equal(count(sim, "listUserDevices"), 1);
    });

    it("list locations: GET /api/user/location once, then from the cache", async () => {
      let got = next("loc-out");
      send("loc", {});
      const msg = await got;
      assert.ok(Array.isArray(msg.payload));
      assert.ok(msg.payload.length >= 2);
      assert.equal(count(sim, "listUserLocations"), 1);
      got = next("loc-out");
      send("loc", {});
      await got;
      assert.equal(count(sim, "listUserLocations"), 1);
      assert.equal(count(sim, "listUserDevices"), 0);
    });

    it("failure (503 on every attempt) → done(err) with a real Error, caught by a Catch node with msg.outcome offline and msg.statusCode 503", async () => {
      sim.control.inject({ kind: "503", endpoint: "listUserDevices", count: 4 });
      const node = helper.getNode("dev");
      const errorsBefore = node.error.callCount;
      const caught = next("caught");
      send("dev", { refresh: true, _msgid: "fail-1" });
      const msg = await caught;
      assert.equal(msg._msgid, "fail-1");
      assert.equal(msg.outcome, "offline");
      assert.equal(msg.statusCode, 503);
      assert.equal(msg.error.source.id, "dev");
      assert.match(msg.error.message, /door-devices/);
      assert.match(msg.error.message, /devices/);
      assert.equal(count(sim, "listUserDevices"), 4, "the idempotent GET is tried 4 times, no more");
      const call = node.error.getCalls().slice(errorsBefore).find((c: any) => c.thisValue === node);
      assert.ok(call, "node.error was called by done(err)");
      assert.ok(call.args[0] instanceof Error, "done() got a real Error");
      assert.equal(lastStatus(node)?.fill, "red");
    });
  });

  describe("door-status", () => {
    it("payload is the Device record and msg.deviceId is set (configured door)", async () => {
      const got = next("st-out");
      send("st", {});
      const msg = await got;
      assert.equal(msg.payload.id, 101);
      assert.equal(msg.payload.name, "Front Door");
      assert.equal(msg.payload.online, true);
      assert.equal(msg.deviceId, 101);
      assert.equal(count(sim, "getDevice", 101), 1);
    });

    it("msg.deviceId and msg.door select the device", async () => {
      let got = next("stmsg-out");
      send("stmsg", { deviceId: 105 });
      let msg = await got;
      assert.equal(msg.payload.id, 105);
      assert.equal(msg.payload.online, false);
      got = next("stmsg-out");
      send("stmsg", { door: "harbour warehouse / back door" });
      msg = await got;
      assert.equal(msg.payload.id, 103);
      assert.equal(msg.deviceId, 103);
      assert.deepEqual(sim.control.requests({ operation: "getDevice" }).map((r) => r.deviceId), [105, 103]);
    });

    it("invalid input → Catch with outcome invalid-input, nothing sent", async () => {
      const caught = next("caught");
      send("stmsg", { deviceId: "101" });
      const msg = await caught;
      assert.equal(msg.outcome, "invalid-input");
      assert.equal(msg.statusCode, undefined);
      assert.equal(count(sim, "getDevice"), 0);
    });

    it("429 (Retry-After 1) then success is retried: one output, exactly 2 GETs", async () => {
      sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: 1, count: 1 });
      const outs: any[] = [];
      const got = next("st-out");
      const started = Date.now();
      send("st", {});
      outs.push(await got);
      assert.ok(Date.now() - started >= 900, "Retry-After honoured");
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(outs.length, 1);
      assert.equal(outs[0].payload.id, 101);
      assert.equal(count(sim, "getDevice", 101), 2);
    });

    it("503 on all 4 attempts → Catch with outcome offline, statusCode 503, exactly 4 GETs", async () => {
      sim.control.inject({ kind: "503", endpoint: "getDevice", count: 4 });
      const caught = next("caught");
      send("st", { _msgid: "st-fail" });
      const msg = await caught;
      assert.equal(msg._msgid, "st-fail");
      assert.equal(msg.outcome, "offline");
      assert.equal(msg.statusCode, 503);
      assert.equal(msg.deviceId, 101);
      assert.equal(msg.error.source.id, "st");
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(count(sim, "getDevice", 101), 4);
    });

    it("404 for an unknown id → Catch with outcome not-found, statusCode 404, one GET", async () => {
      const caught = next("caught");
      send("stmsg", { deviceId: 999 });
      const msg = await caught;
      assert.equal(msg.outcome, "not-found");
      assert.equal(msg.statusCode, 404);
      assert.equal(count(sim, "getDevice", 999), 1);
    });
  });
});

// docs/session.md#rate-limits: a rate-limited failure sets
// msg.outcome "rate-limited", msg.statusCode 429 and msg.retryAfter (whole seconds until the
// package sends again), and the error's text names the same number.
describe("door-devices and door-status: a rate-limited failure carries msg.retryAfter, named in its error (docs/session.md#rate-limits)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSim();
    // Retry-After above a minute: the client does not wait it out, the request fails at once.
    sim.control.inject({ kind: "429", endpoint: "listUserDevices", retryAfter: 90 });
    const flow = [
      tab(), accountNode(sim.url),
      { id: "dev", type: "door-devices", z: TAB, name: "", account: "acc1", list: "devices", wires: [["dev-out"]] },
      { id: "loc", type: "door-devices", z: TAB, name: "", account: "acc1", list: "locations", wires: [["loc-out"]] },
      { id: "stmsg", type: "door-status", z: TAB, name: "", account: "acc1", deviceId: "", doorName: "", doorLocation: "", wires: [["stmsg-out"]] },
      ...helperNodes("dev-out", "loc-out", "stmsg-out"),
      ...catchNode(),
    ];
    await loadFlow(flow);
    await until("the start-up list fetch to fail", () => accountOf().account?.directory.nextRetryAt() != null);
  });
  after(async () => {
    await teardown();
    await sim.close();
  });
  beforeEach(() => {
    sim.control.resetRequests();
  });

  async function caught(nodeId: string, msg: Record<string, unknown>): Promise<any> {
    const got = next("caught");
    send(nodeId, msg);
    const m = await got;
    assert.equal(m.outcome, "rate-limited", JSON.stringify({ outcome: m.outcome, error: m.error?.message }));
    assert.equal(m.statusCode, 429);
    assert.equal(assertRetryAfterInText({ retryAfter: m.retryAfter, message: m.error.message }), m.retryAfter);
    return m;
  }

  it("door-devices: the device list within its Retry-After", async () => {
    const m = await caught("dev", {});
    assert.ok(m.retryAfter >= 88 && m.retryAfter <= 90, `retryAfter ${m.retryAfter}`);
    assert.equal(count(sim, "listUserDevices"), 0, "nothing fetched within the Retry-After");
  });

  it("door-devices: the location list answered 429", async () => {
    sim.control.inject({ kind: "429", endpoint: "listUserLocations", retryAfter: 90 });
    const m = await caught("loc", {});
    assert.ok(m.retryAfter >= 89 && m.retryAfter <= 90, `retryAfter ${m.retryAfter}`);
    assert.equal(count(sim, "listUserLocations"), 1);
  });

  it("door-status: msg.door while the device list is within its Retry-After", async () => {
    const m = await caught("stmsg", { door: "Front Door" });
    assert.ok(m.retryAfter >= 85 && m.retryAfter <= 90, `retryAfter ${m.retryAfter}`);
    assert.equal(sim.control.requests().length, 0, "nothing sent");
  });

  it("door-status: the device read answered 429", async () => {
    sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: 90 });
    const m = await caught("stmsg", { deviceId: 101 });
    assert.equal(m.retryAfter, 90);
    assert.equal(count(sim, "getDevice"), 1);
  });
});
