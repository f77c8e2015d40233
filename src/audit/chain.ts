/**
 * The audit log's tamper-evident chain (docs/audit-log.md#the-chain): every record carries `seq`
 * (1 for the first record of the log, +1 for each record, continuing across rotated files) and
 * `prev` (lowercase hex SHA-256 of the previous record's line: its exact UTF-8 bytes without
 * the newline; 64 zeros for seq 1).
 *
 * Here: the hash, a record's line in the chain as the writer makes it, the position a writer
 * resumes from (the last record of the newest file), and `verify(files)`, the one chain check
 * (the bin's `verify`, the editor's sidebar). Knows nothing of Node-RED.
 */
import { createHash } from "node:crypto";
import { promises as fsp } from "node:fs";
import { linesBackwards, linesForward } from "./reader.js";
import { type AuditRecord, isTornWrite, parseRecord } from "./record.js";

/** `prev` of seq 1. */
export const GENESIS = "0".repeat(64);

/** SHA-256 (lowercase hex) of a line's exact UTF-8 bytes, without its newline. */
export function lineHash(line: string): string {
  return createHash("sha256").update(line, "utf8").digest("hex");
}

/** Where a chain stands: the last record's `seq` (0 = nothing yet) and the hash of its line. */
export interface ChainPosition {
  seq: number;
  hash: string;
}

/** Where a chain stands before its first record. */
export const START: ChainPosition = Object.freeze({ seq: 0, hash: GENESIS });

/** A record's line as the chain after position `at` gives it, and where the chain then stands. */
export interface ChainedLine {
  at: ChainPosition;
  text: string;
  after: ChainPosition;
}

/**
 * The record as a line of the chain after position `at`: its `seq` and `prev` (and `rewound`, when
 * the writer went back before it), and where the chain then stands. The same bytes as
 * JSON.stringify({ ...record, rewound, seq, prev }) (a record never has rewound, seq or prev of
 * its own, and always has a type), without copying the record.
 */
export function chainLine(record: AuditRecord, at: ChainPosition, rewound = 0): ChainedLine {
  const body = JSON.stringify(record);
  const seq = at.seq + 1;
  const text = `${body.slice(0, -1)}${rewound > 0 ? `,"rewound":${rewound}` : ""},"seq":${seq},"prev":${JSON.stringify(at.hash)}}`;
  return { at, text, after: new LazyPosition(seq, text) };
}

/**
 * The chain position after `line`, its hash computed when first read: by the next record's line
 * (made when that record is queued, e.g. an unlock's result after its PUT) rather than on the
 * path of the unlock whose attempt record this is.
 */
class LazyPosition implements ChainPosition {
  private known: string | null = null;
  constructor(
    readonly seq: number,
    private readonly line: string,
  ) {}

  get hash(): string {
    return (this.known ??= lineHash(this.line));
  }
}

/**
 * The chain position at the end of one file: its last record line (blank and foreign lines, and
 * a torn fragment, are skipped). A last record that is whole but lacks its newline (a crash took
 * only the newline) counts, as it does for verify: the writer ends it with the newline and the
 * next record follows it. null when the file is missing or holds no record. A last record
 * without `seq` (written before the chain existed) gives START: the chain begins at seq 1 after it.
 */
export async function positionOfFile(file: string): Promise<ChainPosition | null> {
  for await (const line of linesBackwards(file)) {
    const r = parseRecord(line);
    if (!r) continue;
    if (typeof r.seq !== "number" || !Number.isSafeInteger(r.seq) || r.seq < 1) return { ...START };
    return { seq: r.seq, hash: lineHash(line) };
  }
  return null;
}

/**
 * The position a writer resumes from: the last record of the first file in `newestFirst` that
 * holds one (the live file, else the newest rotated file: after a rotation or a logrotate
 * `copytruncate` the live file may be empty or absent). START when no file holds a record.
 */
export async function resumePosition(newestFirst: string[]): Promise<ChainPosition> {
  for (const f of newestFirst) {
    const p = await positionOfFile(f);
    if (p) return p;
  }
  return { ...START };
}

export interface VerifyBreak {
  file: string;
  /** 1-based line number in `file`. */
  line: number;
  reason: string;
  /** Records missing at this point (a gap in seq: deleted lines, a truncated file, a file removed from the middle). */
  missing?: { fromSeq: number; toSeq: number };
}

export interface VerifyReport {
  /** true: every link holds; false: broken (see `broken`); null: no chained record at all. */
  ok: boolean | null;
  files: string[];
  /** Records read (chained or not) up to the break, or all. */
  records: number;
  /** seq of the first chained record (above 1 when older files were rotated away or truncated). */
  firstSeq: number | null;
  /** seq of the last record that was checked in chain. */
  lastSeq: number | null;
  /** SHA-256 of that record's line. */
  lastHash: string | null;
  /** The oldest file starts after seq 1: older records were rotated away (or truncated off); accepted from there. */
  startsAfterGenesis: boolean;
  broken?: VerifyBreak;
  /** Things that are not a break: lines skipped, records written before the chain. */
  notes: string[];
  /** One sentence. */
  message: string;
}

/** `rewound` as the writer writes it: a count of its goings back, from 1. */
function isRewound(v: unknown): boolean {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 1;
}

/** A record of a file's tail, kept to recognise a fork at the next file's start. */
interface TailRecord {
  prev: string;
  hash: string;
  line: number;
}

/** How far back into the file before it a file's first record may fork (records). */
const FORK_LOOKBACK = 4096;

/**
 * Checks one log: `files` oldest first (rotated `<name>.N` … `<name>.1`, then the live file).
 * Stops at the first broken link and names its file and line. Accepts a log whose oldest record
 * starts after seq 1, and says so. A last line without its newline (a write in progress or torn
 * by a crash) is not a break; a torn write inside a file (the writer starts the next record on
 * a new line after a crash) is not a break either when the chain holds across it, and is noted.
 * Records without seq/prev before the first chained record (a log older than the chain) are
 * noted; after it they break the chain. A file whose first record goes on from one of the last
 * records of the file before it (same seq, same prev) with another line marked `rewound` (a
 * fork at the boundary, as a copytruncate taken while the writer cut off or rewrote a batch
 * leaves it) is noted, not a break; any other repeated seq is.
 */
export async function verify(files: string[]): Promise<VerifyReport> {
  const walk = new ChainWalk(files);
  for (const file of files) {
    let exists = true;
    try {
      const st = await fsp.stat(file);
      if (!st.isFile()) return walk.report({ file, line: 0, reason: "not a regular file" });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      exists = false;
    }
    if (!exists) {
      walk.notes.push(`${file}: missing`);
      continue;
    }
    const broken = await walk.file(file);
    if (broken) return walk.report(broken);
  }
  return walk.report();
}

/** verify's walk along the chain, file by file, line by line: where the chain stands, and what it noted. */
class ChainWalk {
  readonly notes: string[] = [];
  private records = 0;
  private firstSeq: number | null = null;
  private lastSeq: number | null = null;
  private lastHash: string | null = null;
  private last: { file: string; line: number } | null = null;
  private unchained = 0;
  /** The last records of the file before the current one, by seq (a fork at a file boundary). */
  private prevTail: { file: string; records: Map<number, TailRecord> } | null = null;

  constructor(private readonly files: string[]) {}

  /** Checks one file's lines in order; the first break, or null. */
  async file(file: string): Promise<VerifyBreak | null> {
    let tornInside: { n: number } | null = null;
    let recordsInFile = 0;
    const fileTail = new Map<number, TailRecord>();
    for await (const { line, n, torn } of linesForward(file)) {
      if (line.trim().length === 0) continue;
      const r = parseRecord(line);
      if (!r) {
        if (torn) {
          this.notes.push(
            `${file} line ${n}: last line incomplete (a write in progress, or torn by a crash); not checked`,
          );
          continue;
        }
        // A torn write starts like one of ours, or is the first bytes of that start (isTornWrite);
        // anything else, valid JSON that is not our record included, is foreign.
        if (!isTornWrite(line)) return { file, line: n, reason: "not an audit record" };
        tornInside = { n }; // a torn write: the next record must continue the chain across it
        continue;
      }
      this.records++;
      const hash = lineHash(line);
      const seq = r.seq;
      const prev = r.prev;
      if (seq === undefined && prev === undefined) {
        if (this.lastSeq !== null)
          return { file, line: n, reason: `record without seq/prev inside the chain (after seq ${this.lastSeq})` };
        this.unchained++;
        continue;
      }
      if (
        typeof seq !== "number" ||
        !Number.isSafeInteger(seq) ||
        seq < 1 ||
        typeof prev !== "string" ||
        !/^[0-9a-f]{64}$/.test(prev)
      ) {
        return { file, line: n, reason: "seq or prev malformed" };
      }
      const broken = this.link({
        file,
        line: n,
        seq,
        prev,
        hash,
        rewound: r.rewound,
        firstInFile: recordsInFile === 0,
      });
      if (broken) return broken;
      if (tornInside) {
        this.notes.push(`${file} line ${tornInside.n}: a torn write (not a record); the chain holds across it`);
        tornInside = null;
      }
      this.lastSeq = seq;
      this.lastHash = hash;
      this.last = { file, line: n };
      recordsInFile++;
      fileTail.set(seq, { prev, hash, line: n });
      if (fileTail.size > FORK_LOOKBACK) fileTail.delete(fileTail.keys().next().value as number);
    }
    if (recordsInFile > 0) this.prevTail = { file, records: fileTail };
    if (tornInside) this.notes.push(`${file} line ${tornInside.n}: a torn write (not a record) at the end of the file`);
    return null;
  }

  /**
   * Whether a chained record goes on from where the chain stands: seq one more, prev the hash of
   * the record before. The one exception is a fork at a file's first record (see verify).
   */
  private link(at: {
    file: string;
    line: number;
    seq: number;
    prev: string;
    hash: string;
    rewound: unknown;
    firstInFile: boolean;
  }): VerifyBreak | null {
    const { file, line: n, seq, prev, hash } = at;
    if (this.lastSeq === null) {
      this.firstSeq = seq;
      if (this.unchained > 0)
        this.notes.push(`${this.unchained} record(s) before seq ${seq} were written before the hash chain`);
      if (seq === 1 && prev !== GENESIS) return { file, line: n, reason: "seq 1 must have prev = 64 zeros" };
      return null;
    }
    const last = this.last;
    const where = last && last.file === file ? `line ${last.line}` : last ? `${last.file} line ${last.line}` : "";
    // Only at a record the writer marked: the first one it wrote after going back.
    const forkedFrom =
      at.firstInFile && seq <= this.lastSeq && isRewound(at.rewound) ? this.prevTail?.records.get(seq) : undefined;
    if (forkedFrom && this.prevTail && forkedFrom.prev === prev && forkedFrom.hash !== hash) {
      // A file boundary where the new file goes on from a record the file before it holds
      // (same seq, same prev) with another line marked `rewound`: the records from that
      // point on in the older file are a batch the writer cut off after a failed write, or
      // wrote again, while logrotate copied the file (copytruncate). The mark is pinned by the
      // next record's prev; a copy of a line already there (the same line again) is no fork.
      // The chain up to the fork is whole; so is its continuation.
      const range = seq === this.lastSeq ? `seq ${seq}` : `seq ${seq} to ${this.lastSeq}`;
      this.notes.push(
        `${this.prevTail.file} lines ${forkedFrom.line}-${last?.line ?? forkedFrom.line} (${range}): not continued; ${file} goes on from seq ${seq - 1} instead ` +
          "(same seq, same prev): a batch the writer cut off after a failed write, or wrote again, while logrotate copied the file (copytruncate)",
      );
      this.lastSeq = seq - 1;
      this.lastHash = prev;
    }
    if (seq !== this.lastSeq + 1) {
      if (seq > this.lastSeq + 1) {
        const missing = { fromSeq: this.lastSeq + 1, toSeq: seq - 1 };
        const count = missing.toSeq - missing.fromSeq + 1;
        const range = count === 1 ? `seq ${missing.fromSeq}` : `seq ${missing.fromSeq} to ${missing.toSeq}`;
        const why = at.firstInFile
          ? "the file starts after a gap: the end of the file before it was cut off (a copytruncate that lost records, a truncation) or a file is missing"
          : "lines deleted";
        return {
          file,
          line: n,
          reason: `seq ${seq} follows seq ${this.lastSeq} (${where}): ${count} record(s) missing (${range}; ${why})`,
          missing,
        };
      }
      return {
        file,
        line: n,
        reason: `seq ${seq} follows seq ${this.lastSeq} (${where}): records reordered, repeated or inserted`,
      };
    }
    if (prev !== this.lastHash) {
      return {
        file,
        line: n,
        reason: `prev does not match the hash of seq ${this.lastSeq} (${where}): that line or this one was changed`,
      };
    }
    return null;
  }

  /** The report: broken at `broken`, or what was checked. */
  report(broken?: VerifyBreak): VerifyReport {
    const { firstSeq, lastSeq, records } = this;
    const startsAfterGenesis = firstSeq !== null && firstSeq > 1;
    let message: string;
    if (broken) {
      message = `broken at ${broken.file} line ${broken.line}: ${broken.reason}`;
    } else if (lastSeq === null) {
      message = records > 0 ? `no chained records (${records} written before the hash chain)` : "empty log";
    } else {
      message =
        `chain intact through seq ${lastSeq}` +
        (startsAfterGenesis ? ` (older records rotated away: starts at seq ${firstSeq})` : "");
    }
    return {
      ok: broken ? false : lastSeq === null ? null : true,
      files: [...this.files],
      records,
      firstSeq,
      lastSeq,
      lastHash: this.lastHash,
      startsAfterGenesis,
      ...(broken ? { broken } : {}),
      notes: this.notes,
      message,
    };
  }
}
