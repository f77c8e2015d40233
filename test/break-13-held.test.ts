/**
 * Break review of issue 13: attacks on the audit log that held (each passes on the reviewed code).
 * CONTRACT.md "Audit log". PUTs are counted at the simulator; races are forced.
 */
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, type AuditBase } from "../src/audit/audit-log.js";
import { verify } from "../src/audit/chain.js";
import { main } from "../src/audit/cli.js";
import { checkAuditPath } from "../src/audit/paths.js";
import { exportCsv } from "../src/audit/reader.js";
import {
  accountNode, helper, helperNodes, loadFlow, readAudit, startSim, tab, teardown, unlock, unlockFlow, unlockNode, unlockRequests, until, waitReady, CREDS,
} from "./helpers/flow.js";
import type { RunningSimulator } from "../src/simulator/index.js";

function rec(msgid: string, over: Partial<AuditBase> = {}): AuditBase {
  return { actor: "alice", deviceId: 101, lockId: null, door: "Front", msgid, ...over };
}

function tmp(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "b13-held-"));
}

async function cli(args: string[]): Promise<{ code: number; text: string }> {
  let text = "";
  const io = { out: (t: string) => void (text += t), err: (t: string) => void (text += t) };
  const code = await main(args, io);
  return { code, text };
}

async function writeLog(file: string, n: number, over: Partial<AuditBase> = {}): Promise<string[]> {
  const log = new AuditLog(file, { maxBytes: 0 });
  await Promise.all(Array.from({ length: n }, (_, i) => log.attempt(rec(`m${i}`, over))));
  await log.close();
  return fs.readFileSync(file, "utf8").split("\n").slice(0, -1);
}

describe("break-13 held: verify", function () {
  this.timeout(60000);
  let dir: string;
  let orig: string[];
  before(async () => {
    dir = tmp();
    orig = await writeLog(path.join(dir, "orig.jsonl"), 10);
  });
  const check = async (name: string, body: string): Promise<{ code: number; text: string }> => {
    const f = path.join(dir, `${name}.jsonl`);
    fs.writeFileSync(f, body);
    return cli(["verify", f]);
  };
  const cases: [string, () => string[], RegExp][] = [
    ["an edited line", () => orig.map((l, i) => (i === 4 ? l.replace('"alice"', '"mallory"') : l)), /line 6: prev does not match/],
    ["a deleted line", () => orig.filter((_, i) => i !== 4), /line 5: seq 6 follows seq 4/],
    ["an inserted (copied) line", () => [...orig.slice(0, 5), orig[2]!, ...orig.slice(5)], /line 6: seq 3 follows seq 5/],
    ["two lines swapped", () => [...orig.slice(0, 4), orig[5]!, orig[4]!, ...orig.slice(6)], /line 5: seq 6 follows seq 4/],
    ["a duplicated line", () => [...orig.slice(0, 5), orig[4]!, ...orig.slice(5)], /line 6: seq 5 follows seq 5/],
    ["a valid-looking prev with a wrong seq", () => {
      const o = JSON.parse(orig[5]!);
      o.seq = 99;
      return [...orig.slice(0, 5), JSON.stringify(o), ...orig.slice(6)];
    }, /line 6: seq 99 follows seq 5/],
    ["a CRLF-converted file", () => orig.map((l) => l + "\r"), /line 2: prev does not match/],
    ["a torn line inside the file", () => [...orig.slice(0, 4), orig[4]!.slice(0, 20), ...orig.slice(5)], /line 6: seq 6 follows seq 4/],
  ];
  for (const [what, make, where] of cases) {
    it(`${what}: exit 1 naming the line`, async () => {
      const r = await check(what.replace(/\W+/g, "-"), make().join("\n") + "\n");
      assert.equal(r.code, 1, r.text);
      assert.match(r.text, where);
    });
  }
  it("an empty file: exit 0, 'empty log' (not OK); a file holding only a torn line: exit 0 with a note", async () => {
    const e = await check("empty", "");
    assert.equal(e.code, 0);
    assert.match(e.text, /empty log/);
    assert.doesNotMatch(e.text, /^OK/m);
    const t = await check("torn-only", orig[0]!.slice(0, 30));
    assert.equal(t.code, 0);
    assert.match(t.text, /last line incomplete/);
  });
  it("rotated files in the wrong order: exit 1", async () => {
    const a = path.join(dir, "w.jsonl.1");
    const b = path.join(dir, "w.jsonl");
    fs.writeFileSync(a, orig.slice(0, 5).join("\n") + "\n");
    fs.writeFileSync(b, orig.slice(5).join("\n") + "\n");
    assert.equal((await cli(["verify", a, b])).code, 0);
    const wrong = await cli(["verify", b, a]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.text, /seq 1 follows seq 10/);
    assert.equal((await cli(["verify", b])).code, 0, "one file: its rotated files are found and ordered");
  });
  it("a single file that does not exist: exit 2, no such file", async () => {
    const r = await cli(["verify", path.join(dir, "nope.jsonl")]);
    assert.equal(r.code, 2);
    assert.match(r.text, /no such file/);
  });
  it("100,000 lines: verify in bounded time and memory (streamed)", async () => {
    const f = path.join(dir, "big.jsonl");
    const log = new AuditLog(f, { maxBytes: 0 });
    for (let k = 0; k < 10; k++) await Promise.all(Array.from({ length: 10000 }, (_, i) => log.attempt(rec(`b${k}-${i}`))));
    await log.close();
    const t0 = Date.now();
    const out = execFileSync(process.execPath, ["-e", `
      const { verify } = require(${JSON.stringify(path.join(process.cwd(), "dist/src/audit/chain.js"))});
      verify([${JSON.stringify(f)}]).then((r) => console.log(JSON.stringify({ ok: r.ok, last: r.lastSeq, rss: process.memoryUsage().rss })));`]).toString();
    const r = JSON.parse(out);
    assert.equal(r.ok, true);
    assert.equal(r.last, 100000);
    assert.ok(Date.now() - t0 < 15000, `took ${Date.now() - t0} ms`);
    assert.ok(r.rss < 200 * 1024 * 1024, `rss ${r.rss}`);
  });
});

describe("break-13 held: the writer and the file system", function () {
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
  it("unicode, U+2028, a lone surrogate, newlines and a 10,000-character actor/door: one line per record, capped, verify passes", async () => {
    const dir = tmp();
    const f = path.join(dir, "u.jsonl");
    const log = new AuditLog(f);
    await log.attempt(rec("1", { actor: "a\nb\r\u2028\u2029\u0000\ud800x", door: "Tür \"1\"\n{\"type\":\"unlock-attempt\"}" }));
    await log.attempt(rec("2", { actor: "x".repeat(10000), door: "\ud83d\ude00".repeat(5000) }));
    await log.close();
    const lines = fs.readFileSync(f, "utf8").split("\n");
    assert.equal(lines.length, 3);
    assert.equal(lines[2], "");
    const r2 = JSON.parse(lines[1]!);
    assert.equal(r2.actor.length, 200);
    assert.ok(r2.door.length <= 200);
    const rep = await verify([f]);
    assert.equal(rep.ok, true, rep.message);
  });
  it("CSV export: =HYPERLINK, +, -, @, tab-led actor and door are neutralised with a leading apostrophe", async () => {
    const dir = tmp();
    const f = path.join(dir, "c.jsonl");
    const log = new AuditLog(f);
    const evil = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"];
    for (const [i, e] of evil.entries()) await log.attempt(rec(`c${i}`, { actor: e, door: e }));
    await log.close();
    let csv = "";
    for await (const chunk of exportCsv(f)) csv += chunk;
    for (const e of evil) {
      assert.ok(!csv.includes(`,${e}`) && !csv.includes(`,"${e}`), `${JSON.stringify(e)} left as is`);
    }
    assert.match(csv, /,"'=HYPERLINK\(""http:\/\/x"",""y""\)",/);
  });
  it("relative paths with .. reaching Node-RED's files, or node_modules, or them through a symlinked folder: refused", () => {
    const userDir = tmp();
    fs.writeFileSync(path.join(userDir, "flows.json"), "[]");
    fs.symlinkSync(userDir, path.join(os.tmpdir(), `b13-link-${process.pid}`));
    const base = path.basename(userDir);
    for (const p of [
      `../${base}/flows_cred.json`, "sub/../flows.json", "./settings.js", ".config.runtime.json", "node_modules/x/audit.jsonl",
      `${path.join(os.tmpdir(), `b13-link-${process.pid}`)}/flows_cred.json`, `${path.join(os.tmpdir(), `b13-link-${process.pid}`)}/.flows.json.backup`,
    ]) {
      const r = checkAuditPath(p, { userDir });
      assert.equal(r.ok, false, `${p} accepted`);
    }
    fs.unlinkSync(path.join(os.tmpdir(), `b13-link-${process.pid}`));
  });
});

describe("break-13 held: Node-RED runtime", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  before(async () => {
    sim = await startSim({ rateLimit: false });
  });
  afterEach(async () => {
    await teardown();
    sim.control.clearFaults();
  });
  after(async () => {
    await sim.close();
  });

  it("the audit path becomes a directory between unlocks: nothing is sent, the error says the audit log could not be written", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url, {}, { auditLog: "d/audit.jsonl" }));
    await waitReady();
    const live = path.join(userDir, "d", "audit.jsonl");
    const ok = await unlock({ deviceId: 101, _msgid: "before" });
    assert.equal(ok.port, 0);
    sim.control.resetRequests();
    fs.renameSync(live, live + ".old");
    fs.mkdirSync(live);
    const out = await unlock({ deviceId: 101, _msgid: "after" });
    assert.equal(out.port, 1);
    assert.match(out.msg.payload.message, /not sent: the audit log could not be written.*EISDIR/);
    assert.equal(unlockRequests(sim), 0, "no PUT without its attempt record");
  });

  it("the account deleted while the PUT is really held at the service (within the bound): the result is on disk when the deploy returns", async () => {
    const flow = [tab(), { ...accountNode(sim.url), id: "acc-h13" }, unlockNode({ account: "acc-h13" }), ...helperNodes("u1-ok", "u1-fail")];
    const { userDir } = await loadFlow(flow, { creds: { "acc-h13": CREDS.acc1 } });
    await until("ready", () => helper.getNode("acc-h13")?.account?.session.state === "ready");
    sim.control.resetRequests();
    sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 1500 });
    void unlock({ deviceId: 101, _msgid: "held-mid" }).catch(() => undefined);
    await until("the PUT held at the service", () => sim.control.inFlight().some((e) => e.operation === "unlockDevice" && e.fault === "latency"), 5000, 2);
    assert.deepEqual(readAudit(userDir).filter((r) => r.msgid === "held-mid").map((r) => r.type), ["unlock-attempt"]);
    await helper.setFlows([tab()], "full", {});
    const mine = readAudit(userDir).filter((r) => r.msgid === "held-mid");
    assert.deepEqual(mine.map((r) => [r.type, r.outcome]), [["unlock-attempt", undefined], ["unlock-result", "accepted"]]);
    assert.equal(unlockRequests(sim), 1);
  });
});
