/**
 * Sixth break review of the torn-write work (d62e4dc: the `rewound` mark and verify's fork rule,
 * MAX_BATCH, the restart of a batch after a short write seen truncated, the open check's
 * NUL/blank skip) by a helper that did not write it. F1..F5 failed on d62e4dc. Faults are
 * forced by patching FileHandle.prototype / fs.promises (no timing, no sleeps). Fixed in the next
 * commit: a fork needs another record than the one already there (F1); the writer keeps the
 * chain position it knows when a reopen or a cut fails (F3, F5); the open check reads at most
 * 4 MiB of blank and NUL-only lines (F4). F2 is a documented limit, tested for what does hold.
 *
 * F1: a file (or a file's tail) that starts at a `rewound` record, copied after the file that
 *     holds it, passes verify: the rule matches the copy against the original itself (same seq,
 *     same prev), so whole runs of records are inserted twice and verify exits 0.
 * F2: behind an accepted fork, the records of the file before it that were "not continued" are
 *     pinned by nothing: the last one can be edited, or the run deleted, and verify exits 0
 *     (tail/export show the edited record).
 * F3: a transient failure to open the new file after logrotate renamed the live file (dateext,
 *     `create`) makes the writer forget where the chain stands (dropHandle() drops the position);
 *     the next record starts the chain again at seq 1 while the writer keeps running: the
 *     untampered log fails verify.
 * F4: the open check reads any run of NUL bytes synchronously to its end: a sparse all-NUL file
 *     blocks the event loop for seconds per GiB (measured: 4 GiB, 45 s) in checkAuditPath at
 *     the account's start and again in the writer's open, on the unlock's path.
 * F5: a write that fails part-way and whose cut-off fails too, after a copytruncate with dateext:
 *     the writer reads the chain back from disk, finds nothing in the live file and starts again
 *     at seq 1 with `rewound: true`; verify takes that for a legitimate fork and passes a log whose
 *     durable, answered records 1..n are "not continued" and whose seqs are given out twice.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import fsReal = require("node:fs");
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { checkAuditPath } from "../src/audit/paths.js";
import { readAll } from "../src/audit/reader.js";
import { cliVerify, eio, enospc, fileHandlePrototype, lines, type P, put, rec, text } from "./helpers/audit-faults.js";


describe("break-13 torn, sixth review", function () {
  let dir: string, live: string, proto: P, orig: P;
  const origOpen = fsp.open;
  const origReadSync = fsReal.readSync;
  const logs: AuditLog[] = [];
  const track = (l: AuditLog): AuditLog => (logs.push(l), l);
  before(async () => ({ proto, orig } = await fileHandlePrototype()));
  beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "r6-")); live = path.join(dir, "audit.jsonl"); });
  afterEach(async () => {
    Object.assign(proto, orig);
    (fsp as { open: typeof fsp.open }).open = origOpen;
    fsReal.readSync = origReadSync;
    for (const l of logs.splice(0)) await l.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });

  /**
   * A genuine log with a `rewound` record inside the live file: records 1, 2; a batch whose first
   * write call is short (30 bytes) and whose second fails (ENOSPC) is cut off again; then `more`
   * records, the first of them marked `rewound` (seq 3).
   */
  async function logWithRewound(more: number): Promise<string[]> {
    const a = track(new AuditLog(live, { maxBytes: 0 }));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    let w = 0;
    proto.write = function (this: unknown, ...x: unknown[]) {
      const [buf, off, len] = x as [Buffer, number, number];
      w += 1;
      if (w === 1) return orig.write.call(this, buf, off, 30);
      if (w === 2) return Promise.reject(enospc());
      return orig.write.call(this, buf, off, len);
    };
    const failed = await a.attempt(rec("x")).then(() => "ok", (e: Error) => e.message);
    Object.assign(proto, orig);
    assert.match(failed, /ENOSPC/);
    for (let i = 3; i < 3 + more; i++) await a.attempt(rec(i));
    await a.close();
    const all = lines(live);
    assert.equal((JSON.parse(all[2]!) as { rewound?: number; seq: number }).rewound !== undefined, true, text(live));
    return all;
  }

  it("F1: a rotated file's run starting at a `rewound` record, copied in again after it (records inserted twice: `cp`), passes `door-access-audit verify` (exit 0); tail/export read those records twice", async () => {
    const all = await logWithRewound(3); // seq 1, 2, 3 (rewound), 4, 5
    const v0 = await cliVerify([live]);
    assert.equal(v0.code, 0, v0.out); // untampered: fine
    // Rotated by hand as the writer rotates (rename): .1 holds seq 1..5, the live file is empty.
    put(`${live}.1`, all);
    fs.writeFileSync(live, "");
    // The attack: the run from the rewound record (seq 3..5) copied again as a file of its own,
    // between .1 and the live file (`tail -n 3 audit.jsonl.1 > audit.jsonl` needs no hash).
    fs.renameSync(`${live}.1`, `${live}.2`);
    put(`${live}.1`, all.slice(2));
    // And a whole file copied: `cp audit.jsonl.1 audit.jsonl` (the live file then repeats seq 3..5).
    fs.copyFileSync(`${live}.1`, live);
    let m3 = 0;
    for await (const r of readAll(live)) if (r.msgid === "m3") m3++;
    const v = await cliVerify([live]);
    assert.equal(m3, 3, "m3 is read three times");
    assert.equal(v.code, 1, `records inserted (copied) must break the chain; verify said:\n${v.out}`);
  });

  it("F2 (a documented limit, README 'Checking it'): behind an accepted fork, the records not continued (their writes failed, their unlocks were never sent) are checked against each other: an edit to any but the last breaks the chain, and verify's note names the run; the last is pinned by nothing, like the last line of a log", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    const copy = `${live}-20261124`;
    proto.sync = function () {
      proto.sync = orig.sync;
      fs.copyFileSync(live, copy); // logrotate's copy while the fsync runs (and fails)
      return Promise.reject(eio("fsync"));
    };
    const failed = await Promise.all([a.attempt(rec(3)), a.attempt(rec(4))].map((p) => p.then(() => "ok", (e: Error) => e.message)));
    Object.assign(proto, orig);
    assert.ok(failed.every((f) => /fsync/.test(f)), failed.join("\n"));
    fs.truncateSync(live, 0); // logrotate's truncate
    await a.attempt(rec("z"));
    await a.close();
    const v0 = await verify([copy, live]);
    assert.equal(v0.ok, true, `untampered: ${v0.message}`); // the fork is accepted (rewound)
    assert.ok(v0.notes.some((n) => n.startsWith(`${copy} lines 3-4 (seq 3 to 4): not continued`)), v0.notes.join("\n"));
    const keep = lines(copy);
    // Edit the first record not continued (seq 3): another actor and door. No hash is computed.
    put(copy, [...keep.slice(0, 2), keep[2]!.replace('"actor":"alice"', '"actor":"mallory"').replace('"Front Door"', '"Vault"'), keep[3]!]);
    const edited = await cliVerify([copy, live]);
    assert.equal(edited.code, 1, `an edited record must break the chain; verify said:\n${edited.out}`);
    assert.match(edited.out, /line 4/);
  });

  it("F3: logrotate renames the live file (dateext, create) and the new file cannot be opened once (EACCES): the writer, still running, starts the chain again at seq 1; the untampered log fails verify", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    const dated = `${live}-20261124`;
    fs.renameSync(live, dated); // logrotate (rename), dateext
    fs.writeFileSync(live, "", { mode: 0o600 }); // logrotate's `create`
    let n = 0;
    (fsp as { open: typeof fsp.open }).open = function (this: unknown, ...x: Parameters<typeof fsp.open>) {
      if (n++ === 0) return Promise.reject(Object.assign(new Error("injected EACCES"), { code: "EACCES" }));
      return origOpen.apply(fsp, x);
    } as typeof fsp.open;
    const r4 = await a.attempt(rec(4)).then(() => "ok", (e: Error) => e.message);
    (fsp as { open: typeof fsp.open }).open = origOpen;
    await a.attempt(rec(5));
    await a.close();
    const first = JSON.parse(lines(live)[0]!) as { seq: number; msgid: string };
    const v = await verify([dated, live]);
    assert.match(r4, /EACCES/); // refused while the file could not be opened: fine
    assert.equal(first.seq, 4, `the next record after seq 3 got seq ${first.seq}; verify: ${v.message}`);
    assert.equal(v.ok, true, v.message);
  });

  it("F4: a sparse all-NUL file at the audit path: the open check reads all of it synchronously (256 MiB here; 4 GiB blocked the event loop 45 s) before it says 'ours'", async function () {
    this.timeout(120000);
    const size = 256 * 1024 * 1024;
    const fd0 = fs.openSync(live, "w", 0o600);
    fs.ftruncateSync(fd0, size); // `truncate -s 256M`: no disk blocks, all NUL bytes
    fs.closeSync(fd0);
    let bytes = 0;
    fsReal.readSync = function (...x: Parameters<typeof fs.readSync>) {
      const n = (origReadSync as (...y: unknown[]) => number)(...x);
      bytes += n;
      return n;
    } as typeof fs.readSync;
    const t0 = process.hrtime.bigint();
    const c = checkAuditPath(live, { userDir: dir });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    fsReal.readSync = origReadSync;
    // A crash leaves at most one batch's bytes as NULs (MAX_BATCH records of well under 2 KiB):
    // anything past a few MiB of NULs is not a crash's. 16 MiB is a generous bound.
    assert.ok(bytes <= 16 * 1024 * 1024, `the open check read ${bytes} bytes synchronously (${ms.toFixed(0)} ms with the event loop blocked); check ok=${c.ok}`);
  });

  it("F5: a write that fails part-way and whose cut-off fails too, after a dateext copytruncate: the writer restarts the chain at seq 1 with `rewound: true`, and verify passes a log whose answered records 1..3 are 'not continued' and whose seqs 1..3 are given out twice", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    const dated = `${live}-20261124`;
    fs.copyFileSync(live, dated); // logrotate copytruncate, dateext, between two unlocks
    fs.truncateSync(live, 0);
    let w = 0;
    proto.write = function (this: unknown, ...x: unknown[]) {
      const [buf, off, len] = x as [Buffer, number, number];
      w += 1;
      if (w === 1) return orig.write.call(this, buf, off, 30); // a short write (nearly full disk)
      if (w === 2) return Promise.reject(enospc());
      return orig.write.call(this, buf, off, len);
    };
    proto.truncate = function () { return Promise.reject(eio("ftruncate")); }; // the cut-off fails
    const r4 = await a.attempt(rec(4)).then(() => "ok", (e: Error) => e.message);
    Object.assign(proto, orig);
    await a.attempt(rec(5));
    await a.attempt(rec(6));
    await a.close();
    const recs = lines(live).map((l) => { try { return JSON.parse(l) as { seq: number; msgid: string; rewound?: number }; } catch { return null; } }).filter((r) => r !== null);
    const v = await verify([dated, live]);
    assert.match(r4, /ENOSPC/);
    const seqs = recs.map((r) => r!.seq);
    assert.equal(seqs[0], 4, `after seq 3 (durable, answered) the writer went on with seq ${seqs.join(",")}; verify: ok=${v.ok} ${v.message}; ${v.notes.join("; ")}\nlive: ${text(live)}`);
  });
});
