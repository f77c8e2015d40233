/**
 * Everything a test run starts stops with the run (docs/testing.md#nothing-outlives-a-run): the
 * simulator's command line, Node-RED processes, redis-server, the demo, chromium, and what they
 * start in turn, however the run ends: passed, failed (mocha's --exit ends its workers without
 * their children), Ctrl-C, or SIGKILL to mocha.
 *
 * Loaded by mocha's main process before it forks a worker (.mocharc.js, `npm run test:file`): it
 * marks the run in the environment (DOOR_TEST_RUN, inherited by every worker and every process a
 * test starts, and theirs) and starts a watcher, test/hooks/reaper.ts, in a process group of its
 * own, holding one end of a pipe to it. When the main process is gone, for whatever reason, the
 * kernel closes that pipe; the watcher then kills every process still carrying the run's mark and
 * exits. A mocha started by a test (test/hooks/leak-scan.test.ts) adds its own mark to the chain:
 * its own watcher stops what it started, and the outer run's would too.
 *
 * Linux only (the watcher reads /proc); elsewhere it finds nothing and does nothing.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import type { Socket } from "node:net";
import * as path from "node:path";
import { isMochaWorker } from "./suite-process.js";

/** The environment variable that marks the processes of a run: the run's id, after those of the runs around it (`outer/inner`). */
export const RUN_MARK = "DOOR_TEST_RUN";

/** This run's id (a worker: the id of the run it belongs to). */
export const runId: string = (() => {
  if (isMochaWorker && process.env[RUN_MARK]) return process.env[RUN_MARK].split("/").pop()!;
  const id = `${process.pid}-${randomBytes(4).toString("hex")}`;
  process.env[RUN_MARK] = process.env[RUN_MARK] ? `${process.env[RUN_MARK]}/${id}` : id;
  const watcher = spawn(process.execPath, [path.join(__dirname, "reaper.js"), id], {
    detached: true,
    stdio: ["pipe", "ignore", "inherit"],
  });
  watcher.on("error", () => undefined);
  watcher.unref();
  (watcher.stdin as Socket | null)?.unref();
  return id;
})();
