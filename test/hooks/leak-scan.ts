/**
 * The secrets rule, checked over the whole test run (a mocha root hook plugin, loaded by
 * .mocharc.json before any test):
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
 * configure and send as msg.pin (test/helpers/pins.ts). The token store's own files
 * are the one place tokens are allowed, and are recognised by their format. Any hit fails
 * the run in the root "after all" hook, naming where (never printing the secret).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { issuedTokens } from "../../src/simulator/issued.js";
import { ALL_TEST_PINS } from "../helpers/pins.js";
import { nodeRedDir } from "../helpers/runtime.js";

// The seed accounts' passwords and phone numbers, and the PINs the tests use (test/helpers/pins.ts).
const FIXED_SECRETS = ["demo-password", "other-password", "+15550000001", "+15550000002", "15550000001", "15550000002", ...ALL_TEST_PINS];
const JWT = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;
const REFRESH = /rt_[A-Za-z0-9_-]{43}/g;

const suiteTmp = mkdtempSync(path.join(tmpdir(), "door-suite-"));
process.env.TMPDIR = suiteTmp;

interface Candidate { where: string; value: string }
const candidates: Candidate[] = [];
const fixedHits: { where: string; secret: string }[] = [];
let scannedChunks = 0;

function scanText(where: string, text: string): void {
  scannedChunks++;
  for (const re of [JWT, REFRESH]) {
    re.lastIndex = 0;
    for (const m of text.matchAll(re)) candidates.push({ where, value: m[0] });
  }
  for (const s of FIXED_SECRETS) if (text.includes(s)) fixedHits.push({ where, secret: s });
}

/** Hands text a test saw (an admin endpoint's answer, say) to the scan. */
export function recordForLeakScan(where: string, value: unknown): void {
  scanText(where, typeof value === "string" ? value : safeJson(value));
}

function safeJson(v: unknown): string {
  const seen = new WeakSet<object>();
  try {
    return JSON.stringify(v, (_k, x: unknown) => {
      if (typeof x === "object" && x !== null) {
        if (seen.has(x)) return undefined;
        seen.add(x);
      }
      return typeof x === "bigint" ? String(x) : x;
    }) ?? "";
  } catch {
    return String(v);
  }
}

// ---- stdout / stderr ---------------------------------------------------------------------
for (const stream of [process.stdout, process.stderr] as const) {
  const original = stream.write.bind(stream) as (...a: unknown[]) => boolean;
  (stream as unknown as { write: (...a: unknown[]) => boolean }).write = (chunk: unknown, ...rest: unknown[]) => {
    scanText(stream === process.stdout ? "stdout" : "stderr", typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("utf8") : String(chunk));
    return original(chunk, ...rest);
  };
}

// ---- Node-RED's log and messages (the runtime of node-red-node-test-helper) -----------------
function hookNodeRed(): void {
  let util: { log: { log: (m: unknown) => void }; hooks: { add: (n: string, f: (e: unknown) => void) => void; has: (n: string) => boolean } };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    util = require(require.resolve("@node-red/util", { paths: [nodeRedDir] })); // the selected runtime's (test/helpers/runtime.ts)
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
      for (const e of events as { msg?: unknown }[]) scanText("node message", safeJson(e.msg));
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

export const mochaHooks = {
  beforeAll(): void {
    hookNodeRed();
  },
  beforeEach(): void {
    hookNodeRed();
  },
  afterAll(this: Mocha.Context): void {
    this.timeout?.(120_000);
    let fileCount = 0;
    for (const f of files(suiteTmp)) {
      let size = 0;
      try {
        size = statSync(f).size;
      } catch {
        continue;
      }
      if (size > 50 * 1024 * 1024) continue;
      const text = readFileSync(f, "utf8");
      if (isTokenStoreFile(text)) continue;
      fileCount++;
      scanText(`file ${path.relative(suiteTmp, f)}`, text);
    }
    const issued = new Set(issuedTokens());
    const tokenHits = candidates.filter((c) => issued.has(c.value));
    const where = [...new Set([...tokenHits.map((h) => `a token in ${h.where}`), ...fixedHits.map((h) => `"${h.secret.slice(0, 3)}…" in ${h.where}`)])];
    process.env.DOOR_LEAK_SCAN_SUMMARY = JSON.stringify({ tokensIssued: issued.size, chunksScanned: scannedChunks, filesScanned: fileCount, hits: where.length });
    rmSync(suiteTmp, { recursive: true, force: true });
    if (where.length > 0) {
      throw new Error(`secrets leaked (${where.length} places): ${where.slice(0, 20).join("; ")}`);
    }
    // One line for the record; says how much was searched.
    console.log(`  leak scan: ${issued.size} issued tokens and ${FIXED_SECRETS.length} credentials searched in ${scannedChunks} log/output/message chunks and ${fileCount} files: 0 hits`);
  },
};
