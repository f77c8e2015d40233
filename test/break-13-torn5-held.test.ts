/**
 * Fifth break review of 7f1af60 (fork rule, split-batch rewrite, blank-line skip of the open
 * check): what was tried and held. Faults forced by patching FileHandle.prototype / fs (no timing).
 */
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import fsReal = require("node:fs");
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { checkAuditPath, judgeOpenFileSync } from "../src/audit/paths.js";
import { fileHandlePrototype, lines, type P, rec, text } from "./helpers/audit-faults.js";


describe("break-13 torn, fifth review: what held", function () {
  let dir: string, live: string, proto: P, orig: P;
  const origReadSync = fsReal.readSync;
  const logs: AuditLog[] = [];
  const track = (l: AuditLog): AuditLog => (logs.push(l), l);
  before(async () => ({ proto, orig } = await fileHandlePrototype()));
  beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "r5h-")); live = path.join(dir, "audit.jsonl"); });
  afterEach(async () => {
    Object.assign(proto, orig);
    fsReal.readSync = origReadSync;
    for (const l of logs.splice(0)) await l.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });

  /** A genuine log of `n` records, split after `cut` records into `<live>.1` and `<live>` (a rename rotation). */
  async function rotatedLog(n: number, cut: number): Promise<string[]> {
    const a = track(new AuditLog(live, { maxBytes: 0 }));
    for (let i = 1; i <= n; i++) await a.attempt(rec(i));
    await a.close();
    const all = lines(live);
    fs.writeFileSync(`${live}.1`, all.slice(0, cut).join("\n") + "\n");
    fs.writeFileSync(live, all.slice(cut).join("\n") + "\n");
    return all;
  }
  const put = (f: string, ls: string[]): void => fs.writeFileSync(f, ls.join("\n") + "\n");

  describe("verify's fork rule does not let naive edits through", function () {
    it("one line deleted, edited, swapped or duplicated inside a rotated file, or at the end of the rotated file, or at the start of the live file: broken at that point", async () => {
      const all = await rotatedLog(8, 4);
      const r = all.slice(0, 4), l = all.slice(4);
      const edit = (s: string) => s.replace('"alice"', '"bob"');
      const cases: [string, string[], string[], string, number][] = [
        ["delete .1 line 2", [r[0]!, r[2]!, r[3]!], l, `${live}.1`, 2],
        ["edit .1 line 2", [r[0]!, edit(r[1]!), r[2]!, r[3]!], l, `${live}.1`, 3],
        ["swap .1 lines 2,3", [r[0]!, r[2]!, r[1]!, r[3]!], l, `${live}.1`, 2],
        ["duplicate .1 line 2", [r[0]!, r[1]!, r[1]!, r[2]!, r[3]!], l, `${live}.1`, 3],
        ["delete .1's last line", r.slice(0, 3), l, live, 1],
        ["edit .1's last line", [...r.slice(0, 3), edit(r[3]!)], l, live, 1],
        ["delete live line 1", r, l.slice(1), live, 1],
        ["edit live line 1", r, [edit(l[0]!), ...l.slice(1)], live, 2],
      ];
      const got: string[] = [];
      for (const [name, a, b, file, line] of cases) {
        put(`${live}.1`, a);
        put(live, b);
        const v = await verify([`${live}.1`, live]);
        if (v.ok !== false || v.broken?.file !== file || v.broken?.line !== line) got.push(`${name}: ${v.ok} ${v.message}`);
      }
      assert.deepEqual(got, [], got.join("\n"));
    });

    it("files in the wrong order, a middle file deleted, or a middle file replaced by a copy of the one before: broken", async () => {
      const a = track(new AuditLog(live, { maxBytes: 0 }));
      for (let i = 1; i <= 9; i++) await a.attempt(rec(i));
      await a.close();
      const all = lines(live);
      put(`${live}.2`, all.slice(0, 3));
      put(`${live}.1`, all.slice(3, 6));
      put(live, all.slice(6));
      const reversed = await verify([`${live}.1`, `${live}.2`, live]);
      const liveFirst = await verify([live, `${live}.1`]);
      const middleGone = await verify([`${live}.2`, live]);
      fs.copyFileSync(`${live}.2`, `${live}.1`);
      const middleCopied = await verify([`${live}.2`, `${live}.1`, live]);
      assert.deepEqual([reversed.ok, liveFirst.ok, middleGone.ok, middleCopied.ok], [false, false, false, false],
        [reversed, liveFirst, middleGone, middleCopied].map((v) => v.message).join("\n"));
    });

    it("a fork more than 4096 records back from the end of the file before is not accepted (bounded lookback)", async () => {
      // Built by hand: 5000 chained lines (no writer needed), the next file restarts at seq 10.
      const { lineHash } = await import("../src/audit/chain.js");
      const out: string[] = [];
      let prev = "0".repeat(64);
      for (let s = 1; s <= 5000; s++) {
        const l = JSON.stringify({ type: "unlock-attempt", ts: "2025-01-01T00:00:00.000Z", actor: "a", deviceId: 1, lockId: null, door: "d", msgid: `m${s}`, seq: s, prev });
        out.push(l);
        prev = lineHash(l);
      }
      put(`${live}.1`, out);
      put(live, out.slice(9));
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, false, v.message);
    });
  });

  describe("the split-batch rewrite", function () {
    /** First write call of the next batch writes only `first` bytes, then logrotate copytruncates (copy to `copy`). */
    function splitOnce(first: number, copy: string, times = 1): void {
      let w = 0;
      let splits = 0;
      proto.write = function (this: unknown, ...x: unknown[]) {
        const [buf, off, len] = x as [Buffer, number, number];
        w += 1;
        if (off === 0 && splits < times) {
          splits += 1;
          return orig.write.call(this, buf, off, first).then((r) => { fs.copyFileSync(live, splits === 1 ? copy : `${copy}.${splits}`); fs.truncateSync(live, 0); return r; });
        }
        return orig.write.call(this, buf, off, len);
      };
    }

    it("a short write covering two whole records of a batch of three, then copytruncate: the batch is written again whole, callers resolve only after, verify passes (a fork), one fsync per rewrite", async () => {
      const a = track(new AuditLog(live));
      for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
      const before = a.stats();
      const probe = `{"type":"unlock-attempt","ts":"${new Date().toISOString()}","actor":"alice","deviceId":101,"lockId":null,"door":"Front Door","msgid":"ma","seq":3,"prev":"${"0".repeat(64)}"}\n`;
      splitOnce(Buffer.byteLength(probe) * 2 + 10, `${live}.1`);
      const batch = [a.attempt(rec("a")), a.attempt(rec("b")), a.attempt(rec("c"))];
      await Promise.all(batch);
      Object.assign(proto, orig);
      await a.attempt(rec("d"));
      await a.close();
      const after = a.stats();
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, true, `${v.message}\n.1: ${text(`${live}.1`)}\nlive: ${text(live)}`);
      assert.equal(v.lastSeq, 6);
      assert.deepEqual(lines(live).map((l) => (JSON.parse(l) as { msgid: string }).msgid), ["ma", "mb", "mc", "md"]);
      // The split is seen right after the short write (the file is empty), before any fsync: the
      // rewrite and "d" (3 on 7f1af60, which saw it only after the fsync).
      assert.equal(after.fsyncs - before.fsyncs, 2);
      assert.ok(v.notes.some((n) => /not continued/.test(n)), v.notes.join("\n"));
    });

    it("a batch after a torn last line (leading newline) split by a copytruncate: rewritten without the newline; verify passes", async () => {
      const a0 = track(new AuditLog(live));
      for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
      await a0.close();
      fs.appendFileSync(live, '{"type":"unlock-att'); // a crash's torn line
      const a = track(new AuditLog(live));
      splitOnce(1, `${live}.1`); // only the leading newline before the copy
      await Promise.all([a.attempt(rec("a")), a.attempt(rec("b"))]);
      Object.assign(proto, orig);
      await a.attempt(rec("c"));
      await a.close();
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, true, `${v.message}\nlive: ${text(live)}`);
      assert.equal(lines(live)[0]!.startsWith('{"type":"unlock-attempt"'), true, text(live));
    });

    it("a split every time (4 copytruncates in a row): bounded, the batch is rejected, no unhandled rejection, the writer goes on", async () => {
      const a = track(new AuditLog(live));
      for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
      splitOnce(30, `${live}.1`, 4);
      const r = await Promise.all([a.attempt(rec("a")), a.attempt(rec("b"))].map((p) => p.then(() => "ok", (e: Error) => e.message)));
      Object.assign(proto, orig);
      assert.ok(r.every((x) => /truncated while the batch was written/.test(x)), r.join("\n"));
      assert.equal(fs.statSync(live).size, 0, text(live));
      const next = await a.attempt(rec("z")).then(() => null, (e: Error) => e.message);
      assert.equal(next, null, next ?? "");
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, true, `${v.message}\n.1 ${text(`${live}.1`)}\nlive ${text(live)}`);
    });

    it("a copytruncate after the whole batch was written (one write call) is not taken for a split: nothing is emptied or written twice", async () => {
      const a = track(new AuditLog(live));
      for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
      proto.sync = function (this: unknown, ...x: unknown[]) {
        proto.sync = orig.sync;
        fs.copyFileSync(live, `${live}.1`);
        fs.truncateSync(live, 0);
        return orig.sync.apply(this, x);
      };
      await a.attempt(rec("a"));
      await a.attempt(rec("b"));
      await a.close();
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, true, v.message);
      assert.equal(v.notes.some((n) => /not continued/.test(n)), false, v.notes.join("\n"));
      assert.deepEqual(lines(live).map((l) => (JSON.parse(l) as { seq: number }).seq), [4]);
    });

    it("the file renamed away between a batch's two write calls (not truncated): no split rewrite, the batch goes again to a new file and verify passes", async () => {
      const a = track(new AuditLog(live));
      for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
      let w = 0;
      proto.write = function (this: unknown, ...x: unknown[]) {
        const [buf, off, len] = x as [Buffer, number, number];
        if (++w === 1) return orig.write.call(this, buf, off, 30).then((r) => { fs.renameSync(live, `${live}.1`); return r; });
        return orig.write.call(this, buf, off, len);
      };
      await Promise.all([a.attempt(rec("a")), a.attempt(rec("b"))]);
      Object.assign(proto, orig);
      await a.close();
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, true, `${v.message}\n.1 ${text(`${live}.1`)}\nlive ${text(live)}`);
    });
  });

  describe("the open check (judgeOpenFileSync) with blank lines", function () {
    it("a foreign file preceded by 100 000 blank lines (LF, CRLF, spaces, tabs) is still refused by the path check and the writer, and left untouched", async () => {
      const bodies = ["\n".repeat(100000) + "export PATH=/x\n", "\r\n".repeat(50000) + "{\"name\":\"x\"}\n", " \t\n".repeat(40000) + "#!/bin/sh\n", "\r".repeat(70000) + "secret=1\n"];
      const got: string[] = [];
      for (const body of bodies) {
        fs.writeFileSync(live, body);
        const c = checkAuditPath(live, { userDir: dir });
        const a = track(new AuditLog(live));
        const err = await a.attempt(rec(1)).then(() => null, (e: Error) => e.message);
        await a.close();
        if (c.ok || err === null || fs.readFileSync(live, "utf8") !== body) got.push(`${JSON.stringify(body.slice(-20))}: check ${c.ok}, writer ${err}`);
      }
      assert.deepEqual(got, []);
    });

    it("a file of only blanks (CR-only, 200 000 newlines) or a few NUL bytes is accepted, as verify reads it; the writer appends a record verify accepts", async () => {
      const got: string[] = [];
      for (const body of ["\r\r\r", "\n".repeat(200000), "\0\0\0\0"]) {
        fs.writeFileSync(live, body);
        const c = checkAuditPath(live, { userDir: dir });
        const a = track(new AuditLog(live));
        const err = await a.attempt(rec(1)).then(() => null, (e: Error) => e.message);
        await a.close();
        const v = await verify([live]);
        if (!c.ok || err !== null || v.ok !== true) got.push(`${JSON.stringify(body.slice(0, 5))}: check ${c.ok}, writer ${err}, verify ${v.message}`);
      }
      assert.deepEqual(got, []);
    });

    it("a file that shrinks to empty while its blank prefix is read: judged as empty (ours), no exception", async () => {
      fs.writeFileSync(live, "\n".repeat(200000));
      const fd = fs.openSync(live, "r");
      let calls = 0;
      fsReal.readSync = function (...x: Parameters<typeof fs.readSync>) {
        const n = (origReadSync as (...y: unknown[]) => number)(...x);
        if (++calls === 1) fs.truncateSync(live, 0);
        return n;
      } as typeof fs.readSync;
      try {
        assert.equal(judgeOpenFileSync(fd), null);
      } finally {
        fs.closeSync(fd);
      }
    });

    it("a foreign file whose blank prefix ends exactly at the 64 KiB read boundary, and one whose foreign line starts with spaces: refused", async () => {
      for (const body of ["\n".repeat(65536) + "x=1\n", "\n".repeat(65535) + " x=1\n", "   x=1\n"]) {
        fs.writeFileSync(live, body);
        const fd = fs.openSync(live, "r");
        try {
          assert.notEqual(judgeOpenFileSync(fd), null, JSON.stringify(body.slice(-8)));
        } finally {
          fs.closeSync(fd);
        }
      }
    });

    it("a FIFO at the path: the path check does not block, the writer refuses it (not a regular file) without blocking", async function () {
      if (process.platform === "win32") this.skip();
      execFileSync("mkfifo", [live]);
      const c = checkAuditPath(live, { userDir: dir });
      const a = track(new AuditLog(live));
      const err = await a.attempt(rec(1)).then(() => null, (e: Error) => e.message);
      assert.equal(c.ok, true); // the writer reports it
      assert.match(err ?? "", /not a regular file/);
    });
  });
});
