import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, openAuditLog, readAuditFile, type AuditBase } from "../src/audit/audit-log.js";
import { fileHandlePrototype } from "./helpers/audit-faults.js";

function rec(over: Partial<AuditBase> = {}): AuditBase {
  return { actor: "alice", deviceId: 12, lockId: null, door: "Front Door", msgid: "m1", ...over };
}

describe("audit log (JSON Lines, write-ahead)", function () {
  let dir: string;
  const logs: AuditLog[] = [];
  const track = (log: AuditLog): AuditLog => {
    logs.push(log);
    return log;
  };

  beforeEach(async function () {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "door-audit-"));
  });

  afterEach(async function () {
    for (const log of logs.splice(0)) await log.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("writes one JSON object per line, in call order, with all fields and the injected timestamp", async function () {
    let t = Date.parse("2025-01-02T03:04:05.000Z");
    const file = path.join(dir, "audit.jsonl");
    const log = track(new AuditLog(file, { now: () => new Date((t += 1000)) }));
    await Promise.all([
      log.attempt(rec({ msgid: "a" })),
      log.result({ ...rec({ msgid: "a" }), outcome: "accepted", status: 200 }),
      log.attempt(rec({ msgid: "b", deviceId: 13, lockId: 2, door: null })),
      log.result({ ...rec({ msgid: "b", deviceId: 13, lockId: 2, door: null }), outcome: "timeout", status: 504 }),
      log.rejected({ ...rec({ msgid: "c", deviceId: null }), outcome: "invalid-input", reason: "door name is empty" }),
    ]);
    const raw = fs.readFileSync(file, "utf8");
    assert.ok(raw.endsWith("\n"));
    const lines = raw.split("\n").slice(0, -1);
    assert.equal(lines.length, 5);
    const parsed = lines.map((l) => JSON.parse(l));
    assert.deepEqual(
      parsed.map((p) => [p.type, p.msgid]),
      [
        ["unlock-attempt", "a"],
        ["unlock-result", "a"],
        ["unlock-attempt", "b"],
        ["unlock-result", "b"],
        ["unlock-rejected", "c"],
      ],
    );
    assert.deepEqual(parsed[0], {
      type: "unlock-attempt",
      ts: "2025-01-02T03:04:06.000Z",
      actor: "alice",
      deviceId: 12,
      lockId: null,
      door: "Front Door",
      msgid: "a",
      seq: 1,
      prev: "0".repeat(64),
    });
    assert.equal(parsed[3].outcome, "timeout");
    assert.equal(parsed[3].status, 504);
    assert.equal(parsed[3].lockId, 2);
    assert.equal(parsed[4].reason, "door name is empty");
    assert.equal(parsed[4].deviceId, null);
    assert.equal(parsed[4].ts, "2025-01-02T03:04:10.000Z");
  });

  it("keeps call order across many concurrent batches", async function () {
    const file = path.join(dir, "order.jsonl");
    const log = track(new AuditLog(file));
    const all: Promise<void>[] = [];
    for (let i = 0; i < 300; i++) {
      all.push(log.attempt(rec({ msgid: `m${i}` })));
      // Now and then wait for the latest record (not the others), so later records are
      // certain to land in later batches, some while earlier ones are still in flight.
      if (i % 37 === 0) await all[i];
      else if (i % 11 === 0) await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
    const { records, tornLastLine, badLines } = await readAuditFile(file);
    assert.equal(tornLastLine, false);
    assert.deepEqual(badLines, []);
    assert.deepEqual(
      records.map((r) => r.msgid),
      Array.from({ length: 300 }, (_, i) => `m${i}`),
    );
    assert.ok(log.stats().batches >= 9, `the test should have spanned several batches, got ${log.stats().batches}`);
  });

  it("resolves each call only once its line is durable in the file", async function () {
    const file = path.join(dir, "durable.jsonl");
    const log = track(new AuditLog(file));
    const seenAtResolve: boolean[] = [];
    const fsyncsAtResolve: number[] = [];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        log.attempt(rec({ msgid: `d${i}` })).then(() => {
          // Read synchronously at the moment of resolution: the line must already be there.
          const text = fs.readFileSync(file, "utf8");
          seenAtResolve.push(text.includes(`"msgid":"d${i}"`));
          fsyncsAtResolve.push(log.stats().fsyncs);
        }),
      ),
    );
    assert.equal(seenAtResolve.length, 20);
    assert.ok(seenAtResolve.every(Boolean), "every line is in the file when its promise resolves");
    assert.ok(fsyncsAtResolve.every((n) => n >= 1), "every promise resolves after an fsync");
    // A single awaited call: the line is in the file right after the await.
    await log.attempt(rec({ msgid: "single" }));
    assert.ok(fs.readFileSync(file, "utf8").includes('"msgid":"single"'));
  });

  it("group commit: 100 concurrent attempts share a few write+fsync batches", async function () {
    const file = path.join(dir, "group.jsonl");
    const log = track(new AuditLog(file));
    await log.attempt(rec({ msgid: "warm-up" })); // file already open, as in steady state
    const before = log.stats();
    await Promise.all(Array.from({ length: 100 }, (_, i) => log.attempt(rec({ msgid: `g${i}` }))));
    const after = log.stats();
    const fsyncs = after.fsyncs - before.fsyncs;
    const records = after.records - before.records;
    // Reported for the benchmark summary.
    console.log(`      100 concurrent attempts: ${fsyncs} fsync(s), ${after.writes - before.writes} write(s), ${after.batches - before.batches} batch(es)`);
    assert.equal(records, 100);
    assert.ok(fsyncs >= 1);
    assert.ok(fsyncs <= 5, `expected a few fsyncs for 100 concurrent records, got ${fsyncs}`);
    const { records: read } = await readAuditFile(file);
    assert.equal(read.length, 101);
  });

  it("group commit also batches calls arriving one event-loop turn apart", async function () {
    const file = path.join(dir, "staggered.jsonl");
    const log = track(new AuditLog(file));
    await log.attempt(rec({ msgid: "warm-up" }));
    const all: Promise<void>[] = [];
    for (let i = 0; i < 100; i++) {
      all.push(log.attempt(rec({ msgid: `s${i}` })));
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
    const s = log.stats();
    console.log(`      100 attempts one turn apart: ${s.fsyncs - 1} fsync(s), ${s.batches - 1} batch(es)`);
    assert.equal(s.records, 101);
    assert.ok(s.fsyncs - 1 < 100, `each fsync should cover several records, got ${s.fsyncs - 1} for 100`);
    const { records } = await readAuditFile(file);
    assert.deepEqual(records.slice(1).map((r) => r.msgid), Array.from({ length: 100 }, (_, i) => `s${i}`));
  });

  it("records appended while a batch is in flight go into the next batch", async function () {
    const file = path.join(dir, "inflight.jsonl");
    const log = track(new AuditLog(file));
    await log.attempt(rec({ msgid: "warm-up" }));
    const first = log.attempt(rec({ msgid: "first" }));
    // Yield so the first batch has started its write+fsync, then append 50 more.
    await new Promise((r) => setImmediate(r));
    const startedBatches = log.stats().batches;
    const more = Array.from({ length: 50 }, (_, i) => log.attempt(rec({ msgid: `x${i}` })));
    await Promise.all([first, ...more]);
    const s = log.stats();
    assert.equal(startedBatches, 2, "the first record's batch was already in flight");
    assert.ok(s.batches <= 4, `50 records queued behind one batch should need at most a couple more, got ${s.batches - 1}`);
    assert.equal(s.records, 52);
  });

  // Issue 13: "The chain costs the unlock path no extra fsync". door-unlock queues an unlock's
  // result record once the next node has the outcome; in a stream of unlocks that is while the
  // next unlock's attempt record is being written. The result waits for the attempt after that
  // (or DEFER_MS), as every closing record does, instead of an fsync of its own.
  /**
   * Writes attempt a1, then attempt a2, and while a2's batch is being written (its write call)
   * queues a1's result: forced, not timed. Returns the result's promise (in an object: an async
   * function returning it would wait for it).
   */
  async function resultQueuedDuringNextAttempt(log: AuditLog): Promise<{ result1: Promise<void> }> {
    await log.attempt(rec({ msgid: "a1" }));
    const { proto, orig } = await fileHandlePrototype();
    let result1: Promise<void> | null = null;
    proto.write = function (this: unknown, ...a: unknown[]) {
      proto.write = orig.write;
      result1 = log.result({ ...rec({ msgid: "a1" }), outcome: "accepted", status: 200 });
      return orig.write.apply(this, a as never);
    };
    try {
      await log.attempt(rec({ msgid: "a2" }));
    } finally {
      proto.write = orig.write;
    }
    assert.ok(result1, "the result was queued during a2's write");
    return { result1 };
  }

  it("a closing record queued while an attempt's batch is written waits for the next attempt record's write, not an fsync of its own", async function () {
    const file = path.join(dir, "held.jsonl");
    // A long deferral: the only way out for the held result is the next attempt's write.
    const log = track(new AuditLog(file, { deferMs: 60_000 }));
    const { result1 } = await resultQueuedDuringNextAttempt(log);
    const afterA2 = log.stats().fsyncs;
    // The next unlock's attempt comes after a request's round trip, not in the same turn.
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(log.stats().fsyncs, afterA2, "no fsync for the result on its own");
    await log.attempt(rec({ msgid: "a3" }));
    await result1;
    const s = log.stats();
    assert.equal(s.fsyncs - afterA2, 1, `a1's result rode with a3's fsync: ${s.fsyncs - afterA2} fsync(s) after a2's`);
    assert.equal(s.records, 4);
    const { records } = await readAuditFile(file);
    assert.deepEqual(records.map((r) => [r.type, r.msgid]), [
      ["unlock-attempt", "a1"],
      ["unlock-attempt", "a2"],
      ["unlock-result", "a1"],
      ["unlock-attempt", "a3"],
    ]);
  });

  it("a closing record held that way is written within DEFER_MS when no attempt follows, and by close()", async function () {
    for (const how of ["timer", "close"] as const) {
      const file = path.join(dir, `held-${how}.jsonl`);
      const log = how === "timer" ? track(new AuditLog(file)) : new AuditLog(file);
      const { result1 } = await resultQueuedDuringNextAttempt(log);
      if (how === "close") await log.close();
      await result1;
      const { records } = await readAuditFile(file);
      assert.deepEqual(records.map((r) => [r.type, r.msgid]), [["unlock-attempt", "a1"], ["unlock-attempt", "a2"], ["unlock-result", "a1"]], how);
    }
  });

  it("creates missing parent directories and the file with mode 0600", async function () {
    const file = path.join(dir, "a", "b", "c", "audit.jsonl");
    const log = track(new AuditLog(file));
    await log.attempt(rec());
    const st = await fsp.stat(file);
    assert.equal(st.mode & 0o777, 0o600);
  });

  it("tightens an existing world-readable audit file to 0600", async function () {
    const file = path.join(dir, "loose.jsonl");
    await fsp.writeFile(file, "", { mode: 0o644 });
    await fsp.chmod(file, 0o644);
    const log = track(new AuditLog(file));
    await log.attempt(rec());
    assert.equal((await fsp.stat(file)).mode & 0o777, 0o600);
  });

  it("appends to an existing file (O_APPEND) and never truncates it", async function () {
    const file = path.join(dir, "existing.jsonl");
    const log1 = new AuditLog(file);
    await log1.attempt(rec({ msgid: "one" }));
    await log1.close();
    const log2 = track(new AuditLog(file));
    await log2.attempt(rec({ msgid: "two" }));
    const { records } = await readAuditFile(file);
    assert.deepEqual(records.map((r) => r.msgid), ["one", "two"]);
  });

  it("repairs a torn last line on the next write, and readAuditFile reports it", async function () {
    const file = path.join(dir, "torn.jsonl");
    const good = JSON.stringify({ type: "unlock-attempt", ts: "2025-01-01T00:00:00.000Z", ...rec({ msgid: "ok" }) });
    await fsp.writeFile(file, good + "\n" + '{"type":"unlock-result","ts":"2025-01-0', { mode: 0o600 });

    const before = await readAuditFile(file);
    assert.equal(before.tornLastLine, true);
    assert.deepEqual(before.records.map((r) => r.msgid), ["ok"]);
    assert.deepEqual(before.badLines, [], "a torn last line is reported as torn, not as a bad line");

    const log = track(new AuditLog(file));
    await log.attempt(rec({ msgid: "after-crash" }));
    const raw = fs.readFileSync(file, "utf8");
    assert.ok(raw.includes('"ts":"2025-01-0\n{"type":"unlock-attempt"'), "new record starts on its own line");

    const after = await readAuditFile(file);
    assert.equal(after.tornLastLine, false);
    assert.deepEqual(after.records.map((r) => r.msgid), ["ok", "after-crash"]);
    assert.deepEqual(after.badLines, [2], "the old fragment is now a bad middle line");
  });

  it("does not add a blank line when the file already ends with a newline", async function () {
    const file = path.join(dir, "clean.jsonl");
    const log1 = new AuditLog(file);
    await log1.attempt(rec({ msgid: "1" }));
    await log1.close();
    const log2 = track(new AuditLog(file));
    await log2.attempt(rec({ msgid: "2" }));
    assert.ok(!fs.readFileSync(file, "utf8").includes("\n\n"));
  });

  it("readAuditFile keeps a complete last record that only lacks its newline, and lists bad lines", async function () {
    const file = path.join(dir, "mixed.jsonl");
    const line = (msgid: string) => JSON.stringify({ type: "unlock-attempt", ts: "t", ...rec({ msgid }) });
    await fsp.writeFile(file, [line("a"), "not json", '{"type":"other","ts":"x"}', "", line("b")].join("\n"));
    const r = await readAuditFile(file);
    assert.equal(r.tornLastLine, true);
    assert.deepEqual(r.records.map((x) => x.msgid), ["a", "b"]);
    assert.deepEqual(r.badLines, [2, 3]);
    const missing = await readAuditFile(path.join(dir, "nope.jsonl"));
    assert.deepEqual(missing, { records: [], tornLastLine: false, badLines: [] });
  });

  it("rejects every record of a failed batch with an Error naming the file, and recovers later", async function () {
    const file = path.join(dir, "is-a-dir.jsonl");
    await fsp.mkdir(file);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const log = track(new AuditLog(file));
      const results = await Promise.allSettled(Array.from({ length: 5 }, (_, i) => log.attempt(rec({ msgid: `f${i}` }))));
      for (const r of results) {
        assert.equal(r.status, "rejected");
        const err = (r as PromiseRejectedResult).reason;
        assert.ok(err instanceof Error);
        assert.ok(err.message.includes(file), `message names the file: ${err.message}`);
        assert.match(err.message, /^audit log .*: cannot (open|write): /);
      }
      assert.equal(log.stats().records, 0);
      assert.equal(log.stats().failedRecords, 5);

      // A later call tries again: once the obstacle is gone it succeeds.
      await fsp.rmdir(file);
      await log.attempt(rec({ msgid: "recovered" }));
      const { records } = await readAuditFile(file);
      assert.deepEqual(records.map((x) => x.msgid), ["recovered"]);
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("shares one instance per resolved path, reference-counted by close()", async function () {
    const file = path.join(dir, "shared.jsonl");
    const a = openAuditLog(file);
    const b = openAuditLog(path.join(dir, ".", "sub", "..", "shared.jsonl"));
    assert.equal(a, b, "same instance for the same resolved path");
    const other = openAuditLog(path.join(dir, "other.jsonl"));
    assert.notEqual(a, other);
    await other.close();

    await a.attempt(rec({ msgid: "1" }));
    await a.close(); // one reference left
    await b.attempt(rec({ msgid: "2" })); // still open
    const pending = b.attempt(rec({ msgid: "3" }));
    await b.close(); // last reference: waits for the pending write, then closes
    await pending;
    await assert.rejects(b.attempt(rec({ msgid: "4" })), /is closed/);

    const c = openAuditLog(file);
    assert.notEqual(c, a, "a fresh instance after the last close");
    await c.attempt(rec({ msgid: "5" }));
    await c.close();
    const { records } = await readAuditFile(file);
    assert.deepEqual(records.map((r) => r.msgid), ["1", "2", "3", "5"]);
  });

  it("close() waits for queued records before closing", async function () {
    const file = path.join(dir, "close.jsonl");
    const log = new AuditLog(file);
    const writes = Array.from({ length: 10 }, (_, i) => log.attempt(rec({ msgid: `c${i}` })));
    await log.close();
    await Promise.all(writes);
    const { records } = await readAuditFile(file);
    assert.equal(records.length, 10);
  });

  it("caps actor, door and reason at 200 characters and normalises ids", async function () {
    const file = path.join(dir, "caps.jsonl");
    const log = track(new AuditLog(file));
    const long = "x".repeat(500);
    await log.rejected({
      actor: long,
      door: long,
      reason: long,
      outcome: "invalid-input",
      deviceId: 1.5 as number,
      lockId: Number.NaN,
      msgid: null,
    });
    // A cut that would split a surrogate pair drops the half character.
    await log.attempt(rec({ door: "a".repeat(199) + "😀" + "tail" }));
    const { records } = await readAuditFile(file);
    const r0 = records[0] as Extract<(typeof records)[number], { type: "unlock-rejected" }>;
    assert.equal(r0.actor.length, 200);
    assert.equal(r0.door?.length, 200);
    assert.equal(r0.reason.length, 200);
    assert.equal(r0.deviceId, null);
    assert.equal(r0.lockId, null);
    assert.equal(records[1].door, "a".repeat(199));
    assert.ok(fs.readFileSync(file, "utf8").length < 2000);
  });
});
