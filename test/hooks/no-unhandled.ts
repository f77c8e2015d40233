/**
 * "No rejection or exception of ours may go unhandled" (docs/performance.md#reliability-checks: nothing of ours crashes the
 * runtime), checked over the whole run (a mocha root hook plugin, loaded by .mocharc.json).
 *
 * Mocha runs with `--unhandled-rejections=strict` (.mocharc.json `node-option`), and this file
 * puts the same flag into NODE_OPTIONS, so every process a test starts (the demo's Node-RED,
 * the Redis flow runtime, crash and store children) runs with it too. Here every unhandled
 * rejection and uncaught exception is recorded with its stack and printed after the test during
 * which it happened (which mocha fails itself), and the run fails at the end if any was seen at
 * all (also one that surfaced between tests).
 */
const seen: { kind: string; test: string; stack: string }[] = [];
let current = "(between tests)";
let reported = 0;

function record(kind: string, reason: unknown): void {
  const stack = reason instanceof Error ? (reason.stack ?? `${reason.name}: ${reason.message}`) : String(reason);
  seen.push({ kind, test: current, stack });
}

if (!(process.env.NODE_OPTIONS ?? "").includes("--unhandled-rejections=strict")) {
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --unhandled-rejections=strict`.trim();
}
process.on("unhandledRejection", (reason) => record("unhandled rejection", reason));
// With --unhandled-rejections=strict an unhandled rejection arrives here as an exception.
process.prependListener("uncaughtException", (err, origin) => record(origin === "unhandledRejection" ? "unhandled rejection" : "uncaught exception", err));

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
  beforeEach(this: Mocha.Context): void {
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
    const found = fresh();
    if (seen.length > 0) {
      const all = seen.map((s) => `${s.kind} during "${s.test}": ${s.stack.split("\n")[0]}`);
      throw new Error(`the run saw ${seen.length} unhandled rejection(s)/exception(s)${found.length ? "" : " (reported above)"}:\n${all.join("\n")}`);
    }
    console.log("  unhandled rejections and uncaught exceptions: 0");
  },
};
