/**
 * The audit log as door-unlock writes it in a real Node-RED runtime against the simulator
 * (docs/audit-log.md#records): an attempt record before the request and a result after it, one
 * record for a refused input, the replay mark, no secret in the file, no unlock at all when the
 * audit file cannot be written; rotation and logrotate under a stream of unlocks, two accounts on
 * one path (docs/audit-log.md#rotation); and the audit paths an account refuses
 * (docs/security.md#files-the-audit-log-may-never-be).
 *
 * PUTs are counted in the simulator's request log, never in our code. Races are forced, not
 * timed: the writer's "record" event fires synchronously after a batch is durable and before the
 * next one starts, so a listener that renames or truncates acts between two batches.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { mkdirSync, readFileSync, statSync } from "node:fs";
import * as path from "node:path";
import * as os from "node:os";
import * as zlib from "node:zlib";
import { auditRecordEvents } from "../../src/audit/audit-log.js";
import { verify } from "../../src/audit/chain.js";
import { checkAuditPath } from "../../src/audit/paths.js";
import { listLogFiles } from "../../src/audit/reader.js";
import { type RunningSimulator } from "../../src/simulator/index.js";
import { REPO_ROOT } from "../../scripts/node-red-process.js";
import { jsonLines } from "../helpers/audit-faults.js";
import { useSim, useSimWithFileFaults } from "../helpers/audit-runtime.js";
import {
  DEMO_ACCOUNT,
  accountOf,
  assertAccepted,
  assertFailed,
  freshUserDir,
  loadFlow,
  readAudit,
  startSim,
  teardown,
  unlock,
  unlockFlow,
  unlockRequests,
  until,
  waitReady,
  helper,
  lastStatus,
  CREDS,
  accountNode,
  helperNodes,
  tab,
  unlockNode,
  logins,
} from "../helpers/flow.js";
import { filesNodeRedWrites, namesInNodeRedSource } from "../helpers/node-red-files.js";
import { settle } from "../helpers/odd-messages.js";

/**
 * The records of one message once its closing record (unlock-result or unlock-rejected) is on
 * disk: the node sends its output first and flushes that record right after.
 */
async function recordsOf(userDir: string, msgid: string, file?: string): Promise<any[]> {
  const mine = () => (file ? readAudit(userDir, file) : readAudit(userDir)).filter((r) => r.msgid === msgid);
  await until(
    `the closing audit record of ${msgid}`,
    () => mine().some((r) => r.type === "unlock-result" || r.type === "unlock-rejected"),
    5000,
    2,
  );
  return mine();
}

/** Sends `n` unlocks to u1, `width` in flight at a time; returns their msgids. */
async function stream(n: number, width: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += width) {
    const chunk = Array.from({ length: Math.min(width, n - i) }, (_, k) => `${prefix}-${i + k}`);
    ids.push(...chunk);
    const outs = await Promise.all(chunk.map((id) => unlock({ deviceId: 101, _msgid: id })));
    outs.forEach(assertAccepted);
  }
  return ids;
}

/** Waits until every message has its closing record somewhere in the log's files. */
async function settled(live: string, ids: string[]): Promise<void> {
  await until(
    "every result record",
    () => {
      const done = new Set<string>();
      for (const f of [...fs.readdirSync(path.dirname(live))]
        .map((n) => path.join(path.dirname(live), n))
        .filter((f) => f.startsWith(live) && !f.endsWith(".gz"))) {
        for (const r of jsonLines(f)) if (r.type === "unlock-result") done.add(r.msgid);
      }
      return ids.every((id) => done.has(id));
    },
    15000,
    20,
  );
}

describe("door-unlock writes an attempt before the request and a result after it, one unlock-rejected for a refused input, no secret (docs/audit-log.md#records)", function () {
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
    assert.deepEqual(
      mine.map((r) => r.type),
      ["unlock-attempt", "unlock-result"],
    );
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
    assert.deepEqual(
      early.map((r) => r.type),
      ["unlock-attempt"],
      "attempt written, result not yet",
    );
    assert.equal(sim.control.device(101).unlocks.length, executed, "the service has not executed it yet");
    assertAccepted(await pending);
    assert.deepEqual(
      (await recordsOf(userDir, "audit-early")).map((r) => r.type),
      ["unlock-attempt", "unlock-result"],
    );
    const [put] = sim.control.requests({ operation: "unlockDevice" });
    assert.ok(Date.parse(early[0].ts) <= put.startedAt, "the attempt's timestamp is not later than the PUT's arrival");
    assert.equal(sim.control.device(101).unlocks.length, executed + 1);
  });

  it("a failed unlock: attempt then result with the outcome and status", async () => {
    assertFailed(await unlock({ deviceId: 105, _msgid: "audit-offline" }), "offline", 503);
    const mine = await recordsOf(userDir, "audit-offline");
    assert.deepEqual(
      mine.map((r) => [r.type, r.outcome ?? null, r.status ?? null]),
      [
        ["unlock-attempt", null, null],
        ["unlock-result", "offline", 503],
      ],
    );
  });

  it("the 401 replay has its own attempt record: attempt, attempt, result", async () => {
    sim.control.expireAccessToken("demo");
    assertAccepted(await unlock({ deviceId: 101, _msgid: "audit-401" }));
    assert.equal(unlockRequests(sim), 2);
    assert.deepEqual(
      (await recordsOf(userDir, "audit-401")).map((r) => r.type),
      ["unlock-attempt", "unlock-attempt", "unlock-result"],
    );
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
    assert.deepEqual(
      retained.map((r) => [r.type, r.outcome]),
      [["unlock-rejected", "retained-rejected"]],
    );
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

describe("door-unlock's replay after a 401 has its own attempt record, marked replay (docs/audit-log.md#records)", function () {
  this.timeout(60000);
  let sim: RunningSimulator;
  useSimWithFileFaults((t) => ({ sim } = t));

  it("a 401, a refresh and the single replay: two PUTs; records attempt, attempt (replay: true), result; status green at the end", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url));
    await waitReady();
    sim.control.resetRequests();
    sim.control.revokeAccessToken("demo");
    const out = await unlock({ deviceId: 101, _msgid: "b24-401" });
    assert.equal(out.msg.payload.outcome, "accepted");
    await until(
      "the result record",
      () => readAudit(userDir).some((r) => r.msgid === "b24-401" && r.type === "unlock-result"),
      5000,
    );
    assert.equal(unlockRequests(sim), 2);
    assert.deepEqual(
      readAudit(userDir)
        .filter((r) => r.msgid === "b24-401")
        .map((r) => [r.type, r.replay ?? false]),
      [
        ["unlock-attempt", false],
        ["unlock-attempt", true],
        ["unlock-result", false],
      ],
    );
    await settle();
    assert.equal(lastStatus(helper.getNode("u1"))?.fill, "green");
  });
});

describe("An audit file that cannot be written: no unlock is sent (docs/audit-log.md#records)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  useSim((s) => (sim = s)); // its afterEach also clears the simulator's faults: none is injected here

  it("a relative auditLog path is resolved in the Node-RED user directory", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url, {}, { auditLog: "logs/doors.jsonl" }));
    await waitReady();
    assertAccepted(await unlock({ deviceId: 101, _msgid: "custom-path" }));
    assert.deepEqual(
      (await recordsOf(userDir, "custom-path", "logs/doors.jsonl")).map((r) => r.type),
      ["unlock-attempt", "unlock-result"],
    );
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

describe("An audit path that becomes a directory between unlocks: nothing is sent, the error says why (docs/audit-log.md#records)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  useSim((s) => (sim = s), { rateLimit: false });

  it("the audit path becomes a directory between unlocks: nothing is sent, the error says the audit log could not be written", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url, {}, { auditLog: "d/audit.jsonl" }));
    await waitReady();
    const live = path.join(userDir, "d", "audit.jsonl");
    const ok = await unlock({ deviceId: 101, _msgid: "before" });
    assert.equal(ok.port, 0);
    sim.control.resetRequests();
    fs.renameSync(live, live + ".old");
    fs.mkdirSync(live);
    const out = await unlock({ deviceId: 101, _msgid: "after" });
    assert.equal(out.port, 1);
    assert.match(out.msg.payload.message, /not sent: the audit log could not be written.*EISDIR/);
    assert.equal(unlockRequests(sim), 0, "no PUT without its attempt record");
  });
});

describe("In a runtime: rotation, logrotate, copytruncate, the replay mark and one chain per path (docs/audit-log.md#rotation)", function () {
  this.timeout(120000);
  let sim: RunningSimulator;
  useSim((s) => (sim = s), { rateLimit: false });

  // docs/audit-log.md#rotation (auditMaxBytes, auditKeep) and docs/audit-log.md#the-chain.
  it("2,000 unlocks with a small auditMaxBytes: every PUT has its attempt record in some file, verify passes over all files, seq has no gap", async () => {
    const { userDir } = await loadFlow(
      unlockFlow(sim.url, {}, { auditLog: "rot/audit.jsonl", auditMaxBytes: "32768", auditKeep: "1000" }),
    );
    await waitReady();
    sim.control.resetRequests();
    const live = path.join(userDir, "rot", "audit.jsonl");
    const ids = await stream(2000, 25, "rot");
    await settled(live, ids);
    const files = await listLogFiles(live);
    assert.ok(files.length >= 10, `rotated into several files, got ${files.length}`);
    for (const f of files) assert.ok(fs.statSync(f).size <= 32768, `${f}: ${fs.statSync(f).size} bytes`);
    const all = files.flatMap(jsonLines);
    all.forEach((r, k) => assert.equal(r.seq, k + 1, "seq 1, 2, ... across the files, no gap"));
    const attempts = all.filter((r) => r.type === "unlock-attempt");
    const puts = sim.control.requests({ operation: "unlockDevice" });
    assert.equal(puts.length, 2000, "one PUT per message at the service");
    assert.equal(attempts.length, puts.length, "as many attempt records as PUTs");
    assert.deepEqual(new Set(attempts.map((r) => r.msgid)), new Set(ids), "each message's attempt is in some file");
    const v = await verify(files);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.firstSeq, 1);
    assert.equal(v.lastSeq, all.length);
    assert.equal(accountOf().account.audit.stats().failedRecords, 0);
  });

  // docs/security.md#files-the-audit-log-may-never-be
  it("another program's file at <name>.1: unlocks go on, each audited in the live file; the file stays as it is; the runtime log warns once that the log is not rotated", async () => {
    const userDir = freshUserDir();
    fs.mkdirSync(path.join(userDir, "rot"));
    const live = path.join(userDir, "rot", "audit.jsonl");
    const foreign = "someone else's data\n";
    fs.writeFileSync(`${live}.1`, foreign);
    await loadFlow(unlockFlow(sim.url, {}, { auditLog: "rot/audit.jsonl", auditMaxBytes: "2000", auditKeep: "3" }), {
      userDir,
    });
    await waitReady();
    await stream(30, 1, "blocked");
    await until("30 result records", () => jsonLines(live).filter((r) => r.type === "unlock-result").length === 30);
    assert.equal(fs.readFileSync(`${live}.1`, "utf8"), foreign);
    assert.ok(!fs.existsSync(`${live}.2`), "nothing shifted");
    const all = jsonLines(live);
    all.forEach((r, k) => assert.equal(r.seq, k + 1));
    assert.equal(all.filter((r) => r.type === "unlock-attempt").length, 30);
    assert.equal((await verify([live])).ok, true);
    const warned = helper
      .log()
      .getCalls()
      .map((c: any) => c.args[0])
      .filter((m: any) => typeof m?.msg === "string" && /not rotated/.test(m.msg));
    assert.equal(warned.length, 1, JSON.stringify(warned));
    assert.ok(warned[0].msg.includes(`${live}.1`), warned[0].msg);
  });

  it("logrotate mid-stream (rename, compress, delete): no record goes to the renamed file after its rename; the chain continues in the new file", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url, {}, { auditLog: "lr.jsonl" }));
    await waitReady();
    sim.control.resetRequests();
    const live = path.join(userDir, "lr.jsonl");
    const filePath = accountOf().account.audit.filePath;
    let renamedAt = 0;
    const listener = (file: string, line: string) => {
      const seq = JSON.parse(line).seq as number;
      if (file !== filePath || renamedAt || seq < 150) return;
      renamedAt = seq;
      fs.renameSync(live, `${live}.1`); // logrotate: rename between two batches
    };
    auditRecordEvents.on("record", listener);
    let ids: string[];
    try {
      ids = await stream(200, 10, "lr");
      await settled(live, ids);
    } finally {
      auditRecordEvents.off("record", listener);
    }
    const renamed = jsonLines(`${live}.1`);
    assert.ok(renamedAt > 0);
    // The renamed file ends where it was renamed: a record of the same batch may follow the
    // listener's one, none of a later batch.
    const lastInRenamed = renamed[renamed.length - 1].seq;
    assert.ok(lastInRenamed >= renamedAt);
    const fresh = jsonLines(live);
    assert.equal(fresh[0].seq, lastInRenamed + 1, "the new file continues the chain");
    // ... compress and delete.
    fs.writeFileSync(`${live}.1.gz`, zlib.gzipSync(fs.readFileSync(`${live}.1`)));
    fs.rmSync(`${live}.1`);
    const restored = path.join(userDir, "restored.1");
    fs.writeFileSync(restored, zlib.gunzipSync(fs.readFileSync(`${live}.1.gz`)));
    const v = await verify([restored, live]);
    assert.equal(v.ok, true, v.message);
    const attempts = [...jsonLines(restored), ...fresh].filter((r) => r.type === "unlock-attempt");
    assert.equal(attempts.length, unlockRequests(sim), "every PUT has its attempt in the compressed or the live file");
    assert.deepEqual(new Set(attempts.map((r) => r.msgid)), new Set(ids!));
    assert.equal(accountOf().account.audit.stats().reopens, 1);
  });

  it("copytruncate mid-stream: the copy + live verify; a copy that missed records → verify names the missing seqs", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url, {}, { auditLog: "ct.jsonl" }));
    await waitReady();
    const live = path.join(userDir, "ct.jsonl");
    const filePath = accountOf().account.audit.filePath;
    let copiedAt = 0;
    let truncated = false;
    // Copy after one batch, truncate after a later batch: the records in between are lost (the
    // copytruncate race logrotate documents); verify must say which.
    const listener = (file: string, line: string) => {
      const seq = JSON.parse(line).seq as number;
      if (file !== filePath) return;
      if (!copiedAt && seq >= 40) {
        copiedAt = seq;
        fs.copyFileSync(live, `${live}.1`);
      } else if (copiedAt && !truncated && seq >= copiedAt + 10) {
        truncated = true;
        fs.truncateSync(live, 0);
      }
    };
    auditRecordEvents.on("record", listener);
    try {
      const ids = await stream(60, 5, "ct");
      await settled(
        live,
        ids.filter((_, k) => k >= 40),
      ); // the later ones are in the live file
    } finally {
      auditRecordEvents.off("record", listener);
    }
    assert.ok(truncated);
    const copy = jsonLines(`${live}.1`);
    const after = jsonLines(live);
    const lastCopied = copy[copy.length - 1].seq;
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, false);
    assert.equal(v.broken!.file, live);
    assert.equal(v.broken!.line, 1);
    assert.deepEqual(v.broken!.missing, { fromSeq: lastCopied + 1, toSeq: after[0].seq - 1 });
    assert.ok(after[0].seq - 1 > lastCopied, "records were lost between copy and truncate");
    assert.ok(accountOf().account.audit.stats().truncations >= 1);
    assert.equal(
      after.every((r, k) => k === 0 || r.seq === after[k - 1].seq + 1),
      true,
      "the live file's own chain holds after the truncation",
    );
  });

  it("the 401 replay's attempt record carries replay: true; the first attempt does not", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url));
    await waitReady();
    sim.control.resetRequests();
    sim.control.expireAccessToken("demo");
    assertAccepted(await unlock({ deviceId: 101, _msgid: "replayed" }));
    assert.equal(unlockRequests(sim), 2);
    await until("the result record", () =>
      readAudit(userDir).some((r) => r.msgid === "replayed" && r.type === "unlock-result"),
    );
    const mine = readAudit(userDir).filter((r) => r.msgid === "replayed");
    assert.deepEqual(
      mine.map((r) => [r.type, r.replay]),
      [
        ["unlock-attempt", undefined],
        ["unlock-attempt", true],
        ["unlock-result", undefined],
      ],
    );
  });

  // docs/audit-log.md#one-file-one-writer: accounts of one runtime whose audit files are the same path write through one writer and one chain.
  it("two accounts with the same audit path: one writer, one chain", async () => {
    const flow = [
      tab(),
      accountNode(sim.url, { auditLog: "shared.jsonl" }),
      { ...accountNode(sim.url, { auditLog: "shared.jsonl", name: "copy" }), id: "acc2" },
      unlockNode(),
      unlockNode({ account: "acc2" }, "u2"),
      ...helperNodes("u1-ok", "u1-fail", "u2-ok", "u2-fail"),
    ];
    const { userDir } = await loadFlow(flow, { creds: { ...CREDS, acc2: CREDS.acc1 } });
    await waitReady();
    await waitReady("acc2");
    assert.equal(accountOf("acc1").account.audit, accountOf("acc2").account.audit, "one writer");
    const outs = await Promise.all(
      Array.from({ length: 40 }, (_, i) => unlock({ deviceId: 101, _msgid: `sh-${i}` }, i % 2 ? "u2" : "u1")),
    );
    outs.forEach(assertAccepted);
    const live = path.join(userDir, "shared.jsonl");
    await settled(
      live,
      Array.from({ length: 40 }, (_, i) => `sh-${i}`),
    );
    const all = jsonLines(live);
    assert.equal(all.length, 80);
    all.forEach((r, k) => assert.equal(r.seq, k + 1));
    assert.equal((await verify([live])).ok, true);
  });
});

describe("Refused audit paths: a configuration error before any unlock, nothing sent (docs/security.md#files-the-audit-log-may-never-be)", function () {
  this.timeout(30000);
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

  const cases: { name: string; auditLog: string; prepare(userDir: string): string | null; why: RegExp }[] = [
    {
      name: "a symbolic link as the final component",
      auditLog: "link.jsonl",
      prepare: (u) => {
        fs.writeFileSync(path.join(u, "target.jsonl"), "");
        fs.symlinkSync(path.join(u, "target.jsonl"), path.join(u, "link.jsonl"));
        return path.join(u, "target.jsonl");
      },
      why: /symbolic link/,
    },
    {
      name: "a foreign file (a .bashrc copy, ../.bashrc)",
      auditLog: "../.bashrc",
      prepare: (u) => {
        const f = path.join(u, "..", ".bashrc");
        fs.writeFileSync(f, '# ~/.bashrc: executed by bash(1) for non-login shells.\nexport PATH="$HOME/bin:$PATH"\n', {
          mode: 0o644,
        });
        fs.chmodSync(f, 0o644);
        return f;
      },
      why: /first line is not a door-access audit record/,
    },
    {
      name: "the flows file",
      auditLog: "flows.json",
      prepare: (u) => (fs.writeFileSync(path.join(u, "flows.json"), "[]"), path.join(u, "flows.json")),
      why: /Node-RED's own files/,
    },
    { name: "the credentials file", auditLog: "flows_cred.json", prepare: () => null, why: /Node-RED's own files/ },
    {
      name: "the settings file",
      auditLog: "settings.js",
      prepare: (u) => (
        fs.writeFileSync(path.join(u, "settings.js"), "module.exports = {}\n"),
        path.join(u, "settings.js")
      ),
      why: /Node-RED's own files/,
    },
    {
      name: "a .config.*.json of the user directory",
      auditLog: ".config.nodes.json",
      prepare: () => null,
      why: /Node-RED's own files/,
    },
    // docs/security.md#files-the-audit-log-may-never-be: Node-RED takes a .config.json for its
    // old settings file at the next start and rewrites every .config.*.json from it.
    {
      name: "the old settings file .config.json (not there yet)",
      auditLog: ".config.json",
      prepare: () => null,
      why: /Node-RED's own files/,
    },
    {
      name: "a settings backup .config.runtime.json.backup",
      auditLog: ".config.runtime.json.backup",
      prepare: () => null,
      why: /Node-RED's own files/,
    },
    {
      name: "the flows backup .flows.json.backup",
      auditLog: ".flows.json.backup",
      prepare: () => null,
      why: /Node-RED's own files/,
    },
    {
      name: "a file in Node-RED's library folder lib/",
      auditLog: "lib/flows/audit.json",
      prepare: () => null,
      why: /Node-RED's own files/,
    },
    {
      name: "a path under node_modules",
      auditLog: "node_modules/door/audit.jsonl",
      prepare: () => null,
      why: /node_modules/,
    },
    // Another Node-RED on this machine (a second instance, the default ~/.node-red of a runtime
    // started with -u elsewhere): its .config.json would wipe its credential secret at its next start.
    ...[
      { where: "relative", auditLog: "../.node-red-2/.config.json" },
      { where: "absolute", auditLog: path.join(os.tmpdir(), "door-other-node-red", ".config.projects.json") },
    ].map((o) => ({
      name: `a Node-RED file in another Node-RED's user directory (${o.where}: ${path.basename(path.dirname(o.auditLog))}/${path.basename(o.auditLog)}, not there yet)`,
      auditLog: o.auditLog,
      prepare: (u: string) => {
        const other = path.resolve(u, path.dirname(o.auditLog));
        fs.mkdirSync(other, { recursive: true });
        fs.writeFileSync(
          path.join(other, ".config.runtime.json"),
          JSON.stringify({ _credentialSecret: "the other runtime's" }),
        );
        return path.join(other, ".config.runtime.json");
      },
      why: /Node-RED's own files/,
    })),
  ];

  for (const c of cases) {
    it(`refuses ${c.name}: red status and an error naming the audit log, no login, zero PUTs, the file unchanged`, async () => {
      const parent = freshUserDir();
      const userDir = path.join(parent, ".node-red");
      fs.mkdirSync(userDir);
      const existing = c.prepare(userDir);
      const before = existing ? { text: fs.readFileSync(existing, "utf8"), mode: fs.statSync(existing).mode } : null;
      sim.control.resetRequests();
      await loadFlow(unlockFlow(sim.url, {}, { auditLog: c.auditLog }), { userDir });
      const acc = accountOf();
      assert.equal(acc.account, null);
      assert.match(acc.problem, c.why);
      assert.match(acc.problem, /audit log/);
      assert.ok(acc.error.called, "node.error was called");
      assert.match(String(acc.error.firstCall.args[0]), c.why);
      const status = lastStatus(helper.getNode("u1"));
      assert.equal(status?.fill, "red");
      // A few words on the canvas; the audit log is named in the error and the account's reason (docs/nodes.md#node-status).
      assert.equal(status?.text, "door-account.state.configuration");
      const p = assertFailed(await unlock({ deviceId: 101 }), "session-halted", null);
      assert.match(p.message, c.why);
      assert.equal(p.mayHaveOpened, false);
      assert.equal(unlockRequests(sim), 0, "no PUT");
      assert.equal(logins(sim), 0, "no login either");
      if (existing && before) {
        assert.equal(fs.readFileSync(existing, "utf8"), before.text, "content unchanged");
        assert.equal(fs.statSync(existing).mode, before.mode, "mode unchanged");
      }
      assert.ok(!fs.existsSync(path.join(userDir, "node_modules")), "nothing created");
    });
  }

  // docs/security.md#files-the-audit-log-may-never-be
  for (const pkg of ["node-red", "node-red-5"]) {
    it(`every file and folder ${pkg} writes in the user directory (its storage code run twice in a fresh one, flowFile unset and flows.json) and every name its source puts there is refused; our default file and a folder of ours are not`, () => {
      const nodeRedDir = path.dirname(require.resolve(`${pkg}/package.json`, { paths: [REPO_ROOT] }));
      for (const flowFile of [undefined, "flows.json"]) {
        const w = filesNodeRedWrites(nodeRedDir, flowFile);
        try {
          for (const expected of [
            "package.json",
            ".sessions.json",
            ".config.runtime.json",
            ".config.runtime.json.backup",
            "lib",
            "node_modules",
            "context",
          ]) {
            assert.ok(w.paths.includes(expected), `${pkg} wrote no ${expected}: ${w.paths.join(" ")}`);
          }
          assert.ok(
            w.paths.some((p) => /^\.flows.*\.json\.backup$/.test(p)),
            `a flows backup: ${w.paths.join(" ")}`,
          );
          for (const rel of w.paths) {
            const r = checkAuditPath(rel, { userDir: w.userDir, flowFile: flowFile ?? null });
            assert.equal(r.ok, false, `${pkg} wrote ${rel}, and it is accepted as an audit path`);
            if (!r.ok) assert.match(r.problem, /Node-RED's own files|node_modules/);
          }
          for (const ours of [
            "",
            "door-access-audit.jsonl",
            "audit/door.jsonl",
            "flows-audit.jsonl",
            ".config-audit.jsonl",
          ]) {
            const r = checkAuditPath(ours, { userDir: w.userDir, flowFile: flowFile ?? null });
            assert.equal(r.ok, true, `${JSON.stringify(ours)}: ${r.ok ? "" : r.problem}`);
          }
        } finally {
          fs.rmSync(w.userDir, { recursive: true, force: true });
        }
      }
      const names = namesInNodeRedSource(nodeRedDir);
      assert.ok(
        names.files.includes(".config.json") &&
          names.files.includes(".config.runtime.json") &&
          names.folders.includes("projects"),
        JSON.stringify(names),
      );
      const userDir = freshUserDir();
      const relPaths = [...names.files, ...names.folders, ...names.folders.map((d) => `${d}/audit.jsonl`)];
      for (const rel of relPaths) {
        const r = checkAuditPath(rel, { userDir });
        assert.equal(
          r.ok,
          false,
          `${pkg}'s source puts ${rel} in the user directory, and it is accepted as an audit path`,
        );
      }
    });
  }

  it("auditMaxBytes / auditKeep that are not whole numbers >= 0 are a configuration error", async () => {
    await loadFlow(unlockFlow(sim.url, {}, { auditMaxBytes: "-5", auditKeep: "many" }));
    const acc = accountOf();
    assert.equal(acc.account, null);
    assert.match(acc.problem, /auditMaxBytes/);
    assert.match(acc.problem, /auditKeep/);
  });

  it("an empty path field still means the default file, and an existing audit log of ours is taken up (chain continued)", async () => {
    const userDir = freshUserDir();
    await loadFlow(unlockFlow(sim.url), { userDir });
    await waitReady();
    assertAccepted(await unlock({ deviceId: 101, _msgid: "one" }));
    await until("result", () => readAudit(userDir).length === 2);
    await teardown();
    await loadFlow(unlockFlow(sim.url), { userDir });
    await waitReady();
    assertAccepted(await unlock({ deviceId: 101, _msgid: "two" }));
    await until("result", () => readAudit(userDir).length === 4);
    assert.deepEqual(
      readAudit(userDir).map((r) => r.seq),
      [1, 2, 3, 4],
    );
  });
});
