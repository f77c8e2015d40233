/**
 * Fourth break review (5f59d11): a matrix of copytruncates (dateext copy) at every point of a
 * multi-write failed batch, with and without a leading newline, multi-byte records, results and
 * attempts mixed. Expect: verify over [copy, live] passes, or (only when bytes were lost between
 * copy and truncate) names a gap.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, type AuditBase } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";

const rec = (i: number | string): AuditBase => ({ actor: "ålice😀€", deviceId: 101, lockId: null, door: "Frönt Döör", msgid: `m${i}` });
type P = { write: (...a: unknown[]) => Promise<unknown>; sync: (...a: unknown[]) => Promise<unknown> };

describe("break-13 torn, fourth review: copytruncate matrix over a failed batch", function () {
  this.timeout(300_000); // 2,304 cases of real file I/O: 20-40 s alone, several times that beside seven other files on two busy cores
  let proto: P, orig: P;
  before(async () => {
    const t = await fsp.mkdtemp(path.join(os.tmpdir(), "r4mp-"));
    const h = await fsp.open(path.join(t, "p"), "w");
    proto = Object.getPrototypeOf(h);
    await h.close();
    await fsp.rm(t, { recursive: true });
    orig = { write: proto.write, sync: proto.sync };
  });
  afterEach(() => { Object.assign(proto, orig); });
  // The log every case starts from (two records; a torn tail when `lead`): written once by the
  // writer and copied for each case, not written again 2,300 times.
  const starts = new Map<boolean, string>();
  async function start(lead: boolean): Promise<string> {
    let f = starts.get(lead);
    if (!f) {
      f = path.join(await fsp.mkdtemp(path.join(os.tmpdir(), "r4ms-")), "audit.jsonl");
      const a0 = new AuditLog(f);
      for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
      await a0.close();
      if (lead) fs.appendFileSync(f, '{"type":"unlock-att');
      starts.set(lead, f);
    }
    return f;
  }
  after(async () => { for (const f of starts.values()) await fsp.rm(path.dirname(f), { recursive: true, force: true }); });

  it("every copytruncate point x fail point x chunk x lead x lost", async () => {
    const problems: string[] = [];
    let cases = 0;
    for (const lead of [false, true])
    for (const chunk of [7, 61, 150, 100000])
    for (const lost of [false, true])
    for (let ct = 0; ct <= 12; ct++)       // copytruncate after write call ct (0: before the first); 12 => during the failing sync
    for (let fail = 1; fail <= 12; fail++) { // fail at write call `fail` (ENOSPC), 12 => sync fails
      if (lost && (ct === 12 || fail === ct + 1)) continue; // copy, then the writer's cut, then the truncate: F4 in break-13-torn4.test.ts
      const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "r4m-"));
      const live = path.join(dir, "audit.jsonl");
      const copy = `${live}-20261124`;
      try {
        fs.copyFileSync(await start(lead), live);
        const a = new AuditLog(live, { deferMs: 1 }); // the closing records here always ride with an attempt; the last one need not wait 20 ms
        await a.attempt(rec("open")); // opened, position known
        let w = 0, copied = false, truncated = false;
        const doCopy = () => { if (!copied) { fs.copyFileSync(live, copy); copied = true; } };
        const doTrunc = () => { if (!truncated) { fs.truncateSync(live, 0); truncated = true; } };
        proto.write = function (this: unknown, ...x: unknown[]) {
          const [buf, off, len] = x as [Buffer, number, number];
          w += 1;
          if (w === ct + 1 && ct < 12) { if (lost) doCopy(); else { doCopy(); doTrunc(); } }
          if (w === fail && fail < 12) return Promise.reject(Object.assign(new Error("no space"), { code: "ENOSPC" }));
          return orig.write.call(this, buf, off, Math.min(chunk, len)).then((r) => { if (lost && w === ct + 1 && copied) doTrunc(); return r; });
        };
        proto.sync = function (this: unknown, ...x: unknown[]) {
          if (ct >= 12 || (w < ct + 1)) { doCopy(); doTrunc(); }
          if (lost) { doTrunc(); }
          return Promise.reject(Object.assign(new Error("io"), { code: "EIO" }));
        };
        const ps = [a.result({ ...rec("r1"), outcome: "accepted", status: 200 }), a.rejected({ ...rec("x"), outcome: "bad", reason: "ü".repeat(30) }), a.attempt(rec("b"))];
        const rs = await Promise.allSettled(ps);
        Object.assign(proto, orig);
        if (rs.some((r) => r.status === "fulfilled")) { problems.push(`lead=${lead} chunk=${chunk} lost=${lost} ct=${ct} fail=${fail}: some fulfilled`); }
        if (!copied) doCopy(); // copytruncate never happened during the batch: do it now (after)
        doTrunc();
        await a.attempt(rec("z"));
        await a.result({ ...rec("z"), outcome: "accepted", status: 200 });
        await a.close();
        const v = await verify([copy, live]);
        cases++;
        const ok = v.ok === true || (lost && v.ok === false && v.broken?.missing !== undefined);
        if (!ok) problems.push(`lead=${lead} chunk=${chunk} lost=${lost} ct=${ct} fail=${fail}: ${v.message}\n   copy=${JSON.stringify(fs.readFileSync(copy, "utf8").slice(0,80))}...${JSON.stringify(fs.readFileSync(copy, "utf8").slice(-120))}\n   live=${JSON.stringify(fs.readFileSync(live, "utf8").slice(0, 160))}`);
      } finally {
        Object.assign(proto, orig);
        await fsp.rm(dir, { recursive: true, force: true });
      }
    }
    console.log(`cases: ${cases}, problems: ${problems.length}`);
    assert.equal(problems.length, 0, problems.slice(0, 12).join("\n"));
  });
});
