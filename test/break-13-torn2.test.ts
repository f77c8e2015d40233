/**
 * Second break review of the torn-write work (abce9a2 + 4742801) by a helper that did not write
 * it. Three defects it confirmed; each test failed on 4742801:
 * - E1, E1b: a copytruncate during a failed batch (between the write and a failing fsync, or
 *   between two writes before ENOSPC): the batch's whole records were in the copy `<name>.1`,
 *   the cut of the emptied live file counted as clean, the writer kept its position and the next
 *   record repeated a seq (CONTRACT.md "Tamper-evident chain": +1 for each record, continuing
 *   across rotated files; verify failed on a log nobody touched). A regression of 4742801.
 * - E2: another program's JSON Lines file whose first line is valid JSON starting
 *   `{"type":"unlock-` was taken for a torn start of ours and appended to (CONTRACT.md "Audit
 *   log": the package never appends to an existing file that is not one of its audit logs).
 * - E3, E3b: a file whose first lines are all torn starts (two crashes, or two failed batches
 *   whose cut failed too) was refused by the writer while verify accepted it: every later unlock
 *   stopped.
 * E4, H1, H2 held. Faults are forced by patching FileHandle.prototype, not timed.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, type AuditBase } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { checkAuditPath } from "../src/audit/paths.js";

const rec = (i: number | string): AuditBase => ({ actor: "alice", deviceId: 101, lockId: null, door: "Front Door", msgid: `m${i}` });
const text = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "<missing>");
type P = { write: (...a: unknown[]) => Promise<unknown>; sync: (...a: unknown[]) => Promise<unknown>; truncate: (...a: unknown[]) => Promise<unknown> };

describe("break-13 torn, second review: copytruncate in a failed batch, foreign unlock-* lines, torn starts", function () {
  let dir: string, live: string, proto: P, orig: P;
  const logs: AuditLog[] = [];
  const track = (l: AuditLog): AuditLog => (logs.push(l), l);
  before(async () => {
    const t = await fsp.mkdtemp(path.join(os.tmpdir(), "r15p-"));
    const h = await fsp.open(path.join(t, "p"), "w");
    proto = Object.getPrototypeOf(h);
    await h.close();
    await fsp.rm(t, { recursive: true });
    orig = { write: proto.write, sync: proto.sync, truncate: proto.truncate };
  });
  beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "r15-")); live = path.join(dir, "audit.jsonl"); });
  afterEach(async () => { Object.assign(proto, orig); for (const l of logs.splice(0)) await l.close().catch(() => undefined); await fsp.rm(dir, { recursive: true, force: true }); });

  it("E1: copytruncate while a fully written batch's fsync runs, fsync fails: the next record does not repeat a seq already in <name>.1", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let n = 0;
    proto.sync = function (this: unknown, ...x: unknown[]) {
      if (++n === 1) {
        fs.copyFileSync(live, `${live}.1`); // logrotate copytruncate while the fsync runs
        fs.truncateSync(live, 0);
        return Promise.reject(Object.assign(new Error("injected fsync"), { code: "EIO" }));
      }
      return orig.sync.apply(this, x);
    };
    await assert.rejects(a.attempt(rec("a")), /EIO/);
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, `${v.message}\n--- .1:\n${text(`${live}.1`)}--- live:\n${text(live)}`);
  });

  it("E1b: copytruncate between two write calls after a whole record of the batch was written, then ENOSPC", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let calls = 0;
    let firstLen = 0;
    proto.write = function (this: unknown, ...args: unknown[]) {
      calls += 1;
      const [buf, off] = args as [Buffer, number];
      if (calls === 1) {
        firstLen = buf.indexOf(0x0a) + 1; // exactly the batch's first record and its newline
        return orig.write.call(this, buf, off, firstLen).then((x) => {
          fs.copyFileSync(live, `${live}.1`);
          fs.truncateSync(live, 0);
          return x;
        });
      }
      if (calls === 2) return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
      return orig.write.apply(this, args);
    };
    await assert.rejects(Promise.all([a.attempt(rec("a")), a.attempt(rec("b"))]), /ENOSPC/);
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, `${v.message}\n--- .1:\n${text(`${live}.1`)}--- live:\n${text(live)}`);
  });

  it("E2: an existing JSON Lines file of another program whose lines start {\"type\":\"unlock-... is refused (never appended to)", async () => {
    const foreign = '{"type":"unlock-door","entity":"lock.front","user":"bob"}\n';
    fs.writeFileSync(live, foreign);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const wrote = await a.attempt(rec(1)).then(() => true, () => false);
    const v = await verify([live]);
    assert.equal(c.ok, false, `checkAuditPath accepted it; writer wrote: ${wrote}; verify: ${v.message}\n${text(live)}`);
    assert.equal(wrote, false, `writer appended to it; verify: ${v.message}\n${text(live)}`);
  });

  it("E3: a torn prefix first line followed by a torn second record (two crashes): verify accepts; the writer must not refuse it", async () => {
    fs.writeFileSync(live, '{"type":"unl\n{"type":"unlock-attempt","ts":"2026-11-24T');
    const v0 = await verify([live]);
    assert.notEqual(v0.ok, false, v0.message);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(1)).then(() => null, (e: Error) => e.message);
    assert.equal(c.ok, true, `checkAuditPath: ${c.ok ? "" : c.problem}; writer: ${err}`);
    assert.equal(err, null);
  });

  it("E3b: the same produced by the writer itself: first batch torn at 5 bytes with the cut failing, next batch torn after 8 bytes with the cut failing", async () => {
    const a = track(new AuditLog(live));
    let calls = 0;
    proto.truncate = () => Promise.reject(Object.assign(new Error("injected"), { code: "EIO" }));
    proto.write = function (this: unknown, ...args: unknown[]) {
      calls += 1;
      const [buf, off] = args as [Buffer, number];
      if (calls === 1) return orig.write.call(this, buf, off, 5);
      if (calls === 3) return orig.write.call(this, buf, off, 8);
      return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
    };
    await assert.rejects(a.attempt(rec("a")), /ENOSPC/);
    await assert.rejects(a.attempt(rec("b")), /ENOSPC/);
    Object.assign(proto, orig);
    const v0 = await verify([live]);
    const err = await a.attempt(rec("z")).then(() => null, (e: Error) => e.message);
    assert.equal(err, null, `file ${JSON.stringify(text(live))}; verify before: ${v0.message}`);
  });

  it("E4: ENOSPC forever: no growth, every caller rejected, writer recovers", async () => {
    const a = track(new AuditLog(live));
    await a.attempt(rec(1));
    const size0 = fs.statSync(live).size;
    proto.write = function (this: unknown, ...args: unknown[]) {
      const [buf, off] = args as [Buffer, number];
      if (buf.length - off > 3) return orig.write.call(this, buf, off, 3);
      return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
    };
    for (let i = 0; i < 50; i++) await assert.rejects(Promise.all([a.attempt(rec(`x${i}`)), a.result({ ...rec(`x${i}`), outcome: "accepted", status: 200 })]));
    Object.assign(proto, orig);
    assert.equal(fs.statSync(live).size, size0);
    await a.attempt(rec("z"));
    const v = await verify([live]);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 2);
  });
  it("H1 (held): logrotate rename to <name>.1 (create) while a batch's fsync fails: chain continues", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    proto.sync = function () { fs.renameSync(live, `${live}.1`); proto.sync = orig.sync; return Promise.reject(Object.assign(new Error("f"), { code: "EIO" })); };
    await assert.rejects(a.attempt(rec("a")), /EIO/);
    await a.attempt(rec("z"));
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, v.message); assert.equal(v.lastSeq, 3);
    assert.ok(!text(`${live}.1`).includes('"ma"'));
  });
  it("H2 (held): size rotation inside the failed batch, partial write then ENOSPC, cut succeeds: chain continues from .1", async () => {
    const a = track(new AuditLog(live, { maxBytes: 400, keep: 3 }));
    await a.attempt(rec(1)); await a.attempt(rec(2));
    let calls = 0;
    proto.write = function (this: unknown, ...args: unknown[]) {
      calls += 1; const [buf, off] = args as [Buffer, number];
      if (calls === 1) return orig.write.call(this, buf, off, 30);
      if (calls === 2) return Promise.reject(Object.assign(new Error("no space"), { code: "ENOSPC" }));
      return orig.write.apply(this, args);
    };
    await assert.rejects(Promise.all([a.attempt(rec("a")), a.result({ ...rec("a"), outcome: "accepted", status: 200 })]), /ENOSPC/);
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, v.message); assert.equal(v.lastSeq, 3);
  });
});
