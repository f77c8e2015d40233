/**
 * `door-access-audit`: reading and checking an audit log from a shell.
 * Subcommands: `verify` (the hash chain, src/audit/chain.ts), `tail`, `export --csv`
 * (src/audit/cli-read.ts). Exit codes: 0 done, 1 the log failed a check, 2 usage or I/O error.
 */
import { promises as fsp } from "node:fs";
import { verify } from "./chain.js";
import { exportCommand, tailCommand, type CliIo } from "./cli-read.js";
import { listLogFiles } from "./reader.js";

export const USAGE =
  "usage: door-access-audit <command> ...\n" +
  "  verify <file>...                                  check the hash chain; files oldest first\n" +
  "  tail [-n N] [--json] <file>                       the newest N records (default 10)\n" +
  "  export --csv [--from ISO] [--to ISO] <file>       the log as CSV (RFC 4180) on stdout\n" +
  "<file> is the live audit file (the account's audit path); its rotated files <file>.N are read too\n" +
  "(verify: when given one file; given several, exactly those, rotated ones oldest first, then the live file).\n";

export const VERIFY_USAGE =
  "usage: door-access-audit verify <file>...   (rotated files oldest first, then the live file)\n";

/**
 * `verify`: prints the files checked, the last seq and the hash of the last line; exit 1 at the
 * first broken link (file and line named), 0 otherwise (also for a log that starts after seq 1
 * because older files were rotated away: said so).
 */
export async function verifyCommand(args: string[], io: CliIo): Promise<number> {
  const files = args.filter((a) => a !== "--");
  if (files.length === 0 || files.some((f) => f.startsWith("-") && f !== "-")) {
    io.err(VERIFY_USAGE);
    return 2;
  }
  const list = files.length === 1 ? await listLogFiles(files[0]) : files;
  if (list.length === 0) {
    io.err(`door-access-audit verify: ${files[0]}: no such file\n`);
    return 2;
  }
  // A file named on the command line that is not there is the operator's mistake (a typo, the
  // wrong folder), never a log that passed: an "empty log" with exit 0 would read as one.
  if (files.length > 1) {
    const missing: string[] = [];
    for (const f of files) if (!(await fileExists(f))) missing.push(f);
    if (missing.length > 0) {
      io.err(`door-access-audit verify: no such file: ${missing.join(", ")}\n`);
      return 2;
    }
  }
  const r = await verify(list);
  const safe = (s: string) => s.replace(/\p{Cc}/gu, "?"); // control characters (C0, DEL, C1)
  let out = `files: ${list.map(safe).join(", ")}\n`;
  for (const n of r.notes) out += `note: ${safe(n)}\n`;
  if (r.startsAfterGenesis)
    out += `note: the oldest remaining file starts at seq ${r.firstSeq} (older records rotated away); checked from there\n`;
  out += `records: ${r.records}\nlast seq: ${r.lastSeq ?? "none"}\nlast hash: ${r.lastHash ?? "none"}\n`;
  if (r.ok === false && r.broken) {
    await io.out(`${out}BROKEN: ${safe(r.broken.file)} line ${r.broken.line}: ${safe(r.broken.reason)}\n`);
    return 1;
  }
  out += r.ok ? `OK: ${r.message}\n` : `${r.message}\n`;
  await io.out(out);
  return 0;
}

async function fileExists(f: string): Promise<boolean> {
  try {
    await fsp.stat(f);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}

/** Writes to a stream, waiting when it is full (a large export piped to a slow reader). */
function writer(stream: NodeJS.WritableStream): (text: string) => Promise<void> | void {
  return (text) => {
    if (!stream.write(text)) return new Promise((resolve) => stream.once("drain", () => resolve()));
  };
}

export async function main(
  argv: string[],
  io: CliIo = { out: writer(process.stdout), err: (t) => void process.stderr.write(t) },
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "verify":
        return await verifyCommand(rest, io);
      case "tail":
        return await tailCommand(rest, io);
      case "export":
        return await exportCommand(rest, io);
      case "-h":
      case "--help":
      case "help":
        await io.out(USAGE);
        return 0;
      default:
        io.err(command ? `door-access-audit: unknown command ${command}\n${USAGE}` : USAGE);
        return 2;
    }
  } catch (err) {
    io.err(`door-access-audit ${command}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
}
