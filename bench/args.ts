/**
 * The bench's settings: its command line, the counts per mode, where it writes, and the small
 * helpers every part uses (the progress log on stderr, the version of an installed package).
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { argTokens } from "../src/util/args.js";

/** The repository (this file runs from dist/bench/). */
export const REPO_ROOT = path.resolve(__dirname, "..", "..");

/**
 * The measurements `--only` can pick, in the order main() runs them. A new measurement adds its
 * name here (and one line in main()).
 */
export const PHASES = [
  "load",
  "scale",
  "passes",
  "logins",
  "latency",
  "rules",
  "tput",
  "status",
  "handbuilt",
  "refresh",
  "memory",
] as const;
export type Phase = (typeof PHASES)[number];

export interface Args {
  quick: boolean;
  reps: number;
  out: string;
  child: string | null;
  sim: string | null;
  base: number;
  total: number;
  /** Diagnostics (profiling): run only these phases, e.g. --only status,latency. */
  only: Set<string> | null;
  /** Compare the load footprint with Home Assistant's nodes (installed from npm): full run yes, quick no. */
  ha: boolean | null;
}

const OPTIONS = {
  quick: { type: "boolean" },
  reps: { type: "string" },
  out: { type: "string" },
  child: { type: "string" },
  sim: { type: "string" },
  base: { type: "string" },
  total: { type: "string" },
  only: { type: "string" },
  ha: { type: "boolean" },
  "no-ha": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

export function parseArgs(argv: string[]): Args {
  const a: Args = {
    quick: false,
    reps: 0,
    out: "",
    child: null,
    sim: null,
    base: 1000,
    total: 100_000,
    only: null,
    ha: null,
  };
  for (const t of argTokens(argv, OPTIONS)) {
    const f = t.kind === "option" ? t.raw : t.kind === "end" ? "--" : t.value;
    if (t.kind !== "option") throw new Error(`unknown option ${f}`);
    const v = (): string => {
      if (t.value === undefined) throw new Error(`${f} needs a value`);
      return t.value;
    };
    if (t.name === "quick") a.quick = true;
    else if (t.name === "reps") a.reps = Number(v());
    else if (t.name === "out") a.out = v();
    else if (t.name === "child") a.child = v();
    else if (t.name === "sim") a.sim = v();
    else if (t.name === "base") a.base = Number(v());
    else if (t.name === "total") a.total = Number(v());
    else if (t.name === "only") a.only = new Set(v().split(","));
    else if (t.name === "ha") a.ha = true;
    else if (t.name === "no-ha") a.ha = false;
    else if (t.name === "help") {
      process.stdout.write(
        `usage: node dist/bench/bench.js [--quick] [--reps N] [--out results.json] [--only ${PHASES.join(",")}] [--ha|--no-ha]\n`,
      );
      process.exit(0);
    } else throw new Error(`unknown option ${f}`);
  }
  for (const p of a.only ?? [])
    if (!(PHASES as readonly string[]).includes(p))
      throw new Error(`--only: unknown phase ${p} (phases: ${PHASES.join(",")})`);
  if (!a.reps) a.reps = a.quick ? 2 : 5;
  if (!Number.isInteger(a.reps) || a.reps < 1 || a.reps > 50) throw new Error("--reps must be 1..50");
  if (!a.out) a.out = process.env.BENCH_RESULTS || path.join(REPO_ROOT, "bench", "results.json");
  if (a.ha === null) a.ha = !a.quick;
  return a;
}

/** Counts per mode. Bounded: the full run makes about 250,000 API calls in all. */
export function counts(quick: boolean) {
  return quick
    ? {
        logins: 300,
        seq: 60,
        seqWarm: 20,
        tput: 300,
        tputWarm: 60,
        status: 600,
        statusWarm: 200,
        hbSeq: 20,
        hbTput: 100,
        refresh: 1000,
        memBase: 200,
        memTotal: 2000,
        scaleLookups: 2000,
      }
    : {
        logins: 10_000,
        seq: 1000,
        seqWarm: 100,
        tput: 5000,
        tputWarm: 500,
        status: 10_000,
        statusWarm: 1000,
        hbSeq: 300,
        hbTput: 1000,
        refresh: 1000,
        memBase: 1000,
        memTotal: 100_000,
        scaleLookups: 20_000,
      };
}
export type Counts = ReturnType<typeof counts>;

/** What a measurement adds to bench/results.json (a null stays null, as before). */
export type Figures = Record<string, number | string | null>;

export function log(s: string): void {
  process.stderr.write(`bench: ${s}\n`);
}

export function versionOf(pkg: string): string {
  const p = require.resolve(`${pkg}/package.json`, { paths: [REPO_ROOT] });
  return (JSON.parse(readFileSync(p, "utf8")) as { version: string }).version;
}
