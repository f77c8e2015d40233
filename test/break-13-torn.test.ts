/**
 * Break review of abce9a2 (torn writes, cutting a failed batch off) by a helper that did not
 * write it. Three defects it confirmed; each test failed on abce9a2 and on 153b136:
 * - D1: a torn first line in the live file (the first batch after a rotation torn by ENOSPC when
 *   the cut fails too, or by a crash) made every later open refuse the file as "not one of our
 *   audit logs": no attempt record could be written, so no unlock could go out, while verify
 *   said the log was fine (CONTRACT.md "Audit log": every unlock attempt appends; a new live file
 *   continues the chain).
 * - D2: a copytruncate between two write calls of a batch whose fsync then failed left the
 *   rejected record's tail in the live file (the cut only ran when the file held all the bytes
 *   written), and D1 followed.
 * - D3: after a failed batch the writer forgot its chain position and read it back from the live
 *   file and `<name>.1` only: after a logrotate `dateext` rename the chain restarted at seq 1 and
 *   verify failed on a log nobody had touched (CONTRACT.md "Tamper-evident chain": +1 for each
 *   record, continuing across rotated files).
 * Faults are forced by patching FileHandle.prototype, not timed.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, type AuditBase } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";

function rec(i: number | string): AuditBase {
  return { actor: "alice", deviceId: 101, lockId: null, door: "Front Door", msgid: `m${i}` };
}
const text = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "<missing>");
const enospc = () => Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
interface Proto {
  write: (...a: unknown[]) => Promise<unknown>;
  truncate: (...a: unknown[]) => Promise<unknown>;
  sync: (...a: unknown[]) => Promise<unknown>;
}

describe("break-13 torn: a failed batch and a torn start of the live file", function () {
  let dir: string;
  let live: string;
  let proto: Proto;
  let orig: Proto;
  const logs: AuditLog[] = [];
  const track = (l: AuditLog): AuditLog => (logs.push(l), l);
  before(async () => {
    const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), "rv-probe-"));
    const probe = await fsp.open(path.join(tmp, "p"), "w");
    proto = Object.getPrototypeOf(probe) as Proto;
    await probe.close();
    await fsp.rm(tmp, { recursive: true, force: true });
    orig = { write: proto.write, truncate: proto.truncate, sync: proto.sync };
  });
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "rv-"));
    live = path.join(dir, "audit.jsonl");
  });
  afterEach(async () => {
    Object.assign(proto, orig);
    for (const l of logs.splice(0)) await l.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });

  for (const cut of [10, 40]) {
    it(`D1: rotation in the batch, ENOSPC after ${cut} bytes of the new live file, the cut fails: the writer still writes later records, also after a restart`, async () => {
      const a = track(new AuditLog(live, { maxBytes: 400, keep: 3 }));
      await a.attempt(rec(1));
      await a.attempt(rec(2)); // next batch will rotate
      let calls = 0;
      proto.truncate = () => Promise.reject(Object.assign(new Error("injected"), { code: "EIO" }));
      proto.write = function (this: unknown, ...args: unknown[]) {
        calls += 1;
        const [buf, off] = args as [Buffer, number];
        if (calls === 1) return orig.write.call(this, buf, off, cut);
        if (calls === 2) return enospc();
        return orig.write.apply(this, args);
      };
      await assert.rejects(a.attempt(rec("a")), /ENOSPC/);
      Object.assign(proto, orig);
      assert.ok(fs.existsSync(`${live}.1`), "rotated");
      await a.attempt(rec("z")); // D1 (10 bytes) fails here: "first line is not a door-access audit record"
      await a.close();
      const b = track(new AuditLog(live, { maxBytes: 400, keep: 3 })); // a restart / redeploy
      await b.attempt(rec("y")); // D1 (40 bytes) fails here
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, true, `${v.message}\n${text(live)}`);
    });
  }

  it("D2: a copytruncate between two write calls of a batch whose fsync then fails: no fragment of the rejected batch is left, writer and verify go on", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let calls = 0;
    proto.write = function (this: unknown, ...args: unknown[]) {
      calls += 1;
      const [buf, off] = args as [Buffer, number];
      if (calls === 1) {
        const r = orig.write.call(this, buf, off, 40);
        return r.then((x) => {
          fs.copyFileSync(live, `${live}.1`); // logrotate copytruncate between the two writes
          fs.truncateSync(live, 0);
          return x;
        });
      }
      return orig.write.apply(this, args);
    };
    proto.sync = function () {
      return Promise.reject(Object.assign(new Error("injected fsync"), { code: "EIO" }));
    };
    await assert.rejects(a.attempt(rec("a")), /EIO/);
    Object.assign(proto, orig);
    const after = text(live);
    assert.ok(!/"msgid":"ma"/.test(after) && after.length === 0, `the rejected batch's tail is left in the live file: ${JSON.stringify(after)}`);
  });

  it("D2b: same, then the writer goes on and verify runs over the log", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let calls = 0;
    proto.write = function (this: unknown, ...args: unknown[]) {
      calls += 1;
      const [buf, off] = args as [Buffer, number];
      if (calls === 1) {
        return orig.write.call(this, buf, off, 40).then((x) => {
          fs.copyFileSync(live, `${live}.1`);
          fs.truncateSync(live, 0);
          return x;
        });
      }
      return orig.write.apply(this, args);
    };
    proto.sync = () => Promise.reject(Object.assign(new Error("injected fsync"), { code: "EIO" }));
    await assert.rejects(a.attempt(rec("a")), /EIO/);
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, `${v.message}\n--- .1:\n${text(`${live}.1`)}--- live:\n${text(live)}`);
  });

  it("D3: logrotate renames the file (dateext) while a batch's fsync fails: the next record continues the chain (seq does not restart at 1)", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    const rotated = `${live}-20261124`;
    proto.sync = function () {
      fs.renameSync(live, rotated); // logrotate (create, dateext) while the fsync runs
      return Promise.reject(Object.assign(new Error("injected fsync"), { code: "EIO" }));
    };
    await assert.rejects(a.attempt(rec("a")), /EIO/);
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    const v = await verify([rotated, live]);
    assert.equal(v.ok, true, `${v.message}\n--- rotated:\n${text(rotated)}--- live:\n${text(live)}`);
  });

  it("control: same dateext rename with no failure keeps the chain", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    const rotated = `${live}-20261124`;
    fs.renameSync(live, rotated);
    await a.attempt(rec("z"));
    const v = await verify([rotated, live]);
    assert.equal(v.ok, true, v.message);
  });
});

describe("break-13 torn: a crash-only torn start of a live file, and dateext + one failed write", function () {
  let dir: string;
  let live: string;
  const logs: AuditLog[] = [];
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "rv2-"));
    live = path.join(dir, "audit.jsonl");
  });
  afterEach(async () => {
    for (const l of logs.splice(0)) await l.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });
  async function seedRotated(): Promise<void> {
    const a = new AuditLog(live);
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    await a.close();
    fs.renameSync(live, `${live}.1`); // a rotation, then the crash tore the first write of the new live file
  }
  for (const fragment of ['{"type":"u', '{"type":"unlock-attempt","ts":"2026-']) {
    it(`D1c: crash left only ${JSON.stringify(fragment)} in a new live file: verify passes; a new writer and then a restarted one both write`, async () => {
      await seedRotated();
      fs.writeFileSync(live, fragment);
      const v0 = await verify([`${live}.1`, live]);
      assert.equal(v0.ok, true, v0.message);
      const b = new AuditLog(live);
      logs.push(b);
      await b.attempt(rec(3));
      await b.close();
      const c = new AuditLog(live);
      logs.push(c);
      await c.attempt(rec(4));
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, true, v.message);
      assert.equal(v.lastSeq, 4);
    });
  }
  it("D3b: logrotate renamed the file (dateext) and the first write to the new file fails (ENOSPC): the chain does not restart at seq 1", async () => {
    const a = new AuditLog(live);
    logs.push(a);
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    const rotated = `${live}-20261124`;
    fs.renameSync(live, rotated);
    const probe = await fsp.open(path.join(dir, "p"), "w");
    const proto = Object.getPrototypeOf(probe) as { write: (...a: unknown[]) => Promise<unknown> };
    await probe.close();
    const w = proto.write;
    proto.write = () => Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
    try {
      await assert.rejects(a.attempt(rec("a")), /ENOSPC/);
    } finally {
      proto.write = w;
    }
    await a.attempt(rec("z"));
    const v = await verify([rotated, live]);
    assert.equal(v.ok, true, `${v.message}\n${text(live)}`);
  });
});
