/**
 * MQTT end to end: a real broker on loopback (aedes, in process), Node-RED's core `mqtt in`
 * node and our `door-unlock`, in a Node-RED 4 runtime (node-red-node-test-helper), the
 * simulator as the service. One published command is one unlock; a retained command that the
 * broker replays on subscribe (msg.retain === true) is none, unless rejectRetained is off.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { startBroker, type Broker } from "../../scripts/mqtt-broker.js";
import { REPO_ROOT } from "../../scripts/node-red-process.js";
import { nodeRedPath, resolveFromNodeRed } from "../helpers/runtime.js";
import { DEMO_ACCOUNT, startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { closeAllParked } from "../../src/account/registry.js";

// node-red-node-test-helper has no type declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const helper: any = require("node-red-node-test-helper");
// DOOR_ACCESS_NODE_RED=node-red-5 runs this against Node-RED 5 (test/helpers/runtime.ts).
helper.init(nodeRedPath);

const mqttNode: unknown = require(resolveFromNodeRed("@node-red/nodes/core/network/10-mqtt.js"));
const accountNode: unknown = require(path.join(REPO_ROOT, "nodes", "door-account.js"));
const unlockNode: unknown = require(path.join(REPO_ROOT, "nodes", "door-unlock.js"));

const TOPIC = "door-access/test/front-door";

describe("MQTT end to end: one published command is one unlock; a retained one the broker replays is none while Retained is on (docs/nodes.md#door-unlock)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let broker: Broker;
  let mqtt: typeof import("mqtt");
  let userDir: string;
  let publisher: import("mqtt").MqttClient;

  before(async () => {
    mqtt = await import("mqtt");
    broker = await startBroker(0);
    await new Promise<void>((resolve) => helper.startServer(resolve));
  });

  after(async () => {
    await new Promise<void>((resolve) => helper.stopServer(resolve));
    await broker?.close();
  });

  beforeEach(async () => {
    sim = await startSimulator({ port: 0 });
    userDir = fs.mkdtempSync(path.join(tmpdir(), "door-mqtt-"));
    helper.settings({ userDir });
    publisher = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { clientId: `publisher-${Date.now()}` });
  });

  afterEach(async () => {
    await helper.unload();
    await closeAllParked(); // the stopped flow parked its account: close it with its simulator
    await publisher.publishAsync(TOPIC, "", { retain: true, qos: 1 }); // no retained command left behind
    await publisher.endAsync();
    await sim.close();
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  function flow(rejectRetained: boolean): unknown[] {
    return [
      { id: "t1", type: "tab", label: "mqtt" },
      { id: "b1", type: "mqtt-broker", name: "aedes", broker: "127.0.0.1", port: String(broker.port), clientid: "", autoConnect: true, usetls: false, protocolVersion: "4", keepalive: "60", cleansession: true },
      { id: "in1", type: "mqtt in", z: "t1", name: "", topic: TOPIC, qos: "1", datatype: "utf8", broker: "b1", nl: false, rap: true, rh: 0, inputs: 0, wires: [["u1", "seen"]] },
      { id: "acc1", type: "door-account", name: "sim", baseUrl: sim.url, loginMethod: "phone", auditLog: "" },
      { id: "u1", type: "door-unlock", z: "t1", name: "", account: "acc1", deviceId: "", doorName: "Front Door", doorLocation: "Main Street 1", lockId: "", actor: "mqtt-test", rejectRetained, wires: [["ok"], ["fail"]] },
      { id: "seen", type: "helper", z: "t1" },
      { id: "ok", type: "helper", z: "t1" },
      { id: "fail", type: "helper", z: "t1" },
    ];
  }

  const creds = () => ({ acc1: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password } });

  interface Captured { seen: any[]; ok: any[]; fail: any[] }

  async function load(rejectRetained: boolean): Promise<Captured> {
    await helper.load([mqttNode, accountNode, unlockNode], flow(rejectRetained), creds());
    const got: Captured = { seen: [], ok: [], fail: [] };
    for (const k of ["seen", "ok", "fail"] as const) helper.getNode(k).on("input", (msg: unknown) => got[k].push(msg));
    return got;
  }

  function unlocks(): number {
    return sim.control.requests({ operation: "unlockDevice" }).length + sim.control.requests({ operation: "unlockDeviceLock" }).length;
  }

  async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it("one published message: exactly one unlock at the simulator, accepted on output 1", async () => {
    const got = await load(true);
    await until("the subscription", () => (helper.getNode("b1") as { connected?: boolean }).connected === true && got.seen.length === 0);
    await new Promise((r) => setTimeout(r, 300)); // the subscribe is sent right after connect
    await publisher.publishAsync(TOPIC, "unlock", { qos: 1 });
    await until("the result", () => got.ok.length + got.fail.length >= 1);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(got.seen.length, 1);
    assert.equal(got.seen[0].retain, false);
    assert.equal(got.ok.length, 1, JSON.stringify(got.fail.map((m) => m.payload)));
    assert.equal(got.ok[0].payload.outcome, "accepted");
    assert.equal(got.ok[0].payload.deviceId, 101);
    assert.equal(unlocks(), 1);
    assert.equal(sim.control.device(101).unlocks.length, 1);
  });

  it("a retained message replayed on subscribe: zero unlocks, retained-rejected on output 2", async () => {
    await publisher.publishAsync(TOPIC, "unlock", { retain: true, qos: 1 });
    const got = await load(true);
    await until("the replayed message", () => got.fail.length + got.ok.length >= 1);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(got.seen.length, 1);
    assert.equal(got.seen[0].retain, true, "the broker replayed it as retained");
    assert.equal(got.ok.length, 0);
    assert.equal(got.fail.length, 1);
    assert.equal(got.fail[0].payload.outcome, "retained-rejected");
    assert.equal(got.fail[0].payload.status, null);
    assert.equal(unlocks(), 0, "nothing was sent");
    assert.equal(sim.control.device(101).unlocks.length, 0);
  });

  it("with rejectRetained off, the replayed retained message does unlock (once)", async () => {
    await publisher.publishAsync(TOPIC, "unlock", { retain: true, qos: 1 });
    const got = await load(false);
    await until("the replayed message", () => got.fail.length + got.ok.length >= 1);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(got.seen[0].retain, true);
    assert.equal(got.ok.length, 1, JSON.stringify(got.fail.map((m) => m.payload)));
    assert.equal(unlocks(), 1);
  });
});
