/**
 * The audit log's writer: a write-ahead log in JSON Lines (docs/audit-log.md#records), one JSON
 * object per line, appended with O_APPEND and made durable with fsync before the caller's promise
 * resolves. An `unlock-attempt` record is therefore on disk before the unlock request leaves.
 *
 * The batch (group commit): while one write+fsync is in flight, newly appended records queue up
 * and are written together by the next single write+fsync. Each caller's promise resolves only
 * after the fsync that covers its own line. Lines appear in the order of the calls. A closing
 * record (result, rejected) waits up to DEFER_MS for an attempt record's write to share.
 *
 * The chain (docs/audit-log.md#the-chain, src/audit/chain.ts): the writer gives every record
 * `seq` and `prev` as it builds a batch, so the chain costs a hash per record and no extra I/O; it
 * resumes from the last record on disk when it opens a log.
 *
 * A batch whose write fails part-way is cut off the file again and its callers are told; the
 * chain goes on where it stood. A batch that logrotate split (copytruncate between two of its
 * write calls) or took away (rename, delete) is written again, whole, at the path
 * (docs/audit-log.md#rotation).
 *
 * The file itself (opening, the name checks, size rotation) is src/audit/log-file.ts; one writer
 * per path, shared by accounts, is src/audit/registry.ts; the writer's options, counters and
 * error, src/audit/writer-api.ts.
 *
 * Knows nothing of Node-RED or HTTP. It never adds secrets; it stores what the caller gives (the
 * caller guarantees no token, password or phone number is in it), capped in length
 * (src/audit/record.ts).
 */
import { EventEmitter } from "node:events";
import type { promises as fsp } from "node:fs";
import * as path from "node:path";
import { type ChainedBatch, type Pending, batchLength, chainBatch, linesWithin, positionAfterBytes } from "./batch.js";
import { type ChainPosition, START, chainLine, resumePosition } from "./chain.js";
import { LogFile, type WriteProgress } from "./log-file.js";
import {
  type AuditBase,
  type AuditRecord,
  attemptRecord,
  lockoutEndedRecord,
  rejectedRecord,
  resultRecord,
} from "./record.js";
import {
  type AuditLogOptions,
  type AuditStats,
  AuditWriteFailed,
  DEFAULT_KEEP,
  DEFAULT_MAX_BYTES,
  DEFER_MS,
  checkCount,
} from "./writer-api.js";

/**
 * Every record made durable, as `("record", filePath, line)` with the exact line written (no
 * newline); emitted only while someone listens (the editor's sidebar:
 * nodes/door-access-sidebar/door-access-sidebar.ts).
 * A listener that throws is ignored: it cannot break the writer.
 */
export const auditRecordEvents = new EventEmitter();

/** Thrown inside a batch's write: the batch is written again whole (never leaves the writer). */
const RESTART = new Error("restart the batch");
const NOT_WRITTEN_WHOLE = "the file was truncated while the batch was written, and could not be written again whole";
/** Times in a row a batch is written again because its file was split, emptied or lost its name under it. */
const MAX_AGAIN = 3;

/**
 * How a batch's write ended: durable (its callers are told so), queued again (written again
 * whole, or in a new file at the path), or failed with the number of its first records whose
 * lines stayed in the log all the same.
 */
type BatchOutcome = "durable" | "again" | { err: unknown; inLog: number };

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}

export class AuditLog {
  readonly filePath: string;
  readonly maxBytes: number;
  readonly keep: number;
  private readonly now: () => Date;
  private readonly deferMs: number;
  private readonly file: LogFile;
  /** Where the chain stands; null = not known (read from the files at the next open). */
  private position: ChainPosition | null = null;
  /** Where the chain stands after the last line made (in a batch being written, or queued). A guess: checked when used. */
  private lastLinePos: ChainPosition | null = null;
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
  /** Batches written again in a row in this drain (at most MAX_AGAIN; 0 again once one is durable). */
  private again = 0;
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
  private readonly counters: AuditStats = {
    writes: 0,
    fsyncs: 0,
    records: 0,
    batches: 0,
    failedRecords: 0,
    rotations: 0,
    reopens: 0,
    truncations: 0,
    rotationsBlocked: 0,
  };

  constructor(filePath: string, options: AuditLogOptions = {}) {
    if (typeof filePath !== "string" || filePath.length === 0) {
      throw new TypeError("audit log path must be a non-empty string");
    }
    this.filePath = path.resolve(filePath);
    this.now = options.now ?? (() => new Date());
    this.deferMs = options.deferMs ?? DEFER_MS;
    this.maxBytes = checkCount(options.maxBytes, DEFAULT_MAX_BYTES, "maxBytes");
    this.keep = checkCount(options.keep, DEFAULT_KEEP, "keep");
    const onOpen = () => this.resumeChain();
    this.file = new LogFile(
      this.filePath,
      { maxBytes: this.maxBytes, keep: this.keep, warn: options.warn, onOpen },
      this.counters,
    );
  }

  /**
   * Appends an `unlock-attempt` record; resolves once it is durable on disk. `replay: true`
   * marks the single replay after a 401 (docs/audit-log.md#records).
   */
  attempt(r: AuditBase & { replay?: boolean }): Promise<void> {
    return this.append(attemptRecord(this.timestamp(), r));
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
    return this.append(resultRecord(this.timestamp(), r), false);
  }

  /** Appends an `unlock-rejected` record; resolves once it is durable on disk (not urgent, as result()). */
  rejected(r: AuditBase & { outcome: string; reason: string; message?: string }): Promise<void> {
    return this.append(rejectedRecord(this.timestamp(), r), false);
  }

  /** Appends a `lockout-ended` record (the host ended a lockout); resolves once it is durable on disk. */
  lockoutEnded(r: AuditBase & { ended: string[] }): Promise<void> {
    return this.append(lockoutEndedRecord(this.timestamp(), r));
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
      await this.file.close();
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
    this.file.startAfter(closing);
  }

  private timestamp(): string {
    return this.now().toISOString();
  }

  /** A file was opened at the path: the chain not known yet (the first open) resumes from the last record on disk, the live file's, else the newest rotated file's. */
  private resumeChain(): Promise<void> | undefined {
    if (this.position !== null) return undefined;
    return resumePosition([this.filePath, `${this.filePath}.1`]).then((p) => {
      this.position = p;
    });
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
      const at =
        this.queue.length > 0
          ? (this.queue[this.queue.length - 1].line?.after ?? null)
          : (this.lastLinePos ?? this.position);
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

  /**
   * Writes queued records, one batch per write+fsync, until the queue is empty. Never rejects.
   * A batch's callers are told in the turn that then looks at the queue again, so that a record
   * they append next goes to a new drain (and a closing record waits, as it should).
   */
  private async drain(): Promise<void> {
    this.again = 0;
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
        handle = await this.file.open();
      } catch (err) {
        this.fail(this.queue.splice(0), err, "cannot open");
        continue;
      }
      const batch = this.queue.splice(0, batchLength(this.queue));
      this.counters.batches += 1;
      try {
        // The path must still name the open file: never write to a file that lost its name.
        // Synchronous when it does (the common case): no extra turn on the unlock's path.
        const checked = this.file.ensureNamed(handle);
        handle = checked instanceof Promise ? await checked : checked;
      } catch (err) {
        // The chain stands where this writer knows it does (a failed reopen after logrotate
        // renamed the file must not restart it from files that no longer hold it).
        await this.dropHandle();
        this.fail(batch, err, "cannot open");
        continue;
      }
      const chained = chainBatch(batch, this.position ?? { ...START }, this.rewound);
      this.lastLinePos = this.queue.length > 0 ? this.lastLinePos : chained.end;
      const outcome = await this.writeBatch(handle, batch, chained);
      if (outcome === "durable") this.commit(batch, chained);
      else if (outcome !== "again") this.fail(batch, outcome.err, "cannot write", outcome.inLog);
    }
    // Cleared in the same synchronous turn that saw the queue empty (or held), so a record
    // appended by a caller resuming from this batch always starts a new drain.
    if (this.queue.length === 0) this.flushAll = false;
    this.draining = null;
  }

  /** Writes one batch and makes it durable, or cuts it off again, or queues it to be written again. */
  private async writeBatch(handle: fsp.FileHandle, batch: Pending[], chained: ChainedBatch): Promise<BatchOutcome> {
    // Bytes of this batch written so far: a batch that fails is cut off again, so that records
    // whose callers were told "not written" are not in the log.
    const progress: WriteProgress = { handle, written: 0, lead: 0 };
    let after: { named: boolean; split: boolean };
    try {
      after = await this.writeDurably(chained.lines, progress);
    } catch (err) {
      return this.afterFailedWrite(batch, chained, progress, err);
    }
    if (after.split) return this.afterSplit(progress.handle, batch, chained.start);
    if (!after.named) return this.afterLostName(progress.handle, batch, chained.end);
    return "durable";
  }

  /**
   * Writes a batch's lines at the file's end (rotating first when they would take the live file
   * past maxBytes) and fsyncs them. Throws RESTART when the file was emptied between two write
   * calls. Tells whether the path still names the file, and whether the file was split under the
   * batch (truncated between two of its write calls).
   */
  private async writeDurably(lines: string[], progress: WriteProgress): Promise<{ named: boolean; split: boolean }> {
    const text = lines.join("\n") + "\n";
    if (this.file.isFull(text)) progress.handle = await this.file.rotate(progress.handle);
    // A short write, and the file then found emptied (logrotate's copytruncate took the batch's
    // first bytes; the rest would start the file mid-record): written again, whole, instead.
    if (!(await this.file.write(text, progress))) throw RESTART;
    await progress.handle.sync();
    this.counters.fsyncs += 1;
    // Checked once the records are durable, right before their callers are told so: a file
    // deleted while the fsync ran (logrotate) must not take a record that was answered.
    const now = this.file.namedStat(progress.handle);
    // Truncated in place between two of the batch's write calls (a short write, then
    // logrotate's copytruncate): the copy ends with the batch's first bytes, a torn line, and
    // the file starts with the rest, the middle of a record. Everything it holds is this
    // batch's (one writer per path): it is emptied and the batch written again, whole,
    // continuing the chain from where it stood before the batch.
    const split = now !== undefined && now.size > 0 && now.size < progress.written && now.size < this.file.size;
    return { named: now !== undefined, split };
  }

  /** The write or the fsync failed (or the batch must be written again whole): cut it off again. */
  private async afterFailedWrite(
    batch: Pending[],
    chained: ChainedBatch,
    progress: WriteProgress,
    err: unknown,
  ): Promise<BatchOutcome> {
    if (err === RESTART && ++this.again <= MAX_AGAIN) {
      this.writeAgainWhole(batch, chained.start);
      return "again";
    }
    if (err === RESTART) err = new Error(NOT_WRITTEN_WHOLE);
    const { handle, written, lead } = progress;
    if (written > 0) this.goBack();
    // A partial write may have left a torn line or some of the batch: it is cut off (best
    // effort: if that fails too, the torn line stays and the next record starts on a new line),
    // and the handle dropped so the next attempt re-opens the file, re-checks its last byte and
    // resumes the chain from it.
    const kept = written === 0 ? 0 : await this.file.cutBack(handle, written).catch(() => null);
    // The chain stands where this writer knows it does, whatever the files are named now
    // (logrotate's dateext, compress; never read back from them): before the batch, or after
    // the batch's whole lines among the bytes a copytruncate took during the batch, or, when
    // the cut failed, among all the bytes written (as verify reads them).
    this.position = positionAfterBytes(chained, lead, kept ?? written);
    await this.dropHandle();
    // Those whole lines stay in the log (the chain goes on after them): their callers are told
    // so (AuditWriteFailed.inLog), so that a closing record is not written a second time.
    return { err, inLog: linesWithin(chained.lines, lead, kept ?? written) };
  }

  /** The file was split under the batch (see writeDurably): emptied and the batch written again whole. */
  private async afterSplit(handle: fsp.FileHandle, batch: Pending[], start: ChainPosition): Promise<BatchOutcome> {
    const emptied = await handle.truncate(0).then(
      () => true,
      () => false,
    );
    if (emptied && ++this.again <= MAX_AGAIN) {
      this.writeAgainWhole(batch, start);
      return "again";
    }
    this.goBack();
    // The chain stands where it stood before the batch, whatever the files hold now.
    this.position = start;
    await this.dropHandle();
    return { err: new Error(NOT_WRITTEN_WHOLE), inLog: 0 };
  }

  /**
   * Renamed or deleted by something else between the check before the batch and its write: the
   * batch went to a file that lost its name (and is gone if it was deleted). Written again, as
   * records continuing the chain, in a new file at the path; a caller is answered only once its
   * record is durable there (bounded: a path that keeps losing its file fails).
   */
  private async afterLostName(handle: fsp.FileHandle, batch: Pending[], end: ChainPosition): Promise<BatchOutcome> {
    this.position = end;
    await this.file.forget(handle);
    if (++this.again <= MAX_AGAIN) {
      this.counters.reopens += 1;
      this.queue.unshift(...batch);
      return "again";
    }
    return {
      err: new Error("the file kept losing its name while being written (renamed or deleted by something else)"),
      inLog: 0,
    };
  }

  /** The batch is durable: the chain moves on and its callers are told. */
  private commit(batch: Pending[], chained: ChainedBatch): void {
    this.again = 0;
    this.rewound = 0;
    this.position = chained.end;
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
      for (const line of chained.lines) {
        try {
          auditRecordEvents.emit("record", this.filePath, line);
        } catch {
          /* a listener's problem, not the log's */
        }
      }
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
    this.file.emptied();
    this.position = startPos;
    this.queue.unshift(...batch);
  }

  /** Lets go of the file (the next batch opens it again); the chain position this writer knows stays. */
  private dropHandle(): Promise<void> {
    this.lastLinePos = null;
    return this.file.drop();
  }

  /** Tells a failed batch's callers; the first `inLog` records' lines stayed in the log (a cut that failed, a copy taken meanwhile). */
  private fail(batch: Pending[], err: unknown, what: string, inLog = 0): void {
    this.counters.failedRecords += batch.length;
    batch.forEach((p, i) => {
      p.reject(new AuditWriteFailed(`audit log ${this.filePath}: ${what}: ${describe(err)}`, i < inLog, err));
    });
  }
}
