/**
 * Reading a door-unlock node's rule configuration (docs/access-rules.md#configuration-errors):
 * each field checked by the rule it serves (docs/access-rules.md#actors, #schedule,
 * #time-zone-and-daylight-saving, #cooldown, #pin-and-lockout), every problem listed in words. No
 * problem names the PIN's value. parseAccessRules (src/unlock/access-rules.ts) makes a rule set of
 * what is read here only when nothing is wrong.
 *
 * The door-unlock dialog runs this same reading in the browser (nodes/door-unlock/editor/,
 * through fieldProblem below), so that it flags exactly what the runtime refuses: this module and
 * what it imports stay free of Node.js (no `node:` module, no Buffer), which the editor's
 * type-check (tsconfig.editor.json, lib dom without Node's types) enforces.
 */
import { clip, hasControlChars } from "../util/text.js";
import { type ScheduleWindow, runtimeZone } from "./access-schedule.js";

/** Shortest and longest PIN accepted (digits). */
export const PIN_MIN_DIGITS = 4;
export const PIN_MAX_DIGITS = 12;
/** Longest cooldown accepted (one day). */
const MAX_COOLDOWN_SECONDS = 86_400;
/** Longest actor pattern accepted. */
export const MAX_PATTERN_LENGTH = 200;

const HHMM = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;
const PIN_FORMAT = /^[0-9]{4,12}$/;

/** What the node's editor stores (the `pin` credential added by the node). */
export interface AccessRulesConfig {
  allowActors?: unknown;
  schedule?: unknown;
  timeZone?: unknown;
  cooldown?: unknown;
  /** The `pin` credential: 4 to 12 digits as text; empty or absent = no PIN. */
  pin?: unknown;
}

/**
 * A problem as the dialog names it: the key of its fixed text in door-unlock's message catalogue
 * (`door-unlock.errors.<key>`); the dialog never shows the runtime's words, which quote the value.
 */
export type AccessProblemKey =
  | "allow-actors"
  | "schedule"
  | "schedule-days"
  | "schedule-times"
  | "schedule-length"
  | "time-zone"
  | "cooldown"
  | "pin";

/** One problem found: the field it is in, the runtime's words, and the dialog's key. */
interface AccessProblem {
  field: keyof AccessRulesConfig;
  key: AccessProblemKey;
  text: string;
}

/** A configuration as read: its problems, and each rule as far as it could be read. */
interface ReadConfig {
  problems: AccessProblem[];
  actors: string[];
  windows: ScheduleWindow[];
  /** null: the zone given is no zone (a problem says so). */
  zone: string | null;
  cooldown: number;
  pin: string | null;
}

/** Reads every field of a node's rule configuration, listing every problem found. */
export function readAccessConfig(c: AccessRulesConfig): ReadConfig {
  const problems: AccessProblem[] = [];
  const actors = parseActors(c.allowActors, problems);
  const windows = parseSchedule(c.schedule, problems);
  const zone = parseZone(c.timeZone, problems, windows.length > 0);
  const cooldown = parseCooldown(c.cooldown, problems);
  const pin = parsePin(c.pin, problems);
  return { problems, actors, windows, zone, cooldown, pin };
}

function parseActors(value: unknown, found: AccessProblem[]): string[] {
  const problem = (text: string): void => void found.push({ field: "allowActors", key: "allow-actors", text });
  if (value === undefined || value === null || value === "") return [];
  if (!Array.isArray(value)) {
    problem(`allowActors must be a list of actor names, got ${typeOf(value)}`);
    return [];
  }
  const out: string[] = [];
  value.forEach((p: unknown, i: number) => {
    const at = `allowActors entry ${i + 1}`;
    if (typeof p !== "string") problem(`${at} must be text, got ${typeOf(p)}`);
    else if (p.trim() === "") problem(`${at} is empty`);
    else if (p !== p.trim()) problem(`${at} ("${p.trim()}") has spaces at its start or end`);
    else if (p.length > MAX_PATTERN_LENGTH) problem(`${at} is longer than ${MAX_PATTERN_LENGTH} characters`);
    else if (hasControlChars(p)) problem(`${at} contains control characters`);
    else out.push(p);
  });
  return out;
}

function parseSchedule(value: unknown, found: AccessProblem[]): ScheduleWindow[] {
  const problem = (key: AccessProblemKey, text: string): void => void found.push({ field: "schedule", key, text });
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

function parseZone(value: unknown, found: AccessProblem[], forSchedule: boolean): string | null {
  const problem = (text: string): void => void found.push({ field: "timeZone", key: "time-zone", text });
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

function parseCooldown(value: unknown, found: AccessProblem[]): number {
  const n = cooldownValue(value);
  if (n === null) {
    found.push({
      field: "cooldown",
      key: "cooldown",
      text: `cooldown must be whole seconds from 0 (off) to ${MAX_COOLDOWN_SECONDS}, got ${shortText(value)}`,
    });
    return 0;
  }
  return n;
}

/**
 * The cooldown in seconds as the runtime reads it: nothing = 0 (off), whole seconds 0..86400 as a
 * number or as digits (the dialog's field gives text); null when it cannot be read.
 */
export function cooldownValue(value: unknown): number | null {
  if (value === undefined || value === null || value === "") return 0;
  const n = typeof value === "string" && /^\s*[0-9]+\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > MAX_COOLDOWN_SECONDS) return null;
  return n;
}

/** Never names the value: a mistyped PIN is still close to the real one. */
function parsePin(value: unknown, found: AccessProblem[]): string | null {
  const problem = (text: string): void => void found.push({ field: "pin", key: "pin", text });
  if (value === undefined || value === null || value === "") return null;
  if (typeof value !== "string") {
    problem(
      `the PIN must be text of ${PIN_MIN_DIGITS} to ${PIN_MAX_DIGITS} digits ` +
        `(a number would lose its leading zeros), got ${typeOf(value)}`,
    );
    return null;
  }
  if (!PIN_FORMAT.test(value)) {
    problem(`the PIN must be ${PIN_MIN_DIGITS} to ${PIN_MAX_DIGITS} digits 0-9 and nothing else`);
    return null;
  }
  return value;
}

/**
 * The first problem the runtime finds in one field of a node's rules, read exactly as
 * readAccessConfig reads the node's configuration, as the dialog names it; null when the runtime
 * reads the field. What the door-unlock dialog validates each field with.
 */
export function fieldProblem(field: keyof AccessRulesConfig, value: unknown): AccessProblemKey | null {
  return readAccessConfig({ [field]: value }).problems.find((p) => p.field === field)?.key ?? null;
}

/** Whether `value` is a time of day "HH:MM" from 00:00 to 23:59, as a window's from (and to, but for "24:00") is read. */
export function isTimeOfDay(value: unknown): boolean {
  return typeof value === "string" && HHMM.test(value);
}

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** A value for an error text (never called with a PIN). */
function shortText(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(clip(v, 40, "…"));
  if (typeof v === "number" || typeof v === "boolean" || v === null || v === undefined) return String(v);
  return typeOf(v);
}
