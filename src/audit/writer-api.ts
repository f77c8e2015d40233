/**
 * What a caller of the audit writer (src/audit/writer.ts) gives it and gets back besides its
 * records (docs/audit-log.md#records, #rotation): the writer's options, their defaults and their
 * checks, the counters it keeps, and the error a record's promise rejects with when its batch
 * could not be written.
 */

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
  /** size rotations done by this writer. */
  rotations: number;
  /** new files opened because the path no longer named the open file (renamed or deleted by something else). */
  reopens: number;
  /** times the open file was found shorter than written (truncated by something else, e.g. copytruncate). */
  truncations: number;
  /** size rotations not done because a file that is not ours stood in the way (the live file grew on). */
  rotationsBlocked: number;
}

/** Default `auditMaxBytes`: 10 MiB. */
export const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
/** Default `auditKeep`: rotated files kept. */
export const DEFAULT_KEEP = 10;

/** How long a closing record (result, rejected) waits for an attempt record's fsync to share. */
export const DEFER_MS = 20;

export interface AuditLogOptions {
  /** Clock for the `ts` field (tests). */
  now?: () => Date;
  /** Rotate before a batch that would make the live file larger than this (bytes; 0 = never). Default 10 MiB. */
  maxBytes?: number;
  /** Rotated files kept (`<name>.1` … `<name>.<keep>`). Default 10. */
  keep?: number;
  /** How long a closing record waits for an attempt record's write to share (ms). Default DEFER_MS (tests). */
  deferMs?: number;
  /** Told (once per cause) when a size rotation cannot be done without touching a file that is not ours. */
  warn?: (message: string) => void;
}

/** An option that must be a whole number >= 0, or its default when not given. */
export function checkCount(v: number | undefined, dflt: number, what: string): number {
  if (v === undefined) return dflt;
  if (!Number.isSafeInteger(v) || v < 0) throw new TypeError(`audit log ${what} must be a whole number >= 0`);
  return v;
}

/**
 * A record's batch could not be written (or made durable). `inLog`: its line is in the log all the
 * same (the batch could not be cut off again, or a logrotate copy took it meanwhile) and the chain
 * goes on after it: not durable for sure, but a second copy would be a second record.
 */
export class AuditWriteFailed extends Error {
  constructor(
    message: string,
    readonly inLog: boolean,
    cause: unknown,
  ) {
    super(message, { cause });
    this.name = "AuditWriteFailed";
  }
}
