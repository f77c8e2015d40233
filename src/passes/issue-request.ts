/**
 * The checks of a `door-pass` issue request (docs/passes.md#issue): each field read and checked,
 * the problems naming their field; the weekly hours read as the access rules read theirs. Nothing
 * here stores or resolves anything (door names and a turnover's node are resolved by the node).
 */
import { isoTimeExists } from "../util/iso-time.js";
import { hasControlChars } from "../util/text.js";
import {
  type ScheduleProblem,
  type ScheduleWindow,
  compileWindow,
  nextOpening,
  readSchedule,
  readWallClock,
  readZone,
  wallClockFormat,
} from "../util/week-schedule.js";

export const MAX_GUEST = 100;
export const MAX_REF = 200;
export const MAX_DOORS = 50;
/** Most weekly windows a pass's schedule may have. */
export const MAX_WINDOWS = 50;

export interface IssueRequest {
  guest: string;
  /** As given: device ids or door names, resolved by the caller. */
  doors: (number | string)[];
  from: string;
  until: string;
  uses: number | null;
  ref: string | null;
  /** Weekly hours, as checked (docs/passes.md#issue); null: at any hour. */
  schedule: ScheduleWindow[] | null;
  /** The zone the schedule is read in, as Node.js names it; null: none given and no schedule. */
  timeZone: string | null;
  /** A door-pass node's id or name, as given, resolved by the caller (docs/passes.md#between-guests-the-turnover-window); null: none. */
  turnover: string | null;
}

/** A date-time with its zone: its instant, "absent" when it is not one, "no-such" when it names a time that does not exist. */
function isoTime(v: unknown): number | "absent" | "no-such" {
  if (typeof v !== "string" || v.length > 40) return "absent";
  // A date and a time with its zone (Z or ±hh:mm): a time without a zone would depend on the runtime's.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(v)) return "absent";
  // 30 February, 24:00, minute 60, offset +25:00: Date.parse would move some of them to another day.
  if (!isoTimeExists(v)) return "no-such";
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : "no-such";
}

/** The instant of the field `name`, or its problem (docs/passes.md#issue). */
function timeField(name: string, v: unknown, example: string, problems: string[]): number | null {
  const t = isoTime(v);
  if (t === "absent") problems.push(`${name}: an ISO date-time with its zone, e.g. ${example}`);
  else if (t === "no-such")
    problems.push(
      `${name}: ${JSON.stringify(v)} does not exist (no such day in its month, or no such time of day or offset)`,
    );
  return typeof t === "number" ? t : null;
}

/** Checks an issue request's fields; the problems name each field (docs/passes.md#issue). */
export function checkIssue(
  p: Record<string, unknown>,
): { ok: true; request: IssueRequest } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const guest = typeof p.guest === "string" ? p.guest.trim() : "";
  if (guest === "") problems.push("guest: a name is required (text)");
  else if (guest.length > MAX_GUEST || hasControlChars(guest))
    problems.push(`guest: at most ${MAX_GUEST} characters, no control characters`);
  const raw = Array.isArray(p.doors) ? (p.doors as unknown[]) : p.doors === undefined ? [] : [p.doors];
  const doors: (number | string)[] = [];
  if (raw.length === 0) problems.push("doors: at least one door (a device id or a door name)");
  else if (raw.length > MAX_DOORS) problems.push(`doors: at most ${MAX_DOORS}`);
  else
    for (const d of raw) {
      if (typeof d === "number" && Number.isInteger(d) && d >= 1 && d <= 2147483647) doors.push(d);
      else if (typeof d === "string" && d.trim() !== "" && d.length <= 200 && !hasControlChars(d))
        doors.push(/^\d{1,10}$/.test(d.trim()) ? Number(d.trim()) : d.trim());
      else
        problems.push(`doors: ${JSON.stringify(d)?.slice(0, 40) ?? String(d)} is neither a device id nor a door name`);
    }
  const from = timeField("from", p.from, "2026-12-01T15:00:00+01:00", problems);
  const until = timeField("until", p.until, "2026-12-05T11:00:00+01:00", problems);
  if (from !== null && until !== null && !(until > from)) problems.push("until: must be after from");
  let uses: number | null = null;
  if (p.uses !== undefined && p.uses !== null && p.uses !== "") {
    if (typeof p.uses === "number" && Number.isInteger(p.uses) && p.uses >= 1 && p.uses <= 1_000_000) uses = p.uses;
    else problems.push("uses: a whole number of at least 1 (or leave it out for any number)");
  }
  let ref: string | null = null;
  if (p.ref !== undefined && p.ref !== null && p.ref !== "") {
    if (typeof p.ref === "string" && p.ref.length <= MAX_REF && !hasControlChars(p.ref)) ref = p.ref;
    else if (typeof p.ref === "number" && Number.isFinite(p.ref)) ref = String(p.ref);
    else problems.push(`ref: text of at most ${MAX_REF} characters`);
  }
  const hours = checkHours(p.schedule, p.timeZone, from, until, problems);
  let turnover: string | null = null;
  if (p.turnover !== undefined && p.turnover !== null && p.turnover !== "") {
    if (
      typeof p.turnover === "string" &&
      p.turnover.trim() !== "" &&
      p.turnover.length <= 200 &&
      !hasControlChars(p.turnover)
    )
      turnover = p.turnover.trim();
    else problems.push("turnover: the id or name of a door-pass node with a booking calendar (text)");
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    request: {
      guest,
      doors,
      from: new Date(from!).toISOString(),
      until: new Date(until!).toISOString(),
      uses,
      ref,
      ...hours,
      turnover,
    },
  };
}

/**
 * An issue's weekly hours (docs/passes.md#issue): `schedule` read as the access rules read theirs
 * (same windows, same zone rules; none or [] is none), `timeZone` an IANA name (empty: the runtime's); a schedule none
 * of whose windows falls within [from, until) would never open, and is refused.
 */
function checkHours(
  schedule: unknown,
  timeZone: unknown,
  from: number | null,
  until: number | null,
  problems: string[],
): { schedule: ScheduleWindow[] | null; timeZone: string | null } {
  const found = (f: ScheduleProblem) =>
    problems.push(
      f.text.startsWith(`${f.field} `) ? `${f.field}: ${f.text.slice(f.field.length + 1)}` : `${f.field}: ${f.text}`,
    );
  // Nothing, or an empty list, is no schedule: the pass opens at any hour, as the access rules read one.
  const given = !(
    schedule === undefined ||
    schedule === null ||
    schedule === "" ||
    (Array.isArray(schedule) && schedule.length === 0)
  );
  let windows: ScheduleWindow[] = [];
  if (Array.isArray(schedule) && schedule.length > MAX_WINDOWS)
    problems.push(`schedule: at most ${MAX_WINDOWS} windows`);
  else if (given) windows = readSchedule(schedule, found);
  const zoneGiven = !(timeZone === undefined || timeZone === null || timeZone === "");
  const zone = given || zoneGiven ? readZone(timeZone, found, given) : null;
  if (!given || problems.length > 0 || zone === null || from === null || until === null)
    return { schedule: null, timeZone: zone };
  const read = (now: number) => readWallClock(wallClockFormat(zone), zone, now);
  if (nextOpening(windows.map(compileWindow), read, from, until) === null)
    problems.push(`schedule: none of its windows falls between from and until (read in ${zone})`);
  return { schedule: windows.map((w) => ({ days: [...w.days], from: w.from, to: w.to })), timeZone: zone };
}
