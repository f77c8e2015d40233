/**
 * door-unlock's node status in a real Node-RED runtime against the simulator: "sending" while
 * the unlock is in flight, then the outcome; an outcome is never overwritten by "sending" (the
 * "sending" status is set once the unlock is under way, off the door's path).
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../src/simulator/index.js";
import { assertAccepted, assertFailed, helper, loadFlow, startSim, teardown, unlock, unlockFlow, unlockRequests, until, waitReady } from "./helpers/flow.js";

interface Status { fill?: string; shape?: string; text?: string }

describe("door-unlock node status (Node-RED runtime + simulator)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  const seen: Status[] = [];

  before(async () => {
    sim = await startSim();
    await loadFlow(unlockFlow(sim.url, { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" }));
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
});
