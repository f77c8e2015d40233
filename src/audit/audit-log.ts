/**
 * Write-ahead audit log in JSON Lines: one JSON object per line, appended with O_APPEND and
 * made durable with fsync before the caller's promise resolves. An `unlock-attempt` record is
 * therefore on disk before the unlock request leaves.
 *
 * Group commit: while one write+fsync is in flight, newly appended records queue up and are
 * written together by the next single write+fsync. Each caller's promise resolves only after
 * the fsync that covers its own line. Lines appear in the order of the calls.
 *
 * This module knows nothing of Node-RED or HTTP. It never adds secrets; it stores what the
 * caller gives (the caller guarantees no token, password or phone number is in it), capped in
 * length.
 */
import { EventEmitter } from "node:events";
import { promises as fsp } from "node:fs";
import * as path from "node:path";

export interface AuditBase {
  actor: string;
  deviceId: number | null;
  lockId: number | null;
  door: string | null;
  msgid: string | null;
}

export type AuditRecord =
  | ({ type: "unlock-attempt"; ts: string } & AuditBase)
  | ({ type: "unlock-result"; ts: string; outcome: string; status: number | null } & AuditBase)
  | ({ type: "unlock-rejected"; ts: string; outcome: string; reason: string } & AuditBase);

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
}

export interface AuditLogOptions {
  /** Clock for the `ts` field (tests). */
  now?: () => Date;
}

/**
 * Every record made durable, as `("record", filePath, line)` with the exact line written (no
 * newline); emitted only while someone listens (the editor's sidebar: src/plugin/sidebar.ts).
 * A listener that throws is ignored: it cannot break the writer.
 */
export const auditRecordEvents = new EventEmitter();

/** How long a closing record (result, rejected) waits for an attempt record's fsync to share. */
export const DEFER_MS = 20;

/** Longest `actor`, `door` and `reason` kept (characters); longer strings are cut. */
export const MAX_TEXT = 200;
/** Longest `msgid` and `outcome` kept. */
const MAX_SHORT_TEXT = 200;

interface Pending {
  line: string;
  resolve: () => void;
  reject: (err: Error) => void;
}

function cap(value: unknown, max: number): string | null {
  if (value === null || value === undefined) return null;
  let s = typeof value === "string" ? value : String(value);
  if (s.length > max) {
    s = s.slice(0, max);
    // Do not leave half of a surrogate pair at the end.
    const last = s.charCodeAt(s.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) s = s.slice(0, -1);
  }
  return s;
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

export class AuditLog {
  readonly filePath: string;
  private readonly now: () => Date;
  private handle: fsp.FileHandle | null = null;
  private opening: Promise<fsp.FileHandle> | null = null;
  /** The file ends without a newline (torn by a crash): the next write starts with "\n". */
  private needsLeadingNewline = false;
  private queue: Pending[] = [];
  private deferTimer: NodeJS.Timeout | null = null;
  private draining: Promise<void> | null = null;
  private closed = false;
  private closing: Promise<void> | null = null;
  /** References handed out by openAuditLog (1 for an instance made with `new`). */
  private refs = 1;
  /** Set by openAuditLog so the last close() removes the shared instance. */
  private onFinalClose: (() => void) | null = null;
  private readonly counters: AuditStats = { writes: 0, fsyncs: 0, records: 0, batches: 0, failedRecords: 0 };

  constructor(filePath: string, options: AuditLogOptions = {}) {
    if (typeof filePath !== "string" || filePath.length === 0) {
      throw new TypeError("audit log path must be a non-empty string");
    }
    this.filePath = path.resolve(filePath);
    this.now = options.now ?? (() => new Date());
  }

  /** Appends an `unlock-attempt` record; resolves once it is durable on disk. */
  attempt(r: AuditBase): Promise<void> {
    return this.append({ type: "unlock-attempt", ts: this.timestamp(), ...base(r) });
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
    this.onFinalClose?.();
    this.onFinalClose = null;
    this.closing = (async () => {
      this.flushDeferred();
      while (this.draining) await this.draining;
      const opening = this.opening;
      this.opening = null;
      const handle = this.handle ?? (opening ? await opening.catch(() => null) : null);
      this.handle = null;
      if (handle) await handle.close();
    })();
    return this.closing;
  }

  /** @internal used by openAuditLog */
  retain(): void {
    this.refs += 1;
  }

  /** @internal used by openAuditLog */
  setFinalClose(onFinalClose: () => void): void {
    this.onFinalClose = onFinalClose;
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
    const line = JSON.stringify(record) + "\n";
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ line, resolve, reject });
      if (this.draining) return;
      if (urgent) {
        this.flushDeferred();
      } else if (!this.deferTimer) {
        this.deferTimer = setTimeout(() => this.flushDeferred(), DEFER_MS);
      }
    });
  }

  /** Starts writing what is queued now (if nothing is being written already). */
  private flushDeferred(): void {
    if (this.deferTimer) {
      clearTimeout(this.deferTimer);
      this.deferTimer = null;
    }
    if (!this.draining && this.queue.length > 0) this.draining = this.drain();
  }

  /** Writes queued records, one batch per write+fsync, until the queue is empty. Never rejects. */
  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      let handle: fsp.FileHandle;
      try {
        // Also yields at least once, so records appended in the same tick share the batch.
        handle = await this.open();
      } catch (err) {
        this.fail(this.queue.splice(0), err, "cannot open");
        continue;
      }
      const batch = this.queue.splice(0);
      this.counters.batches += 1;
      try {
        let text = batch.map((p) => p.line).join("");
        if (this.needsLeadingNewline) text = "\n" + text;
        const buf = Buffer.from(text, "utf8");
        let offset = 0;
        while (offset < buf.length) {
          this.counters.writes += 1;
          const { bytesWritten } = await handle.write(buf, offset, buf.length - offset);
          offset += bytesWritten;
        }
        this.needsLeadingNewline = false;
        await handle.sync();
        this.counters.fsyncs += 1;
      } catch (err) {
        // A partial write may have left a torn line: drop the handle so the next attempt
        // re-opens the file and re-checks its last byte.
        this.handle = null;
        await handle.close().catch(() => undefined);
        this.fail(batch, err, "cannot write");
        continue;
      }
      this.counters.records += batch.length;
      for (const p of batch) p.resolve();
      if (auditRecordEvents.listenerCount("record") > 0) {
        for (const p of batch) {
          try { auditRecordEvents.emit("record", this.filePath, p.line.slice(0, -1)); } catch { /* a listener's problem, not the log's */ }
        }
      }
    }
    // Cleared in the same synchronous turn that saw the queue empty, so a record appended by a
    // caller resuming from this batch always starts a new drain.
    this.draining = null;
  }

  private fail(batch: Pending[], err: unknown, what: string): void {
    this.counters.failedRecords += batch.length;
    for (const p of batch) {
      const e = new Error(`audit log ${this.filePath}: ${what}: ${describe(err)}`, { cause: err });
      p.reject(e);
    }
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
    await fsp.mkdir(path.dirname(this.filePath), { recursive: true, mode: 0o700 });
    // "a" = O_WRONLY | O_CREAT | O_APPEND; mode applies when the file is created.
    const handle = await fsp.open(this.filePath, "a", 0o600);
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new Error("not a regular file");
      if ((st.mode & 0o077) !== 0) {
        // An existing file readable by others: tighten it (best effort, e.g. not the owner).
        await handle.chmod(0o600).catch(() => undefined);
      }
      this.needsLeadingNewline = false;
      if (st.size > 0) {
        // The handle is write-only (O_APPEND); read the last byte through a separate handle.
        const reader = await fsp.open(this.filePath, "r");
        try {
          const last = Buffer.alloc(1);
          const { bytesRead } = await reader.read(last, 0, 1, st.size - 1);
          this.needsLeadingNewline = bytesRead === 1 && last[0] !== 0x0a;
        } finally {
          await reader.close();
        }
      }
      return handle;
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }
}

const shared = new Map<string, AuditLog>();

/**
 * The one shared AuditLog for a path (resolved to an absolute path), so that every node of an
 * account appends through the same queue and the same file descriptor. Reference-counted:
 * every call must be paired with exactly one close().
 */
export function openAuditLog(filePath: string): AuditLog {
  const key = path.resolve(filePath);
  const existing = shared.get(key);
  if (existing) {
    existing.retain();
    return existing;
  }
  const log = new AuditLog(key);
  log.setFinalClose(() => {
    if (shared.get(key) === log) shared.delete(key);
  });
  shared.set(key, log);
  return log;
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
