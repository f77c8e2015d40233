/**
 * A closing record whose batch failed is never written twice (docs/audit-log.md#a-failed-write):
 * the writer's AuditWriteFailed.inLog is right at every byte of a failed write, and under
 * copytruncate, so that closeWith's three tries write an unlock-result again only when its line is
 * not in the log. On the audit log alone; faults forced with patched FileHandle.prototype methods.
 *
 * Every cut point of a batch is tried (about 460 writer runs per test, some 17 s here): `npm test`
 * runs it, the fast loop not (test/helpers/test-scope.ts). door-unlock's side of the same rule is
 * in test/nodes/door-unlock-closing-records.test.ts.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import { AuditLog, AuditWriteFailed } from "../../src/audit/audit-log.js";
import { verify } from "../../src/audit/chain.js";
import { eio, type P, enospc, lines, rec, useAuditDir } from "../helpers/audit-faults.js";

type R = { seq: number; msgid: string; type: string; rewound?: number; prev: string };

/** The records verify continues (a file whose first record is a `rewound` fork drops the older file's records from that seq). */
function continued(files: string[]): R[] {
  let out: R[] = [];
  for (const f of files) {
    let first = true;
    for (const l of lines(f)) {
      let r: R;
      try {
        r = JSON.parse(l) as R;
      } catch {
        continue;
      }
      if (typeof r.seq !== "number") continue;
      if (first && out.length > 0 && r.seq <= out[out.length - 1].seq && r.rewound)
        out = out.filter((x) => x.seq < r.seq);
      first = false;
      out.push(r);
    }
  }
  return out;
}

/** closeWith's loop: up to 3 appends, stops when the writer says the line stayed in the log. */
async function closeLike(write: () => Promise<void>): Promise<{ tries: number; inLog: boolean[]; lost: boolean }> {
  const inLog: boolean[] = [];
  for (let tries = 1; ; tries++) {
    try {
      await write();
      return { tries, inLog, lost: false };
    } catch (e) {
      inLog.push(e instanceof AuditWriteFailed && e.inLog);
      if (e instanceof AuditWriteFailed && e.inLog) return { tries, inLog, lost: false };
      if (tries >= 3) return { tries, inLog, lost: true };
    }
  }
}

const DOOR = "Tür 😀 Ünïcødé — 東京";

const result = (i: string, actor = "ålice 😀") => ({
  actor,
  deviceId: 101,
  lockId: null,
  door: DOOR,
  msgid: `m${i}`,
  outcome: "accepted",
  status: 200,
});

const stats = { iter: 0, inLog: 0, retried: 0 };

describe("A closing record is never written twice: inLog is right at every byte of a failed write, and under copytruncate (docs/audit-log.md#a-failed-write)", function () {
  this.timeout(180_000); // every cut point k (about 460 writer runs per test): seconds alone, far longer on two busy cores
  let dir: string, live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ dir, live, proto, orig } = t));

  const count = (files: string[], msgid: string, type = "unlock-result") =>
    continued(files).filter((r) => r.msgid === msgid && r.type === type).length;
  const isBatch = (buf: unknown, msgid: string): boolean => Buffer.isBuffer(buf) && buf.includes(`"msgid":"${msgid}"`);

  /**
   * One scenario per cut point: a log with a torn tail (the batch gets a lead "\n"), then a batch
   * [attempt m1, result m0 (multi-byte door/actor)] whose first write call writes only `k` bytes and
   * the next one fails with ENOSPC; the cut-back works or fails. The result's closing record is
   * then written closeWith's way. Checks: inLog iff its line is continued in the log; exactly one
   * continued unlock-result for m0; verify passes.
   */
  async function shortThenEnospc(k: number, cutFails: boolean, torn: boolean): Promise<string | null> {
    await fsp.rm(dir, { recursive: true, force: true });
    await fsp.mkdir(dir);
    const pre = new AuditLog(live, { deferMs: 60_000 });
    await pre.attempt(rec("pre"));
    await pre.close();
    if (torn) fs.appendFileSync(live, '{"type":"unlock-att');
    const log = track(new AuditLog(live, { deferMs: 5 }));
    let state: "arm" | "short" | "fail" | "off" = "arm";
    let batchLen = 0;
    let cut = cutFails;
    proto.write = function (this: unknown, ...a: unknown[]) {
      if (state === "arm" && isBatch(a[0], "m0")) {
        const buf = a[0] as Buffer;
        const off = a[1] as number;
        batchLen = a[2] as number;
        state = "fail";
        return orig.write.apply(this, [buf, off, Math.min(k, batchLen)]);
      }
      if (state === "fail") {
        state = "off";
        return Promise.reject(enospc());
      }
      return orig.write.apply(this, a);
    };
    proto.truncate = function (this: unknown, ...a: unknown[]) {
      if (cut) {
        cut = false;
        return Promise.reject(eio("ftruncate"));
      }
      return orig.truncate.apply(this, a);
    };
    const att = log.attempt(rec(1)).then(
      () => "ok",
      (e) => e,
    );
    const res = closeLike(() => log.result(result("0")));
    const c = await res;
    await att;
    Object.assign(proto, orig);
    await log.attempt(rec(2));
    await log.close();
    if (k >= batchLen) return "STOP"; // no short write at this k
    stats.iter += 1;
    if (c.inLog.includes(true)) stats.inLog += 1;
    if (c.tries > 1) stats.retried += 1;
    const files = [live];
    const v = await verify(files);
    const n = count(files, "m0");
    const why = `k=${k}/${batchLen} cutFails=${cutFails} torn=${torn}: inLog=${JSON.stringify(c.inLog)} tries=${c.tries} lost=${c.lost} continued results=${n} verify=${v.message}`;
    if (v.ok !== true) return `verify fails: ${why}`;
    if (n !== 1) return `not exactly one unlock-result: ${why}`;
    return null;
  }

  for (const cutFails of [false, true]) {
    for (const torn of [false, true]) {
      it(`short write of k bytes (every k) then ENOSPC, cut ${cutFails ? "fails" : "works"}, ${torn ? "torn tail (lead \\n)" : "no lead"}, result second line with multi-byte door/actor: one unlock-result, verify passes`, async () => {
        stats.iter = 0;
        stats.inLog = 0;
        stats.retried = 0;
        const bad: string[] = [];
        for (let k = 1; k < 2000; k++) {
          const r = await shortThenEnospc(k, cutFails, torn);
          if (r === "STOP") break;
          if (r) bad.push(r);
          if (bad.length > 3) break;
        }
        assert.deepEqual(bad, []);
        assert.ok(
          stats.iter > 100 && stats.retried > 0 && (cutFails ? stats.inLog > 0 : stats.inLog === 0),
          JSON.stringify(stats),
        );
      });
    }
  }

  it("copytruncate (copy + truncate to 0) taken while the fsync of a batch carrying an unlock-result runs, fsync fails: inLog, not written again; one unlock-result across copy + live, verify passes", async () => {
    const log = track(new AuditLog(live, { deferMs: 5 }));
    await log.attempt(rec("pre"));
    let armed = true;
    proto.sync = function (this: unknown, ...a: unknown[]) {
      if (!armed) return orig.sync.apply(this, a);
      armed = false;
      fs.copyFileSync(live, `${live}.1`);
      fs.truncateSync(live, 0);
      return Promise.reject(eio("fsync"));
    };
    const att = log.attempt(rec(1)).then(
      () => "ok",
      (e) => e,
    );
    const r = await closeLike(() => log.result(result("0")));
    await att;
    Object.assign(proto, orig);
    await log.attempt(rec(2));
    const files = [`${live}.1`, live];
    const v = await verify(files);
    assert.equal(v.ok, true, v.message);
    assert.deepEqual(r.inLog, [true]);
    assert.equal(count(files, "m0"), 1);
  });

  it("copy taken during the failed fsync, the writer's cut works, then logrotate truncates: not inLog, written again with a rewound fork; one continued unlock-result, verify passes", async () => {
    const log = track(new AuditLog(live, { deferMs: 5 }));
    await log.attempt(rec("pre"));
    let armed = true;
    let truncAfter = false;
    proto.sync = function (this: unknown, ...a: unknown[]) {
      if (!armed) return orig.sync.apply(this, a);
      armed = false;
      fs.copyFileSync(live, `${live}.1`);
      truncAfter = true;
      return Promise.reject(eio("fsync"));
    };
    proto.truncate = function (this: unknown, ...a: unknown[]) {
      return orig.truncate.apply(this, a).then((x) => {
        if (truncAfter) {
          truncAfter = false;
          fs.truncateSync(live, 0);
        }
        return x;
      });
    };
    const att = log.attempt(rec(1)).then(
      () => "ok",
      (e) => e,
    );
    const r = await closeLike(() => log.result(result("0")));
    await att;
    Object.assign(proto, orig);
    await log.attempt(rec(2));
    const files = [`${live}.1`, live];
    const v = await verify(files);
    assert.equal(v.ok, true, v.message);
    assert.deepEqual(r.inLog, [false]);
    assert.equal(count(files, "m0"), 1, JSON.stringify(continued(files).map((x) => `${x.type}:${x.msgid}#${x.seq}`)));
  });
});
