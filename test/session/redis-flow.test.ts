/**
 * Two Node-RED 4 runtimes (real processes: node_modules/node-red/red.js, our package linked
 * into each user directory) with their own door-account config node for the same account,
 * sharing its session through a real redis-server. Each unlocks doors through a flow
 * (http in → change → door-unlock → http response). Counted at the simulator: one login
 * between them, exactly one PUT per message, no 401 anywhere, no failed outcome
 * (docs/session.md#the-redis-session-store).
 */
import { strict as assert } from "node:assert";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { RedisServer } from "../helpers/redis.js";
import { needProgram } from "../helpers/programs.js";
import { NodeRedProcess as Runtime } from "../helpers/node-red-process.js";
import { waitUntil } from "../helpers/session.js";

function flow(accountId: string, simUrl: string, redisUrl: string): unknown[] {
  return [
    { id: "tab1", type: "tab", label: "doors" },
    {
      id: accountId,
      type: "door-account",
      name: "shared account",
      baseUrl: simUrl,
      loginMethod: "phone",
      auditLog: "audit.jsonl",
      sessionStore: "redis",
      redisUrl,
      redisKeyPrefix: "door-access:",
      credentials: { phoneNumber: "+15550000001", password: "demo-password" },
    },
    { id: "in1", type: "http in", z: "tab1", url: "/unlock", method: "post", upload: false, wires: [["set1"]] },
    {
      id: "set1",
      type: "change",
      z: "tab1",
      rules: [{ t: "set", p: "deviceId", pt: "msg", to: "payload.deviceId", tot: "msg" }],
      wires: [["unlock1"]],
    },
    {
      id: "unlock1",
      type: "door-unlock",
      z: "tab1",
      account: accountId,
      deviceId: "",
      doorName: "",
      doorLocation: "",
      lockId: "",
      actor: "",
      rejectRetained: true,
      wires: [["out1"], ["out1"]],
    },
    { id: "out1", type: "http response", z: "tab1", statusCode: "200", headers: {}, wires: [] },
  ];
}

describe("Redis session store: two Node-RED runtimes on one account log in once between them and never log each other out (docs/session.md#the-redis-session-store)", function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let sim: RunningSimulator;
  const runtimes: Runtime[] = [];

  before(async function () {
    needProgram(this, "redis-server");
    redis = await RedisServer.start();
    sim = await startSimulator({ rateLimit: false });
  });
  after(async () => {
    await Promise.all(runtimes.map((r) => r.stop()));
    await sim?.close();
    await redis?.stop();
  });

  it("both unlock doors: one login between them, exactly one PUT per message, no 401, no failed outcome", async () => {
    const [a, b] = await Promise.all([Runtime.start("a"), Runtime.start("b")]);
    runtimes.push(a, b);
    sim.control.resetRequests();
    // Different config node ids in each runtime: the shared key is the account's, not the node's.
    await Promise.all([a.deploy(flow("acctA", sim.url, redis.url)), b.deploy(flow("acctB", sim.url, redis.url))]);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const states = await Promise.all([a.accountState("acctA"), b.accountState("acctB")]);
      if (states.every((s) => s.state === "ready")) break;
      if (Date.now() > deadline) throw new Error(`accounts not ready: ${JSON.stringify(states)}\n${a.log}\n${b.log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 1, "one login for both runtimes");

    const doors = [101, 102, 103, 104];
    const sent: { rt: Runtime; deviceId: number }[] = [];
    for (let i = 0; i < 20; i++) sent.push({ rt: i % 2 ? b : a, deviceId: doors[i % doors.length] });
    const results = await Promise.all(sent.map((s) => s.rt.unlock(s.deviceId)));
    for (const r of results) assert.equal(r.outcome, "accepted", JSON.stringify(r));

    // One runtime logs in again (an operator's Reconnect): the other learns the new pair from Redis.
    const mark = b.log.length;
    const r = await fetch(`${a.base}/door-access/accounts/acctA/reconnect`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Requested-With": "XMLHttpRequest" },
      body: "{}",
    });
    assert.equal(r.status, 202);
    await waitUntil(() => sim.control.requests({ operation: "loginByPhone" }).length === 2, 10_000, "the second login");
    // The new login superseded the old pair at the service: b must have adopted a's new pair from
    // Redis (its notice, then a read) before it sends anything. Waited for in b's log, not timed.
    await waitUntil(
      () => b.log.slice(mark).includes("adopted the pair renewed by another instance"),
      30_000,
      () => `runtime b to adopt the new pair from Redis:\n${b.log.slice(mark)}`,
    );
    const more: { rt: Runtime; deviceId: number }[] = [];
    for (let i = 0; i < 20; i++) more.push({ rt: i % 2 ? a : b, deviceId: doors[i % doors.length] });
    const results2 = await Promise.all(more.map((s) => s.rt.unlock(s.deviceId)));
    for (const x of results2) assert.equal(x.outcome, "accepted", JSON.stringify(x));

    const puts = sim.control.requests({ operation: "unlockDevice" });
    assert.equal(puts.length, 40, "exactly one PUT per message");
    assert.ok(puts.every((p) => p.status === 200));
    for (const d of doors) assert.equal(puts.filter((p) => p.deviceId === d).length, 10, `door ${d}`);
    assert.equal(sim.control.requests().filter((x) => x.status === 401).length, 0, "no 401 anywhere");
    assert.equal(
      sim.control.requests({ operation: "loginByPhone" }).length,
      2,
      "the start-up login and the operator's reconnect only",
    );
    assert.equal(sim.control.requests({ operation: "refreshToken" }).length, 0);
    const states = await Promise.all([a.accountState("acctA"), b.accountState("acctB")]);
    assert.deepEqual(
      states.map((s) => s.state),
      ["ready", "ready"],
    );
  });
});
