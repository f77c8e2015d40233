/**
 * Which files may be an audit log (docs/security.md#files-the-audit-log-may-never-be): the path
 * check when an account starts (src/audit/paths.ts), and the writer's own check each time it opens
 * the file: never through a symbolic link, never a file that is not a regular file, never
 * another program's file, whatever its first lines look like.
 */
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, type AuditBase } from "../../src/audit/audit-log.js";
import { verify } from "../../src/audit/chain.js";
import { checkAuditPath, foreignContent, judgeOpenFileSync } from "../../src/audit/paths.js";
import { onDurable, type P, rec, seqs, useAuditDir, writeOneByOne } from "../helpers/audit-faults.js";
import fsReal from "node:fs";

function tmp(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "b13-held-"));
}

const text = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "<missing>");

const fc = (s: string | Buffer): string | null => {
  const b = Buffer.isBuffer(s) ? s : Buffer.from(s, "utf8");
  return foreignContent(b.subarray(0, 64 * 1024), b.length);
};

describe("The path check: a relative path resolves in the user directory; links, other programs' files and Node-RED's own files are refused (docs/security.md#files-the-audit-log-may-never-be)", function () {
  let dir: string;
  useAuditDir((t) => ({ dir } = t));

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
});

describe("The path check: a path with .. reaching Node-RED's files or node_modules, also through a linked folder, is refused (docs/security.md#files-the-audit-log-may-never-be)", function () {
  this.timeout(20000);

  it("relative paths with .. reaching Node-RED's files, or node_modules, or them through a symlinked folder: refused", () => {
    const userDir = tmp();
    fs.writeFileSync(path.join(userDir, "flows.json"), "[]");
    fs.symlinkSync(userDir, path.join(os.tmpdir(), `b13-link-${process.pid}`));
    const base = path.basename(userDir);
    for (const p of [
      `../${base}/flows_cred.json`,
      "sub/../flows.json",
      "./settings.js",
      ".config.runtime.json",
      "node_modules/x/audit.jsonl",
      `${path.join(os.tmpdir(), `b13-link-${process.pid}`)}/flows_cred.json`,
      `${path.join(os.tmpdir(), `b13-link-${process.pid}`)}/.flows.json.backup`,
    ]) {
      const r = checkAuditPath(p, { userDir });
      assert.equal(r.ok, false, `${p} accepted`);
    }
    fs.unlinkSync(path.join(os.tmpdir(), `b13-link-${process.pid}`));
  });
});

describe("The writer never appends through a link or to another program's file, also when one replaces the log between batches (docs/security.md#files-the-audit-log-may-never-be)", function () {
  let dir: string, live: string;
  const track = useAuditDir((t) => ({ dir, live } = t));

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

describe("The writer refuses a FIFO, a directory, a link and a foreign file at the path, and changes none (docs/security.md#files-the-audit-log-may-never-be)", function () {
  function rec(msgid: string, over: Partial<AuditBase> = {}): AuditBase {
    return { actor: "alice", deviceId: 101, lockId: null, door: "Front", msgid, ...over };
  }

  this.timeout(20000);

  it("a FIFO or a directory at the path: the record is refused (nothing written), the error names the file", async () => {
    const dir = tmp();
    const fifo = path.join(dir, "fifo.jsonl");
    execFileSync("mkfifo", [fifo]);
    const a = new AuditLog(fifo);
    await assert.rejects(a.attempt(rec("1")), /fifo\.jsonl: cannot open: not a regular file/);
    await a.close();
    const d = path.join(dir, "dir.jsonl");
    fs.mkdirSync(d);
    const b = new AuditLog(d);
    await assert.rejects(b.attempt(rec("1")), /dir\.jsonl: cannot open: EISDIR/);
    await b.close();
  });

  it("between batches the file is replaced by a symlink, then by a foreign file: refused, the link target and the foreign file untouched", async () => {
    const dir = tmp();
    const f = path.join(dir, "a.jsonl");
    const log = new AuditLog(f);
    await log.attempt(rec("1"));
    const target = path.join(dir, "target");
    fs.writeFileSync(target, "");
    fs.renameSync(f, f + ".old");
    fs.symlinkSync(target, f);
    await assert.rejects(log.attempt(rec("2")), /symbolic link/);
    assert.equal(fs.readFileSync(target, "utf8"), "");
    fs.unlinkSync(f);
    fs.writeFileSync(f, "not ours\n");
    await assert.rejects(log.attempt(rec("3")), /not a door-access audit record/);
    assert.equal(fs.readFileSync(f, "utf8"), "not ours\n");
    await log.close();
  });
});

// Found by the review of 4742801 (E1..E3); fixed in 12520e7.
describe("Another program's JSON Lines file is never taken for ours, whatever its first line looks like (docs/security.md#files-the-audit-log-may-never-be)", function () {
  let dir: string, live: string;
  const track = useAuditDir((t) => ({ dir, live } = t));

  it('an existing JSON Lines file of another program whose lines start {"type":"unlock-... is refused (never appended to)', async () => {
    const foreign = '{"type":"unlock-door","entity":"lock.front","user":"bob"}\n';
    fs.writeFileSync(live, foreign);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const wrote = await a.attempt(rec(1)).then(
      () => true,
      () => false,
    );
    const v = await verify([live]);
    assert.equal(
      c.ok,
      false,
      `checkAuditPath accepted it; writer wrote: ${wrote}; verify: ${v.message}\n${text(live)}`,
    );
    assert.equal(wrote, false, `writer appended to it; verify: ${v.message}\n${text(live)}`);
  });
});

// Found by the review of 12520e7 (D1..D3); fixed in 5f59d11.
describe("A foreign document is never taken for ours by its first line (docs/security.md#files-the-audit-log-may-never-be)", function () {
  let dir: string, live: string;
  const track = useAuditDir((t) => ({ dir, live } = t));

  it('a foreign JSON document whose first line starts {"type":"unlock- is refused by the path check and the writer (never appended to)', async () => {
    const foreign = '{"type":"unlock-schedule", "doors": [\n  {"id": 1, "open": "08:00"}\n]}\n';
    fs.writeFileSync(live, foreign);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const wrote = await a.attempt(rec(1)).then(
      () => true,
      () => false,
    );
    const v = await verify([live]);
    assert.equal(
      c.ok,
      false,
      `checkAuditPath accepted; writer appended: ${wrote}; verify: ${v.message}\n${text(live)}`,
    );
    assert.equal(wrote, false, `writer appended; verify: ${v.message}`);
  });

  it("odd file heads: ours only when a record comes first, after nothing but blank lines and lines torn at a record's start that our writer could have left (BOM, a torn line ending in CR, pretty-printed JSON, binary, another program's JSON: foreign; CRLF after a record, brace-only torn lines, a cut at the 64 KiB read boundary after a record: ours)", () => {
    const r =
      '{"type":"unlock-attempt","ts":"2026-11-24T00:00:00.000Z","actor":"a","deviceId":1,"lockId":null,"door":"d","msgid":"m","seq":1,"prev":"' +
      "0".repeat(64) +
      '"}';
    const out: Record<string, string | null> = {
      bom: fc("\uFEFF" + r + "\n"),
      crlf: fc(r + "\r\n"),
      crlfTorn: fc('{"type":"unl\r\n' + r + "\n"),
      braceOnly: fc("{\n"),
      braces: fc("{\n{\n{\n"),
      prettyJson: fc('{\n  "a": 1\n}\n'),
      prefixBinary: fc(Buffer.concat([Buffer.from('{"type":"unlock-'), Buffer.from([0, 1, 2, 0xff, 0x0a, 0x41])])),
      prefixThenCut: fc('{"t\n' + "x".repeat(70000)),
      utf8Cut: fc(Buffer.concat([Buffer.from(r + "\n"), Buffer.alloc(65536 - r.length - 2, 0x41), Buffer.from("é€")])),
      jsonFirstValid: fc('{"type":"unlock-door"}\n'),
    };
    assert.deepEqual(Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v === null ? "ours" : "foreign"])), {
      bom: "foreign", // the writer never writes a byte-order mark
      crlf: "ours",
      crlfTorn: "foreign", // the writer never writes a CR: a torn line ending in one is not its own
      braceOnly: "ours",
      braces: "ours",
      prettyJson: "foreign",
      prefixBinary: "foreign",
      prefixThenCut: "foreign", // a line the head cuts cannot be judged: not taken for ours
      utf8Cut: "ours",
      jsonFirstValid: "foreign",
    });
  });
});

// Found by the review of 5f59d11 (F1..F6); fixed in 64810c1 and 7f1af60.
describe("The open check judges the file as it is now, also when a copytruncate empties it meanwhile (docs/security.md#files-the-audit-log-may-never-be)", function () {
  let live: string, proto: P, orig: P;
  const track = useAuditDir((t) => ({ live, proto, orig } = t));

  it("a copytruncate between the open's fstat and its head read: the first unlock after a (re)open is written, not refused as 'not a door-access audit record'", async () => {
    const a0 = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a0.attempt(rec(i));
    await a0.close();
    const a = track(new AuditLog(live)); // restart
    let s = 0;
    proto.stat = function (this: unknown, ...x: unknown[]) {
      return orig.stat.apply(this, x).then((st) => {
        if (++s === 1) {
          fs.copyFileSync(live, `${live}.1`);
          fs.truncateSync(live, 0);
        }
        return st;
      });
    };
    const err = await a.attempt(rec(3)).then(
      () => null,
      (e: Error) => e.message,
    );
    Object.assign(proto, orig);
    assert.equal(err, null, `refused: ${err}`);
  });
});

describe("A foreign file behind blank lines, at the read boundary, or a FIFO is refused without blocking (docs/security.md#files-the-audit-log-may-never-be)", function () {
  let dir: string, live: string;
  const origReadSync = fsReal.readSync;
  afterEach(() => {
    fsReal.readSync = origReadSync;
  });
  const track = useAuditDir((t) => ({ dir, live } = t));

  it("a foreign file preceded by 100 000 blank lines (LF, CRLF, spaces, tabs) is still refused by the path check and the writer, and left untouched", async () => {
    const bodies = [
      "\n".repeat(100000) + "export PATH=/x\n",
      "\r\n".repeat(50000) + '{"name":"x"}\n',
      " \t\n".repeat(40000) + "#!/bin/sh\n",
      "\r".repeat(70000) + "secret=1\n",
    ];
    const got: string[] = [];
    for (const body of bodies) {
      fs.writeFileSync(live, body);
      const c = checkAuditPath(live, { userDir: dir });
      const a = track(new AuditLog(live));
      const err = await a.attempt(rec(1)).then(
        () => null,
        (e: Error) => e.message,
      );
      await a.close();
      if (c.ok || err === null || fs.readFileSync(live, "utf8") !== body)
        got.push(`${JSON.stringify(body.slice(-20))}: check ${c.ok}, writer ${err}`);
    }
    assert.deepEqual(got, []);
  });

  it("a foreign file whose blank prefix ends exactly at the 64 KiB read boundary, and one whose foreign line starts with spaces: refused", () => {
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
    const err = await a.attempt(rec(1)).then(
      () => null,
      (e: Error) => e.message,
    );
    assert.equal(c.ok, true); // the writer reports it
    assert.match(err ?? "", /not a regular file/);
  });
});

describe("A foreign file disguised behind NUL lines is refused and left untouched (docs/security.md#files-the-audit-log-may-never-be)", function () {
  let dir: string, live: string;
  const track = useAuditDir((t) => ({ dir, live } = t));

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
      const err = await a.attempt(rec(1)).then(
        () => null,
        (e: Error) => e.message,
      );
      await a.close();
      if (c.ok || err === null || fs.readFileSync(live, "utf8") !== body)
        got.push(`${JSON.stringify(body.slice(-24))}: check ${c.ok}, writer ${err}`);
    }
    assert.deepEqual(got, []);
  });
});
