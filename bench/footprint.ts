/**
 * The load footprint: what it costs a Node-RED process to load the package's four node files
 * (require time and RSS growth), measured each time in a FRESH child process
 * (bench/load-child.ts), median of the repetitions; beside the same figures for
 * node-red-contrib-home-assistant-websocket, installed from the npm registry into a temporary
 * folder in the same run and loaded the way Node-RED loads it (every entry of its
 * package.json `node-red.nodes`, required; no node is registered, for ours neither).
 *
 * Which module costs what: other fresh children require the same files in steps (zod, undici's
 * Pool, jose's decodeJwt, then the node files, which add our own code), and then what an
 * account loads only when it uses it (@redis/client, proper-lockfile) and what we never load
 * (the rest of undici, the rest of jose). A step is charged what it adds on top of the steps
 * before it, so Node's own modules go to the first step that needs them.
 *
 *   node dist/bench/footprint.js [--reps N] [--no-ha]     (only this part of npm run bench)
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";

const REPO_ROOT = path.resolve(__dirname, "..", "..");
const LOAD_CHILD = path.join(__dirname, "load-child.js");
export const HA_PACKAGE = "node-red-contrib-home-assistant-websocket";

interface StepOut {
  ms: number;
  rssBytes: number;
  modules: number;
}

export interface ModuleCost {
  ms: number;
  rssMiB: number;
  /** CommonJS files it added to require.cache (ES modules such as jose's are not listed there). */
  modules: number;
}

export interface Footprint {
  /** Flat figures for bench/results.json (numbers, and haVersion). */
  figures: Record<string, number | string>;
  /** Ours, per module: loaded with the nodes, loaded only when used, never loaded. */
  breakdown: Record<string, ModuleCost & { when: "with the nodes" | "when used" | "not loaded" }>;
  /** Why the Home Assistant part was skipped, when it was. */
  haNote: string | null;
}

const MiB = (b: number): number => b / (1024 * 1024);
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** One fresh process requiring `steps` (module specifiers, resolved from `from`) in order. */
function runChild(steps: string[][], from: string): Promise<StepOut[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [LOAD_CHILD, JSON.stringify(steps), from], {
      cwd: from,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (out += c.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (code !== 0 || !line) return reject(new Error(`load child failed (exit ${code}):\n${out.slice(-2000)}`));
      resolve((JSON.parse(line) as { steps: StepOut[] }).steps);
    });
  });
}

/** Medians over `reps` fresh children, per step. */
async function measure(steps: string[][], from: string, reps: number): Promise<ModuleCost[]> {
  const runs: StepOut[][] = [];
  for (let i = 0; i < reps; i++) runs.push(await runChild(steps, from));
  return steps.map((_, s) => ({
    ms: median(runs.map((r) => r[s].ms)),
    rssMiB: MiB(median(runs.map((r) => r[s].rssBytes))),
    modules: median(runs.map((r) => r[s].modules)),
  }));
}

/** The files Node-RED would load for a package: its package.json `node-red.nodes`, absolute. */
export function nodeFilesOf(packageDir: string): string[] {
  const pkg = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")) as {
    "node-red"?: { nodes?: Record<string, string> };
  };
  const nodes = Object.values(pkg["node-red"]?.nodes ?? {});
  if (nodes.length === 0) throw new Error(`${packageDir}/package.json lists no node-red.nodes`);
  return nodes.map((n) => path.resolve(packageDir, n));
}

/** npm, as the npm that runs `npm run bench` (npm_execpath), else the one on PATH. */
function npmCommand(): [string, string[]] {
  const cli = process.env.npm_execpath;
  if (cli && /\.c?js$/.test(cli)) return [process.execPath, [cli]];
  return ["npm", []];
}

function installHa(dir: string, log: (s: string) => void): Promise<string | null> {
  const [cmd, pre] = npmCommand();
  // --ignore-scripts: nothing of theirs runs here; loading their node files needs no build step.
  const args = [
    ...pre,
    "install",
    "--prefix",
    dir,
    "--no-audit",
    "--no-fund",
    "--ignore-scripts",
    "--loglevel=error",
    HA_PACKAGE,
  ];
  log(`footprint: npm install --prefix ${dir} ${HA_PACKAGE}`);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (out += c.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 240_000);
    child.once("error", (e) => {
      clearTimeout(timer);
      resolve(`npm could not be started (${e.message})`);
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(null);
      const why = out
        .split("\n")
        .filter((l) => l.trim() && !/Unknown user config/.test(l))
        .slice(-3)
        .join(" / ");
      resolve(`npm install ${HA_PACKAGE} failed (${signal ?? `exit ${code}`}): ${why || "no output"}`);
    });
  });
}

export async function measureFootprint(opts: {
  reps: number;
  ha: boolean;
  log: (s: string) => void;
}): Promise<Footprint> {
  const { reps, log } = opts;
  const ours = nodeFilesOf(REPO_ROOT);
  const figures: Record<string, number | string> = {};

  // The figure: the four node files alone, as Node-RED loads them.
  const [total] = await measure([ours], REPO_ROOT, reps);
  Object.assign(figures, {
    loadMs: round(total.ms),
    loadRssMiB: round(total.rssMiB),
    loadModules: total.modules,
    loadReps: reps,
  });
  log(
    `footprint: our four node files: ${figures.loadMs} ms, ${figures.loadRssMiB} MiB, ${total.modules} CommonJS modules (median of ${reps} fresh processes)`,
  );

  // Which module costs what.
  const steps: [string, Footprint["breakdown"][string]["when"], string[]][] = [
    ["zod", "with the nodes", ["zod"]],
    [
      "undici (Pool + request)",
      "with the nodes",
      ["undici/lib/dispatcher/pool.js", "undici/lib/dispatcher/dispatcher.js", "undici/lib/api/index.js"],
    ],
    ["jose (decodeJwt)", "with the nodes", ["jose/jwt/decode"]],
    ["our code (dist/src, dist/nodes)", "with the nodes", ours],
    ["@redis/client (an account on Redis)", "when used", ["@redis/client"]],
    ["proper-lockfile (first file-store renewal)", "when used", ["proper-lockfile"]],
    ["rest of undici (fetch, WebSocket, mocks, ...)", "not loaded", ["undici"]],
    ["rest of jose (signing, JWE, JWK)", "not loaded", ["jose"]],
  ];
  const costs = await measure(
    steps.map((s) => s[2]),
    REPO_ROOT,
    reps,
  );
  const breakdown: Footprint["breakdown"] = {};
  steps.forEach(([name, when], i) => {
    breakdown[name] = { when, ms: round(costs[i].ms), rssMiB: round(costs[i].rssMiB), modules: costs[i].modules };
  });
  for (const [name, c] of Object.entries(breakdown))
    log(
      `footprint:   ${name.padEnd(46)} ${String(c.ms).padStart(6)} ms ${String(c.rssMiB).padStart(5)} MiB ${String(c.modules).padStart(4)} files  (${c.when})`,
    );

  // Home Assistant's nodes, installed now.
  let haNote: string | null;
  if (!opts.ha) haNote = "the Home Assistant comparison is skipped in quick mode (--ha to include it)";
  else {
    const dir = mkdtempSync(path.join(tmpdir(), "door-bench-ha-"));
    try {
      haNote = await installHa(dir, log);
      if (haNote === null) {
        const haDir = path.join(dir, "node_modules", HA_PACKAGE);
        const files = nodeFilesOf(haDir);
        const [ha] = await measure([files], dir, reps);
        Object.assign(figures, {
          haVersion: (JSON.parse(readFileSync(path.join(haDir, "package.json"), "utf8")) as { version: string })
            .version,
          haLoadMs: round(ha.ms),
          haLoadRssMiB: round(ha.rssMiB),
          haLoadModules: ha.modules,
          loadMsRatio: round(total.ms / ha.ms, 2),
          loadRssRatio: round(total.rssMiB / ha.rssMiB, 2),
        });
        log(
          `footprint: ${HA_PACKAGE} ${figures.haVersion} (${files.length} node file(s)): ${figures.haLoadMs} ms, ${figures.haLoadRssMiB} MiB; ours/HA: time ${figures.loadMsRatio}, RSS ${figures.loadRssRatio}`,
        );
      }
    } catch (e) {
      haNote = `loading ${HA_PACKAGE} failed: ${(e as Error).message.split("\n")[0]}`;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    if (haNote) log(`footprint: NOTE: ${haNote}; only that comparison is skipped`);
  }
  return { figures, breakdown, haNote };
}

if (require.main === module) {
  const { values } = parseArgs({ options: { reps: { type: "string", default: "5" }, "no-ha": { type: "boolean" } } });
  measureFootprint({
    reps: Number(values.reps),
    ha: !values["no-ha"],
    log: (s) => process.stderr.write(`${s}\n`),
  }).then(
    (f) => process.stdout.write(JSON.stringify(f, null, 2) + "\n"),
    (e: Error) => {
      process.stderr.write(`footprint failed: ${e.stack ?? e.message}\n`);
      process.exit(1);
    },
  );
}
