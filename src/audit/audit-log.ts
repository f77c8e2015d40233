/**
 * Write-ahead audit log in JSON Lines: one JSON object per line, appended with O_APPEND and
 * made durable with fsync before the caller's promise resolves. An `unlock-attempt` record is
 * therefore on disk before the unlock request leaves.
 *
 * Group commit: while one write+fsync is in flight, newly appended records queue up and are
 * written together by the next single write+fsync. Each caller's promise resolves only after
 * the fsync that covers its own line. Lines appear in the order of the calls.
 *
 * The chain (CONTRACT.md "Audit log", src/audit/chain.ts): the writer gives every record `seq`
 * and `prev` as it builds a batch, so the chain costs a hash per record and no extra I/O; it
 * resumes from the last record on disk when it opens a log.
 *
 * Before each batch it checks that the configured path still names the open file (dev/ino of
 * the handle against the path): a file renamed or deleted by something else (logrotate) gets
 * no more records; a new file is opened at the path and the chain continues there. Its own size
 * rotation (`maxBytes`, `keep`) renames the live file to `<name>.1` (older ones shift, the
 * oldest beyond `keep` is deleted), and renames or deletes no file that is not ours. A file is opened with O_NOFOLLOW and never appended to if it
 * is not one of our logs (src/audit/paths.ts).
 *
 * This module knows nothing of Node-RED or HTTP. It never adds secrets; it stores what the
 * caller gives (the caller guarantees no token, password or phone number is in it), capped in
 * length.
 */
import { clip } from "../util/text.js";
import { EventEmitter } from "node:events";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { type ChainPosition, START, lineHash, resumePosition } from "./chain.js";
import { OPEN_FLAGS, isOurAuditFileSync, judgeOpenFileSync, realTarget } from "./paths.js";

export interface AuditBase {
  actor: string;
  deviceId: number | null;
  lockId: number | null;
  door: string | null;
  msgid: string | null;
}

/** The chain fields every written record carries (CONTRACT.md "Audit log"). */
export interface ChainFields {
  seq?: number;
  prev?: string;
}

export type AuditRecord =
  | ({ type: "unlock-attempt"; ts: string; replay?: true } & AuditBase & ChainFields)
  | ({ type: "unlock-result"; ts: string; outcome: string; status: number | null } & AuditBase & ChainFields)
  | ({ type: "unlock-rejected"; ts: string; outcome: string; reason: string } & AuditBase & ChainFields);

export interface AuditStats {
  /** write() system calls issued (a batch may need more than one if the kernel writes partially). */
  writes: number;
  /** fsync calls that completed successfully. */
  fsyncs: number;
  /** records made durable. */
  records: number;
  /** batches attempted (one write+fsync each). */
  batches: number;
  /** records whose batch failed. */
  failedRecords: number;
  /** size rotations done by this writer. */
  rotations: number;
  /** new files opened because the path no longer named the open file (renamed or deleted by something else). */
  reopens: number;
  /** times the open file was found shorter than written (truncated by something else, e.g. copytruncate). */
  truncations: number;
  /** size rotations not done because a file that is not ours stood in the way (the live file grew on). */
  rotationsBlocked: number;
}

/** Default `auditMaxBytes`: 10 MiB. */
export const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
/** Default `auditKeep`: rotated files kept. */
export const DEFAULT_KEEP = 10;

export interface AuditLogOptions {
  /** Clock for the `ts` field (tests). */
  now?: () => Date;
  /** Rotate before a batch that would make the live file larger than this (bytes; 0 = never). Default 10 MiB. */
  maxBytes?: number;
  /** Rotated files kept (`<name>.1` … `<name>.<keep>`). Default 10. */
  keep?: number;
  /** How long a closing record waits for an attempt record's write to share (ms). Default DEFER_MS (tests). */
  deferMs?: number;
  /** Told (once per cause) when a size rotation cannot be done without touching a file that is not ours. */
  warn?: (message: string) => void;
}

/**
 * Every record made durable, as `("record", filePath, line)` with the exact line written (no
 * newline); emitted only while someone listens (the editor's sidebar: src/plugin/sidebar.ts).
 * A listener that throws is ignored: it cannot break the writer.
 */
export const auditRecordEvents = new EventEmitter();

/** How long a closing record (result, rejected) waits for an attempt record's fsync to share. */
export const DEFER_MS = 20;

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
/** The longest line a record can make: its text fields at their caps, each character escaped (6). */
const MAX_RECORD_CHARS = 8 * 1024;

/** Thrown inside drain's write loop: the batch is written again whole (never leaves drain). */
const RESTART = new Error("restart the batch");
const NOT_WRITTEN_WHOLE = "the file was truncated while the batch was written, and could not be written again whole";

/** Longest `actor`, `door` and `reason` kept (characters); longer strings are cut. */
export const MAX_TEXT = 200;
/** Longest `msgid` and `outcome` kept. */
const MAX_SHORT_TEXT = 200;

interface Pending {
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

interface ChainedLine {
  at: ChainPosition;
  text: string;
  after: ChainPosition;
}

/** The record as a line of the chain after position `at`: its `seq` and `prev`, and where the chain then stands. */
/** A file's device and inode, as BigInt, and as plain numbers when they are safe integers. */
interface FileIdentity {
  dev: bigint;
  ino: bigint;
  exact: { dev: number; ino: number } | null;
}

function chainLine(record: AuditRecord, at: ChainPosition, rewound = 0): ChainedLine {
  // The same bytes as JSON.stringify({ ...record, rewound, seq, prev }) (a record never has
  // rewound, seq or prev of its own, and always has a type), without copying the record.
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

function cap(value: unknown, max: number): string | null {
  if (value === null || value === undefined) return null;
  // Never half of a surrogate pair at the end (util/text.ts).
  return clip(typeof value === "string" ? value : String(value), max);
}

function intOrNull(value: unknown): number | null {
  return typeof value === "number" && Number.isSafeInteger(value) ? value : null;
}

function base(r: AuditBase): AuditBase {
  return {
    actor: cap(r.actor, MAX_TEXT) ?? "",
    deviceId: intOrNull(r.deviceId),
    lockId: intOrNull(r.lockId),
    door: cap(r.door, MAX_TEXT),
    msgid: cap(r.msgid, MAX_SHORT_TEXT),
  };
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}

/**
 * A record's batch could not be written (or made durable). `inLog`: its line is in the log all the
 * same (the batch could not be cut off again, or a logrotate copy took it meanwhile) and the chain
 * goes on after it: not durable for sure, but a second copy would be a second record.
 */
export class AuditWriteFailed extends Error {
  constructor(message: string, readonly inLog: boolean, cause: unknown) {
    super(message, { cause });
    this.name = "AuditWriteFailed";
  }
}

export class AuditLog {
  readonly filePath: string;
  readonly maxBytes: number;
  readonly keep: number;
  private readonly now: () => Date;
  private readonly deferMs: number;
  private readonly warn: ((message: string) => void) | undefined;
  /** The file that is not ours and stopped the last size rotation (warned once), or null. */
  private blockedBy: string | null = null;
  private handle: fsp.FileHandle | null = null;
  /** Device and inode of each file this writer opened, taken from the open descriptor. */
  private readonly identity = new WeakMap<fsp.FileHandle, FileIdentity>();
  /** Size of the open file as this writer last saw or wrote it (a smaller one was truncated). */
  private size = 0;
  /** Where the chain stands; null = not known (read from the files at the next open). */
  private position: ChainPosition | null = null;
  /** Where the chain stands after the last line made (in a batch being written, or queued). A guess: checked when used. */
  private lastLinePos: ChainPosition | null = null;
  private opening: Promise<fsp.FileHandle> | null = null;
  /** The file ends without a newline (torn by a crash): the next write starts with "\n". */
  private needsLeadingNewline = false;
  /**
   * The chain went back: bytes of a batch were written and then cut off (a failed write), or the
   * batch is being written again (split by a copytruncate). The next durable batch's first record
   * carries `rewound`: the one place verify accepts a file that goes on, with another line, from
   * a record the file before it holds (a copy logrotate took meanwhile). Its value counts this
   * writer's goings back, so a batch written again never repeats a line a copy may hold.
   * 0 when the next batch is no such one.
   */
  private rewound = 0;
  private rewinds = 0;
  private queue: Pending[] = [];
  private deferTimer: NodeJS.Timeout | null = null;
  /** Write every queued record now, closing records too (the defer timer fired, or close()). */
  private flushAll = false;
  private draining: Promise<void> | null = null;
  private closed = false;
  private closing: Promise<void> | null = null;
  /** References handed out by openAuditLog (1 for an instance made with `new`). */
  private refs = 1;
  /** Set by openAuditLog so the last close() removes the shared instance. */
  private onFinalClose: ((closing: Promise<void>) => void) | null = null;
  /** The previous writer of this path, still finishing its close: nothing is opened before it is done. */
  private predecessor: Promise<void> | null = null;
  private readonly counters: AuditStats = { writes: 0, fsyncs: 0, records: 0, batches: 0, failedRecords: 0, rotations: 0, reopens: 0, truncations: 0, rotationsBlocked: 0 };

  constructor(filePath: string, options: AuditLogOptions = {}) {
    if (typeof filePath !== "string" || filePath.length === 0) {
      throw new TypeError("audit log path must be a non-empty string");
    }
    this.filePath = path.resolve(filePath);
    this.now = options.now ?? (() => new Date());
    this.deferMs = options.deferMs ?? DEFER_MS;
    this.maxBytes = checkCount(options.maxBytes, DEFAULT_MAX_BYTES, "maxBytes");
    this.keep = checkCount(options.keep, DEFAULT_KEEP, "keep");
    this.warn = options.warn;
  }

  /**
   * Appends an `unlock-attempt` record; resolves once it is durable on disk. `replay: true`
   * marks the single replay after a 401 (CONTRACT.md "Audit log").
   */
  attempt(r: AuditBase & { replay?: boolean }): Promise<void> {
    // Fields written out rather than spread: this is on the door's path (bench: unlockP50Ratio).
    const record: AuditRecord = {
      type: "unlock-attempt", ts: this.timestamp(),
      actor: cap(r.actor, MAX_TEXT) ?? "", deviceId: intOrNull(r.deviceId), lockId: intOrNull(r.lockId), door: cap(r.door, MAX_TEXT), msgid: cap(r.msgid, MAX_SHORT_TEXT),
    };
    if (r.replay === true) record.replay = true;
    return this.append(record);
  }

  /** Where the chain stands after the last durable record (null before the log was opened). */
  chainPosition(): ChainPosition | null {
    return this.position ? { seq: this.position.seq, hash: this.position.hash } : null;
  }

  /**
   * Appends an `unlock-result` record; resolves once it is durable on disk. Not urgent: it
   * rides with the next attempt record's fsync, or is flushed within DEFER_MS on its own.
   */
  result(r: AuditBase & { outcome: string; status: number | null }): Promise<void> {
    return this.append({
      type: "unlock-result",
      ts: this.timestamp(),
      ...base(r),
      outcome: cap(r.outcome, MAX_SHORT_TEXT) ?? "",
      status: intOrNull(r.status),
    }, false);
  }

  /** Appends an `unlock-rejected` record; resolves once it is durable on disk (not urgent, as result()). */
  rejected(r: AuditBase & { outcome: string; reason: string }): Promise<void> {
    return this.append({
      type: "unlock-rejected",
      ts: this.timestamp(),
      ...base(r),
      outcome: cap(r.outcome, MAX_SHORT_TEXT) ?? "",
      reason: cap(r.reason, MAX_TEXT) ?? "",
    }, false);
  }

  /** Counters showing how records were batched into writes and fsyncs. */
  stats(): AuditStats {
    return { ...this.counters };
  }

  /** Nothing queued (a closing record waiting for its defer counts) and nothing being written. */
  idle(): boolean {
    return this.queue.length === 0 && this.draining === null;
  }

  /**
   * Releases one reference. When the last reference goes (always, for an instance made with
   * `new`), waits for the queued records to be written and closes the file. Calls made after
   * that reject.
   */
  close(): Promise<void> {
    if (this.closed) return this.closing ?? Promise.resolve();
    this.refs -= 1;
    if (this.refs > 0) return Promise.resolve();
    this.closed = true;
    this.closing = (async () => {
      this.flushDeferred();
      while (this.draining) await this.draining;
      const opening = this.opening;
      this.opening = null;
      const handle = this.handle ?? (opening ? await opening.catch(() => null) : null);
      this.handle = null;
      if (handle) await handle.close();
    })();
    this.onFinalClose?.(this.closing);
    this.onFinalClose = null;
    return this.closing;
  }

  /** @internal used by openAuditLog */
  retain(): void {
    this.refs += 1;
  }

  /** @internal used by openAuditLog */
  setFinalClose(onFinalClose: (closing: Promise<void>) => void): void {
    this.onFinalClose = onFinalClose;
  }

  /** @internal used by openAuditLog: the last writer of this path is still closing; open after it. */
  startAfter(closing: Promise<void>): void {
    this.predecessor = closing;
  }

  private timestamp(): string {
    return this.now().toISOString();
  }

  /**
   * Queues a record. An urgent one (an attempt, which must be on disk before its request
   * leaves) starts a write+fsync at once; a closing record waits up to DEFER_MS for one to
   * share, so a stream of unlocks costs one fsync each instead of two. Order is kept: every
   * record goes through the same queue.
   */
  private append(record: AuditRecord, urgent = true): Promise<void> {
    if (this.closed) {
      return Promise.reject(new Error(`audit log ${this.filePath} is closed; record not written`));
    }
    return new Promise<void>((resolve, reject) => {
      const entry: Pending = { record, urgent, resolve, reject };
      const at = this.queue.length > 0 ? (this.queue[this.queue.length - 1].line?.after ?? null) : (this.lastLinePos ?? this.position);
      if (at) {
        entry.line = chainLine(record, at);
        this.lastLinePos = entry.line.after;
        // A record that does not hold up a request (a result, a rejection) pays for its hash now,
        // so that the attempt record queued after it does not.
        if (!urgent) void entry.line.after.hash;
      }
      this.queue.push(entry);
      if (this.draining) return;
      if (urgent) {
        this.flushDeferred(false);
      } else if (!this.deferTimer) {
        this.deferTimer = setTimeout(() => this.flushDeferred(), this.deferMs);
      }
    });
  }

  /**
   * Starts writing what is queued now (if nothing is being written already). `all` (the defer
   * timer, close()): closing records queued while it writes are written too; otherwise (an
   * attempt record) they wait for the next attempt record or the timer.
   */
  private flushDeferred(all = true): void {
    if (this.deferTimer) {
      clearTimeout(this.deferTimer);
      this.deferTimer = null;
    }
    if (all && (this.draining !== null || this.queue.length > 0)) this.flushAll = true;
    if (!this.draining && this.queue.length > 0) this.draining = this.drain();
  }

  /** Writes queued records, one batch per write+fsync, until the queue is empty. Never rejects. */
  private async drain(): Promise<void> {
    let lostName = 0;
    while (this.queue.length > 0) {
      if (!this.flushAll && !this.queue.some((p) => p.urgent)) {
        // Only closing records left, queued while an attempt's batch was written (an unlock's
        // result, made after its message was delivered): they wait, as any closing record does,
        // for the next attempt record's write or DEFER_MS, instead of an fsync of their own now.
        if (!this.deferTimer) this.deferTimer = setTimeout(() => this.flushDeferred(), this.deferMs);
        break;
      }
      let handle: fsp.FileHandle;
      try {
        // Also yields at least once, so records appended in the same tick share the batch.
        handle = await this.open();
      } catch (err) {
        this.fail(this.queue.splice(0), err, "cannot open");
        continue;
      }
      // At most MAX_BATCH records and about MAX_BATCH_CHARS characters (a line made at queueing
      // tells its length; one not made yet counts as a record at its fields' caps).
      let take = 0;
      let chars = 0;
      while (take < this.queue.length && take < MAX_BATCH) {
        const c = this.queue[take].line?.text.length ?? MAX_RECORD_CHARS;
        if (take > 0 && chars + c > MAX_BATCH_CHARS) break;
        chars += c;
        take += 1;
      }
      const batch = this.queue.splice(0, take);
      this.counters.batches += 1;
      let named = false;
      let split = false;
      let restart = false;
      try {
        // The path must still name the open file: never write to a file that lost its name.
        // Synchronous when it does (the common case): no extra turn on the unlock's path.
        const checked = this.ensureNamed(handle);
        handle = checked instanceof Promise ? await checked : checked;
      } catch (err) {
        // The chain stands where this writer knows it does (a failed reopen after logrotate
        // renamed the file must not restart it from files that no longer hold it).
        await this.dropHandle(true);
        this.fail(batch, err, "cannot open");
        continue;
      }
      // The chain: seq and prev given here, in file order; committed only once durable. A line
      // made when its record was queued is used only if it follows exactly where the chain stands.
      let pos = this.position ?? { ...START };
      const startPos = pos;
      const lines: string[] = [];
      const afters: ChainPosition[] = [];
      for (const p of batch) {
        const mark = lines.length === 0 ? this.rewound : 0;
        const made = mark === 0 && p.line !== undefined && p.line.at.seq === pos.seq && p.line.at.hash === pos.hash ? p.line : chainLine(p.record, pos, mark);
        lines.push(made.text);
        afters.push(made.after);
        pos = made.after;
      }
      this.lastLinePos = this.queue.length > 0 ? this.lastLinePos : pos;
      // Bytes of this batch written so far: a batch that fails is cut off again, so that records
      // whose callers were told "not written" are not in the log.
      let written = 0;
      let lead = 0;
      try {
        let text = lines.join("\n") + "\n";
        if (this.maxBytes > 0 && this.size > 0 && this.size + Buffer.byteLength(text, "utf8") > this.maxBytes) {
          handle = await this.rotate(handle);
        }
        if (this.needsLeadingNewline) {
          text = "\n" + text;
          lead = 1;
        }
        const buf = Buffer.from(text, "utf8");
        let offset = 0;
        while (offset < buf.length) {
          this.counters.writes += 1;
          const { bytesWritten } = await handle.write(buf, offset, buf.length - offset);
          offset += bytesWritten;
          written = offset;
          this.size += bytesWritten;
          if (offset < buf.length) {
            // A short write: if the file was truncated in place since (logrotate's copytruncate),
            // the copy took this batch's first bytes; the rest would start the file mid-record.
            // The batch is written again, whole, in the emptied file instead.
            const now = this.namedStat(handle);
            if (now !== undefined && now.size === 0) {
              restart = true;
              break;
            }
          }
        }
        if (restart) throw RESTART;
        this.needsLeadingNewline = false;
        await handle.sync();
        this.counters.fsyncs += 1;
        // Checked once the records are durable, right before their callers are told so: a file
        // deleted while the fsync ran (logrotate) must not take a record that was answered.
        const now = this.namedStat(handle);
        named = now !== undefined;
        // Truncated in place between two of the batch's write calls (a short write, then
        // logrotate's copytruncate): the copy ends with the batch's first bytes, a torn line, and
        // the file starts with the rest, the middle of a record. Everything it holds is this
        // batch's (one writer per path): it is emptied and the batch written again, whole,
        // continuing the chain from where it stood before the batch.
        split = now !== undefined && now.size > 0 && now.size < written && now.size < this.size;
      } catch (err) {
        if (err === RESTART && ++lostName <= 3) {
          this.writeAgainWhole(batch, startPos);
          continue;
        }
        if (err === RESTART) err = new Error(NOT_WRITTEN_WHOLE);
        if (written > 0) this.goBack();
        // A partial write may have left a torn line or some of the batch: it is cut off (best
        // effort: if that fails too, the torn line stays and the next record starts on a new line),
        // and the handle dropped so the next attempt re-opens the file, re-checks its last byte and
        // resumes the chain from it.
        const kept = written === 0 ? 0 : await this.cutBack(handle, written).catch(() => null);
        // The chain stands where this writer knows it does, whatever the files are named now
        // (logrotate's dateext, compress; never read back from them): before the batch, or after
        // the batch's whole lines among the bytes a copytruncate took during the batch, or, when
        // the cut failed, among all the bytes written (as verify reads them).
        this.position = positionAfterBytes(startPos, lines, afters, lead, kept ?? written);
        await this.dropHandle(true);
        // Those whole lines stay in the log (the chain goes on after them): their callers are told
        // so (AuditWriteFailed.inLog), so that a closing record is not written a second time.
        this.fail(batch, err, "cannot write", linesWithin(lines, lead, kept ?? written));
        continue;
      }
      if (split) {
        const emptied = await handle.truncate(0).then(() => true, () => false);
        if (emptied && ++lostName <= 3) {
          this.writeAgainWhole(batch, startPos);
          continue;
        }
        this.goBack();
        // The chain stands where it stood before the batch, whatever the files hold now.
        this.position = startPos;
        await this.dropHandle(true);
        this.fail(batch, new Error(NOT_WRITTEN_WHOLE), "cannot write");
        continue;
      }
      if (!named) {
        // Renamed or deleted by something else between the check above and the write: the batch
        // went to a file that lost its name (and is gone if it was deleted). Written again, as
        // records continuing the chain, in a new file at the path; a caller is answered only once
        // its record is durable there (bounded: a path that keeps losing its file fails).
        this.position = pos;
        this.handle = null;
        await handle.close().catch(() => undefined);
        if (++lostName <= 3) {
          this.counters.reopens += 1;
          this.queue.unshift(...batch);
          continue;
        }
        this.fail(batch, new Error("the file kept losing its name while being written (renamed or deleted by something else)"), "cannot write");
        continue;
      }
      lostName = 0;
      this.rewound = 0;
      this.position = pos;
      this.counters.records += batch.length;
      // Attempt records first: their requests wait for them. The callers of closing records
      // (results, rejections) only end their messages: told in the next turn, once the requests
      // have left.
      let closing: Pending[] | null = null;
      for (const p of batch) {
        if (p.urgent) p.resolve();
        else (closing ??= []).push(p);
      }
      if (closing !== null) {
        const told = closing;
        setImmediate(() => {
          for (const p of told) p.resolve();
        });
      }
      if (auditRecordEvents.listenerCount("record") > 0) {
        for (const line of lines) {
          try { auditRecordEvents.emit("record", this.filePath, line); } catch { /* a listener's problem, not the log's */ }
        }
      }
    }
    // Cleared in the same synchronous turn that saw the queue empty (or held), so a record
    // appended by a caller resuming from this batch always starts a new drain.
    if (this.queue.length === 0) this.flushAll = false;
    this.draining = null;
  }

  /**
   * The configured path still names this open file: one `lstat` of the path compared with the
   * device and inode the file had when it was opened (a file's identity never changes while it
   * is open, so no `fstat` is needed). Synchronous: microseconds, where a round trip through
   * libuv's thread pool would add a noticeable share to every unlock (bench: unlockP50Ratio).
   * Returns the path's stat when it names the file, else undefined.
   */
  private namedStat(handle: fsp.FileHandle): { size: number } | undefined {
    const own = this.identity.get(handle);
    if (!own) return undefined;
    try {
      if (own.exact) {
        // Plain numbers (cheaper than BigInt stats): exact here, as the open file's dev and inode
        // are safe integers; a path's inode beyond 2^53 (rounded) can never equal them.
        const named = fs.lstatSync(this.filePath, { throwIfNoEntry: false });
        return named !== undefined && named.dev === own.exact.dev && named.ino === own.exact.ino ? named : undefined;
      }
      const named = fs.lstatSync(this.filePath, { bigint: true, throwIfNoEntry: false });
      return named !== undefined && named.dev === own.dev && named.ino === own.ino ? { size: Number(named.size) } : undefined;
    } catch {
      return undefined; // cannot tell: treated as lost (the path is opened again, its checks decide)
    }
  }

  /** The chain goes back: the next durable batch's first record is marked with a new count. */
  private goBack(): void {
    this.rewinds += 1;
    this.rewound = this.rewinds;
  }

  /**
   * The file was emptied (by a copytruncate, or by this writer) while `batch` was written: it
   * goes first in the queue again, to be written whole from where the chain stood before it.
   */
  private writeAgainWhole(batch: Pending[], startPos: ChainPosition): void {
    this.goBack();
    this.counters.truncations += 1;
    this.position = startPos;
    this.size = 0;
    this.needsLeadingNewline = false;
    this.queue.unshift(...batch);
  }

  private async dropHandle(keepPosition = false): Promise<void> {
    const h = this.handle;
    this.handle = null;
    if (!keepPosition) this.position = null;
    this.lastLinePos = null;
    await h?.close().catch(() => undefined);
  }

  /**
   * The configured path still names the open file (same device and inode)? If it was renamed or
   * deleted (logrotate), a new file is opened at the path and the chain continues in it. A file
   * found shorter than written was truncated in place (copytruncate): writing goes on at its new
   * end (O_APPEND); its last byte is checked again.
   */
  private ensureNamed(handle: fsp.FileHandle): fsp.FileHandle | Promise<fsp.FileHandle> {
    // The path's stat is the open file's stat when it names it: its size tells truncation apart.
    const named = this.namedStat(handle);
    if (!named) return this.reopen(handle);
    const size = Number(named.size);
    if (size < this.size) return this.truncated(handle, size);
    this.size = size;
    return handle;
  }

  /** The path no longer names the open file: a new file is opened there, the chain goes on in it. */
  private async reopen(handle: fsp.FileHandle): Promise<fsp.FileHandle> {
    this.counters.reopens += 1;
    const keep = this.position;
    this.handle = null;
    await handle.close().catch(() => undefined);
    this.position = keep; // the chain goes on in the new file
    return this.open();
  }

  /**
   * Cuts a failed batch's `written` bytes off the end of the file again; true once done. They are
   * its last bytes (O_APPEND) wherever the file's end was: measured now, not taken from
   * `this.size`, so that a file truncated meanwhile by something else (copytruncate) is not
   * extended with zero bytes. A file now shorter than that was truncated during the batch: all it
   * holds came after, from this batch, and it is emptied. Returns how many of the batch's first
   * bytes stayed out of reach (in the copy a copytruncate took; 0 when the cut took them all).
   */
  private async cutBack(handle: fsp.FileHandle, written: number): Promise<number> {
    const { size } = await handle.stat();
    await handle.truncate(Math.max(0, size - written));
    return Math.max(0, written - size);
  }

  /** Truncated in place (copytruncate): writing goes on at its new end; its last byte is checked again. */
  private async truncated(handle: fsp.FileHandle, size: number): Promise<fsp.FileHandle> {
    this.counters.truncations += 1;
    this.needsLeadingNewline = size > 0 && !(await lastByteIsNewline(handle, size));
    this.size = size;
    return handle;
  }

  /**
   * Size rotation: the live file becomes `<name>.1`, the numbered files in its way shift up by
   * one (`<name>.1`, `<name>.2`, … up to the first free number), the one reaching `keep` and any
   * above it are deleted; a new live file is opened at the path, continuing the chain.
   *
   * Only files that are ours are renamed or deleted (isOurAuditFileSync: a regular file, not a
   * link, that the writer would append to). When a file that is not ours stands in the way (at
   * `<name>.1`, or where the shift would put one of ours), nothing is renamed: writing goes on in
   * the live file, past `maxBytes`, and the rotation is tried again at the next batch that
   * crosses it; `warn` is told once for that file. A file that is not ours above `keep` stays.
   */
  private async rotate(handle: fsp.FileHandle): Promise<fsp.FileHandle> {
    const dir = path.dirname(this.filePath);
    const name = path.basename(this.filePath);
    const numbered = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\.([1-9][0-9]{0,5})$`);
    const present = new Set(
      (await fsp.readdir(dir))
        .map((n) => numbered.exec(n))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => Number(m[1])),
    );
    const nth = (i: number) => `${this.filePath}.${i}`;
    // The files in the live file's way: <name>.1, .2, … up to the first free number (or `keep`,
    // which is deleted rather than shifted). One that is not ours stops the rotation.
    const run: number[] = [];
    if (this.keep > 0) {
      for (let i = 1; present.has(i); i++) {
        if (!isOurAuditFileSync(nth(i))) {
          this.counters.rotationsBlocked += 1;
          if (this.blockedBy !== nth(i)) {
            this.blockedBy = nth(i);
            this.warn?.(`audit log ${this.filePath}: not rotated: ${nth(i)} is not one of its audit logs (rotation never renames or deletes another program's file); the live file grows past its size limit until that file is moved away`);
          }
          return handle;
        }
        run.push(i);
        if (i >= this.keep) break;
      }
    }
    this.blockedBy = null;
    const keepPosition = this.position;
    this.handle = null;
    await handle.close();
    // Ours beyond `keep` outside that run (left by a larger `keep` before) go too; others stay.
    for (const i of [...present].filter((i) => i >= this.keep && !run.includes(i)).sort((a, b) => b - a)) {
      if (isOurAuditFileSync(nth(i))) await fsp.rm(nth(i), { force: true });
    }
    for (const i of run.reverse()) {
      if (i >= this.keep) await fsp.rm(nth(i), { force: true });
      else await fsp.rename(nth(i), nth(i + 1));
    }
    if (this.keep > 0) await fsp.rename(this.filePath, nth(1));
    else await fsp.rm(this.filePath, { force: true });
    await syncDir(dir);
    this.counters.rotations += 1;
    this.position = keepPosition;
    return this.open();
  }

  /** Tells a failed batch's callers; the first `inLog` records' lines stayed in the log (a cut that failed, a copy taken meanwhile). */
  private fail(batch: Pending[], err: unknown, what: string, inLog = 0): void {
    this.counters.failedRecords += batch.length;
    batch.forEach((p, i) => {
      p.reject(new AuditWriteFailed(`audit log ${this.filePath}: ${what}: ${describe(err)}`, i < inLog, err));
    });
  }

  private open(): Promise<fsp.FileHandle> {
    if (this.handle) return Promise.resolve(this.handle);
    if (!this.opening) {
      this.opening = this.doOpen().then(
        (h) => {
          this.handle = h;
          this.opening = null;
          return h;
        },
        (err: unknown) => {
          this.opening = null;
          throw err;
        },
      );
    }
    return this.opening;
  }

  private async doOpen(): Promise<fsp.FileHandle> {
    if (this.predecessor) {
      // A redeploy: the old writer of this path still writes its queued records. Its chain
      // position is read from the file once it is done, so the two never give out one seq twice.
      await this.predecessor.catch(() => undefined);
      this.predecessor = null;
    }
    await fsp.mkdir(path.dirname(this.filePath), { recursive: true, mode: 0o700 });
    // O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW: a symbolic link as the final component fails
    // (ELOOP); mode applies when the file is created.
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(this.filePath, OPEN_FLAGS, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ELOOP") throw new Error("it is a symbolic link (the audit log is never written through a link)", { cause: err });
      throw err;
    }
    try {
      const big = await handle.stat({ bigint: true });
      if (!big.isFile()) throw new Error("not a regular file");
      const st = { size: Number(big.size), mode: Number(big.mode) };
      if (st.size > 0) {
        // Judged as it is now (a copytruncate may have emptied it since the stat): synchronous,
        // once per open (start, rotation, after logrotate), a head window after any blank lines.
        const why = judgeOpenFileSync(handle.fd);
        if (why) throw new Error(why);
      }
      if ((st.mode & 0o077) !== 0) {
        // An existing file readable by others: tighten it (best effort, e.g. not the owner).
        await handle.chmod(0o600).catch(() => undefined);
      }
      this.needsLeadingNewline = st.size > 0 && !(await lastByteIsNewline(handle, st.size));
      this.size = st.size;
      if (this.position === null) {
        // First open (or after a failed write): resume from the last record on disk, the live
        // file's, else the newest rotated file's.
        this.position = await resumePosition([this.filePath, `${this.filePath}.1`]);
      }
      const exact = Number.isSafeInteger(Number(big.dev)) && Number.isSafeInteger(Number(big.ino)) ? { dev: Number(big.dev), ino: Number(big.ino) } : null;
      this.identity.set(handle, { dev: big.dev, ino: big.ino, exact });
      return handle;
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }
}

/**
 * Where the chain stands when only the first `bytes` of a batch stayed in a file: after its lines
 * whose bytes are all there (a whole line lacking only its newline counts, as verify counts it).
 * `lead` is the newline written before the batch's first line, if any.
 */
function positionAfterBytes(start: ChainPosition, lines: string[], afters: ChainPosition[], lead: number, bytes: number): ChainPosition {
  const n = linesWithin(lines, lead, bytes);
  return n === 0 ? start : afters[n - 1];
}

/** How many of a batch's lines (after `lead` bytes) are whole within its first `bytes` bytes (a last newline may be missing). */
function linesWithin(lines: string[], lead: number, bytes: number): number {
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

async function lastByteIsNewline(handle: fsp.FileHandle, size: number): Promise<boolean> {
  const last = Buffer.alloc(1);
  const { bytesRead } = await handle.read(last, 0, 1, size - 1);
  return bytesRead === 1 && last[0] === 0x0a;
}

/** Makes renames in a folder durable (best effort: not every platform can fsync a folder). */
async function syncDir(dir: string): Promise<void> {
  const h = await fsp.open(dir, fs.constants.O_RDONLY).catch(() => null);
  if (!h) return;
  await h.sync().catch(() => undefined);
  await h.close().catch(() => undefined);
}

function checkCount(v: number | undefined, dflt: number, what: string): number {
  if (v === undefined) return dflt;
  if (!Number.isSafeInteger(v) || v < 0) throw new TypeError(`audit log ${what} must be a whole number >= 0`);
  return v;
}

const shared = new Map<string, AuditLog>();
/** Writers whose last reference was closed and that are still writing what was queued, by path. */
const closingWriters = new Map<string, Promise<void>>();

/**
 * The one writer for a path in this runtime (CONTRACT.md "Audit log": accounts whose audit files
 * are the same path write through one writer and one chain), so that every node appends through
 * the same queue, file descriptor and chain. Keyed by the resolved path with its folder's
 * symbolic links resolved. Reference-counted: every call must be paired with exactly one
 * close(). The rotation options are the first opener's; `sameOptions` tells a later one whether
 * its own differ.
 */
export function openAuditLog(filePath: string, options: AuditLogOptions = {}): AuditLog {
  const key = realTarget(path.resolve(filePath));
  const existing = shared.get(key) ?? sameFileWriter(key);
  if (existing) {
    existing.retain();
    return existing;
  }
  const log = new AuditLog(key, options);
  const prior = closingWriters.get(key);
  if (prior) log.startAfter(prior);
  log.setFinalClose((closing) => {
    if (shared.get(key) === log) shared.delete(key);
    closingWriters.set(key, closing);
    const done = () => {
      if (closingWriters.get(key) === closing) closingWriters.delete(key);
    };
    closing.then(done, done);
  });
  shared.set(key, log);
  return log;
}

/**
 * The writer whose live file is the existing file at `p` under another name (a hard link): the
 * same file is the same log, whatever path names it. null when `p` names no file yet or no
 * writer's file.
 */
function sameFileWriter(p: string): AuditLog | undefined {
  const st = fs.lstatSync(p, { bigint: true, throwIfNoEntry: false });
  if (!st || !st.isFile() || st.nlink < 2n) return undefined;
  for (const log of shared.values()) {
    const other = fs.lstatSync(log.filePath, { bigint: true, throwIfNoEntry: false });
    if (other && other.dev === st.dev && other.ino === st.ino) return log;
  }
  return undefined;
}

/** Whether a writer runs with these rotation options (defaults filled in). */
export function sameOptions(log: AuditLog, options: AuditLogOptions): boolean {
  return log.maxBytes === (options.maxBytes ?? DEFAULT_MAX_BYTES) && log.keep === (options.keep ?? DEFAULT_KEEP);
}

const RECORD_TYPES = new Set(["unlock-attempt", "unlock-result", "unlock-rejected"]);

function isRecord(v: unknown): v is AuditRecord {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  return typeof o.type === "string" && RECORD_TYPES.has(o.type) && typeof o.ts === "string";
}

/**
 * Reads an audit file tolerantly. A last line without its newline (torn by a crash) is
 * reported in `tornLastLine` rather than thrown; it is still returned as a record if it
 * happens to be complete JSON. `badLines` lists (1-based) other lines that are not valid
 * records. Blank lines are ignored. A missing file reads as empty.
 */
export async function readAuditFile(
  filePath: string,
): Promise<{ records: AuditRecord[]; tornLastLine: boolean; badLines: number[] }> {
  let text: string;
  try {
    text = await fsp.readFile(filePath, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { records: [], tornLastLine: false, badLines: [] };
    throw new Error(`audit log ${filePath}: cannot read: ${describe(err)}`, { cause: err });
  }
  const lines = text.split("\n");
  // With a trailing newline the last element is "", otherwise it is the torn last line.
  const tail = lines.pop() ?? "";
  const tornLastLine = tail.length > 0;
  const records: AuditRecord[] = [];
  const badLines: number[] = [];
  const take = (line: string, n: number, torn: boolean): void => {
    if (line.trim().length === 0) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      parsed = undefined;
    }
    if (isRecord(parsed)) records.push(parsed);
    else if (!torn) badLines.push(n);
  };
  lines.forEach((line, i) => take(line, i + 1, false));
  if (tornLastLine) take(tail, lines.length + 1, true);
  return { records, tornLastLine, badLines };
}
