/**
 * Shared by the audit log's tests (test/audit/*.test.ts) and the node tests that fail an audit
 * write or verify a log (test/nodes): records, file readers, injected errors, the bin's verify as
 * a call, and FileHandle.prototype, whose methods those tests patch to force a fault at an exact
 * point (no timing); `useAuditDir`, the set-up of a describe whose tests write logs in a folder
 * of their own.
 */
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { auditRecordEvents, type AuditBase, type AuditLog } from "../../src/audit/audit-log.js";
import { verifyCommand } from "../../src/audit/cli.js";

/** An attempt record whose msgid is `m<i>`. */
export const rec = (i: number | string, actor = "alice"): AuditBase => ({
  actor,
  deviceId: 101,
  lockId: null,
  door: "Front Door",
  msgid: `m${i}`,
});
/** A file's content as a JSON string (for assertion messages). */
export const text = (f: string): string =>
  fs.existsSync(f) ? JSON.stringify(fs.readFileSync(f, "utf8")) : "<missing>";
/** A file's non-empty lines; none when it does not exist. */
export const lines = (f: string): string[] =>
  fs.existsSync(f)
    ? fs
        .readFileSync(f, "utf8")
        .split("\n")
        .filter((l) => l.length > 0)
    : [];
/** Writes lines, each ending with a newline. */
export const put = (f: string, ls: string[]): void => fs.writeFileSync(f, ls.join("\n") + "\n");
/** A file's chained records (lines that parse and carry a seq). */
export const parsed = (f: string): { seq: number; msgid: string; rewound?: number; prev: string }[] =>
  lines(f).flatMap((l) => {
    try {
      const r = JSON.parse(l) as { seq: number; msgid: string; rewound?: number; prev: string };
      return typeof r.seq === "number" ? [r] : [];
    } catch {
      return [];
    }
  });
/** Every non-empty line of a file parsed as JSON (a line that is not JSON throws); none when the file does not exist. */
export const jsonLines = (f: string): any[] => lines(f).map((l) => JSON.parse(l));
/** The seq of every line of a file (a line that is not JSON throws). */
export const seqs = (f: string): number[] => jsonLines(f).map((r) => r.seq as number);
/** A file's content as it is (it must exist). */
export const raw = (f: string): string => fs.readFileSync(f, "utf8");
/** The lines of a file (it must exist) that parse as JSON, whatever they hold: a torn fragment or a blank line is left out. */
export function wholeRecords(f: string): { seq: number; msgid: string; type: string }[] {
  const out: { seq: number; msgid: string; type: string }[] = [];
  for (const l of raw(f).split("\n")) {
    try {
      out.push(JSON.parse(l));
    } catch {
      /* a torn fragment or a blank line */
    }
  }
  return out;
}
/** A log's rotated files `<live>.N` … `<live>.1`, oldest first (the live file not included). */
export function rotatedFiles(live: string): string[] {
  const dir = path.dirname(live);
  const base = path.basename(live);
  return fs
    .readdirSync(dir)
    .filter((n) => n.startsWith(`${base}.`) && /^\d+$/.test(n.slice(base.length + 1)))
    .map((n) => Number(n.slice(base.length + 1)))
    .sort((a, b) => b - a)
    .map((i) => `${live}.${i}`);
}

/** `n` attempts `m<from>` … one at a time: one batch each, so a listener acts between any two. */
export async function writeOneByOne(log: AuditLog, from: number, n: number): Promise<void> {
  for (let i = from; i < from + n; i++) await log.attempt(rec(i));
}

/** Calls `act(seq, line)` synchronously for every durable record of `log`, between batches; returns the way to stop. */
export function onDurable(log: AuditLog, act: (seq: number, line: string) => void): () => void {
  const listener = (file: string, line: string) => {
    if (file === log.filePath) act(JSON.parse(line).seq as number, line);
  };
  auditRecordEvents.on("record", listener);
  return () => auditRecordEvents.off("record", listener);
}

export const enospc = (): Error => Object.assign(new Error("injected ENOSPC"), { code: "ENOSPC" });
export const eio = (what: string): Error => Object.assign(new Error(`injected ${what}`), { code: "EIO" });

/** `door-access-audit verify <args>`: exit code and output. */
export async function cliVerify(args: string[]): Promise<{ code: number; out: string }> {
  let out = "";
  const code = await verifyCommand(args, {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      out += t;
    },
  });
  return { code, out };
}

/** The FileHandle methods the tests patch. */
export type P = {
  write: (...a: unknown[]) => Promise<unknown>;
  sync: (...a: unknown[]) => Promise<unknown>;
  truncate: (...a: unknown[]) => Promise<unknown>;
  stat: (...a: unknown[]) => Promise<unknown>;
};

/** FileHandle.prototype (reached through a handle: it is not exported) and its original methods. */
export async function fileHandlePrototype(): Promise<{ proto: P; orig: P }> {
  const t = await fsp.mkdtemp(path.join(os.tmpdir(), "fh-proto-"));
  try {
    const h = await fsp.open(path.join(t, "p"), "w");
    const proto = Object.getPrototypeOf(h) as P;
    await h.close();
    return { proto, orig: { write: proto.write, sync: proto.sync, truncate: proto.truncate, stat: proto.stat } };
  } finally {
    await fsp.rm(t, { recursive: true, force: true });
  }
}

/** What `useAuditDir` hands a describe before each of its tests. */
export interface AuditDir {
  /** A folder of this test's own, removed after it. */
  dir: string;
  /** The live file in it: `<dir>/audit.jsonl` unless named otherwise. */
  live: string;
  /** FileHandle.prototype, whose methods a test may patch; they are put back after each test. */
  proto: P;
  /** Its original methods. */
  orig: P;
}

/**
 * The set-up of a describe whose tests write audit logs in a folder of their own, as mocha hooks
 * of the describe it is called in: before each test a fresh temporary folder, handed to `set`
 * with the live file's path and FileHandle.prototype; after each test the prototype's original
 * methods put back, every writer given to the returned `track` closed, the folder removed.
 */
export function useAuditDir(set: (t: AuditDir) => void, file = "audit.jsonl"): <L extends AuditLog>(log: L) => L {
  const logs: AuditLog[] = [];
  let handle: { proto: P; orig: P };
  let dir = "";
  before(async () => {
    handle = await fileHandlePrototype();
  });
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "door-audit-"));
    set({ dir, live: path.join(dir, file), ...handle });
  });
  afterEach(async () => {
    Object.assign(handle.proto, handle.orig);
    for (const log of logs.splice(0)) await log.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });
  return (log) => {
    logs.push(log);
    return log;
  };
}
