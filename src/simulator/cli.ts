/**
 * Command line of door-access-sim (bin/door-access-sim.js runs the compiled form of this).
 */
import { argTokens } from "../util/args.js";
import { DEMO_ACCOUNT, DEMO_DOORS } from "./seed.js";
import { loadSeedFile, startSimulator } from "./index.js";
import type { RunningSimulator, SimulatorOptions } from "./types.js";

export const USAGE = `Usage: door-access-sim [options]

A local, stateful simulator of the Door Unlock Access Service (all ten /api operations,
one session per account, rotating refresh tokens, faults under /_sim/).

Options:
  --host <host>          interface to listen on (default 127.0.0.1)
  --port <port>          port (default 8787; 0 = any free port)
  --seed <file.json>     accounts, companies, locations, doors and keys (default: built-in demo seed)
  --access-ttl <sec>     access token lifetime in seconds (default 172800 = 48 h)
  --refresh-ttl <sec>    refresh token lifetime in seconds (default 2592000 = 30 days)
  --allow-remote-control allow a non-loopback --host (the /_sim control surface is then reachable)
  --help                 show this help

Control surface (same listener, loopback only; not in the request log):
  POST   /_sim/faults {FaultSpec}          GET /_sim/faults      DELETE /_sim/faults[/<id>]
  GET    /_sim/devices/<id>                POST /_sim/devices/<id>/online {"online": false}
  GET    /_sim/accounts/<id>               POST /_sim/accounts/<id>/{expire-access,revoke-access,expire-refresh,supersede}
  GET    /_sim/requests[?operation=&accountId=&deviceId=]   DELETE /_sim/requests
  GET    /_sim/counts                      POST /_sim/rate-limit {"capacity": n, "refillPerSec": n} | false

Demo seed: account "demo" (demo@example.com; phone number and password in docs/simulator.md, "Demo accounts"),
doors 101-107 and 201 (see src/simulator/seed.ts).
`;

export interface CliArgs {
  help: boolean;
  seedFile?: string;
  options: SimulatorOptions;
}

const OPTIONS = {
  help: { type: "boolean", short: "h" },
  host: { type: "string" },
  port: { type: "string" },
  seed: { type: "string" },
  "access-ttl": { type: "string" },
  "refresh-ttl": { type: "string" },
  "allow-remote-control": { type: "boolean" },
} as const;

export function parseArgs(argv: string[]): CliArgs {
  const args: CliArgs = { help: false, options: { host: "127.0.0.1", port: 8787 } };
  const seconds = (v: string, flag: string): number => {
    if (!/^[0-9]+$/.test(v) || Number(v) < 1)
      throw new Error(`${flag} must be a positive whole number of seconds, got ${JSON.stringify(v)}`);
    return Number(v);
  };
  for (const t of argTokens(argv, OPTIONS)) {
    if (t.kind !== "option") throw new Error(`unknown option ${JSON.stringify(t.kind === "end" ? "--" : t.value)}`);
    const flag = `--${t.name}`;
    const take = (): string => {
      if (t.value === undefined || (!t.inline && t.value.startsWith("--"))) throw new Error(`${flag} needs a value`);
      return t.value;
    };
    switch (t.name) {
      case "help":
        args.help = true;
        break;
      case "host":
        args.options.host = take();
        break;
      case "port": {
        const v = take();
        if (!/^[0-9]+$/.test(v) || Number(v) > 65535)
          throw new Error(`--port must be 0-65535, got ${JSON.stringify(v)}`);
        args.options.port = Number(v);
        break;
      }
      case "seed":
        args.seedFile = take();
        break;
      case "access-ttl":
        args.options.accessTtlSec = seconds(take(), flag);
        break;
      case "refresh-ttl":
        args.options.refreshTtlSec = seconds(take(), flag);
        break;
      case "allow-remote-control":
        args.options.allowRemoteControl = true;
        break;
      default:
        throw new Error(`unknown option ${JSON.stringify(t.raw)}`);
    }
  }
  return args;
}

export function banner(sim: RunningSimulator, seedFile?: string): string {
  const lines = [
    `door-access-sim listening on ${sim.url}`,
    `  API:     ${sim.url}/api/...   docs: ${sim.url}/openapi.json  ${sim.url}/openapi.yaml  ${sim.url}/llms.txt`,
    `  Control: ${sim.url}/_sim/ (faults, devices, accounts, requests, counts)`,
  ];
  if (seedFile) {
    lines.push(`  Accounts and their credentials: as given in the seed file ${seedFile}`);
  } else {
    lines.push(
      // The phone number and password are in the README and the seed, never printed.
      `  Demo account (built-in demo seed): ${DEMO_ACCOUNT.email}; its phone number and password are in the README ("No door at hand?") and docs/simulator.md ("Demo accounts")`,
      `  Demo doors: ${Object.values(DEMO_DOORS)
        .filter((id) => id !== DEMO_DOORS.notVisible)
        .join(", ")}`,
    );
  }
  lines.push("  Stop with Ctrl+C.");
  return lines.join("\n");
}

export async function main(argv: string[]): Promise<void> {
  let args: CliArgs;
  try {
    args = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`door-access-sim: ${(err as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return;
  }
  let sim: RunningSimulator;
  try {
    const options = { ...args.options };
    if (args.seedFile) options.seed = loadSeedFile(args.seedFile);
    sim = await startSimulator(options);
  } catch (err) {
    process.stderr.write(`door-access-sim: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`door-access-sim: ${signal}, stopping\n`);
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
  // Printed only once the signal handlers are in place: whoever reads the URL may stop us at once.
  process.stdout.write(banner(sim, args.seedFile) + "\n");
}
