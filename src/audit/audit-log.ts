/**
 * The audit log, as the rest of the package uses it (docs/audit-log.md): the writer and its
 * parts, one module each, and a tolerant reader of one file for tests.
 *
 * - src/audit/record.ts: a record's fields and their caps.
 * - src/audit/writer.ts: the writer (`AuditLog`): the queue, the batches' write and fsync,
 *   cutting a failed batch off again; src/audit/batch.ts: what one batch takes, and its lines in
 *   the chain.
 * - src/audit/log-file.ts: the live file: open, the name checks, size rotation.
 * - src/audit/registry.ts: one writer per path, shared by accounts (`openAuditLog`).
 */
import { promises as fsp } from "node:fs";
import type { AuditRecord } from "./record.js";

export type { AuditBase, AuditRecord, ChainFields } from "./record.js";
export { MAX_TEXT } from "./record.js";
export {
  AuditLog,
  type AuditLogOptions,
  type AuditStats,
  AuditWriteFailed,
  DEFAULT_KEEP,
  DEFAULT_MAX_BYTES,
  DEFER_MS,
  auditRecordEvents,
} from "./writer.js";
export { MAX_BATCH, MAX_BATCH_CHARS } from "./batch.js";
export { openAuditLog, sameOptions } from "./registry.js";

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
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
