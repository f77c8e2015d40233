/**
 * Where the root hooks (no-unhandled.ts, leak-scan.ts) run, and how they report across processes.
 *
 * `npm test` runs mocha in parallel mode (docs/testing.md#how-the-suite-runs): the main mocha
 * process only reports, and each test file runs in one of its worker processes (forked by
 * workerpool, with an IPC channel and MOCHA_WORKER_ID). There, the root `beforeAll`/`afterAll`
 * hooks run once per file, not once per run, so each hook checks after every file what that
 * worker saw so far and writes its counts to a folder of the main process; the main process
 * adds them up in its global teardown, prints one line per hook and fails the run on any hit.
 * With a plain (serial) mocha, as `npm run test:file` runs it, everything happens in one
 * process and the root `afterAll` does it all, as before.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

const STATS_ENV = "DOOR_SUITE_HOOK_STATS";

/** This process is a mocha parallel worker (not the main process, not a child a test started). */
export const isMochaWorker: boolean = process.env.MOCHA_WORKER_ID !== undefined && typeof process.send === "function";
// A mocha that a test starts (test/leak-scan.test.ts) must not take itself for a worker.
delete process.env.MOCHA_WORKER_ID;

/**
 * The folder the workers write their counts to: made by the main process when it loads the
 * hooks (before it forks any worker, so the workers inherit it). A mocha started by a test is a
 * main process of its own and gets its own folder.
 */
export const statsDir: string = (() => {
  if (isMochaWorker && process.env[STATS_ENV]) return process.env[STATS_ENV];
  const dir = mkdtempSync(path.join(tmpdir(), "door-suite-hooks-"));
  process.env[STATS_ENV] = dir;
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
})();

/** Writes (replaces) this worker's counts for one hook. */
export function writeStats(hook: string, stats: unknown): void {
  mkdirSync(statsDir, { recursive: true });
  writeFileSync(path.join(statsDir, `${hook}-${process.pid}.json`), JSON.stringify(stats));
}

/** Every worker's last counts for one hook. */
export function readStats<T>(hook: string): T[] {
  let names: string[];
  try {
    names = readdirSync(statsDir).filter((n) => n.startsWith(`${hook}-`) && n.endsWith(".json"));
  } catch {
    return [];
  }
  return names.map((n) => JSON.parse(readFileSync(path.join(statsDir, n), "utf8")) as T);
}
