/**
 * The audit log, as the rest of the package uses it (docs/audit-log.md): the writer and its
 * parts, one module each, and a tolerant reader of one file for tests (src/audit/reader.ts).
 *
 * - src/audit/record.ts: a record's fields and their caps, and the one parser of a record line.
 * - src/audit/writer.ts: the writer (`AuditLog`): the queue, the batches' write and fsync,
 *   cutting a failed batch off again; src/audit/batch.ts: what one batch takes, and its lines in
 *   the chain; src/audit/writer-api.ts: the writer's options and defaults, its counters, its error.
 * - src/audit/log-file.ts: the live file: open, the name checks, size rotation.
 * - src/audit/registry.ts: one writer per path, shared by accounts (`openAuditLog`).
 */
export type { AuditBase, AuditRecord, ChainFields } from "./record.js";
export { MAX_TEXT } from "./record.js";
export { AuditLog, auditRecordEvents } from "./writer.js";
export {
  type AuditLogOptions,
  type AuditStats,
  AuditWriteFailed,
  DEFAULT_KEEP,
  DEFAULT_MAX_BYTES,
  DEFER_MS,
} from "./writer-api.js";
export { MAX_BATCH, MAX_BATCH_CHARS } from "./batch.js";
export { openAuditLog, sameOptions } from "./registry.js";
export { readAuditFile } from "./reader.js";
