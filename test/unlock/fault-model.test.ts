/**
 * Property-based fault sequences (fast-check): random interleavings of valid and invalid
 * unlock and status messages, faults at the simulator (429, 500, 502, 503, 504, latency,
 * dropped connections), expired and revoked access tokens, superseding logins, refresh-token
 * expiry, redeploys, Reconnect pressed (also repeatedly, during a burst and a renewal), the
 * account deleted, device list edits (rename, renumber, remove, move, duplicate names), token
 * lifetimes from 1 min to 48 h and local clock jumps. After each run the invariants of
 * test/helpers/fault-model.ts are checked against the simulator's request log and the audit
 * file: no duplicate PUT, the door the message meant or none, bounded logins and refreshes,
 * halts only with cause; unhandled rejections fail the run (test/hooks/no-unhandled.ts). What it
 * checks is listed in docs/performance.md#reliability-checks.
 *
 * CI runs PROPERTY_RUNS (default 150) sequences; `npm run test:property-long` runs 1,000.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { runSequence, scenarioArb, type RunStats } from "../helpers/fault-model.js";

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);

/**
 * Counter-examples the property found, kept as fixed sequences. CI (Node 22, under load), seed
 * -1234900730: a list fetch retried by the client with a token our own Reconnect login had just
 * replaced met 401; the replay used the token renewed before that 401, another login (the
 * supersede) rejected it, and the account halted as superseded without a renewal after the 401.
 * It failed 1 run in 3 before the fix; it is run 6 times here.
 */
const COUNTER_EXAMPLES: { name: string; scenario: unknown }[] = [
  {
    name: "Reconnect during a burst renews before a retried call's 401; its replay's 401 is no proof of a takeover",
    scenario: {
      accessTtlSec: 60,
      actions: [
        { t: "fault", kind: "429", endpoint: "listUserDevices", count: 1 },
        { t: "reconnectDuringBurst", targets: [{ valid: false, input: { msgDeviceId: "101" } }], presses: 1 },
        {
          t: "reconnectDuringBurst",
          targets: [
            { valid: true, input: { msgDeviceId: 101 } },
            { valid: true, input: { msgDeviceId: 101 } },
          ],
          presses: 2,
        },
        { t: "fault", kind: "503", endpoint: "refreshToken", count: 2 },
        { t: "supersede" },
        { t: "editDoor", edit: { id: 101, newId: 9101 } },
        { t: "listRefresh" },
        { t: "fault", kind: "drop", endpoint: "unlockDevice", count: 1 },
        {
          t: "reconnectDuringBurst",
          targets: [
            { valid: true, input: {}, picked: { id: 102, name: "Back Door", location: "Main Street 1" } },
            { valid: true, input: { msgDeviceId: 999 } },
            { valid: true, input: { msgDoor: "Front Door" } },
          ],
          presses: 3,
        },
      ],
    },
  },
];

describe("Property counter-examples, replayed: a replay only follows a renewal (docs/session.md#a-401-and-its-replay)", function () {
  this.timeout(120_000);
  for (const c of COUNTER_EXAMPLES) {
    it(c.name, async () => {
      const stats: RunStats = {
        messages: 0,
        invalid: 0,
        faults: 0,
        puts: 0,
        invariantsChecked: 0,
        doorEdits: 0,
        operatorActions: 0,
        clockJumps: 0,
        runsWithRules: 0,
        denied: 0,
      };
      for (let i = 0; i < 6; i++) await runSequence(c.scenario as Parameters<typeof runSequence>[0], stats);
      assert.ok(stats.invariantsChecked >= 6, "the invariants were checked");
    });
  }
});

describe("Property: faults never duplicate, lose or leak an unlock (docs/performance.md#reliability-checks)", function () {
  this.timeout(Math.max(120_000, RUNS * 6_000));
  const stats: RunStats = {
    messages: 0,
    invalid: 0,
    faults: 0,
    puts: 0,
    invariantsChecked: 0,
    doorEdits: 0,
    operatorActions: 0,
    clockJumps: 0,
    runsWithRules: 0,
    denied: 0,
  };

  it(`holds for ${RUNS} generated fault sequences`, async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, (scenario) => runSequence(scenario, stats)),
      {
        numRuns: RUNS,
        seed: process.env.PROPERTY_SEED ? Number(process.env.PROPERTY_SEED) : undefined,
        endOnFailure: false,
        includeErrorInReport: true,
      },
    );
    assert.ok(stats.messages > RUNS, "messages were sent");
    assert.ok(stats.puts > 0, "some unlocks reached the simulator");
    console.log(
      `    property runs: ${RUNS}, messages: ${stats.messages} (${stats.invalid} invalid), faults injected: ${stats.faults}, door edits: ${stats.doorEdits}, operator actions: ${stats.operatorActions}, clock jumps: ${stats.clockJumps}, runs with access rules: ${stats.runsWithRules} (${stats.denied} messages denied), PUTs: ${stats.puts}, invariant checks: ${stats.invariantsChecked}`,
    );
  });
});
