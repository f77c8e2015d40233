/**
 * What a device id and a lock id are (docs/doors.md#message-overrides): a positive 32-bit
 * integer. The runtime checks a message's ids and a node's stored ones with these functions, and
 * the dialogs of door-status and door-unlock validate their fields with the same ones, bundled
 * into the editor (docs/architecture.md#the-editor-checks-what-the-runtime-checks-with-the-same-code).
 * Free of Node.js: it runs in the browser too.
 */

const INT32_MAX = 2147483647;

/** A device or lock id as a message must carry it: an integer from 1 to 2^31 - 1. */
export function isDeviceId(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= INT32_MAX;
}

/** Describes a bad value without echoing much of it. */
export function describeValue(v: unknown): string {
  if (typeof v === "string") return v.length > 40 ? `a ${v.length}-character string` : JSON.stringify(v);
  if (typeof v === "number") return String(v);
  if (v === null) return "null";
  try {
    if (Array.isArray(v)) return "an array";
  } catch {
    return "a revoked proxy"; // Array.isArray throws for one; never for anything else
  }
  return `a value of type ${typeof v}`;
}

/**
 * The device id a node stores (the id seen when its door was picked): a device id, or its digits
 * as the editor may keep them; null for anything else (the door is then known by name only).
 */
export function storedDeviceId(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d{1,10}$/.test(v) ? Number(v) : null;
  return isDeviceId(n) ? n : null;
}

/** `msg.lockId` / the node's lock: absent → null (whole device); else a positive int32 (the editor's may be text). */
export function parseLockId(
  value: unknown,
  fromEditor = false,
): { ok: true; lockId: number | null } | { ok: false; message: string } {
  if (value === undefined || value === null || (fromEditor && value === "")) return { ok: true, lockId: null };
  // The editor stores its fields as text; a message must carry a real integer.
  if (fromEditor && typeof value === "string" && /^\d{1,10}$/.test(value.trim()) && isDeviceId(Number(value)))
    return { ok: true, lockId: Number(value) };
  if (isDeviceId(value)) return { ok: true, lockId: value };
  return { ok: false, message: `lockId must be a positive 32-bit integer, got ${describeValue(value)}` };
}
