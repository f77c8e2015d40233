/**
 * The weekly schedule engine: windows `{ days, from, to }` read and checked as a door-unlock's
 * rules and a guest pass's hours both take them, compiled for a quick test
 * (docs/access-rules.md#schedule), the runtime's zone when none is named, the wall clock of a zone
 * read through Intl (docs/access-rules.md#time-zone-and-daylight-saving), and when a schedule
 * next opens (docs/passes.md#at-a-door-unlock). A `LocalClock` caches the zone's offset from UTC
 * over an hour it has checked at both ends, so a node with many messages rarely calls Intl. Pure
 * time arithmetic: no rule state, no Node-RED, nothing of Node.js (the editor bundles it).
 */

import { clip } from "./text.js";

/** One window of the weekly schedule, as given (days sorted, without repeats). */
export interface ScheduleWindow {
  /** ISO weekdays the window starts on: 1 = Monday ... 7 = Sunday. */
  readonly days: readonly number[];
  /** "HH:MM", 00:00 to 23:59. */
  readonly from: string;
  /** "HH:MM"; "00:00" (or "24:00") is the end of the day; earlier than `from` runs into the next day. */
  readonly to: string;
}

/** A weekday (1 = Monday ... 7 = Sunday) and a minute of the day (0..1439) on a zone's wall clock. */
export interface LocalTime {
  day: number;
  minute: number;
}

export interface CompiledWindow {
  mask: number; // bit d set for ISO weekday d
  prevMask: number; // bit d set when the window started the day before d (overnight part)
  from: number; // minute of the day, 0..1439
  to: number; // minute of the day, 1..1440 (1440 = end of the day)
  overnight: boolean;
}

/**
 * How long an offset from UTC read at both ends is taken as the zone's offset in between: no zone
 * changes its offset twice within an hour, so equal offsets an hour apart mean no change between.
 */
const OFFSET_SPAN_MS = 60 * 60_000;

const DAY_NAMES = ["", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] as const;

function minutes(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/** A window as bit masks of its days and minutes of the day. */
export function compileWindow(w: ScheduleWindow): CompiledWindow {
  const from = minutes(w.from);
  const to = w.to === "00:00" || w.to === "24:00" ? 1440 : minutes(w.to);
  let mask = 0;
  for (const d of w.days) mask |= 1 << d;
  let prevMask = 0;
  for (const d of w.days) prevMask |= 1 << (d === 7 ? 1 : d + 1);
  return { mask, prevMask, from, to, overnight: to < from };
}

/** Whether the local (day, minute) falls in one of the windows (docs/access-rules.md#schedule). */
export function inAnyWindow(windows: readonly CompiledWindow[], day: number, minute: number): boolean {
  const bit = 1 << day;
  for (const w of windows) {
    if (!w.overnight) {
      if ((w.mask & bit) !== 0 && minute >= w.from && minute < w.to) return true;
    } else if (((w.mask & bit) !== 0 && minute >= w.from) || ((w.prevMask & bit) !== 0 && minute < w.to)) {
      return true;
    }
  }
  return false;
}

/** The weekday and minute of the day of `now` as `formatter` (en-US, weekday, hour and minute, h23) shows it. */
export function readWallClock(formatter: Intl.DateTimeFormat, timeZone: string, now: number): LocalTime {
  let day = 0;
  let hour = 0;
  let minute = 0;
  for (const part of formatter.formatToParts(now)) {
    if (part.type === "weekday") day = DAY_NAMES.indexOf(part.value as (typeof DAY_NAMES)[number]);
    else if (part.type === "hour") hour = Number(part.value) % 24;
    else if (part.type === "minute") minute = Number(part.value);
  }
  if (day < 1) throw new Error(`the time zone ${timeZone} gave no weekday`); // never with en-US
  return { day, minute: hour * 60 + minute };
}

/** "Mon 09:05": a local day and minute, for a refusal's text. */
export function formatLocal(day: number, minute: number): string {
  return `${DAY_NAMES[day]} ${pad(Math.floor(minute / 60))}:${pad(minute % 60)}`;
}

/**
 * The runtime's zone, as Node.js sees it now (TZ, else the system's), under its canonical name;
 * "UTC" when Intl names none ("Etc/Unknown" for a TZ set but empty, nothing for an unknown one)
 * and the runtime's dates are in UTC all year, as they then are; null when Intl names none but
 * the runtime's dates follow some zone all the same (TZ as a file path).
 */
export function runtimeZone(): string | null {
  const name = new Intl.DateTimeFormat("en-US").resolvedOptions().timeZone;
  try {
    if (name) return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    /* a name Intl gives but does not take ("Etc/Unknown") */
  }
  const year = new Date().getFullYear();
  const utcAllYear = new Date(year, 0, 1).getTimezoneOffset() === 0 && new Date(year, 6, 1).getTimezoneOffset() === 0;
  return utcAllYear ? "UTC" : null;
}

/**
 * One node's view of a zone's wall clock: `read` (Intl) behind a cache of the local time for one
 * UTC second (offsets are whole seconds) and of the zone's offset over an hour checked at both
 * ends (OFFSET_SPAN_MS).
 */
export class LocalClock {
  private readonly read: (now: number) => LocalTime;
  private cachedSecond = Number.NaN;
  private cachedDay = 0;
  private cachedMinute = 0;
  /** The zone's offset from UTC in minutes, known over [offsetFrom, offsetUntil) (OFFSET_SPAN_MS). */
  private offset = 0;
  private offsetFrom = Number.POSITIVE_INFINITY;
  private offsetUntil = Number.NEGATIVE_INFINITY;
  /** When the local time was last read through Intl. */
  private lastRead = Number.NEGATIVE_INFINITY;

  constructor(read: (now: number) => LocalTime) {
    this.read = read;
  }

  /** The weekday and minute of the day of `now` on the zone's wall clock. */
  at(now: number): LocalTime {
    const second = Math.floor(now / 1000);
    if (second !== this.cachedSecond) {
      let t: LocalTime;
      if (now >= this.offsetFrom && now < this.offsetUntil) {
        t = shifted(now, this.offset);
      } else {
        t = this.read(now);
        // A node whose messages come within the hour also reads the offset an hour ahead: the
        // same offset at both ends means none changed between (OFFSET_SPAN_MS), and the local
        // time of that hour is then worked out without Intl. A node with one message now and
        // then reads Intl once per message, as without the cache.
        if (now - this.lastRead < OFFSET_SPAN_MS && now >= this.lastRead) {
          const offset = offsetOf(now, t);
          const ahead = now + OFFSET_SPAN_MS;
          if (offsetOf(ahead, this.read(ahead)) === offset) {
            this.offset = offset;
            this.offsetFrom = now;
            this.offsetUntil = ahead;
          }
        }
        this.lastRead = now;
      }
      this.cachedSecond = second;
      this.cachedDay = t.day;
      this.cachedMinute = t.minute;
    }
    return { day: this.cachedDay, minute: this.cachedMinute };
  }
}

const mod = (a: number, n: number): number => ((a % n) + n) % n;

/** ISO weekday (1..7) and minute of the day of `now` shifted by `offset` minutes. */
function shifted(now: number, offset: number): LocalTime {
  const m = Math.floor(now / 60_000) + offset;
  // 1970-01-01, day 0, was a Thursday (ISO 4).
  return { day: mod(Math.floor(m / 1440) + 3, 7) + 1, minute: mod(m, 1440) };
}

/** The offset from UTC, in minutes, of a zone whose wall clock reads `local` at `now`. */
function offsetOf(now: number, local: LocalTime): number {
  const utc = shifted(now, 0);
  const week = 7 * 1440;
  return mod((local.day - utc.day) * 1440 + (local.minute - utc.minute) + week / 2, week) - week / 2;
}

function pad(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

// ---- reading a schedule and its zone ---------------------------------------------------------

/** A problem of a schedule or its zone: the field, the key of the dialog's fixed text, the words. */
export interface ScheduleProblem {
  field: "schedule" | "timeZone";
  key: "schedule" | "schedule-days" | "schedule-times" | "schedule-length" | "time-zone";
  text: string;
}

const HHMM = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;

/** Whether `value` is a time of day "HH:MM" from 00:00 to 23:59, as a window's from (and to, but for "24:00") is read. */
export function isTimeOfDay(value: unknown): boolean {
  return typeof value === "string" && HHMM.test(value);
}

/**
 * A schedule as given (a list of `{ days, from, to }`), each window checked; every problem told to
 * `found` (docs/access-rules.md#schedule). Nothing, null or "" is no schedule.
 */
export function readSchedule(value: unknown, found: (p: ScheduleProblem) => void): ScheduleWindow[] {
  const problem = (key: ScheduleProblem["key"], text: string): void => found({ field: "schedule", key, text });
  if (value === undefined || value === null || value === "") return [];
  if (!Array.isArray(value)) {
    problem("schedule", `schedule must be a list of windows, got ${typeOf(value)}`);
    return [];
  }
  const out: ScheduleWindow[] = [];
  value.forEach((w: unknown, i: number) => {
    const at = `schedule window ${i + 1}`;
    if (typeof w !== "object" || w === null || Array.isArray(w)) {
      problem("schedule", `${at} must be an object { days, from, to }, got ${typeOf(w)}`);
      return;
    }
    const { days, from, to } = w as { days?: unknown; from?: unknown; to?: unknown };
    let ok = true;
    let dayList: number[] = [];
    if (!Array.isArray(days) || days.length === 0) {
      problem("schedule-days", `${at} needs at least one day (1 = Monday ... 7 = Sunday)`);
      ok = false;
    } else {
      const isDay = (d: unknown) => typeof d === "number" && Number.isInteger(d) && d >= 1 && d <= 7;
      const bad = days.filter((d: unknown) => !isDay(d));
      if (bad.length > 0) {
        const shown = bad.map((d: unknown) => shortText(d)).join(", ");
        problem("schedule-days", `${at} has a day outside 1..7 (1 = Monday ... 7 = Sunday): ${shown}`);
        ok = false;
      } else dayList = [...new Set(days as number[])].sort((a, b) => a - b);
    }
    const f = typeof from === "string" ? HHMM.exec(from) : null;
    if (!f) {
      problem("schedule-times", `${at}: from must be a time "HH:MM" between 00:00 and 23:59, got ${shortText(from)}`);
      ok = false;
    }
    const t = typeof to === "string" ? (to === "24:00" ? HHMM.exec("00:00") : HHMM.exec(to)) : null;
    if (!t) {
      problem(
        "schedule-times",
        `${at}: to must be a time "HH:MM" between 00:00 and 23:59 (00:00 = midnight at the end of the day), ` +
          `got ${shortText(to)}`,
      );
      ok = false;
    }
    if (f && t && from === to && from !== "00:00") {
      problem(
        "schedule-length",
        `${at} starts and ends at ${from as string}: a window must have a length (00:00 to 00:00 is the whole day)`,
      );
      ok = false;
    }
    if (ok) out.push(Object.freeze({ days: Object.freeze(dayList), from: from as string, to: to as string }));
  });
  return out;
}

/**
 * A zone as given, under the name Node.js gives it (docs/access-rules.md#time-zone-and-daylight-saving):
 * nothing is the runtime's zone; null when the value is no zone (told to `found`). `forSchedule`:
 * a schedule is read in it, so a runtime's zone Intl cannot name is a problem.
 */
export function readZone(value: unknown, found: (p: ScheduleProblem) => void, forSchedule: boolean): string | null {
  const problem = (text: string): void => found({ field: "timeZone", key: "time-zone", text });
  if (value === undefined || value === null || value === "") {
    const runtime = runtimeZone();
    if (runtime !== null) return runtime;
    // The runtime's dates follow a zone Intl cannot name (TZ as a file, e.g. TZ=:/etc/localtime):
    // a schedule read in any other zone would open at the wrong hours.
    if (forSchedule) {
      problem(
        "the runtime's time zone has no name this Node.js knows (is TZ a file path, such as :/etc/localtime?), " +
          "so the schedule cannot be read in it: choose the node's time zone",
      );
    }
    return "UTC"; // only the lockout's "until" clock reads it then
  }
  if (typeof value !== "string") {
    problem(`timeZone must be an IANA zone name such as Europe/Oslo, got ${typeOf(value)}`);
    return null;
  }
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: value }).resolvedOptions().timeZone;
  } catch {
    problem(
      `timeZone "${clip(value, 60, "…")}" is not a time zone this Node.js knows (an IANA name such as Europe/Oslo)`,
    );
    return null;
  }
}

export function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** A value for an error text (never called with a PIN). */
export function shortText(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(clip(v, 40, "…"));
  if (typeof v === "number" || typeof v === "boolean" || v === null || v === undefined) return String(v);
  return typeOf(v);
}

// ---- when a schedule next opens -------------------------------------------------------------

const WEEK_MIN = 7 * 1440;

/** Formatters by zone: making one costs far more than using it (a zone this Node.js lacks throws, and is not kept). */
const wallFormats = new Map<string, Intl.DateTimeFormat>();
const dateFormats = new Map<string, Intl.DateTimeFormat>();

/** A reader of a zone's wall clock through Intl (weekday, hour and minute, h23), for `readWallClock`; one per zone. */
export function wallClockFormat(timeZone: string): Intl.DateTimeFormat {
  let f = wallFormats.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      weekday: "short",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    wallFormats.set(timeZone, f);
  }
  return f;
}

/** Minutes on the wall clock from `local` to the next start of a window (1 .. a week). */
function minutesToNextStart(windows: readonly CompiledWindow[], local: LocalTime): number {
  const at = (local.day - 1) * 1440 + local.minute;
  let best = WEEK_MIN;
  for (const w of windows)
    for (let d = 1; d <= 7; d++) {
      if ((w.mask & (1 << d)) === 0) continue;
      const ahead = mod((d - 1) * 1440 + w.from - at, WEEK_MIN);
      if (ahead > 0 && ahead < best) best = ahead;
    }
  return best;
}

/**
 * The first instant in [start, end) at which the wall clock of a zone (`read`) is inside one of
 * `windows`, or null. The wall clock runs on minute by minute except where the zone's offset
 * changes, so a window opens at its `from`, or at a change of offset that jumps into it: on the
 * night the clocks go forward a window running across the skipped hour opens when the clock
 * shows the first minute after it, and one wholly inside the skipped hour does not open that
 * night (docs/access-rules.md#time-zone-and-daylight-saving). No zone changes its offset twice
 * within a week.
 */
export function nextOpening(
  windows: readonly CompiledWindow[],
  read: (now: number) => LocalTime,
  start: number,
  end: number,
): number | null {
  if (windows.length === 0) return start < end ? start : null;
  let t = start;
  // Each step reaches a window's start or a change of offset: a few steps find the next opening.
  for (let step = 0; step < 16 && t < end; step++) {
    const local = read(t);
    if (inAnyWindow(windows, local.day, local.minute)) return t;
    const minute = Math.floor(t / 60_000) * 60_000; // offsets are whole minutes: the wall clock's minute starts here too
    let next = minute + minutesToNextStart(windows, local) * 60_000;
    const offset = offsetOf(t, local);
    if (offsetOf(next, read(next)) !== offset) next = offsetChange(read, minute, next, offset);
    t = next;
  }
  return null;
}

/** The first whole minute in (lo, hi] whose offset from UTC is not `offset` (the one at lo); hi's is not. */
function offsetChange(read: (now: number) => LocalTime, lo: number, hi: number, offset: number): number {
  let a = lo / 60_000;
  let b = hi / 60_000;
  while (b - a > 1) {
    const m = Math.floor((a + b) / 2);
    if (offsetOf(m * 60_000, read(m * 60_000)) === offset) a = m;
    else b = m;
  }
  return b * 60_000;
}

const DAY_LONG = ["", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"] as const;

/**
 * "Tuesday 08:00" (within the coming seven days, or the past six), else "Tuesday 15 December
 * 08:00": `at` on the wall clock of `timeZone`, for a text a person reads (never ISO UTC).
 */
export function formatOpening(at: number, now: number, timeZone: string): string {
  const local = readWallClock(wallClockFormat(timeZone), timeZone, at);
  const time = `${DAY_LONG[local.day]} ${pad(Math.floor(local.minute / 60))}:${pad(local.minute % 60)}`;
  if (at - now < 7 * 24 * 3600_000 && now - at < 6 * 24 * 3600_000) return time;
  let dates = dateFormats.get(timeZone);
  if (dates === undefined) {
    dates = new Intl.DateTimeFormat("en-GB", { timeZone, day: "numeric", month: "long" });
    dateFormats.set(timeZone, dates);
  }
  const date = dates.format(at);
  return time.replace(" ", ` ${date} `);
}
