/**
 * A booking calendar as passes (docs/passes.md#from-a-booking-calendar): the door-pass node's
 * calendar settings, checked; an iCalendar feed read into bookings (ical.js parses it: folded
 * lines, time zones, recurrence and its exceptions are not ours to write), each booking's window
 * from its start date at check-in to its end date at check-out in the node's zone, widened by
 * the buffers. Pure and synchronous: the node reads a feed in a worker thread
 * (calendar-worker.ts), never on Node-RED's event loop.
 */
import ICAL from "ical.js";
import { isoTimeExists } from "../util/iso-time.js";
import { clip, controlCharsAsSpaces } from "../util/text.js";
import { type CalendarSettings, DEFAULT_BLOCKED, PLACEHOLDERS, matchKey } from "./calendar-settings.js";
import type { BookingInfo } from "./pass.js";

export { type CalendarSettings, checkCalendarSettings } from "./calendar-settings.js";

/** How far ahead a recurring booking is expanded, and how many occurrences of one at most. */
export const RECUR_HORIZON_MS = 400 * 24 * 3600_000;
export const MAX_OCCURRENCES = 500;
/**
 * Occurrences over before now that a feed's recurring events may step through, all together: a
 * series that began long ago is stepped through from its start (its rule is anchored there). A
 * feed past this is not read (it changes nothing), rather than lose the series' coming visits.
 */
export const MAX_PAST_OCCURRENCES = 50_000;
/** More bookings than this in one feed are not applied (a feed gone wrong). */
export const MAX_BOOKINGS = 20_000;

export type { BookingInfo };

const DAY_MS = 24 * 3600_000;

/** One booking of the feed: a pass's ref, guest and window. */
export interface Booking {
  ref: string;
  guest: string;
  from: string;
  until: string;
  /** What the feed told of the booking (readFeed always gives it). */
  booking?: BookingInfo;
}

/** `blocked`: events skipped as blocked time (never a booking). */
export type FeedRead =
  { ok: true; bookings: Booking[]; skipped: number; blocked: number } | { ok: false; problem: string };

/** The zone's offset from UTC at `at` (ms). */
function offsetAt(at: number, fmt: Intl.DateTimeFormat): number {
  const p: Record<string, number> = {};
  for (const part of fmt.formatToParts(new Date(at))) if (part.type !== "literal") p[part.type] = Number(part.value);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second) - Math.floor(at / 1000) * 1000;
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone (making one costs far more than using it). */
function zoneFormat(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (f === undefined) {
    f = makeFormat(zone);
    if (formats.size > 100) formats.clear();
    formats.set(zone, f);
  }
  return f;
}

function makeFormat(zone: string): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  });
}

/**
 * The instant of a wall-clock time in a zone, as iCalendar reads one (RFC 5545, 3.3.5): a time the
 * clocks skip (a spring-forward night) is read with the offset before the change, so it lands as
 * far after the gap as it was into it (02:30 in New York is 03:30 EDT); a time that happens twice
 * (a fall-back night) is the first of the two (01:30 EDT). docs/passes.md#from-a-booking-calendar.
 */
export function localInstant(y: number, m: number, d: number, hhmm: string, zone: string): number {
  const [hh, mm] = hhmm.split(":").map(Number);
  const fmt = zoneFormat(zone);
  const wall = Date.UTC(y, m - 1, d, hh, mm);
  // A day before and after: offsets on both sides of any change that night (none changes twice in two days).
  const early = wall - offsetAt(wall - DAY_MS, fmt);
  const late = wall - offsetAt(wall + DAY_MS, fmt);
  const shows = (t: number) => t + offsetAt(t, fmt) === wall;
  if (shows(early) && shows(late)) return Math.min(early, late);
  if (shows(late)) return late;
  return early; // it exists with the earlier offset, or not at all (the gap): read with the offset before the change
}

/** The date a booking's start or end names: as written for a date or a zoned time; in `zone` for a UTC time. */
function dateOf(t: ICAL.Time, zone: string): { y: number; m: number; d: number } {
  if (!t.isDate && t.zone === ICAL.Timezone.utcTimezone) {
    const fmt = zoneFormat(zone);
    const p: Record<string, number> = {};
    for (const part of fmt.formatToParts(t.toJSDate())) if (part.type !== "literal") p[part.type] = Number(part.value);
    return { y: p.year, m: p.month, d: p.day };
  }
  return { y: t.year, m: t.month, d: t.day };
}

function validZone(zone: unknown): zone is string {
  if (typeof zone !== "string" || zone === "" || zone === "floating") return false;
  try {
    zoneFormat(zone);
    return true;
  } catch {
    return false;
  }
}

/** The instant of a start or end time: UTC as it is; a zoned time in its TZID (an IANA name); a floating one in the node's zone. */
function instantOf(t: ICAL.Time, zone: string): number {
  if (t.zone === ICAL.Timezone.utcTimezone) return t.toJSDate().getTime();
  // The TZID a time was written with (ical.js keeps it without a VTIMEZONE; its types do not name it).
  const written = (t as unknown as { timezone?: unknown }).timezone;
  const tz = validZone(written) ? written : zone;
  const hhmm = `${String(t.hour).padStart(2, "0")}:${String(t.minute).padStart(2, "0")}`;
  return localInstant(t.year, t.month, t.day, hhmm, tz) + t.second * 1000;
}

function windowOf(start: ICAL.Time, end: ICAL.Time, s: CalendarSettings): { from: number; until: number } | null {
  const a = dateOf(start, s.timeZone);
  const b = dateOf(end, s.timeZone);
  let from = localInstant(a.y, a.m, a.d, s.checkIn, s.timeZone);
  let until = localInstant(b.y, b.m, b.d, s.checkOut, s.timeZone);
  if (!(until > from) && !start.isDate) {
    // A few hours on one day (a cleaner's visit): its own times.
    from = instantOf(start, s.timeZone);
    until = instantOf(end, s.timeZone);
  }
  from -= s.bufferBeforeMin * 60_000;
  until += s.bufferAfterMin * 60_000;
  return until > from && Number.isFinite(from) && Number.isFinite(until) ? { from, until } : null;
}

const DATE_PROPS = new Set(["dtstart", "dtend", "recurrence-id", "rdate", "exdate"]);

/** Whether a value of a date property exists: a date or date-time does; a duration (a period's end) is not a date. */
function valueExists(v: unknown): boolean {
  if (Array.isArray(v)) return v.every(valueExists); // a period: [start, end or duration]
  if (typeof v !== "string" || !/^\d/.test(v)) return true;
  return isoTimeExists(v);
}

/**
 * Whether the event's start, end, recurrence id, extra and excluded dates (RDATE, EXDATE, every
 * value of each) and its repeat's end (RRULE UNTIL) name dates and times that exist (ical.js would
 * move 30 February to 2 March). Read from the parsed properties as written (jCal), without making
 * ical.js's property objects.
 */
function datesExist(c: ICAL.Component): boolean {
  const props = (c.jCal as unknown[])[1];
  if (!Array.isArray(props)) return true;
  for (const p of props as unknown[][]) {
    if (!Array.isArray(p)) continue;
    if (DATE_PROPS.has(p[0] as string) && !p.slice(3).every(valueExists)) return false;
    if (
      p[0] === "rrule" &&
      typeof p[3] === "object" &&
      p[3] !== null &&
      !valueExists((p[3] as { until?: unknown }).until)
    )
      return false;
  }
  return true;
}

/** A feed's text on one line (control characters as spaces), trimmed and clipped. */
function clean(v: unknown, max: number): string {
  return typeof v === "string" ? clip(controlCharsAsSpaces(v).trim(), max) : "";
}

// A platform's marker of blocked time that the host made a booking (removed from the node's list)
// names no guest either: Booking.com writes "CLOSED - Not available" for every booked date.
const PLACEHOLDER_KEYS = new Set([...PLACEHOLDERS, ...DEFAULT_BLOCKED].map(matchKey));
const PHONE_LAST4 = /Phone Number \(Last 4 Digits\):[ \t]*(\d{4})(?!\d)/i;
const RESERVATION_URL = /Reservation URL:[ \t]*(https:\/\/[^\s<>"]{1,300})/i;

/** The feed's summary and the details its description gives (Airbnb's lines). */
function infoOf(item: ICAL.Event): BookingInfo {
  const description = item.description;
  const d = typeof description === "string" ? description.slice(0, 20_000) : "";
  const phone = PHONE_LAST4.exec(d);
  const link = RESERVATION_URL.exec(d);
  let url: string | null = null;
  if (link) {
    try {
      url = new URL(link[1]).href;
    } catch {
      url = null;
    }
  }
  return { summary: clean(item.summary, 100), phoneLast4: phone ? phone[1] : null, url };
}

/** The guest: the summary, unless it is a placeholder ("Reserved"): then the host's name for a guest, and the phone's last 4 digits. */
function guestOf(info: BookingInfo, s: CalendarSettings): string {
  if (info.summary !== "" && !PLACEHOLDER_KEYS.has(matchKey(info.summary))) return info.summary;
  const base = s.placeholderGuest || "Guest";
  return clip(info.phoneLast4 !== null ? `${base} ${info.phoneLast4}` : base, 100);
}

/** An event that marks blocked time (its summary one of the node's markers): no booking. */
function isBlocked(item: ICAL.Event, s: CalendarSettings): boolean {
  const blocked = s.blocked ?? DEFAULT_KEYS;
  return blocked.length > 0 && typeof item.summary === "string" && blocked.includes(matchKey(item.summary));
}
const DEFAULT_KEYS = DEFAULT_BLOCKED.map(matchKey);

/** An event's version: its SEQUENCE, then its DTSTAMP (else LAST-MODIFIED) in seconds. */
function versionOf(c: ICAL.Component): [number, number] {
  const seq = Number(c.getFirstPropertyValue("sequence"));
  const stamp = c.getFirstPropertyValue("dtstamp") ?? c.getFirstPropertyValue("last-modified");
  const at = stamp instanceof ICAL.Time ? stamp.toUnixTime() : 0;
  return [Number.isFinite(seq) ? seq : 0, Number.isFinite(at) ? at : 0];
}

/**
 * Whether event `b` replaces event `a` of the same UID (RFC 5545: the higher SEQUENCE, then the
 * later DTSTAMP); two alike: the cancelled one, so a feed's order never opens a door, else the
 * same one whatever the order.
 */
function replaces(b: ICAL.Component, a: ICAL.Component): boolean {
  const [sa, ta] = versionOf(a);
  const [sb, tb] = versionOf(b);
  if (sb !== sa) return sb > sa;
  if (tb !== ta) return tb > ta;
  const cancelled = (c: ICAL.Component) =>
    String(c.getFirstPropertyValue("status") ?? "").toUpperCase() === "CANCELLED";
  if (cancelled(a) !== cancelled(b)) return cancelled(b);
  return b.toString() > a.toString(); // still alike: one of them, the same whatever the order
}

/**
 * Reads a feed's text into bookings: every event not cancelled, each occurrence of a recurring one
 * from a day ago to RECUR_HORIZON_MS ahead (its exceptions applied), ending after `now`.
 */
export function readFeed(text: string, s: CalendarSettings, now: number): FeedRead {
  let root: ICAL.Component;
  try {
    const parsed: unknown = ICAL.parse(text);
    if (!Array.isArray(parsed)) return { ok: false, problem: "not an iCalendar feed" };
    root = new ICAL.Component(parsed as unknown[]);
  } catch (e) {
    return { ok: false, problem: `not an iCalendar feed (${(e as Error).message.slice(0, 120)})` };
  }
  if (root.name !== "vcalendar") return { ok: false, problem: "not an iCalendar feed (no VCALENDAR)" };
  const masters = new Map<string, ICAL.Event>();
  const exceptions: ICAL.Component[] = [];
  let noUid = 0;
  for (const v of root.getAllSubcomponents("vevent")) {
    if (v.hasProperty("recurrence-id")) exceptions.push(v);
    else {
      const uid = v.getFirstPropertyValue("uid");
      // Its exceptions are related below: without `exceptions`, ical.js would search the whole
      // calendar for them once per event (10,000 bookings: seconds). A UID listed twice is read as
      // its latest version, whatever the order of the feed.
      if (typeof uid === "string" && uid !== "") {
        const was = masters.get(uid);
        if (was === undefined || replaces(v, was.component)) masters.set(uid, new ICAL.Event(v, { exceptions: [] }));
      } else noUid++; // no pass can follow it from read to read: skipped, and the host told
    }
  }
  for (const x of exceptions) {
    const m = masters.get(String(x.getFirstPropertyValue("uid")));
    if (m) m.relateException(x);
  }
  const bookings: Booking[] = [];
  let skipped = noUid;
  let blocked = 0;
  const horizon = now + RECUR_HORIZON_MS;
  let past = 0;
  const cancelled = (c: ICAL.Component) =>
    String(c.getFirstPropertyValue("status") ?? "").toUpperCase() === "CANCELLED";
  for (const [uid, ev] of masters) {
    const mark = bookings.length;
    try {
      if (bookings.length > MAX_BOOKINGS) return { ok: false, problem: `more than ${MAX_BOOKINGS} bookings` };
      if (cancelled(ev.component)) continue;
      if (!ev.isRecurring() && isBlocked(ev, s)) {
        blocked++;
        continue;
      }
      if (!ev.startDate || !datesExist(ev.component)) {
        skipped++;
        continue;
      }
      if (!ev.isRecurring()) {
        const w = windowOf(ev.startDate, ev.endDate ?? ev.startDate, s);
        if (w === null) skipped++;
        else if (w.until > now) {
          const info = infoOf(ev);
          bookings.push({ ref: uid, guest: guestOf(info, s), from: iso(w.from), until: iso(w.until), booking: info });
        }
        continue;
      }
      const it = ev.iterator();
      // MAX_OCCURRENCES to come; the ones over before now are counted apart (MAX_PAST_OCCURRENCES).
      for (let i = 0; i < MAX_OCCURRENCES;) {
        const next = it.next();
        if (!next) break;
        if (instantOf(next, s.timeZone) > horizon) break;
        const o: Occurrence = ev.getOccurrenceDetails(next);
        if (cancelled(o.item.component)) continue;
        if (isBlocked(o.item, s)) {
          blocked++;
          continue;
        }
        const w = datesExist(o.item.component) ? windowOf(o.startDate, o.endDate, s) : null;
        if (w !== null && w.until <= now) {
          if (++past > MAX_PAST_OCCURRENCES)
            return { ok: false, problem: `recurring events going back more than ${MAX_PAST_OCCURRENCES} occurrences` };
          continue;
        }
        i++;
        if (w === null) {
          skipped++;
          continue;
        }
        const info = infoOf(o.item);
        bookings.push({
          ref: `${uid}@${o.recurrenceId.toString()}`,
          guest: guestOf(info, s),
          from: iso(w.from),
          until: iso(w.until),
          booking: info,
        });
        // Counted with every occurrence: one recurring event adds up to MAX_OCCURRENCES.
        if (bookings.length > MAX_BOOKINGS) return { ok: false, problem: `more than ${MAX_BOOKINGS} bookings` };
      }
    } catch {
      // An event ical.js cannot expand (an RDATE given as a PERIOD): no booking, the rest of the feed is read.
      bookings.length = mark;
      skipped++;
    }
  }
  return { ok: true, bookings, skipped, blocked };
}

const iso = (ms: number) => new Date(ms).toISOString();

/** What ical.js tells of one occurrence (its types leave it unnamed). */
interface Occurrence {
  recurrenceId: ICAL.Time;
  item: ICAL.Event;
  startDate: ICAL.Time;
  endDate: ICAL.Time;
}
