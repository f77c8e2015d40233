/**
 * The file pass book's key file (docs/passes.md#where-passes-are-kept): the HMAC key of the codes,
 * sealed as the session's pair is (AES-256-GCM under a key derived from Node-RED's credential
 * secret and the account), or as is without a secret; a plain key of the first version is read.
 */
import { type SealedPair, derivePairKey, openText, sealText } from "../util/seal.js";

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
