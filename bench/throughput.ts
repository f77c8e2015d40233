/**
 * Throughput in a closed loop, and the CPU per operation in our process:
 *
 * - unlocks with 50 in flight: door-unlock, the floor, the PUT alone; while the node runs, its
 *   API calls per unlock (steady state, from the simulator's request log) and its audit log's
 *   group commit (bench/audit-disk.ts);
 * - status reads with 200 in flight: door-status against a raw GET + JSON parse.
 *
 * The order of the kinds turns every repetition; each kind has a warm-up that is not counted.
 */
import { DEMO_ACCOUNT } from "../src/simulator/seed.js";
import { type Figures, log } from "./args.js";
import { GroupCommit } from "./audit-disk.js";
import type { Rig } from "./runtime.js";
import { apiCalls, resetLog, simRequests } from "./sim-process.js";
import { inFlight, median, round } from "./stats.js";

export async function measureUnlockThroughput(rig: Rig): Promise<Figures> {
  const { C, ops } = rig;
  const kinds = ["node", "floor", "put"] as const;
  const t: Record<string, number[]> = { node: [], floor: [], put: [] };
  const cpu: Record<string, number[]> = { node: [], floor: [], put: [] };
  const ratio: number[] = [];
  const commit = new GroupCommit(rig.account.audit);
  let calls = 0;
  let accepted = 0;
  for (let rep = 0; rep < rig.reps; rep++) {
    await rig.refreshToken();
    const order = kinds.map((_, i, a) => a[(i + rep) % a.length]);
    const got: Record<string, number> = {};
    for (const v of order) {
      await inFlight(50, C.tputWarm, ops[v]);
      if (v === "node") await resetLog(rig.simUrl);
      const before = await commit.settled();
      const r = await inFlight(50, C.tput, ops[v]);
      if (r.ok !== C.tput) throw new Error(`throughput ${v}: ${C.tput - r.ok} failed`);
      if (v === "node") {
        await commit.count(before);
        calls += apiCalls(await simRequests(rig.simUrl, DEMO_ACCOUNT.id)).length;
        accepted += r.ok;
      }
      got[v] = r.perSec;
      t[v].push(r.perSec);
      cpu[v].push(r.cpuUs);
    }
    ratio.push(got.node / got.put);
    log(
      `unlock throughput rep ${rep + 1} (50 in flight): node ${got.node.toFixed(0)}/s, floor ${got.floor.toFixed(0)}/s, raw PUT ${got.put.toFixed(0)}/s`,
    );
  }
  const { fsyncsPerRecord, fsyncsPerUnlock, auditRecordsPerUnlock } = commit.figures(accepted);
  return {
    unlockThroughput50: round(median(t.node), 1),
    floorThroughput50: round(median(t.floor), 1),
    rawPutThroughput50: round(median(t.put), 1),
    unlockThroughputRatio50: round(median(ratio)),
    unlockCpuUs: round(median(cpu.node), 1),
    floorCpuUs: round(median(cpu.floor), 1),
    rawPutCpuUs: round(median(cpu.put), 1),
    callsPerUnlock: round(calls / accepted, 4),
    fsyncsPerRecord,
    fsyncsPerUnlock,
    auditRecordsPerUnlock,
  };
}

export async function measureStatusThroughput(rig: Rig): Promise<Figures> {
  const { C } = rig;
  const t: Record<string, number[]> = { node: [], raw: [] };
  const cpu: Record<string, number[]> = { node: [], raw: [] };
  const ratio: number[] = [];
  const v = { node: rig.ops.status, raw: rig.ops.rawGet } as const;
  for (let rep = 0; rep < rig.reps; rep++) {
    await rig.refreshToken();
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
  await resetLog(rig.simUrl);
  return {
    statusThroughput200: round(median(t.node), 1),
    rawStatusThroughput200: round(median(t.raw), 1),
    statusThroughputRatio: round(median(ratio)),
    statusCpuUs: round(median(cpu.node), 1),
    rawStatusCpuUs: round(median(cpu.raw), 1),
  };
}
