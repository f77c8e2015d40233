/**
 * The audit log as door-unlock writes it in a real Node-RED 4 runtime against the simulator:
 * attempt before the request and result after it, one record for a rejected input, no
 * secret in the file, and no unlock at all when the audit file cannot be written.
 */
import { strict as assert } from "node:assert";
import { mkdirSync, readFileSync, statSync } from "node:fs";
import * as path from "node:path";
import type { RunningSimulator } from "../src/simulator/index.js";
import {
  DEMO_ACCOUNT, accountOf, assertAccepted, assertFailed, freshUserDir, loadFlow, readAudit, startSim, teardown, unlock, unlockFlow,
  unlockRequests, until, waitReady,
} from "./helpers/flow.js";

/**
 * The records of one message once its closing record (unlock-result or unlock-rejected) is on
 * disk: the node sends its output first and flushes that record right after.
 */
async function recordsOf(userDir: string, msgid: string, file?: string): Promise<any[]> {
  const mine = () => (file ? readAudit(userDir, file) : readAudit(userDir)).filter((r) => r.msgid === msgid);
  await until(`the closing audit record of ${msgid}`, () => mine().some((r) => r.type === "unlock-result" || r.type === "unlock-rejected"), 5000, 2);
  return mine();
}

describe("door-unlock audit log (Node-RED runtime + simulator)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;

  before(async () => {
    sim = await startSim();
    ({ userDir } = await loadFlow(unlockFlow(sim.url, { actor: "flow-actor" })));
    await waitReady();
  });
  after(async () => {
    await teardown();
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });

  it("accepted: an unlock-attempt then an unlock-result for the same msgid, in the default file of the user directory (mode 0600)", async () => {
    assertAccepted(await unlock({ deviceId: 104, lockId: 2, _msgid: "audit-ok" }));
    const mine = await recordsOf(userDir, "audit-ok");
    assert.deepEqual(mine.map((r) => r.type), ["unlock-attempt", "unlock-result"]);
    const [attempt, result] = mine;
    assert.equal(attempt.actor, "flow-actor");
    assert.equal(attempt.deviceId, 104);
    assert.equal(attempt.lockId, 2);
    assert.equal(attempt.door, "Loading Bay");
    assert.ok(!Number.isNaN(Date.parse(attempt.ts)));
    assert.equal(result.outcome, "accepted");
    assert.equal(result.status, 200);
    assert.ok(Date.parse(result.ts) >= Date.parse(attempt.ts));
    assert.equal(statSync(path.join(userDir, "door-access-audit.jsonl")).mode & 0o777, 0o600);
  });

  it("the attempt record is on disk before the request reaches the service", async () => {
    const executed = sim.control.device(101).unlocks.length;
    // The PUT is held 500 ms at the service before it is executed.
    sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 500 });
    const pending = unlock({ deviceId: 101, _msgid: "audit-early" });
    await until("the attempt record", () => readAudit(userDir).some((r) => r.msgid === "audit-early"), 5000, 2);
    const early = readAudit(userDir).filter((r) => r.msgid === "audit-early");
    assert.deepEqual(early.map((r) => r.type), ["unlock-attempt"], "attempt written, result not yet");
    assert.equal(sim.control.device(101).unlocks.length, executed, "the service has not executed it yet");
    assertAccepted(await pending);
    assert.deepEqual((await recordsOf(userDir, "audit-early")).map((r) => r.type), ["unlock-attempt", "unlock-result"]);
    const [put] = sim.control.requests({ operation: "unlockDevice" });
    assert.ok(Date.parse(early[0].ts) <= put.startedAt, "the attempt's timestamp is not later than the PUT's arrival");
    assert.equal(sim.control.device(101).unlocks.length, executed + 1);
  });

  it("a failed unlock: attempt then result with the outcome and status", async () => {
    assertFailed(await unlock({ deviceId: 105, _msgid: "audit-offline" }), "offline", 503);
    const mine = await recordsOf(userDir, "audit-offline");
    assert.deepEqual(mine.map((r) => [r.type, r.outcome ?? null, r.status ?? null]), [["unlock-attempt", null, null], ["unlock-result", "offline", 503]]);
  });

  it("the 401 replay has its own attempt record: attempt, attempt, result", async () => {
    sim.control.expireAccessToken("demo");
    assertAccepted(await unlock({ deviceId: 101, _msgid: "audit-401" }));
    assert.equal(unlockRequests(sim), 2);
    assert.deepEqual((await recordsOf(userDir, "audit-401")).map((r) => r.type), ["unlock-attempt", "unlock-attempt", "unlock-result"]);
  });

  it("a rejected input gets exactly one unlock-rejected record and nothing else", async () => {
    assertFailed(await unlock({ deviceId: "101", _msgid: "audit-bad" }), "invalid-input", null);
    assertFailed(await unlock({ deviceId: 101, retain: true, _msgid: "audit-retained" }), "retained-rejected", null);
    const bad = await recordsOf(userDir, "audit-bad");
    assert.equal(bad.length, 1);
    assert.equal(bad[0].type, "unlock-rejected");
    assert.equal(bad[0].outcome, "invalid-input");
    assert.match(bad[0].reason, /deviceId/);
    const retained = await recordsOf(userDir, "audit-retained");
    assert.deepEqual(retained.map((r) => [r.type, r.outcome]), [["unlock-rejected", "retained-rejected"]]);
    assert.equal(unlockRequests(sim), 0);
  });

  it("no token, password or phone number anywhere in the audit file", () => {
    const text = readFileSync(path.join(userDir, "door-access-audit.jsonl"), "utf8");
    const pair = accountOf().account.session.pair as { accessToken: string; refreshToken: string };
    assert.ok(text.length > 0);
    assert.ok(!text.includes(pair.accessToken) && !text.includes(pair.refreshToken));
    assert.ok(!/eyJ[A-Za-z0-9_-]{10,}/.test(text), "nothing JWT-like");
    assert.ok(!text.includes(DEMO_ACCOUNT.password));
    assert.ok(!text.includes(DEMO_ACCOUNT.phoneNumber) && !text.includes(DEMO_ACCOUNT.phoneNumber.slice(1)));
    for (const line of text.trim().split("\n")) assert.doesNotThrow(() => JSON.parse(line), "one JSON object per line");
  });
});

describe("door-unlock audit log: configured path and unwritable file (Node-RED runtime + simulator)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  before(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
  });
  after(async () => {
    await sim.close();
  });

  it("a relative auditLog path is resolved in the Node-RED user directory", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url, {}, { auditLog: "logs/doors.jsonl" }));
    await waitReady();
    assertAccepted(await unlock({ deviceId: 101, _msgid: "custom-path" }));
    assert.deepEqual((await recordsOf(userDir, "custom-path", "logs/doors.jsonl")).map((r) => r.type), ["unlock-attempt", "unlock-result"]);
    assert.equal(readAudit(userDir).length, 0, "nothing in the default file");
  });

  it("an unwritable audit file (the path is a directory): outcome error, ZERO PUTs at the service", async () => {
    const userDir = freshUserDir();
    mkdirSync(path.join(userDir, "audit-is-a-dir"));
    await loadFlow(unlockFlow(sim.url, {}, { auditLog: "audit-is-a-dir" }), { userDir });
    await waitReady();
    sim.control.resetRequests();
    const executedBefore = sim.control.device(101).unlocks.length;
    const p = assertFailed(await unlock({ deviceId: 101 }), "error", null);
    assert.match(p.message, /audit/);
    assert.equal(p.mayHaveOpened, false);
    assertFailed(await unlock({ deviceId: 104, lockId: 1 }), "error", null);
    assert.equal(unlockRequests(sim), 0);
    assert.equal(sim.control.device(101).unlocks.length, executedBefore);
  });
});
