/**
 * The audit log's live file, as one writer (src/audit/writer.ts) holds it: opening it, checking
 * that the configured path still names it, writing a batch's bytes at its end, and size rotation.
 *
 * Opening (docs/security.md#files-the-audit-log-may-never-be): O_APPEND and O_NOFOLLOW, and a
 * file that is not one of our logs is never appended to (src/audit/paths.ts). A file that ends
 * in a torn line gets its next record on a new line.
 *
 * The name check (docs/audit-log.md#rotation): before each batch, and again once it is durable,
 * the path's device and inode are compared with the open file's. A file renamed or deleted by
 * something else (logrotate) gets no more records: a new file is opened at the path. A file found
 * shorter than written was truncated in place (copytruncate): writing goes on at its new end.
 *
 * Size rotation (`maxBytes`, `keep`): the live file becomes `<name>.1` (older ones shift, the
 * oldest beyond `keep` is deleted); no file that is not ours is renamed or deleted.
 *
 * The chain is not kept here: the writer is told each time a file is opened (`onOpen`), and
 * resumes its chain position from the files when it does not know it.
 */
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { OPEN_FLAGS, isOurAuditFileSync, judgeOpenFileSync } from "./paths.js";

/** The counters of AuditStats (src/audit/writer-api.ts) that the file's own work moves. */
export interface FileCounters {
  writes: number;
  rotations: number;
  reopens: number;
  truncations: number;
  rotationsBlocked: number;
}

export interface LogFileOptions {
  /** Rotate before a batch that would make the live file larger than this (bytes; 0 = never). */
  maxBytes: number;
  /** Rotated files kept (`<name>.1` … `<name>.<keep>`). */
  keep: number;
  /** Told (once per cause) when a size rotation cannot be done without touching a file that is not ours. */
  warn?: (message: string) => void;
  /**
   * Called each time a file is opened at the path, once its checks passed: the writer resumes its
   * chain from the files when it does not know where it stands (a promise then, else nothing).
   */
  onOpen: () => Promise<void> | void;
}

/** A file's device and inode, as BigInt, and as plain numbers when they are safe integers. */
interface FileIdentity {
  dev: bigint;
  ino: bigint;
  exact: { dev: number; ino: number } | null;
}

/** What a batch's write has done so far: read by the writer when the write fails part-way. */
export interface WriteProgress {
  /** The handle written to (a size rotation replaces it). */
  handle: fsp.FileHandle;
  /** Bytes of the batch written (a batch that fails is cut off again: LogFile.cutBack). */
  written: number;
  /** 1 when a newline was written before the batch's first line (the file ended in a torn line). */
  lead: number;
}

export class LogFile {
  /** Size of the open file as this writer last saw or wrote it (a smaller one was truncated). */
  size = 0;
  /** The file ends without a newline (torn by a crash): the next write starts with "\n". */
  private needsLeadingNewline = false;
  private handle: fsp.FileHandle | null = null;
  private opening: Promise<fsp.FileHandle> | null = null;
  /** Device and inode of each file this writer opened, taken from the open descriptor. */
  private readonly identity = new WeakMap<fsp.FileHandle, FileIdentity>();
  /** The file that is not ours and stopped the last size rotation (warned once), or null. */
  private blockedBy: string | null = null;
  /** The previous writer of this path, still finishing its close: nothing is opened before it is done. */
  private predecessor: Promise<void> | null = null;

  constructor(
    readonly filePath: string,
    private readonly options: LogFileOptions,
    private readonly counters: FileCounters,
  ) {}

  /** The open file, opened first if need be (one open at a time). */
  open(): Promise<fsp.FileHandle> {
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

  /** The last writer of this path is still closing: open only after it (src/audit/registry.ts). */
  startAfter(closing: Promise<void>): void {
    this.predecessor = closing;
  }

  /** Closes the file for good (the writer has written everything). */
  async close(): Promise<void> {
    const opening = this.opening;
    this.opening = null;
    const handle = this.handle ?? (opening ? await opening.catch(() => null) : null);
    this.handle = null;
    if (handle) await handle.close();
  }

  /** Lets go of the open file: the next open() opens the path again and re-checks it. */
  async drop(): Promise<void> {
    const h = this.handle;
    this.handle = null;
    await h?.close().catch(() => undefined);
  }

  /** Lets go of `handle`, a file that lost its name while it was written. */
  async forget(handle: fsp.FileHandle): Promise<void> {
    this.handle = null;
    await handle.close().catch(() => undefined);
  }

  /**
   * The configured path still names the open file (same device and inode)? If it was renamed or
   * deleted (logrotate), a new file is opened at the path. A file found shorter than written was
   * truncated in place (copytruncate): writing goes on at its new end (O_APPEND); its last byte is
   * checked again. Synchronous when the path names the file (the common case): no extra turn on
   * the unlock's path.
   */
  ensureNamed(handle: fsp.FileHandle): fsp.FileHandle | Promise<fsp.FileHandle> {
    // The path's stat is the open file's stat when it names it: its size tells truncation apart.
    const named = this.namedStat(handle);
    if (!named) return this.reopen(handle);
    const size = Number(named.size);
    if (size < this.size) return this.truncated(handle, size);
    this.size = size;
    return handle;
  }

  /**
   * The configured path still names this open file: one `lstat` of the path compared with the
   * device and inode the file had when it was opened (a file's identity never changes while it
   * is open, so no `fstat` is needed). Synchronous: microseconds, where a round trip through
   * libuv's thread pool would add a noticeable share to every unlock (bench: unlockP50Ratio).
   * Returns the path's stat when it names the file, else undefined.
   */
  namedStat(handle: fsp.FileHandle): { size: number } | undefined {
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
      return named !== undefined && named.dev === own.dev && named.ino === own.ino
        ? { size: Number(named.size) }
        : undefined;
    } catch {
      return undefined; // cannot tell: treated as lost (the path is opened again, its checks decide)
    }
  }

  /** Writing `text` would take the live file past `maxBytes`: rotate first. */
  isFull(text: string): boolean {
    return (
      this.options.maxBytes > 0 && this.size > 0 && this.size + Buffer.byteLength(text, "utf8") > this.options.maxBytes
    );
  }

  /**
   * Writes a batch's `text` at the file's end (after a newline when the file ends in a torn line),
   * in as many write calls as the kernel needs; `progress` tells how far it got. false when the
   * file was found emptied after a short write (logrotate's copytruncate took the batch's first
   * bytes; the rest would start the file mid-record): the batch must be written again, whole.
   */
  async write(text: string, progress: WriteProgress): Promise<boolean> {
    if (this.needsLeadingNewline) {
      text = "\n" + text;
      progress.lead = 1;
    }
    const buf = Buffer.from(text, "utf8");
    let offset = 0;
    while (offset < buf.length) {
      this.counters.writes += 1;
      const { bytesWritten } = await progress.handle.write(buf, offset, buf.length - offset);
      offset += bytesWritten;
      progress.written = offset;
      this.size += bytesWritten;
      if (offset < buf.length) {
        const now = this.namedStat(progress.handle);
        if (now !== undefined && now.size === 0) return false;
      }
    }
    this.needsLeadingNewline = false;
    return true;
  }

  /**
   * Cuts a failed batch's `written` bytes off the end of the file again; true once done. They are
   * its last bytes (O_APPEND) wherever the file's end was: measured now, not taken from
   * `this.size`, so that a file truncated meanwhile by something else (copytruncate) is not
   * extended with zero bytes. A file now shorter than that was truncated during the batch: all it
   * holds came after, from this batch, and it is emptied. Returns how many of the batch's first
   * bytes stayed out of reach (in the copy a copytruncate took; 0 when the cut took them all).
   */
  async cutBack(handle: fsp.FileHandle, written: number): Promise<number> {
    const { size } = await handle.stat();
    await handle.truncate(Math.max(0, size - written));
    return Math.max(0, written - size);
  }

  /** The file was emptied (by a copytruncate, or by this writer): a batch is written again from its start. */
  emptied(): void {
    this.counters.truncations += 1;
    this.size = 0;
    this.needsLeadingNewline = false;
  }

  /** The path no longer names the open file: a new file is opened there (the chain goes on in it). */
  private async reopen(handle: fsp.FileHandle): Promise<fsp.FileHandle> {
    this.counters.reopens += 1;
    this.handle = null;
    await handle.close().catch(() => undefined);
    return this.open();
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
  async rotate(handle: fsp.FileHandle): Promise<fsp.FileHandle> {
    const keep = this.options.keep;
    const present = await this.numberedFiles();
    const nth = (i: number) => `${this.filePath}.${i}`;
    // The files in the live file's way: <name>.1, .2, … up to the first free number (or `keep`,
    // which is deleted rather than shifted). One that is not ours stops the rotation.
    const run: number[] = [];
    if (keep > 0) {
      for (let i = 1; present.has(i); i++) {
        if (!isOurAuditFileSync(nth(i))) return this.rotationBlocked(handle, nth(i));
        run.push(i);
        if (i >= keep) break;
      }
    }
    this.blockedBy = null;
    this.handle = null;
    await handle.close();
    // Ours beyond `keep` outside that run (left by a larger `keep` before) go too; others stay.
    for (const i of [...present].filter((i) => i >= keep && !run.includes(i)).sort((a, b) => b - a)) {
      if (isOurAuditFileSync(nth(i))) await fsp.rm(nth(i), { force: true });
    }
    for (const i of run.reverse()) {
      if (i >= keep) await fsp.rm(nth(i), { force: true });
      else await fsp.rename(nth(i), nth(i + 1));
    }
    if (keep > 0) await fsp.rename(this.filePath, nth(1));
    else await fsp.rm(this.filePath, { force: true });
    await syncDir(path.dirname(this.filePath));
    this.counters.rotations += 1;
    return this.open();
  }

  /** The numbers N of the `<name>.N` in the live file's folder. */
  private async numberedFiles(): Promise<Set<number>> {
    const name = path.basename(this.filePath);
    const numbered = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\.([1-9][0-9]{0,5})$`);
    return new Set(
      (await fsp.readdir(path.dirname(this.filePath)))
        .map((n) => numbered.exec(n))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => Number(m[1])),
    );
  }

  /** A file that is not ours stands in the rotation's way: the live file grows on; `warn` is told once for that file. */
  private rotationBlocked(handle: fsp.FileHandle, inTheWay: string): fsp.FileHandle {
    this.counters.rotationsBlocked += 1;
    if (this.blockedBy !== inTheWay) {
      this.blockedBy = inTheWay;
      this.options.warn?.(
        `audit log ${this.filePath}: not rotated: ${inTheWay} is not one of its audit logs (rotation never renames or deletes another program's file); the live file grows past its size limit until that file is moved away`,
      );
    }
    return handle;
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
      if ((err as NodeJS.ErrnoException).code === "ELOOP")
        throw new Error("it is a symbolic link (the audit log is never written through a link)", { cause: err });
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
      const resuming = this.options.onOpen();
      if (resuming) await resuming;
      const exact =
        Number.isSafeInteger(Number(big.dev)) && Number.isSafeInteger(Number(big.ino))
          ? { dev: Number(big.dev), ino: Number(big.ino) }
          : null;
      this.identity.set(handle, { dev: big.dev, ino: big.ino, exact });
      return handle;
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }
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
