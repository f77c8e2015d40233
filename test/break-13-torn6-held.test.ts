/**
 * Sixth break review of d62e4dc (the `rewound` mark, verify's fork rule, MAX_BATCH, the restart of
 * a batch after a short write, the open check's NUL/blank skip): what was tried and held. Faults
 * forced by patching FileHandle.prototype (no timing, no sleeps).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, MAX_BATCH, auditRecordEvents } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { checkAuditPath } from "../src/audit/paths.js";
import { eio, enospc, fileHandlePrototype, lines, type P, parsed, put, rec, text } from "./helpers/audit-faults.js";


describe("break-13 torn, sixth review: what held", function () {
  let dir: string, live: string, proto: P, orig: P;
  const logs: AuditLog[] = [];
  const track = (l: AuditLog): AuditLog => (logs.push(l), l);
  before(async () => ({ proto, orig } = await fileHandlePrototype()));
  beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "r6h-")); live = path.join(dir, "audit.jsonl"); });
  afterEach(async () => {
    Object.assign(proto, orig);
    for (const l of logs.splice(0)) await l.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });

  /** A genuine fork: records 1, 2; a batch of two whose fsync fails while logrotate copies (dateext); truncate; then `more` records (the first `rewound`). */
  async function forkedLog(more: number): Promise<{ copy: string }> {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    const copy = `${live}-20261124`;
    proto.sync = function () {
      proto.sync = orig.sync;
      fs.copyFileSync(live, copy);
      return Promise.reject(eio("fsync"));
    };
    await Promise.all([a.attempt(rec("x")), a.attempt(rec("y"))].map((p) => p.catch(() => undefined)));
    Object.assign(proto, orig);
    fs.truncateSync(live, 0);
    for (let i = 3; i < 3 + more; i++) await a.attempt(rec(i));
    await a.close();
    return { copy };
  }

  describe("the `rewound` mark cannot be added, moved or dropped by a naive edit", function () {
    it("a genuine fork passes; dropping its mark, adding a mark to a plain file start, copying the marked record into the middle of a file, or changing the fork's prev: broken", async () => {
      const { copy } = await forkedLog(3); // copy: 1, 2, x(3), y(4); live: 3r, 4, 5
      const c = lines(copy), l = lines(live);
      assert.equal((await verify([copy, live])).ok, true);
      const got: string[] = [];
      const check = async (name: string, cl: string[], ll: string[]) => {
        put(copy, cl);
        put(live, ll);
        const v = await verify([copy, live]);
        if (v.ok !== false) got.push(`${name}: ${v.message}`);
      };
      await check("mark dropped", c, [l[0]!.replace(/,"rewound":\d+/, ""), ...l.slice(1)]);
      await check("mark moved to line 2 of live", c, [l[0]!.replace(/,"rewound":\d+/, ""), l[1]!.replace(',"seq"', ',"rewound":1,"seq"'), l[2]!]);
      await check("marked record copied into the middle of the copy", [c[0]!, c[1]!, l[0]!, c[2]!, c[3]!], l);
      await check("marked record duplicated at the top of live", c, [l[0]!, ...l]);
      await check("fork record's prev replaced by the copy's line 3 prev's neighbour", c, [l[0]!.replace(/"prev":"[0-9a-f]{64}"/, `"prev":"${(JSON.parse(c[0]!) as { prev: string }).prev}"`), ...l.slice(1)]);
      await check("live line 2 deleted after the fork", c, [l[0]!, l[2]!]);
      assert.deepEqual(got, []);
    });

    it("a mark added to the first line of a plain rotation (no failed batch), with that line repeated from the file before: broken (pinned by the next record's prev)", async () => {
      const a = track(new AuditLog(live, { maxBytes: 0 }));
      for (let i = 1; i <= 6; i++) await a.attempt(rec(i));
      await a.close();
      const all = lines(live);
      put(`${live}.1`, all.slice(0, 4));
      put(live, [all[3]!.replace(',"seq"', ',"rewound":1,"seq"'), ...all.slice(4)]);
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, false, v.message);
    });
  });

  describe("the writer under faults", function () {
    it("MAX_BATCH: 2500 closing records queued in one tick go out in 3 batches (3 fsyncs), in order, each resolved, every line emitted once in file order; verify passes", async () => {
      const a = track(new AuditLog(live));
      await a.attempt(rec(0));
      const emitted: string[] = [];
      const on = (_f: string, line: string) => emitted.push(line);
      auditRecordEvents.on("record", on);
      try {
        const before = a.stats();
        const ps = Array.from({ length: 2500 }, (_, i) => a.rejected({ ...rec(`b${i}`), outcome: "rejected", reason: "invalid" }));
        await Promise.all(ps);
        const after = a.stats();
        assert.equal(after.fsyncs - before.fsyncs, Math.ceil(2500 / MAX_BATCH));
        assert.equal(after.batches - before.batches, Math.ceil(2500 / MAX_BATCH));
      } finally {
        auditRecordEvents.off("record", on);
      }
      await a.close();
      const all = lines(live);
      assert.deepEqual(emitted, all.slice(1));
      assert.deepEqual(parsed(live).map((r) => r.seq), Array.from({ length: 2501 }, (_, i) => i + 1));
      assert.deepEqual(parsed(live).slice(1).map((r) => r.msgid), Array.from({ length: 2500 }, (_, i) => `mb${i}`));
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
      assert.equal(r[0]!.msgid, "mr");
      assert.equal((await verify([live])).ok, true);
    });

    it("the second of three MAX_BATCH batches fails (fsync) while logrotate copies, the truncate lands before the third: only the second is rejected, the third goes on with `rewound`, verify passes with a fork", async () => {
      const a = track(new AuditLog(live));
      await a.attempt(rec(0));
      let syncs = 0;
      let copied = false, truncated = false;
      const copy = `${live}-20261124`;
      proto.sync = function (this: unknown, ...x: unknown[]) {
        if (++syncs === 2) { fs.copyFileSync(live, copy); copied = true; return Promise.reject(eio("fsync")); }
        return orig.sync.apply(this, x);
      };
      proto.write = function (this: unknown, ...x: unknown[]) {
        if (copied && !truncated) { truncated = true; fs.truncateSync(live, 0); } // logrotate's truncate, after the writer's cut
        return orig.write.apply(this, x);
      };
      const ps = Array.from({ length: 2500 }, (_, i) => a.rejected({ ...rec(`b${i}`), outcome: "rejected", reason: "x" }).then(() => "ok", () => "failed"));
      const out = await Promise.all(ps);
      Object.assign(proto, orig);
      await a.attempt(rec("z"));
      await a.close();
      assert.deepEqual([out.slice(0, 1024).every((o) => o === "ok"), out.slice(1024, 2048).every((o) => o === "failed"), out.slice(2048).every((o) => o === "ok")], [true, true, true]);
      const r = parsed(live);
      assert.equal(typeof r[0]!.rewound, "number");
      assert.equal(r[0]!.seq, 1026);
      const v = await verify([copy, live]);
      assert.equal(v.ok, true, v.message);
      assert.equal(v.lastSeq, 1026 + 452);
      assert.ok(v.notes.some((n) => /not continued/.test(n)));
    });

    it("a failed write (short, then ENOSPC) cut off again, with no logrotate: the next record carries `rewound` mid-file, continues the same seq; verify passes; a restarted writer continues from it", async () => {
      const a = track(new AuditLog(live));
      for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
      let w = 0;
      proto.write = function (this: unknown, ...x: unknown[]) {
        const [buf, off, len] = x as [Buffer, number, number];
        w += 1;
        if (w === 1) return orig.write.call(this, buf, off, 30);
        if (w === 2) return Promise.reject(enospc());
        return orig.write.call(this, buf, off, len);
      };
      assert.match(await a.attempt(rec("x")).then(() => "", (e: Error) => e.message), /ENOSPC/);
      Object.assign(proto, orig);
      await a.attempt(rec(3));
      await a.close();
      const b = track(new AuditLog(live));
      await b.attempt(rec(4));
      await b.close();
      const r = parsed(live);
      assert.deepEqual(r.map((x) => [x.seq, x.msgid, typeof x.rewound === "number"]), [[1, "m1", false], [2, "m2", false], [3, "m3", true], [4, "m4", false]], text(live));
      assert.equal((await verify([live])).ok, true);
    });

    it("size rotation with a small auditMaxBytes and a failed batch in between: the rewound record may start a rotated file; verify over all files passes", async () => {
      const a = track(new AuditLog(live, { maxBytes: 600, keep: 50 }));
      for (let i = 1; i <= 6; i++) await a.attempt(rec(i));
      proto.sync = function (this: { fd: number }, ...x: unknown[]) {
        if (!fs.fstatSync(this.fd).isFile()) return orig.sync.apply(this, x); // the folder's fsync after a rotation
        proto.sync = orig.sync;
        return Promise.reject(eio("fsync"));
      };
      assert.match(await a.attempt(rec("x")).then(() => "ok", (e: Error) => e.message), /fsync/);
      for (let i = 7; i <= 14; i++) await a.attempt(rec(i));
      await a.close();
      const files = fs.readdirSync(dir).filter((n) => /^audit\.jsonl\.\d+$/.test(n)).sort((x, y) => Number(y.split(".").pop()) - Number(x.split(".").pop())).map((n) => path.join(dir, n));
      const v = await verify([...files, live]);
      assert.equal(v.ok, true, v.message);
      assert.equal(v.lastSeq, 14);
    });

    it("matrix: first write short at several sizes x copytruncate after write 1 / before write 2 / after fsync x fsync ok / failing: verify passes; every resolved record is in the copy or the live file; no rejected record is in the live file", async function () {
      this.timeout(60000);
      const probeLen = Buffer.byteLength(`{"type":"unlock-attempt","ts":"${new Date().toISOString()}","actor":"alice","deviceId":101,"lockId":null,"door":"Front Door","msgid":"ma","seq":3,"prev":"${"0".repeat(64)}"}\n`);
      const problems: string[] = [];
      for (const first of [1, 30, probeLen + 3, 2 * probeLen + 5]) {
        for (const when of ["afterWrite1", "beforeWrite2", "afterSync"] as const) {
          for (const syncFails of [false, true]) {
            const d = await fsp.mkdtemp(path.join(os.tmpdir(), "r6m-"));
            const f = path.join(d, "audit.jsonl");
            const copy = `${f}-20261124`;
            try {
              const a = track(new AuditLog(f));
              for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
              let w = 0;
              let done = false;
              const ct = () => { if (!done) { done = true; fs.copyFileSync(f, copy); fs.truncateSync(f, 0); } };
              proto.write = function (this: unknown, ...x: unknown[]) {
                const [buf, off, len] = x as [Buffer, number, number];
                w += 1;
                if (w === 1) return orig.write.call(this, buf, off, Math.min(first, len)).then((r) => { if (when === "afterWrite1") ct(); return r; });
                if (w === 2 && when === "beforeWrite2") ct();
                return orig.write.call(this, buf, off, len);
              };
              let s = 0;
              proto.sync = function (this: unknown, ...x: unknown[]) {
                s += 1;
                if (s === 1) {
                  if (when === "afterSync") ct();
                  if (syncFails) return Promise.reject(eio("fsync"));
                }
                return orig.sync.apply(this, x);
              };
              const out = await Promise.all(["a", "b", "c"].map((k) => a.attempt(rec(k)).then(() => `ok:m${k}`, () => `fail:m${k}`)));
              Object.assign(proto, orig);
              if (!done) ct();
              const next = await a.attempt(rec("d")).then(() => "ok:md", () => "fail:md");
              await a.close();
              const v = await verify([copy, f]);
              const inCopy = parsed(copy).map((r) => r.msgid), inLive = parsed(f).map((r) => r.msgid);
              const tag = `first=${first} ${when} syncFails=${syncFails}`;
              if (v.ok !== true) problems.push(`${tag}: verify ${v.message}\ncopy ${text(copy)}\nlive ${text(f)}`);
              for (const o of [...out, next]) {
                const [st, id] = o.split(":") as [string, string];
                if (st === "ok" && !inCopy.includes(id) && !inLive.includes(id)) problems.push(`${tag}: ${id} resolved but in no file`);
                if (st === "fail" && inLive.includes(id)) problems.push(`${tag}: ${id} rejected but in the live file`);
              }
              if (next !== "ok:md") problems.push(`${tag}: the next unlock failed`);
            } finally {
              Object.assign(proto, orig);
              for (const l of logs.splice(0)) await l.close().catch(() => undefined);
              await fsp.rm(d, { recursive: true, force: true });
            }
          }
        }
      }
      assert.deepEqual(problems, []);
    });
  });

  describe("the open check with NUL and blank lines", function () {
    it("foreign files disguised behind NUL lines, mixed NUL/blank lines or NULs on the foreign line itself: refused by the path check and the writer, left untouched", async () => {
      const bodies = [
        "\0\0\0\n".repeat(30000) + "export PATH=/x\n",
        "\0".repeat(70000) + "\n" + '{"name":"pkg"}\n',
        "\n\0\0\n  \n\0\n".repeat(20000) + "#!/bin/sh\n",
        "\0\0\0secret=1\n",
        "  \0\0\n" + '{"type":"unlock-attempt","ts":"x"}\n',
        "\0\0\0" + '{"type":"unlock-attempt","ts":"x"}\n',
        '{"type":"unlock-\0\0\n' + "foreign=1\n",
      ];
      const got: string[] = [];
      for (const body of bodies) {
        fs.writeFileSync(live, body);
        const c = checkAuditPath(live, { userDir: dir });
        const a = track(new AuditLog(live));
        const err = await a.attempt(rec(1)).then(() => null, (e: Error) => e.message);
        await a.close();
        if (c.ok || err === null || fs.readFileSync(live, "utf8") !== body) got.push(`${JSON.stringify(body.slice(-24))}: check ${c.ok}, writer ${err}`);
      }
      assert.deepEqual(got, []);
    });

    it("our own files a crash left (NUL lines, a torn start with trailing NULs, then records) are accepted; the writer appends a record verify accepts", async () => {
      const a0 = track(new AuditLog(path.join(dir, "src.jsonl")));
      for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
      await a0.close();
      const recs = fs.readFileSync(path.join(dir, "src.jsonl"), "utf8");
      const got: string[] = [];
      for (const prefix of ["\0".repeat(5000) + "\n", "\0\0\n\n\0\n", '{"type":"unlock-att' + "\0".repeat(100) + "\n", "\0".repeat(100)]) {
        fs.writeFileSync(live, prefix + (prefix.endsWith("\n") ? "" : "\n") + recs);
        const c = checkAuditPath(live, { userDir: dir });
        const a = track(new AuditLog(live));
        const err = await a.attempt(rec(3)).then(() => null, (e: Error) => e.message);
        await a.close();
        const v = await verify([live]);
        if (!c.ok || err !== null || v.ok !== true || v.lastSeq !== 3) got.push(`${JSON.stringify(prefix.slice(0, 12))}: check ${c.ok}, writer ${err}, verify ${v.message}`);
      }
      assert.deepEqual(got, []);
    });
  });
});
