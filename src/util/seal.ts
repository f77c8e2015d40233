/**
 * Sealing a text for a store: AES-256-GCM under a key derived (HKDF-SHA256) from a secret, salted
 * with the account key, so what one account sealed never opens under another. The session's token
 * pair (src/session/pair-crypto.ts) and the file pass book's key (docs/passes.md#where-passes-are-kept)
 * are sealed with it; neither is written in clear when a secret is set.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/** The sealed form, as stored (base64 fields). */
export interface SealedPair {
  enc: "aes-256-gcm" | "none";
  iv?: string;
  tag?: string;
  data: string;
}

/** A 32-byte key for `secret` and `accountKey`; `info` separates the stores' key spaces. */
export function derivePairKey(secret: string, accountKey: string, info: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, accountKey, info, 32));
}

/**
 * Any text sealed as the pair is: AES-256-GCM under `key`, or as is (base64) when no secret is set.
 * The pass key of the codes' hashes is sealed with it too (docs/passes.md#where-passes-are-kept).
 */
export function sealText(key: Buffer | null, text: string): SealedPair {
  if (!key) return { enc: "none", data: Buffer.from(text, "utf8").toString("base64") };
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const data = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
  return {
    enc: "aes-256-gcm",
    iv: iv.toString("base64"),
    tag: cipher.getAuthTag().toString("base64"),
    data: data.toString("base64"),
  };
}

/** The text inside `sealed`; throws (with a message naming no secret) when it cannot be opened. */
export function openText(key: Buffer | null, sealed: SealedPair): string {
  if (typeof sealed.data !== "string") throw new Error("unknown format");
  if (sealed.enc === "aes-256-gcm") {
    if (!key) throw new Error("it is encrypted but no secret is set");
    const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.iv ?? "", "base64"));
    decipher.setAuthTag(Buffer.from(sealed.tag ?? "", "base64"));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]).toString("utf8");
  }
  if (sealed.enc === "none") return Buffer.from(sealed.data, "base64").toString("utf8");
  throw new Error("unknown encryption");
}
