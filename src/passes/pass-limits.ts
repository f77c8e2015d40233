/**
 * The length of a pass's code (docs/passes.md#the-node): shared by the runtime (pass.ts) and the
 * door-pass dialog, which bundles this file (so it imports nothing).
 */
export const DEFAULT_CODE_LENGTH = 8;
export const MIN_CODE_LENGTH = 6;
export const MAX_CODE_LENGTH = 12;

/** The node's codeLength: a whole number from 6 to 12 (absent: 8), or why it is not one. */
export function codeLengthOf(value: unknown): number | string {
  if (value === undefined || value === null || value === "") return DEFAULT_CODE_LENGTH;
  const n = typeof value === "string" && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < MIN_CODE_LENGTH || n > MAX_CODE_LENGTH)
    return `codeLength must be a whole number from ${MIN_CODE_LENGTH} to ${MAX_CODE_LENGTH}`;
  return n;
}
