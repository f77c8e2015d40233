/**
 * What someone holding a copy of a user directory, without Node-RED's credential secret, can try
 * as the pass key (docs/passes.md#where-passes-are-kept): every key the files give as they are
 * (their bytes, every run of hex, every base64 text in them, and the hex or base64 inside that),
 * each tried as the HMAC key of a known code. Not a test file itself; needs Node.js alone.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { codeHash } from "../../src/passes/pass.js";

/** Every file under `dir`, recursively. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** The keys a text gives as it is: hex runs, base64 texts, and what those decode to in turn. */
function keysIn(text: string, depth = 0): Buffer[] {
  const keys: Buffer[] = [Buffer.from(text, "utf8"), Buffer.from(text.trim(), "utf8")];
  for (const h of text.match(/[0-9a-fA-F]{32,}/g) ?? []) keys.push(Buffer.from(h, "hex"));
  for (const b of text.match(/[A-Za-z0-9+/]{16,}={0,2}/g) ?? []) {
    const raw = Buffer.from(b, "base64");
    keys.push(raw);
    if (depth === 0) keys.push(...keysIn(raw.toString("latin1"), 1));
  }
  return keys;
}

/** The files (and their texts' keys) under `dir` under which `code` hashes to `hash`: their names. */
export function filesThatVerify(dir: string, code: string, hash: string): string[] {
  const hits: string[] = [];
  for (const f of filesUnder(dir)) {
    const bytes = fs.readFileSync(f);
    const keys = [bytes, ...keysIn(bytes.toString("latin1"))];
    if (keys.some((k) => k.length > 0 && codeHash(k, code) === hash)) hits.push(path.basename(f));
  }
  return hits;
}
