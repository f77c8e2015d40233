/**
 * Reading a door-unlock node's rule configuration (docs/access-rules.md#configuration-errors):
 * each field checked by the rule it serves (docs/access-rules.md#actors, #schedule,
 * #time-zone-and-daylight-saving, #cooldown, #pin-and-lockout), every problem listed in words. No
 * problem names the PIN's value. parseAccessRules (src/unlock/access-rules.ts) makes a rule set of
 * what is read here only when nothing is wrong.
 */
import { PIN_MAX_DIGITS, PIN_MIN_DIGITS } from "./access-pin.js";
import { type ScheduleWindow, runtimeZone } from "./access-schedule.js";

/** Longest cooldown accepted (one day). */
const MAX_COOLDOWN_SECONDS = 86_400;
/** Longest actor pattern accepted. */
const MAX_PATTERN_LENGTH = 200;

const HHMM = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;
const PIN_FORMAT = /^[0-9]{4,12}$/;
// eslint-disable-next-line no-control-regex -- control characters are what this looks for
const CONTROL = /[\u0000-\u001f\u007f]/;

/** What the node's editor stores (the `pin` credential added by the node). */
export interface AccessRulesConfig {
  allowActors?: unknown;
  schedule?: unknown;
  timeZone?: unknown;
  cooldown?: unknown;
  /** The `pin` credential: 4 to 12 digits as text; empty or absent = no PIN. */
  pin?: unknown;
}

/** A configuration as read: its problems, and each rule as far as it could be read. */
interface ReadConfig {
  problems: string[];
  actors: string[];
  windows: ScheduleWindow[];
  /** null: the zone given is no zone (a problem says so). */
  zone: string | null;
  cooldown: number;
  pin: string | null;
}

/** Reads every field of a node's rule configuration, listing every problem found. */
export function readAccessConfig(c: AccessRulesConfig): ReadConfig {
  const problems: string[] = [];
  const actors = parseActors(c.allowActors, problems);
  const windows = parseSchedule(c.schedule, problems);
  const zone = parseZone(c.timeZone, problems, windows.length > 0);
  const cooldown = parseCooldown(c.cooldown, problems);
  const pin = parsePin(c.pin, problems);
  return { problems, actors, windows, zone, cooldown, pin };
}

function parseActors(value: unknown, problems: string[]): string[] {
  if (value === undefined || value === null || value === "") return [];
  if (!Array.isArray(value)) {
    problems.push(`allowActors must be a list of actor names, got ${typeOf(value)}`);
    return [];
  }
  const out: string[] = [];
  value.forEach((p: unknown, i: number) => {
    const at = `allowActors entry ${i + 1}`;
    if (typeof p !== "string") problems.push(`${at} must be text, got ${typeOf(p)}`);
    else if (p.trim() === "") problems.push(`${at} is empty`);
    else if (p !== p.trim()) problems.push(`${at} ("${p.trim()}") has spaces at its start or end`);
    else if (p.length > MAX_PATTERN_LENGTH) problems.push(`${at} is longer than ${MAX_PATTERN_LENGTH} characters`);
    else if (CONTROL.test(p)) problems.push(`${at} contains control characters`);
    else out.push(p);
  });
  return out;
}

function parseSchedule(value: unknown, problems: string[]): ScheduleWindow[] {
  if (value === undefined || value === null || value === "") return [];
  if (!Array.isArray(value)) {
    problems.push(`schedule must be a list of windows, got ${typeOf(value)}`);
    return [];
  }
  const out: ScheduleWindow[] = [];
  value.forEach((w: unknown, i: number) => {
    const at = `schedule window ${i + 1}`;
    if (typeof w !== "object" || w === null || Array.isArray(w)) {
      problems.push(`${at} must be an object { days, from, to }, got ${typeOf(w)}`);
      return;
    }
    const { days, from, to } = w as { days?: unknown; from?: unknown; to?: unknown };
    let ok = true;
    let dayList: number[] = [];
    if (!Array.isArray(days) || days.length === 0) {
      problems.push(`${at} needs at least one day (1 = Monday ... 7 = Sunday)`);
      ok = false;
    } else {
      const isDay = (d: unknown) => typeof d === "number" && Number.isInteger(d) && d >= 1 && d <= 7;
      const bad = days.filter((d: unknown) => !isDay(d));
      if (bad.length > 0) {
        const shown = bad.map((d: unknown) => shortText(d)).join(", ");
        problems.push(`${at} has a day outside 1..7 (1 = Monday ... 7 = Sunday): ${shown}`);
        ok = false;
      } else dayList = [...new Set(days as number[])].sort((a, b) => a - b);
    }
    const f = typeof from === "string" ? HHMM.exec(from) : null;
    if (!f) {
      problems.push(`${at}: from must be a time "HH:MM" between 00:00 and 23:59, got ${shortText(from)}`);
      ok = false;
    }
    const t = typeof to === "string" ? (to === "24:00" ? HHMM.exec("00:00") : HHMM.exec(to)) : null;
    if (!t) {
      problems.push(
        `${at}: to must be a time "HH:MM" between 00:00 and 23:59 (00:00 = midnight at the end of the day), ` +
          `got ${shortText(to)}`,
      );
      ok = false;
    }
    if (f && t && from === to && from !== "00:00") {
      problems.push(
        `${at} starts and ends at ${from as string}: a window must have a length (00:00 to 00:00 is the whole day)`,
      );
      ok = false;
    }
    if (ok) out.push(Object.freeze({ days: Object.freeze(dayList), from: from as string, to: to as string }));
  });
  return out;
}

function parseZone(value: unknown, problems: string[], forSchedule: boolean): string | null {
  if (value === undefined || value === null || value === "") {
    const runtime = runtimeZone();
    if (runtime !== null) return runtime;
    // The runtime's dates follow a zone Intl cannot name (TZ as a file, e.g. TZ=:/etc/localtime):
    // a schedule read in any other zone would open at the wrong hours.
    if (forSchedule) {
      problems.push(
        "the runtime's time zone has no name this Node.js knows (is TZ a file path, such as :/etc/localtime?), " +
          "so the schedule cannot be read in it: choose the node's time zone",
      );
    }
    return "UTC"; // only the lockout's "until" clock reads it then
  }
  if (typeof value !== "string") {
    problems.push(`timeZone must be an IANA zone name such as Europe/Oslo, got ${typeOf(value)}`);
    return null;
  }
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: value }).resolvedOptions().timeZone;
  } catch {
    problems.push(
      `timeZone "${clipText(value, 60)}" is not a time zone this Node.js knows (an IANA name such as Europe/Oslo)`,
    );
    return null;
  }
}

function parseCooldown(value: unknown, problems: string[]): number {
  if (value === undefined || value === null || value === "") return 0;
  const n = typeof value === "string" && /^\s*[0-9]+\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > MAX_COOLDOWN_SECONDS) {
    problems.push(`cooldown must be whole seconds from 0 (off) to ${MAX_COOLDOWN_SECONDS}, got ${shortText(value)}`);
    return 0;
  }
  return n;
}

/** Never names the value: a mistyped PIN is still close to the real one. */
function parsePin(value: unknown, problems: string[]): string | null {
  if (value === undefined || value === null || value === "") return null;
  if (typeof value !== "string") {
    problems.push(
      `the PIN must be text of ${PIN_MIN_DIGITS} to ${PIN_MAX_DIGITS} digits ` +
        `(a number would lose its leading zeros), got ${typeOf(value)}`,
    );
    return null;
  }
  if (!PIN_FORMAT.test(value)) {
    problems.push(`the PIN must be ${PIN_MIN_DIGITS} to ${PIN_MAX_DIGITS} digits 0-9 and nothing else`);
    return null;
  }
  return value;
}

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** A value for an error text (never called with a PIN). */
function shortText(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(clipText(v, 40));
  if (typeof v === "number" || typeof v === "boolean" || v === null || v === undefined) return String(v);
  return typeOf(v);
}

/** `s` cut to `max` characters, "…" after a cut (for a value quoted in an error text). */
export function clipText(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}…`;
}
