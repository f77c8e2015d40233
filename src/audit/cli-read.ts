/**
 * `door-access-audit tail` and `door-access-audit export --csv`: the audit log for people
 * without the editor. Pure functions of (arguments, output): src/audit/cli.ts dispatches here.
 */
import { type ArgOption, argTokens } from "../util/args.js";
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
        : r.type === "lockout-ended"
          ? `lockout ended: ${safe((r.ended ?? []).join(", "))}`
          : `result ${safe(r.outcome)}${r.status !== null && r.status !== undefined ? ` ${r.status}` : ""}`;
  const door = `${r.door !== null && r.door !== undefined ? safe(r.door) : "?"} (device ${r.deviceId ?? "?"}${r.lockId !== null && r.lockId !== undefined ? `, lock ${r.lockId}` : ""})`;
  return `${safe(r.ts)}  ${seq}  ${what}  ${door}  actor ${safe(r.actor)}`;
}

interface Parsed {
  flags: Map<string, string | true>;
  files: string[];
}

/**
 * The options of one command: `withValue` and `bare` by their long names (a short one, `-n`, in
 * `short`); everything else is a file. The flags are kept under their long names.
 */
function parseArgs(
  args: string[],
  withValue: string[],
  bare: string[],
  short: Record<string, string> = {},
): Parsed | string {
  const options: Record<string, ArgOption> = {};
  for (const n of withValue) options[n] = short[n] ? { type: "string", short: short[n] } : { type: "string" };
  for (const n of bare) options[n] = short[n] ? { type: "boolean", short: short[n] } : { type: "boolean" };
  const flags = new Map<string, string | true>();
  const files: string[] = [];
  for (const t of argTokens(args, options)) {
    if (t.kind === "end")
      continue; // what follows `--` comes as files
    else if (t.kind === "positional") files.push(t.value);
    else if (withValue.includes(t.name)) {
      if (t.value === undefined) return `${t.raw} needs a value`;
      flags.set(t.name, t.value);
    } else if (bare.includes(t.name) && !t.inline) flags.set(t.name, true);
    else return `unknown option ${t.raw}`;
  }
  return { flags, files };
}

/** `tail [-n N] [--json] <file>`: the newest N records (default 10), oldest first. */
export async function tailCommand(args: string[], io: CliIo): Promise<number> {
  const p = parseArgs(args, ["lines"], ["json"], { lines: "n" });
  if (typeof p === "string") {
    io.err(`door-access-audit tail: ${p}\n${TAIL_USAGE}`);
    return 2;
  }
  if (p.files.length !== 1) {
    io.err(`door-access-audit tail: name one audit log file\n${TAIL_USAGE}`);
    return 2;
  }
  const nText = (p.flags.get("lines") ?? "10") as string;
  if (!/^\d{1,4}$/.test(nText) || Number(nText) < 1 || Number(nText) > 1000) {
    io.err(`door-access-audit tail: -n must be a whole number from 1 to 1000\n${TAIL_USAGE}`);
    return 2;
  }
  const records = await tail(p.files[0], Number(nText));
  const json = p.flags.has("json");
  for (const r of records) await io.out((json ? JSON.stringify(r) : formatRecord(r)) + "\n");
  return 0;
}

/** `export --csv [--from ISO] [--to ISO] <file>`: the log (or a time range) as CSV on stdout. */
export async function exportCommand(args: string[], io: CliIo): Promise<number> {
  const p = parseArgs(args, ["from", "to"], ["csv"]);
  if (typeof p === "string") {
    io.err(`door-access-audit export: ${p}\n${EXPORT_USAGE}`);
    return 2;
  }
  if (!p.flags.has("csv")) {
    io.err(`door-access-audit export: the only format is --csv; say so\n${EXPORT_USAGE}`);
    return 2;
  }
  if (p.files.length !== 1) {
    io.err(`door-access-audit export: name one audit log file\n${EXPORT_USAGE}`);
    return 2;
  }
  const range: { from?: Date; to?: Date } = {};
  for (const k of ["--from", "--to"] as const) {
    const v = p.flags.get(k.slice(2));
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
