/**
 * `door-access-audit tail` and `door-access-audit export --csv`: the audit log for people
 * without the editor. Pure functions of (arguments, output): src/audit/cli.ts dispatches here.
 */
import { textOf } from "../util/text.js";
import { type AuditEntry, exportCsv, parseInstant, tail } from "./reader.js";

export interface CliIo {
  out(text: string): void | Promise<void>;
  err(text: string): void;
}

export const TAIL_USAGE = "usage: door-access-audit tail [-n N] [--json] <file>\n";
export const EXPORT_USAGE = "usage: door-access-audit export --csv [--from ISO-8601] [--to ISO-8601] <file>\n";

/** Control characters (C0, DEL, C1) would be run by a terminal: shown escaped instead. */
function safe(s: unknown): string {
  return textOf(s ?? "").replace(/\p{Cc}/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** One record as a readable line: time, seq, what happened, door, actor. */
export function formatRecord(r: AuditEntry): string {
  const seq = typeof r.seq === "number" ? `#${r.seq}` : "-";
  const what =
    r.type === "unlock-attempt"
      ? `attempt${r.replay === true ? " (replay)" : ""}`
      : r.type === "unlock-rejected"
        ? `rejected ${safe(r.outcome)}: ${safe(r.reason)}`
        : `result ${safe(r.outcome)}${r.status !== null && r.status !== undefined ? ` ${r.status}` : ""}`;
  const door = `${r.door !== null && r.door !== undefined ? safe(r.door) : "?"} (device ${r.deviceId ?? "?"}${r.lockId !== null && r.lockId !== undefined ? `, lock ${r.lockId}` : ""})`;
  return `${safe(r.ts)}  ${seq}  ${what}  ${door}  actor ${safe(r.actor)}`;
}

interface Parsed {
  flags: Map<string, string | true>;
  files: string[];
}

function parseArgs(args: string[], withValue: Set<string>, bare: Set<string>): Parsed | string {
  const flags = new Map<string, string | true>();
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") {
      files.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith("-") && a !== "-") {
      const [name, inline] = a.includes("=")
        ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]
        : [a, undefined];
      if (withValue.has(name)) {
        const v = inline ?? args[++i];
        if (v === undefined) return `${name} needs a value`;
        flags.set(name, v);
      } else if (bare.has(name) && inline === undefined) {
        flags.set(name, true);
      } else {
        return `unknown option ${a}`;
      }
    } else {
      files.push(a);
    }
  }
  return { flags, files };
}

/** `tail [-n N] [--json] <file>`: the newest N records (default 10), oldest first. */
export async function tailCommand(args: string[], io: CliIo): Promise<number> {
  const p = parseArgs(args, new Set(["-n", "--lines"]), new Set(["--json"]));
  if (typeof p === "string") {
    io.err(`door-access-audit tail: ${p}\n${TAIL_USAGE}`);
    return 2;
  }
  if (p.files.length !== 1) {
    io.err(`door-access-audit tail: name one audit log file\n${TAIL_USAGE}`);
    return 2;
  }
  const nText = (p.flags.get("-n") ?? p.flags.get("--lines") ?? "10") as string;
  if (!/^\d{1,4}$/.test(nText) || Number(nText) < 1 || Number(nText) > 1000) {
    io.err(`door-access-audit tail: -n must be a whole number from 1 to 1000\n${TAIL_USAGE}`);
    return 2;
  }
  const records = await tail(p.files[0], Number(nText));
  const json = p.flags.has("--json");
  for (const r of records) await io.out((json ? JSON.stringify(r) : formatRecord(r)) + "\n");
  return 0;
}

/** `export --csv [--from ISO] [--to ISO] <file>`: the log (or a time range) as CSV on stdout. */
export async function exportCommand(args: string[], io: CliIo): Promise<number> {
  const p = parseArgs(args, new Set(["--from", "--to"]), new Set(["--csv"]));
  if (typeof p === "string") {
    io.err(`door-access-audit export: ${p}\n${EXPORT_USAGE}`);
    return 2;
  }
  if (!p.flags.has("--csv")) {
    io.err(`door-access-audit export: the only format is --csv; say so\n${EXPORT_USAGE}`);
    return 2;
  }
  if (p.files.length !== 1) {
    io.err(`door-access-audit export: name one audit log file\n${EXPORT_USAGE}`);
    return 2;
  }
  const range: { from?: Date; to?: Date } = {};
  for (const k of ["--from", "--to"] as const) {
    const v = p.flags.get(k);
    if (v === undefined) continue;
    const d = parseInstant(v as string);
    if (!d) {
      io.err(
        `door-access-audit export: ${k} must be an ISO-8601 date or time, e.g. 2025-01-31 or 2025-01-31T08:00:00Z\n${EXPORT_USAGE}`,
      );
      return 2;
    }
    range[k === "--from" ? "from" : "to"] = d;
  }
  if (range.from && range.to && range.from > range.to) {
    io.err(`door-access-audit export: --from is after --to\n${EXPORT_USAGE}`);
    return 2;
  }
  for await (const chunk of exportCsv(p.files[0], range)) await io.out(chunk);
  return 0;
}
