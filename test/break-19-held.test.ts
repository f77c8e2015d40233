/**
 * Break review of cc2da17, 511ac43 and 81ac3b5: what was tried and held (see test/break-19.test.ts
 * for what did not). Faults forced by patching FileHandle.prototype / fs.promises (no sleeps to
 * win races). The 511ac43 part (the demo's instance header, the suite's Redis server) is in
 * test/demo/demo.test.ts and test/helpers/redis.test.ts.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog } from "../src/audit/audit-log.js";
import { lineHash, verify } from "../src/audit/chain.js";
import { checkAuditPath } from "../src/audit/paths.js";
import type { RunningSimulator } from "../src/simulator/index.js";
import { helper, loadFlow, startSim, teardown, unlock, unlockFlow, unlockRequests, until, waitReady } from "./helpers/flow.js";
import { eio, enospc, lines, type P, parsed, put, rec, text } from "./helpers/audit-faults.js";


interface Status { fill?: string; shape?: string; text?: string }

describe("break-19: what held", function () {
  this.timeout(60000);

  describe("cc2da17: door-unlock's deferred 'sending' status (Node-RED runtime + simulator)", function () {
    let sim: RunningSimulator;
    const seen: Status[] = [];
    const last = (): Status => seen[seen.length - 1] ?? {};
    const settle = async () => { for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r)); };

    before(async () => {
      sim = await startSim();
    });
    after(async () => {
      await sim.close();
    });
    beforeEach(async () => {
      sim.control.clearFaults();
      sim.control.resetRequests();
      seen.length = 0;
      await loadFlow(unlockFlow(sim.url, { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" }));
      await waitReady();
      // On the instance (the helper's prototype spy is removed before the flows stop).
      const node = helper.getNode("u1");
      const own = node.status;
      node.status = function (this: unknown, st: Status) { seen.push(st); return own.call(this, st); };
    });
    afterEach(async () => {
      await teardown();
    });

    it("12 messages sent in one tick (slow accepted, invalid, retained, unknown door name mixed): each gets one outcome, one PUT per valid one, and the node's last status after all is an outcome, never 'sending'", async () => {
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 150 });
      const msgs: Record<string, unknown>[] = [];
      for (let i = 0; i < 12; i++) {
        msgs.push([{ deviceId: 101 }, { deviceId: "101" }, { deviceId: 101, retain: true }, { door: "No Such Door" }][i % 4]!);
      }
      const outs = await Promise.all(msgs.map((m) => unlock({ ...m })));
      await settle();
      assert.deepEqual(outs.map((o) => o.msg.payload.outcome), msgs.map((_, i) => ["accepted", "invalid-input", "retained-rejected", "invalid-input"][i % 4]));
      assert.equal(unlockRequests(sim), 3);
      assert.notEqual(last().fill, "blue", JSON.stringify(seen));
      assert.equal(last().fill, "green", JSON.stringify(seen.slice(-4)));
    });

    it("a 401 replay (token expired at the service): 'sending', then the accepted status; two PUTs, one message", async () => {
      sim.control.expireAccessToken("demo");
      const out = await unlock({ deviceId: 101 });
      await settle();
      assert.equal(out.msg.payload.outcome, "accepted", JSON.stringify(out.msg.payload));
      assert.equal(unlockRequests(sim), 2);
      assert.ok(seen.some((s) => s.fill === "blue"), JSON.stringify(seen));
      assert.equal(last().fill, "green", JSON.stringify(seen));
    });

    it("flows stopped (redeploy) while a slow PUT is in flight: the unlock ends with its outcome, and no status is set after the close finished (no stale 'sending'), no exception", async () => {
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 300 });
      helper.getNode("u1").receive({ deviceId: 101, _msgid: "in-flight" });
      await until("the PUT in flight", () => sim.control.inFlight().length > 0);
      await until("the sending status", () => last().fill === "blue");
      await teardown();
      const n = seen.length;
      await settle();
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(seen.length, n, `status after close: ${JSON.stringify(seen.slice(n))}`);
      assert.equal(last().fill, "green", JSON.stringify(seen));
      assert.equal(unlockRequests(sim), 1);
      await loadFlow(unlockFlow(sim.url, { deviceId: "101" })); // for afterEach
    });

    it("a message sent and the flows stopped in the same tick (before the deferred status ran): the unlock is refused or done, no 'sending' after the close, no exception", async () => {
      helper.getNode("u1").receive({ deviceId: 101, _msgid: "same-tick" });
      const stopping = teardown();
      await stopping;
      const n = seen.length;
      await settle();
      assert.equal(seen.length, n, `status after close: ${JSON.stringify(seen.slice(n))}`);
      assert.notEqual(last().fill, "blue", JSON.stringify(seen));
      assert.ok(unlockRequests(sim) <= 1);
      await loadFlow(unlockFlow(sim.url, { deviceId: "101" })); // for afterEach
    });
  });

  describe("81ac3b5: verify's fork rule and the writer under faults", function () {
    let dir: string, live: string, proto: P, orig: P;
    const origOpen = fsp.open;
    const logs: AuditLog[] = [];
    const track = (l: AuditLog): AuditLog => (logs.push(l), l);
    before(async () => {
      const t = await fsp.mkdtemp(path.join(os.tmpdir(), "b19hp-"));
      const h = await fsp.open(path.join(t, "p"), "w");
      proto = Object.getPrototypeOf(h);
      await h.close();
      await fsp.rm(t, { recursive: true });
      orig = { write: proto.write, sync: proto.sync, truncate: proto.truncate, stat: proto.stat };
    });
    beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "b19h-")); live = path.join(dir, "audit.jsonl"); });
    afterEach(async () => {
      Object.assign(proto, orig);
      (fsp as { open: typeof fsp.open }).open = origOpen;
      for (const l of logs.splice(0)) await l.close().catch(() => undefined);
      await fsp.rm(dir, { recursive: true, force: true });
    });

    /** A genuine fork: 1, 2; a failed batch (fsync) copied by logrotate (dateext) before the cut; truncate; then `more` records. */
    async function forkedLog(more: number): Promise<string> {
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
      return copy;
    }

    it("naive edits around a genuine fork break the chain: `rewound` removed, moved to the 2nd line, the fork line copied once more, the not-continued run copied into the live file, the copy's first not-continued line given `rewound`, files swapped", async () => {
      const copy = await forkedLog(3);
      const c = lines(copy), l = lines(live);
      assert.equal((await verify([copy, live])).ok, true);
      const cases: [string, string[], string[]][] = [
        ["rewound removed", c, [l[0]!.replace(/,"rewound":\d+/, ""), ...l.slice(1)]],
        ["rewound moved", c, [l[0]!.replace(/,"rewound":\d+/, ""), l[1]!.replace(',"seq"', ',"rewound":1,"seq"'), ...l.slice(2)]],
        ["fork line twice", c, [l[0]!, ...l]],
        ["not-continued run into live", c, [...c.slice(2), ...l]],
        ["rewound added to copy's x", [...c.slice(0, 2), c[2]!.replace(',"seq"', ',"rewound":1,"seq"'), c[3]!], l],
        ["whole copy appended", c, [...l, ...c]],
        ["live file copied after itself", [...c, ...l], l],
      ];
      const problems: string[] = [];
      for (const [name, cc, ll] of cases) {
        put(copy, cc);
        put(live, ll);
        const v = await verify([copy, live]);
        if (v.ok !== false) problems.push(`${name}: ${v.message}`);
      }
      // files in the wrong order
      put(copy, c);
      put(live, l);
      const swapped = await verify([live, copy]);
      if (swapped.ok !== false) problems.push(`swapped: ${swapped.message}`);
      assert.deepEqual(problems, []);
    });

    it("a record with `rewound` copied (same line) to a file of its own after the file that holds it: broken (81ac3b5's rule); the same for a rotated file's first line", async () => {
      const copy = await forkedLog(2);
      const l = lines(live);
      const extra = path.join(dir, "audit.jsonl.extra");
      put(extra, [l[0]!]);
      const v = await verify([copy, live, extra]);
      assert.equal(v.ok, false, v.message);
      // and the whole live file copied after itself as a third file
      put(extra, l);
      assert.equal((await verify([copy, live, extra])).ok, false);
      // the fork line's hash is what the next record pins
      assert.equal(JSON.parse(l[1]!).prev, lineHash(l[0]!));
    });

    it("a reopen after logrotate (rename + create) that fails twice, then works, with size rotation after: no seq given twice, verify over all files passes", async () => {
      const a = track(new AuditLog(live, { maxBytes: 900, keep: 50 }));
      for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
      const rotated = `${live}-20261124`;
      fs.renameSync(live, rotated);
      let fails = 0;
      (fsp as { open: typeof fsp.open }).open = (async (...x: Parameters<typeof fsp.open>) => {
        if (x[0] === live && fails < 2) { fails++; throw eio("open"); }
        return origOpen(...x);
      }) as typeof fsp.open;
      const r1 = await a.attempt(rec("f1")).then(() => "ok", (e: Error) => e.message);
      const r2 = await a.attempt(rec("f2")).then(() => "ok", (e: Error) => e.message);
      (fsp as { open: typeof fsp.open }).open = origOpen;
      for (let i = 4; i <= 12; i++) await a.attempt(rec(i));
      await a.close();
      assert.match(r1, /open/);
      assert.match(r2, /open/);
      const numbered = fs.readdirSync(dir).filter((n) => /^audit\.jsonl\.\d+$/.test(n)).sort((x, y) => Number(y.split(".").pop()) - Number(x.split(".").pop())).map((n) => path.join(dir, n));
      const files = [rotated, ...numbered, live];
      const seqs = files.flatMap((f) => parsed(f).map((r) => r.seq));
      assert.deepEqual(seqs, Array.from({ length: 12 }, (_, i) => i + 1), files.map(text).join("\n"));
      const v = await verify(files);
      assert.equal(v.ok, true, v.message);
    });

    it("a failed write whose cut fails too (short write, ENOSPC, ftruncate EIO), no logrotate, then size rotation: the chain goes on after the whole lines on disk, seqs unique, verify passes", async () => {
      const a = track(new AuditLog(live, { maxBytes: 1200, keep: 50 }));
      for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
      let w = 0;
      proto.write = function (this: unknown, ...x: unknown[]) {
        const [buf, off, len] = x as [Buffer, number, number];
        w += 1;
        if (w === 1) { const nl = buf.indexOf(0x0a, off); return orig.write.call(this, buf, off, nl - off + 10); }
        if (w === 2) return Promise.reject(enospc());
        return orig.write.call(this, buf, off, len);
      };
      proto.truncate = function () { return Promise.reject(eio("ftruncate")); };
      const out = await Promise.all(["a", "b", "c"].map((k) => a.attempt(rec(k)).then(() => "ok", () => "failed")));
      Object.assign(proto, orig);
      for (let i = 3; i <= 12; i++) await a.attempt(rec(i));
      await a.close();
      assert.deepEqual(out, ["failed", "failed", "failed"]);
      const numbered = fs.readdirSync(dir).filter((n) => /^audit\.jsonl\.\d+$/.test(n)).sort((x, y) => Number(y.split(".").pop()) - Number(x.split(".").pop())).map((n) => path.join(dir, n));
      const files = [...numbered, live];
      const seqs = files.flatMap((f) => parsed(f).map((r) => r.seq));
      assert.equal(new Set(seqs).size, seqs.length, `a seq repeats: ${seqs}`);
      const v = await verify(files);
      assert.equal(v.ok, true, `${v.message}\n${files.map(text).join("\n")}`);
    });

    it("the open check's 4 MiB bound: 4 MiB - 64 KiB of NUL bytes then a record is ours; 4 MiB + 64 KiB of NULs is refused quickly, and verify still reads the log", async () => {
      const a0 = track(new AuditLog(path.join(dir, "src.jsonl")));
      await a0.attempt(rec(1));
      await a0.close();
      const one = fs.readFileSync(path.join(dir, "src.jsonl"));
      fs.writeFileSync(live, Buffer.concat([Buffer.alloc(4 * 1024 * 1024 - 64 * 1024), Buffer.from("\n"), one]));
      assert.equal(checkAuditPath(live, { userDir: dir }).ok, true);
      fs.writeFileSync(live, Buffer.concat([Buffer.alloc(4 * 1024 * 1024 + 64 * 1024), Buffer.from("\n"), one]));
      const t = Date.now();
      const c = checkAuditPath(live, { userDir: dir });
      assert.equal(c.ok, false);
      assert.ok(Date.now() - t < 2000);
      assert.equal((await verify([live])).ok, true);
    });
  });
});
