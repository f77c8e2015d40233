/**
 * The parts of one unlock (unlock.ts) that need no state of the message: the door as known
 * without the service, the rate-limited fields, the closing record's tries and the error said
 * when it is lost, and the turn after delivery.
 */
import type { DeviceDirectory, DoorIdentity } from "../doors/directory.js";
import { isDeviceId } from "../doors/select.js";
import { describeThrown } from "../util/text.js";
import type { Classified, Outcome } from "./outcome.js";

/**
 * The door of a message as far as it is known without the service (for a message refused before
 * its door is resolved): a valid msg.deviceId (labelled from the cached list when it is there),
 * else, without msg.door, the node's stored door; a door name is not looked up.
 */
export function doorKnownLocally(
  directory: DeviceDirectory,
  input: { msgDeviceId: unknown; msgDoor: unknown },
  configured: DoorIdentity | null,
): { deviceId: number | null; door: string | null } {
  if (input.msgDeviceId !== undefined) {
    if (!isDeviceId(input.msgDeviceId)) return { deviceId: null, door: null };
    const id = input.msgDeviceId;
    const device = directory.cached()?.devices.find((d) => d.id === id);
    return { deviceId: id, door: device ? directory.label(device) : `#${id}` };
  }
  if (input.msgDoor !== undefined || configured === null) return { deviceId: null, door: null };
  // The listed door when the stored id still has the stored name; else the door as it was stored.
  const device =
    configured.id === null
      ? undefined
      : directory
          .cached()
          ?.devices.find((d) => d.id === configured.id && (configured.name === null || d.name === configured.name));
  if (device) return { deviceId: device.id, door: directory.label(device) };
  const label = configured.name
    ? configured.location
      ? `${configured.location} / ${configured.name}`
      : configured.name
    : configured.id !== null
      ? `#${configured.id}`
      : null;
  return { deviceId: configured.id, door: label };
}

/**
 * A rate-limited message that sent nothing (its renewal or its device list was limited): status
 * 429 as the outcome table pairs them, and retryAfter, which its text names
 * (docs/session.md#rate-limits).
 */
export function rateLimited(c: Classified): { status: 429; retryAfter?: number } {
  return c.retryAfter !== null ? { status: 429, retryAfter: c.retryAfter } : { status: 429 };
}

/**
 * Batches an unlock's closing record is tried in before it is given up (AuditRecordLost). Each
 * try is a new append: it goes with the next attempt record's write or within the audit log's
 * DEFER_MS, so a log that keeps failing gives it up within about CLOSING_TRIES x DEFER_MS.
 */
export const CLOSING_TRIES = 3;

/**
 * An unlock's closing record (unlock-result or unlock-rejected) that the audit log could not
 * write in CLOSING_TRIES tries. The outcome went out before; this is passed on after it so that
 * the node can say so (door-unlock: on done()).
 */
export class AuditRecordLost extends Error {
  constructor(type: "unlock-result" | "unlock-rejected", outcome: Outcome, cause: unknown) {
    const what =
      outcome === "accepted"
        ? "the door was unlocked (accepted)"
        : type === "unlock-result"
          ? `the unlock's outcome was ${outcome}`
          : `nothing was sent (${outcome})`;
    super(`${what}, but its ${type} record could not be written to the audit log: ${describeThrown(cause)}`, { cause });
    this.name = "AuditRecordLost";
  }
}

/**
 * The next turn of the event loop: a closing record is made (its line and hashes) after what
 * onResult started in this one. Node-RED delivers a sent message in a setImmediate queued by
 * send(), so the next node has the outcome before this record's work is done.
 */
export function afterDelivery(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
