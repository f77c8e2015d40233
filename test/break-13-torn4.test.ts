/**
 * Fourth break review of the torn-write work (focus 5f59d11) by a helper that did not write it.
 * Faults forced by patching FileHandle.prototype (no timing). On 5f59d11 F1..F6 failed; F1, F3, F4
 * and F5 still failed on the branch's first fix (64810c1). Fixed: F2 (a short head read judged as
 * the file now is), F6 (NUL bytes a crash left are a torn write, for verify and the open check
 * alike), F1 and F4 (verify: a file that goes on from one of the last records of the file before
 * it, same seq and same prev, is a fork a copytruncate left, noted, not a break), F3 (the writer
 * empties a file truncated between two of a batch's write calls and writes the batch again whole),
 * F5 (the open check skips any number of blank lines, as verify does). The last two tests check
 * that the fork rule accepts nothing else (CONTRACT.md "Tamper-evident chain": a deleted,
 * inserted, reordered or edited record breaks the chain).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { checkAuditPath } from "../src/audit/paths.js";
import { fileHandlePrototype, type P, rec, text } from "./helpers/audit-faults.js";



describe("break-13 torn, fourth review", function () {
  let dir: string, live: string, proto: P, orig: P;
  const logs: AuditLog[] = [];
  const track = (l: AuditLog): AuditLog => (logs.push(l), l);
  before(async () => ({ proto, orig } = await fileHandlePrototype()));
  beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "r4-")); live = path.join(dir, "audit.jsonl"); });
  afterEach(async () => { Object.assign(proto, orig); for (const l of logs.splice(0)) await l.close().catch(() => undefined); await fsp.rm(dir, { recursive: true, force: true }); });

  it("F1: copytruncate between cutBack's fstat and its ftruncate: the live file is extended with NUL bytes, the next unlock is refused, verify passes", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    proto.sync = function () { return Promise.reject(Object.assign(new Error("injected fsync"), { code: "EIO" })); };
    let t = 0;
    proto.truncate = function (this: unknown, ...x: unknown[]) {
      if (++t === 1) { fs.copyFileSync(live, `${live}.1`); fs.truncateSync(live, 0); } // logrotate copytruncate in that instant
      return orig.truncate.apply(this, x);
    };
    await assert.rejects(a.attempt(rec("a")), /EIO/);
    Object.assign(proto, orig);
    const err = await a.attempt(rec("z")).then(() => null, (e: Error) => e.message);
    const v = await verify([`${live}.1`, live]);
    assert.equal(err, null, `next unlock refused; verify ok=${v.ok} ${v.message}\nlive: ${text(live)}`);
    assert.equal(v.ok, true, `${v.message}\n.1: ${text(`${live}.1`)}\nlive: ${text(live)}`);
  });

  it("F2: copytruncate between the open's fstat and its head read: the first unlock after a (re)open is refused as 'not a door-access audit record'", async () => {
    const a0 = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
    await a0.close();
    const a = track(new AuditLog(live)); // restart
    let s = 0;
    proto.stat = function (this: unknown, ...x: unknown[]) {
      return orig.stat.apply(this, x).then((st) => {
        if (++s === 1) { fs.copyFileSync(live, `${live}.1`); fs.truncateSync(live, 0); }
        return st;
      });
    };
    const err = await a.attempt(rec(3)).then(() => null, (e: Error) => e.message);
    Object.assign(proto, orig);
    assert.equal(err, null, `refused: ${err}`);
  });

  it("F3: a batch written in two write calls (short write) with a copytruncate between them, no failure: the live file starts mid-record; verify fails and a restarted writer refuses the file", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let w = 0;
    proto.write = function (this: unknown, ...x: unknown[]) {
      const [buf, off, len] = x as [Buffer, number, number];
      w += 1;
      if (w === 1) return orig.write.call(this, buf, off, 30).then((r) => { fs.copyFileSync(live, `${live}.1`); fs.truncateSync(live, 0); return r; });
      return orig.write.call(this, buf, off, len);
    };
    await a.attempt(rec(3));
    Object.assign(proto, orig);
    await a.attempt(rec(4));
    await a.close();
    const v = await verify([`${live}.1`, live]);
    const b = track(new AuditLog(live));
    const err = await b.attempt(rec(5)).then(() => null, (e: Error) => e.message);
    assert.equal(v.ok, true, `${v.message}\nlive: ${text(live)}`);
    assert.equal(err, null, `restart refused: ${err}`);
  });
  it("F4: logrotate copies (dateext) while a batch's fsync fails, the writer cuts the batch off, logrotate then truncates: the next record repeats a seq in the copy; verify calls the untampered log 'repeated or inserted'", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    const copy = `${live}-20261124`;
    proto.sync = function () {
      fs.copyFileSync(live, copy); // logrotate's copy runs while the fsync does (and fills the disk)
      return Promise.reject(Object.assign(new Error("injected fsync"), { code: "EIO" }));
    };
    await assert.rejects(a.attempt(rec("a")), /EIO/);
    Object.assign(proto, orig);
    fs.truncateSync(live, 0); // logrotate's truncate, after the writer's cut
    await a.attempt(rec("z"));
    const v = await verify([copy, live]);
    assert.ok(v.ok === true || v.broken?.missing !== undefined, `${v.message}\ncopy: ${text(copy)}\nlive: ${text(live)}`);
  });

  it("F5: a log that starts with more than 64 KiB of blank lines, then records: verify passes, the path check and the writer refuse it", async () => {
    const a0 = track(new AuditLog(path.join(dir, "src.jsonl")));
    for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
    await a0.close();
    fs.writeFileSync(live, "\n".repeat(70000) + fs.readFileSync(path.join(dir, "src.jsonl"), "utf8"));
    const v = await verify([live]);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(3)).then(() => null, (e: Error) => e.message);
    assert.equal(v.ok, true, v.message);
    assert.equal(c.ok, true, `checkAuditPath: ${c.ok ? "" : c.problem}; writer: ${err}`);
  });

  it("F6: a crash left the live file's tail as NUL bytes (size extended, data not yet written: XFS/ext4 writeback): verify passes, the writer appends after it, then verify calls the untampered log broken", async () => {
    const a0 = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
    await a0.close();
    fs.appendFileSync(live, Buffer.alloc(40)); // the crash
    const before = await verify([live]);
    const a = track(new AuditLog(live));
    await a.attempt(rec(3));
    const v = await verify([live]);
    assert.equal(v.ok, true, `before: ${before.ok} ${before.message}; after: ${v.message}`);
  });

  it("the fork rule accepts nothing else: a file whose first record repeats a seq of the file before it with another prev is a break", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    await a.close();
    const lines = fs.readFileSync(live, "utf8").trimEnd().split("\n");
    fs.writeFileSync(`${live}.1`, lines.join("\n") + "\n");
    // The next file starts with seq 3 whose prev names seq 1's line (seq 2 skipped): not a fork.
    const forged = JSON.parse(lines[2]) as Record<string, unknown>;
    forged.prev = (JSON.parse(lines[1]) as { prev: string }).prev;
    forged.msgid = "forged";
    fs.writeFileSync(live, JSON.stringify(forged) + "\n");
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, false, v.message);
    assert.equal(v.broken?.file, live);
    assert.equal(v.broken?.line, 1);
  });

  it("the fork rule holds only at a file boundary: a record inside a file that goes back to an earlier seq with the same prev is a break", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    await a.close();
    const lines = fs.readFileSync(live, "utf8").trimEnd().split("\n");
    const again = JSON.parse(lines[2]) as Record<string, unknown>;
    again.msgid = "again"; // seq 3, same prev as line 3: a fork, but inside one file
    fs.writeFileSync(live, [...lines, JSON.stringify(again)].join("\n") + "\n");
    const v = await verify([live]);
    assert.equal(v.ok, false, v.message);
    assert.equal(v.broken?.line, 4);
    assert.match(v.broken?.reason ?? "", /reordered, repeated or inserted/);
  });

  it("F1/F4's fork is named in verify's notes (which seqs of which file were not continued)", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    const copy = `${live}-20261124`;
    proto.sync = function () {
      fs.copyFileSync(live, copy);
      return Promise.reject(Object.assign(new Error("injected fsync"), { code: "EIO" }));
    };
    await assert.rejects(a.attempt(rec("a")), /EIO/);
    Object.assign(proto, orig);
    fs.truncateSync(live, 0);
    await a.attempt(rec("z"));
    const v = await verify([copy, live]);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 3);
    assert.ok(v.notes.some((n) => n.startsWith(`${copy} lines 3-3 (seq 3): not continued`)), v.notes.join("\n"));
  });
});
