/**
 * "No rejection or exception of ours may go unhandled" (docs/performance.md#reliability-checks: nothing of ours crashes the
 * runtime), checked over the whole run (a mocha root hook plugin, loaded by .mocharc.js and by
 * `npm run test:file`).
 *
 * Mocha runs with `--unhandled-rejections=strict` (.mocharc.js `node-option`), and this file
 * puts the same flag into NODE_OPTIONS, so every process a test starts (the demo's Node-RED,
 * the Redis flow runtime, crash and store children) runs with it too. Here every unhandled
 * rejection and uncaught exception is recorded with its stack and printed after the test during
 * which it happened (which mocha fails itself), and the run fails if any was seen at all (also
 * one that surfaced between tests): in the root `afterAll`, which runs once per file in a
 * parallel worker (the file that saw it fails) and once per run in a serial mocha; the main
 * process of a parallel run adds up what its workers saw and fails the run too
 * (test/hooks/suite-process.ts).
 *
 * A session state change that the transition table forbids (src/session/transitions.ts) is
 * recorded here the same way: in the suite it throws, and fails the file even when the throw was
 * caught on the way (production logs it and refuses the change instead).
 */
import { strictTransitions } from "../../src/session/transitions.js";
import { isMochaWorker, readStats, writeStats } from "./suite-process.js";

const seen: { kind: string; test: string; stack: string }[] = [];
let current = "(between tests)";
let reported = 0;
/** How many of `seen` an `afterAll` has already failed for (a worker runs many files). */
let failedFor = 0;
let ranAfterAll = false;
/** Files this worker has run (its root afterAll ran). */
let files = 0;

const firstLine = (s: { kind: string; test: string; stack: string }): string =>
  `${s.kind} during "${s.test}": ${s.stack.split("\n")[0]}`;

function record(kind: string, reason: unknown): void {
  const stack = reason instanceof Error ? (reason.stack ?? `${reason.name}: ${reason.message}`) : String(reason);
  seen.push({ kind, test: current, stack });
  // Also one after a worker's last file reaches the main process's count.
  if (isMochaWorker) writeStats("unhandled", { files, lines: seen.map(firstLine) });
}

if (!(process.env.NODE_OPTIONS ?? "").includes("--unhandled-rejections=strict")) {
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --unhandled-rejections=strict`.trim();
}
const onRejection = (reason: unknown): void => record("unhandled rejection", reason);
// With --unhandled-rejections=strict an unhandled rejection arrives here as an exception.
const onException = (err: Error, origin: string): void =>
  record(origin === "unhandledRejection" ? "unhandled rejection" : "uncaught exception", err);

function listen(): void {
  if (!process.listeners("unhandledRejection").includes(onRejection)) process.on("unhandledRejection", onRejection);
  if (!process.listeners("uncaughtException").includes(onException))
    process.prependListener("uncaughtException", onException);
}
listen();
strictTransitions.enabled = true;
strictTransitions.seen = (e) => record("illegal session state transition", e);
if (isMochaWorker) {
  // A parallel worker removes every `unhandledRejection` and `uncaughtException` listener after
  // each file it runs: ours go straight back, so that a rejection between two files is recorded
  // (and does not end the worker unreported).
  const removeAll = process.removeAllListeners.bind(process);
  process.removeAllListeners = (event?: string | symbol) => {
    removeAll(event);
    if (event === undefined || event === "unhandledRejection" || event === "uncaughtException") listen();
    return process;
  };
}

function fresh(): string[] {
  const out = seen.slice(reported).map((s) => `${s.kind} during "${s.test}":\n${s.stack}`);
  reported = seen.length;
  return out;
}

/** For the test of this hook only: what it has recorded so far. */
export function unhandledSeen(): readonly { kind: string; test: string; stack: string }[] {
  return seen;
}

export const mochaHooks = {
  beforeAll(): void {
    listen();
  },
  beforeEach(this: Mocha.Context): void {
    listen();
    current = this.currentTest?.fullTitle() ?? "(unknown test)";
  },
  afterEach(this: Mocha.Context): void {
    // Mocha itself fails the test that was running (the strict flag makes a rejection an
    // uncaught exception); a hook failure here would skip the rest of the run, so this only
    // prints what was seen, with the stack, and the run fails in afterAll.
    for (const f of fresh()) console.error(`  ${f}`);
    current = "(between tests)";
  },
  afterAll(): void {
    ranAfterAll = true;
    files++;
    if (isMochaWorker) writeStats("unhandled", { files, lines: seen.map(firstLine) });
    const found = fresh();
    if (seen.length > failedFor) {
      const all = seen.slice(failedFor).map(firstLine);
      failedFor = seen.length;
      throw new Error(
        `the run saw ${all.length} unhandled rejection(s)/exception(s)${found.length ? "" : " (reported above)"}:\n${all.join("\n")}`,
      );
    }
    if (!isMochaWorker) console.log("  unhandled rejections and uncaught exceptions: 0");
  },
};

/**
 * The main process of a parallel run (where no root hook runs): what it and every worker saw
 * (each file that saw one failed already). Checked when the run ends, before the reporter's
 * closing lines; a failure is thrown from the global teardown, which fails the run.
 */
let failure: Error | null = null;
let checkedRun = false;
function checkRun(): void {
  if (ranAfterAll || checkedRun || isMochaWorker) return; // a serial run: afterAll did it
  checkedRun = true;
  const workers = readStats<{ files: number; lines: string[] }>("unhandled");
  const lines = [...seen.map(firstLine), ...workers.flatMap((w) => w.lines)];
  if (lines.length > 0) {
    failure = new Error(`the run saw ${lines.length} unhandled rejection(s)/exception(s):\n${lines.join("\n")}`);
    console.log(`  ${failure.message}`);
    return;
  }
  const files = workers.reduce((n, w) => n + w.files, 0);
  console.log(
    `  unhandled rejections and uncaught exceptions: 0${workers.length > 0 ? ` (${files} files in ${workers.length} worker processes)` : ""}`,
  );
}

export function mochaGlobalSetup(this: {
  prependListener?: (event: string, f: () => void) => void;
  _opts?: { dryRun?: boolean };
}): void {
  if (this?._opts?.dryRun) checkedRun = true; // nothing runs: nothing to check or print (--dry-run --reporter json stays JSON)
  this?.prependListener?.("end", checkRun); // the runner: its "end" comes before the reporter's summary
}

export function mochaGlobalTeardown(): void {
  checkRun();
  if (failure) throw failure;
}
