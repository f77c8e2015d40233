/**
 * Memory, in a child process (`--expose-gc`) with a fresh runtime: RSS and heap after C.memBase
 * unlock messages and after C.memTotal, 50 in flight, audit log on.
 *
 * The parent runs `bench.js --child memory` (bench.ts dispatches to memoryChild). Diagnostics:
 * BENCH_MEM_TRACE=1 (memory per 10,000 messages); BENCH_HEAPSNAP=<dir> (a heap snapshot at each
 * measurement point).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { type Args, type Counts, type Figures, log, REPO_ROOT } from "./args.js";
import { unlockOnlyFlow } from "./flows.js";
import { accountOf, loadRuntime, unloadRuntime, unlockDriver, waitReady } from "./runtime.js";
import { resetLog } from "./sim-process.js";
import { inFlight, MiB, round } from "./stats.js";

interface MemoryOut {
  base: number;
  total: number;
  failed: number;
  rssBase: number;
  rssTotal: number;
  heapBase: number;
  heapTotal: number;
  auditRecords: number;
  auditFsyncs: number;
}

/** The parent's side: runs the child and turns what it measured into figures. */
export async function measureMemory(simUrl: string, C: Counts): Promise<Figures> {
  log(`memory: ${C.memBase} then ${C.memTotal} unlock messages in a child process`);
  const mem = await runMemoryChild(simUrl, C.memBase, C.memTotal);
  if (mem.failed !== 0) throw new Error(`memory child: ${mem.failed} unlocks failed`);
  return {
    rssGrowthMiB: round(MiB(mem.rssTotal - mem.rssBase), 2),
    heapGrowthMiB: round(MiB(mem.heapTotal - mem.heapBase), 2),
    rssAfterBaseMiB: round(MiB(mem.rssBase), 1),
    rssAfterTotalMiB: round(MiB(mem.rssTotal), 1),
    heapAfterBaseMiB: round(MiB(mem.heapBase), 1),
    heapAfterTotalMiB: round(MiB(mem.heapTotal), 1),
    memoryBaseMessages: mem.base,
    memoryMessages: mem.total,
  };
}

async function runMemoryChild(simUrl: string, base: number, total: number): Promise<MemoryOut> {
  const entry = path.join(__dirname, "bench.js");
  const child = spawn(
    process.execPath,
    ["--expose-gc", entry, "--child", "memory", "--sim", simUrl, "--base", String(base), "--total", String(total)],
    {
      stdio: ["ignore", "pipe", "pipe"],
      cwd: REPO_ROOT,
    },
  );
  process.once("exit", () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
  child.stderr.on("data", (c: Buffer) => (out += c.toString("utf8")));
  const timer = setTimeout(() => child.kill("SIGKILL"), 15 * 60_000);
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  clearTimeout(timer);
  const line = out.split("\n").find((l) => l.startsWith("MEMORY "));
  if (code !== 0 || !line) throw new Error(`memory child failed (exit ${code}):\n${out.slice(-3000)}`);
  return JSON.parse(line.slice("MEMORY ".length)) as MemoryOut;
}

/** The child's side (`--child memory --sim <url> --base N --total N`): prints one MEMORY line. */
export async function memoryChild(args: Args): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("the memory child needs --expose-gc");
  const simUrl = args.sim!;
  const userDir = mkdtempSync(path.join(tmpdir(), "door-bench-mem-"));
  try {
    await loadRuntime(unlockOnlyFlow(simUrl), userDir);
    await waitReady();
    const unlock = unlockDriver("u1", "m").op;
    let failed = 0;
    const op = async () => {
      const ok = await unlock();
      if (!ok) failed++;
      return ok;
    };
    const CHUNK = 10_000;
    let sent = 0;
    const settle = async () => {
      for (let i = 0; i < 4; i++) {
        gc();
        await new Promise((r) => setTimeout(r, 50));
      }
      const m = process.memoryUsage();
      // Diagnostics: BENCH_HEAPSNAP=dir writes a heap snapshot at each measurement point.
      if (process.env.BENCH_HEAPSNAP)
        (await import("node:v8")).writeHeapSnapshot(
          path.join(process.env.BENCH_HEAPSNAP, `bench-${sent}.heapsnapshot`),
        );
      return { rss: m.rss, heap: m.heapUsed };
    };
    const runTo = async (target: number) => {
      while (sent < target) {
        const n = Math.min(CHUNK, target - sent);
        await inFlight(50, n, op);
        sent += n;
        // Keeps the simulator's (bounded) request log small; it is another process anyway.
        await resetLog(simUrl);
        if (process.env.BENCH_MEM_TRACE) {
          const m = process.memoryUsage();
          process.stderr.write(
            `memory after ${sent}: rss ${MiB(m.rss).toFixed(1)} heapUsed ${MiB(m.heapUsed).toFixed(1)} heapTotal ${MiB(m.heapTotal).toFixed(1)} external ${MiB(m.external).toFixed(1)} arrayBuffers ${MiB(m.arrayBuffers).toFixed(1)} MiB\n`,
          );
        }
      }
    };
    await runTo(args.base);
    const a = await settle();
    await runTo(args.total);
    const b = await settle();
    const stats = accountOf().audit.stats();
    await unloadRuntime();
    const result: MemoryOut = {
      base: args.base,
      total: args.total,
      failed,
      rssBase: a.rss,
      rssTotal: b.rss,
      heapBase: a.heap,
      heapTotal: b.heap,
      auditRecords: stats.records,
      auditFsyncs: stats.fsyncs,
    };
    process.stdout.write("MEMORY " + JSON.stringify(result) + "\n");
  } finally {
    rmSync(userDir, { recursive: true, force: true });
  }
}
