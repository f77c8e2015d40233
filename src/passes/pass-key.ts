/**
 * The file book's pass key (docs/passes.md#where-passes-are-kept): the random key of the codes'
 * HMACs, kept in its own file sealed under a key derived from Node-RED's credential secret (as the
 * session's pair is: src/util/seal.ts), so that a copy of the user directory without the secret
 * gives back no code; the first version's plain hex file is still read (and sealed in place).
 */
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { type SealedPair, derivePairKey, openText, sealText } from "../util/seal.js";
import { writeFileAtomic } from "../util/atomic-file.js";

/** HKDF info of the key that seals the file book's pass key (changing it would make existing key files unreadable). */
export const PASS_KEY_INFO = "door-access pass key file v1";

/** The key that seals an account's pass key file: from Node-RED's credential secret; null without one. */
export function passKeySealer(secret: string | null | undefined, accountKey: string): Buffer | null {
  return secret ? derivePairKey(secret, accountKey, PASS_KEY_INFO) : null;
}

/** The pass key file's text: the key (hex) sealed under `sealer` (as is without a secret). */
export function passKeyFileText(key: Buffer, sealer: Buffer | null): string {
  return JSON.stringify({ v: 1, ...sealText(sealer, key.toString("hex")) }) + "\n";
}

/**
 * The key in a pass key file: sealed (this version), or plain hex (the first version's, or written
 * without a secret: `plain`, to be sealed once a secret is set); or why it cannot be read.
 */
export function readPassKeyFile(text: string, sealer: Buffer | null): { key: Buffer; plain: boolean } | string {
  const hex = (h: unknown) =>
    typeof h === "string" && /^[0-9a-fA-F]{64}$/.test(h.trim()) ? Buffer.from(h.trim(), "hex") : null;
  const old = hex(text);
  if (old !== null) return { key: old, plain: true };
  let file: Partial<SealedPair> & { v?: unknown };
  try {
    file = JSON.parse(text) as typeof file;
  } catch {
    return "is not a pass key";
  }
  if (file === null || typeof file !== "object" || file.v !== 1) return "is not a pass key";
  let opened: string;
  try {
    opened = openText(sealer, file as SealedPair);
  } catch {
    return sealer === null
      ? "is sealed, and Node-RED has no credential secret"
      : "cannot be opened with Node-RED's credential secret (it was sealed under another)";
  }
  const key = hex(opened);
  return key === null ? "is not a pass key" : { key, plain: file.enc === "none" };
}

const NOT_CHECKED =
  "the passes issued before cannot be checked until it can be read again (then restart Node-RED); it is not written over";

/**
 * The pass key: read (a plain one sealed in place when a secret is set), or made and written
 * sealed when there is none. A key file that cannot be read or opened is never written over
 * (docs/passes.md#where-passes-are-kept): passes issued meanwhile use a key kept in memory.
 */
export async function loadPassKey(
  keyFile: string,
  sealer: Buffer | null,
  onProblem: (message: string) => void,
): Promise<Buffer> {
  let text: string;
  try {
    text = await fs.readFile(keyFile, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return makeKey(keyFile, sealer, onProblem);
    onProblem(`the pass key ${keyFile} could not be read (${(e as Error).message}): ${NOT_CHECKED}`);
    return randomBytes(32);
  }
  const read = readPassKeyFile(text, sealer);
  if (typeof read === "string") {
    onProblem(`the pass key ${keyFile} ${read}: ${NOT_CHECKED}`);
    return randomBytes(32);
  }
  if (read.plain && sealer !== null) {
    // The same key, sealed (atomically, 0600): the passes issued under it keep opening.
    try {
      await writeFileAtomic(keyFile, passKeyFileText(read.key, sealer));
    } catch (e) {
      onProblem(`the pass key ${keyFile} could not be sealed (${(e as Error).message}); tried again at the next start`);
    }
  }
  return read.key;
}

/** A new key, written sealed; passes issued now work until a restart, also if it cannot be written. */
async function makeKey(keyFile: string, sealer: Buffer | null, onProblem: (message: string) => void): Promise<Buffer> {
  const key = randomBytes(32);
  try {
    await writeFileAtomic(keyFile, passKeyFileText(key, sealer));
  } catch (e) {
    onProblem(`the pass key ${keyFile} could not be written (${(e as Error).message})`);
  }
  return key;
}
