/**
 * door-unlock door and lock selection in a real Node-RED 4 runtime against the simulator:
 * lock routing, name resolution, the stored door identity, the 404 re-fetch, concurrency and
 * one login for many nodes. Requests are counted at the simulator.
 */
import { strict as assert } from "node:assert";
import { demoSeed, type RunningSimulator } from "../../src/simulator/index.js";
import {
  accountNode, assertAccepted, assertFailed, count, editorPost, helper, helperNodes, loadFlow, logins, startSim, tab, teardown,
  unlock, unlockFlow, unlockNode, unlockRequests, until, waitReady, next,
} from "../helpers/flow.js";

describe("door-unlock selection: locks, door names, the stored door identity, 50 messages at once (docs/doors.md#message-overrides, docs/doors.md#resolution-rules)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSim();
    const flow = [
      ...unlockFlow(sim.url),
      unlockNode({ deviceId: "104", doorName: "Loading Bay", doorLocation: "Harbour Warehouse", lockId: "1" }, "u104"),
      ...helperNodes("u104-ok", "u104-fail"),
      // Stored identity whose id went stale: the name and location decide.
      unlockNode({ deviceId: "4242", doorName: "Front Door", doorLocation: "Main Street 1" }, "ustale"),
      ...helperNodes("ustale-ok", "ustale-fail"),
      // Stored identity of a door whose name repeats: the location decides.
      unlockNode({ deviceId: "", doorName: "Back Door", doorLocation: "Harbour Warehouse" }, "uback"),
      ...helperNodes("uback-ok", "uback-fail"),
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

  it("msg.lockId 2 on 104 → PUT /api/device/104/unlock/2, nothing else", async () => {
    const p = assertAccepted(await unlock({ deviceId: 104, lockId: 2 }));
    assert.equal(p.lockId, 2);
    assert.equal(p.deviceId, 104);
    const puts = sim.control.requests({ operation: "unlockDeviceLock" });
    assert.equal(puts.length, 1);
    assert.equal(puts[0].method, "PUT");
    assert.equal(puts[0].path, "/api/device/104/unlock/2");
    assert.equal(count(sim, "unlockDevice"), 0);
    assert.deepEqual(sim.control.device(104).lastUnlock?.lockId, 2);
  });

  it("the node's configured lock (1) on its configured door (104) → PUT /api/device/104/unlock/1", async () => {
    const p = assertAccepted(await unlock({}, "u104"));
    assert.equal(p.lockId, 1);
    const puts = sim.control.requests({ operation: "unlockDeviceLock" });
    assert.deepEqual(puts.map((r) => r.path), ["/api/device/104/unlock/1"]);
    assert.equal(unlockRequests(sim), 1);
  });

  it("msg.lockId overrides the configured lock", async () => {
    assertAccepted(await unlock({ lockId: 2 }, "u104"));
    assert.deepEqual(sim.control.requests({ operation: "unlockDeviceLock" }).map((r) => r.path), ["/api/device/104/unlock/2"]);
  });

  it("lock 2 of 107 (the one lock the key opens) is accepted; the whole device would be 403", async () => {
    assertAccepted(await unlock({ deviceId: 107, lockId: 2 }));
    assert.deepEqual(sim.control.requests({ operation: "unlockDeviceLock" }).map((r) => r.path), ["/api/device/107/unlock/2"]);
  });

  it("a lockId on the single-lock door 101 → invalid-input, nothing sent", async () => {
    const p = assertFailed(await unlock({ deviceId: 101, lockId: 1 }), "invalid-input", null);
    assert.match(p.message, /single lock/);
    assert.equal(unlockRequests(sim), 0);
  });

  it('msg.door "Front Door" → 101', async () => {
    const p = assertAccepted(await unlock({ door: "Front Door" }));
    assert.equal(p.deviceId, 101);
    assert.equal(p.door, "Front Door");
    assert.deepEqual(sim.control.requests({ operation: "unlockDevice" }).map((r) => r.path), ["/api/device/101/unlock"]);
  });

  for (const variant of ["Harbour Warehouse / Back Door", "harbour warehouse/back door", "  HARBOUR   Warehouse  /   back DOOR  ", "Harbour Warehouse/Back Door"]) {
    it(`msg.door ${JSON.stringify(variant)} → 103`, async () => {
      const p = assertAccepted(await unlock({ door: variant }));
      assert.equal(p.deviceId, 103);
      assert.equal(p.door, "Harbour Warehouse / Back Door");
      assert.deepEqual(sim.control.requests({ operation: "unlockDevice" }).map((r) => r.path), ["/api/device/103/unlock"]);
    });
  }

  // Rule "A message opens the door it identified, or none": msg.deviceId and msg.door that disagree identify no door.
  it("msg.deviceId 101 with msg.door \"Harbour Warehouse / Back Door\" (103) → invalid-input naming both, nothing sent", async () => {
    const p = assertFailed(await unlock({ deviceId: 101, door: "Harbour Warehouse / Back Door" }), "invalid-input", null);
    assert.match(p.message, /msg.deviceId 101 and msg.door .* name different doors/);
    assert.equal(unlockRequests(sim), 0);
  });

  it("msg.deviceId 103 with msg.door naming the same door → 103", async () => {
    const p = assertAccepted(await unlock({ deviceId: 103, door: "harbour warehouse / back door" }));
    assert.equal(p.deviceId, 103);
    assert.deepEqual(sim.control.requests({ operation: "unlockDevice" }).map((r) => r.path), ["/api/device/103/unlock"]);
  });

  it("msg.deviceId with an ambiguous msg.door (\"Back Door\") → invalid-input, nothing sent", async () => {
    assertFailed(await unlock({ deviceId: 102, door: "Back Door" }), "invalid-input", null);
    assert.equal(unlockRequests(sim), 0);
  });

  it("msg.door with a lockId: Loading Bay lock 2", async () => {
    const p = assertAccepted(await unlock({ door: "loading bay", lockId: 2 }));
    assert.equal(p.deviceId, 104);
    assert.deepEqual(sim.control.requests({ operation: "unlockDeviceLock" }).map((r) => r.path), ["/api/device/104/unlock/2"]);
  });

  it("a configured door is found by its identity (name + location) when its stored id is stale", async () => {
    const p = assertAccepted(await unlock({}, "ustale"));
    assert.equal(p.deviceId, 101);
    assert.deepEqual(sim.control.requests({ operation: "unlockDevice" }).map((r) => r.path), ["/api/device/101/unlock"]);
  });

  it("a configured door whose name repeats is found by its location", async () => {
    const p = assertAccepted(await unlock({}, "uback"));
    assert.equal(p.deviceId, 103);
    assert.deepEqual(sim.control.requests({ operation: "unlockDevice" }).map((r) => r.path), ["/api/device/103/unlock"]);
  });

  it("no door anywhere (no config, no msg field) → invalid-input, nothing sent", async () => {
    const p = assertFailed(await unlock({}), "invalid-input", null);
    assert.match(p.message, /no door selected/);
    assert.equal(unlockRequests(sim), 0);
  });

  it("resolving names does not fetch the device list again (24 h cache)", async () => {
    await unlock({ door: "Front Door" });
    await unlock({ door: "Garage", lockId: 2 });
    assert.equal(count(sim, "listUserDevices"), 0);
  });

  it("50 concurrent messages to one door-unlock → exactly 50 PUTs and 50 outputs, no new login", async () => {
    const before = sim.control.counts().logins;
    const outs = await Promise.all(Array.from({ length: 50 }, (_, i) => unlock({ deviceId: 101, actor: `c${i}` })));
    assert.equal(outs.length, 50);
    assert.ok(outs.every((o) => o.port === 0 && o.msg.payload.outcome === "accepted"));
    assert.deepEqual(new Set(outs.map((o) => o.msg.payload.actor)).size, 50);
    assert.equal(count(sim, "unlockDevice", 101), 50);
    assert.equal(unlockRequests(sim), 50);
    assert.equal(sim.control.counts().logins - before, 0);
    assert.equal(logins(sim), 0);
  });
});

describe("door-unlock: one login for the whole account (docs/session.md#login-and-start-up)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  before(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
  });
  after(async () => {
    await sim.close();
  });

  it("two door-unlock nodes and a door-status on one account → 1 login; 50 concurrent messages right after deploy wait for it", async () => {
    const flow = [
      tab(), accountNode(sim.url),
      unlockNode({}, "ua"), ...helperNodes("ua-ok", "ua-fail"),
      unlockNode({}, "ub"), ...helperNodes("ub-ok", "ub-fail"),
      { id: "st", type: "door-status", z: "tab1", account: "acc1", deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1", wires: [["st-out"]] },
      ...helperNodes("st-out"),
    ];
    await loadFlow(flow);
    // No waiting for the login: the messages arrive while the account is logging in.
    const all = await Promise.all([
      ...Array.from({ length: 25 }, () => unlock({ deviceId: 101 }, "ua")),
      ...Array.from({ length: 25 }, () => unlock({ deviceId: 102 }, "ub")),
      (async () => {
        const got = next("st-out");
        helper.getNode("st").receive({});
        return got;
      })(),
    ]);
    const unlocks = all.slice(0, 50) as { port: number; msg: any }[];
    assert.ok(unlocks.every((o) => o.port === 0), JSON.stringify(unlocks.find((o) => o.port !== 0)?.msg.payload));
    assert.equal((all[50] as any).payload.id, 101);
    assert.equal(logins(sim), 1);
    assert.equal(sim.control.counts().logins, 1);
    assert.equal(count(sim, "unlockDevice", 101), 25);
    assert.equal(count(sim, "unlockDevice", 102), 25);
  });
});

describe("door-unlock: a 404 for a known id re-fetches the device list once (docs/doors.md#the-device-list)", function () {
  this.timeout(20000);
  let simA: RunningSimulator;
  let simB: RunningSimulator | null = null;

  after(async () => {
    await teardown();
    await simA?.close();
    await simB?.close();
  });

  it("door 103 disappears at the service: one PUT → not-found, the list is fetched exactly once, a second 404 fetches nothing", async () => {
    simA = await startSim();
    const port = Number(new URL(simA.url).port);
    await loadFlow(unlockFlow(simA.url));
    await waitReady();
    // The service restarts without door 103 (same address); the account keeps its cached list.
    await simA.close();
    const seed = demoSeed();
    seed.doors = seed.doors.filter((d) => d.id !== 103);
    seed.keys = seed.keys.filter((k) => k.deviceId !== 103);
    simB = await startSim({ port, seed });
    // The new service knows no session: the operator re-connects through the admin endpoint.
    await editorPost("/door-access/accounts/acc1/reconnect").send({}).expect(202);
    await until("the login at the new service", () => simB!.control.counts().logins === 1);
    await until("the account to be ready", () => helper.getNode("acc1").account.session.state === "ready");
    simB.control.resetRequests();

    const p = assertFailed(await unlock({ deviceId: 103 }), "not-found", 404);
    assert.equal(p.door, "Harbour Warehouse / Back Door");
    await until("the device list re-fetch", () => count(simB!, "listUserDevices") >= 1, 3000);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(count(simB, "listUserDevices"), 1);
    assert.equal(unlockRequests(simB), 1);

    // 103 is gone from the list now: another 404 does not fetch again.
    assertFailed(await unlock({ deviceId: 103 }), "not-found", 404);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(count(simB, "listUserDevices"), 1);
    assert.equal(unlockRequests(simB), 2);
    // And the name no longer resolves to it: "Back Door" is now unique (102).
    const q = assertAccepted(await unlock({ door: "Back Door" }));
    assert.equal(q.deviceId, 102);
  });
});
