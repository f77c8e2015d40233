/**
 * The one place the read side (sidebar, tail/export) touches the write side of the audit log:
 * a live "record written" hook and the chain check. Written against the interface the writer
 * (issue 13, part A) provides; when its `verify` lands, `verifyAuditLog` below delegates to it.
 */
import { createHash } from "node:crypto";
import { auditRecordEvents } from "./audit-log.js";
import { linesForward, listLogFiles, parseRecord } from "./reader.js";

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
  /** The first `seq` found (above 1 when rotation deleted older files). */
  firstSeq: number | null;
  records: number;
  /** Plain words: what was checked, or where and why the chain breaks. */
  message: string;
  file?: string;
  line?: number;
}

const ZERO = "0".repeat(64);

/**
 * Checks the `seq`/`prev` chain of a log as CONTRACT.md "Audit log" defines it: `seq` +1 per
 * record across files, `prev` = SHA-256 hex of the previous line's exact bytes (64 zeros for
 * seq 1); a log starting after seq 1 (older files rotated away) is accepted from there.
 * Interim implementation for the sidebar, to be replaced by the writer side's verify.
 */
export async function verifyAuditLog(livePath: string): Promise<ChainReport> {
  const files = await listLogFiles(livePath);
  let prevHash: string | null = null;
  let lastSeq: number | null = null;
  let firstSeq: number | null = null;
  let records = 0;
  for (const file of files) {
    for await (const { line, n, torn } of linesForward(file)) {
      const r = parseRecord(line);
      if (!r) {
        // A blank line, or a torn last line (a crash, or a write in progress): not a record.
        if (line.trim().length === 0 || torn) continue;
        return { ok: false, lastSeq, firstSeq, records, message: `${file} line ${n}: not an audit record`, file, line: n };
      }
      records++;
      const broken = (why: string): ChainReport => ({ ok: false, lastSeq, firstSeq, records, message: `${file} line ${n}: ${why}`, file, line: n });
      if (typeof r.seq !== "number" || typeof r.prev !== "string") {
        if (lastSeq !== null) return broken("record without seq/prev inside the chain");
        continue; // written before the chain existed
      }
      if (lastSeq === null) {
        firstSeq = r.seq;
        if (r.seq === 1 && r.prev !== ZERO) return broken("seq 1 must have prev = 64 zeros");
      } else {
        if (r.seq !== lastSeq + 1) return broken(`seq ${r.seq} follows seq ${lastSeq}`);
        if (r.prev !== prevHash) return broken(`prev does not match the hash of seq ${lastSeq}`);
      }
      lastSeq = r.seq;
      prevHash = createHash("sha256").update(line, "utf8").digest("hex");
    }
  }
  if (lastSeq === null) return { ok: null, lastSeq: null, firstSeq: null, records, message: records ? "no chained records (written before the hash chain)" : "empty log" };
  const from = firstSeq !== null && firstSeq > 1 ? ` (older records rotated away: starts at seq ${firstSeq})` : "";
  return { ok: true, lastSeq, firstSeq, records, message: `chain intact through seq ${lastSeq}${from}` };
}
