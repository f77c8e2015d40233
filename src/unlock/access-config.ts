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
import { hasControlChars } from "../util/text.js";
import { type ScheduleWindow, isTimeOfDay, readSchedule, readZone, shortText, typeOf } from "./access-schedule.js";

export { isTimeOfDay };

/** Shortest and longest PIN accepted (digits). */
export const PIN_MIN_DIGITS = 4;
export const PIN_MAX_DIGITS = 12;
/** Longest cooldown accepted (one day). */
const MAX_COOLDOWN_SECONDS = 86_400;
/** Longest actor pattern accepted. */
export const MAX_PATTERN_LENGTH = 200;

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
  return readSchedule(value, (p) => found.push(p));
}

function parseZone(value: unknown, found: AccessProblem[], forSchedule: boolean): string | null {
  return readZone(value, (p) => found.push(p), forSchedule);
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
