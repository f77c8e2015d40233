/**
 * What a door named by a message or stored by the editor must be before any device list is
 * fetched (docs/doors.md#message-overrides, docs/doors.md#resolution-rules): a door name or
 * "Location / Name" of at most 200 characters without control characters, a stored identity
 * with an int32 id or a name. Input that can never name a door is refused here with a reason,
 * and nothing is fetched or sent for it. Also how an identity is named in a message.
 */
import { hasControlChars } from "../util/text.js";
import { quote, text } from "./names.js";

/** A door as the editor stores it: the id seen when it was picked, its name and location. */
export interface DoorIdentity {
  id: number | null;
  name: string | null;
  location: string | null;
}

/** Longest door name or "Location / Name" accepted from a message. */
const MAX_DOOR_QUERY = 200;

/** A door input refused before any list is fetched (a Resolution of DeviceDirectory, src/doors/directory.ts). */
type InvalidDoor = { ok: false; reason: "invalid"; message: string; candidates: string[] };

/** Why a door name can never name a door (checked before any list is fetched), or null. */
export function doorNameProblem(query: unknown): string | null {
  const r = validateQuery(query, "door name");
  return r !== null && !r.ok ? r.message : null;
}

/** Why `query` (a door name, or a stored name or location) can never name a door, or null. */
export function validateQuery(query: unknown, what: string): InvalidDoor | null {
  const bad = (message: string): InvalidDoor => ({ ok: false, reason: "invalid", message, candidates: [] });
  if (typeof query !== "string") return bad(`${what} must be a string, got ${query === null ? "null" : typeof query}`);
  if (query.trim().length === 0) return bad(`${what} is empty`);
  if (query.length > MAX_DOOR_QUERY) {
    return bad(`${what} is longer than ${MAX_DOOR_QUERY} characters (${query.length})`);
  }
  if (hasControlChars(query)) return bad(`${what} contains control characters`);
  return null;
}

/** Why a stored identity can never name a door, or null. An empty name or location means "not known". */
export function validateIdentity(identity: DoorIdentity): InvalidDoor | null {
  const bad = (message: string): InvalidDoor => ({ ok: false, reason: "invalid", message, candidates: [] });
  if (typeof identity !== "object" || identity === null) return bad("door identity is missing");
  const { id, name, location } = identity;
  if (id !== null && id !== undefined && !(Number.isInteger(id) && id >= -2147483648 && id <= 2147483647)) {
    return bad(`door id must be an integer (int32), got ${JSON.stringify(id) ?? String(id)}`);
  }
  for (const [field, value] of [
    ["door name", name],
    ["door location", location],
  ] as const) {
    if (value === null || value === undefined) continue;
    const invalid = validateQuery(value, field);
    // An empty stored name/location simply means "not known".
    if (invalid && !(typeof value === "string" && value.trim().length === 0)) return invalid;
  }
  if ((id === null || id === undefined) && text(name ?? null) === null) {
    return bad("door identity has neither an id nor a name");
  }
  return null;
}

/** An identity as a message names it: `"Garage / Back Door" #12`, quoted. */
export function describeIdentity(identity: DoorIdentity): string {
  const name = text(identity.name);
  const loc = text(identity.location);
  const parts: string[] = [];
  if (name !== null) parts.push(quote(loc !== null ? `${loc} / ${name}` : name));
  if (identity.id !== null && identity.id !== undefined) parts.push(`#${identity.id}`);
  return parts.join(" ");
}
