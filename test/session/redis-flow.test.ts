/**
 * Two Node-RED 4 runtimes (real processes: node_modules/node-red/red.js, our package linked
 * into each user directory) with their own door-account config node for the same account,
 * sharing its session through a real redis-server. Each unlocks doors through a flow
 * (http in → change → door-unlock → http response). Counted at the simulator: one login
 * between them, exactly one PUT per message, no 401 anywhere, no failed outcome
 * (docs/session.md#the-redis-session-store).
 */
import { strict as assert } from "node:assert";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { RedisServer, freePort } from "../helpers/redis.js";
import { nodeRedScript } from "../helpers/runtime.js";
import { tempDir, waitUntil } from "../helpers/session.js";

const REPO = path.resolve(".");
const RED_JS = nodeRedScript; // node-red/red.js (4.x), or node-red-5 with DOOR_ACCESS_NODE_RED (test/helpers/runtime.ts)

class Runtime {
  proc: ChildProcess | null = null;
  log = "";
  constructor(
    readonly name: string,
    readonly port: number,
    readonly userDir: string,
  ) {}

  static async start(name: string): Promise<Runtime> {
    const userDir = tempDir(`door-nr-${name}-`);
    mkdirSync(path.join(userDir, "node_modules", "@door-access"), { recursive: true });
    symlinkSync(REPO, path.join(userDir, "node_modules", "@door-access", "node-red"), "dir");
    const port = await freePort();
    const settings = path.join(userDir, "settings.js");
    writeFileSync(
      settings,
      `module.exports = ${JSON.stringify({
        uiHost: "127.0.0.1",
        uiPort: port,
        userDir,
        flowFile: "flows.json",
        // Each instance has its own credential secret, as real ones do.
        credentialSecret: `secret-of-${name}`,
        httpNodeRoot: "/",
        // info: the session's "adopted the pair renewed by another instance" line is what the test waits on.
        logging: { console: { level: "info", metrics: false, audit: false } },
        externalModules: { autoInstall: false, palette: { allowInstall: false } },
        diagnostics: { enabled: false },
        telemetry: { enabled: false },
        editorTheme: { tours: false },
      })};\n`,
    );
    const rt = new Runtime(name, port, userDir);
    const proc = spawn(process.execPath, [RED_JS, "-u", userDir, "-p", String(port), "-s", settings], {
      cwd: userDir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    rt.proc = proc;
    proc.stdout.on("data", (d: Buffer) => (rt.log += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (rt.log += d.toString()));
    proc.once("exit", () => (rt.proc = null));
    const end = Date.now() + 60_000;
    for (;;) {
      if (!rt.proc) throw new Error(`Node-RED ${name} exited:\n${rt.log}`);
      const types = await fetch(`${rt.base}/nodes`, { headers: { Accept: "application/json" } })
        .then((r) => (r.ok ? (r.json() as Promise<{ types: string[] }[]>) : null))
        .catch(() => null);
      if (types && types.some((m) => m.types.includes("door-unlock"))) return rt;
      if (types && Date.now() > end - 50_000 && !types.some((m) => m.types.includes("door-account"))) {
        throw new Error(`Node-RED ${name} did not load the door nodes:\n${rt.log}`);
      }
      if (Date.now() > end) throw new Error(`Node-RED ${name} did not start:\n${rt.log}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async deploy(flow: unknown[]): Promise<void> {
    const r = await fetch(`${this.base}/flows`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Node-RED-Deployment-Type": "full", "Node-RED-API-Version": "v1" },
      body: JSON.stringify(flow),
    });
    assert.equal(r.status, 204, `deploy on ${this.name}: ${r.status} ${await r.text()}`);
  }

  async accountState(id: string): Promise<{ state: string; reason: string | null }> {
    const r = await fetch(`${this.base}/door-access/accounts/${id}/state`);
    return (await r.json()) as never;
  }

  async unlock(
    deviceId: number,
  ): Promise<{ outcome: string; status: number | null; deviceId: number; message?: string }> {
    const r = await fetch(`${this.base}/unlock`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ deviceId }),
    });
    assert.equal(r.status, 200, `POST /unlock on ${this.name}`);
    return (await r.json()) as never;
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => proc.kill("SIGKILL"), 5_000);
      proc.once("exit", () => {
        clearTimeout(t);
        resolve();
      });
      proc.kill("SIGTERM");
    });
  }
}

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

  before(async () => {
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
