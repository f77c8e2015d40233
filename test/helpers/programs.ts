/**
 * The system programs some tests need and npm does not install (docs/testing.md#programs-the-suite-needs):
 * redis-server (the Redis store tests start their own) and Debian's chromium (the browser tests).
 *
 * Where one is missing, the tests that need it are pending (mocha's `this.skip()` in their
 * `before` hook) and the run prints one line naming it and its install command
 * (test/hooks/programs.ts); under `CI=true` (what `.ci/run` sets) they are required and fail.
 */
import * as fs from "node:fs";
import * as path from "node:path";

export type Program = "redis-server" | "chromium";

/** Debian's chromium, or the file DOOR_TEST_CHROMIUM names (another build, or a path that is not there to try the missing case). */
export function chromiumPath(): string {
  return process.env.DOOR_TEST_CHROMIUM || "/usr/bin/chromium";
}

/** The first executable `name` on PATH, or null. */
export function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch {
      // not here
    }
  }
  return null;
}

/** Where the program is, or null when it is missing. */
export function programPath(program: Program): string | null {
  if (program === "redis-server") return onPath("redis-server");
  const file = chromiumPath();
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return file;
  } catch {
    return null;
  }
}

const NEEDED_BY: Record<Program, string> = {
  "redis-server": "the Redis store tests",
  chromium: "the browser tests",
};

/** Whether a missing program fails the run instead of leaving its tests pending. */
export function programsRequired(): boolean {
  return process.env.CI === "true";
}

/** The one line a run prints for a missing program: what it is for and how to install it. */
export function missingLine(program: Program): string {
  const where = program === "chromium" ? `${chromiumPath()} is missing` : "redis-server is not on PATH";
  const then = programsRequired() ? "they are required under CI=true and fail" : "they are pending";
  return `${where}: ${NEEDED_BY[program]} need it, ${then} (apt-get update && apt-get install -y ${program})`;
}

/**
 * In a `before` hook (`function () { needProgram(this, "redis-server"); }`): nothing when the
 * program is there; else the hook's tests are pending, or, under CI=true, the hook fails.
 */
export function needProgram(ctx: Mocha.Context, program: Program): void {
  if (programPath(program) !== null) return;
  if (programsRequired()) throw new Error(missingLine(program));
  ctx.skip();
}
