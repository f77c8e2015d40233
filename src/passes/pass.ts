/**
 * A guest pass (docs/passes.md): time-limited access for a named guest to some doors of an
 * account, opened with a code. This file holds what a pass is, its state at a time, the checks of
 * a `door-pass` issue request, and the codes (random digits, kept only as a keyed hash). It knows
 * nothing of storage (pass-book.ts) nor of Node-RED.
 */
import { createHmac, randomBytes, randomInt } from "node:crypto";

import {
  type CompiledWindow,
  type LocalTime,
  type ScheduleWindow,
  LocalClock,
  compileWindow,
  formatOpening,
  runtimeZone,
  inAnyWindow,
  nextOpening,
  readWallClock,
  wallClockFormat,
} from "../util/week-schedule.js";
import { DEFAULT_CODE_LENGTH, MAX_CODE_LENGTH, MIN_CODE_LENGTH, codeLengthOf } from "./pass-limits.js";
import { type Bookings, inTurnover, turnoverWindows } from "./turnover.js";

export type { Bookings };

export { DEFAULT_CODE_LENGTH, MAX_CODE_LENGTH, MIN_CODE_LENGTH, codeLengthOf };
export { MAX_DOORS, MAX_GUEST, MAX_REF, MAX_WINDOWS } from "./issue-request.js";

export interface PassDoor {
  deviceId: number;
  door: string | null;
}

/**
 * What a booking calendar's feed told of a pass's booking (docs/passes.md#blocked-time-and-placeholder-names):
 * its summary as written, and where the description gives them (Airbnb), the guest's phone's last
 * 4 digits and the link to the reservation.
 */
export interface BookingInfo {
  summary: string;
  phoneLast4: string | null;
  url: string | null;
}

/** A pass as stored: never its code, only the code's keyed hash. */
export interface Pass {
  id: string;
  guest: string;
  doors: PassDoor[];
  /** ISO times: valid within [from, until). */
  from: string;
  until: string;
  /** How many openings it allows; null: any number within its window. */
  uses: number | null;
  used: number;
  ref: string | null;
  /** ISO time it was revoked, or null. */
  revoked: string | null;
  /** "calendar": revoked by its calendar (the booking gone or cancelled); absent: by a flow or the sidebar. */
  revokedBy?: "calendar";
  /** ISO time of its first use, or null. */
  firstUsed: string | null;
  issued: string;
  /** HMAC-SHA256 of the code under the account's pass key, hex. */
  hash: string;
  /** The door-pass node whose booking calendar made it (docs/passes.md#from-a-booking-calendar); absent: a flow's. */
  source?: string;
  /** A calendar's pass: what the feed told of its booking when it was issued or last updated. */
  booking?: BookingInfo;
  /** The door-pass node a flow's `issue` went through (docs/passes.md#in-the-sidebar); a calendar's pass has `source`. */
  node?: string;
  /** Weekly hours (docs/passes.md#issue): within [from, until) it opens only inside these windows; absent: at any hour. */
  schedule?: ScheduleWindow[];
  /** The IANA zone the schedule is read in (resolved when issued). */
  timeZone?: string;
  /**
   * The door-pass node (its id) whose booking calendar bounds it (docs/passes.md#between-guests-the-turnover-window):
   * it opens only between a check-out and the next check-in of that calendar's bookings on its doors.
   */
  turnover?: string;
}

export type PassState = "upcoming" | "active" | "expired" | "used-up" | "revoked";

/** What a flow or the sidebar sees of a pass: never the code nor its hash. */
export interface PassView {
  id: string;
  guest: string;
  doors: PassDoor[];
  from: string;
  until: string;
  uses: number | null;
  used: number;
  ref: string | null;
  state: PassState;
  booking?: BookingInfo;
  /** The door-pass node that made it (docs/passes.md#in-the-sidebar): its calendar's (`calendar: true`) or a flow's issue through it. */
  node?: string;
  calendar?: boolean;
  schedule?: ScheduleWindow[];
  timeZone?: string;
  turnover?: string;
}

/**
 * A pass's state at `now`, in the one order every check of a pass follows (docs/passes.md#at-a-door-unlock):
 * revoked, then used up, then expired, then not valid yet. passCheck adds the door; the Redis
 * book's USE script (redis-pass-book.ts) follows this order, step for step.
 */
export function passState(p: Pass, now: number): PassState {
  if (p.revoked !== null) return "revoked";
  if (p.uses !== null && p.used >= p.uses) return "used-up";
  if (now >= Date.parse(p.until)) return "expired";
  if (now < Date.parse(p.from)) return "upcoming";
  return "active";
}

/** Why a pass does not open: its state, outside its weekly hours or its turnover windows ("closed"), or a door it is not for. */
export type PassRefusal = Exclude<PassState, "active"> | "closed" | "door";

/**
 * Why pass `p` does not open door `deviceId` at `now` (no door given: any of its doors), or null:
 * the pass state first (passState's order), then its weekly hours and its turnover windows (read
 * from `bookings`, the book's calendar passes; a turnover pass checked without them is closed),
 * then the door. The one source of a pass's validity: the check at a door-unlock, the file book's
 * commit and, in Lua, the Redis book's USE script (which is told opensNow()'s verdict, as it has no
 * time zones).
 */
export function passCheck(p: Pass, now: number, deviceId?: number, bookings?: Bookings): PassRefusal | null {
  const state = passState(p, now);
  if (state !== "active") return state;
  if (!opensNow(p, now, bookings)) return "closed";
  if (deviceId !== undefined && !p.doors.some((d) => d.deviceId === deviceId)) return "door";
  return null;
}

/** Whether `now` is inside the pass's weekly hours and, for a turnover pass, inside one of its turnover windows. */
export function opensNow(p: Pass, now: number, bookings?: Bookings): boolean {
  return withinHours(p, now) && inTurnover(p, now, bookings);
}

// ---- weekly hours ----------------------------------------------------------------------------

/** A zone's wall clock: Intl behind the access rules' cache (LocalClock), one per zone in this runtime. */
interface ZoneClock {
  read: (now: number) => LocalTime;
  clock: LocalClock;
}
const zoneClocks = new Map<string, ZoneClock>();
const compiled = new WeakMap<readonly ScheduleWindow[], CompiledWindow[]>();

function zoneClock(zone: string): ZoneClock {
  let z = zoneClocks.get(zone);
  if (z === undefined) {
    const format = wallClockFormat(zone); // throws for a zone this Node.js does not know
    const read = (now: number) => readWallClock(format, zone, now);
    z = { read, clock: new LocalClock(read) };
    zoneClocks.set(zone, z);
  }
  return z;
}

function windowsOf(schedule: readonly ScheduleWindow[]): CompiledWindow[] {
  let w = compiled.get(schedule);
  if (w === undefined) {
    w = schedule.map(compileWindow);
    compiled.set(schedule, w);
  }
  return w;
}

/**
 * Whether `now` is inside the pass's weekly hours, on the wall clock of its zone as the access
 * rules read one (docs/access-rules.md#time-zone-and-daylight-saving); true without a schedule.
 * A zone this Node.js does not know opens nothing.
 */
export function withinHours(p: Pass, now: number): boolean {
  if (p.schedule === undefined || p.schedule.length === 0) return true;
  try {
    const { day, minute } = zoneClock(p.timeZone ?? "UTC").clock.at(now);
    return inAnyWindow(windowsOf(p.schedule), day, minute);
  } catch {
    return false;
  }
}

/**
 * When the pass next opens at or after `start` (inside its hours, before `until`, and for a
 * turnover pass inside one of its turnover windows), or null: never again. With `to`: the end of
 * the turnover window it opens in.
 */
export function nextOpen(p: Pass, start: number, bookings?: Bookings): number | null {
  return nextOpenWindow(p, start, bookings)?.at ?? null;
}

function nextOpenWindow(p: Pass, start: number, bookings?: Bookings): { at: number; to: number | null } | null {
  const until = Date.parse(p.until);
  if (p.turnover === undefined) {
    const at = hoursFrom(p, start, until);
    return at === null ? null : { at, to: null };
  }
  for (const w of turnoverWindows(p, start, bookings)) {
    if (w.from >= until) break;
    const to = Math.min(w.until, until);
    const at = hoursFrom(p, Math.max(w.from, start), to);
    if (at !== null) return { at, to };
  }
  return null;
}

/** The first instant in [start, end) inside the pass's weekly hours, or null. */
function hoursFrom(p: Pass, start: number, end: number): number | null {
  if (p.schedule === undefined || p.schedule.length === 0) return start < end ? start : null;
  try {
    return nextOpening(windowsOf(p.schedule), zoneClock(p.timeZone ?? "UTC").read, start, end);
  } catch {
    return null;
  }
}

/** The zone a text about pass `p` gives its times in: the pass's, else the node's (`zone`), else the runtime's. */
function textZone(p: Pass, zone: string | undefined): string {
  const own = (p as { timeZone?: unknown }).timeZone;
  if (typeof own === "string" && own !== "") return own;
  return zone || runtimeZone() || "UTC";
}

/**
 * A pass's window for a text a person reads (an event's message): "Tuesday 15 December 15:00 to
 * Saturday 19 December 11:00", local time in the pass's zone, else `zone` (the node's), else the
 * runtime's; never ISO UTC (docs/events.md#pass).
 */
export function windowText(p: Pass, now: number, zone?: string): string {
  const z = textZone(p, zone);
  return `${formatOpening(Date.parse(p.from), now, z)} to ${formatOpening(Date.parse(p.until), now, z)} (${z})`;
}

/**
 * "<subject> opens on Tuesday 08:00" (local time in the pass's zone), or that it does not open
 * again; a turnover pass names the turnover window it opens in (docs/passes.md#between-guests-the-turnover-window).
 */
function opensText(p: Pass, subject: string, start: number, now: number, zone: string, bookings?: Bookings): string {
  const next = nextOpenWindow(p, start, bookings);
  const end = formatOpening(Date.parse(p.until), now, zone);
  if (p.turnover === undefined)
    return next === null
      ? `${subject} does not open again before it ends (${end})`
      : `${subject} opens on ${formatOpening(next.at, now, zone)}`;
  const only = `${subject} opens only between a check-out and the next check-in`;
  if (next === null) return `${only}, and none is booked before it ends (${end})`;
  const to = next.to === null ? "" : ` to ${formatOpening(next.to, now, zone)}`;
  return `${only}: next from ${formatOpening(next.at, now, zone)}${to}`;
}

/**
 * A refusal in the words of docs/passes.md#at-a-door-unlock (`gone`: the pass no longer exists).
 * Times are local time, never ISO UTC: in the pass's own zone, else `zone` (the door-unlock
 * node's), else the runtime's. A pass with weekly hours names when it next opens.
 */
export function refusalText(
  why: PassRefusal | "gone",
  p: Pass,
  now: number,
  zone?: string,
  bookings?: Bookings,
): string {
  const z = textZone(p, zone);
  switch (why) {
    case "revoked":
      return "this pass was revoked";
    case "used-up":
      return p.uses === null ? "this pass has no use left" : `this pass has no use left (${p.used} of ${p.uses} used)`;
    case "expired":
      return `this pass expired on ${localDateTime(Date.parse(p.until), z)}`;
    case "upcoming":
      return (p.schedule !== undefined && p.schedule.length > 0) || p.turnover !== undefined
        ? `this pass is not valid yet: ${opensText(p, "it", Date.parse(p.from), now, z, bookings)}`
        : `this pass is not valid yet: it opens on ${localDateTime(Date.parse(p.from), z)}`;
    case "closed":
      return opensText(p, "this code", now, now, z, bookings);
    case "door":
      return "this pass is not for this door";
    default: // "gone", or a word a store gave that no check makes
      return "this pass no longer exists";
  }
}

/**
 * `at` as a person reads it (docs/passes.md#at-a-door-unlock): "Tuesday 1 December 11:00
 * (Europe/Oslo)", on the wall clock of `zone` (absent or unknown: the runtime's zone).
 */
export function localDateTime(at: number, zone?: string): string {
  let f: Intl.DateTimeFormat;
  try {
    f = new Intl.DateTimeFormat("en-GB", { timeZone: zone || undefined, ...LOCAL_PARTS });
  } catch {
    f = new Intl.DateTimeFormat("en-GB", LOCAL_PARTS);
  }
  const part = (t: string) => f.formatToParts(at).find((x) => x.type === t)?.value ?? "";
  return `${part("weekday")} ${part("day")} ${part("month")} ${part("hour")}:${part("minute")} (${f.resolvedOptions().timeZone})`;
}
const LOCAL_PARTS: Intl.DateTimeFormatOptions = {
  weekday: "long",
  day: "numeric",
  month: "long",
  hour: "2-digit",
  minute: "2-digit",
  hourCycle: "h23",
};

/** A pass that may still open a door, now or later: its code stays unique among these. */
export function isLive(p: Pass, now: number): boolean {
  const s = passState(p, now);
  return s === "active" || s === "upcoming";
}

export function viewOf(p: Pass, now: number): PassView {
  return {
    id: p.id,
    guest: p.guest,
    doors: p.doors.map((d) => ({ ...d })),
    from: p.from,
    until: p.until,
    uses: p.uses,
    used: p.used,
    ref: p.ref,
    state: passState(p, now),
    ...(p.booking !== undefined ? { booking: { ...p.booking } } : {}),
    ...(p.source !== undefined
      ? { node: p.source, calendar: true }
      : p.node !== undefined
        ? { node: p.node, calendar: false }
        : {}),
    ...hoursOf(p),
  };
}

/** A stored pass's hours (absent, or windows and a zone as text): a pass whose hours cannot be read is not loaded. */
export function storedHoursReadable(x: Record<string, unknown>): boolean {
  const time = (t: unknown) => typeof t === "string" && /^(([01]\d|2[0-3]):[0-5]\d|24:00)$/.test(t);
  const window = (w: unknown) => {
    const y = (w ?? {}) as Record<string, unknown>;
    return (
      Array.isArray(y.days) &&
      y.days.every((d) => Number.isInteger(d) && (d as number) >= 1 && (d as number) <= 7) &&
      time(y.from) &&
      time(y.to)
    );
  };
  return (
    (x.timeZone === undefined || typeof x.timeZone === "string") &&
    (x.schedule === undefined || (Array.isArray(x.schedule) && x.schedule.every(window))) &&
    (x.turnover === undefined || typeof x.turnover === "string")
  );
}

/** A pass's hours as a flow sees them: `schedule`, `timeZone` and `turnover` (a node id), when it has them. */
export function hoursOf(p: { schedule?: ScheduleWindow[]; timeZone?: string; turnover?: string }): {
  schedule?: ScheduleWindow[];
  timeZone?: string;
  turnover?: string;
} {
  return {
    ...(p.schedule !== undefined ? { schedule: p.schedule.map((w) => ({ ...w, days: [...w.days] })) } : {}),
    ...(p.timeZone !== undefined ? { timeZone: p.timeZone } : {}),
    ...(p.turnover !== undefined ? { turnover: p.turnover } : {}),
  };
}

// ---- codes ---------------------------------------------------------------------------------

/**
 * A code of `length` random digits (node:crypto), never beginning with 0: a code a keypad or a
 * number pad sends as a number loses no digit (docs/passes.md#issue).
 */
export function newCode(length: number): string {
  let s = String(1 + randomInt(9));
  for (let i = 1; i < length; i++) s += String(randomInt(10));
  return s;
}

export function newPassId(): string {
  return `pass-${randomBytes(6).toString("hex")}`;
}

/** The keyed hash a pass keeps of its code. */
export function codeHash(key: Buffer, code: string): string {
  return createHmac("sha256", key).update(`door-access pass v1\0${code}`).digest("hex");
}

/**
 * msg.pass as a code: a string of 6 to 12 digits, or a whole number (a number pad's value, whose
 * leading zeros are lost: it is read with up to 12 digits as it is). null: not a code at all.
 */
export function readCode(value: unknown): string | null {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) value = String(value);
  if (typeof value !== "string") return null;
  const s = value.trim();
  return /^[0-9]{1,12}$/.test(s) ? s : null;
}

// The checks of an issue request (docs/passes.md#issue) are in issue-request.ts.
export { type IssueRequest, checkIssue } from "./issue-request.js";
