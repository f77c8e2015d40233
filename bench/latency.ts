/**
 * Unlock latency, one message at a time, measured two ways in each repetition:
 *
 * - In blocks: C.seq unlocks of one kind, then C.seq of the next (each kind warm in the caches,
 *   as in a burst): door-unlock, the floor (audit line + fsync + PUT), the PUT alone, the same
 *   durable work by hand (both records), the yardstick (the node's bytes in one write+fsync).
 * - Interleaved: door-unlock, the floor and the Node-RED floor in turn, C.seq rounds (the disk's
 *   and the host's drift falls on every kind alike; each unlock finds the caches as the other
 *   kinds left them, as a single unlock after a pause does). unlockP50Ratio is this figure: run
 *   to run it moves by about ±0.01, the block figure (unlockP50RatioBlock) by ±0.05 to ±0.1 on
 *   the same code on a 2-vCPU VM.
 *
 * Ratios are taken per repetition (both sides measured in the same repetition), then the median.
 * Also counted here: the audit bytes per unlock (bench/audit-disk.ts).
 */
import * as path from "node:path";
import { type Figures, log } from "./args.js";
import { AuditFileGrowth } from "./audit-disk.js";
import type { Rig } from "./runtime.js";
import { interleaved, median, pct, round, sequential } from "./stats.js";

const BLOCK_KINDS = ["node", "floor", "put", "both", "same"] as const;
type BlockKind = (typeof BLOCK_KINDS)[number];

export async function measureLatency(rig: Rig): Promise<Figures> {
  const { C, ops } = rig;
  const blockOps: Record<BlockKind, () => Promise<boolean>> = {
    node: ops.node,
    floor: ops.floor,
    put: ops.put,
    both: ops.both,
    same: ops.same,
  };
  const lat = Object.fromEntries(BLOCK_KINDS.map((k) => [k, { p50: [] as number[], p99: [] as number[] }])) as Record<
    BlockKind,
    { p50: number[]; p99: number[] }
  >;
  const inter = { node: [] as number[], floor: [] as number[], nrfloor: [] as number[] };
  const r50: number[] = [];
  const r99: number[] = [];
  const r50put: number[] = [];
  const r99put: number[] = [];
  const r50both: number[] = [];
  const r50same: number[] = [];
  const ri50: number[] = [];
  const ri99: number[] = [];
  const riNr: number[] = [];
  const growth = new AuditFileGrowth(path.join(rig.userDir, "door-access-audit.jsonl"));

  for (let rep = 0; rep < rig.reps; rep++) {
    await rig.refreshToken();

    // In blocks (the order rotated every repetition).
    const order = BLOCK_KINDS.map((_, i, a) => a[(i + rep) % a.length]);
    const p = {} as Record<BlockKind, { p50: number; p99: number }>;
    for (const v of order) {
      await sequential(C.seqWarm, blockOps[v]);
      const timed = () => sequential(C.seq, blockOps[v]);
      const s = v === "node" ? await growth.around(C.seq, timed) : await timed();
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

    // Interleaved: node, floor and the Node-RED floor in turn.
    const i = await interleaved(
      { node: ops.node, floor: ops.floor, nrfloor: ops.nodeRedFloor },
      C.seqWarm,
      C.seq,
      "latency",
    );
    const q = { node: pct(i.node, 50), floor: pct(i.floor, 50), nrfloor: pct(i.nrfloor, 50) };
    inter.node.push(q.node);
    inter.floor.push(q.floor);
    inter.nrfloor.push(q.nrfloor);
    ri50.push(q.node / q.floor);
    ri99.push(pct(i.node, 99) / pct(i.floor, 99));
    riNr.push(q.nrfloor / q.floor);
    log(
      `latency rep ${rep + 1}: interleaved node p50 ${q.node.toFixed(3)} | floor ${q.floor.toFixed(3)} | Node-RED floor ${q.nrfloor.toFixed(3)} ms; node / floor ${(q.node / q.floor).toFixed(3)}`,
    );
    log(
      `latency rep ${rep + 1}: node p50 ${p.node.p50.toFixed(3)} p99 ${p.node.p99.toFixed(3)} | floor ${p.floor.p50.toFixed(3)} / ${p.floor.p99.toFixed(3)} | raw PUT ${p.put.p50.toFixed(3)} / ${p.put.p99.toFixed(3)} | both records ${p.both.p50.toFixed(3)} / ${p.both.p99.toFixed(3)} | same bytes ${p.same.p50.toFixed(3)} / ${p.same.p99.toFixed(3)} ms`,
    );
  }

  return {
    unlockP50Ms: round(median(lat.node.p50)),
    unlockP99Ms: round(median(lat.node.p99)),
    floorP50Ms: round(median(lat.floor.p50)),
    floorP99Ms: round(median(lat.floor.p99)),
    rawPutP50Ms: round(median(lat.put.p50)),
    rawPutP99Ms: round(median(lat.put.p99)),
    unlockP50Ratio: round(median(ri50)),
    unlockP99Ratio: round(median(ri99)),
    unlockP50MsInterleaved: round(median(inter.node)),
    floorP50MsInterleaved: round(median(inter.floor)),
    nodeRedFloorP50Ms: round(median(inter.nrfloor)),
    nodeRedFloorRatio: round(median(riNr)),
    unlockP50RatioBlock: round(median(r50)),
    unlockP99RatioBlock: round(median(r99)),
    unlockP50RatioNoAudit: round(median(r50put)),
    unlockP99RatioNoAudit: round(median(r99put)),
    bothRecordsP50Ms: round(median(lat.both.p50)),
    bothRecordsP99Ms: round(median(lat.both.p99)),
    unlockP50RatioBothRecords: round(median(r50both)),
    sameBytesP50Ms: round(median(lat.same.p50)),
    unlockP50RatioSameBytes: round(median(r50same)),
    ...growth.figures(rig.raw),
  };
}
