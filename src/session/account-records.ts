/**
 * Small records an account keeps beside its token pair, in the same store, so that they survive a
 * deploy and a restart: today the wrong PINs and the lockout of each door-unlock node
 * (docs/access-rules.md#what-ends-a-lockout). Every record has an end: it is dropped once that has
 * passed, so a node deleted leaves nothing behind for long.
 *
 * - File store: one file per account beside the session file (`door-access/records-<id>.json`),
 *   written whole and atomically (temp file, fsync, rename), mode 0600. All the account's cores
 *   in this process share one copy in memory and one queue of writes, so a record written by the
 *   node instance a deploy replaces is the one the next instance reads.
 * - Redis store: one key per record (`<prefix><id>:rec:<name>`) with the record's end as its
 *   expiry; each write is awaited.
 *
 * A record holds no secret (times and counts): it is not encrypted. A file that cannot be read is
 * reported and treated as empty, never as a crash.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { writeFileAtomic } from "../util/atomic-file.js";
import { accountStoreId } from "../util/store-id.js";

/** A record's value: plain JSON data. */
export type RecordValue = Record<string, unknown>;

export interface AccountRecords {
  /** Where the records are, for a log line (never a secret). */
  readonly description: string;
  /** The record `name`, or null when there is none (or its end has passed). */
  get(name: string): Promise<RecordValue | null>;
  /** Writes `value` until `expiresAt` (epoch ms); null deletes. Resolves once written. */
  put(name: string, value: RecordValue | null, expiresAt: number): Promise<void>;
}

/** The records file of an account: in the folder of its session file (tokenFileFor). */
export function recordsFileBeside(tokenFile: string, accountKey: string): string {
  return path.join(path.dirname(tokenFile), `records-${accountStoreId(accountKey)}.json`);
}

interface FileEntry {
  value: RecordValue;
  /** Epoch ms. */
  expiresAt: number;
}

/** One records file: its contents in memory, read once, and its queue of writes. */
class RecordsFile implements AccountRecords {
  readonly description: string;
  private entries: Map<string, FileEntry> | null = null;
  private reading: Promise<Map<string, FileEntry>> | null = null;
  /** The write in progress; a change made meanwhile is written by the next one. */
  private writing: Promise<void> = Promise.resolve();
  private version = 0;
  private written = 0;

  constructor(
    private readonly filePath: string,
    private readonly now: () => number,
    private readonly onProblem: (message: string) => void,
  ) {
    this.description = `records file ${filePath}`;
  }

  async get(name: string): Promise<RecordValue | null> {
    const entries = await this.read();
    const e = entries.get(name);
    if (e === undefined) return null;
    if (e.expiresAt <= this.now()) return null;
    return structuredClone(e.value);
  }

  async put(name: string, value: RecordValue | null, expiresAt: number): Promise<void> {
    const entries = await this.read();
    if (value === null || !(expiresAt > this.now())) entries.delete(name);
    else entries.set(name, { value: structuredClone(value), expiresAt });
    const version = ++this.version;
    // One write at a time; each writes the whole map as it is then, so the last one has every change.
    this.writing = this.writing.then(
      () => this.writeIfBehind(version),
      () => this.writeIfBehind(version),
    );
    await this.writing;
  }

  private async writeIfBehind(version: number): Promise<void> {
    if (this.written >= version) return;
    const now = this.now();
    const records: Record<string, FileEntry> = {};
    for (const [k, e] of this.entries!) {
      if (e.expiresAt > now) records[k] = e;
      else this.entries!.delete(k);
    }
    const upTo = this.version;
    await writeFileAtomic(this.filePath, JSON.stringify({ v: 1, records }) + "\n");
    this.written = Math.max(this.written, upTo);
  }

  private read(): Promise<Map<string, FileEntry>> {
    if (this.entries !== null) return Promise.resolve(this.entries);
    this.reading ??= this.readFile().then((m) => (this.entries = m));
    return this.reading;
  }

  private async readFile(): Promise<Map<string, FileEntry>> {
    const entries = new Map<string, FileEntry>();
    let text: string;
    try {
      text = await fs.readFile(this.filePath, "utf8");
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "ENOENT")
        this.onProblem(`cannot read the ${this.description} (${code ?? "error"}); starting without it`);
      return entries;
    }
    try {
      const file = JSON.parse(text) as { v?: unknown; records?: unknown };
      if (file.v !== 1 || typeof file.records !== "object" || file.records === null) throw new Error("unknown format");
      for (const [k, e] of Object.entries(file.records as Record<string, Partial<FileEntry>>)) {
        if (typeof e?.expiresAt === "number" && typeof e.value === "object" && e.value !== null) {
          entries.set(k, { value: e.value, expiresAt: e.expiresAt });
        }
      }
    } catch (e) {
      this.onProblem(`the ${this.description} is unreadable (${(e as Error).message}); starting without it`);
    }
    return entries;
  }
}

/** One RecordsFile per path in this process: every core of the account shares its memory and its writes. */
const files = new Map<string, RecordsFile>();

export function fileRecords(
  filePath: string,
  options: { now?: () => number; onProblem?: (message: string) => void } = {},
): AccountRecords {
  let f = files.get(filePath);
  if (f === undefined) {
    f = new RecordsFile(filePath, options.now ?? Date.now, options.onProblem ?? (() => undefined));
    files.set(filePath, f);
  }
  return f;
}

/** What a Redis store offers the records: a value per name with an expiry. */
export interface RecordCommands {
  readonly description: string;
  getRecord(name: string): Promise<string | null>;
  /** Sets `name` to `value` for `ttlMs`; null deletes. */
  setRecord(name: string, value: string | null, ttlMs: number): Promise<void>;
}

/** The records of an account on its Redis store: one key per record, expiring at the record's end. */
export function redisRecords(redis: RecordCommands, now: () => number = Date.now): AccountRecords {
  return {
    description: redis.description,
    async get(name) {
      const text = await redis.getRecord(name);
      if (text === null) return null;
      try {
        const v = JSON.parse(text) as unknown;
        return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as RecordValue) : null;
      } catch {
        return null;
      }
    },
    async put(name, value, expiresAt) {
      const ttl = Math.ceil(expiresAt - now());
      await redis.setRecord(name, value === null || ttl <= 0 ? null : JSON.stringify(value), ttl);
    },
  };
}

/** Records kept in memory only (a session given a store of its own, as in tests of the session alone). */
export function memoryRecords(now: () => number = Date.now): AccountRecords {
  const m = new Map<string, FileEntry>();
  return {
    description: "memory",
    get(name) {
      const e = m.get(name);
      return Promise.resolve(e && e.expiresAt > now() ? structuredClone(e.value) : null);
    },
    put(name, value, expiresAt) {
      if (value === null || !(expiresAt > now())) m.delete(name);
      else m.set(name, { value: structuredClone(value), expiresAt });
      return Promise.resolve();
    },
  };
}
