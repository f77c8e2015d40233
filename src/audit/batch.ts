/**
 * A batch of the audit writer (src/audit/writer.ts; docs/audit-log.md#records, "Group commit"):
 * which queued records one write+fsync takes, their lines in the chain (docs/audit-log.md#the-chain),
 * and, when a write fails part-way, how many of its lines are whole in the file and where the
 * chain then stands.
 */
import { type ChainPosition, type ChainedLine, chainLine } from "./chain.js";
import { type AuditRecord, MAX_RECORD_CHARS } from "./record.js";

/**
 * Most records in one write+fsync. Bounds how far back a fork at a file boundary can reach (verify
 * looks back FORK_LOOKBACK records, more than this), and the size of one write.
 */
export const MAX_BATCH = 1024;

/**
 * Most characters in one batch (UTF-8: at most 3 bytes each, so about 3 MiB): what a crash can
 * leave as NUL bytes stays well under the 4 MiB the open check reads (paths.ts).
 */
export const MAX_BATCH_CHARS = 1024 * 1024;

/** A queued record and its caller. */
export interface Pending {
  record: AuditRecord;
  /** An attempt record: its request waits for it, so it is written at once. */
  urgent: boolean;
  resolve: () => void;
  reject: (err: Error) => void;
  /**
   * The record's line, made when it was queued for the chain position it expected then (`at`).
   * Used only if the chain stands exactly there when its batch is written; otherwise the line is
   * made again. It keeps that work off the next unlock's path (a result record rides with the
   * next attempt record's write).
   */
  line?: ChainedLine;
}

/** A batch's lines, in file order, from the chain position `start` to `end`; `afters[i]`: after line i. */
export interface ChainedBatch {
  start: ChainPosition;
  lines: string[];
  afters: ChainPosition[];
  end: ChainPosition;
}

/**
 * How many of the queued records the next batch takes: at most MAX_BATCH records and about
 * MAX_BATCH_CHARS characters (a line made at queueing tells its length; one not made yet counts
 * as a record at its fields' caps).
 */
export function batchLength(queue: Pending[]): number {
  let take = 0;
  let chars = 0;
  while (take < queue.length && take < MAX_BATCH) {
    const c = queue[take].line?.text.length ?? MAX_RECORD_CHARS;
    if (take > 0 && chars + c > MAX_BATCH_CHARS) break;
    chars += c;
    take += 1;
  }
  return take;
}

/**
 * The batch's lines in the chain from `start`: seq and prev given here, in file order (the
 * writer commits them only once durable). A line made when its record was queued is used only if
 * it follows exactly where the chain stands. `rewound` (0: none) marks the first line.
 */
export function chainBatch(batch: Pending[], start: ChainPosition, rewound: number): ChainedBatch {
  let pos = start;
  const lines: string[] = [];
  const afters: ChainPosition[] = [];
  for (const p of batch) {
    const mark = lines.length === 0 ? rewound : 0;
    const made =
      mark === 0 && p.line !== undefined && p.line.at.seq === pos.seq && p.line.at.hash === pos.hash
        ? p.line
        : chainLine(p.record, pos, mark);
    lines.push(made.text);
    afters.push(made.after);
    pos = made.after;
  }
  return { start, lines, afters, end: pos };
}

/**
 * Where the chain stands when only the first `bytes` of a batch stayed in a file: after its lines
 * whose bytes are all there (a whole line lacking only its newline counts, as verify counts it).
 * `lead` is the newline written before the batch's first line, if any.
 */
export function positionAfterBytes(batch: ChainedBatch, lead: number, bytes: number): ChainPosition {
  const n = linesWithin(batch.lines, lead, bytes);
  return n === 0 ? batch.start : batch.afters[n - 1];
}

/** How many of a batch's lines (after `lead` bytes) are whole within its first `bytes` bytes (a last newline may be missing). */
export function linesWithin(lines: string[], lead: number, bytes: number): number {
  let end = lead;
  let n = 0;
  for (const line of lines) {
    end += Buffer.byteLength(line, "utf8");
    if (end > bytes) break;
    n += 1;
    end += 1;
  }
  return n;
}
