/**
 * Third break review of the torn-write work (abce9a2, 4742801, 12520e7) by a helper that did not
 * write it. Faults forced by patching FileHandle.prototype (no timing). On 12520e7: D1, D1b, D2,
 * D3, D3b fail (CONTRACT.md "Audit log": every unlock attempt appends; the package never appends
 * to a file that is not one of its audit logs; seq +1 for each record across rotated files).
 * - D1/D1b (pre-existing): a file whose first line is blank (written by the writer itself after a torn
 *   tail + copytruncate, or `echo > file`) is refused by writer and checkAuditPath; verify accepts it.
 * - D2 (since 4742801): a first line starting {"type":"unlock- that is not JSON makes any file "ours".
 * - D3/D3b (12520e7; held on 4742801): a not-clean cut re-reads only live and <name>.1: a dateext
 *   copytruncate copy is not seen, the chain restarts at 1 or repeats a seq.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, type AuditBase } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { checkAuditPath, foreignContent } from "../src/audit/paths.js";

const rec = (i: number | string): AuditBase => ({ actor: "alice", deviceId: 101, lockId: null, door: "Front Door", msgid: `m${i}` });
const text = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "<missing>");
type P = { write: (...a: unknown[]) => Promise<unknown>; sync: (...a: unknown[]) => Promise<unknown>; truncate: (...a: unknown[]) => Promise<unknown> };
const fc = (s: string | Buffer): string | null => { const b = Buffer.isBuffer(s) ? s : Buffer.from(s, "utf8"); return foreignContent(b.subarray(0, 64 * 1024), b.length); };

describe("break-13 torn, third review: blank first lines, foreign documents, a dateext copytruncate in a failed batch", function () {
  let dir: string, live: string, proto: P, orig: P;
  const logs: AuditLog[] = [];
  const track = (l: AuditLog): AuditLog => (logs.push(l), l);
  before(async () => {
    const t = await fsp.mkdtemp(path.join(os.tmpdir(), "r3p-"));
    const h = await fsp.open(path.join(t, "p"), "w");
    proto = Object.getPrototypeOf(h);
    await h.close();
    await fsp.rm(t, { recursive: true });
    orig = { write: proto.write, sync: proto.sync, truncate: proto.truncate };
  });
  beforeEach(async () => { dir = await fsp.mkdtemp(path.join(os.tmpdir(), "r3-")); live = path.join(dir, "audit.jsonl"); });
  afterEach(async () => { Object.assign(proto, orig); for (const l of logs.splice(0)) await l.close().catch(() => undefined); await fsp.rm(dir, { recursive: true, force: true }); });

  it("D1: the writer itself writes a file starting with a blank line (torn tail + copytruncate before the write); after a restart it refuses that file though verify accepts it", async () => {
    const a0 = track(new AuditLog(live));
    await a0.attempt(rec(1));
    await a0.close();
    fs.appendFileSync(live, '{"type":"unlock-att'); // a crash tore the next record
    const a = track(new AuditLog(live));
    let n = 0;
    proto.write = function (this: unknown, ...args: unknown[]) {
      if (++n === 1) { fs.copyFileSync(live, `${live}.1`); fs.truncateSync(live, 0); } // logrotate copytruncate
      return orig.write.apply(this, args);
    };
    await a.attempt(rec(2));
    Object.assign(proto, orig);
    await a.close();
    const v = await verify([`${live}.1`, live]);
    assert.equal(v.ok, true, v.message);
    const c = checkAuditPath(live, { userDir: dir });
    const b = track(new AuditLog(live)); // Node-RED restarted
    const err = await b.attempt(rec(3)).then(() => null, (e: Error) => e.message);
    assert.equal(err, null, `live ${JSON.stringify(text(live).slice(0, 40))}...; verify: ${v.message}; checkAuditPath ok=${c.ok}`);
    assert.equal(c.ok, true);
  });

  it("D1b: a log emptied with `echo > audit.jsonl` (one newline): verify says empty log (exit 0), the writer refuses every unlock", async () => {
    fs.writeFileSync(live, "\n");
    const v = await verify([live]);
    const a = track(new AuditLog(live));
    const err = await a.attempt(rec(1)).then(() => null, (e: Error) => e.message);
    assert.equal(err, null, `verify: ok=${v.ok} ${v.message}`);
  });

  it("D2: a foreign JSON document whose first line starts {\"type\":\"unlock- is appended to; verify then calls line 2 not an audit record", async () => {
    const foreign = '{"type":"unlock-schedule", "doors": [\n  {"id": 1, "open": "08:00"}\n]}\n';
    fs.writeFileSync(live, foreign);
    const c = checkAuditPath(live, { userDir: dir });
    const a = track(new AuditLog(live));
    const wrote = await a.attempt(rec(1)).then(() => true, () => false);
    const v = await verify([live]);
    assert.equal(c.ok, false, `checkAuditPath accepted; writer appended: ${wrote}; verify: ${v.message}\n${text(live)}`);
    assert.equal(wrote, false, `writer appended; verify: ${v.message}`);
  });

  it("D3: logrotate copytruncate with dateext between two writes of a failed batch (copy holds only a fragment): the chain restarts at seq 1", async () => {
    const a = track(new AuditLog(live));
    for (let i = 1; i <= 2; i++) await a.attempt(rec(i));
    const copy = `${live}-20261124`;
    let calls = 0;
    proto.write = function (this: unknown, ...args: unknown[]) {
      calls += 1;
      const [buf, off] = args as [Buffer, number];
      if (calls === 1) return orig.write.call(this, buf, off, 20).then((x) => { fs.copyFileSync(live, copy); fs.truncateSync(live, 0); return x; });
      if (calls === 2) return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
      return orig.write.apply(this, args);
    };
    await assert.rejects(a.attempt(rec("a")), /ENOSPC/);
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    const v = await verify([copy, live]);
    assert.equal(v.ok, true, `${v.message}\n--- copy:\n${text(copy)}\n--- live:\n${text(live)}`);
  });

  it("D3b: same with an older <name>.1 from the writer's own size rotation: the next record repeats a seq in the dateext copy", async () => {
    const a = track(new AuditLog(live, { maxBytes: 800, keep: 3 }));
    for (let i = 1; i <= 4; i++) await a.attempt(rec(i));
    assert.ok(fs.existsSync(`${live}.1`));
    const copy = `${live}-20261124`;
    let calls = 0;
    proto.write = function (this: unknown, ...args: unknown[]) {
      calls += 1;
      const [buf, off] = args as [Buffer, number];
      if (calls === 1) return orig.write.call(this, buf, off, 20).then((x) => { fs.copyFileSync(live, copy); fs.truncateSync(live, 0); return x; });
      if (calls === 2) return Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }));
      return orig.write.apply(this, args);
    };
    await assert.rejects(a.attempt(rec("a")), /ENOSPC/);
    Object.assign(proto, orig);
    await a.attempt(rec("z"));
    const v = await verify([`${live}.1`, copy, live]);
    assert.equal(v.ok, true, `${v.message}\n--- .1:\n${text(`${live}.1`)}--- copy:\n${text(copy)}\n--- live:\n${text(live)}`);
  });

  it("H: foreignContent judgments (probes)", () => {
    const r = '{"type":"unlock-attempt","ts":"2026-11-24T00:00:00.000Z","actor":"a","deviceId":1,"lockId":null,"door":"d","msgid":"m","seq":1,"prev":"' + "0".repeat(64) + '"}';
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
    console.log(JSON.stringify(Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v === null ? "ours" : "foreign"]))));
  });
});
