/**
 * The audit writer on real files, without Node-RED (docs/audit-log.md#records and its
 * subsections): one JSON line per record in call order, the file it creates and appends to,
 * group commit (a caller answered once the fsync covering its line is done), closing records
 * held for the next attempt record's write, a failed batch, and one writer per file.
 *
 * Faults and races are forced (patched FileHandle.prototype methods, the writer's "record" event
 * between two batches), never timed.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as M from "../../src/audit/audit-log.js";
import {
  AuditLog,
  openAuditLog,
  readAuditFile,
  type AuditBase,
  MAX_BATCH,
  MAX_BATCH_CHARS,
  auditRecordEvents,
} from "../../src/audit/audit-log.js";
import { type Pending, batchLength } from "../../src/audit/batch.js";
import { verify, GENESIS, lineHash } from "../../src/audit/chain.js";
import { tail, readAll } from "../../src/audit/reader.js";
import {
  fileHandlePrototype,
  jsonLines,
  lines,
  type P,
  parsed,
  rec,
  eio,
  seqs,
  useAuditDir,
} from "../helpers/audit-faults.js";
import { until } from "../helpers/until.js";

/** A record with deviceId 12 and msgid "m1", unless `over` says otherwise. */
const recWith = (over: Partial<AuditBase> = {}): AuditBase => ({
  actor: "alice",
  deviceId: 12,
  lockId: null,
  door: "Front Door",
  msgid: "m1",
  ...over,
});

describe("Records are JSON Lines in call order, with every field, their text capped (docs/audit-log.md#records)", function () {
  let dir: string;
  const track = useAuditDir((t) => ({ dir } = t));

  it("writes one JSON object per line, in call order, with all fields and the injected timestamp", async function () {
    let t = Date.parse("2025-01-02T03:04:05.000Z");
    const file = path.join(dir, "audit.jsonl");
    const log = track(new AuditLog(file, { now: () => new Date((t += 1000)) }));
    await Promise.all([
      log.attempt(recWith({ msgid: "a" })),
      log.result({ ...recWith({ msgid: "a" }), outcome: "accepted", status: 200 }),
      log.attempt(recWith({ msgid: "b", deviceId: 13, lockId: 2, door: null })),
      log.result({ ...recWith({ msgid: "b", deviceId: 13, lockId: 2, door: null }), outcome: "timeout", status: 504 }),
      log.rejected({
        ...recWith({ msgid: "c", deviceId: null }),
        outcome: "invalid-input",
        reason: "door name is empty",
      }),
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

  it("caps actor, door and reason at 200 characters and normalises ids", async function () {
    const file = path.join(dir, "caps.jsonl");
    const log = track(new AuditLog(file));
    const long = "x".repeat(500);
    await log.rejected({
      actor: long,
      door: long,
      reason: long,
      outcome: "invalid-input",
      deviceId: 1.5,
      lockId: Number.NaN,
      msgid: null,
    });
    // A cut that would split a surrogate pair drops the half character.
    await log.attempt(recWith({ door: "a".repeat(199) + "😀" + "tail" }));
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

describe("Records are JSON Lines: one line per record whatever the text, byte for byte what JSON.stringify gives (docs/audit-log.md#records)", function () {
  function rec(msgid: string, over: Partial<AuditBase> = {}): AuditBase {
    return { actor: "alice", deviceId: 101, lockId: null, door: "Front", msgid, ...over };
  }

  this.timeout(20000);
  let dir: string;
  useAuditDir((t) => ({ dir } = t));

  it("unicode, U+2028, a lone surrogate, newlines and a 10,000-character actor/door: one line per record, capped, verify passes", async () => {
    const f = path.join(dir, "u.jsonl");
    const log = new AuditLog(f);
    await log.attempt(
      rec("1", { actor: "a\nb\r\u2028\u2029\u0000\ud800x", door: 'Tür "1"\n{"type":"unlock-attempt"}' }),
    );
    await log.attempt(rec("2", { actor: "x".repeat(10000), door: "\ud83d\ude00".repeat(5000) }));
    await log.close();
    const lines = fs.readFileSync(f, "utf8").split("\n");
    assert.equal(lines.length, 3);
    assert.equal(lines[2], "");
    const r2 = JSON.parse(lines[1]);
    assert.equal(r2.actor.length, 200);
    assert.ok(r2.door.length <= 200);
    const rep = await verify([f]);
    assert.equal(rep.ok, true, rep.message);
  });
});

describe("Records are JSON Lines: a line made ahead is byte-identical to JSON.stringify of the record (docs/audit-log.md#records)", function () {
  let live: string;
  const track = useAuditDir((t) => ({ live } = t));

  it("lines are byte-identical to JSON.stringify({...record, seq, prev}) for odd strings (quotes, backslashes, control chars, lone surrogates, emoji cut at 200, U+2028)", async () => {
    const log = track(new M.AuditLog(live));
    const odd = [
      'he said "hi" \\ back\\slash',
      "\u0000\u0001\u001f\t\n\r",
      "\ud800 lone high, lone low \udc00",
      "\u2028\u2029 line seps",
      "x".repeat(199) + "😀tail",
      "😀".repeat(150),
      "}",
      "",
      '{"seq":1}',
    ];
    const ps: Promise<void>[] = [];
    for (let i = 0; i < odd.length; i++) {
      ps.push(
        log.attempt({
          actor: odd[i],
          deviceId: 1,
          lockId: 2,
          door: odd[(i + 1) % odd.length],
          msgid: odd[(i + 2) % odd.length],
        }),
      );
      ps.push(
        log.result({
          actor: odd[i],
          deviceId: null,
          lockId: null,
          door: null,
          msgid: null,
          outcome: odd[i],
          status: 200,
        }),
      );
      ps.push(
        log.rejected({
          actor: odd[i],
          deviceId: 1.5,
          lockId: Number.MAX_SAFE_INTEGER + 2,
          door: odd[i],
          msgid: `r${i}`,
          outcome: "invalid-input",
          reason: odd[i],
        }),
      );
      if (i % 3 === 0) ps.push(log.attempt({ ...rec(i), replay: true }));
    }
    await Promise.all(ps);
    const ls = lines(live);
    assert.equal(ls.length, ps.length);
    let prev = GENESIS;
    ls.forEach((l, i) => {
      const o = JSON.parse(l) as Record<string, unknown>;
      assert.equal(o.seq, i + 1);
      assert.equal(o.prev, prev);
      const { seq, prev: p, ...rest } = o;
      assert.equal(JSON.stringify({ ...rest, seq, prev: p }), l, `line ${i + 1} byte-identical`);
      assert.ok(((o.actor as string) ?? "").length <= 200);
      prev = lineHash(l);
    });
    const pos = log.chainPosition();
    assert.deepEqual(pos, { seq: ls.length, hash: lineHash(ls[ls.length - 1]) });
    assert.deepEqual(Object.keys(pos).sort(), ["hash", "seq"]);
    assert.equal(JSON.stringify(pos), JSON.stringify({ seq: ls.length, hash: lineHash(ls[ls.length - 1]) }));
  });
});

describe("The file: created with mode 0600 in missing folders, appended to, never truncated (docs/audit-log.md#the-file)", function () {
  let dir: string;
  const track = useAuditDir((t) => ({ dir } = t));

  it("creates missing parent directories and the file with mode 0600", async function () {
    const file = path.join(dir, "a", "b", "c", "audit.jsonl");
    const log = track(new AuditLog(file));
    await log.attempt(recWith());
    const st = await fsp.stat(file);
    assert.equal(st.mode & 0o777, 0o600);
  });

  it("tightens an existing world-readable audit file to 0600", async function () {
    const file = path.join(dir, "loose.jsonl");
    await fsp.writeFile(file, "", { mode: 0o644 });
    await fsp.chmod(file, 0o644);
    const log = track(new AuditLog(file));
    await log.attempt(recWith());
    assert.equal((await fsp.stat(file)).mode & 0o777, 0o600);
  });

  it("appends to an existing file (O_APPEND) and never truncates it", async function () {
    const file = path.join(dir, "existing.jsonl");
    const log1 = new AuditLog(file);
    await log1.attempt(recWith({ msgid: "one" }));
    await log1.close();
    const log2 = track(new AuditLog(file));
    await log2.attempt(recWith({ msgid: "two" }));
    const { records } = await readAuditFile(file);
    assert.deepEqual(
      records.map((r) => r.msgid),
      ["one", "two"],
    );
  });

  it("does not add a blank line when the file already ends with a newline", async function () {
    const file = path.join(dir, "clean.jsonl");
    const log1 = new AuditLog(file);
    await log1.attempt(recWith({ msgid: "1" }));
    await log1.close();
    const log2 = track(new AuditLog(file));
    await log2.attempt(recWith({ msgid: "2" }));
    assert.ok(!fs.readFileSync(file, "utf8").includes("\n\n"));
  });
});

describe("Group commit: a caller is answered once the fsync covering its line is done; records queued meanwhile share one write+fsync (docs/audit-log.md#group-commit)", function () {
  let dir: string;
  const track = useAuditDir((t) => ({ dir } = t));

  it("keeps call order across many concurrent batches", async function () {
    const file = path.join(dir, "order.jsonl");
    const log = track(new AuditLog(file));
    const all: Promise<void>[] = [];
    for (let i = 0; i < 300; i++) {
      all.push(log.attempt(recWith({ msgid: `m${i}` })));
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
        log.attempt(recWith({ msgid: `d${i}` })).then(() => {
          // Read synchronously at the moment of resolution: the line must already be there.
          const text = fs.readFileSync(file, "utf8");
          seenAtResolve.push(text.includes(`"msgid":"d${i}"`));
          fsyncsAtResolve.push(log.stats().fsyncs);
        }),
      ),
    );
    assert.equal(seenAtResolve.length, 20);
    assert.ok(seenAtResolve.every(Boolean), "every line is in the file when its promise resolves");
    assert.ok(
      fsyncsAtResolve.every((n) => n >= 1),
      "every promise resolves after an fsync",
    );
    // A single awaited call: the line is in the file right after the await.
    await log.attempt(recWith({ msgid: "single" }));
    assert.ok(fs.readFileSync(file, "utf8").includes('"msgid":"single"'));
  });

  it("group commit: 100 concurrent attempts share a few write+fsync batches", async function () {
    const file = path.join(dir, "group.jsonl");
    const log = track(new AuditLog(file));
    await log.attempt(recWith({ msgid: "warm-up" })); // file already open, as in steady state
    const before = log.stats();
    await Promise.all(Array.from({ length: 100 }, (_, i) => log.attempt(recWith({ msgid: `g${i}` }))));
    const after = log.stats();
    const fsyncs = after.fsyncs - before.fsyncs;
    const records = after.records - before.records;
    // Reported for the benchmark summary.
    console.log(
      `      100 concurrent attempts: ${fsyncs} fsync(s), ${after.writes - before.writes} write(s), ${after.batches - before.batches} batch(es)`,
    );
    assert.equal(records, 100);
    assert.ok(fsyncs >= 1);
    assert.ok(fsyncs <= 5, `expected a few fsyncs for 100 concurrent records, got ${fsyncs}`);
    const { records: read } = await readAuditFile(file);
    assert.equal(read.length, 101);
  });

  it("group commit also batches calls arriving one event-loop turn apart", async function () {
    const file = path.join(dir, "staggered.jsonl");
    const log = track(new AuditLog(file));
    await log.attempt(recWith({ msgid: "warm-up" }));
    const all: Promise<void>[] = [];
    for (let i = 0; i < 100; i++) {
      all.push(log.attempt(recWith({ msgid: `s${i}` })));
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
    const s = log.stats();
    console.log(`      100 attempts one turn apart: ${s.fsyncs - 1} fsync(s), ${s.batches - 1} batch(es)`);
    assert.equal(s.records, 101);
    assert.ok(s.fsyncs - 1 < 100, `each fsync should cover several records, got ${s.fsyncs - 1} for 100`);
    const { records } = await readAuditFile(file);
    assert.deepEqual(
      records.slice(1).map((r) => r.msgid),
      Array.from({ length: 100 }, (_, i) => `s${i}`),
    );
  });

  it("records appended while a batch is in flight go into the next batch", async function () {
    const file = path.join(dir, "inflight.jsonl");
    const log = track(new AuditLog(file));
    await log.attempt(recWith({ msgid: "warm-up" }));
    const first = log.attempt(recWith({ msgid: "first" }));
    // Yield so the first batch has started its write+fsync, then append 50 more.
    await new Promise((r) => setImmediate(r));
    const startedBatches = log.stats().batches;
    const more = Array.from({ length: 50 }, (_, i) => log.attempt(recWith({ msgid: `x${i}` })));
    await Promise.all([first, ...more]);
    const s = log.stats();
    assert.equal(startedBatches, 2, "the first record's batch was already in flight");
    assert.ok(
      s.batches <= 4,
      `50 records queued behind one batch should need at most a couple more, got ${s.batches - 1}`,
    );
    assert.equal(s.records, 52);
  });

  it("close() waits for queued records before closing", async function () {
    const file = path.join(dir, "close.jsonl");
    const log = new AuditLog(file);
    const writes = Array.from({ length: 10 }, (_, i) => log.attempt(recWith({ msgid: `c${i}` })));
    await log.close();
    await Promise.all(writes);
    const { records } = await readAuditFile(file);
    assert.equal(records.length, 10);
  });
});

describe("Group commit: at most 1,024 records a batch; close() writes everything queued first (docs/audit-log.md#group-commit)", function () {
  let live: string;
  const track = useAuditDir((t) => ({ live } = t));

  it("2500 closing records queued in one tick go out in 3 batches (3 fsyncs), in order, each resolved, every line emitted once in file order; verify passes", async () => {
    const a = track(new AuditLog(live));
    await a.attempt(rec(0));
    const emitted: string[] = [];
    const on = (_f: string, line: string) => emitted.push(line);
    auditRecordEvents.on("record", on);
    try {
      const before = a.stats();
      const ps = Array.from({ length: 2500 }, (_, i) =>
        a.rejected({ ...rec(`b${i}`), outcome: "rejected", reason: "invalid" }),
      );
      await Promise.all(ps);
      const after = a.stats();
      // 1,024 + 1,024 + 452 (docs/audit-log.md#group-commit).
      assert.equal(after.fsyncs - before.fsyncs, 3);
      assert.equal(after.batches - before.batches, 3);
    } finally {
      auditRecordEvents.off("record", on);
    }
    await a.close();
    const all = lines(live);
    assert.deepEqual(emitted, all.slice(1));
    assert.deepEqual(
      parsed(live).map((r) => r.seq),
      Array.from({ length: 2501 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      parsed(live)
        .slice(1)
        .map((r) => r.msgid),
      Array.from({ length: 2500 }, (_, i) => `mb${i}`),
    );
    assert.equal((await verify([live])).ok, true);
  });

  it("close() with 3000 records queued (more than two batches) and a deferred result pending: all written before close resolves, in order", async () => {
    const a = track(new AuditLog(live));
    const ps: Promise<void>[] = [a.result({ ...rec("r"), outcome: "accepted", status: 200 })];
    for (let i = 0; i < 3000; i++) ps.push(a.rejected({ ...rec(i), outcome: "rejected", reason: "x" }));
    const closed = a.close();
    await Promise.all(ps);
    await closed;
    const r = parsed(live);
    assert.equal(r.length, 3001);
    assert.equal(r[0].msgid, "mr");
    assert.equal((await verify([live])).ok, true);
  });
});

describe("Group commit: a batch takes at most 1,024 records and about 1 MiB of text (docs/audit-log.md#group-commit)", function () {
  let live: string;
  const track = useAuditDir((t) => ({ live } = t));

  /** Queued records whose lines are `chars` characters each (batchLength reads only the line's length). */
  const queued = (n: number, chars: number): Pending[] =>
    Array.from({ length: n }, () => ({ line: { text: "x".repeat(chars) } }) as unknown as Pending);

  it("the bounds are the docs' numbers: 1,024 records, 1 MiB (1,048,576 characters) of text", () => {
    assert.equal(MAX_BATCH, 1024, "docs/audit-log.md#group-commit: at most 1,024 records");
    assert.equal(MAX_BATCH_CHARS, 1_048_576, "docs/audit-log.md#group-commit: about 1 MiB of text");
  });

  it("a batch takes 1,024 short lines of 2,000 queued; 512 lines of 2,048 characters (1 MiB exactly) but not 513; 511 of 2,049", () => {
    assert.equal(batchLength(queued(2000, 100)), 1024);
    assert.equal(batchLength(queued(1024, 100)), 1024);
    assert.equal(batchLength(queued(1023, 100)), 1023);
    assert.equal(batchLength(queued(600, 2048)), 512);
    assert.equal(batchLength(queued(600, 2049)), 511);
    // One line longer than the bound still goes out, alone.
    assert.equal(batchLength(queued(3, 2_000_000)), 1);
  });

  it("1,024 closing records queued in one tick are one write and one fsync; 1,025 are two", async () => {
    const a = track(new AuditLog(live));
    await a.attempt(rec(0));
    for (const [n, writes] of [
      [1024, 1],
      [1025, 2],
    ] as const) {
      const before = a.stats();
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          a.rejected({ ...rec(`${n}-${i}`), outcome: "rejected", reason: "invalid" }),
        ),
      );
      const after = a.stats();
      assert.equal(after.batches - before.batches, writes, `${n} records`);
      assert.equal(after.fsyncs - before.fsyncs, writes, `${n} records`);
    }
    await a.close();
    assert.equal(parsed(live).length, 1 + 1024 + 1025);
    assert.equal((await verify([live])).ok, true);
  });

  it("1,000 records of about 3.7 KiB each go out in batches of at most 1 MiB of text, as many as fit in each", async () => {
    const a = track(new AuditLog(live));
    await a.attempt(rec(0));
    // Control characters are escaped as \u0001 (6 characters each): long lines from capped fields.
    const wide = "\u0001".repeat(200);
    const before = a.stats();
    await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        a.rejected({ ...rec(String(i).padStart(4, "0"), wide), door: wide, outcome: "rejected", reason: wide }),
      ),
    );
    const batches = a.stats().batches - before.batches;
    await a.close();
    // The batches the docs' bound makes of these lines: filled greedily up to 1,048,576 characters.
    const lengths = lines(live)
      .slice(1)
      .map((l) => l.length);
    assert.equal(lengths.length, 1000);
    assert.ok(
      lengths.every((n) => n > 3600 && n < 4096),
      `line lengths ${Math.min(...lengths)}..${Math.max(...lengths)}`,
    );
    let expected = 0;
    let chars = Infinity;
    for (const n of lengths) {
      if (chars + n > 1_048_576) {
        expected += 1;
        chars = 0;
      }
      chars += n;
    }
    assert.equal(expected, 4, "about 283 lines of 3.7 KiB make 1 MiB");
    assert.equal(batches, expected);
    assert.equal((await verify([live])).ok, true);
  });
});

describe("Group commit: close() answers every queued caller; later appends are refused (docs/audit-log.md#group-commit)", function () {
  let live: string;
  const track = useAuditDir((t) => ({ live } = t));

  it("close() with attempts and deferred results queued (and one in flight): all resolve, a later append rejects, a new writer resumes the chain", async () => {
    const log = new M.AuditLog(live);
    const ps = [
      log.attempt(rec(1)),
      log.result({ ...rec(1), outcome: "accepted", status: 200 }),
      log.rejected({ ...rec(2), outcome: "x", reason: "y" }),
    ];
    await new Promise((r) => setImmediate(r));
    ps.push(log.result({ ...rec(3), outcome: "accepted", status: 200 }));
    const closing = log.close();
    await assert.rejects(log.attempt(rec(9)), /closed/);
    await Promise.all(ps);
    await closing;
    const again = track(new M.AuditLog(live));
    await again.attempt(rec(4));
    const v = await verify([live]);
    assert.equal(v.ok, true, v.message);
    assert.deepEqual(
      jsonLines(live).map((r) => r.seq),
      [1, 2, 3, 4, 5],
    );
  });
});

describe("A closing record waits for the next attempt record's write, DEFER_MS or close() (docs/audit-log.md#group-commit)", function () {
  let dir: string;
  const track = useAuditDir((t) => ({ dir } = t));

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
    await log.attempt(recWith({ msgid: "a1" }));
    const { proto, orig } = await fileHandlePrototype();
    let result1: Promise<void> | null = null;
    proto.write = function (this: unknown, ...a: unknown[]) {
      proto.write = orig.write;
      result1 = log.result({ ...recWith({ msgid: "a1" }), outcome: "accepted", status: 200 });
      return orig.write.apply(this, a as never);
    };
    try {
      await log.attempt(recWith({ msgid: "a2" }));
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
    await log.attempt(recWith({ msgid: "a3" }));
    await result1;
    const s = log.stats();
    assert.equal(s.fsyncs - afterA2, 1, `a1's result rode with a3's fsync: ${s.fsyncs - afterA2} fsync(s) after a2's`);
    assert.equal(s.records, 4);
    const { records } = await readAuditFile(file);
    assert.deepEqual(
      records.map((r) => [r.type, r.msgid]),
      [
        ["unlock-attempt", "a1"],
        ["unlock-attempt", "a2"],
        ["unlock-result", "a1"],
        ["unlock-attempt", "a3"],
      ],
    );
  });

  it("a closing record held that way is written within DEFER_MS when no attempt follows, and by close()", async function () {
    for (const how of ["timer", "close"] as const) {
      const file = path.join(dir, `held-${how}.jsonl`);
      const log = how === "timer" ? track(new AuditLog(file)) : new AuditLog(file);
      const { result1 } = await resultQueuedDuringNextAttempt(log);
      if (how === "close") await log.close();
      await result1;
      const { records } = await readAuditFile(file);
      assert.deepEqual(
        records.map((r) => [r.type, r.msgid]),
        [
          ["unlock-attempt", "a1"],
          ["unlock-attempt", "a2"],
          ["unlock-result", "a1"],
        ],
        how,
      );
    }
  });
});

describe("A failed batch: every caller is rejected with an error naming the file, and the writer goes on (docs/audit-log.md#a-failed-write)", function () {
  let dir: string;
  const track = useAuditDir((t) => ({ dir } = t));

  it("rejects every record of a failed batch with an Error naming the file, and recovers later", async function () {
    const file = path.join(dir, "is-a-dir.jsonl");
    await fsp.mkdir(file);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const log = track(new AuditLog(file));
      const results = await Promise.allSettled(
        Array.from({ length: 5 }, (_, i) => log.attempt(recWith({ msgid: `f${i}` }))),
      );
      for (const r of results) {
        assert.equal(r.status, "rejected");
        const err = r.reason;
        assert.ok(err instanceof Error);
        assert.ok(err.message.includes(file), `message names the file: ${err.message}`);
        assert.match(err.message, /^audit log .*: cannot (open|write): /);
      }
      assert.equal(log.stats().records, 0);
      assert.equal(log.stats().failedRecords, 5);

      // A later call tries again: once the obstacle is gone it succeeds.
      await fsp.rmdir(file);
      await log.attempt(recWith({ msgid: "recovered" }));
      const { records } = await readAuditFile(file);
      assert.deepEqual(
        records.map((x) => x.msgid),
        ["recovered"],
      );
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});

// Found by the review of the writer's latency change (e1c28e8); fixed in d73274e.
describe("A failed fsync: the batch is rejected and cut off, the records behind it continue the chain (docs/audit-log.md#a-failed-write)", function () {
  let live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ live, proto, orig } = t));

  it("EIO on fsync (write done) with a result and an attempt queued behind: failed batch rejected, the rest chained after what is on disk", async () => {
    const log = track(new M.AuditLog(live));
    await log.attempt(rec(1));
    let armed = true;
    let behind: Promise<PromiseSettledResult<void>[]> | null = null;
    proto.sync = function (this: unknown, ...a: unknown[]) {
      if (!armed) return orig.sync.apply(this, a);
      armed = false;
      behind = Promise.allSettled([log.result({ ...rec(2), outcome: "accepted", status: 200 }), log.attempt(rec(3))]);
      return Promise.reject(Object.assign(new Error("injected fsync failure"), { code: "EIO" }));
    };
    await assert.rejects(log.attempt(rec(2)), /EIO/);
    proto.sync = orig.sync;
    assert.ok(behind);
    const settled = (await (behind as unknown as Promise<PromiseSettledResult<void>[]>)).map((r) => r.status);
    assert.deepEqual(settled, ["fulfilled", "fulfilled"]);
    await log.attempt(rec(4));
    const v = await verify([live]);
    assert.equal(v.ok, true, v.message);
    const s = jsonLines(live).map((r) => r.seq);
    assert.deepEqual(
      s,
      s.map((_, i) => i + 1),
    );
  });
});

describe("A failed fsync after a whole write: the batch is cut off again, also with a rotation in it (docs/audit-log.md#a-failed-write)", function () {
  let live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ live, proto, orig } = t), "a.jsonl");

  const msgids = async () => {
    const o: string[] = [];
    for await (const r of readAll(live)) o.push(String(r.msgid));
    return o;
  };

  for (const rotate of [false, true])
    for (const statFails of [false, true]) {
      it(`fsync fails after a full write (rotation ${rotate}, fstat fails ${statFails}), records queued behind`, async () => {
        const a = track(new AuditLog(live, rotate ? { maxBytes: 500, keep: 3 } : {}));
        await a.attempt(rec(1));
        await a.attempt(rec(2));
        let behind: Promise<unknown> | null = null;
        let n = 0;
        proto.sync = function (this: unknown, ...x: unknown[]) {
          if (!fs.fstatSync((this as { fd: number }).fd).isDirectory() && ++n === 1) {
            behind = Promise.all([a.attempt(rec("b")), a.attempt(rec("c"))]);
            if (statFails) proto.stat = () => Promise.reject(new Error("stat EIO"));
            return Promise.reject(Object.assign(new Error("fsync"), { code: "EIO" }));
          }
          return orig.sync.apply(this, x);
        };
        await assert.rejects(
          Promise.all([a.attempt(rec("a")), a.result({ ...rec("a"), outcome: "accepted", status: 200 })]),
          /EIO/,
        );
        proto.stat = orig.stat;
        await (behind as Promise<unknown> | null);
        Object.assign(proto, orig); // the sync patch set it: TypeScript cannot see that
        await a.attempt(rec("z"));
        const files = [...(fs.existsSync(`${live}.1`) ? [`${live}.1`] : []), live];
        const v = await verify(files);
        assert.equal(v.ok, true, v.message);
        const ids = await msgids();
        if (!statFails) assert.deepEqual(ids, ["m1", "m2", "mb", "mc", "mz"]);
        else for (const m of ["mb", "mc", "mz"]) assert.ok(ids.includes(m));
        const t = await tail(live, 1);
        assert.equal(t[0].msgid, "mz");
      });
    }
});

// Found by the review of 4742801 (E1..E3); fixed in 12520e7.
describe("A write that always fails: nothing grows, every caller is rejected, the writer recovers (docs/audit-log.md#a-failed-write)", function () {
  let live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ live, proto, orig } = t));

  it("ENOSPC on every write (after a short write of 3 bytes), 50 batches: the file does not grow, every caller is rejected, the writer recovers and the chain goes on at seq 2", async () => {
    const a = track(new AuditLog(live));
    await a.attempt(rec(1));
    const size0 = fs.statSync(live).size;
    proto.write = function (this: unknown, ...args: unknown[]) {
      const [buf, off] = args as [Buffer, number];
      if (buf.length - off > 3) return orig.write.call(this, buf, off, 3);
      return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
    };
    for (let i = 0; i < 50; i++)
      await assert.rejects(
        Promise.all([a.attempt(rec(`x${i}`)), a.result({ ...rec(`x${i}`), outcome: "accepted", status: 200 })]),
      );
    Object.assign(proto, orig);
    assert.equal(fs.statSync(live).size, size0);
    await a.attempt(rec("z"));
    const v = await verify([live]);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 2);
  });
});

describe("A closing record held for the next attempt's write is still a record: one writer per path, logrotate, copytruncate, size rotation, a failed fsync (docs/audit-log.md#group-commit)", function () {
  this.timeout(60000);
  let dir: string, live: string, proto: P, orig: P;
  useAuditDir((t) => ({ dir, live, proto, orig } = t));

  /**
   * Appends the attempt record `m<during>` and, while its batch is being written (its first write
   * call), queues `closing()`: what an unlock's result made after its message was delivered is, in
   * a stream. Returns the closing record's promise (a rejection is handled here too).
   */
  async function queueDuring(
    log: AuditLog,
    during: string,
    closing: () => Promise<void>,
  ): Promise<{ closing: Promise<void> }> {
    let queued: Promise<void> | null = null;
    proto.write = function (this: unknown, ...a: unknown[]) {
      proto.write = orig.write;
      queued = closing();
      queued.catch(() => undefined);
      return orig.write.apply(this, a);
    };
    try {
      await log.attempt(rec(during));
    } finally {
      proto.write = orig.write;
    }
    assert.ok(queued, "the closing record was queued during the attempt's write");
    return { closing: queued as unknown as Promise<void> };
  }

  /** Runs `f` with this test's live file and folder (useAuditDir removes them and puts FileHandle.prototype back). */
  const withDir = <T>(f: (live: string, dir: string) => Promise<T>): Promise<T> => f(live, dir);
  const result = (i: string) => ({ ...rec(i), outcome: "accepted", status: 200 });
  const seqs = (files: string[]) =>
    files.flatMap((f) =>
      fs.existsSync(f)
        ? fs
            .readFileSync(f, "utf8")
            .split("\n")
            .filter(Boolean)
            .map((l) => JSON.parse(l) as { seq: number; msgid: string; type: string })
        : [],
    );

  it("one path opened by two accounts (one writer); the first closes while the other's unlock-result is held: it is written, and the last close() resolves only once it is on disk", async () => {
    await withDir(async (live) => {
      const a = openAuditLog(live, { deferMs: 60_000 });
      const b = openAuditLog(live);
      assert.equal(a, b);
      await a.attempt(rec("A"));
      const held = (await queueDuring(b, "B", () => b.result(result("A")))).closing;
      let heldDone = false;
      void held.then(
        () => {
          heldDone = true;
        },
        () => undefined,
      );
      await a.close(); // one reference released: nothing closes
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      assert.equal(heldDone, false, "still held (60 s deferral, no attempt came)");
      // The fsync of the last close()'s flush is held back until we let it go.
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let syncs = 0;
      proto.sync = function (this: unknown, ...x: unknown[]) {
        syncs++;
        return gate.then(() => orig.sync.apply(this, x));
      };
      let closed = false;
      const closing = b.close().then(() => {
        closed = true;
      });
      await until("the flush's fsync", () => syncs > 0, 5000, 1);
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      assert.equal(closed, false, "close() waits for the held record's fsync");
      release();
      await closing;
      await held;
      assert.deepEqual(
        seqs([live]).map((r) => [r.seq, r.type, r.msgid]),
        [
          [1, "unlock-attempt", "mA"],
          [2, "unlock-attempt", "mB"],
          [3, "unlock-result", "mA"],
        ],
      );
      assert.equal((await verify([live])).ok, true);
    });
  });

  it("redeploy on the same path while an unlock-result is held (the last close() not awaited, a new writer opened at once): the held record lands before the new writer's first record, one chain", async () => {
    await withDir(async (live) => {
      const w1 = openAuditLog(live, { deferMs: 60_000 });
      await w1.attempt(rec("A"));
      const held = (await queueDuring(w1, "B", () => w1.result(result("A")))).closing;
      const closing = w1.close();
      const w2 = openAuditLog(live);
      try {
        assert.notEqual(w2, w1);
        await w2.attempt(rec("C"));
        await Promise.all([held, closing]);
      } finally {
        await w2.close();
      }
      assert.deepEqual(
        seqs([live]).map((r) => [r.seq, r.type, r.msgid]),
        [
          [1, "unlock-attempt", "mA"],
          [2, "unlock-attempt", "mB"],
          [3, "unlock-result", "mA"],
          [4, "unlock-attempt", "mC"],
        ],
      );
      assert.equal((await verify([live])).ok, true);
    });
  });

  it("logrotate renames the file while an unlock-result is held: the held record and the next attempt go to the new file, none to the renamed one; verify passes over both", async () => {
    await withDir(async (live) => {
      const log = new AuditLog(live, { deferMs: 60_000 });
      try {
        await log.attempt(rec("A"));
        const held = (await queueDuring(log, "B", () => log.result(result("A")))).closing;
        fs.renameSync(live, `${live}.1`); // logrotate (create)
        await log.attempt(rec("C"));
        await held;
        await log.close();
        assert.deepEqual(
          seqs([`${live}.1`]).map((r) => r.msgid),
          ["mA", "mB"],
        );
        assert.deepEqual(
          seqs([live]).map((r) => [r.seq, r.type, r.msgid]),
          [
            [3, "unlock-result", "mA"],
            [4, "unlock-attempt", "mC"],
          ],
        );
        const v = await verify([`${live}.1`, live]);
        assert.equal(v.ok, true, v.message);
      } finally {
        await log.close().catch(() => undefined);
      }
    });
  });

  it("logrotate deletes the file while an unlock-result is held, and close() writes it: it is at the configured path", async () => {
    await withDir(async (live) => {
      const log = new AuditLog(live, { deferMs: 60_000 });
      await log.attempt(rec("A"));
      const held = (await queueDuring(log, "B", () => log.result(result("A")))).closing;
      fs.rmSync(live);
      await log.close();
      await held;
      assert.deepEqual(
        seqs([live]).map((r) => [r.seq, r.type, r.msgid]),
        [[3, "unlock-result", "mA"]],
      );
    });
  });

  it("copytruncate while an unlock-result is held: the copy and the live file verify as one log; seq has no gap", async () => {
    await withDir(async (live) => {
      const log = new AuditLog(live, { deferMs: 60_000 });
      try {
        await log.attempt(rec("A"));
        const held = (await queueDuring(log, "B", () => log.result(result("A")))).closing;
        fs.copyFileSync(live, `${live}-copy`);
        fs.truncateSync(live, 0);
        await log.attempt(rec("C"));
        await held;
        await log.close();
        const all = seqs([`${live}-copy`, live]);
        assert.deepEqual(
          all.map((r) => r.seq),
          [1, 2, 3, 4],
        );
        const v = await verify([`${live}-copy`, live]);
        assert.equal(v.ok, true, v.message);
      } finally {
        await log.close().catch(() => undefined);
      }
    });
  });

  it("size rotation (small maxBytes) with unlock-results held, 40 times over: verify over all files, seq 1..n, every record once", async () => {
    await withDir(async (live, dir) => {
      const log = new AuditLog(live, { deferMs: 60_000, maxBytes: 900, keep: 1000 });
      try {
        await log.attempt(rec("0"));
        const helds: Promise<void>[] = [];
        for (let i = 1; i <= 40; i++)
          helds.push((await queueDuring(log, String(i), () => log.result(result(String(i - 1))))).closing);
        await log.close();
        await Promise.all(helds);
        const files = fs
          .readdirSync(dir)
          .filter((n) => /^audit\.jsonl\.\d+$/.test(n))
          .sort((x, y) => Number(y.split(".").pop()) - Number(x.split(".").pop()))
          .map((n) => path.join(dir, n));
        files.push(live);
        assert.ok(files.length > 5, `rotated: ${files.length} files`);
        const all = seqs(files);
        assert.deepEqual(
          all.map((r) => r.seq),
          all.map((_, i) => i + 1),
        );
        assert.equal(all.length, 81);
        const v = await verify(files);
        assert.equal(v.ok, true, v.message);
      } finally {
        await log.close().catch(() => undefined);
      }
    });
  });

  it("the fsync of the batch carrying a held unlock-result and the next attempt fails: both callers told, the batch cut off, the next record continues the chain; verify passes", async () => {
    await withDir(async (live) => {
      const log = new AuditLog(live, { deferMs: 60_000 });
      try {
        await log.attempt(rec("A"));
        const held = (await queueDuring(log, "B", () => log.result(result("A")))).closing;
        proto.sync = function () {
          proto.sync = orig.sync;
          return Promise.reject(eio("fsync"));
        };
        await assert.rejects(log.attempt(rec("C")), /EIO/);
        await assert.rejects(held, /EIO/);
        await log.attempt(rec("D"));
        await log.close();
        const all = seqs([live]);
        assert.deepEqual(
          all.map((r) => [r.seq, r.msgid]),
          [
            [1, "mA"],
            [2, "mB"],
            [3, "mD"],
          ],
        );
        const v = await verify([live]);
        assert.equal(v.ok, true, v.message);
      } finally {
        await log.close().catch(() => undefined);
      }
    });
  });
});

describe("One file, one writer: openAuditLog shares one instance per resolved path, reference-counted by close() (docs/audit-log.md#one-file-one-writer)", function () {
  let dir: string;
  useAuditDir((t) => ({ dir } = t));

  it("shares one instance per resolved path, reference-counted by close()", async function () {
    const file = path.join(dir, "shared.jsonl");
    const a = openAuditLog(file);
    const b = openAuditLog(path.join(dir, ".", "sub", "..", "shared.jsonl"));
    assert.equal(a, b, "same instance for the same resolved path");
    const other = openAuditLog(path.join(dir, "other.jsonl"));
    assert.notEqual(a, other);
    await other.close();

    await a.attempt(recWith({ msgid: "1" }));
    await a.close(); // one reference left
    await b.attempt(recWith({ msgid: "2" })); // still open
    const pending = b.attempt(recWith({ msgid: "3" }));
    await b.close(); // last reference: waits for the pending write, then closes
    await pending;
    await assert.rejects(b.attempt(recWith({ msgid: "4" })), /is closed/);

    const c = openAuditLog(file);
    assert.notEqual(c, a, "a fresh instance after the last close");
    await c.attempt(recWith({ msgid: "5" }));
    await c.close();
    const { records } = await readAuditFile(file);
    assert.deepEqual(
      records.map((r) => r.msgid),
      ["1", "2", "3", "5"],
    );
  });
});

describe("One file, one writer: a path through a linked folder is the same log (docs/audit-log.md#one-file-one-writer)", function () {
  let dir: string;
  useAuditDir((t) => ({ dir } = t));

  it("one writer per path: two opens of one file (also through a linked folder) share the instance and the chain", async () => {
    fs.mkdirSync(path.join(dir, "real"));
    fs.symlinkSync(path.join(dir, "real"), path.join(dir, "alias"));
    const a = openAuditLog(path.join(dir, "real", "x.jsonl"));
    const b = openAuditLog(path.join(dir, "alias", "x.jsonl"));
    try {
      assert.equal(a, b);
      await Promise.all([a.attempt(rec(1)), b.attempt(rec(2)), a.attempt(rec(3))]);
    } finally {
      await a.close();
      await b.close();
    }
    assert.deepEqual(seqs(path.join(dir, "real", "x.jsonl")), [1, 2, 3]);
  });
});

// Found by the review of issue 13's audit log (87af7f3); fixed in 5da4fe3.
describe("One file, one writer: a hard link is the same log (docs/audit-log.md#one-file-one-writer)", function () {
  function rec(msgid: string): AuditBase {
    return { actor: "alice", deviceId: 101, lockId: null, door: "Front", msgid };
  }

  this.timeout(30000);

  // docs/audit-log.md#one-file-one-writer: accounts of one runtime whose audit files are the same path write
  // through one writer and one chain. Two paths naming one file through a hard link are the
  // same file: two writers each keep their own seq and interleave, and the chain breaks.
  it("one writer and one chain per file: two paths that are one file through a hard link share the writer", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "b13-hl-"));
    const a = path.join(dir, "a.jsonl");
    const b = path.join(dir, "b.jsonl");
    const la = openAuditLog(a);
    const opened: { close(): Promise<void> }[] = [la];
    try {
      await la.attempt(rec("1"));
      fs.linkSync(a, b);
      const lb = openAuditLog(b);
      opened.push(lb);
      await lb.attempt(rec("2"));
      await la.attempt(rec("3"));
      await lb.attempt(rec("4"));
      assert.deepEqual(
        jsonLines(a).map((r) => r.seq),
        [1, 2, 3, 4],
      );
      const report = await verify([a]);
      assert.equal(report.ok, true, report.message);
    } finally {
      for (const l of opened) await l.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Found by the review of the writer's latency change (e1c28e8); fixed in d73274e.
describe("One file, one writer: concurrent appends through two opens make one chain; a redeploy's writer opens after the old one is done (docs/audit-log.md#one-file-one-writer)", function () {
  let live: string, proto: P, orig: P;
  useAuditDir((t) => ({ live, proto, orig } = t));

  it("openAuditLog twice on one path, concurrent appends from both: one chain", async () => {
    const a = M.openAuditLog(live);
    const b = M.openAuditLog(live);
    try {
      assert.equal(a, b);
      const ps: Promise<void>[] = [];
      for (let i = 0; i < 40; i++)
        ps.push((i % 2 ? a : b)[i % 3 ? "attempt" : "result"]({ ...rec(i), outcome: "o", status: 1 }));
      await Promise.all(ps);
    } finally {
      await a.close();
      await b.close();
    }
    assert.deepEqual(
      jsonLines(live).map((r) => r.seq),
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    assert.equal((await verify([live])).ok, true);
  });

  // Failed on e1c28e8 and 7ca9fe8: close() removed the shared instance at once, while
  // its records are still being written; an openAuditLog on the same path in that window (a
  // Node-RED redeploy: old node closes, new node opens) makes a second writer on the same file,
  // which resumes the chain from the disk before the first one's queued records land.
  it("redeploy: the last close() of a shared writer with records in flight, then openAuditLog on the same path: one chain (no duplicate seq)", async () => {
    const a = M.openAuditLog(live);
    await a.attempt(rec(1));
    // A's next write waits until B's first write has started (or 1 s), so B opens meanwhile.
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
      setTimeout(r, 1000).unref();
    });
    let calls = 0;
    proto.write = function (this: unknown, ...a2: unknown[]) {
      calls += 1;
      if (calls === 1) return gate.then(() => orig.write.apply(this, a2));
      release();
      return orig.write.apply(this, a2);
    };
    const pending = [a.attempt(rec(2)), a.result({ ...rec(2), outcome: "accepted", status: 200 })];
    const closing = a.close();
    const b = M.openAuditLog(live);
    try {
      const pb = b.attempt(rec(3));
      await Promise.all([...pending, closing, pb]);
      proto.write = orig.write;
    } finally {
      await b.close();
    }
    const s = jsonLines(live).map((r) => r.seq);
    const v = await verify([live]);
    assert.deepEqual(s, [1, 2, 3, 4], `seq on disk ${JSON.stringify(s)}; verify: ${v.message}`);
    assert.equal(v.ok, true, v.message);
  });
});

describe("The file: a missing folder of the audit file is created with mode 0700 (docs/audit-log.md#the-file)", function () {
  let dir: string;
  let log: AuditLog | null = null;
  beforeEach(async function () {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "door-audit-folder-"));
  });
  afterEach(async function () {
    await log?.close().catch(() => undefined);
    log = null;
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("two missing folders a/b: both created 0700, the file 0600", async function () {
    const file = path.join(dir, "a", "b", "audit.jsonl");
    log = new AuditLog(file);
    await log.attempt({ actor: "alice", deviceId: 12, lockId: null, door: "Front Door", msgid: "m1" });
    assert.equal(((await fsp.stat(path.join(dir, "a"))).mode & 0o777).toString(8), "700");
    assert.equal(((await fsp.stat(path.join(dir, "a", "b"))).mode & 0o777).toString(8), "700");
    assert.equal(((await fsp.stat(file)).mode & 0o777).toString(8), "600");
  });
});
