/**
 * Fifth break review of the torn-write work (7f1af60: the fork rule of verify, the writer's
 * rewrite of a batch split by a copytruncate, the open check's blank-line skip) by a helper that
 * did not write it. F1..F7 failed on 7f1af60. Faults forced by patching FileHandle.prototype / fs
 * (no timing). Fixed: the writer marks the first record it writes after going back (`rewound:
 * true`) and verify accepts a fork only there (F1..F3); batches are at most MAX_BATCH records, well
 * inside verify's look-back (F4); a copytruncate after a short write is seen before the rest is
 * written, and the batch is written again whole without an ftruncate (F5); lines of NUL bytes
 * alone are skipped by the open check as verify skips them (F6); a failed rewrite keeps the chain
 * position it knows (F7).
 *
 * F1..F3 share one root: verify accepts any file boundary where the new file's first record has
 * the seq and prev of one of the last 4096 records of the file before it, whatever those records
 * and the new file are. Nothing ties a fork to the writer (the record that goes on from a fork
 * carries no mark the writer set), so naive edits that need no hash (copying a seq and a prev
 * from a neighbouring line, copying a file) pass: CONTRACT.md "Tamper-evident chain" says an
 * inserted record breaks the chain. A fix that keeps the legitimate forks: the writer marks the
 * record it writes after a cut-off or rewritten batch (that record is pinned by the hash in the
 * next one), and verify accepts a fork only at a marked record.
 * F4: the lookback bound makes an untampered log fail. F5, F7: the split-rewrite's failure path
 * drops the chain position (dropHandle()) instead of keeping the one it knows (startPos), and
 * leaves the batch's tail in the file when the truncate fails. F6: the open check still judges
 * only a 64 KiB window, so a long NUL run (a crash) at a file's start is foreign to the writer.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { checkAuditPath } from "../src/audit/paths.js";
import { readAll } from "../src/audit/reader.js";
import { cliVerify, fileHandlePrototype, lines, type P, rec, text } from "./helpers/audit-faults.js";


describe("break-13 torn, fifth review", function () {
  let dir: string, live: string, proto: P, orig: P;
  const logs: AuditLog[] = [];
  const track = (l: AuditLog): AuditLog => (logs.push(l), l);
  before(async () => ({ proto, orig } = await fileHandlePrototype()));
  beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "r5-")); live = path.join(dir, "audit.jsonl"); });
  afterEach(async () => { Object.assign(proto, orig); for (const l of logs.splice(0)) await l.close().catch(() => undefined); await fsp.rm(dir, { recursive: true, force: true }); });

  /** A genuine log of `n` records, rotated by the writer's way (rename) after `cut` records: `<live>.1` then `<live>`. */
  async function rotatedLog(n: number, cut: number, file = live): Promise<void> {
    const a = track(new AuditLog(file, { maxBytes: 0 }));
    for (let i = 1; i <= n; i++) await a.attempt(rec(i));
    await a.close();
    const all = lines(file);
    fs.writeFileSync(`${file}.1`, all.slice(0, cut).join("\n") + "\n");
    fs.writeFileSync(file, all.slice(cut).join("\n") + "\n");
  }

  it("F1: one forged record appended to a rotated file (seq and prev copied from the next file's first line, no hash computed) passes `door-access-audit verify` (exit 0) and shows in the log's records", async () => {
    await rotatedLog(6, 3);
    const next = JSON.parse(lines(live)[0]!) as { seq: number; prev: string };
    const forged = { type: "unlock-attempt", ts: "2025-03-01T03:00:00.000Z", actor: "bob", deviceId: 999, lockId: null, door: "Vault", msgid: "forged", seq: next.seq, prev: next.prev };
    fs.appendFileSync(`${live}.1`, JSON.stringify(forged) + "\n");
    const shown = [];
    for await (const r of readAll(live)) shown.push(r.msgid);
    const v = await cliVerify([live]);
    assert.ok(shown.includes("forged"), "the forged record is read as a record of the log");
    assert.equal(v.code, 1, `an inserted record must break the chain; verify said:\n${v.out}`);
  });

  it("F2: records duplicated at a file boundary pass `door-access-audit verify` (exit 0): the last line of audit.jsonl.1 copied to the top of audit.jsonl, or the whole rotated file copied (`cp audit.jsonl.1 audit.jsonl.2`); tail/export read them twice", async () => {
    await rotatedLog(6, 3);
    const keep = { r: fs.readFileSync(`${live}.1`, "utf8"), l: fs.readFileSync(live, "utf8") };
    fs.writeFileSync(live, lines(`${live}.1`)[2] + "\n" + keep.l); // one line inserted: a copy of seq 3
    const oneLine = await cliVerify([live]);
    fs.writeFileSync(live, keep.l);
    fs.copyFileSync(`${live}.1`, `${live}.2`);
    let count = 0;
    for await (const r of readAll(live)) if (r.msgid === "m1") count++;
    const wholeFile = await cliVerify([live]);
    assert.equal(count, 2, "m1 read twice");
    assert.deepEqual([oneLine.code, wholeFile.code], [1, 1], `inserted (duplicated) records must break the chain; verify said:\n${oneLine.out}\n${wholeFile.out}`);
  });

  it("F3: two independent logs spliced (another log's file, or a one-line forged file with seq 1 and prev 64 zeros, put before a log that starts at seq 1) pass verify", async () => {
    const other = path.join(dir, "other.jsonl");
    const o = track(new AuditLog(other));
    await o.attempt(rec("other", "mallory"));
    await o.close();
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    await a.close();
    const spliced = await verify([other, live]);
    const forgedFile = path.join(dir, "forged.jsonl");
    const forged = { type: "unlock-attempt", ts: "2025-03-01T03:00:00.000Z", actor: "bob", deviceId: 999, lockId: null, door: "Vault", msgid: "forged", seq: 1, prev: "0".repeat(64) };
    fs.writeFileSync(forgedFile, JSON.stringify(forged) + "\n");
    const withForged = await verify([forgedFile, live]);
    assert.deepEqual([spliced.ok, withForged.ok], [false, false], `spliced: ${spliced.message} ${spliced.notes.join("; ")}\nforged file first: ${withForged.message} ${withForged.notes.join("; ")}`);
  });

  it("F4: a failed batch of more than 4096 records (a burst) while logrotate copies: the untampered log is called broken ('repeated or inserted'), the fork is beyond verify's 4096-record lookback", async function () {
    this.timeout(60000);
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    const copy = `${live}-20261124`;
    proto.sync = function () {
      fs.copyFileSync(live, copy); // logrotate's copy while the fsync runs (and fails)
      return Promise.reject(Object.assign(new Error("injected fsync"), { code: "EIO" }));
    };
    // A burst: 4200 rejected inputs queued within one 20 ms window: one batch.
    const burst = Array.from({ length: 4200 }, (_, i) => a.rejected({ ...rec(`b${i}`), outcome: "rejected", reason: "invalid input" }).then(() => "ok", () => "failed"));
    const results = await Promise.all(burst);
    assert.ok(results.every((r) => r === "failed"), "the burst's batch failed");
    Object.assign(proto, orig);
    fs.truncateSync(live, 0); // logrotate's truncate
    await a.attempt(rec("z"));
    await a.close();
    const v = await verify([copy, live]);
    assert.equal(v.ok, true, `untampered log: ${v.message}`);
  });

  it("F5: a copytruncate right after a batch's short write (then ftruncate failing): the batch is written again whole in the emptied file before any fsync, no ftruncate needed; nothing rejected stays in the log, verify passes, the next unlock is written", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let w = 0;
    proto.write = function (this: unknown, ...x: unknown[]) {
      const [buf, off, len] = x as [Buffer, number, number];
      if (++w === 1) return orig.write.call(this, buf, off, 30).then((r) => { fs.copyFileSync(live, `${live}.1`); fs.truncateSync(live, 0); return r; });
      return orig.write.call(this, buf, off, len);
    };
    proto.truncate = function () { return Promise.reject(Object.assign(new Error("injected ftruncate"), { code: "EIO" })); };
    // Three records in one batch: the first write call takes 30 bytes, copytruncate, the rest.
    const batch = [a.attempt(rec("a")), a.attempt(rec("b")), a.attempt(rec("c"))].map((p) => p.then(() => "ok", (e: Error) => e.message));
    const outcomes = await Promise.all(batch);
    Object.assign(proto, orig);
    const next = await a.attempt(rec("d")).then(() => null, (e: Error) => e.message);
    const v = await verify([`${live}.1`, live]);
    assert.deepEqual(outcomes, ["ok", "ok", "ok"]);
    assert.equal(next, null);
    assert.deepEqual(lines(live).map((l) => (JSON.parse(l) as { msgid: string }).msgid), ["ma", "mb", "mc", "md"], text(live));
    assert.equal(v.ok, true, `${v.message}\n.1: ${text(`${live}.1`)}\nlive: ${text(live)}`);
  });

  it("F5, the narrower case (a known limit, README): the copytruncate comes between the check after a short write and the next write call, and ftruncate fails: the batch is refused with a clear error, nothing is resolved, no unhandled rejection", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let w = 0;
    proto.write = function (this: unknown, ...x: unknown[]) {
      const [buf, off, len] = x as [Buffer, number, number];
      w += 1;
      if (w === 1) return orig.write.call(this, buf, off, 30);
      if (w === 2) { fs.copyFileSync(live, `${live}.1`); fs.truncateSync(live, 0); }
      return orig.write.call(this, buf, off, len);
    };
    proto.truncate = function () { return Promise.reject(Object.assign(new Error("injected ftruncate"), { code: "EIO" })); };
    const outcomes = await Promise.all([a.attempt(rec("a")), a.attempt(rec("b"))].map((p) => p.then(() => "ok", (e: Error) => e.message)));
    Object.assign(proto, orig);
    for (const o of outcomes) assert.match(o, /truncated while the batch was written/);
  });

  it("F6: a crash left more than 64 KiB of NUL bytes at the start of a fresh live file (a big batch, size extended, data not written): verify accepts it, the writer refuses its own log", async () => {
    fs.writeFileSync(`${live}.1`, "");
    const a0 = track(new AuditLog(path.join(dir, "src.jsonl")));
    for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
    await a0.close();
    fs.copyFileSync(path.join(dir, "src.jsonl"), `${live}.1`); // the rotated file
    fs.writeFileSync(live, Buffer.alloc(70000)); // the new live file after the crash
    const v = await verify([`${live}.1`, live]);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(3)).then(() => null, (e: Error) => e.message);
    assert.equal(v.ok, true, v.message);
    assert.equal(c.ok, true, `checkAuditPath: ${c.ok ? "" : c.problem}; writer: ${err}`);
    assert.equal(err, null, `writer: ${err}`);
  });
  it("F7: a batch split four times (the rewrite bound) while logrotate copies with dateext: the writer forgets where the chain stands and the next record restarts the chain at seq 1", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let n = 0;
    proto.write = function (this: unknown, ...x: unknown[]) {
      const [buf, off, len] = x as [Buffer, number, number];
      if (off === 0 && n < 4) {
        n += 1;
        return orig.write.call(this, buf, off, 30).then((r) => { fs.copyFileSync(live, `${live}-2026112${n}`); fs.truncateSync(live, 0); return r; });
      }
      return orig.write.call(this, buf, off, len);
    };
    const r = await a.attempt(rec("a")).then(() => "ok", (e: Error) => e.message);
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    await a.close();
    const z = JSON.parse(lines(live)[0]!) as { seq: number };
    const v = await verify([1, 2, 3, 4].map((k) => `${live}-2026112${k}`).concat(live));
    assert.match(r, /truncated while the batch was written/);
    assert.equal(z.seq, 3, `the next record after seq 2 got seq ${z.seq}; verify: ${v.ok} ${v.message} ${v.notes.join("; ")}`);
  });
});
