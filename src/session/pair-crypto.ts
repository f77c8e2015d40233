/**
 * Sealing the token pair for a store: AES-256-GCM under a key derived (HKDF-SHA256) from a
 * secret, salted with the account key, so the pair of one account never opens under another.
 * Used by the file store and the Redis store; neither writes a token in clear when a secret
 * is set. The sealing itself is src/util/seal.ts
 * (the file pass book's key is sealed with it too).
 */
import { type SealedPair, openText, sealText } from "../util/seal.js";

export { type SealedPair, derivePairKey, openText, sealText } from "../util/seal.js";

export interface PairRecord {
  accessToken: string;
  refreshToken: string;
  /** ms since epoch when the pair was issued to us. */
  obtainedAt: number;
}

export function sealPair(key: Buffer | null, pair: PairRecord): SealedPair {
  return sealText(
    key,
    JSON.stringify({ accessToken: pair.accessToken, refreshToken: pair.refreshToken, obtainedAt: pair.obtainedAt }),
  );
}

/** The pair inside `sealed`; throws (with a message naming no secret) when it cannot be read. */
export function openPair(key: Buffer | null, sealed: SealedPair): PairRecord {
  const pair = JSON.parse(openText(key, sealed)) as Partial<PairRecord>;
  if (
    typeof pair.accessToken !== "string" ||
    typeof pair.refreshToken !== "string" ||
    !pair.accessToken ||
    !pair.refreshToken
  ) {
    throw new Error("incomplete pair");
  }
  return { accessToken: pair.accessToken, refreshToken: pair.refreshToken, obtainedAt: Number(pair.obtainedAt) || 0 };
}
