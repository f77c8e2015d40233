/**
 * The secrets rule, checked over the whole test run (a mocha root hook plugin, loaded by
 * .mocharc.js and by `npm run test:file` before any test):
 *
 * - every temp file the suite writes lands under one folder (TMPDIR is pointed there), and
 *   every one of them (audit logs, flow files, credentials files, logs) is searched at the end;
 * - everything written to stdout/stderr, every Node-RED log call (node.log/warn/error, which
 *   carries error texts) and every message any node sends (a runtime `onSend` hook) is searched
 *   as it happens;
 * - tests may hand over more text (admin endpoint answers) with `recordForLeakScan`.
 *
 * Searched for: every token any simulator in this process issued (access JWTs and refresh
 * tokens), the seed accounts' passwords and phone numbers, and the door-unlock PINs the tests
 * configure and send as msg.pin (test/helpers/pins.ts), and every guest pass code a door-pass
 * node issued, anywhere but in its `issued` answer. The token store's own files
 * are the one place tokens are allowed, and are recognised by their format. Any hit fails
 * the run in the root "after all" hook, naming where (never printing the secret).
 *
 * In mocha's parallel mode (test/hooks/suite-process.ts) each worker has its own temp folder
 * inside the main process's: its root "after all" runs after every file, searches the files
 * written since the last one and fails that file on a hit. The main process searches its own
 * output (the reporter prints every test's title and error) and, at the end, every temp file
 * of every worker again, for the tokens any worker's simulators issued (workers hand over
 * their SHA-256 digests, never the tokens), and fails the run on a hit.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { issuedTokens } from "../../src/simulator/issued.js";
import { ALL_TEST_PINS } from "../helpers/pins.js";
import { nodeRedDir } from "../helpers/runtime.js";
import { isMochaWorker, readStats, writeStats } from "./suite-process.js";

// The seed accounts' passwords and phone numbers, and the PINs the tests use (test/helpers/pins.ts).
const FIXED_SECRETS = [
  "demo-password",
  "other-password",
  "+15550000001",
  "+15550000002",
  "15550000001",
  "15550000002",
  ...ALL_TEST_PINS,
];
const JWT = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;
const REFRESH = /rt_[A-Za-z0-9_-]{43}/g;

const suiteTmp = mkdtempSync(path.join(tmpdir(), "door-suite-"));
process.env.TMPDIR = suiteTmp;

interface Candidate {
  where: string;
  value: string;
}
const candidates: Candidate[] = [];
const fixedHits: { where: string; secret: string }[] = [];
let scannedChunks = 0;

/**
 * Guest pass codes seen in a door-pass `issued` answer (docs/passes.md#issue): that message, and
 * the copies a flow passes on, are the only place a code may be; anywhere else (another message, a
 * log line, a file: the passes file keeps a hash) is a leak. Matched as a whole word.
 */
const passCodes = new Set<string>();

function isIssuedAnswer(msg: unknown): boolean {
  const p = (msg as { payload?: { action?: unknown; code?: unknown } } | null)?.payload;
  return !!p && p.action === "issued" && typeof p.code === "string";
}

function scanText(where: string, text: string): void {
  scannedChunks++;
  for (const re of [JWT, REFRESH]) {
    re.lastIndex = 0;
    for (const m of text.matchAll(re)) candidates.push({ where, value: m[0] });
  }
  for (const s of FIXED_SECRETS) if (text.includes(s)) fixedHits.push({ where, secret: s });
  for (const c of passCodes) {
    const i = text.indexOf(c);
    if (i < 0) continue;
    // A whole word: not a run of digits inside a longer one, nor inside a hex hash or an id (the
    // passes file's 10,000 HMACs hold 8-digit runs by chance).
    if (new RegExp(`(?<![0-9A-Za-z])${c}(?![0-9A-Za-z])`).test(text))
      fixedHits.push({ where, secret: `pass code ${c.slice(0, 2)}` });
  }
}

/**
 * Searches a folder's files now (the token store's own files excepted): for a folder a test
 * deletes before the end of the run, such as the demo's user directory of the browser tests.
 */
export function scanFolderForLeaks(dir: string, label: string): number {
  let n = 0;
  for (const f of files(dir)) {
    let text: string;
    try {
      if (statSync(f).size > 50 * 1024 * 1024) continue;
      text = readFileSync(f, "utf8");
    } catch {
      continue;
    }
    if (isTokenStoreFile(text)) continue;
    n++;
    scanText(`${label} ${path.relative(dir, f)}`, text);
  }
  return n;
}

/** Hands text a test saw (an admin endpoint's answer, say) to the scan. */
export function recordForLeakScan(where: string, value: unknown): void {
  scanText(where, typeof value === "string" ? value : safeJson(value));
}

function safeJson(v: unknown): string {
  const seen = new WeakSet<object>();
  try {
    return (
      JSON.stringify(v, (_k, x: unknown) => {
        if (typeof x === "object" && x !== null) {
          if (seen.has(x)) return undefined;
          seen.add(x);
        }
        return typeof x === "bigint" ? String(x) : x;
      }) ?? ""
    );
  } catch {
    return String(v);
  }
}

// ---- stdout / stderr ---------------------------------------------------------------------
for (const stream of [process.stdout, process.stderr] as const) {
  const original = stream.write.bind(stream) as (...a: unknown[]) => boolean;
  (stream as unknown as { write: (...a: unknown[]) => boolean }).write = (chunk: unknown, ...rest: unknown[]) => {
    scanText(
      stream === process.stdout ? "stdout" : "stderr",
      typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("utf8") : String(chunk),
    );
    return original(chunk, ...rest);
  };
}

// ---- Node-RED's log and messages (the runtime of node-red-node-test-helper) -----------------
function hookNodeRed(): void {
  let util: {
    log: { log: (m: unknown) => void };
    hooks: { add: (n: string, f: (e: unknown) => void) => void; has: (n: string) => boolean };
  };
  try {
    util = createRequire(__filename)(require.resolve("@node-red/util", { paths: [nodeRedDir] })); // the selected runtime's (test/helpers/runtime.ts)
  } catch {
    return;
  }
  const log = util.log as { log: (m: unknown) => void; __leakScan?: boolean };
  if (!log.__leakScan) {
    const original = log.log.bind(log);
    log.log = (m: unknown) => {
      scanText("node-red log", safeJson(m));
      return original(m);
    };
    log.__leakScan = true;
  }
  if (!util.hooks.has("onSend.leakScan")) {
    util.hooks.add("onSend.leakScan", (events: unknown) => {
      for (const e of events as { msg?: unknown }[]) {
        if (isIssuedAnswer(e.msg)) {
          // The one message a code may be in: learnt, and searched for everywhere else.
          passCodes.add((e.msg as { payload: { code: string } }).payload.code);
          continue;
        }
        scanText("node message", safeJson(e.msg));
      }
    });
  }
}

function* files(dir: string): Generator<string> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name === "node_modules") continue;
      yield* files(p);
    } else if (e.isFile()) yield p;
  }
}

/** The token store's own file format: the one place the pair may live. */
function isTokenStoreFile(text: string): boolean {
  return /^\{"v":1,"account":"[0-9a-f]{64}","enc":/.test(text);
}

const digest = (token: string): string => createHash("sha256").update(token).digest("hex");

/**
 * Searches the temp files (skipping those unchanged since this process last searched them) and
 * returns where a secret was found: a token in `issued` (digests), or a fixed credential.
 */
const searched = new Map<string, string>();
function searchFiles(issued: Set<string>): { files: number; where: string[] } {
  let fileCount = 0;
  for (const f of files(suiteTmp)) {
    let st;
    try {
      st = statSync(f);
    } catch {
      continue;
    }
    if (st.size > 50 * 1024 * 1024) continue;
    const stamp = `${st.size}:${st.mtimeMs}`;
    if (searched.get(f) === stamp) continue;
    searched.set(f, stamp);
    let text: string;
    try {
      text = readFileSync(f, "utf8");
    } catch {
      continue;
    }
    if (isTokenStoreFile(text)) continue;
    fileCount++;
    scanText(`file ${path.relative(suiteTmp, f)}`, text);
  }
  const tokenHits = candidates.filter((c) => issued.has(digest(c.value)));
  const where = [
    ...new Set([
      ...tokenHits.map((h) => `a token in ${h.where}`),
      ...fixedHits.map((h) => `"${h.secret.slice(0, 3)}…" in ${h.where}`),
    ]),
  ];
  return { files: fileCount, where };
}

let ranAfterAll = false;
let filesSearched = 0;
const failedFor = new Set<string>();

interface WorkerStats {
  tokens: string[];
  chunks: number;
  files: number;
  hits: string[];
}

function writeWorkerStats(where: string[]): void {
  writeStats("leak", {
    tokens: issuedTokens().map(digest),
    chunks: scannedChunks,
    files: filesSearched,
    hits: where,
  } satisfies WorkerStats);
}

if (isMochaWorker) {
  // When the pool ends the worker: what its last file's "after all" could not see (it is skipped
  // when an earlier root hook failed), then its folder goes.
  process.on("exit", () => {
    try {
      const found = searchFiles(new Set(issuedTokens().map(digest)));
      filesSearched += found.files;
      writeWorkerStats(found.where);
    } finally {
      rmSync(suiteTmp, { recursive: true, force: true });
    }
  });
}

export const mochaHooks = {
  beforeAll(): void {
    hookNodeRed();
  },
  beforeEach(): void {
    hookNodeRed();
  },
  afterAll(this: Mocha.Context): void {
    this.timeout?.(120_000);
    ranAfterAll = true;
    const issued = new Set(issuedTokens().map(digest));
    const found = searchFiles(issued);
    filesSearched += found.files;
    if (isMochaWorker) {
      // After each file: what is new fails this file; the main process adds up.
      writeWorkerStats(found.where);
      const fresh = found.where.filter((w) => !failedFor.has(w));
      fresh.forEach((w) => failedFor.add(w));
      if (fresh.length > 0)
        throw new Error(`secrets leaked (${fresh.length} places): ${fresh.slice(0, 20).join("; ")}`);
      return;
    }
    process.env.DOOR_LEAK_SCAN_SUMMARY = JSON.stringify({
      tokensIssued: issued.size,
      chunksScanned: scannedChunks,
      filesScanned: filesSearched,
      hits: found.where.length,
    });
    rmSync(suiteTmp, { recursive: true, force: true });
    if (found.where.length > 0) {
      throw new Error(`secrets leaked (${found.where.length} places): ${found.where.slice(0, 20).join("; ")}`);
    }
    // One line for the record; says how much was searched.
    console.log(
      `  leak scan: ${issued.size} issued tokens and ${FIXED_SECRETS.length} credentials searched in ${scannedChunks} log/output/message chunks and ${filesSearched} files: 0 hits`,
    );
  },
};

/**
 * The main process of a parallel run (where no root hook runs): its own output and every temp
 * file still there, searched for the tokens every worker issued; and every worker's hits (those
 * failed their file already). Checked when the run ends, before the reporter's closing lines; a
 * failure is thrown from the global teardown, which fails the run.
 */
let failure: Error | null = null;
let checkedRun = false;
function checkRun(): void {
  if (ranAfterAll || checkedRun || isMochaWorker) return; // a serial run: afterAll did it (unless an earlier root hook failed)
  checkedRun = true;
  const workers = readStats<WorkerStats>("leak");
  const issued = new Set([...issuedTokens().map(digest), ...workers.flatMap((w) => w.tokens)]);
  const found = searchFiles(issued);
  rmSync(suiteTmp, { recursive: true, force: true });
  const where = [...new Set([...workers.flatMap((w) => w.hits), ...found.where])];
  if (where.length > 0) {
    failure = new Error(`secrets leaked (${where.length} places): ${where.slice(0, 20).join("; ")}`);
    console.log(`  ${failure.message}`);
    return;
  }
  const chunks = scannedChunks + workers.reduce((n, w) => n + w.chunks, 0);
  const inWorkers = workers.reduce((n, w) => n + w.files, 0);
  const files =
    workers.length > 0
      ? `${inWorkers} files as each test file ended, ${found.files} at the end (${workers.length} worker processes)`
      : `${found.files} files`;
  console.log(
    `  leak scan: ${issued.size} issued tokens and ${FIXED_SECRETS.length} credentials searched in ${chunks} log/output/message chunks and ${files}: 0 hits`,
  );
}

export function mochaGlobalSetup(this: {
  prependListener?: (event: string, f: () => void) => void;
  _opts?: { dryRun?: boolean };
}): void {
  if (this?._opts?.dryRun) checkedRun = true; // nothing runs: nothing to check or print (--dry-run --reporter json stays JSON)
  this?.prependListener?.("end", checkRun); // the runner: its "end" comes before the reporter's summary
}

export function mochaGlobalTeardown(): void {
  checkRun();
  if (failure) throw failure;
}
