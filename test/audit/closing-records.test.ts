/**
 * Every message that reached door-unlock gets its closing record (docs/audit-log.md#records), on
 * the account alone (no Node-RED): Account.close() and destroy() write the unlock-result of every
 * unlock in flight, also when the device answers after the close bound
 * (docs/audit-log.md#never-short-a-record).
 *
 * The simulator over loopback; PUTs are counted at the simulator; never timed. The same rules in a
 * Node-RED runtime (an account node deleted, redeployed or reconnected, the runtime stopped, the
 * retries of door-unlock) are in test/nodes/door-unlock-closing-records.test.ts; the writer's side
 * of a failed closing record (inLog at every byte) in test/audit/closing-record-in-log.test.ts.
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import { Account } from "../../src/account/account.js";
import { verify } from "../../src/audit/chain.js";
import { startSimulator } from "../../src/simulator/index.js";
import { performUnlock } from "../../src/unlock/unlock.js";
import { jsonLines } from "../helpers/audit-faults.js";
import { freshUserDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";
import { DEMO_PHONE } from "../helpers/session.js";

describe("Never short a record: Account.close() and destroy() write the unlock-result of every unlock in flight (docs/audit-log.md#never-short-a-record)", function () {
  this.timeout(30000);

  for (const how of ["close", "destroy"] as const) {
    it(`${how}() while a PUT is held at the service: the result record is written before the log closes`, async () => {
      const sim = await startSimulator({ rateLimit: false });
      const dir = freshUserDir();
      const audit = path.join(dir, "a.jsonl");
      const account = new Account({
        baseUrl: sim.url,
        credentials: DEMO_PHONE,
        tokenFile: path.join(dir, "s.json"),
        auditLogPath: audit,
        client: { random: () => 0 },
      });
      try {
        await account.start();
        await account.devices();
        sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 1000 });
        const unlocking = performUnlock(
          account,
          {
            msgDeviceId: 101,
            msgDoor: undefined,
            msgLockId: undefined,
            msgActor: undefined,
            msgRetain: undefined,
            msgid: "held",
          },
          { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true },
        );
        // Held at the service: inFlight() lists it (requests() lists only what was answered).
        await until(
          "the PUT held at the service",
          () => sim.control.inFlight().filter((r) => r.operation === "unlockDevice").length === 1,
          5000,
          2,
        );
        assert.equal(account.unlocksInFlight, 1);
        await account[how]();
        assert.deepEqual(
          jsonLines(audit).map((r) => [r.type, r.outcome]),
          [
            ["unlock-attempt", undefined],
            ["unlock-result", "accepted"],
          ],
          "the result is on disk when close returns",
        );
        assert.equal((await unlocking).outcome, "accepted");
      } finally {
        await account.close().catch(() => undefined);
        await sim.close();
      }
    });
  }
});

// Found by the review of issue 13's audit log (87af7f3); fixed in 5da4fe3.
describe("Never short a record: also when the device answers after the close bound (docs/audit-log.md#never-short-a-record)", function () {
  this.timeout(30000);

  // docs/audit-log.md#never-short-a-record: every message that reached the service gets its unlock-result, also
  // when the account node is deleted or redeployed while the unlock is in flight. The close
  // waits at most a bound (10 s in Node-RED, below the client's 20 s answer time-out); a device
  // slower than the bound had its result refused by the closed log.
  for (const how of ["close", "destroy"] as const) {
    it(`every message that reached the service gets its unlock-result: ${how}() whose drain bound expires before the device answers`, async () => {
      const sim = await startSimulator({ host: "127.0.0.1", port: 0, rateLimit: false });
      const dir = freshUserDir();
      const audit = path.join(dir, "a.jsonl");
      const account = new Account({
        baseUrl: sim.url,
        credentials: DEMO_PHONE,
        tokenFile: path.join(dir, "s.json"),
        auditLogPath: audit,
        client: { random: () => 0 },
      });
      try {
        await account.start();
        await account.devices();
        sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 800 });
        const unlocking = performUnlock(
          account,
          {
            msgDeviceId: 101,
            msgDoor: undefined,
            msgLockId: undefined,
            msgActor: undefined,
            msgRetain: undefined,
            msgid: "slow",
          },
          { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true },
        );
        // Held at the service: in flight there (the request log lists a request only once answered).
        await until(
          "the PUT held at the service",
          () => sim.control.inFlight().some((e) => e.operation === "unlockDevice" && e.fault === "latency"),
          5000,
          2,
        );
        // The bound expires while the service still holds the PUT (forced: 50 ms < 800 ms).
        await account[how](50);
        await unlocking.catch(() => undefined);
        await until(
          "the result record",
          () => jsonLines(audit).some((r) => r.type === "unlock-result" && r.msgid === "slow"),
          3000,
          10,
        ).catch(() => undefined);
        const mine = jsonLines(audit).filter((r) => r.msgid === "slow");
        assert.deepEqual(
          mine.map((r) => r.type),
          ["unlock-attempt", "unlock-result"],
          "the PUT reached the service: its result is in the log",
        );
        assert.equal(sim.control.requests({ operation: "unlockDevice" }).length, 1);
        const report = await verify([audit]);
        assert.equal(report.ok, true, report.message);
      } finally {
        await account.close(0).catch(() => undefined);
        await sim.close();
      }
    });
  }
});
