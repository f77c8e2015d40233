/**
 * Reading an audit log (the read side; src/audit/writer.ts writes it): the log's files
 * oldest first (rotated `<name>.N` … `<name>.1`, then the live file), its records newest first
 * with filters and paging, and a CSV export.
 *
 * Tolerant: a torn last line (a crash in the middle of a write), blank lines and lines that are
 * not our records are skipped, never thrown. Records hold no token, password or phone number,
 * and nothing here adds any. Knows nothing of Node-RED.
 */
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { isoTimeExists } from "../util/iso-time.js";
import { textOf } from "../util/text.js";
import { type AuditEntry, type AuditRecord, parseRecord } from "./record.js";

export type { AuditEntry } from "./record.js";

export interface AuditFilter {
  /** Case-insensitive part of the door name, or a device id (exact). */
  door?: string;
  /** Case-insensitive part of the actor. */
  actor?: string;
  /** Exact outcome; "attempt" = attempt records, "rejected" = every unlock-rejected record. */
  outcome?: string;
  /** Exact reason of a rejected record (a denied one's rule: docs/access-rules.md). */
  reason?: string;
  /** Records with `ts` at or after this instant. */
  from?: Date;
  /** Records with `ts` at or before this instant. */
  to?: Date;
}

const CHUNK = 64 * 1024;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The files of one log, oldest first: the rotated `<name>.N` (highest N first) … `<name>.1`,
 * then the live file (the configured path), each only if it exists. Compressed copies
 * (`<name>.1.gz`, left by logrotate) are not ours to read and are not listed.
 */
export async function listLogFiles(livePath: string): Promise<string[]> {
  const live = path.resolve(livePath);
  const dir = path.dirname(live);
  const base = path.basename(live);
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const rotated = new RegExp(`^${escapeRegExp(base)}\\.([1-9][0-9]{0,5})$`);
  const numbered = names
    .map((n) => ({ n, m: rotated.exec(n) }))
    .filter((x): x is { n: string; m: RegExpExecArray } => x.m !== null)
    .map((x) => ({ file: path.join(dir, x.n), index: Number(x.m[1]) }))
    .sort((a, b) => b.index - a.index)
    .map((x) => x.file);
  const out: string[] = [];
  for (const f of [...numbered, ...(names.includes(base) ? [live] : [])]) {
    const st = await fsp.stat(f).catch(() => null);
    if (st?.isFile()) out.push(f);
  }
  return out;
}

/** Lines of a file from the last to the first, read backwards in chunks (a large live file costs only what is read). */
export async function* linesBackwards(file: string): AsyncGenerator<string> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return; // rotated away meanwhile
    throw err;
  }
  try {
    let pos = (await handle.stat()).size;
    let rest: Buffer = Buffer.alloc(0); // bytes after the last newline seen so far (a line's start is still to come)
    while (pos > 0) {
      const size = Math.min(CHUNK, pos);
      pos -= size;
      const buf = Buffer.alloc(size);
      const { bytesRead } = await handle.read(buf, 0, size, pos);
      let data = Buffer.concat([buf.subarray(0, bytesRead), rest]);
      let nl = data.lastIndexOf(0x0a);
      while (nl >= 0) {
        // Splitting on the byte 0x0a never cuts a UTF-8 character.
        const line = data.subarray(nl + 1).toString("utf8");
        if (line.length > 0) yield line;
        data = data.subarray(0, nl);
        nl = data.lastIndexOf(0x0a);
      }
      rest = data;
    }
    if (rest.length > 0) yield rest.toString("utf8");
  } finally {
    await handle.close();
  }
}

function text(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** Whether a record passes a filter. */
export function matches(r: AuditEntry, f: AuditFilter): boolean {
  if (f.door) {
    const q = f.door.trim().toLowerCase();
    if (q && !(String(r.deviceId) === q || text(r.door).toLowerCase().includes(q))) return false;
  }
  if (f.actor) {
    const q = f.actor.trim().toLowerCase();
    if (q && !text(r.actor).toLowerCase().includes(q)) return false;
  }
  if (f.outcome) {
    if (f.outcome === "attempt") {
      if (r.type !== "unlock-attempt") return false;
    } else if (f.outcome === "rejected") {
      if (r.type !== "unlock-rejected") return false;
    } else if (r.outcome !== f.outcome) return false;
  }
  if (f.reason && r.reason !== f.reason) return false;
  if (f.from || f.to) {
    const t = Date.parse(r.ts);
    if (Number.isNaN(t)) return false;
    if (f.from && t < f.from.getTime()) return false;
    if (f.to && t > f.to.getTime()) return false;
  }
  return true;
}

export interface PageOptions {
  /** Most records returned (1 to 1000; default 50). */
  limit?: number;
  /** Only records with a `seq` below this one (the next page after a page ending at that seq). */
  beforeSeq?: number;
}

export interface Page {
  /** Newest first. */
  records: AuditEntry[];
  /** More matching records are older than the last one returned. */
  more: boolean;
  /** The newest record's `seq` in the whole log (any filter aside), when the log is chained. */
  lastSeq: number | null;
}

/** Matching records, newest first, read from the live file backwards through the rotated files. */
export async function readPage(livePath: string, filter: AuditFilter = {}, options: PageOptions = {}): Promise<Page> {
  const limit = Math.max(1, Math.min(1000, Math.floor(options.limit ?? 50)));
  const files = (await listLogFiles(livePath)).reverse();
  const records: AuditEntry[] = [];
  let lastSeq: number | null = null;
  let seenNewest = false;
  for (const file of files) {
    for await (const line of linesBackwards(file)) {
      const r = parseRecord(line);
      if (!r) continue;
      if (!seenNewest) {
        seenNewest = true;
        lastSeq = typeof r.seq === "number" ? r.seq : null;
      }
      if (options.beforeSeq !== undefined && !(typeof r.seq === "number" && r.seq < options.beforeSeq)) continue;
      if (!matches(r, filter)) continue;
      if (records.length === limit) return { records, more: true, lastSeq };
      records.push(r);
    }
  }
  return { records, more: false, lastSeq };
}

/**
 * Lines of a file from the first to the last, split on LF only (the exact bytes of each line,
 * so a stray CR stays part of its line), with 1-based line numbers counting every line; a
 * last line without its newline is marked `torn`.
 */
export async function* linesForward(file: string): AsyncGenerator<{ line: string; n: number; torn: boolean }> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return; // rotated away meanwhile
    throw err;
  }
  try {
    let pos = 0;
    let n = 0;
    let rest: Buffer = Buffer.alloc(0);
    for (;;) {
      const buf = Buffer.alloc(CHUNK);
      const { bytesRead } = await handle.read(buf, 0, CHUNK, pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      let data = rest.length ? Buffer.concat([rest, buf.subarray(0, bytesRead)]) : buf.subarray(0, bytesRead);
      let nl = data.indexOf(0x0a);
      while (nl >= 0) {
        yield { line: data.subarray(0, nl).toString("utf8"), n: ++n, torn: false };
        data = data.subarray(nl + 1);
        nl = data.indexOf(0x0a);
      }
      rest = Buffer.from(data);
    }
    if (rest.length > 0) yield { line: rest.toString("utf8"), n: ++n, torn: true }; // no newline: torn (or being written)
  } finally {
    await handle.close();
  }
}

/** Every record of the log, oldest first (streamed; a torn or foreign line is skipped). */
export async function* readAll(livePath: string, filter: AuditFilter = {}): AsyncGenerator<AuditEntry> {
  for (const file of await listLogFiles(livePath)) {
    for await (const { line } of linesForward(file)) {
      const r = parseRecord(line);
      if (r && matches(r, filter)) yield r;
    }
  }
}

/**
 * Reads one audit file whole (tests, the crash check): its records in file order, whether its last
 * line lacks its newline (`tornLastLine`: torn by a crash; still returned as a record if it is a
 * whole one), and the 1-based numbers of other lines that are not records (`badLines`). Blank
 * lines are skipped. A missing file reads as empty.
 */
export async function readAuditFile(
  filePath: string,
): Promise<{ records: AuditRecord[]; tornLastLine: boolean; badLines: number[] }> {
  const records: AuditRecord[] = [];
  const badLines: number[] = [];
  let tornLastLine = false;
  try {
    for await (const { line, n, torn } of linesForward(filePath)) {
      tornLastLine = torn;
      const r = parseRecord(line);
      if (r) records.push(r as AuditRecord);
      else if (!torn && line.trim().length > 0) badLines.push(n);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      err instanceof Error
        ? code && !err.message.includes(code)
          ? `${code}: ${err.message}`
          : err.message
        : String(err);
    throw new Error(`audit log ${filePath}: cannot read: ${why}`, { cause: err });
  }
  return { records, tornLastLine, badLines };
}

/** The newest `n` records, oldest first (what `tail` prints). */
export async function tail(livePath: string, n: number, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  const page = await readPage(livePath, filter, { limit: n });
  return page.records.reverse();
}

// ---- CSV -------------------------------------------------------------------------------------

export const CSV_COLUMNS = [
  "seq",
  "ts",
  "type",
  "actor",
  "door",
  "deviceId",
  "lockId",
  "outcome",
  "status",
  "replay",
  "reason",
  "message",
  "msgid",
] as const;

/**
 * One CSV cell (RFC 4180; docs/security.md#csv-export). Quoted (quotes doubled) when it holds
 * any character a spreadsheet may take for a separator or a line end: `,` `;` tab CR LF, or a
 * quote. A spreadsheet may run a cell as a formula, and an import that splits at another
 * separator than ours makes a part of a cell a cell of its own: so at the cell's start and after
 * each of those separators, a part starting with `=` `+` `-` `@`, tab or CR (some skip those
 * first), or with spaces or quotes and then `=` `+` `-` `@`, gets an apostrophe in front and
 * stays text (OWASP "CSV injection"): a spreadsheet that splits there takes a quote at the
 * part's start as opening a quoted cell and reads what follows it. `Lobby;=cmd` becomes
 * `"Lobby;'=cmd"`, `Lobby;"=cmd` becomes `"Lobby;'""=cmd"`.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  let s = typeof value === "string" ? value : textOf(value);
  s = s.replace(FORMULA_PART, "'");
  return /[",;\t\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The start of the cell or of a part after a separator, where a formula would start. */
const FORMULA_PART = /(?<=^|[,;\t\r\n])(?=[\t\r]|[ "]*[=+\-@])/g;

export function csvHeader(): string {
  return CSV_COLUMNS.join(",") + "\r\n";
}

export function csvRow(r: AuditEntry): string {
  const row = r as unknown as Record<string, unknown>;
  return (
    CSV_COLUMNS.map((c) => csvCell(c === "replay" ? (r.replay === true ? "true" : null) : row[c])).join(",") + "\r\n"
  );
}

/** The log (or a time range of it) as CSV, header first, oldest record first, CRLF line ends. */
export async function* exportCsv(livePath: string, filter: AuditFilter = {}): AsyncGenerator<string> {
  yield csvHeader();
  for await (const r of readAll(livePath, filter)) yield csvRow(r);
}

/**
 * Parses an ISO-8601 instant given by a user (a date alone means its start, UTC); null if invalid,
 * also for a date or time that does not exist (30 February, 24:00), which Date.parse would move.
 */
export function parseInstant(s: string | undefined | null): Date | null {
  if (typeof s !== "string" || !/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s.trim())) return null;
  if (!isoTimeExists(s.trim())) return null;
  const t = Date.parse(s.trim());
  return Number.isNaN(t) ? null : new Date(t);
}
