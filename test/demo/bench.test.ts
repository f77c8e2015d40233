/**
 * The benchmark (npm run bench, docs/performance.md#unlock-latency and
 * docs/performance.md#footprint) in its quick mode, only to prove it works: it runs to the end
 * by itself in a child process, writes every documented key, and the figures that are counts
 * (read from the simulator's request log) are exact. No absolute time is asserted: the
 * machine is shared and timings are noisy.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { auditSettled } from "../../bench/audit-disk.js";
import { AuditLog } from "../../src/audit/audit-log.js";

const REPO_ROOT = path.resolve(__dirname, "..", "..", "..");
const BENCH = path.join(REPO_ROOT, "dist", "bench", "bench.js");

const NUMBER_KEYS = [
  "unlockP50Ratio",
  "unlockP99Ratio",
  "statusThroughputRatio",
  "callsPerUnlock",
  "handBuiltCallsPerUnlock",
  "loginsPer10k",
  "refreshesUnder1000",
  "rssGrowthMiB",
  "deviceIndex10kMs",
  "nameLookupUs",
  "unlockP50Ms",
  "unlockP99Ms",
  "floorP50Ms",
  "floorP99Ms",
  "rawPutP50Ms",
  "rawPutP99Ms",
  "unlockP50RatioNoAudit",
  "unlockP99RatioNoAudit",
  "unlockThroughput50",
  "floorThroughput50",
  "rawPutThroughput50",
  "fsyncsPerRecord",
  "statusThroughput200",
  "rawStatusThroughput200",
  "handBuiltP50Ms",
  "handBuiltP99Ms",
  "handBuiltThroughput50",
  "heapGrowthMiB",
  "deviceValidate10kMs",
  "statusCpuUs",
  "rawStatusCpuUs",
  "unlockCpuUs",
  "loadMs",
  "loadRssMiB",
  "loadModules",
  "sameBytesP50Ms",
  "unlockP50RatioSameBytes",
  "nodeAuditBytesPerUnlock",
  "sameBytesPerUnlock",
  "floorBytesPerUnlock",
  "unlockP50RatioBlock",
  "unlockP99RatioBlock",
  "unlockP50MsInterleaved",
  "floorP50MsInterleaved",
  "nodeRedFloorP50Ms",
  "nodeRedFloorRatio",
  "rulesPlainP50Ms",
  "rulesNodeP50Ms",
  "rulesExtraP50Us",
  "rulesExtraTrimmedUs",
  "checkNs",
  "weeklyCheckNs",
  "feedMaxLoopDelayMs",
  "calendarFlowMaxLoopDelayMs",
  "platformFlowTotalMs",
  "platformFlowMaxLoopDelayMs",
  "platformFlowPasses",
  "platformFlowBlockedSkipped",
  "platformFlowMaxHoldCpuMs",
  "platformFlowRereadMaxLoopDelayMs",
  "platformFlowRereadMaxHoldCpuMs",
];
const STRING_KEYS = ["node", "nodeRed", "at"];
/** Only when the Home Assistant comparison ran (a full run; quick mode skips it). */
const OPTIONAL_STRING_KEYS = ["haVersion"];
/** Not a figure: our load cost per module (bench/footprint.ts). */
const OBJECT_KEYS = ["loadBreakdown"];

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BENCH, ...args], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (out += c.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe("the benchmark runs by itself, reports every figure, and its counts are exact (docs/performance.md#unlock-latency)", function () {
  this.timeout(240_000);
  let dir: string;
  let results: Record<string, unknown>;
  let output: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "door-bench-test-"));
    const out = path.join(dir, "results.json");
    // --out keeps a real run's bench/results.json untouched.
    const r = await run(["--quick", "--out", out], 200_000);
    output = r.out;
    assert.equal(r.code, 0, `the bench exited with ${r.code}:\n${r.out.slice(-4000)}`);
    results = JSON.parse(readFileSync(out, "utf8")) as Record<string, unknown>;
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("prints the table and writes every key: numbers finite, versions and time as strings", () => {
    assert.match(output, /\| Figure +\| Measured/);
    assert.match(output, /unlockP50Ratio/);
    for (const k of NUMBER_KEYS) {
      assert.equal(typeof results[k], "number", `${k} is a number: ${JSON.stringify(results[k])}`);
      assert.ok(Number.isFinite(results[k]), `${k} is finite: ${String(results[k])}`);
    }
    for (const [k, v] of Object.entries(results)) {
      if (STRING_KEYS.includes(k) || OPTIONAL_STRING_KEYS.includes(k) || OBJECT_KEYS.includes(k)) continue;
      assert.ok(typeof v === "number" && Number.isFinite(v), `${k} is a finite number: ${JSON.stringify(v)}`);
    }
    for (const k of STRING_KEYS) assert.equal(typeof results[k], "string", k);
    assert.match(results.node as string, /^v\d+\.\d+\.\d+/);
    assert.match(results.nodeRed as string, /^\d+\.\d+\.\d+/);
    assert.ok(!Number.isNaN(Date.parse(results.at as string)), "at is an ISO time");
    assert.equal(results.quick, 1);
  });

  it("measures the load footprint per module, and notes that quick mode skips the Home Assistant comparison", () => {
    const b = results.loadBreakdown as Record<string, { when: string; ms: number; rssMiB: number; modules: number }>;
    assert.equal(typeof b, "object");
    const withNodes = Object.entries(b)
      .filter(([, c]) => c.when === "with the nodes")
      .map(([n]) => n);
    assert.deepEqual(withNodes, [
      "zod",
      "undici (Pool + request)",
      "jose (decodeJwt)",
      "our code (dist/src, dist/nodes)",
    ]);
    assert.ok(Object.keys(b).some((n) => n.startsWith("@redis/client") && b[n].when === "when used"));
    for (const [n, c] of Object.entries(b)) {
      for (const f of ["ms", "rssMiB", "modules"] as const)
        assert.ok(Number.isFinite(c[f]), `${n}.${f} is finite: ${c[f]}`);
    }
    assert.ok((results.loadModules as number) > 0, "the node files were loaded in the child");
    assert.equal(results.loadReps, 5, "median of 5 fresh processes");
    assert.equal(results.haLoadMs, undefined, "no Home Assistant figures in quick mode");
    assert.equal(results.haVersion, undefined);
    assert.match(output, /Home Assistant comparison is skipped in quick mode/);
    assert.match(output, /Load footprint \(fresh process, median of 5\)/);
  });

  it("counted figures are exact: 1 call per unlock, 2 for the hand-built flow, 1 login, 1 refresh", () => {
    assert.equal(results.callsPerUnlock, 1);
    assert.equal(results.handBuiltCallsPerUnlock, 2);
    // Quick mode sends fewer than 10,000 messages; the figure is the logins counted while they are sent.
    assert.equal(results.loginsPer10k, 1);
    assert.equal(results.refreshesUnder1000, 1);
    assert.equal(
      results.refreshAccepted,
      results.refreshMessages,
      "every message meeting the expired token is accepted",
    );
    assert.equal(results.loginsUnderExpiry, 0, "an expired token is refreshed, not logged in again");
    assert.equal(results.auditRecordsPerUnlock, 2, "an attempt and a result record per unlock");
    assert.ok((results.fsyncsPerRecord as number) > 0 && (results.fsyncsPerRecord as number) <= 1);
  });

  it("the booking calendar with blocks and placeholders mixed in: every booking one pass and one guest message, every block skipped (docs/passes.md#what-passes-cost)", () => {
    assert.equal(results.platformFlowEvents, 15_000, "10,000 bookings and 5,000 events of blocked time");
    assert.equal(results.platformFlowPasses, 10_000);
    assert.equal(results.platformFlowGuestMessages, 10_000);
    assert.equal(results.platformFlowPlaceholdersNamed, 6_000, "Reserved, Reservation, booked: named for the host");
    assert.equal(results.platformFlowBlockedSkipped, 5_000);
    assert.match(output, /events skipped as blocked/);
  });
});

describe("the benchmark counts audit records only once the writer is idle (docs/performance.md#unlock-latency)", function () {
  it("a closing record still deferred when the counters are read is counted in the section it belongs to", async () => {
    // A defer longer than the settle's poll interval: the closing record is queued but not being
    // written yet, which a busy machine does to the default 20 ms timer.
    const dir = mkdtempSync(path.join(tmpdir(), "door-bench-settle-"));
    const log = new AuditLog(path.join(dir, "audit.jsonl"), { deferMs: 150 });
    try {
      const base = { actor: "bench", deviceId: 101, lockId: null, door: "Front Door", msgid: "m1" };
      await log.attempt(base);
      const closing = log.result({ ...base, outcome: "accepted", status: 200 });
      const settled = await auditSettled(log);
      assert.equal(settled.records, 2, "the attempt and its deferred result");
      await closing;
    } finally {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the benchmark counts a closing record made in the turn after the message went out (docs/performance.md#unlock-latency)", function () {
  it("the writer idle when the last message arrives, its closing record queued a turn later: counted", async () => {
    // An unlock makes its closing record in the turn after its message was sent
    // (src/unlock/closing-record.ts afterDelivery): the counters are read only once that turn has run.
    const dir = mkdtempSync(path.join(tmpdir(), "door-bench-turn-"));
    const log = new AuditLog(path.join(dir, "audit.jsonl"));
    try {
      const base = { actor: "bench", deviceId: 101, lockId: null, door: "Front Door", msgid: "m1" };
      await log.attempt(base);
      while (!log.idle()) await new Promise((r) => setTimeout(r, 5));
      const closing = new Promise<unknown>((resolve) => {
        setImmediate(() => resolve(log.result({ ...base, outcome: "accepted", status: 200 })));
      });
      const settled = await auditSettled(log);
      assert.equal(settled.records, 2, "the attempt and the result queued a turn later");
      await closing;
    } finally {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the benchmark's --only takes the names of its measurements (docs/performance.md#unlock-latency)", function () {
  it("refuses an unknown name before it measures anything, and lists the names it knows", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "door-bench-test-"));
    try {
      const out = path.join(dir, "results.json");
      const r = await run(["--quick", "--only", "latency,stauts", "--out", out], 60_000);
      assert.notEqual(r.code, 0, `the bench ran with a misspelt phase:\n${r.out.slice(-2000)}`);
      assert.match(r.out, /unknown phase stauts/);
      assert.match(r.out, /load,scale,passes,logins,latency,rules,tput,status,handbuilt,refresh,memory/);
      assert.doesNotMatch(r.out, /bench: simulator/, "nothing was started");
      assert.ok(!existsSync(out), "no results file");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
