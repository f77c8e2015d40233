/**
 * What the audit log costs on disk, counted while the latency and throughput parts run: the
 * bytes the node appends per unlock (against the floor's and the yardstick's, bench/floors.ts),
 * and the group commit (fsyncs per record, records per unlock) from the writer's own counters.
 */
import { promises as fsp } from "node:fs";
import type { Figures } from "./args.js";
import type { Raw } from "./floors.js";
import { round } from "./stats.js";

export interface AuditStats {
  records: number;
  fsyncs: number;
  writes: number;
  batches: number;
  failedRecords: number;
}

/**
 * The audit log's counters once nothing is waiting to be written (closing records are deferred):
 * asked of the writer, not guessed from counters that stopped moving, which a busy machine's late
 * defer timer fools. A writer still busy after `timeoutMs` fails the run: counters read before it
 * is idle would miss the records still queued, and a figure from them would be wrong.
 */
export async function auditSettled(
  audit: { stats(): AuditStats; idle(): boolean },
  timeoutMs = 60_000,
): Promise<AuditStats> {
  const deadline = Date.now() + timeoutMs;
  const nextTurn = () => new Promise((r) => setImmediate(r));
  // An unlock makes its closing record in the turn after its message went out
  // (src/unlock/closing-record.ts afterDelivery): the last message received, that record may not be
  // queued yet. Idle counts only when it is still idle a turn later.
  for (;;) {
    await nextTurn();
    if (audit.idle()) {
      await nextTurn();
      if (audit.idle()) return audit.stats();
    }
    if (Date.now() > deadline)
      throw new Error(`the audit log still had records to write after ${timeoutMs} ms: no figure is taken from it`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Bytes the node appends to its audit file, over the blocks of unlocks it is shown. */
export class AuditFileGrowth {
  private bytes = 0;
  private unlocks = 0;
  constructor(private readonly file: string) {}

  private async size(): Promise<number | null> {
    return (await fsp.stat(this.file).catch(() => null))?.size ?? null;
  }

  /** Runs a block of `unlocks` node unlocks and counts what the file grew by. */
  async around<T>(unlocks: number, block: () => Promise<T>): Promise<T> {
    const size0 = await this.size();
    const r = await block();
    if (size0 !== null) {
      const size1 = await this.size();
      if (size1 !== null && size1 > size0) {
        this.bytes += size1 - size0;
        this.unlocks += unlocks;
      }
    }
    return r;
  }

  /** Audit bytes per unlock: the node's, the yardstick's and the floor's (null when not measured). */
  figures(raw: Raw): Figures {
    return {
      nodeAuditBytesPerUnlock: this.unlocks > 0 ? round(this.bytes / this.unlocks, 0) : null,
      sameBytesPerUnlock: raw.sameBytes > 0 ? round(raw.sameBytes / (raw.sameCount || 1), 0) : null,
      floorBytesPerUnlock: raw.bytes > 0 ? round(raw.bytes / (raw.floorCount || 1), 0) : null,
    };
  }
}

/** The group commit over sections of node unlocks: fsyncs and records, from the writer's counters. */
export class GroupCommit {
  private fsyncs = 0;
  private records = 0;
  constructor(private readonly audit: { stats(): AuditStats; idle(): boolean }) {}

  /** The counters once the audit log is quiet: taken before every timed section, node or not. */
  settled(): Promise<AuditStats> {
    return auditSettled(this.audit);
  }

  /** Counts the fsyncs and records since `before` (closing records included). */
  async count(before: AuditStats): Promise<void> {
    // Closing records are flushed with the next attempt's fsync or within DEFER_MS.
    const after = await auditSettled(this.audit);
    this.fsyncs += after.fsyncs - before.fsyncs;
    this.records += after.records - before.records;
  }

  figures(accepted: number): Figures {
    return {
      fsyncsPerRecord: round(this.fsyncs / this.records, 4),
      fsyncsPerUnlock: round(this.fsyncs / accepted, 4),
      auditRecordsPerUnlock: round(this.records / accepted, 4),
    };
  }
}
