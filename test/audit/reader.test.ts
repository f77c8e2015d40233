/**
 * The audit log's read side on real files (docs/audit-log.md#reading-and-exporting): which files
 * make up a log and in which order, records newest first with filters and paging, a torn last
 * line, CSV (RFC 4180 quoting and the formula guard: docs/security.md#csv-export),
 * `door-access-audit tail` / `export --csv` (as functions and as the bin), and the sidebar's chain
 * check and live records (src/audit/source.ts).
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AuditLog, auditRecordEvents, type AuditBase } from "../../src/audit/audit-log.js";
import { main } from "../../src/audit/cli.js";
import {
  type AuditEntry,
  csvCell,
  exportCsv,
  linesBackwards,
  listLogFiles,
  readAll,
  readPage,
  tail,
} from "../../src/audit/reader.js";
import { onAuditRecord, verifyAuditLog } from "../../src/audit/source.js";

const ZERO = "0".repeat(64);

const T0 = Date.parse("2025-03-01T10:00:00.000Z");

/** A record as the writer makes it (without the chain fields). */
function record(i: number, over: Partial<AuditEntry> = {}): AuditEntry {
  const type = i % 2 === 1 ? "unlock-attempt" : "unlock-result";
  return {
    type,
    ts: new Date(T0 + i * 60_000).toISOString(),
    actor: i % 3 === 0 ? "bob" : "alice",
    deviceId: 100 + (Math.ceil(i / 2) % 3),
    lockId: null,
    door: ["Front Door", "Garage", "Back Door"][Math.ceil(i / 2) % 3],
    msgid: `m${Math.ceil(i / 2)}`,
    ...(type === "unlock-result"
      ? { outcome: i % 4 === 0 ? "forbidden" : "accepted", status: i % 4 === 0 ? 403 : 200 }
      : {}),
    ...over,
  };
}

/** Lines of a chained log (docs/audit-log.md#the-chain: seq from `firstSeq`, prev = sha256 of the previous line). */
function chain(records: AuditEntry[], firstSeq = 1, prev = ZERO): string[] {
  const lines: string[] = [];
  records.forEach((r, k) => {
    const line = JSON.stringify({ ...r, seq: firstSeq + k, prev });
    prev = createHash("sha256").update(line, "utf8").digest("hex");
    lines.push(line);
  });
  return lines;
}

/** Writes lines into `<live>.N` … `<live>.1`, `<live>`: `sizes` records per file, oldest first. */
function writeRotated(live: string, lines: string[], sizes: number[]): void {
  let at = 0;
  sizes.forEach((n, k) => {
    const index = sizes.length - 1 - k; // 0 = live
    const file = index === 0 ? live : `${live}.${index}`;
    fs.writeFileSync(
      file,
      lines
        .slice(at, at + n)
        .map((l) => l + "\n")
        .join(""),
    );
    at += n;
  });
  assert.equal(at, lines.length);
}

/**
 * A minimal RFC 4180 parser (quoted fields, doubled quotes, CRLF records) for the round trip;
 * `sep` is the separator a spreadsheet is set to (`,` by default, `;` or tab in many locales).
 */
function parseCsv(text: string, sep = ","): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 2;
        continue;
      }
      if (c === '"') {
        quoted = false;
        i++;
        continue;
      }
      cell += c;
      i++;
      continue;
    }
    if (c === '"') {
      quoted = true;
      i++;
      continue;
    }
    if (c === sep) {
      row.push(cell);
      cell = "";
      i++;
      continue;
    }
    if (c === "\r" && text[i + 1] === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
      i += 2;
      continue;
    }
    assert.notEqual(c, "\n", "a bare LF outside quotes: not RFC 4180");
    cell += c;
    i++;
  }
  assert.equal(cell, "", "the CSV ends with CRLF");
  assert.equal(row.length, 0);
  return rows;
}

/**
 * CSV read the way spreadsheets and Python's csv module read it with a separator `sep`: a quote
 * opens a quoted cell only at the cell's start (elsewhere it is a plain character); inside, a
 * doubled quote is one quote, and a quote followed by anything else ends the quoted part, what
 * follows up to the separator being added to the cell as it is.
 */
function readAsSpreadsheet(text: string, sep: string): string[][] {
  const rows: string[][] = [];
  for (const line of text.split(/\r\n|\n|\r/)) {
    if (line === "") continue;
    const row: string[] = [];
    let i = 0;
    for (;;) {
      let cell = "";
      if (line[i] === '"') {
        i++;
        while (i < line.length) {
          if (line[i] === '"' && line[i + 1] === '"') {
            cell += '"';
            i += 2;
            continue;
          }
          if (line[i] === '"') {
            i++;
            break;
          }
          cell += line[i++];
        }
      }
      while (i < line.length && line[i] !== sep) cell += line[i++];
      row.push(cell);
      if (i >= line.length) break;
      i++;
    }
    rows.push(row);
  }
  return rows;
}

async function collect<T>(gen: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of gen) out.push(x);
  return out;
}

function cliIo() {
  let out = "";
  let err = "";
  return {
    io: { out: (t: string) => void (out += t), err: (t: string) => void (err += t) },
    out: () => out,
    err: () => err,
  };
}

function rec(msgid: string, over: Partial<AuditBase> = {}): AuditBase {
  return { actor: "alice", deviceId: 101, lockId: null, door: "Front", msgid, ...over };
}

function tmp(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "b13-held-"));
}

describe("Reading: a log's files oldest first, records newest first with filters and paging; torn and foreign lines skipped (docs/audit-log.md#reading-and-exporting)", function () {
  let dir: string;
  let live: string;

  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "door-audit-read-"));
    live = path.join(dir, "door-access-audit.jsonl");
  });
  afterEach(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("lists a log's files oldest first: <name>.N … <name>.1, then the live file; not .gz copies, not other logs, not folders", async () => {
    for (const n of [
      "door-access-audit.jsonl",
      "door-access-audit.jsonl.1",
      "door-access-audit.jsonl.10",
      "door-access-audit.jsonl.2",
      "door-access-audit.jsonl.1.gz",
      "door-access-audit.jsonl.x",
      "other.jsonl.1",
      "door-access-audit.jsonl.bak",
    ]) {
      fs.writeFileSync(path.join(dir, n), "");
    }
    fs.mkdirSync(path.join(dir, "door-access-audit.jsonl.3"));
    const files = (await listLogFiles(live)).map((f) => path.basename(f));
    assert.deepEqual(files, [
      "door-access-audit.jsonl.10",
      "door-access-audit.jsonl.2",
      "door-access-audit.jsonl.1",
      "door-access-audit.jsonl",
    ]);
    assert.deepEqual(await listLogFiles(path.join(dir, "nowhere", "x.jsonl")), [], "a missing folder is an empty log");
  });

  it("pages newest first across the rotated files; beforeSeq continues without a gap or an overlap; lastSeq is the log's newest", async () => {
    const lines = chain(Array.from({ length: 25 }, (_, k) => record(k + 1)));
    writeRotated(live, lines, [10, 10, 5]);
    const p1 = await readPage(live, {}, { limit: 7 });
    assert.deepEqual(
      p1.records.map((r) => r.seq),
      [25, 24, 23, 22, 21, 20, 19],
    );
    assert.equal(p1.more, true);
    assert.equal(p1.lastSeq, 25);
    const seen = [...p1.records];
    let page = p1;
    while (page.more) {
      page = await readPage(live, {}, { limit: 7, beforeSeq: page.records[page.records.length - 1].seq });
      seen.push(...page.records);
    }
    assert.deepEqual(
      seen.map((r) => r.seq),
      Array.from({ length: 25 }, (_, k) => 25 - k),
      "every record once, newest first",
    );
    assert.deepEqual(
      (await collect(readAll(live))).map((r) => r.seq),
      Array.from({ length: 25 }, (_, k) => k + 1),
      "readAll: oldest first",
    );
  });

  it("filters by door (name part or device id), actor, outcome (incl. attempt / rejected) and an inclusive time range", async () => {
    const recs = [
      record(1, { door: "Front Door", deviceId: 101, actor: "Alice Smith" }),
      record(2, { door: "Front Door", deviceId: 101, actor: "Alice Smith", outcome: "accepted", status: 200 }),
      record(3, { door: "Garage", deviceId: 102, actor: "bob" }),
      record(4, { door: "Garage", deviceId: 102, actor: "bob", outcome: "forbidden", status: 403 }),
      {
        ...record(5, { door: null, deviceId: null, actor: "carol" }),
        type: "unlock-rejected",
        outcome: "invalid-input",
        reason: "no such door",
      } as AuditEntry,
      record(7, { door: "Back Door", deviceId: 103, actor: "alice", replay: true }),
    ];
    fs.writeFileSync(
      live,
      chain(recs)
        .map((l) => l + "\n")
        .join(""),
    );
    const seqs = async (f: Parameters<typeof readPage>[1]) => (await readPage(live, f)).records.map((r) => r.seq);
    assert.deepEqual(await seqs({ door: "front" }), [2, 1]);
    assert.deepEqual(await seqs({ door: "102" }), [4, 3]);
    assert.deepEqual(await seqs({ door: "door" }), [6, 2, 1]);
    assert.deepEqual(await seqs({ actor: "ALICE" }), [6, 2, 1]);
    assert.deepEqual(await seqs({ outcome: "forbidden" }), [4]);
    assert.deepEqual(await seqs({ outcome: "attempt" }), [6, 3, 1]);
    assert.deepEqual(await seqs({ outcome: "rejected" }), [5]);
    assert.deepEqual(await seqs({ outcome: "invalid-input" }), [5]);
    assert.deepEqual(await seqs({ actor: "alice", door: "front", outcome: "accepted" }), [2]);
    // ts of record(i) is T0 + i minutes: from and to are both inclusive.
    assert.deepEqual(await seqs({ from: new Date(T0 + 3 * 60_000), to: new Date(T0 + 5 * 60_000) }), [5, 4, 3]);
    assert.deepEqual(await seqs({ door: "nothing like it" }), []);
  });

  it("a torn last line, blank lines and foreign lines are skipped, never thrown", async () => {
    const lines = chain([record(1), record(2), record(3)]);
    fs.writeFileSync(
      live,
      `${lines[0]}\n\nnot json at all\n{"type":"something-else","ts":"x"}\n${lines[1]}\n${lines[2].slice(0, 40)}`,
    );
    const page = await readPage(live);
    assert.deepEqual(
      page.records.map((r) => r.seq),
      [2, 1],
    );
    assert.deepEqual(
      (await collect(readAll(live))).map((r) => r.seq),
      [1, 2],
    );
    assert.deepEqual(
      (await tail(live, 10)).map((r) => r.seq),
      [1, 2],
    );
  });

  it("reads a file larger than its 64 KiB chunks backwards exactly as forwards, multi-byte characters across chunk edges included", async () => {
    const recs = Array.from({ length: 900 }, (_, k) => record(k + 1, { actor: `Zoë ${"€😀".repeat(k % 37)} ${k}` }));
    const lines = chain(recs);
    fs.writeFileSync(live, lines.map((l) => l + "\n").join(""));
    assert.ok(fs.statSync(live).size > 3 * 64 * 1024, "the file spans several chunks");
    const back = await collect(linesBackwards(live));
    assert.deepEqual(back.reverse(), lines);
    const newest = await readPage(live, {}, { limit: 1000 });
    assert.deepEqual(
      newest.records.map((r) => r.actor),
      recs.map((r) => r.actor).reverse(),
    );
  });
});

describe("CSV: RFC 4180, and a cell a spreadsheet would run as a formula stays text (docs/security.md#csv-export)", function () {
  let dir: string;
  let live: string;

  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "door-audit-read-"));
    live = path.join(dir, "door-access-audit.jsonl");
  });
  afterEach(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("CSV cells: RFC 4180 quoting (also for ; and tab), and = + - @ tab CR at the start are neutralised with a leading apostrophe", () => {
    assert.equal(csvCell("plain"), "plain");
    assert.equal(csvCell(null), "");
    assert.equal(csvCell(101), "101");
    assert.equal(csvCell("a,b"), '"a,b"');
    assert.equal(csvCell('say "hi"'), '"say ""hi"""');
    assert.equal(csvCell("two\nlines"), '"two\nlines"');
    assert.equal(csvCell('=HYPERLINK("http://x")'), '"\'=HYPERLINK(""http://x"")"');
    assert.equal(csvCell("+1+2"), "'+1+2");
    assert.equal(csvCell("-2+3"), "'-2+3");
    assert.equal(csvCell("@SUM(A1)"), "'@SUM(A1)");
    assert.equal(csvCell("\t=1"), "\"'\t'=1\"");
    assert.equal(csvCell("\r=1"), "\"'\r'=1\"");
    assert.equal(csvCell("a;b"), '"a;b"');
    assert.equal(csvCell("a\tb"), '"a\tb"');
    assert.equal(csvCell("a=b"), "a=b", "only the first character matters");
  });

  it("exportCsv: a header, one row per record oldest first, CRLF; hostile text survives a round trip as text", async () => {
    const recs = [
      record(1, { actor: '=cmd|" /C calc"!A0', door: "Front, Door" }),
      record(2, { actor: "line\nbreak", outcome: "accepted", status: 200 }),
      record(3, { actor: "@evil", replay: true }),
      {
        ...record(5, { actor: "-1+1" }),
        type: "unlock-rejected",
        outcome: "invalid-input",
        reason: 'bad "door"',
      } as AuditEntry,
    ];
    const lines = chain(recs);
    writeRotated(live, lines, [2, 2]);
    const text = (await collect(exportCsv(live))).join("");
    const rows = parseCsv(text);
    assert.deepEqual(rows[0], [
      "seq",
      "ts",
      "type",
      "actor",
      "door",
      "deviceId",
      "lockId",
      "outcome",
      "status",
      "replay",
      "reason",
      "message",
      "msgid",
    ]);
    assert.equal(rows.length, 5);
    assert.deepEqual(
      rows.slice(1).map((r) => r[0]),
      ["1", "2", "3", "4"],
    );
    assert.equal(rows[1][3], '\'=cmd|" /C calc"!A0');
    assert.equal(rows[1][4], "Front, Door");
    assert.equal(rows[2][3], "line\nbreak");
    assert.equal(rows[2][7], "accepted");
    assert.equal(rows[2][8], "200");
    assert.equal(rows[3][3], "'@evil");
    assert.equal(rows[3][9], "true");
    assert.equal(rows[4][3], "'-1+1");
    assert.equal(rows[4][10], 'bad "door"');
    for (const r of rows.slice(1))
      for (const cell of r) assert.ok(!/^[=+\-@]/.test(cell), `no cell starts a formula: ${cell}`);
    const ranged = parseCsv(
      (await collect(exportCsv(live, { from: new Date(T0 + 2 * 60_000), to: new Date(T0 + 3 * 60_000) }))).join(""),
    );
    assert.deepEqual(
      ranged.slice(1).map((r) => r[0]),
      ["2", "3"],
    );
  });

  // docs/security.md#csv-export
  it("CSV: a cell holding a separator a spreadsheet may use (, ; tab CR LF quote) is quoted, and a formula after any separator is neutralised too: read with , ; or tab as separator, or split ignoring quotes, no cell starts a formula", async () => {
    const doors = [
      "Lobby;=cmd|' /C calc'!A0",
      "Hall\t=1+1",
      "Gate,@SUM(A1)",
      "Yard;-2+3",
      "Dock; +1",
      "Roof\r\n=1",
      "Plain; door",
    ];
    const lines = chain(doors.map((door, k) => record(2 * k + 1, { door })));
    writeRotated(live, lines, [lines.length]);
    const text = (await collect(exportCsv(live))).join("");
    for (const sep of [",", ";", "\t"]) {
      const rows = parseCsv(text, sep);
      assert.equal(rows.length, doors.length + 1);
      for (const r of rows.slice(1)) {
        assert.equal(
          r.length,
          rows[0].length,
          `read with ${JSON.stringify(sep)}: a door name split a cell: ${JSON.stringify(r)}`,
        );
        for (const cell of r)
          assert.ok(
            !/^\s*[=+\-@]/.test(cell),
            `read with ${JSON.stringify(sep)}: a cell starts a formula: ${JSON.stringify(cell)}`,
          );
      }
    }
    // An import that splits at every separator and ignores the quotes.
    for (const row of text.split("\r\n").slice(1)) {
      for (const part of row.split(/[,;\t\r\n]/))
        assert.ok(
          !/^[\s"]*[=+\-@]/.test(part),
          `split ignoring quotes, a part starts a formula: ${JSON.stringify(part)} in ${JSON.stringify(row)}`,
        );
    }
    const byComma = parseCsv(text)
      .slice(1)
      .map((r) => r[4]);
    assert.deepEqual(byComma, [
      "Lobby;'=cmd|' /C calc'!A0",
      "Hall\t'=1+1",
      "Gate,'@SUM(A1)",
      "Yard;'-2+3",
      "Dock;' +1",
      "Roof\r\n'=1",
      "Plain; door",
    ]);
  });
});

describe("CSV: formula-led actors and doors are neutralised (docs/security.md#csv-export)", function () {
  this.timeout(20000);

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
});

describe("door-access-audit tail and export, as functions and as the bin (docs/audit-log.md#reading-and-exporting)", function () {
  let dir: string;
  let live: string;

  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "door-audit-read-"));
    live = path.join(dir, "door-access-audit.jsonl");
  });
  afterEach(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  // docs/security.md#csv-export
  it("CSV: a part after a separator that starts with quotes (and spaces) and then = + - @ is neutralised too: a spreadsheet reading with ; or tab takes a quote at a cell's start as opening a quoted cell, and reads the formula behind it", async () => {
    const doors = [
      "Lobby;\"=cmd|' /C calc'!A0;",
      'Hall\t"=1+1',
      'Gate;""@SUM(A1)',
      'Yard;" -2+3',
      'Dock,"+1',
      'Roof\r\n"=1',
      'Plain; "door"',
    ];
    const lines = chain(doors.map((door, k) => record(2 * k + 1, { door })));
    writeRotated(live, lines, [lines.length]);
    const text = (await collect(exportCsv(live))).join("");
    for (const sep of [",", ";", "\t"]) {
      for (const r of readAsSpreadsheet(text, sep).slice(1)) {
        for (const cell of r)
          assert.ok(
            !/^\s*[=+\-@]/.test(cell),
            `read with ${JSON.stringify(sep)}: a cell starts a formula: ${JSON.stringify(cell)} in ${JSON.stringify(r)}`,
          );
      }
    }
    for (const row of text.split("\r\n").slice(1)) {
      for (const part of row.split(/[,;\t\r\n]/))
        assert.ok(
          !/^[\s"]*[=+\-@]/.test(part),
          `split ignoring quotes, a part starts a formula: ${JSON.stringify(part)} in ${JSON.stringify(row)}`,
        );
    }
    // Only apostrophes are added: read as RFC 4180 with commas, each door is itself with an apostrophe in front of each such part.
    const byComma = parseCsv(text)
      .slice(1)
      .map((r) => r[4]);
    assert.deepEqual(byComma, [
      "Lobby;'\"=cmd|' /C calc'!A0;",
      "Hall\t'\"=1+1",
      'Gate;\'""@SUM(A1)',
      "Yard;'\" -2+3",
      "Dock,'\"+1",
      "Roof\r\n'\"=1",
      'Plain; "door"',
    ]);
  });

  it("door-access-audit tail: the newest N, oldest first, readable; --json gives the records; control characters are escaped", async () => {
    const recs = Array.from({ length: 12 }, (_, k) => record(k + 1));
    recs[11] = record(12, { actor: "evil\u001b[31mred\u0007", outcome: "timeout", status: 504 });
    writeRotated(live, chain(recs), [6, 6]);
    const a = cliIo();
    assert.equal(await main(["tail", "-n", "3", live], a.io), 0);
    const out = a.out().trimEnd().split("\n");
    assert.equal(out.length, 3);
    assert.match(out[0], /^2025-03-01T10:10:00\.000Z {2}#10 {2}result /);
    assert.match(out[1], /#11 {2}attempt /);
    assert.match(out[2], /#12 {2}result timeout 504 .*actor evil\\u001b\[31mred\\u0007$/);
    assert.ok(!a.out().includes("\u001b"), "no raw escape character reaches the terminal");
    const d = cliIo();
    assert.equal(await main(["tail", live], d.io), 0);
    assert.equal(d.out().trimEnd().split("\n").length, 10, "10 by default");
    const j = cliIo();
    assert.equal(await main(["tail", "-n", "2", "--json", live], j.io), 0);
    assert.deepEqual(
      j
        .out()
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l).seq),
      [11, 12],
    );
  });

  it("door-access-audit export --csv --from --to writes the range; bad arguments exit 2 with the usage and write nothing", async () => {
    writeRotated(live, chain(Array.from({ length: 6 }, (_, k) => record(k + 1))), [3, 3]);
    const e = cliIo();
    assert.equal(
      await main(
        [
          "export",
          "--csv",
          "--from",
          new Date(T0 + 2 * 60_000).toISOString(),
          "--to=" + new Date(T0 + 4 * 60_000).toISOString(),
          live,
        ],
        e.io,
      ),
      0,
    );
    assert.deepEqual(
      parseCsv(e.out())
        .slice(1)
        .map((r) => r[0]),
      ["2", "3", "4"],
    );
    assert.equal(e.err(), "");
    for (const args of [
      ["export", live], // no --csv
      ["export", "--csv", "--from", "yesterday", live],
      ["export", "--csv", "--from", "2025-03-02", "--to", "2025-03-01", live],
      ["export", "--csv"],
      ["export", "--csv", "--json", live],
      ["tail", "-n", "0", live],
      ["tail", "-n", "ten", live],
      ["tail", live, live],
      ["tail"],
      ["frobnicate", live],
      [],
    ]) {
      const b = cliIo();
      assert.equal(await main(args, b.io), 2, JSON.stringify(args));
      assert.equal(b.out(), "", `nothing on stdout: ${JSON.stringify(args)}`);
      assert.match(b.err(), /usage: door-access-audit/, JSON.stringify(args));
    }
  });

  // docs/audit-log.md#reading-and-exporting: a date that does not exist is refused, never moved to another day
  it("export --from or --to that does not exist (30 February, 31 April, 29 February 2025, 24:00, minute 60, offset +25:00) exits 2 naming it and writes nothing; dates at the edges that exist are read", async () => {
    writeRotated(live, chain(Array.from({ length: 6 }, (_, k) => record(k + 1))), [3, 3]);
    for (const [flag, value] of [
      ["--to", "2025-02-30"],
      ["--to", "2025-04-31T10:00:00Z"],
      ["--from", "2025-02-29"],
      ["--to", "2025-03-01T24:00:00Z"],
      ["--from", "2025-03-01 10:60"],
      ["--to", "2025-03-01T10:00:00+25:00"],
    ]) {
      const b = cliIo();
      assert.equal(await main(["export", "--csv", flag, value, live], b.io), 2, `${flag} ${value}`);
      assert.equal(b.out(), "", `nothing on stdout: ${flag} ${value}`);
      assert.match(b.err(), new RegExp(`${flag} must be an ISO-8601 date or time`));
    }
    const e = cliIo();
    assert.equal(
      await main(["export", "--csv", "--from", "2024-02-29", "--to", "2025-03-01T10:03:59.999Z", live], e.io),
      0,
      e.err(),
    );
    assert.deepEqual(
      parseCsv(e.out())
        .slice(1)
        .map((r) => r[0]),
      ["1", "2", "3"],
    );
  });

  it("the bin runs: tail prints, export writes CSV, a usage error exits 2 (node bin/door-access-audit.js)", () => {
    writeRotated(live, chain(Array.from({ length: 4 }, (_, k) => record(k + 1))), [2, 2]);
    const bin = path.join(process.cwd(), "bin", "door-access-audit.js");
    const t = spawnSync(process.execPath, [bin, "tail", "-n", "2", live], { encoding: "utf8", timeout: 15_000 });
    assert.equal(t.status, 0, t.stderr);
    assert.deepEqual(
      t.stdout
        .trimEnd()
        .split("\n")
        .map((l) => /#(\d+)/.exec(l)![1]),
      ["3", "4"],
    );
    const x = spawnSync(process.execPath, [bin, "export", "--csv", live], { encoding: "utf8", timeout: 15_000 });
    assert.equal(x.status, 0, x.stderr);
    assert.equal(parseCsv(x.stdout).length, 5);
    const u = spawnSync(process.execPath, [bin, "tail", "-n", "-1", live], { encoding: "utf8", timeout: 15_000 });
    assert.equal(u.status, 2);
    assert.equal(u.stdout, "");
  });
});

describe("The sidebar's chain check and live records: the same verify, each durable line told once (docs/audit-log.md#verify)", function () {
  let dir: string;
  let live: string;

  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "door-audit-read-"));
    live = path.join(dir, "door-access-audit.jsonl");
  });
  afterEach(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("chain check (src/audit/chain.ts verify, docs/audit-log.md#verify): intact → last seq; an edited, a deleted and a reordered line → broken at that file and line", async () => {
    const lines = chain(Array.from({ length: 8 }, (_, k) => record(k + 1)));
    writeRotated(live, lines, [4, 4]);
    const ok = await verifyAuditLog(live);
    assert.equal(ok.ok, true, ok.message);
    assert.equal(ok.lastSeq, 8);
    assert.equal(ok.records, 8);

    const edited = [...lines];
    edited[5] = edited[5].replace('"bob"', '"mallory"'); // seq 6, live file line 2
    assert.notEqual(edited[5], lines[5]);
    writeRotated(live, edited, [4, 4]);
    let r = await verifyAuditLog(live);
    assert.equal(r.ok, false);
    assert.equal(r.file, live);
    assert.equal(r.line, 3, "the break shows at the record after the edited one");
    assert.match(r.message, /line 3: prev does not match the hash of seq 6/);

    writeRotated(live, [...lines.slice(0, 2), ...lines.slice(3)], [3, 4]); // seq 3 deleted (rotated file, line 3)
    r = await verifyAuditLog(live);
    assert.equal(r.ok, false);
    assert.equal(r.file, `${live}.1`);
    assert.equal(r.line, 3);
    assert.match(r.message, /seq 4 follows seq 2/);

    writeRotated(live, [...lines.slice(0, 5), lines[6], lines[5], lines[7]], [4, 4]); // 7 before 6
    r = await verifyAuditLog(live);
    assert.equal(r.ok, false);
    assert.equal(r.line, 2);
    assert.match(r.message, /seq 7 follows seq 5/);
  });

  it("chain check: a log whose older files were rotated away is accepted from its first seq; an unchained log is reported as such; a torn last line is not a break", async () => {
    const lines = chain(Array.from({ length: 9 }, (_, k) => record(k + 1)));
    writeRotated(live, lines.slice(4), [3, 2]);
    fs.appendFileSync(live, lines[8].slice(0, 30)); // a write caught in the middle
    const r = await verifyAuditLog(live);
    assert.equal(r.ok, true, r.message);
    assert.equal(r.firstSeq, 5);
    assert.equal(r.lastSeq, 9);
    assert.match(r.message, /starts at seq 5/);
    fs.writeFileSync(live, [record(1), record(2)].map((x) => JSON.stringify(x) + "\n").join(""));
    fs.rmSync(`${live}.1`);
    const none = await verifyAuditLog(live);
    assert.equal(none.ok, null);
    assert.equal(none.records, 2);
  });

  it("the writer tells listeners each durable record (the exact line); a listener that throws does not break the writer", async () => {
    const listenersBefore = auditRecordEvents.listenerCount("record"); // the sidebar plugin's, when its tests ran first
    const log = new AuditLog(live);
    const seen: string[] = [];
    const off = onAuditRecord(log.filePath, (line) => seen.push(line));
    const boom = () => {
      throw new Error("listener bug");
    };
    auditRecordEvents.on("record", boom);
    const other = onAuditRecord(path.join(dir, "other.jsonl"), () => assert.fail("another log's listener was called"));
    try {
      await log.attempt({ actor: "alice", deviceId: 101, lockId: null, door: "Front Door", msgid: "a" });
      await log.result({
        actor: "alice",
        deviceId: 101,
        lockId: null,
        door: "Front Door",
        msgid: "a",
        outcome: "accepted",
        status: 200,
      });
      await log.attempt({ actor: "bob", deviceId: 102, lockId: null, door: "Garage", msgid: "b" });
    } finally {
      off();
      other();
      auditRecordEvents.off("record", boom);
      await log.close();
    }
    assert.deepEqual(
      seen,
      fs.readFileSync(live, "utf8").trimEnd().split("\n"),
      "every line, exactly as written, in order",
    );
    assert.equal(log.stats().failedRecords, 0);
    assert.equal(auditRecordEvents.listenerCount("record"), listenersBefore, "every listener this test added is gone");
  });
});

describe("door-access-audit tail shows at most 1,000 records; export's --from and --to: a date alone is its first instant in UTC, a time without an offset is local time (docs/audit-log.md#reading-and-exporting)", function () {
  this.timeout(20_000);
  let dir: string;
  let live: string;
  const bin = path.join(process.cwd(), "bin", "door-access-audit.js");

  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "door-audit-range-"));
    live = path.join(dir, "door-access-audit.jsonl");
  });
  afterEach(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("tail -n 1000 of 1,005 records prints the newest 1,000 (#6 to #1005); -n 1001 is a usage error (exit 2, nothing on stdout)", async () => {
    writeRotated(live, chain(Array.from({ length: 1005 }, (_, k) => record(k + 1))), [505, 500]);
    const a = cliIo();
    assert.equal(await main(["tail", "-n", "1000", live], a.io), 0, a.err());
    const seqs = a
      .out()
      .trimEnd()
      .split("\n")
      .map((l) => Number(/#(\d+)/.exec(l)![1]));
    assert.equal(seqs.length, 1000);
    assert.equal(seqs[0], 6);
    assert.equal(seqs[999], 1005);
    for (const n of ["1001", "5000"]) {
      const b = cliIo();
      assert.equal(await main(["tail", "-n", n, live], b.io), 2, n);
      assert.equal(b.out(), "", `nothing on stdout for -n ${n}`);
      assert.match(b.err(), /-n must be a whole number from 1 to 1000/);
    }
  });

  it("the bin run with TZ=Etc/GMT-3 (UTC+3): --from/--to 2025-03-02 mean 2025-03-02T00:00:00Z; 2025-03-02T03:00:00 means 03:00 there (00:00Z); an offset is taken as written", () => {
    const times = [
      "2025-03-01T20:59:59.000Z",
      "2025-03-01T21:00:00.000Z",
      "2025-03-01T23:59:59.999Z",
      "2025-03-02T00:00:00.000Z",
      "2025-03-02T00:00:01.000Z",
      "2025-03-02T03:00:00.000Z",
    ];
    writeRotated(live, chain(times.map((ts, k) => record(k + 1, { ts }))), [times.length]);
    const exported = (...range: string[]): string[] => {
      const r = spawnSync(process.execPath, [bin, "export", "--csv", ...range, live], {
        encoding: "utf8",
        timeout: 15_000,
        env: { ...process.env, TZ: "Etc/GMT-3" },
      });
      assert.equal(r.status, 0, r.stderr);
      return parseCsv(r.stdout)
        .slice(1)
        .map((row) => row[0]);
    };
    assert.deepEqual(
      exported("--from", "2025-03-02"),
      ["4", "5", "6"],
      "a date alone: its first instant in UTC, not local midnight (21:00Z)",
    );
    assert.deepEqual(exported("--to", "2025-03-02"), ["1", "2", "3", "4"], "inclusive, up to 00:00Z");
    assert.deepEqual(
      exported("--from", "2025-03-02T03:00:00"),
      ["4", "5", "6"],
      "a time without an offset: local time (UTC+3), 00:00Z",
    );
    assert.deepEqual(exported("--to", "2025-03-02T02:59:59.999"), ["1", "2", "3"], "23:59:59.999Z");
    assert.deepEqual(exported("--from", "2025-03-02T03:00:00Z"), ["6"], "Z as written");
    assert.deepEqual(exported("--to", "2025-03-02T00:00:00+03:00"), ["1", "2"], "an offset as written");
  });
});
