/**
 * Break review of 531ad03 (closeWith: an unlock's closing record appended again, CLOSING_TRIES
 * batches at most; AuditRecordLost on door-unlock's done()). Real Node-RED runtime and the
 * simulator over loopback; faults forced with patched FileHandle.prototype methods.
 *
 * Confirmed defects (tests not named "held: ..."):
 * 1. fsync of the batch carrying an unlock-result fails after the whole write and the writer's
 *    cut-back (ftruncate) fails too: the writer keeps the bytes and continues the chain after them
 *    but rejects the caller; closeWith appends the record again: two unlock-result records for
 *    one message (the chain verifies). Before 531ad03 the rejection was swallowed (one record).
 * 2. A frozen message (outcome undeliverable) whose unlock-result is given up: done() carries only
 *    the undelivered error (`undelivered ?? recordLost`); the lost record is said nowhere.
 * Both failed on 531ad03 and pass after their fix: the writer's rejection says when a record's line
 * stayed in the log (AuditWriteFailed.inLog: the cut failed, or a copy took it) and closeWith does
 * not write that record again; door-unlock's done() carries both texts.
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import type { AuditLog } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import type { RunningSimulator } from "../src/simulator/index.js";
import {
  ALL_NODES, accountOf, catchModule, catchNode, helper, loadFlow, readAudit, startSim, tab, teardown, unlock,
  unlockFlow, unlockRequests, until, waitReady,
} from "./helpers/flow.js";
import { settle } from "./helpers/odd-messages.js";
import { enospc, eio, fileHandlePrototype, type P } from "./helpers/audit-faults.js";
import { unhandledSeen } from "./hooks/no-unhandled.js";

describe("break-25: review of 531ad03 (closing record retried, AuditRecordLost)", function () {
  this.timeout(60000);
  let sim: RunningSimulator;
  let proto: P;
  let orig: P;
  before(async () => {
    sim = await startSim({ rateLimit: false });
    ({ proto, orig } = await fileHandlePrototype());
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  afterEach(async () => {
    Object.assign(proto, orig);
    await teardown();
  });

  const isResultOf = (buf: unknown, msgid: string): boolean =>
    Buffer.isBuffer(buf) && buf.includes(`"msgid":"${msgid}"`) && buf.includes('"type":"unlock-result"');

  async function setup(): Promise<{ userDir: string; caught: any[] }> {
    const { userDir } = await loadFlow([...unlockFlow(sim.url), ...catchNode()], { nodes: [...ALL_NODES, catchModule] });
    await waitReady();
    sim.control.resetRequests();
    const caught: any[] = [];
    helper.getNode("caught").on("input", (m: any) => caught.push(m));
    return { userDir, caught };
  }

  it("the fsync of the unlock-result's batch fails after the whole write and the cut-back (truncate) fails too: the record stays in the log (chain continues after it), and closeWith appends it again: two unlock-result records for one message", async () => {
    const { userDir } = await setup();
    let armed = false;
    let cutFails = false;
    let syncFailed = 0;
    let truncFailed = 0;
    proto.write = function (this: unknown, ...a: unknown[]) {
      if (isResultOf(a[0], "b25-dup") && syncFailed === 0) armed = true;
      return orig.write.apply(this, a);
    };
    proto.sync = function (this: unknown, ...a: unknown[]) {
      if (armed) {
        armed = false;
        syncFailed += 1;
        cutFails = true;
        return Promise.reject(eio("fsync"));
      }
      return orig.sync.apply(this, a);
    };
    proto.truncate = function (this: unknown, ...a: unknown[]) {
      if (cutFails) {
        cutFails = false;
        truncFailed += 1;
        return Promise.reject(eio("ftruncate"));
      }
      return orig.truncate.apply(this, a);
    };
    const out = await unlock({ deviceId: 101, _msgid: "b25-dup" });
    assert.equal(out.msg.payload.outcome, "accepted");
    await until("a result record for b25-dup", () => readAudit(userDir).some((r) => r.msgid === "b25-dup" && r.type === "unlock-result"), 5000);
    // The next message: whatever was retried is written by now.
    await unlock({ deviceId: 101, _msgid: "b25-dup-next" });
    await until("next result", () => readAudit(userDir).some((r) => r.msgid === "b25-dup-next" && r.type === "unlock-result"), 5000);
    Object.assign(proto, orig);
    assert.equal(syncFailed, 1, "the fsync failed once");
    assert.equal(truncFailed, 1, "the cut-back failed once");
    assert.equal(unlockRequests(sim), 2);
    const v = await verify([path.join(userDir, "door-access-audit.jsonl")]);
    assert.equal(v.ok, true, v.message);
    const mine = readAudit(userDir).filter((r) => r.msgid === "b25-dup").map((r) => `${r.type}#${r.seq}`);
    assert.equal(mine.filter((t) => t.startsWith("unlock-result")).length, 1, `one unlock-result per message; the log has ${JSON.stringify(mine)}`);
  });

  it("held: the fsync of the unlock-result's batch fails after the whole write, the cut-back works: the record is written again once; one unlock-result, no error, verify passes", async () => {
    const { userDir, caught } = await setup();
    let armed = false;
    let syncFailed = 0;
    proto.write = function (this: unknown, ...a: unknown[]) {
      if (isResultOf(a[0], "b25-once") && syncFailed === 0) armed = true;
      return orig.write.apply(this, a);
    };
    proto.sync = function (this: unknown, ...a: unknown[]) {
      if (armed) {
        armed = false;
        syncFailed += 1;
        return Promise.reject(eio("fsync"));
      }
      return orig.sync.apply(this, a);
    };
    const out = await unlock({ deviceId: 101, _msgid: "b25-once" });
    assert.equal(out.msg.payload.outcome, "accepted");
    await until("result", () => readAudit(userDir).some((r) => r.msgid === "b25-once" && r.type === "unlock-result"), 5000);
    await unlock({ deviceId: 101, _msgid: "b25-once-next" });
    await until("next result", () => readAudit(userDir).some((r) => r.msgid === "b25-once-next" && r.type === "unlock-result"), 5000);
    await settle();
    assert.equal(syncFailed, 1);
    assert.deepEqual(readAudit(userDir).filter((r) => r.msgid === "b25-once").map((r) => r.type), ["unlock-attempt", "unlock-result"]);
    assert.equal(caught.length, 0);
    assert.equal((await verify([path.join(userDir, "door-access-audit.jsonl")])).ok, true);
  });

  it("a frozen message (outcome undeliverable) whose unlock-result cannot be written in any try: done()'s error names only the undelivered outcome; that the door was unlocked without an audit record is said nowhere", async () => {
    const { userDir, caught } = await setup();
    let failures = 0;
    proto.write = function (this: unknown, ...a: unknown[]) {
      if (isResultOf(a[0], "b25-frozen")) {
        failures += 1;
        return Promise.reject(eio("write"));
      }
      return orig.write.apply(this, a);
    };
    const errors: string[] = [];
    const node = helper.getNode("u1");
    const origError = node.error.bind(node);
    node.error = (e: any, m?: any) => { errors.push(String(e?.message ?? e)); return origError(e, m); };
    node.receive(Object.freeze({ _msgid: "b25-frozen", deviceId: 101 }));
    await until("the error on the Catch node", () => caught.length > 0, 8000);
    await settle();
    Object.assign(proto, orig);
    assert.equal(failures, 3, "three tries, all failed");
    assert.equal(unlockRequests(sim), 1);
    assert.deepEqual(readAudit(userDir).filter((r) => r.msgid === "b25-frozen").map((r) => r.type), ["unlock-attempt"]);
    assert.equal(caught.length, 1, "done() once");
    const said = caught.map((c) => c.error?.message).join(" | ");
    assert.match(said, /could not be set on the message/, "the undelivered outcome is said");
    assert.match(said, /unlock-result record could not be written to the audit log/, `the lost record is said too; done() said: ${said}`);
  });

  it("held: the account node deleted while the unlock-result is being retried (two tries failed): deploy returns after the third try wrote it; one record, one PUT, verify passes, done once without error", async () => {
    const { userDir, caught } = await setup();
    let failures = 0;
    let deploy: Promise<unknown> | null = null;
    let accNode: any = null;
    proto.write = function (this: unknown, ...a: unknown[]) {
      if (isResultOf(a[0], "b25-del") && failures < 2) {
        failures += 1;
        if (failures === 1) {
          accNode = accountOf();
          deploy = helper.setFlows([tab(), ...catchNode()], "full", {});
        }
        return Promise.reject(eio("write"));
      }
      return orig.write.apply(this, a);
    };
    const out = await unlock({ deviceId: 101, _msgid: "b25-del" });
    assert.equal(out.msg.payload.outcome, "accepted");
    await until("deploy started", () => deploy !== null, 8000);
    await deploy;
    assert.ok(accNode);
    assert.equal(failures, 2);
    assert.deepEqual(readAudit(userDir).filter((r) => r.msgid === "b25-del").map((r) => r.type), ["unlock-attempt", "unlock-result"], "written by the time the deploy returned");
    assert.equal(unlockRequests(sim), 1);
    assert.equal((await verify([path.join(userDir, "door-access-audit.jsonl")])).ok, true);
    assert.equal(caught.filter((c) => c._msgid === "b25-del").length, 0);
  });

  it("held: the account's audit log closed under the retries (append rejects at once): the message ends once, with AuditRecordLost, within bounded time; one PUT; no unhandled", async () => {
    const { caught } = await setup();
    const u0 = unhandledSeen().length;
    const log = accountOf().account.audit as AuditLog;
    let failures = 0;
    proto.write = function (this: unknown, ...a: unknown[]) {
      if (isResultOf(a[0], "b25-closed")) {
        failures += 1;
        void log.close();
        return Promise.reject(eio("write"));
      }
      return orig.write.apply(this, a);
    };
    const t0 = Date.now();
    const out = await unlock({ deviceId: 101, _msgid: "b25-closed" });
    assert.equal(out.msg.payload.outcome, "accepted");
    await until("error", () => caught.length > 0, 8000);
    await settle();
    await settle();
    assert.ok(Date.now() - t0 < 5000);
    assert.equal(failures, 1);
    assert.equal(caught.length, 1);
    assert.match(caught[0].error.message, /the door was unlocked \(accepted\), but its unlock-result record could not be written.*closed/);
    assert.equal(unlockRequests(sim), 1);
    assert.equal(unhandledSeen().length, u0);
  });

  it("held: ENOSPC on every write after the attempts went out (40 messages at once): every message ends once (40 errors on Catch, attempt or result), bounded tries per record, one PUT per sent message, no unhandled", async () => {
    const { caught } = await setup();
    const u0 = unhandledSeen().length;
    let resultWrites = 0;
    proto.write = function (this: unknown, ...a: unknown[]) {
      const buf = a[0];
      if (Buffer.isBuffer(buf) && buf.includes('"type":"unlock-result"')) {
        resultWrites += 1;
        return Promise.reject(enospc());
      }
      return orig.write.apply(this, a);
    };
    const outs: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) outs.push(unlock({ deviceId: 101, _msgid: `b25-nospc-${i}` }).catch(() => null));
    await Promise.all(outs);
    await until("every message ended", () => caught.length >= 40, 15000);
    await settle();
    const n = unlockRequests(sim);
    Object.assign(proto, orig);
    assert.equal(caught.length, 40, "done() once per message");
    assert.ok(n <= 40, `at most one PUT per message: ${n}`);
    assert.ok(resultWrites <= 3 * 40, `bounded tries: ${resultWrites} batch writes carrying results`);
    assert.equal(unhandledSeen().length, u0);
    const log = accountOf().account.audit as AuditLog;
    assert.equal((log as any).queue.length, 0, "nothing left queued");
  });
  it("held: an invalid message whose unlock-rejected record cannot be written in any try: nothing sent (0 PUT), output 2 has the outcome, done() once with 'nothing was sent (invalid-input)', three tries", async () => {
    const { userDir, caught } = await setup();
    let failures = 0;
    proto.write = function (this: unknown, ...a: unknown[]) {
      const buf = a[0];
      if (Buffer.isBuffer(buf) && buf.includes('"msgid":"b25-rej"') && buf.includes('"type":"unlock-rejected"')) {
        failures += 1;
        return Promise.reject(enospc());
      }
      return orig.write.apply(this, a);
    };
    const out = await unlock({ deviceId: "not-a-door", _msgid: "b25-rej" });
    assert.equal(out.port, 1);
    await until("error", () => caught.length > 0, 8000);
    await settle();
    assert.equal(failures, 3);
    assert.equal(caught.length, 1);
    assert.match(caught[0].error.message, /nothing was sent \(invalid-input\), but its unlock-rejected record could not be written/);
    assert.equal(unlockRequests(sim), 0);
    assert.equal(readAudit(userDir).filter((r) => r.msgid === "b25-rej").length, 0);
  });
});
