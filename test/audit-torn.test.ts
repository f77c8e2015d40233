/**
 * Torn writes in the audit log: a batch whose write fails part-way (ENOSPC after some bytes), and
 * a file a crash left with a torn last line. Found by the break review of issue 13 (helper-12);
 * these failed on the writer before this change (153b136) as well as on the one before the
 * latency work (e4306f5):
 *
 * - ENOSPC after all of a batch but its final newline: the file then held whole records the
 *   callers were told were not written, and the writer resumed the chain from the record before
 *   them (a torn last line was skipped on resume) while verify counted them: two records with one
 *   seq, verify failed (CONTRACT.md "Tamper-evident chain": seq +1 for each record).
 * - ENOSPC after the first 10 bytes (`{"type":"u`): verify called that fragment "not an audit
 *   record" and exited 1 on a log nobody had tampered with.
 *
 * Now a failed batch is cut off the file again (its callers were told it was not written, and no
 * request left for its attempts: CONTRACT.md "Audit log", the attempt is flushed before the
 * request leaves), and where that cannot happen (a crash, or the cut failing too) the writer and
 * verify read the torn end the same way: a whole record lacking only its newline counts, a
 * fragment that starts like a record (or is the start of one) is a torn write the chain
 * continues across.
 *
 * Faults are forced by patching FileHandle.prototype, not timed.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, type AuditBase } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { checkAuditPath } from "../src/audit/paths.js";

function rec(i: number | string): AuditBase {
  return { actor: "alice", deviceId: 101, lockId: null, door: "Front Door", msgid: `m${i}` };
}
function text(file: string): string {
  return fs.readFileSync(file, "utf8");
}
/** The complete records of a file (a torn fragment is left out). */
function records(file: string): { seq: number; msgid: string; type: string }[] {
  const out: { seq: number; msgid: string; type: string }[] = [];
  for (const l of text(file).split("\n")) {
    try {
      out.push(JSON.parse(l));
    } catch {
      /* a torn fragment or a blank line */
    }
  }
  return out;
}
function assertSeqRun(file: string): void {
  const s = records(file).map((r) => r.seq);
  assert.deepEqual(s, s.map((_, i) => i + 1), `seq must run 1..N without gap or repeat:\n${text(file)}`);
}

interface Proto {
  write: (...a: unknown[]) => Promise<unknown>;
  truncate: (...a: unknown[]) => Promise<unknown>;
}

describe("audit log: torn writes (a failed batch, a crash mid-write)", function () {
  let dir: string;
  let live: string;
  let proto: Proto;
  let origWrite: Proto["write"];
  let origTruncate: Proto["truncate"];
  const logs: AuditLog[] = [];
  const track = (log: AuditLog): AuditLog => (logs.push(log), log);

  before(async () => {
    const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), "torn-probe-"));
    const probe = await fsp.open(path.join(tmp, "probe"), "w");
    proto = Object.getPrototypeOf(probe) as Proto;
    await probe.close();
    await fsp.rm(tmp, { recursive: true, force: true });
    origWrite = proto.write;
    origTruncate = proto.truncate;
  });
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "torn-"));
    live = path.join(dir, "audit.jsonl");
  });
  afterEach(async () => {
    proto.write = origWrite;
    proto.truncate = origTruncate;
    for (const log of logs.splice(0)) await log.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });

  /**
   * Writes m1, then a batch (attempt + result of "a") whose first write call writes only `cut`
   * bytes (negative: all but that many) and whose second call fails with ENOSPC, with a result
   * and an attempt queued behind it; then one more attempt "z".
   */
  async function failedBatch(cut: number): Promise<PromiseSettledResult<void>[]> {
    const log = track(new AuditLog(live));
    await log.attempt(rec(1));
    let calls = 0;
    let behind: Promise<PromiseSettledResult<void>[]> | null = null;
    proto.write = function (this: unknown, ...a: unknown[]) {
      calls += 1;
      if (calls === 1) {
        const [buf, off, len] = a as [Buffer, number, number];
        behind = Promise.allSettled([log.result({ ...rec("b"), outcome: "accepted", status: 200 }), log.attempt(rec("c"))]);
        return origWrite.call(this, buf, off, cut >= 0 ? cut : len + cut);
      }
      if (calls === 2) return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
      return origWrite.apply(this, a);
    };
    await assert.rejects(Promise.all([log.attempt(rec("a")), log.result({ ...rec("a"), outcome: "accepted", status: 200 })]), /ENOSPC/);
    proto.write = origWrite;
    assert.ok(behind, "records were queued behind the failing batch");
    const settled = await (behind as unknown as Promise<PromiseSettledResult<void>[]>);
    await log.attempt(rec("z"));
    return settled;
  }

  for (const [label, cut] of [
    ["the first 10 bytes of a batch", 10],
    ["40 bytes of a batch", 40],
    ["all of a batch but its final newline", -1],
  ] as const) {
    it(`ENOSPC after ${label}: the batch is rejected and not in the file, the records behind it are, verify passes, seq runs without repeat`, async () => {
      const settled = await failedBatch(cut);
      assert.deepEqual(settled.map((r) => r.status), ["fulfilled", "fulfilled"]);
      const msgids = records(live).map((r) => r.msgid);
      assert.deepEqual(msgids, ["m1", "mb", "mc", "mz"], `the failed batch (ma) was answered "not written": it must not be in the log:\n${text(live)}`);
      const v = await verify([live]);
      assert.equal(v.ok, true, `${v.message}\n${text(live)}`);
      assertSeqRun(live);
    });
  }

  for (const [label, cut] of [
    ["the first 10 bytes of a batch", 10],
    ["all of a batch but its final newline", -1],
  ] as const) {
    it(`ENOSPC after ${label}, and the cut fails too: the torn end stays, yet verify passes and seq runs without repeat`, async () => {
      proto.truncate = () => Promise.reject(Object.assign(new Error("injected truncate failure"), { code: "EIO" }));
      const settled = await failedBatch(cut);
      assert.deepEqual(settled.map((r) => r.status), ["fulfilled", "fulfilled"]);
      const v = await verify([live]);
      assert.equal(v.ok, true, `${v.message}\n${text(live)}`);
      assertSeqRun(live);
      const msgids = records(live).map((r) => r.msgid);
      for (const m of ["m1", "mb", "mc", "mz"]) assert.ok(msgids.includes(m), `${m} in ${JSON.stringify(msgids)}`);
    });
  }

  it("a copytruncate just before a batch's write fails part-way: the file is not extended with zero bytes, verify passes", async () => {
    const log = track(new AuditLog(live));
    for (let i = 1; i <= 3; i++) await log.attempt(rec(i));
    let calls = 0;
    proto.write = function (this: unknown, ...a: unknown[]) {
      calls += 1;
      if (calls === 1) {
        const [buf, off] = a as [Buffer, number, number];
        fs.copyFileSync(live, `${live}.1`); // logrotate copytruncate, right before the write
        fs.truncateSync(live, 0);
        return origWrite.call(this, buf, off, 10);
      }
      if (calls === 2) return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
      return origWrite.apply(this, a);
    };
    await assert.rejects(log.attempt(rec("a")), /ENOSPC/);
    proto.write = origWrite;
    await log.attempt(rec("z"));
    const body = text(live);
    assert.ok(!body.includes("\0"), `no zero bytes in the file: ${JSON.stringify(body)}`);
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, `${v.message}\n${body}`);
    assert.deepEqual(records(live).map((r) => [r.msgid, r.seq]), [["mz", 4]]);
  });

  it("a crash took only the last record's newline: a new writer continues after that record (no repeated seq), and verify passes", async () => {
    const a = new AuditLog(live);
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    await a.close();
    fs.truncateSync(live, fs.statSync(live).size - 1); // the crash: the final "\n" never landed
    const b = track(new AuditLog(live));
    await b.attempt(rec(4));
    await b.attempt(rec(5));
    const v = await verify([live]);
    assert.equal(v.ok, true, `${v.message}\n${text(live)}`);
    assert.equal(v.lastSeq, 5);
    assertSeqRun(live);
    assert.deepEqual(records(live).map((r) => r.msgid), ["m1", "m2", "m3", "m4", "m5"]);
  });

  for (const fragment of ['{"type":"u', "{", '{"type":"unlock-attempt","ts":"2026-']) {
    it(`a crash left the fragment ${JSON.stringify(fragment)} at the end: verify passes and notes a torn write, a new writer continues the chain`, async () => {
      const a = new AuditLog(live);
      for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
      await a.close();
      fs.appendFileSync(live, fragment);
      const v0 = await verify([live]);
      assert.equal(v0.ok, true, `${v0.message}\n${text(live)}`);
      const b = track(new AuditLog(live));
      await b.attempt(rec(3));
      const v = await verify([live]);
      assert.equal(v.ok, true, `${v.message}\n${text(live)}`);
      assert.equal(v.lastSeq, 3);
      assert.ok(v.notes.some((n) => /line 3: a torn write/.test(n)), v.notes.join("; "));
      assertSeqRun(live);
    });
  }

  // CONTRACT.md "Audit log": the package never appends to an existing file that is not one of its
  // audit logs. A torn first line counts as ours; a file that merely starts with "{" does not.
  for (const [label, body] of [
    ["a pretty-printed JSON file", '{\n  "type": "unlock-attempt"\n}\n'],
    ["a file of one \"{\" line and text after it", "{\nhello\n"],
  ] as const) {
    it(`still refused: ${label} is not taken for a log with a torn first line (writer and the path check)`, async () => {
      fs.writeFileSync(live, body);
      const log = track(new AuditLog(live));
      await assert.rejects(log.attempt(rec(1)), /first line is not a door-access audit record/);
      assert.equal(text(live), body, "the file is untouched");
      const check = checkAuditPath(live, { userDir: dir });
      assert.equal(check.ok, false);
    });
  }

  it("a live file whose first line is a torn start followed by records (a crash tore a new live file's first write): the path check and the writer accept it", async () => {
    const a = new AuditLog(live);
    await a.attempt(rec(1));
    await a.close();
    const whole = text(live);
    fs.writeFileSync(live, '{"type":"u\n' + whole);
    assert.equal(checkAuditPath(live, { userDir: dir }).ok, true);
    const b = track(new AuditLog(live));
    await b.attempt(rec(2));
    assert.deepEqual(records(live).map((r) => r.seq), [1, 2]);
  });

  it("still refused: a line that does not start like a record is not taken for a torn write (verify names it)", async () => {
    const a = new AuditLog(live);
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    await a.close();
    fs.appendFileSync(live, '{"typo":"unlock-attempt"\n');
    const v = await verify([live]);
    assert.equal(v.ok, false);
    assert.match(v.message ?? "", /line 3/);
  });
});
