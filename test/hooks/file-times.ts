/**
 * Records how long each test file takes in a parallel worker (a root hook plugin that only
 * `npm test` loads: scripts/test.ts), so that the next `npm test` starts the longest files
 * first. In a worker the root "before all" and "after all" run once per file.
 */
import { writeFileSync } from "node:fs";
import * as path from "node:path";
import { isMochaWorker } from "./suite-process.js";

const dir = process.env.DOOR_TEST_TIMES_DIR;
const times: Record<string, number> = {};
let started = 0;

export const mochaHooks = {
  beforeAll(): void {
    started = Date.now();
  },
  afterAll(this: Mocha.Context): void {
    const file = this.test?.parent?.suites.find((s) => s.file)?.file;
    if (!isMochaWorker || !dir || !file) return;
    times[path.relative(process.cwd(), file)] = Date.now() - started;
    writeFileSync(path.join(dir, `times-${process.pid}.json`), JSON.stringify(times));
  },
};
