/**
 * Which door a message means: `msg.deviceId`, else `msg.door` (a name or "Location / Door"),
 * else the door picked in the editor (its identity and the id seen when it was picked).
 * Shared by door-status and door-unlock. Invalid input is reported without any request.
 */
import type { Device } from "../spec/schemas.js";
import type { DeviceDirectory } from "./directory.js";
import { type DoorIdentity, doorNameProblem } from "./door-input.js";
import { describeValue, isDeviceId } from "./ids.js";
import { clipLabel } from "./names.js";

// Where unlock.ts and door-status find them; their one definition is ids.ts.
export { describeValue, isDeviceId, parseLockId } from "./ids.js";

export type Selection =
  | { ok: true; deviceId: number; device: Device | null; label: string; identity: DoorIdentity }
  | { ok: false; message: string; candidates?: string[] };

export interface DoorChoice {
  msgDeviceId: unknown;
  msgDoor: unknown;
  /** The door stored in the node (null when none was picked). */
  configured: DoorIdentity | null;
}

/**
 * What makes a message's door choice bad input whatever the device list says (a msg.deviceId
 * that is no id, a msg.door that is no name, no door at all), or null: the checks selectDoor
 * makes before it looks at any list. door-unlock asks this before its access rules, so that bad
 * input is answered as such and never as a refusal (docs/access-rules.md#the-node-at-run-time).
 */
export function doorInputProblem(choice: DoorChoice): { message: string; candidates?: string[] } | null {
  // A name that can never name a door has no candidates (as selectDoor has always answered it).
  const nameProblem = (query: string, prefix: string) => {
    const bad = doorNameProblem(query);
    return bad === null ? null : { message: `${prefix}${bad}`, candidates: [] };
  };
  if (choice.msgDeviceId !== undefined) {
    if (!isDeviceId(choice.msgDeviceId))
      return { message: `msg.deviceId must be a positive 32-bit integer, got ${describeValue(choice.msgDeviceId)}` };
    if (choice.msgDoor === undefined) return null;
    if (typeof choice.msgDoor !== "string")
      return { message: `msg.door must be a door name or "Location / Door", got ${describeValue(choice.msgDoor)}` };
    return nameProblem(choice.msgDoor, `msg.deviceId is ${choice.msgDeviceId}, but msg.door does not name one door: `);
  }
  if (choice.msgDoor !== undefined) {
    if (typeof choice.msgDoor !== "string")
      return { message: `msg.door must be a door name or "Location / Door", got ${describeValue(choice.msgDoor)}` };
    return nameProblem(choice.msgDoor, "");
  }
  const c = choice.configured;
  if (c && (c.id !== null || c.name)) return null;
  return { message: "no door selected: pick a door in the node, or set msg.deviceId or msg.door" };
}

export async function selectDoor(directory: DeviceDirectory, choice: DoorChoice): Promise<Selection> {
  const problem = doorInputProblem(choice);
  if (problem !== null) return { ok: false, ...problem };
  if (choice.msgDeviceId !== undefined) {
    const id = choice.msgDeviceId as number;
    if (typeof choice.msgDoor === "string") {
      // Both given: they must name the same door, else the message identified none (nothing is sent).
      const r = await directory.resolveName(choice.msgDoor);
      if (!r.ok)
        return {
          ok: false,
          message: `msg.deviceId is ${id}, but msg.door does not name one door: ${r.message}`,
          candidates: r.candidates,
        };
      if (r.device.id !== id) {
        return {
          ok: false,
          message: `msg.deviceId ${id} and msg.door ${describeValue(choice.msgDoor)} (${clipLabel(directory.label(r.device))}, #${r.device.id}) name different doors; send one of them`,
        };
      }
      return {
        ok: true,
        deviceId: id,
        device: r.device,
        label: directory.label(r.device),
        identity: identityOf(r.device, id),
      };
    }
    const device = directory.cached()?.devices.find((d) => d.id === id) ?? null;
    return {
      ok: true,
      deviceId: id,
      device,
      label: device ? directory.label(device) : `#${id}`,
      identity: identityOf(device, id),
    };
  }
  if (typeof choice.msgDoor === "string") {
    const r = await directory.resolveName(choice.msgDoor);
    if (!r.ok) return { ok: false, message: r.message, candidates: r.candidates };
    return {
      ok: true,
      deviceId: r.device.id,
      device: r.device,
      label: directory.label(r.device),
      identity: identityOf(r.device, r.device.id),
    };
  }
  const c = choice.configured;
  if (c) {
    // With a stored id and no list yet, use the id as is: the unlock path never waits for a
    // list fetch. With a list, the stored identity (name, location) decides.
    if (c.id !== null && directory.cached() === null) {
      return {
        ok: true,
        deviceId: c.id,
        device: null,
        label: c.name ? (c.location ? `${c.location} / ${c.name}` : c.name) : `#${c.id}`,
        identity: c,
      };
    }
    const r = await directory.resolveIdentity(c);
    if (!r.ok) return { ok: false, message: r.message, candidates: r.candidates };
    return {
      ok: true,
      deviceId: r.device.id,
      device: r.device,
      label: directory.label(r.device),
      identity: identityOf(r.device, r.device.id),
    };
  }
  return { ok: false, message: "no door selected: pick a door in the node, or set msg.deviceId or msg.door" };
}

function identityOf(device: Device | null, id: number): DoorIdentity {
  return { id, name: device?.name ?? null, location: device?.locationName ?? null };
}

/** Locks of a device when the service lists them (an extra field the spec does not show). */
export function locksOf(device: Device | null): { id: number; name?: string }[] | null {
  const locks = (device as { locks?: unknown } | null)?.locks;
  if (!Array.isArray(locks)) return null;
  return locks.filter(
    (l): l is { id: number; name?: string } =>
      typeof l === "object" && l !== null && isDeviceId((l as { id?: unknown }).id),
  );
}

/** A lock id must name a lock of a multi-lock device, when the device's locks are known. */
export function checkLock(device: Device | null, label: string, lockId: number | null): string | null {
  if (lockId === null) return null;
  const locks = locksOf(device);
  if (locks === null) return null;
  if (locks.length <= 1) return `door ${clipLabel(label)} has a single lock: send no lockId for it`;
  if (!locks.some((l) => l.id === lockId))
    return `door ${clipLabel(label)} has no lock ${lockId} (its locks: ${locks.map((l) => l.id).join(", ")})`;
  return null;
}
