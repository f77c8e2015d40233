/**
 * Before a run (the main mocha process, once): one line for each system program a test needs that
 * this machine lacks, with its install command (test/helpers/programs.ts,
 * docs/testing.md#programs-the-suite-needs). The tests that need it are then pending, or fail
 * under CI=true.
 */
import { type Program, missingLine, programPath } from "../helpers/programs.js";

export function mochaGlobalSetup(): void {
  for (const program of ["redis-server", "chromium"] as Program[]) {
    if (programPath(program) === null) console.log(`  ${missingLine(program)}`);
  }
}
