/**
 * A door-pass node's booking calendar settings, checked (docs/passes.md#from-a-booking-calendar):
 * shared by the runtime (calendar.ts) and the door-pass dialog, which bundles this file.
 */
import { isLoopbackHost } from "../util/loopback.js";

export interface CalendarSettings {
  url: string;
  everyMinutes: number;
  /** "HH:MM" */
  checkIn: string;
  checkOut: string;
  /** IANA zone the dates are read in. */
  timeZone: string;
  bufferBeforeMin: number;
  bufferAfterMin: number;
  /** Summaries of events that mark blocked time, as matchKey() makes them: such events are no booking. Absent: the defaults. */
  blocked?: string[];
  /** The guest of a booking whose summary is a platform's placeholder ("Reserved"), before the phone's last 4 digits. Absent: "Guest". */
  placeholderGuest?: string;
}

/**
 * What the big platforms write for time the host blocked or another channel took
 * (docs/passes.md#blocked-time-and-placeholder-names): Airbnb, Booking.com, other channel managers.
 */
export const DEFAULT_BLOCKED = [
  "Airbnb (Not available)",
  "CLOSED - Not available",
  "Blocked",
  "Not available",
  "Unavailable",
];
/** Summaries that name no guest: Airbnb's "Reserved", other channel managers' words. */
export const PLACEHOLDERS = ["Reserved", "Reservation", "Booked"];
export const MAX_BLOCKED = 50;

/** A summary as it is compared with the markers: whole, case ignored, spaces at either end and runs of spaces ignored. */
export function matchKey(summary: string): string {
  return summary.trim().replace(/\s+/g, " ").toLowerCase();
}

/** The node's list of blocked-time markers: one a line (a string, as the dialog stores it) or an array; absent: the defaults. */
export function blockedList(v: unknown, problems: string[] = []): string[] {
  if (v === undefined || v === null) return DEFAULT_BLOCKED.map(matchKey);
  const raw: unknown[] = Array.isArray(v) ? (v as unknown[]) : typeof v === "string" ? v.split(/\r?\n/) : [v];
  const out: string[] = [];
  for (const x of raw) {
    if (typeof x !== "string") {
      problems.push("blocked: one summary a line (text)");
      continue;
    }
    const k = matchKey(x);
    if (k === "") continue;
    if (k.length > 200) problems.push("blocked: at most 200 characters a line");
    else if (!out.includes(k)) out.push(k);
  }
  if (out.length > MAX_BLOCKED) problems.push(`blocked: at most ${MAX_BLOCKED} summaries`);
  return out;
}

/**
 * A feed's address as it is fetched: `webcal://` (and `webcals://`), as calendar apps and booking
 * platforms offer a subscription, is read as `https://` (docs/passes.md#from-a-booking-calendar).
 * Throws as `new URL` does on text that is no URL.
 */
export function feedUrl(raw: string): URL {
  const m = /^webcals?:\/\//i.exec(raw.trim());
  return new URL(m ? `https://${raw.trim().slice(m[0].length)}` : raw.trim());
}

/**
 * The doors a calendar's passes open, as a door-pass node stores them: a list of device ids (the
 * dialog's door picker) or door names, or the comma-separated text of a node written by hand.
 */
export function calendarDoors(v: unknown): (number | string)[] {
  const list: unknown[] = Array.isArray(v) ? (v as unknown[]) : typeof v === "string" ? v.split(",") : [];
  return list
    .map((d) => (typeof d === "string" ? d.trim() : d))
    .filter(
      (d): d is number | string =>
        (typeof d === "number" && Number.isInteger(d)) || (typeof d === "string" && d !== ""),
    )
    .map((d) => (typeof d === "string" && /^\d{1,10}$/.test(d) ? Number(d) : d));
}

const HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/;

function minutes(v: unknown, dflt: number, name: string, problems: string[]): number {
  if (v === undefined || v === null || v === "") return dflt;
  const n = typeof v === "string" && /^\d+$/.test(v.trim()) ? Number(v) : v;
  if (typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= 7 * 24 * 60) return n;
  problems.push(`${name}: whole minutes from 0 to ${7 * 24 * 60}`);
  return dflt;
}

/** The node's calendar settings, or the problems naming each field; null when no calendar is set. */
export function checkCalendarSettings(
  c: Record<string, unknown>,
  runtimeZone = Intl.DateTimeFormat().resolvedOptions().timeZone,
): { ok: true; settings: CalendarSettings | null } | { ok: false; problems: string[] } {
  const raw = typeof c.calendarUrl === "string" ? c.calendarUrl.trim() : "";
  if (raw === "") return { ok: true, settings: null };
  const problems: string[] = [];
  let url: URL | null = null;
  try {
    url = feedUrl(raw);
  } catch {
    problems.push("calendarUrl: not a URL");
  }
  if (url !== null) {
    if (url.username || url.password) problems.push("calendarUrl: no user or password in the URL");
    else if (!(url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname))))
      problems.push("calendarUrl: https://, or http:// on this machine (loopback) only");
  }
  const every = minutes(c.calendarEvery, 15, "calendarEvery", problems);
  if (every < 5) problems.push("calendarEvery: at least 5 minutes");
  const checkIn = typeof c.checkIn === "string" && c.checkIn.trim() !== "" ? c.checkIn.trim() : "15:00";
  const checkOut = typeof c.checkOut === "string" && c.checkOut.trim() !== "" ? c.checkOut.trim() : "11:00";
  if (!HHMM.test(checkIn)) problems.push('checkIn: a time "HH:MM" (24 hours)');
  if (!HHMM.test(checkOut)) problems.push('checkOut: a time "HH:MM" (24 hours)');
  const zone = typeof c.timeZone === "string" && c.timeZone.trim() !== "" ? c.timeZone.trim() : runtimeZone;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
  } catch {
    problems.push(`timeZone: ${JSON.stringify(zone).slice(0, 60)} is not an IANA time zone`);
  }
  const before = minutes(c.bufferBefore, 0, "bufferBefore", problems);
  const after = minutes(c.bufferAfter, 0, "bufferAfter", problems);
  const blocked = blockedList(c.blocked, problems);
  const named = typeof c.placeholderGuest === "string" ? c.placeholderGuest.trim().replace(/\s+/g, " ") : "";
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  if (named.length > 80 || /[\u0000-\u001f\u007f]/.test(named))
    problems.push("placeholderGuest: at most 80 characters, no control characters");
  const nodeName = typeof c.name === "string" ? c.name.trim().replace(/\s+/g, " ").slice(0, 80) : "";
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    settings: {
      url: url!.href,
      everyMinutes: every,
      checkIn,
      checkOut,
      timeZone: zone,
      bufferBeforeMin: before,
      bufferAfterMin: after,
      blocked,
      placeholderGuest: named !== "" ? named : nodeName !== "" ? `${nodeName} guest` : "Guest",
    },
  };
}
