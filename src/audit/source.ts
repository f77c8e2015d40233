/**
 * The one place the read side (sidebar, tail/export) touches the write side of the audit log:
 * a live "record written" hook and the chain check (src/audit/chain.ts `verify`).
 */
import { auditRecordEvents } from "./writer.js";
import { verify } from "./chain.js";
import { listLogFiles } from "./reader.js";

/** Calls `fn(line)` for each record made durable in the log at `filePath`; returns the unsubscribe. */
export function onAuditRecord(filePath: string, fn: (line: string) => void): () => void {
  const listener = (file: string, line: string) => {
    if (file === filePath) fn(line);
  };
  auditRecordEvents.on("record", listener);
  return () => auditRecordEvents.off("record", listener);
}

/** Calls `fn(filePath)` for each record made durable in any log of this runtime; returns the unsubscribe. */
export function onAnyAuditRecord(fn: (filePath: string) => void): () => void {
  const listener = (file: string) => fn(file);
  auditRecordEvents.on("record", listener);
  return () => auditRecordEvents.off("record", listener);
}

export interface ChainReport {
  /** true: every link holds; false: broken at `file`/`line`; null: the log has no chained records. */
  ok: boolean | null;
  /** The last record's `seq` (null when unchained or empty). */
  lastSeq: number | null;
  /** SHA-256 of the last checked record's line. */
  lastHash: string | null;
  /** The first `seq` found (above 1 when rotation deleted older files). */
  firstSeq: number | null;
  records: number;
  /** Plain words: what was checked, or where and why the chain breaks. */
  message: string;
  file?: string;
  line?: number;
  /** Records missing at the break (a gap in seq). */
  missing?: { fromSeq: number; toSeq: number };
}

/**
 * The chain check of the log whose live file is `livePath` (its rotated files `<name>.N` …
 * `<name>.1` first), as `door-access-audit verify` does it: src/audit/chain.ts.
 */
export async function verifyAuditLog(livePath: string): Promise<ChainReport> {
  const r = await verify(await listLogFiles(livePath));
  return {
    ok: r.ok,
    lastSeq: r.lastSeq,
    lastHash: r.lastHash,
    firstSeq: r.firstSeq,
    records: r.records,
    message: r.message,
    ...(r.broken
      ? { file: r.broken.file, line: r.broken.line, ...(r.broken.missing ? { missing: r.broken.missing } : {}) }
      : {}),
  };
}
