/**
 * Shared by the audit log's tests (test/audit/*.test.ts) and the node tests that fail an audit
 * write or verify a log (test/nodes): records, file readers, injected errors, the bin's verify as
 * a call, and FileHandle.prototype, whose methods those tests patch to force a fault at an exact
 * point (no timing).
 */
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { AuditBase } from "../../src/audit/audit-log.js";
import { verifyCommand } from "../../src/audit/cli.js";

/** An attempt record whose msgid is `m<i>`. */
export const rec = (i: number | string, actor = "alice"): AuditBase => ({ actor, deviceId: 101, lockId: null, door: "Front Door", msgid: `m${i}` });
/** A file's content as a JSON string (for assertion messages). */
export const text = (f: string): string => (fs.existsSync(f) ? JSON.stringify(fs.readFileSync(f, "utf8")) : "<missing>");
/** A file's non-empty lines; none when it does not exist. */
export const lines = (f: string): string[] => (fs.existsSync(f) ? fs.readFileSync(f, "utf8").split("\n").filter((l) => l.length > 0) : []);
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
export const enospc = (): Error => Object.assign(new Error("injected ENOSPC"), { code: "ENOSPC" });
export const eio = (what: string): Error => Object.assign(new Error(`injected ${what}`), { code: "EIO" });

/** `door-access-audit verify <args>`: exit code and output. */
export async function cliVerify(args: string[]): Promise<{ code: number; out: string }> {
  let out = "";
  const code = await verifyCommand(args, { out: (t) => { out += t; }, err: (t) => { out += t; } });
  return { code, out };
}

/** The FileHandle methods the tests patch. */
export type P = { write: (...a: unknown[]) => Promise<unknown>; sync: (...a: unknown[]) => Promise<unknown>; truncate: (...a: unknown[]) => Promise<unknown>; stat: (...a: unknown[]) => Promise<unknown> };

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
