/**
 * Torn writes (docs/audit-log.md#a-failed-write, docs/audit-log.md#a-crash): a batch whose write
 * fails part-way is cut off the file again, and where that cannot happen (the cut fails too, or a
 * crash) the writer, the path check, the readers and verify read the torn end alike: a whole
 * record lacking only its newline counts, a fragment that starts like a record (or is the start
 * of one), blank lines and NUL bytes are skipped, anything else is still refused.
 *
 * Faults are forced by patching FileHandle.prototype, not timed.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import * as M from "../../src/audit/audit-log.js";
import { AuditLog, MAX_BATCH, type AuditBase, readAuditFile } from "../../src/audit/audit-log.js";
import { verify } from "../../src/audit/chain.js";
import { checkAuditPath, judgeOpenFileSync } from "../../src/audit/paths.js";
import { tail } from "../../src/audit/reader.js";
import {
  eio,
  enospc,
  lines,
  type P,
  parsed,
  raw,
  rec,
  rotatedFiles,
  text,
  useAuditDir,
  wholeRecords,
  writeOneByOne,
} from "../helpers/audit-faults.js";
import fsReal from "node:fs";

/** A record with deviceId 12 and msgid "m1", unless `over` says otherwise. */
const recWith = (over: Partial<AuditBase> = {}): AuditBase => ({
  actor: "alice",
  deviceId: 12,
  lockId: null,
  door: "Front Door",
  msgid: "m1",
  ...over,
});

/** The seq of the whole records of `file` runs 1..N. */
function assertSeqRun(file: string): void {
  const s = wholeRecords(file).map((r) => r.seq);
  assert.deepEqual(
    s,
    s.map((_, i) => i + 1),
    `seq must run 1..N without gap or repeat:\n${raw(file)}`,
  );
}

describe("A write that fails part-way is cut off again; when the cut fails too, the torn end is skipped and seq never repeats (docs/audit-log.md#a-failed-write)", function () {
  let live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ live, proto, orig } = t));

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
        behind = Promise.allSettled([
          log.result({ ...rec("b"), outcome: "accepted", status: 200 }),
          log.attempt(rec("c")),
        ]);
        return orig.write.call(this, buf, off, cut >= 0 ? cut : len + cut);
      }
      if (calls === 2) return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
      return orig.write.apply(this, a);
    };
    await assert.rejects(
      Promise.all([log.attempt(rec("a")), log.result({ ...rec("a"), outcome: "accepted", status: 200 })]),
      /ENOSPC/,
    );
    proto.write = orig.write;
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
      assert.deepEqual(
        settled.map((r) => r.status),
        ["fulfilled", "fulfilled"],
      );
      const msgids = wholeRecords(live).map((r) => r.msgid);
      assert.deepEqual(
        msgids,
        ["m1", "mb", "mc", "mz"],
        `the failed batch (ma) was answered "not written": it must not be in the log:\n${raw(live)}`,
      );
      const v = await verify([live]);
      assert.equal(v.ok, true, `${v.message}\n${raw(live)}`);
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
      assert.deepEqual(
        settled.map((r) => r.status),
        ["fulfilled", "fulfilled"],
      );
      const v = await verify([live]);
      assert.equal(v.ok, true, `${v.message}\n${raw(live)}`);
      assertSeqRun(live);
      const msgids = wholeRecords(live).map((r) => r.msgid);
      for (const m of ["m1", "mb", "mc", "mz"]) assert.ok(msgids.includes(m), `${m} in ${JSON.stringify(msgids)}`);
    });
  }
});

describe("A write that fails part-way with records queued behind: verify passes, seq has no gap (docs/audit-log.md#a-failed-write)", function () {
  let live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ live, proto, orig } = t));

  for (const [label, cut] of [["a torn line of 40 bytes", 40]] as const) {
    it(`ENOSPC after a partial write (${label}) with a result and an attempt queued behind: those two are written, verify passes`, async () => {
      const log = track(new M.AuditLog(live));
      await log.attempt(rec(1));
      let calls = 0;
      let behind: Promise<PromiseSettledResult<void>[]> | null = null;
      proto.write = function (this: unknown, ...a: unknown[]) {
        calls += 1;
        if (calls === 1) {
          const [buf, off, len] = a as [Buffer, number, number];
          behind = Promise.allSettled([
            log.result({ ...rec("b"), outcome: "accepted", status: 200 }),
            log.attempt(rec("c")),
          ]);
          return orig.write.call(this, buf, off, cut > 0 ? cut : len - 1);
        }
        if (calls === 2) return Promise.reject(Object.assign(new Error("no space"), { code: "ENOSPC" }));
        return orig.write.apply(this, a);
      };
      await assert.rejects(
        Promise.all([log.attempt(rec("a")), log.result({ ...rec("a"), outcome: "accepted", status: 200 })]),
        /ENOSPC/,
      );
      proto.write = orig.write;
      const settled = (await (behind as unknown as Promise<PromiseSettledResult<void>[]>)).map((r) => r.status);
      assert.deepEqual(settled, ["fulfilled", "fulfilled"]);
      await log.attempt(rec("z"));
      const v = await verify([live]);
      assert.equal(v.ok, true, `${v.message}\n${fs.readFileSync(live, "utf8")}`);
    });
  }
});

// Found by the review of abce9a2 (D1..D3); fixed in 4742801.
describe("A write that fails part-way right after a rotation, and the cut fails: the torn new live file is still ours (docs/audit-log.md#a-failed-write)", function () {
  const text = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "<missing>");

  const enospc = () => Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));

  let live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ live, proto, orig } = t));

  for (const cut of [10, 40]) {
    it(`a size rotation in the batch, ENOSPC after ${cut} bytes of the new live file, the cut fails: the writer still writes later records, also after a restart`, async () => {
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
      await a.attempt(rec("z")); // with 10 bytes, this failed before the fix: "first line is not a door-access audit record"
      await a.close();
      const b = track(new AuditLog(live, { maxBytes: 400, keep: 3 })); // a restart / redeploy
      await b.attempt(rec("y")); // with 40 bytes, this failed before the fix
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, true, `${v.message}\n${text(live)}`);
    });
  }
});

// Found by the review of 4742801 (E1..E3); fixed in 12520e7.
describe("A write that fails part-way twice with the cut failing, or with a rotation in the batch (docs/audit-log.md#a-failed-write)", function () {
  const text = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "<missing>");

  let live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ live, proto, orig } = t));

  it("two torn batches the writer itself leaves (the first torn at 5 bytes, the next after 8, the cut failing each time): the next record is written", async () => {
    const a = track(new AuditLog(live));
    let calls = 0;
    proto.truncate = () => Promise.reject(Object.assign(new Error("injected"), { code: "EIO" }));
    proto.write = function (this: unknown, ...args: unknown[]) {
      calls += 1;
      const [buf, off] = args as [Buffer, number];
      if (calls === 1) return orig.write.call(this, buf, off, 5);
      if (calls === 3) return orig.write.call(this, buf, off, 8);
      return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
    };
    await assert.rejects(a.attempt(rec("a")), /ENOSPC/);
    await assert.rejects(a.attempt(rec("b")), /ENOSPC/);
    Object.assign(proto, orig);
    const v0 = await verify([live]);
    const err = await a.attempt(rec("z")).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.equal(err, null, `file ${JSON.stringify(text(live))}; verify before: ${v0.message}`);
  });

  it("a size rotation inside a failed batch (partial write, then ENOSPC, the cut works): the chain continues from <name>.1, verify passes, last seq 3", async () => {
    const a = track(new AuditLog(live, { maxBytes: 400, keep: 3 }));
    await a.attempt(rec(1));
    await a.attempt(rec(2));
    let calls = 0;
    proto.write = function (this: unknown, ...args: unknown[]) {
      calls += 1;
      const [buf, off] = args as [Buffer, number];
      if (calls === 1) return orig.write.call(this, buf, off, 30);
      if (calls === 2) return Promise.reject(Object.assign(new Error("no space"), { code: "ENOSPC" }));
      return orig.write.apply(this, args);
    };
    await assert.rejects(
      Promise.all([a.attempt(rec("a")), a.result({ ...rec("a"), outcome: "accepted", status: 200 })]),
      /ENOSPC/,
    );
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 3);
  });
});

describe("A write that fails part-way is marked rewound where the chain goes on, also across a rotation (docs/audit-log.md#a-failed-write)", function () {
  let live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ live, proto, orig } = t));

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
    assert.match(
      await a.attempt(rec("x")).then(
        () => "",
        (e: Error) => e.message,
      ),
      /ENOSPC/,
    );
    Object.assign(proto, orig);
    await a.attempt(rec(3));
    await a.close();
    const b = track(new AuditLog(live));
    await b.attempt(rec(4));
    await b.close();
    const r = parsed(live);
    assert.deepEqual(
      r.map((x) => [x.seq, x.msgid, typeof x.rewound === "number"]),
      [
        [1, "m1", false],
        [2, "m2", false],
        [3, "m3", true],
        [4, "m4", false],
      ],
      text(live),
    );
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
    assert.match(
      await a.attempt(rec("x")).then(
        () => "ok",
        (e: Error) => e.message,
      ),
      /fsync/,
    );
    for (let i = 7; i <= 14; i++) await a.attempt(rec(i));
    await a.close();
    const files = rotatedFiles(live);
    const v = await verify([...files, live]);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 14);
  });
});

describe("A crash: a torn last line is reported, skipped, and the next record starts on a new line (docs/audit-log.md#a-crash)", function () {
  let dir: string;
  const track = useAuditDir((t) => ({ dir } = t));

  it("repairs a torn last line on the next write, and readAuditFile reports it", async function () {
    const file = path.join(dir, "torn.jsonl");
    const good = JSON.stringify({
      type: "unlock-attempt",
      ts: "2025-01-01T00:00:00.000Z",
      ...recWith({ msgid: "ok" }),
    });
    await fsp.writeFile(file, good + "\n" + '{"type":"unlock-result","ts":"2025-01-0', { mode: 0o600 });

    const before = await readAuditFile(file);
    assert.equal(before.tornLastLine, true);
    assert.deepEqual(
      before.records.map((r) => r.msgid),
      ["ok"],
    );
    assert.deepEqual(before.badLines, [], "a torn last line is reported as torn, not as a bad line");

    const log = track(new AuditLog(file));
    await log.attempt(recWith({ msgid: "after-crash" }));
    const raw = fs.readFileSync(file, "utf8");
    assert.ok(raw.includes('"ts":"2025-01-0\n{"type":"unlock-attempt"'), "new record starts on its own line");

    const after = await readAuditFile(file);
    assert.equal(after.tornLastLine, false);
    assert.deepEqual(
      after.records.map((r) => r.msgid),
      ["ok", "after-crash"],
    );
    assert.deepEqual(after.badLines, [2], "the old fragment is now a bad middle line");
  });

  it("readAuditFile keeps a complete last record that only lacks its newline, and lists bad lines", async function () {
    const file = path.join(dir, "mixed.jsonl");
    const line = (msgid: string) => JSON.stringify({ type: "unlock-attempt", ts: "t", ...recWith({ msgid }) });
    await fsp.writeFile(file, [line("a"), "not json", '{"type":"other","ts":"x"}', "", line("b")].join("\n"));
    const r = await readAuditFile(file);
    assert.equal(r.tornLastLine, true);
    assert.deepEqual(
      r.records.map((x) => x.msgid),
      ["a", "b"],
    );
    assert.deepEqual(r.badLines, [2, 3]);
    const missing = await readAuditFile(path.join(dir, "nope.jsonl"));
    assert.deepEqual(missing, { records: [], tornLastLine: false, badLines: [] });
  });
});

describe("A crash: a torn last line is skipped on resume (docs/audit-log.md#a-crash)", function () {
  let live: string;
  const track = useAuditDir((t) => ({ live } = t));

  it("a torn last line (crash mid-write) is skipped on resume: the chain continues from the last complete record, and verify notes the fragment", async () => {
    const a = new AuditLog(live);
    await writeOneByOne(a, 1, 2);
    await a.close();
    fs.appendFileSync(live, '{"type":"unlock-attempt","ts":"2025-');
    const b = track(new AuditLog(live));
    await writeOneByOne(b, 3, 1);
    const v = await verify([live]);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 3);
    assert.ok(
      v.notes.some((n) => /line 3: a torn write/.test(n)),
      v.notes.join("; "),
    );
  });
});

describe("A crash: a lost newline, a torn fragment and a torn first line are read alike by the writer and verify; anything else is still refused (docs/audit-log.md#a-crash)", function () {
  let dir: string, live: string;
  const track = useAuditDir((t) => ({ dir, live } = t));

  it("a crash took only the last record's newline: a new writer continues after that record (no repeated seq), and verify passes", async () => {
    const a = new AuditLog(live);
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    await a.close();
    fs.truncateSync(live, fs.statSync(live).size - 1); // the crash: the final "\n" never landed
    const b = track(new AuditLog(live));
    await b.attempt(rec(4));
    await b.attempt(rec(5));
    const v = await verify([live]);
    assert.equal(v.ok, true, `${v.message}\n${raw(live)}`);
    assert.equal(v.lastSeq, 5);
    assertSeqRun(live);
    assert.deepEqual(
      wholeRecords(live).map((r) => r.msgid),
      ["m1", "m2", "m3", "m4", "m5"],
    );
  });

  for (const fragment of ['{"type":"u', "{", '{"type":"unlock-attempt","ts":"2026-']) {
    it(`a crash left the fragment ${JSON.stringify(fragment)} at the end: verify passes and notes a torn write, a new writer continues the chain`, async () => {
      const a = new AuditLog(live);
      for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
      await a.close();
      fs.appendFileSync(live, fragment);
      const v0 = await verify([live]);
      assert.equal(v0.ok, true, `${v0.message}\n${raw(live)}`);
      const b = track(new AuditLog(live));
      await b.attempt(rec(3));
      const v = await verify([live]);
      assert.equal(v.ok, true, `${v.message}\n${raw(live)}`);
      assert.equal(v.lastSeq, 3);
      assert.ok(
        v.notes.some((n) => /line 3: a torn write/.test(n)),
        v.notes.join("; "),
      );
      assertSeqRun(live);
    });
  }

  // docs/security.md#files-the-audit-log-may-never-be: the package never appends to an existing file that is not one of its
  // audit logs. A torn first line counts as ours; a file that merely starts with "{" does not.
  for (const [label, body] of [
    ["a pretty-printed JSON file", '{\n  "type": "unlock-attempt"\n}\n'],
    ['a file of one "{" line and text after it', "{\nhello\n"],
  ] as const) {
    it(`still refused: ${label} is not taken for a log with a torn first line (writer and the path check)`, async () => {
      fs.writeFileSync(live, body);
      const log = track(new AuditLog(live));
      await assert.rejects(log.attempt(rec(1)), /first line is not a door-access audit record/);
      assert.equal(raw(live), body, "the file is untouched");
      const check = checkAuditPath(live, { userDir: dir });
      assert.equal(check.ok, false);
    });
  }

  it("a live file whose first line is a torn start followed by records (a crash tore a new live file's first write): the path check and the writer accept it", async () => {
    const a = new AuditLog(live);
    await a.attempt(rec(1));
    await a.close();
    const whole = raw(live);
    fs.writeFileSync(live, '{"type":"u\n' + whole);
    assert.equal(checkAuditPath(live, { userDir: dir }).ok, true);
    const b = track(new AuditLog(live));
    await b.attempt(rec(2));
    assert.deepEqual(
      wholeRecords(live).map((r) => r.seq),
      [1, 2],
    );
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

describe("A crash: the reader and verify agree on a whole last record lacking its newline (docs/audit-log.md#a-crash)", function () {
  let live: string;
  const track = useAuditDir((t) => ({ live } = t), "a.jsonl");

  it("reader and verify agree on a whole last record lacking its newline", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 3; i++) await a.attempt(rec(i));
    fs.truncateSync(live, fs.statSync(live).size - 1);
    const v = await verify([live]);
    const t = await tail(live, 1);
    assert.equal(v.lastSeq, 3);
    assert.equal(t[0].seq, 3);
  });
});

// Found by the review of abce9a2 (D1..D3); fixed in 4742801.
describe("A crash: a new live file holding only a torn start is still ours (docs/audit-log.md#a-crash)", function () {
  let live: string;
  const track = useAuditDir((t) => ({ live } = t));

  async function seedRotated(): Promise<void> {
    const a = new AuditLog(live);
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    await a.close();
    fs.renameSync(live, `${live}.1`); // a rotation, then the crash tore the first write of the new live file
  }

  for (const fragment of ['{"type":"u', '{"type":"unlock-attempt","ts":"2026-']) {
    it(`a crash left only ${JSON.stringify(fragment)} in a new live file: verify passes; a new writer and then a restarted one both write`, async () => {
      await seedRotated();
      fs.writeFileSync(live, fragment);
      const v0 = await verify([`${live}.1`, live]);
      assert.equal(v0.ok, true, v0.message);
      const b = track(new AuditLog(live));
      await b.attempt(rec(3));
      await b.close();
      const c = track(new AuditLog(live));
      await c.attempt(rec(4));
      const v = await verify([`${live}.1`, live]);
      assert.equal(v.ok, true, v.message);
      assert.equal(v.lastSeq, 4);
    });
  }
});

// Found by the review of 4742801 (E1..E3); fixed in 12520e7.
describe("A crash: a file whose first lines are all torn starts is still ours (docs/audit-log.md#a-crash)", function () {
  let dir: string, live: string;
  const track = useAuditDir((t) => ({ dir, live } = t));

  it("a torn first line followed by a torn second record (two crashes): verify accepts it, the path check and the writer take it as ours", async () => {
    fs.writeFileSync(live, '{"type":"unl\n{"type":"unlock-attempt","ts":"2026-11-24T');
    const v0 = await verify([live]);
    assert.notEqual(v0.ok, false, v0.message);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(1)).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.equal(c.ok, true, `checkAuditPath: ${c.ok ? "" : c.problem}; writer: ${err}`);
    assert.equal(err, null);
  });
});

// Found by the review of 12520e7 (D1..D3); fixed in 5f59d11.
describe("A crash: blank lines before the first record are skipped, as verify skips them (docs/audit-log.md#a-crash)", function () {
  const text = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "<missing>");

  let dir: string, live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ dir, live, proto, orig } = t));

  it("a file the writer itself starts with a blank line (a torn tail, then a copytruncate before the write): verify accepts it, and after a restart the path check and the writer take it up", async () => {
    const a0 = track(new AuditLog(live));
    await a0.attempt(rec(1));
    await a0.close();
    fs.appendFileSync(live, '{"type":"unlock-att'); // a crash tore the next record
    const a = track(new AuditLog(live));
    let n = 0;
    proto.write = function (this: unknown, ...args: unknown[]) {
      if (++n === 1) {
        fs.copyFileSync(live, `${live}.1`);
        fs.truncateSync(live, 0);
      } // logrotate copytruncate
      return orig.write.apply(this, args);
    };
    await a.attempt(rec(2));
    Object.assign(proto, orig);
    await a.close();
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, v.message);
    const c = checkAuditPath(live, { userDir: dir });
    const b = track(new AuditLog(live)); // Node-RED restarted
    const err = await b.attempt(rec(3)).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.equal(
      err,
      null,
      `live ${JSON.stringify(text(live).slice(0, 40))}...; verify: ${v.message}; checkAuditPath ok=${c.ok}`,
    );
    assert.equal(c.ok, true);
  });

  it("a log emptied with `echo > audit.jsonl` (one newline): the writer takes it up and writes the next record", async () => {
    fs.writeFileSync(live, "\n");
    const v = await verify([live]);
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(1)).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.equal(err, null, `verify: ok=${v.ok} ${v.message}`);
  });
});

// Found by the review of 5f59d11 (F1..F6); fixed in 64810c1 and 7f1af60.
describe("A crash: more than 64 KiB of blank lines, and NUL bytes at the end, are skipped (docs/audit-log.md#a-crash)", function () {
  let dir: string, live: string;
  const track = useAuditDir((t) => ({ dir, live } = t));

  it("a log that starts with more than 64 KiB of blank lines, then records: verify passes and the path check takes it as ours", async () => {
    const a0 = track(new AuditLog(path.join(dir, "src.jsonl")));
    for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
    await a0.close();
    fs.writeFileSync(live, "\n".repeat(70000) + fs.readFileSync(path.join(dir, "src.jsonl"), "utf8"));
    const v = await verify([live]);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(3)).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.equal(v.ok, true, v.message);
    assert.equal(c.ok, true, `checkAuditPath: ${c.ok ? "" : c.problem}; writer: ${err}`);
  });

  it("a crash left the live file's tail as NUL bytes (size extended, data not yet written: XFS/ext4 writeback): the writer appends after them and verify passes", async () => {
    const a0 = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
    await a0.close();
    fs.appendFileSync(live, Buffer.alloc(40)); // the crash
    const before = await verify([live]);
    const a = track(new AuditLog(live));
    await a.attempt(rec(3));
    const v = await verify([live]);
    assert.equal(v.ok, true, `before: ${before.ok} ${before.message}; after: ${v.message}`);
  });
});

// Found by the review of 7f1af60 (F1..F7); fixed in d62e4dc.
describe("A crash: NUL bytes at the start of a file are skipped (docs/audit-log.md#a-crash)", function () {
  let dir: string, live: string;
  const track = useAuditDir((t) => ({ dir, live } = t));

  it("a crash left more than 64 KiB of NUL bytes at the start of a fresh live file (a big batch, size extended, data not written): verify, the path check and the writer all take it as ours", async () => {
    fs.writeFileSync(`${live}.1`, "");
    const a0 = track(new AuditLog(path.join(dir, "src.jsonl")));
    for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
    await a0.close();
    fs.copyFileSync(path.join(dir, "src.jsonl"), `${live}.1`); // the rotated file
    fs.writeFileSync(live, Buffer.alloc(70000)); // the new live file after the crash
    const v = await verify([`${live}.1`, live]);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(3)).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.equal(v.ok, true, v.message);
    assert.equal(c.ok, true, `checkAuditPath: ${c.ok ? "" : c.problem}; writer: ${err}`);
    assert.equal(err, null, `writer: ${err}`);
  });
});

describe("A crash: blank and NUL-only files are ours, and a file that shrinks while it is read (docs/audit-log.md#a-crash)", function () {
  let dir: string, live: string;
  const origReadSync = fsReal.readSync;
  afterEach(() => {
    fsReal.readSync = origReadSync;
  });
  const track = useAuditDir((t) => ({ dir, live } = t));

  it("a file of only blanks (CR-only, 200 000 newlines) or a few NUL bytes is accepted, as verify reads it; the writer appends a record verify accepts", async () => {
    const got: string[] = [];
    for (const body of ["\r\r\r", "\n".repeat(200000), "\0\0\0\0"]) {
      fs.writeFileSync(live, body);
      const c = checkAuditPath(live, { userDir: dir });
      const a = track(new AuditLog(live));
      const err = await a.attempt(rec(1)).then(
        () => null,
        (e: Error) => e.message,
      );
      await a.close();
      const v = await verify([live]);
      if (!c.ok || err !== null || v.ok !== true)
        got.push(`${JSON.stringify(body.slice(0, 5))}: check ${c.ok}, writer ${err}, verify ${v.message}`);
    }
    assert.deepEqual(got, []);
  });

  it("a file that shrinks to empty while its blank prefix is read: judged as empty (ours), no exception", () => {
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
});

// Found by the review of d62e4dc (F1..F5); fixed in 81ac3b5.
describe("A crash: the open check reads at most 4 MiB of blank and NUL lines (docs/audit-log.md#a-crash)", function () {
  let dir: string, live: string;
  const origOpen = fsp.open;
  const origReadSync = fsReal.readSync;
  afterEach(() => {
    (fsp as { open: typeof fsp.open }).open = origOpen;
    fsReal.readSync = origReadSync;
  });
  useAuditDir((t) => ({ dir, live } = t));

  it("a sparse all-NUL file of 256 MiB at the audit path: the path check reads at most 16 MiB of it synchronously", function () {
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
    assert.ok(
      bytes <= 16 * 1024 * 1024,
      `the open check read ${bytes} bytes synchronously (${ms.toFixed(0)} ms with the event loop blocked); check ok=${c.ok}`,
    );
  });
});

describe("A crash: our own files a crash left with NUL lines are accepted (docs/audit-log.md#a-crash)", function () {
  let dir: string, live: string;
  const track = useAuditDir((t) => ({ dir, live } = t));

  it("our own files a crash left (NUL lines, a torn start with trailing NULs, then records) are accepted; the writer appends a record verify accepts", async () => {
    const a0 = track(new AuditLog(path.join(dir, "src.jsonl")));
    for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
    await a0.close();
    const recs = fs.readFileSync(path.join(dir, "src.jsonl"), "utf8");
    const got: string[] = [];
    for (const prefix of [
      "\0".repeat(5000) + "\n",
      "\0\0\n\n\0\n",
      '{"type":"unlock-att' + "\0".repeat(100) + "\n",
      "\0".repeat(100),
    ]) {
      fs.writeFileSync(live, prefix + (prefix.endsWith("\n") ? "" : "\n") + recs);
      const c = checkAuditPath(live, { userDir: dir });
      const a = track(new AuditLog(live));
      const err = await a.attempt(rec(3)).then(
        () => null,
        (e: Error) => e.message,
      );
      await a.close();
      const v = await verify([live]);
      if (!c.ok || err !== null || v.ok !== true || v.lastSeq !== 3)
        got.push(`${JSON.stringify(prefix.slice(0, 12))}: check ${c.ok}, writer ${err}, verify ${v.message}`);
    }
    assert.deepEqual(got, []);
  });
});

// Fixed in 6ddd297.
describe("A crash: the writer never writes a batch larger than the open check reads, so the NUL bytes a crash leaves of one are still ours (docs/audit-log.md#a-crash)", function () {
  this.timeout(60000);
  let dir: string, live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ dir, live, proto, orig } = t));

  it("1024 records at the field caps (more than 4 MiB) queued at once go out in batches of at most about 3 MiB; a crash leaving the largest as NUL bytes at the start of a fresh live file: verify, the path check and the writer all take the log as ours", async () => {
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
    await Promise.all(
      Array.from({ length: MAX_BATCH }, (_, i) =>
        a0.rejected({
          actor: big,
          deviceId: 101,
          lockId: null,
          door: big,
          msgid: big.slice(0, 190) + String(i).padStart(10, "0"),
          outcome: big,
          reason: big,
        }),
      ),
    );
    Object.assign(proto, orig);
    await a0.close();
    const total = fs.statSync(src).size - before;
    assert.ok(total > 4 * 1024 * 1024, `the records are ${total} bytes`);
    const largest = Math.max(...writes);
    assert.ok(writes.length > 1 && largest <= 3.1 * 1024 * 1024, `batches of ${writes.join(", ")} bytes`);
    // The rotated file holds seq 1; the crash hit the largest batch of the new live file: its
    // size was extended, its data not written (NUL bytes), as a crash can leave it.
    fs.writeFileSync(`${live}.1`, lines(src)[0] + "\n");
    fs.writeFileSync(live, Buffer.alloc(largest));
    const v = await verify([`${live}.1`, live]);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(2)).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.equal(v.ok, true, v.message);
    assert.equal(c.ok, true, `checkAuditPath: ${c.ok ? "" : c.problem}`);
    assert.equal(err, null, `the writer refuses its own log: ${err}`);
  });
});

describe("A crash: up to 4 MiB of NUL bytes before the first record are ours; more are refused quickly, and verify still reads the log (docs/audit-log.md#a-crash)", function () {
  let dir: string, live: string;
  const origOpen = fsp.open;
  afterEach(() => {
    (fsp as { open: typeof fsp.open }).open = origOpen;
  });
  const track = useAuditDir((t) => ({ dir, live } = t));

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
