/**
 * Break review of cc2da17 (door-unlock "sending" in a setImmediate), 511ac43 (the demo's
 * instance header, the test Redis server's process_id check) and 81ac3b5 (verify's fork needs
 * another record than the one already there; the writer keeps its chain position when a reopen
 * or a cut fails; the open check reads at most 4 MiB of blank/NUL lines), by a helper that did
 * not write them. F1..F3 failed on cc2da17. Faults are forced by patching FileHandle.prototype
 * (no timing, no sleeps). Fixed: `rewound` counts the writer's goings back (1, 2, ...), so a
 * batch written again never repeats a line a copy may hold (F1, F2); a batch is at most about
 * 1 Mi characters (about 3 MiB), inside what the open check reads (F3; the test now checks the
 * batches' sizes and that a crash leaving the largest as NUL bytes is still taken as ours).
 *
 * F1: the writer's rewrite of a batch whose first record was ALREADY marked `rewound` (the batch
 *     right after a failed write) makes the very same line again; when a copytruncate split that
 *     batch after its first whole line (the RESTART path), the copy ends with that line and the
 *     live file starts with it: 81ac3b5's new `forkedFrom.hash !== hash` rule calls the untampered
 *     log broken ("records reordered, repeated or inserted"). Passed on d62e4dc.
 * F2: the same root cause without any failed write: a batch split twice by two copytruncates
 *     (logrotate with dateext, within the rewrite bound of 3): the second rewrite repeats the
 *     first rewrite's `rewound` line; verify rejects the untampered log.
 * F3: the 4 MiB bound of the open check is below one batch the writer itself writes (1024
 *     records at the field caps, MAX_TEXT 200 characters, JSON-escaped): a crash that leaves the
 *     first batch of a fresh live file as NUL bytes (the crash model of torn5 F6) leaves a log
 *     verify accepts and that the writer and checkAuditPath refuse as "not its own" (every unlock
 *     then fails, nothing is sent, until someone edits the log by hand).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, MAX_BATCH } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { checkAuditPath } from "../src/audit/paths.js";
import { cliVerify, eio, fileHandlePrototype, lines, type P, parsed, rec, text } from "./helpers/audit-faults.js";


describe("break-19: confirmed defects", function () {
  this.timeout(60000);
  let dir: string, live: string, proto: P, orig: P;
  const logs: AuditLog[] = [];
  const track = (l: AuditLog): AuditLog => (logs.push(l), l);
  before(async () => ({ proto, orig } = await fileHandlePrototype()));
  beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "b19-")); live = path.join(dir, "audit.jsonl"); });
  afterEach(async () => {
    Object.assign(proto, orig);
    for (const l of logs.splice(0)) await l.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });

  /** A write call that writes the buffer up to its first record's newline, plus `extra` bytes of the next line (a short write). */
  const firstLinePlus = (buf: Buffer, off: number, len: number, extra: number): number => {
    let i = off;
    while (i < off + len && buf[i] === 0x0a) i++; // a leading newline (a torn line before)
    const nl = buf.indexOf(0x0a, i);
    return Math.min(len, nl - off + 1 + extra);
  };

  it("F1: a failed fsync, then the next batch split by a copytruncate after its first whole line: the rewrite repeats the same `rewound` line and verify rejects the untampered log (exit 1)", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    // 1. A batch whose fsync fails: cut off again (the cut works), the writer has gone back.
    proto.sync = function () {
      proto.sync = orig.sync;
      return Promise.reject(eio("fsync"));
    };
    const failed = await a.attempt(rec("x")).then(() => "ok", (e: Error) => e.message);
    assert.match(failed, /fsync/);
    // 2. The next batch (its first record marked `rewound`): the first write call is short (the
    //    first line and 2 bytes of the second), then logrotate copytruncate (dateext copy).
    const copy = `${live}-20261124`;
    let w = 0;
    proto.write = function (this: unknown, ...x: unknown[]) {
      const [buf, off, len] = x as [Buffer, number, number];
      if (++w === 1) {
        return orig.write.call(this, buf, off, firstLinePlus(buf, off, len, 2)).then((r) => {
          fs.copyFileSync(live, copy);
          fs.truncateSync(live, 0);
          return r;
        });
      }
      return orig.write.call(this, buf, off, len);
    };
    const outcomes = await Promise.all(["a", "b", "c"].map((k) => a.attempt(rec(k)).then(() => "ok", (e: Error) => e.message)));
    Object.assign(proto, orig);
    await a.attempt(rec("d"));
    await a.close();
    assert.deepEqual(outcomes, ["ok", "ok", "ok"]);
    const c = parsed(copy), l = parsed(live);
    // The copy ends with seq 3 (ma, rewound), whole; the live file starts with the same line.
    assert.deepEqual(c.map((r) => [r.seq, r.msgid, typeof r.rewound === "number"]), [[1, "m1", false], [2, "m2", false], [3, "ma", true]], text(copy));
    assert.deepEqual(l.map((r) => [r.seq, r.msgid, typeof r.rewound === "number"]), [[3, "ma", true], [4, "mb", false], [5, "mc", false], [6, "md", false]], text(live));
    const v = await cliVerify([copy, live]);
    assert.equal(v.code, 0, `untampered log (every record written by the writer, faults only) must verify; verify said:\n${v.out}\ncopy: ${text(copy)}\nlive: ${text(live)}`);
  });

  it("F2: a batch split twice by two copytruncates (dateext copies, within the rewrite bound): the second rewrite repeats the first rewrite's `rewound` line; verify rejects the untampered log", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let n = 0;
    proto.write = function (this: unknown, ...x: unknown[]) {
      const [buf, off, len] = x as [Buffer, number, number];
      if (off === 0 && n < 2) {
        n += 1;
        return orig.write.call(this, buf, off, firstLinePlus(buf, off, len, 2)).then((r) => {
          fs.copyFileSync(live, `${live}-2026112${n}`);
          fs.truncateSync(live, 0);
          return r;
        });
      }
      return orig.write.call(this, buf, off, len);
    };
    const outcomes = await Promise.all(["a", "b"].map((k) => a.attempt(rec(k)).then(() => "ok", (e: Error) => e.message)));
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    await a.close();
    assert.deepEqual(outcomes, ["ok", "ok"]);
    const files = [`${live}-20261121`, `${live}-20261122`, live];
    const v = await verify(files);
    assert.equal(v.ok, true, `untampered log must verify: ${v.message}\n${files.map((f) => `${path.basename(f)}: ${text(f)}`).join("\n")}`);
  });

  it("F3: 1024 records at the field caps (more than 4 MiB) queued at once go out in batches of at most about 3 MiB; a crash leaving the largest as NUL bytes at the start of a fresh live file: verify, the path check and the writer all take the log as ours", async () => {
    // Fields at their caps (MAX_TEXT 200 characters), characters JSON writes as \uXXXX.
    const big = "\u0001".repeat(200);
    const src = path.join(dir, "src.jsonl");
    const a0 = track(new AuditLog(src));
    await a0.attempt(rec(1));
    const before = fs.statSync(src).size;
    const writes: number[] = [];
    proto.write = function (this: unknown, ...x: unknown[]) {
      const [, , len] = x as [Buffer, number, number];
      writes.push(len);
      return orig.write.apply(this, x);
    };
    await Promise.all(Array.from({ length: MAX_BATCH }, (_, i) =>
      a0.rejected({ actor: big, deviceId: 101, lockId: null, door: big, msgid: big.slice(0, 190) + String(i).padStart(10, "0"), outcome: big, reason: big })));
    Object.assign(proto, orig);
    await a0.close();
    const total = fs.statSync(src).size - before;
    assert.ok(total > 4 * 1024 * 1024, `the records are ${total} bytes`);
    const largest = Math.max(...writes);
    assert.ok(writes.length > 1 && largest <= 3.1 * 1024 * 1024, `batches of ${writes.join(", ")} bytes`);
    // The rotated file holds seq 1; the crash hit the largest batch of the new live file: its
    // size was extended, its data not written (NUL bytes), as in torn5 F6.
    fs.writeFileSync(`${live}.1`, lines(src)[0] + "\n");
    fs.writeFileSync(live, Buffer.alloc(largest));
    const v = await verify([`${live}.1`, live]);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(2)).then(() => null, (e: Error) => e.message);
    assert.equal(v.ok, true, v.message);
    assert.equal(c.ok, true, `checkAuditPath: ${c.ok ? "" : c.problem}`);
    assert.equal(err, null, `the writer refuses its own log: ${err}`);
  });
});
