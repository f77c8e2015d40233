/**
 * What the break review of abce9a2 (torn writes, cutting a failed batch off) tried that held:
 * fsync failing after a full write (also with a rotation in the batch, and the cut's fstat
 * failing), the reader, verify and the writer agreeing on a whole last record lacking its
 * newline, and fragments standing in for tampered records still breaking the chain.
 * Faults are forced by patching FileHandle.prototype, not timed.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, type AuditBase } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { tail, readAll } from "../src/audit/reader.js";

const rec = (i: number | string): AuditBase => ({ actor: "alice", deviceId: 101, lockId: null, door: "Front Door", msgid: `m${i}` });
type P = { write: (...a: unknown[]) => Promise<unknown>; sync: (...a: unknown[]) => Promise<unknown>; stat: (...a: unknown[]) => Promise<unknown> };
describe("break-13 torn, held: what the break review of abce9a2 tried that held", function () {
  let dir: string, live: string, proto: P, orig: P;
  const logs: AuditLog[] = [];
  before(async () => {
    const t = await fsp.mkdtemp(path.join(os.tmpdir(), "rh-p-"));
    const h = await fsp.open(path.join(t, "p"), "w");
    proto = Object.getPrototypeOf(h);
    await h.close();
    await fsp.rm(t, { recursive: true });
    orig = { write: proto.write, sync: proto.sync, stat: proto.stat };
  });
  beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "rh-")); live = path.join(dir, "a.jsonl"); });
  afterEach(async () => { Object.assign(proto, orig); for (const l of logs.splice(0)) await l.close().catch(() => undefined); await fsp.rm(dir, { recursive: true, force: true }); });
  const msgids = async () => { const o: string[] = []; for await (const r of readAll(live)) o.push(String(r.msgid)); return o; };

  for (const rotate of [false, true]) for (const statFails of [false, true]) {
    it(`fsync fails after a full write (rotation ${rotate}, fstat fails ${statFails}), records queued behind`, async () => {
      const a = new AuditLog(live, rotate ? { maxBytes: 500, keep: 3 } : {}); logs.push(a);
      await a.attempt(rec(1)); await a.attempt(rec(2));
      let behind: Promise<unknown> | null = null; let n = 0;
      proto.sync = function (this: unknown, ...x: unknown[]) {
        if (!fs.fstatSync((this as { fd: number }).fd).isDirectory() && ++n === 1) { behind = Promise.all([a.attempt(rec("b")), a.attempt(rec("c"))]); if (statFails) proto.stat = () => Promise.reject(new Error("stat EIO")); return Promise.reject(Object.assign(new Error("fsync"), { code: "EIO" })); }
        return orig.sync.apply(this, x);
      };
      await assert.rejects(Promise.all([a.attempt(rec("a")), a.result({ ...rec("a"), outcome: "accepted", status: 200 })]), /EIO/);
      proto.stat = orig.stat;
      await behind; Object.assign(proto, orig);
      await a.attempt(rec("z"));
      const files = [...(fs.existsSync(`${live}.1`) ? [`${live}.1`] : []), live];
      const v = await verify(files);
      assert.equal(v.ok, true, v.message);
      const ids = await msgids();
      if (!statFails) assert.deepEqual(ids, ["m1", "m2", "mb", "mc", "mz"]);
      else for (const m of ["mb", "mc", "mz"]) assert.ok(ids.includes(m));
      const t = await tail(live, 1); assert.equal(t[0].msgid, "mz");
    });
  }
  it("reader and verify agree on a whole last record lacking its newline", async () => {
    const a = new AuditLog(live); logs.push(a);
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    fs.truncateSync(live, fs.statSync(live).size - 1);
    const v = await verify([live]); const t = await tail(live, 1);
    assert.equal(v.lastSeq, 3); assert.equal(t[0].seq, 3);
  });
  for (const tamper of ["{", '{"type":"unlock-']) it(`tamper: a middle record replaced by ${tamper} is a break`, async () => {
    const a = new AuditLog(live); logs.push(a);
    for (let i = 1; i <= 4; i++) await a.attempt(rec(i));
    const ls = fs.readFileSync(live, "utf8").split("\n"); ls[1] = tamper; fs.writeFileSync(live, ls.join("\n"));
    assert.equal((await verify([live])).ok, false);
  });
  it("tamper: a fragment as the first line of the oldest file, then a record deleted after it, is a break", async () => {
    const a = new AuditLog(live); logs.push(a);
    for (let i = 1; i <= 4; i++) await a.attempt(rec(i));
    const ls = fs.readFileSync(live, "utf8").split("\n"); ls[0] = "{"; ls.splice(2, 1); fs.writeFileSync(live, ls.join("\n"));
    assert.equal((await verify([live])).ok, false);
  });
});
