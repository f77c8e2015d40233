/**
 * The schedule's time: the weekly windows compiled for a quick test (docs/access-rules.md#schedule),
 * the runtime's zone when the node names none, and the wall clock of a zone read through Intl
 * (docs/access-rules.md#time-zone-and-daylight-saving). A node's `LocalClock` caches the zone's
 * offset from UTC over an hour it has checked at both ends, so a node with many messages rarely
 * calls Intl. Pure time arithmetic: no rule state, no Node-RED.
 */

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
