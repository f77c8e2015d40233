/**
 * An audit record (docs/audit-log.md#records): its fields, the caps the writer puts on them, and
 * the one parser of a record line, used by every reader of the log (src/audit/reader.ts and its
 * readAuditFile, the chain check and the writer's resume in src/audit/chain.ts, the open check in
 * src/audit/paths.ts).
 *
 * Records never hold a token, password or phone number: the caller guarantees it, and nothing
 * here adds any. Knows nothing of Node-RED.
 */
import { clip, textOf } from "../util/text.js";

/** The fields every record carries (docs/audit-log.md#records). */
export interface AuditBase {
  actor: string;
  deviceId: number | null;
  lockId: number | null;
  door: string | null;
  msgid: string | null;
  /** The guest pass a message opened with: its id, never its code (docs/passes.md#at-a-door-unlock). */
  pass?: string;
}

/** The chain fields every written record carries (docs/audit-log.md#the-chain). */
export interface ChainFields {
  seq?: number;
  prev?: string;
}

/** A record as the writer makes it. */
export type AuditRecord =
  | ({ type: "unlock-attempt"; ts: string; replay?: true } & AuditBase & ChainFields)
  | ({ type: "unlock-result"; ts: string; outcome: string; status: number | null } & AuditBase & ChainFields)
  | ({ type: "unlock-rejected"; ts: string; outcome: string; reason: string; message?: string } & AuditBase &
      ChainFields)
  | ({ type: "lockout-ended"; ts: string; ended: string[] } & AuditBase & ChainFields);

type AuditRecordType = "unlock-attempt" | "unlock-result" | "unlock-rejected" | "lockout-ended";

/** A record as read back (the writer's fields; `seq`/`prev` once the hash chain is written). */
export interface AuditEntry {
  type: AuditRecordType;
  ts: string;
  actor: string;
  deviceId: number | null;
  lockId: number | null;
  door: string | null;
  msgid: string | null;
  pass?: string;
  outcome?: string;
  status?: number | null;
  reason?: string;
  /** A denied record's message (docs/audit-log.md#records): why, in words; never a PIN. */
  message?: string;
  replay?: boolean;
  /** A lockout-ended record: what was ended ("node", or "door <deviceId>"). */
  ended?: string[];
  /** The writer went back before this record (a batch cut off after a failed write, or written again). */
  rewound?: number;
  seq?: number;
  prev?: string;
}

/** Longest `actor`, `door` and `reason` kept (characters); longer strings are cut. */
export const MAX_TEXT = 200;
/** Longest `msgid` and `outcome` kept. */
const MAX_SHORT_TEXT = 200;
/** The longest line a record can make: its text fields at their caps, each character escaped (6). */
export const MAX_RECORD_CHARS = 8 * 1024;

function cap(value: unknown, max: number): string | null {
  if (value === null || value === undefined) return null;
  // Never half of a surrogate pair at the end (util/text.ts).
  return clip(typeof value === "string" ? value : textOf(value), max);
}

function intOrNull(value: unknown): number | null {
  return typeof value === "number" && Number.isSafeInteger(value) ? value : null;
}

function base(r: AuditBase): AuditBase {
  const b: AuditBase = {
    actor: cap(r.actor, MAX_TEXT) ?? "",
    deviceId: intOrNull(r.deviceId),
    lockId: intOrNull(r.lockId),
    door: cap(r.door, MAX_TEXT),
    msgid: cap(r.msgid, MAX_SHORT_TEXT),
  };
  if (typeof r.pass === "string") b.pass = cap(r.pass, MAX_SHORT_TEXT)!;
  return b;
}

/** An `unlock-attempt` record made at `ts`; `replay: true` marks the single replay after a 401. */
export function attemptRecord(ts: string, r: AuditBase & { replay?: boolean }): AuditRecord {
  // Fields written out rather than spread: this is on the door's path (bench: unlockP50Ratio).
  const record: AuditRecord = {
    type: "unlock-attempt",
    ts,
    actor: cap(r.actor, MAX_TEXT) ?? "",
    deviceId: intOrNull(r.deviceId),
    lockId: intOrNull(r.lockId),
    door: cap(r.door, MAX_TEXT),
    msgid: cap(r.msgid, MAX_SHORT_TEXT),
  };
  if (typeof r.pass === "string") record.pass = cap(r.pass, MAX_SHORT_TEXT)!;
  if (r.replay === true) record.replay = true;
  return record;
}

/** An `unlock-result` record made at `ts`. */
export function resultRecord(ts: string, r: AuditBase & { outcome: string; status: number | null }): AuditRecord {
  return {
    type: "unlock-result",
    ts,
    ...base(r),
    outcome: cap(r.outcome, MAX_SHORT_TEXT) ?? "",
    status: intOrNull(r.status),
  };
}

/** An `unlock-rejected` record made at `ts`. */
export function rejectedRecord(
  ts: string,
  r: AuditBase & { outcome: string; reason: string; message?: string },
): AuditRecord {
  const rec: AuditRecord = {
    type: "unlock-rejected",
    ts,
    ...base(r),
    outcome: cap(r.outcome, MAX_SHORT_TEXT) ?? "",
    reason: cap(r.reason, MAX_TEXT) ?? "",
  };
  if (typeof r.message === "string" && r.message !== r.reason) rec.message = cap(r.message, MAX_TEXT) ?? "";
  return rec;
}

/**
 * A `lockout-ended` record made at `ts` (docs/audit-log.md#records): the host ended a door-unlock
 * node's lockout; `actor` names who (the editor user, or the flow's actor), `ended` what.
 */
export function lockoutEndedRecord(ts: string, r: AuditBase & { ended: string[] }): AuditRecord {
  return {
    type: "lockout-ended",
    ts,
    ...base(r),
    ended: r.ended.slice(0, 100).map((e) => cap(e, MAX_SHORT_TEXT) ?? ""),
  };
}

const RECORD_TYPES = new Set<string>(["unlock-attempt", "unlock-result", "unlock-rejected", "lockout-ended"]);

/**
 * Parses one line; null for anything that is not one of our records (a blank line, a line that
 * is not JSON, JSON that is not an object with one of our `type`s and a string `ts`).
 */
export function parseRecord(line: string): AuditEntry | null {
  if (line.trim().length === 0) return null;
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (typeof o.type !== "string" || !RECORD_TYPES.has(o.type) || typeof o.ts !== "string") return null;
  return o as unknown as AuditEntry;
}

/** How every record line starts (the writer puts `type` first): a torn write starts the same way. */
const RECORD_STARTS = ['{"type":"unlock-', '{"type":"lockout-'];

/**
 * A line a torn write left (a crash, or a failed write the writer could not cut off again): not
 * JSON (a valid JSON line that is not our record is another program's), and starting like a
 * record or being the start of that start. NUL bytes where a crash left data that never reached
 * the disk (the file's size grew, its blocks were not written) may follow it or stand alone.
 */
export function isTornWrite(line: string): boolean {
  const core = line.replace(/\0+$/, "");
  if (core.length === 0) return line.length > 0;
  if (!RECORD_STARTS.some((start) => core.startsWith(start) || start.startsWith(core))) return false;
  try {
    JSON.parse(line);
    return false;
  } catch {
    return true;
  }
}
