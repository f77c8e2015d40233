/**
 * The audit log's writer side on real files, without Node-RED: the seq/prev chain and where a
 * writer resumes it, size rotation with retention, a file renamed, deleted or truncated by
 * something else (logrotate), `verify` on edited, deleted and reordered lines (also through the
 * bin as a child process), and the file-safety rules (src/audit/paths.ts and the writer's own
 * checks when it opens a file).
 *
 * Races are forced, not timed: the writer's "record" event is emitted synchronously right after
 * a batch is durable and before the next batch starts, so a listener that renames, deletes or
 * truncates the file acts exactly between two batches.
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, type AuditBase, auditRecordEvents, openAuditLog } from "../src/audit/audit-log.js";
import { GENESIS, lineHash, verify } from "../src/audit/chain.js";
import { main } from "../src/audit/cli.js";
import { checkAuditPath } from "../src/audit/paths.js";
import { listLogFiles } from "../src/audit/reader.js";

const BIN = path.join(process.cwd(), "bin", "door-access-audit.js");

function rec(i: number): AuditBase {
  return { actor: "alice", deviceId: 101, lockId: null, door: "Front Door", msgid: `m${i}` };
}

function lines(file: string): string[] {
  return fs.readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0);
}

function seqs(file: string): number[] {
  return lines(file).map((l) => JSON.parse(l).seq as number);
}

/** Calls `act(seq)` synchronously for every durable record of `log`, between batches. */
function onDurable(log: AuditLog, act: (seq: number, line: string) => void): () => void {
  const listener = (file: string, line: string) => {
    if (file === log.filePath) act(JSON.parse(line).seq as number, line);
  };
  auditRecordEvents.on("record", listener);
  return () => auditRecordEvents.off("record", listener);
}

/** `n` attempts, one at a time (one batch each, so the listener acts between any two). */
async function writeOneByOne(log: AuditLog, from: number, n: number): Promise<void> {
  for (let i = from; i < from + n; i++) await log.attempt(rec(i));
}

async function runCli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(args, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

describe("audit log chain, rotation and file safety (writer on real files)", function () {
  let dir: string;
  let live: string;
  const logs: AuditLog[] = [];
  const track = (log: AuditLog): AuditLog => (logs.push(log), log);

  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "door-chain-"));
    live = path.join(dir, "audit.jsonl");
  });
  afterEach(async () => {
    for (const log of logs.splice(0)) await log.close().catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("every record carries seq (1, 2, ...) and prev = SHA-256 of the previous line's exact bytes (64 zeros for seq 1)", async () => {
    const log = track(new AuditLog(live));
    await Promise.all([log.attempt(rec(1)), log.result({ ...rec(1), outcome: "accepted", status: 200 }), log.rejected({ ...rec(2), outcome: "invalid-input", reason: "x" })]);
    await writeOneByOne(log, 3, 3);
    const ls = lines(live);
    assert.equal(ls.length, 6);
    let prev = GENESIS;
    ls.forEach((l, k) => {
      const r = JSON.parse(l);
      assert.equal(r.seq, k + 1);
      assert.equal(r.prev, prev);
      assert.match(r.prev, /^[0-9a-f]{64}$/);
      prev = lineHash(l);
    });
    assert.deepEqual(log.chainPosition(), { seq: 6, hash: prev });
    const v = await verify([live]);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 6);
    assert.equal(v.lastHash, prev);
    assert.equal(v.startsAfterGenesis, false);
  });

  it("a new writer resumes the chain from the live file's last record; with the live file absent, from the newest rotated file", async () => {
    const a = new AuditLog(live);
    await writeOneByOne(a, 1, 3);
    await a.close();
    const b = new AuditLog(live);
    await writeOneByOne(b, 4, 2);
    await b.close();
    assert.deepEqual(seqs(live), [1, 2, 3, 4, 5]);
    fs.renameSync(live, `${live}.1`);
    const c = track(new AuditLog(live));
    await writeOneByOne(c, 6, 1);
    assert.deepEqual(seqs(live), [6]);
    const v = await verify(await listLogFiles(live));
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 6);
  });

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
    assert.ok(v.notes.some((n) => /line 3: a torn write/.test(n)), v.notes.join("; "));
  });

  // CONTRACT.md "Audit log", Rotation: live -> <name>.1, older shift, oldest beyond auditKeep deleted.
  it("size rotation: live -> .1, older files shift, the oldest beyond keep is deleted; no file above maxBytes; the chain continues", async () => {
    const log = track(new AuditLog(live, { maxBytes: 1000, keep: 3 }));
    await writeOneByOne(log, 1, 60);
    const files = await listLogFiles(live);
    assert.deepEqual(files, [`${live}.3`, `${live}.2`, `${live}.1`, live]);
    for (const f of files) assert.ok(fs.statSync(f).size <= 1000, `${f} is ${fs.statSync(f).size} bytes`);
    assert.ok(log.stats().rotations >= 4);
    const all = files.flatMap(seqs);
    assert.equal(all[all.length - 1], 60);
    all.forEach((s, k) => k > 0 && assert.equal(s, all[k - 1]! + 1, "no gap across the files"));
    const v = await verify(files);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.startsAfterGenesis, true, "older files were deleted: accepted from the first remaining seq");
    assert.equal(v.firstSeq, all[0]);
    const cli = await runCli(["verify", live]);
    assert.equal(cli.code, 0, cli.out + cli.err);
    assert.match(cli.out, new RegExp(`starts at seq ${all[0]}`));
    assert.match(cli.out, /last seq: 60\n/);
  });

  it("auditMaxBytes 0 never rotates", async () => {
    const log = track(new AuditLog(live, { maxBytes: 0, keep: 1 }));
    await writeOneByOne(log, 1, 30);
    assert.deepEqual(await listLogFiles(live), [live]);
    assert.equal(log.stats().rotations, 0);
  });

  // docs/security.md#files-the-audit-log-may-never-be
  it("size rotation renames and deletes only our audit logs: another program's <name>.1 and <name>.7 (beyond keep) and a link <name>.2 stay as they are; while <name>.1 is not ours the live file is not rotated, no record is lost, one warning", async () => {
    const foreign1 = "another program's file\nline 2\n";
    const foreign7 = '{"not":"ours"}\n';
    fs.writeFileSync(`${live}.1`, foreign1);
    fs.writeFileSync(`${live}.7`, foreign7);
    fs.writeFileSync(path.join(dir, "target"), "");
    fs.symlinkSync(path.join(dir, "target"), `${live}.2`);
    const ino = (f: string) => fs.lstatSync(f).ino;
    const before = { one: ino(`${live}.1`), seven: ino(`${live}.7`), two: ino(`${live}.2`) };
    const warnings: string[] = [];
    const log = track(new AuditLog(live, { maxBytes: 1000, keep: 3, warn: (m) => warnings.push(m) }));
    await writeOneByOne(log, 1, 40);
    assert.equal(fs.readFileSync(`${live}.1`, "utf8"), foreign1, "<name>.1 unchanged");
    assert.equal(fs.readFileSync(`${live}.7`, "utf8"), foreign7, "<name>.7 unchanged (not deleted)");
    assert.ok(fs.lstatSync(`${live}.2`).isSymbolicLink(), "the link <name>.2 is still a link");
    assert.deepEqual({ one: ino(`${live}.1`), seven: ino(`${live}.7`), two: ino(`${live}.2`) }, before, "the same files at the same names");
    assert.ok(!fs.existsSync(`${live}.3`), "nothing shifted to <name>.3");
    assert.equal(fs.readFileSync(path.join(dir, "target"), "utf8"), "", "nothing written through the link");
    assert.deepEqual(seqs(live), Array.from({ length: 40 }, (_, k) => k + 1), "every record in the live file, in order");
    const v = await verify([live]);
    assert.equal(v.ok, true, v.message);
    assert.equal(log.stats().rotations, 0);
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(warnings[0]!, /not rotated/);
    assert.ok(warnings[0]!.includes(`${live}.1`), warnings[0]);
  });

  it("size rotation shifts our files up to another program's <name>.7 and no further: that file stays, rotation waits with no record lost, and goes on once the file is moved away", async () => {
    const foreign = "not an audit log\n";
    fs.writeFileSync(`${live}.7`, foreign);
    const warnings: string[] = [];
    const log = track(new AuditLog(live, { maxBytes: 1000, keep: 10, warn: (m) => warnings.push(m) }));
    await writeOneByOne(log, 1, 60);
    assert.equal(fs.readFileSync(`${live}.7`, "utf8"), foreign, "<name>.7 unchanged");
    assert.ok(!fs.existsSync(`${live}.8`), "nothing shifted past it");
    const ours = [6, 5, 4, 3, 2, 1].map((i) => `${live}.${i}`);
    for (const f of ours) assert.ok(fs.existsSync(f), `${f} exists`);
    assert.deepEqual([...ours, live].flatMap(seqs), Array.from({ length: 60 }, (_, k) => k + 1), "seq 1..60 across our files, in order");
    let v = await verify([...ours, live]);
    assert.equal(v.ok, true, v.message);
    assert.ok(fs.statSync(live).size > 1000, "the live file grew while rotation waited");
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.ok(warnings[0]!.includes(`${live}.7`), warnings[0]);
    const rotations = log.stats().rotations;
    fs.renameSync(`${live}.7`, path.join(dir, "moved-away"));
    await writeOneByOne(log, 61, 1);
    assert.equal(log.stats().rotations, rotations + 1, "rotated again once the way is free");
    assert.deepEqual(seqs(live), [61]);
    v = await verify(await listLogFiles(live));
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 61);
    assert.equal(fs.readFileSync(path.join(dir, "moved-away"), "utf8"), foreign);
  });

  it("logrotate rename + compress + delete between two batches: later records go to a new file at the path, none to the renamed one; the chain continues", async () => {
    const log = track(new AuditLog(live));
    const off = onDurable(log, (seq) => {
      if (seq !== 5) return;
      fs.renameSync(live, `${live}.1`); // logrotate: rename ...
    });
    try {
      await writeOneByOne(log, 1, 10);
    } finally {
      off();
    }
    assert.deepEqual(seqs(`${live}.1`), [1, 2, 3, 4, 5], "the renamed file got nothing after its rename");
    assert.deepEqual(seqs(live), [6, 7, 8, 9, 10]);
    assert.equal(log.stats().reopens, 1);
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, v.message);
    // ... compress and delete the renamed file: the live file alone is accepted from seq 6.
    fs.writeFileSync(`${live}.1.gz`, (await import("node:zlib")).gzipSync(fs.readFileSync(`${live}.1`)));
    fs.rmSync(`${live}.1`);
    const alone = await verify(await listLogFiles(live));
    assert.equal(alone.ok, true, alone.message);
    assert.equal(alone.firstSeq, 6);
    assert.equal(alone.startsAfterGenesis, true);
  });

  it("the file deleted between two batches: nothing more is written to it (read through a descriptor held open), a new file continues the chain", async () => {
    const log = track(new AuditLog(live));
    let held: number | null = null;
    const off = onDurable(log, (seq) => {
      if (seq !== 4) return;
      held = fs.openSync(live, "r");
      fs.rmSync(live);
    });
    try {
      await writeOneByOne(log, 1, 8);
    } finally {
      off();
    }
    assert.ok(held !== null);
    const size = fs.fstatSync(held).size;
    const buf = Buffer.alloc(size);
    fs.readSync(held, buf, 0, size, 0);
    fs.closeSync(held);
    const deleted = buf.toString("utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).seq);
    assert.deepEqual(deleted, [1, 2, 3, 4], "the deleted file got no record after its deletion");
    assert.deepEqual(seqs(live), [5, 6, 7, 8]);
  });

  it("copytruncate: the writer continues in the truncated file; verify passes over copy + live when nothing was lost, and names the missing seqs when the copy missed records", async () => {
    const log = track(new AuditLog(live));
    // Clean copytruncate after seq 4.
    let off = onDurable(log, (seq) => {
      if (seq !== 4) return;
      fs.copyFileSync(live, `${live}.1`);
      fs.truncateSync(live, 0);
    });
    try {
      await writeOneByOne(log, 1, 6);
    } finally {
      off();
    }
    assert.deepEqual(seqs(`${live}.1`), [1, 2, 3, 4]);
    assert.deepEqual(seqs(live), [5, 6]);
    assert.ok(!fs.readFileSync(live, "utf8").startsWith("\0"), "no hole at the start of the truncated file (O_APPEND)");
    assert.equal(log.stats().truncations, 1);
    let v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, v.message);

    // A copytruncate that loses records: copied after seq 8, truncated only after seq 10.
    fs.rmSync(`${live}.1`);
    off = onDurable(log, (seq) => {
      if (seq === 8) fs.copyFileSync(live, `${live}.1`);
      if (seq === 10) fs.truncateSync(live, 0);
    });
    try {
      await writeOneByOne(log, 7, 6);
    } finally {
      off();
    }
    assert.deepEqual(seqs(`${live}.1`), [5, 6, 7, 8]);
    assert.deepEqual(seqs(live), [11, 12]);
    v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, false);
    assert.equal(v.broken?.file, live);
    assert.equal(v.broken?.line, 1);
    assert.deepEqual(v.broken?.missing, { fromSeq: 9, toSeq: 10 });
    assert.match(v.message, /2 record\(s\) missing \(seq 9 to 10/);
    const cli = await runCli(["verify", `${live}.1`, live]);
    assert.equal(cli.code, 1);
    assert.match(cli.out, new RegExp(`BROKEN: ${live.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} line 1: seq 11 follows seq 8`));
  });

  it("verify (bin as a child process): intact → exit 0 with last seq and hash; an edited, a deleted and a reordered line → exit 1 naming file and line", async () => {
    const log = new AuditLog(live);
    await writeOneByOne(log, 1, 8);
    await log.close();
    const good = lines(live);
    const run = (...files: string[]) => spawnSync(process.execPath, [BIN, "verify", ...files], { encoding: "utf8", timeout: 15_000 });

    let r = run(live);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /last seq: 8\n/);
    assert.match(r.stdout, new RegExp(`last hash: ${lineHash(good[7]!)}\n`));
    assert.match(r.stdout, /OK: chain intact through seq 8/);

    const write = (ls: string[]) => fs.writeFileSync(live, ls.map((l) => l + "\n").join(""));
    const edited = [...good];
    edited[2] = edited[2]!.replace('"alice"', '"mallory"'); // line 3
    write(edited);
    r = run(live);
    assert.equal(r.status, 1);
    assert.match(r.stdout, new RegExp(`BROKEN: .*audit\\.jsonl line 4: prev does not match the hash of seq 3 \\(line 3\\)`));

    write([...good.slice(0, 4), ...good.slice(5)]); // line 5 (seq 5) deleted
    r = run(live);
    assert.equal(r.status, 1);
    assert.match(r.stdout, /line 5: seq 6 follows seq 4 \(line 4\): 1 record\(s\) missing \(seq 5; lines deleted\)/);

    write([...good.slice(0, 5), good[6]!, good[5]!, good[7]!]); // seq 7 before seq 6
    r = run(live);
    assert.equal(r.status, 1);
    assert.match(r.stdout, /line 6: seq 7 follows seq 5/);

    write(good);
    fs.writeFileSync(`${live}.1`, "");
    r = run(`${live}.1`, live); // several files: exactly those, in that order
    assert.equal(r.status, 0, r.stdout);
    assert.equal(run().status, 2);
  });

  describe("file safety", () => {
    const files = () => ({ userDir: dir });

    it("a relative path resolves in the user directory, an absolute one is taken as it is, an empty one is the default file", () => {
      assert.deepEqual(checkAuditPath("logs/a.jsonl", files()), { ok: true, path: path.join(dir, "logs", "a.jsonl") });
      const abs = path.join(os.tmpdir(), "elsewhere.jsonl");
      assert.deepEqual(checkAuditPath(abs, files()), { ok: true, path: abs });
      assert.deepEqual(checkAuditPath("", files()), { ok: true, path: path.join(dir, "door-access-audit.jsonl") });
    });

    it("refuses a symbolic link, a foreign file, Node-RED's own files and node_modules; accepts an empty file and one of our logs", async () => {
      fs.writeFileSync(path.join(dir, "target.jsonl"), "");
      fs.symlinkSync(path.join(dir, "target.jsonl"), path.join(dir, "link.jsonl"));
      fs.writeFileSync(path.join(dir, "bashrc"), "# ~/.bashrc\nexport PATH=$HOME/bin:$PATH\n");
      const refused: [string, RegExp][] = [
        ["link.jsonl", /symbolic link/],
        ["bashrc", /first line is not a door-access audit record/],
        ["flows.json", /Node-RED's own files/],
        ["flows_cred.json", /Node-RED's own files/],
        ["settings.js", /Node-RED's own files/],
        [".config.runtime.json", /Node-RED's own files/],
        ["node_modules/some-pkg/audit.jsonl", /node_modules/],
      ];
      for (const [p, why] of refused) {
        const c = checkAuditPath(p, files());
        assert.equal(c.ok, false, p);
        assert.match((c as { problem: string }).problem, why, p);
      }
      const custom = checkAuditPath("my-flows.json", { userDir: dir, flowFile: "my-flows.json" });
      assert.equal(custom.ok, false);
      assert.equal(checkAuditPath("my-flows_cred.json", { userDir: dir, flowFile: "my-flows.json" }).ok, false);
      assert.equal(checkAuditPath("target.jsonl", files()).ok, true, "an empty file");
      const ours = new AuditLog(path.join(dir, "ours.jsonl"));
      await ours.attempt(rec(1));
      await ours.close();
      assert.equal(checkAuditPath("ours.jsonl", files()).ok, true, "one of our logs");
    });

    it("the writer itself never appends through a symbolic link (O_NOFOLLOW) nor to a foreign file, and changes neither", async () => {
      const target = path.join(dir, "target.jsonl");
      fs.writeFileSync(target, "", { mode: 0o644 });
      fs.chmodSync(target, 0o644);
      const link = path.join(dir, "link.jsonl");
      fs.symlinkSync(target, link);
      const viaLink = track(new AuditLog(link));
      await assert.rejects(viaLink.attempt(rec(1)), /cannot open: .*symbolic link/);
      assert.equal(fs.readFileSync(target, "utf8"), "");
      assert.equal(fs.statSync(target).mode & 0o777, 0o644, "mode unchanged");

      const bashrc = path.join(dir, ".bashrc");
      fs.writeFileSync(bashrc, "# ~/.bashrc\nalias ll='ls -l'\n", { mode: 0o644 });
      fs.chmodSync(bashrc, 0o644);
      const foreign = track(new AuditLog(bashrc));
      await assert.rejects(foreign.attempt(rec(1)), /cannot open: .*not a door-access audit record/);
      assert.equal(fs.readFileSync(bashrc, "utf8"), "# ~/.bashrc\nalias ll='ls -l'\n");
      assert.equal(fs.statSync(bashrc).mode & 0o777, 0o644, "mode unchanged");
    });

    it("the live path replaced by a symbolic link between two batches: the next batch is refused, nothing written through the link", async () => {
      const log = track(new AuditLog(live));
      const elsewhere = path.join(dir, "elsewhere.jsonl");
      fs.writeFileSync(elsewhere, "");
      const off = onDurable(log, (seq) => {
        if (seq !== 2) return;
        fs.renameSync(live, `${live}.old`);
        fs.symlinkSync(elsewhere, live);
      });
      try {
        await writeOneByOne(log, 1, 2);
        await assert.rejects(log.attempt(rec(3)), /symbolic link/);
      } finally {
        off();
      }
      assert.equal(fs.readFileSync(elsewhere, "utf8"), "");
      assert.deepEqual(seqs(`${live}.old`), [1, 2]);
    });
  });

  it("a line made when its record was queued is not used once the chain moved: a write fails while records wait, and the chain on disk has no gap and no broken link (CONTRACT.md \"Tamper-evident chain\")", async () => {
    const log = track(new AuditLog(live));
    await log.attempt(rec(1));
    // The next write fails (EIO) after two more records were queued behind it: their lines were
    // made for a chain that the failed batch would have advanced.
    const probe = await fsp.open(path.join(dir, "probe"), "w");
    const proto = Object.getPrototypeOf(probe) as { write: (...a: unknown[]) => Promise<unknown> };
    await probe.close();
    const write = proto.write;
    let armed = true;
    const queued: { behind: Promise<PromiseSettledResult<void>[]> | null } = { behind: null };
    proto.write = function (this: unknown, ...a: unknown[]) {
      if (!armed) return write.apply(this, a);
      armed = false;
      queued.behind = Promise.allSettled([log.result({ ...rec(2), outcome: "accepted", status: 200 }), log.attempt(rec(3))]);
      return Promise.reject(Object.assign(new Error("injected write failure"), { code: "EIO" }));
    };
    try {
      await assert.rejects(log.attempt(rec(2)), /cannot write: EIO/);
    } finally {
      proto.write = write;
    }
    assert.ok(queued.behind, "records were queued while the failing batch was written");
    const behind = await queued.behind;
    assert.deepEqual(behind.map((r) => r.status), ["fulfilled", "fulfilled"]);
    await log.attempt(rec(4));
    const written = lines(live).map((l) => JSON.parse(l) as { seq: number; msgid: string; type: string });
    assert.deepEqual(written.map((r) => [r.seq, r.msgid, r.type]), [
      [1, "m1", "unlock-attempt"],
      [2, "m2", "unlock-result"],
      [3, "m3", "unlock-attempt"],
      [4, "m4", "unlock-attempt"],
    ]);
    const v = await verify([live]);
    assert.equal(v.ok, true, v.message);
    assert.equal(v.lastSeq, 4);
  });

  it("one writer per path: two opens of one file (also through a linked folder) share the instance and the chain", async () => {
    fs.mkdirSync(path.join(dir, "real"));
    fs.symlinkSync(path.join(dir, "real"), path.join(dir, "alias"));
    const a = openAuditLog(path.join(dir, "real", "x.jsonl"));
    const b = openAuditLog(path.join(dir, "alias", "x.jsonl"));
    try {
      assert.equal(a, b);
      await Promise.all([a.attempt(rec(1)), b.attempt(rec(2)), a.attempt(rec(3))]);
    } finally {
      await a.close();
      await b.close();
    }
    assert.deepEqual(seqs(path.join(dir, "real", "x.jsonl")), [1, 2, 3]);
  });
});
