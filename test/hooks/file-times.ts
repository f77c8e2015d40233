/**
 * How long each test file took, so that the next run starts the longest first (.mocharc.js).
 *
 * In mocha's parallel mode a worker runs the root "before all" and "after all" once per file:
 * each worker writes its files' durations to the folder of test/hooks/suite-process.ts, and the
 * main process merges them into TIMES_FILE when the run ends. A file waits for a
 * free worker in the order given; one of the longest started last would run alone at the end
 * (docs/testing.md#how-the-suite-runs). A serial run records nothing.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { isMochaWorker, readStats, writeStats } from "./suite-process.js";

/**
 * Where the durations are kept: npm's cache folder in node_modules, which a build (it empties
 * dist/) leaves alone and git ignores; .mocharc.js reads the same file.
 */
export const TIMES_FILE = path.resolve(
  __dirname,
  "..",
  "..",
  "..",
  "node_modules",
  ".cache",
  "door-access-node-red",
  "test-times.json",
);

const mine: Record<string, number> = {};
let started = 0;

export const mochaHooks = {
  beforeAll(): void {
    started = Date.now();
  },
  afterAll(this: Mocha.Context): void {
    const file = this.test?.parent?.suites.find((s) => s.file)?.file;
    if (!isMochaWorker || !file) return;
    mine[path.relative(process.cwd(), file)] = Date.now() - started;
    writeStats("times", mine);
  },
};

/** The main process of a parallel run: the workers' durations merged into TIMES_FILE. */
export function mochaGlobalTeardown(): void {
  if (isMochaWorker) return;
  const measured = readStats<Record<string, number>>("times");
  if (measured.length === 0) return;
  let known: Record<string, number> = {};
  try {
    known = JSON.parse(readFileSync(TIMES_FILE, "utf8")) as Record<string, number>;
  } catch {
    // none yet
  }
  try {
    mkdirSync(path.dirname(TIMES_FILE), { recursive: true });
    writeFileSync(TIMES_FILE, JSON.stringify(Object.assign(known, ...measured), null, 1) + "\n");
  } catch {
    // only an ordering hint
  }
}
