/**
 * `door-access-audit`: reading and checking an audit log from a shell.
 * Subcommands: `tail`, `export --csv` (src/audit/cli-read.ts). Exit codes: 0 done, 1 the log
 * failed a check, 2 usage or I/O error.
 */
import { exportCommand, tailCommand, type CliIo } from "./cli-read.js";

export const USAGE =
  "usage: door-access-audit <command> ...\n" +
  "  tail [-n N] [--json] <file>                       the newest N records (default 10)\n" +
  "  export --csv [--from ISO] [--to ISO] <file>       the log as CSV (RFC 4180) on stdout\n" +
  "<file> is the live audit file (the account's audit path); its rotated files <file>.N are read too.\n";

/** Writes to a stream, waiting when it is full (a large export piped to a slow reader). */
function writer(stream: NodeJS.WritableStream): (text: string) => Promise<void> | void {
  return (text) => {
    if (!stream.write(text)) return new Promise((resolve) => stream.once("drain", () => resolve()));
  };
}

export async function main(argv: string[], io: CliIo = { out: writer(process.stdout), err: (t) => void process.stderr.write(t) }): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
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
