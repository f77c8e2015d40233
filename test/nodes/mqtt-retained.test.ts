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
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { CREDS, accountModule, helper, teardown, unlockModule, unlockRequests, until } from "../helpers/flow.js";
import { resolveFromNodeRed } from "../helpers/runtime.js";

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a core node of the selected Node-RED, found at run time
const mqttNode: unknown = require(resolveFromNodeRed("@node-red/nodes/core/network/10-mqtt.js"));

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
    await teardown(); // the flow stopped, and the account it parked closed with its simulator
    await publisher.publishAsync(TOPIC, "", { retain: true, qos: 1 }); // no retained command left behind
    await publisher.endAsync();
    await sim.close();
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  function flow(rejectRetained: boolean): unknown[] {
    return [
      { id: "t1", type: "tab", label: "mqtt" },
      {
        id: "b1",
        type: "mqtt-broker",
        name: "aedes",
        broker: "127.0.0.1",
        port: String(broker.port),
        clientid: "",
        autoConnect: true,
        usetls: false,
        protocolVersion: "4",
        keepalive: "60",
        cleansession: true,
      },
      {
        id: "in1",
        type: "mqtt in",
        z: "t1",
        name: "",
        topic: TOPIC,
        qos: "1",
        datatype: "utf8",
        broker: "b1",
        nl: false,
        rap: true,
        rh: 0,
        inputs: 0,
        wires: [["u1", "seen"]],
      },
      { id: "acc1", type: "door-account", name: "sim", baseUrl: sim.url, loginMethod: "phone", auditLog: "" },
      {
        id: "u1",
        type: "door-unlock",
        z: "t1",
        name: "",
        account: "acc1",
        deviceId: "",
        doorName: "Front Door",
        doorLocation: "Main Street 1",
        lockId: "",
        actor: "mqtt-test",
        rejectRetained,
        wires: [["ok"], ["fail"]],
      },
      { id: "seen", type: "helper", z: "t1" },
      { id: "ok", type: "helper", z: "t1" },
      { id: "fail", type: "helper", z: "t1" },
    ];
  }

  interface Captured {
    seen: any[];
    ok: any[];
    fail: any[];
  }

  async function load(rejectRetained: boolean): Promise<Captured> {
    await helper.load([mqttNode, accountModule, unlockModule], flow(rejectRetained), structuredClone(CREDS));
    const got: Captured = { seen: [], ok: [], fail: [] };
    for (const k of ["seen", "ok", "fail"] as const) helper.getNode(k).on("input", (msg: unknown) => got[k].push(msg));
    return got;
  }

  it("one published message: exactly one unlock at the simulator, accepted on output 1", async () => {
    const got = await load(true);
    await until(
      "the subscription",
      () => (helper.getNode("b1") as { connected?: boolean }).connected === true && got.seen.length === 0,
    );
    await new Promise((r) => setTimeout(r, 300)); // the subscribe is sent right after connect
    await publisher.publishAsync(TOPIC, "unlock", { qos: 1 });
    await until("the result", () => got.ok.length + got.fail.length >= 1);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(got.seen.length, 1);
    assert.equal(got.seen[0].retain, false);
    assert.equal(got.ok.length, 1, JSON.stringify(got.fail.map((m) => m.payload)));
    assert.equal(got.ok[0].payload.outcome, "accepted");
    assert.equal(got.ok[0].payload.deviceId, 101);
    assert.equal(unlockRequests(sim), 1);
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
    assert.equal(unlockRequests(sim), 0, "nothing was sent");
    assert.equal(sim.control.device(101).unlocks.length, 0);
  });

  it("with rejectRetained off, the replayed retained message does unlock (once)", async () => {
    await publisher.publishAsync(TOPIC, "unlock", { retain: true, qos: 1 });
    const got = await load(false);
    await until("the replayed message", () => got.fail.length + got.ok.length >= 1);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(got.seen[0].retain, true);
    assert.equal(got.ok.length, 1, JSON.stringify(got.fail.map((m) => m.payload)));
    assert.equal(unlockRequests(sim), 1);
  });
});
