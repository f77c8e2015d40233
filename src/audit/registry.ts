/**
 * One writer per audit file in a runtime (docs/audit-log.md#records, "One file, one writer"):
 * accounts whose audit files are the same file (the same path, a path through a linked folder, a
 * hard link) append through one writer, one queue, one file descriptor and one chain. After a
 * redeploy, the new writer of a path opens the file only once the old one has written everything
 * it had queued.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { realTarget } from "./paths.js";
import { AuditLog } from "./writer.js";
import { type AuditLogOptions, DEFAULT_KEEP, DEFAULT_MAX_BYTES } from "./writer-api.js";

const shared = new Map<string, AuditLog>();
/** Writers whose last reference was closed and that are still writing what was queued, by path. */
const closingWriters = new Map<string, Promise<void>>();

/**
 * The one writer for a path in this runtime, so that every node appends through the same queue,
 * file descriptor and chain. Keyed by the resolved path with its folder's symbolic links
 * resolved. Reference-counted: every call must be paired with exactly one close(). The rotation
 * options are the first opener's; `sameOptions` tells a later one whether its own differ.
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
 * same file is the same log, whatever path names it. undefined when `p` names no file yet or no
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
