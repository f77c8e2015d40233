/**
 * Property-based fault sequences (fast-check): random interleavings of valid and invalid
 * unlock and status messages, faults at the simulator (429, 500, 502, 503, 504, latency,
 * dropped connections), expired and revoked access tokens, superseding logins, refresh-token
 * expiry, redeploys, Reconnect pressed (also repeatedly, during a burst and a renewal), the
 * account deleted, device list edits (rename, renumber, remove, move, duplicate names), token
 * lifetimes from 1 min to 48 h and local clock jumps. After each run the invariants of
 * test/helpers/fault-model.ts are checked against the simulator's request log and the audit
 * file: no duplicate PUT, the door the message meant or none, bounded logins and refreshes,
 * halts only with cause; unhandled rejections fail the run (test/hooks/no-unhandled.ts).
 *
 * CI runs PROPERTY_RUNS (default 150) sequences; `npm run test:property-long` runs 1,000.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { runSequence, scenarioArb, type RunStats } from "./helpers/fault-model.js";

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);

describe("property: faults never duplicate, lose or leak an unlock", function () {
  this.timeout(Math.max(120_000, RUNS * 6_000));
  const stats: RunStats = { messages: 0, invalid: 0, faults: 0, puts: 0, invariantsChecked: 0, doorEdits: 0, operatorActions: 0, clockJumps: 0 };

  it(`holds for ${RUNS} generated fault sequences`, async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, (scenario) => runSequence(scenario, stats)),
      { numRuns: RUNS, seed: process.env.PROPERTY_SEED ? Number(process.env.PROPERTY_SEED) : undefined, endOnFailure: false },
    );
    assert.ok(stats.messages > RUNS, "messages were sent");
    assert.ok(stats.puts > 0, "some unlocks reached the simulator");
    console.log(`    property runs: ${RUNS}, messages: ${stats.messages} (${stats.invalid} invalid), faults injected: ${stats.faults}, door edits: ${stats.doorEdits}, operator actions: ${stats.operatorActions}, clock jumps: ${stats.clockJumps}, PUTs: ${stats.puts}, invariant checks: ${stats.invariantsChecked}`);
  });
});
