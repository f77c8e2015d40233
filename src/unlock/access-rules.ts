/**
 * The access rules of door-unlock (docs/access-rules.md), as pure logic: it knows nothing of
 * Node-RED, of the service or of the audit log. The node reads its configuration with
 * `parseAccessRules`, keeps one `AccessState` per deployed node, asks `check()` for every
 * message before anything is sent, and tells the state what became of an allowed message.
 *
 * Rules, in the order they are checked (docs/access-rules.md#order-of-the-rules):
 *
 * | rule        | state it keeps                        | reason when broken          |
 * |-------------|---------------------------------------|-----------------------------|
 * | allowActors | none                                  | `actor`                     |
 * | schedule    | none (a cache of the local time)      | `schedule`                  |
 * | cooldown    | per door and lock: last command sent  | `cooldown` (+ retryAfter)   |
 * | pin         | wrong PINs of the last 15 minutes     | `locked-out` (+ retryAfter) |
 * |             | and the lockout                       | or `pin`                    |
 *
 * A message refused by one rule changes no other rule's state: the actor and the schedule keep
 * none; the cooldown slot is taken only by a message every rule allowed; a wrong PIN is counted
 * only for a message that got as far as the PIN.
 *
 * Cooldown slots (docs/access-rules.md#cooldown): an allowed message takes its door's slot in
 * the same synchronous call (five messages in one millisecond: one is allowed), and the node then
 * says `slot.sent(now)` when the command leaves (the cooldown counts from then) or
 * `slot.release()` when nothing was sent. `release()` after `sent()` does nothing, so a node may
 * call `sent` where the request leaves and `release` in a `finally`.
 *
 * Secrets: the PIN is kept only masked with a random key made for this rule set (a one-time pad
 * over a fixed 16-byte encoding), both held in a module-private WeakMap: no property, `toJSON`,
 * `toString` or `util.inspect` of anything returned here shows the PIN or its masked form, and
 * no text made here contains a PIN. A message's PIN is masked the same way and compared with
 * timingSafeEqual (docs/access-rules.md#pin-and-lockout).
 *
 * Time: the schedule reads the zone's wall clock through Intl, and caches the zone's offset
 * from UTC over an hour it has checked at both ends, so a node with many messages rarely calls
 * Intl (docs/access-rules.md#time-zone-and-daylight-saving).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";

// ------------------------------------------------------------------------------- constants

/** Wrong PINs that lock the node, counted over a sliding LOCKOUT_WINDOW_MS. */
export const LOCKOUT_AFTER = 5;
/** How long a wrong PIN counts. */
export const LOCKOUT_WINDOW_MS = 15 * 60_000;
/** How long the node refuses every message once locked. */
export const LOCKOUT_MS = 15 * 60_000;
/** Longest cooldown accepted (one day). */
export const MAX_COOLDOWN_SECONDS = 86_400;
/**
 * How long a slot an allowed message took may stay neither sent nor released before it is
 * dropped as released, so that a node that forgot to settle it never blocks a door for good.
 */
export const SLOT_HOLD_MS = 5 * 60_000;
export const PIN_MIN_DIGITS = 4;
export const PIN_MAX_DIGITS = 12;
/** Longest actor pattern accepted. */
export const MAX_PATTERN_LENGTH = 200;
/**
 * How long an offset from UTC read at both ends is taken as the zone's offset in between: no zone
 * changes its offset twice within an hour, so equal offsets an hour apart mean no change between.
 */
export const OFFSET_SPAN_MS = 60 * 60_000;

// ------------------------------------------------------------------------------- types

/** What the node's editor stores (the `pin` credential added by the node). */
export interface AccessRulesConfig {
  allowActors?: unknown;
  schedule?: unknown;
  timeZone?: unknown;
  cooldown?: unknown;
  /** The `pin` credential: 4 to 12 digits as text; empty or absent = no PIN. */
  pin?: unknown;
}

/** One window of the weekly schedule, as given (days sorted, without repeats). */
export interface ScheduleWindow {
  /** ISO weekdays the window starts on: 1 = Monday ... 7 = Sunday. */
  readonly days: readonly number[];
  /** "HH:MM", 00:00 to 23:59. */
  readonly from: string;
  /** "HH:MM"; "00:00" (or "24:00") is the end of the day; earlier than `from` runs into the next day. */
  readonly to: string;
}

export type DenyReason = "actor" | "schedule" | "cooldown" | "pin" | "locked-out";

export type ParseResult = { ok: true; rules: AccessRules } | { ok: false; problems: string[]; message: string };

export interface CheckInput {
  /** The actor as door-unlock defines it (msg.actor, else the node's actor, else node-red:<id>). */
  actor: unknown;
  /** The door's device id: the cooldown key, with lockId. */
  deviceId: number;
  /** The lock, or null for the whole device (its own cooldown key). */
  lockId: number | null;
  /** msg.pin as it came (string of digits or number; anything else is a wrong PIN). */
  pin: unknown;
  /** Wall-clock time in ms since the epoch (the schedule is read from it, in the rules' zone). */
  now: number;
}

/** The door's cooldown slot taken by an allowed message. */
export interface CooldownSlot {
  /** The command left at `now`: the cooldown runs from then. Only the first call counts. */
  sent(now: number): void;
  /** Nothing was sent: give the slot back. Does nothing after `sent()` (or a second time). */
  release(): void;
}

export interface Allowed {
  readonly allowed: true;
  readonly slot: CooldownSlot;
}

export interface Denied {
  readonly allowed: false;
  readonly reason: DenyReason;
  /** What to tell the flow (never contains a PIN). */
  readonly message: string;
  /** Whole seconds until the rule may let a message through (cooldown, locked-out). */
  readonly retryAfter?: number;
  /** This message's wrong PIN was the one that locked the node. */
  readonly lockoutStarted?: true;
}

export type AccessDecision = Allowed | Denied;

export interface LockoutState {
  /** The node refuses every message until `until`. */
  locked: boolean;
  /** Wrong PINs counted now (while locked: the number that locked it). */
  wrongPins: number;
  /** ms since the epoch when the lockout ends; null when not locked. */
  until: number | null;
  /** Whole seconds left, rounded up; null when not locked. */
  retryAfter: number | null;
}

// ------------------------------------------------------------------------------- parsing

const HHMM = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;
const PIN_FORMAT = /^[0-9]{4,12}$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const DAY_NAMES = ["", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] as const;

interface CompiledWindow {
  mask: number; // bit d set for ISO weekday d
  prevMask: number; // bit d set when the window started the day before d (overnight part)
  from: number; // minute of the day, 0..1439
  to: number; // minute of the day, 1..1440 (1440 = end of the day)
  overnight: boolean;
}

interface Secret {
  /** Random, made for the rule set. */
  key: Buffer;
  /** The PIN's encoding masked with the key. */
  masked: Buffer;
  /** Where a message's PIN is encoded and masked (check() is synchronous: one at a time). */
  scratch: Buffer;
}

/** The PIN, masked, and its key, out of reach of any property, JSON or inspection of a rule set. */
const secrets = new WeakMap<AccessRules, Secret>();

/** A PIN's encoding: its length, then its digits, zeros after them. */
const PIN_BYTES = 16;
const DIGITS = /^[0-9]+$/;

/**
 * Encodes `text` into `out` and masks it with `key`. Text that is no PIN (not digits, too long,
 * none) becomes an encoding no PIN has (length 0xff). The same steps for every text, whatever
 * the stored PIN; what differs depends only on the text given.
 */
function maskPin(text: string | null, key: Buffer, out: Buffer): void {
  out.fill(0);
  if (text !== null && text.length <= PIN_MAX_DIGITS && DIGITS.test(text)) {
    out[0] = text.length;
    out.write(text, 1, "latin1");
  } else {
    out[0] = 0xff;
  }
  for (let i = 0; i < PIN_BYTES; i++) out[i] ^= key[i];
}

/**
 * Reads a node's rule configuration. Every problem is listed (none of them names the PIN's
 * value); a rule set is returned only when all of it could be read, so a node never runs with
 * part of its rules (docs/access-rules.md#configuration-errors).
 */
export function parseAccessRules(config: AccessRulesConfig | null | undefined): ParseResult {
  const c = config ?? {};
  const problems: string[] = [];
  const actors = parseActors(c.allowActors, problems);
  const windows = parseSchedule(c.schedule, problems);
  const zone = parseZone(c.timeZone, problems, windows.length > 0);
  const cooldown = parseCooldown(c.cooldown, problems);
  const pin = parsePin(c.pin, problems);
  if (problems.length > 0 || zone === null) {
    return { ok: false, problems, message: `the access rules cannot be read: ${problems.join("; ")}` };
  }
  return { ok: true, rules: new AccessRules(actors, windows, zone, cooldown, pin) };
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
      const bad = days.filter((d: unknown) => !(typeof d === "number" && Number.isInteger(d) && d >= 1 && d <= 7));
      if (bad.length > 0) {
        problems.push(`${at} has a day outside 1..7 (1 = Monday ... 7 = Sunday): ${bad.map((d: unknown) => shortText(d)).join(", ")}`);
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
      problems.push(`${at}: to must be a time "HH:MM" between 00:00 and 23:59 (00:00 = midnight at the end of the day), got ${shortText(to)}`);
      ok = false;
    }
    if (f && t && from === to && from !== "00:00") {
      problems.push(`${at} starts and ends at ${from as string}: a window must have a length (00:00 to 00:00 is the whole day)`);
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
      problems.push("the runtime's time zone has no name this Node.js knows (is TZ a file path, such as :/etc/localtime?), so the schedule cannot be read in it: choose the node's time zone");
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
    problems.push(`timeZone "${clipText(value, 60)}" is not a time zone this Node.js knows (an IANA name such as Europe/Oslo)`);
    return null;
  }
}

/**
 * The runtime's zone, as Node.js sees it now (TZ, else the system's), under its canonical name;
 * "UTC" when Intl names none ("Etc/Unknown" for a TZ set but empty, nothing for an unknown one)
 * and the runtime's dates are in UTC all year, as they then are; null when Intl names none but
 * the runtime's dates follow some zone all the same (TZ as a file path).
 */
function runtimeZone(): string | null {
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
    problems.push(`the PIN must be text of ${PIN_MIN_DIGITS} to ${PIN_MAX_DIGITS} digits (a number would lose its leading zeros), got ${typeOf(value)}`);
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

function clipText(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}…`;
}

// ------------------------------------------------------------------------------- the rule set

function minutes(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/**
 * A node's rules, read and checked; immutable. It holds no state of its own: that is the
 * AccessState's (one per deployed node). Its JSON and inspection show the rules, and of the
 * PIN only whether there is one.
 */
export class AccessRules {
  readonly allowActors: readonly string[];
  readonly schedule: readonly ScheduleWindow[];
  /** The zone the schedule is read in (the runtime's zone, resolved when read, if none was given). */
  readonly timeZone: string;
  /** Seconds; 0 = off. */
  readonly cooldown: number;
  readonly hasPin: boolean;
  /** Whether any rule is set: without one, the node behaves as if rules did not exist. */
  readonly active: boolean;

  /** @internal */ readonly exact: ReadonlySet<string>;
  /** @internal */ readonly patterns: readonly string[];
  /** @internal */ readonly windows: readonly CompiledWindow[];
  /** @internal */ readonly formatter: Intl.DateTimeFormat;
  /** @internal */ readonly clockFormatter: Intl.DateTimeFormat;

  constructor(actors: string[], windows: ScheduleWindow[], timeZone: string, cooldown: number, pin: string | null) {
    this.allowActors = Object.freeze([...actors]);
    this.schedule = Object.freeze([...windows]);
    this.timeZone = timeZone;
    this.cooldown = cooldown;
    this.hasPin = pin !== null;
    this.active = actors.length > 0 || windows.length > 0 || cooldown > 0 || pin !== null;
    this.exact = new Set(actors.filter((a) => !a.includes("*")));
    // A bare "*" lets everyone in: kept as a pattern (it matches any actor text).
    this.patterns = actors.filter((a) => a.includes("*"));
    this.windows = windows.map((w) => {
      const from = minutes(w.from);
      const to = w.to === "00:00" || w.to === "24:00" ? 1440 : minutes(w.to);
      let mask = 0;
      for (const d of w.days) mask |= 1 << d;
      let prevMask = 0;
      for (const d of w.days) prevMask |= 1 << (d === 7 ? 1 : d + 1);
      return { mask, prevMask, from, to, overnight: to < from };
    });
    this.formatter = new Intl.DateTimeFormat("en-US", { timeZone, weekday: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    this.clockFormatter = new Intl.DateTimeFormat("en-US", { timeZone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    if (pin !== null) {
      const key = randomBytes(PIN_BYTES);
      const masked = Buffer.alloc(PIN_BYTES);
      maskPin(pin, key, masked);
      secrets.set(this, { key, masked, scratch: Buffer.alloc(PIN_BYTES) });
    }
    Object.freeze(this);
  }

  /** Whether `actor` is allowed (docs/access-rules.md#actors). */
  actorAllowed(actor: unknown): boolean {
    if (this.allowActors.length === 0) return true;
    if (typeof actor !== "string") return false;
    if (this.exact.has(actor)) return true;
    for (const p of this.patterns) if (globMatch(p, actor)) return true;
    return false;
  }

  /** The weekday (1..7) and minute of the day (0..1439) of `now` on the wall clock of the zone. */
  localTime(now: number): { day: number; minute: number } {
    let day = 0;
    let hour = 0;
    let minute = 0;
    for (const part of this.formatter.formatToParts(now)) {
      if (part.type === "weekday") day = DAY_NAMES.indexOf(part.value as (typeof DAY_NAMES)[number]);
      else if (part.type === "hour") hour = Number(part.value) % 24;
      else if (part.type === "minute") minute = Number(part.value);
    }
    if (day < 1) throw new Error(`the time zone ${this.timeZone} gave no weekday`); // never with en-US
    return { day, minute: hour * 60 + minute };
  }

  /** Whether the local (day, minute) falls in a window (docs/access-rules.md#schedule). */
  inWindows(day: number, minute: number): boolean {
    const bit = 1 << day;
    for (const w of this.windows) {
      if (!w.overnight) {
        if ((w.mask & bit) !== 0 && minute >= w.from && minute < w.to) return true;
      } else if (((w.mask & bit) !== 0 && minute >= w.from) || ((w.prevMask & bit) !== 0 && minute < w.to)) {
        return true;
      }
    }
    return false;
  }

  /** "14:32": `at` on the wall clock of the rules' zone (for the lockout in the node status). */
  formatClock(at: number): string {
    return this.clockFormatter.format(at);
  }

  /** A short description for a label or status: "actors, schedule, cooldown 30 s, PIN". No secret. */
  summary(): string {
    const parts: string[] = [];
    if (this.allowActors.length > 0) parts.push("actors");
    if (this.schedule.length > 0) parts.push(`schedule (${this.timeZone})`);
    if (this.cooldown > 0) parts.push(`cooldown ${this.cooldown} s`);
    if (this.hasPin) parts.push("PIN");
    return parts.length > 0 ? parts.join(", ") : "no rules";
  }

  toJSON(): object {
    return {
      allowActors: this.allowActors,
      schedule: this.schedule,
      timeZone: this.timeZone,
      cooldown: this.cooldown,
      hasPin: this.hasPin,
    };
  }

  toString(): string {
    return `AccessRules(${this.summary()})`;
  }

  /** A fresh state for a deployed node (no cooldowns, no wrong PINs, no lockout). */
  newState(): AccessState {
    return new AccessState(this);
  }
}

/**
 * `*` matches any run of characters (also none); everything else matches itself, case and all.
 * Iterative, with one backtrack point: linear in practice, never exponential, whatever the pattern.
 */
export function globMatch(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern.charCodeAt(p) === 42 /* * */) {
      star = p++;
      mark = t;
    } else if (p < pattern.length && pattern.charCodeAt(p) === text.charCodeAt(t)) {
      p++;
      t++;
    } else if (star >= 0) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern.charCodeAt(p) === 42) p++;
  return p === pattern.length;
}

// ------------------------------------------------------------------------------- the state

interface SlotEntry {
  pending: boolean;
  /** pending: when the slot was taken; sent: when the command left. */
  at: number;
}

const NO_SLOT: CooldownSlot = Object.freeze({
  sent(_now: number): void {},
  release(): void {},
});

/** What a PIN given in a message was, when it was not the right one. */
type PinKind = "missing" | "candidate" | "unusable";

/**
 * The state of one deployed node: cooldown slots per door and lock, wrong PINs, the lockout.
 * A new state (a deploy) starts with none of them. Memory is bounded: a slot is dropped once its
 * cooldown is over, at most LOCKOUT_AFTER - 1 wrong PINs are ever kept.
 */
export class AccessState {
  readonly rules: AccessRules;
  private readonly slots = new Map<string, SlotEntry>();
  private nextSweep = -Infinity;
  private wrongPins: number[] = [];
  private lockedUntil: number | null = null;
  private lockedWith = 0;
  /** Cache of the local time for one UTC second (offsets are whole seconds). */
  private cachedSecond = Number.NaN;
  private cachedDay = 0;
  private cachedMinute = 0;
  /** The zone's offset from UTC in minutes, known over [offsetFrom, offsetUntil) (OFFSET_SPAN_MS). */
  private offset = 0;
  private offsetFrom = Number.POSITIVE_INFINITY;
  private offsetUntil = Number.NEGATIVE_INFINITY;
  /** When the local time was last read through Intl. */
  private lastRead = Number.NEGATIVE_INFINITY;

  constructor(rules: AccessRules) {
    this.rules = rules;
  }

  /**
   * Checks one message against the rules, in their order, and takes the door's cooldown slot
   * when it is allowed. Synchronous: no other message can be checked between the test of the
   * slot and its taking.
   */
  check(input: CheckInput): AccessDecision {
    const { now } = input;
    if (typeof now !== "number" || !Number.isFinite(now)) throw new TypeError("check() needs now as a finite number of ms");
    const rules = this.rules;

    // 1. actor, 2. schedule
    const early = this.doorless(input.actor, now);
    if (early !== null) return early;

    // 3. cooldown (tested here, taken only once every rule has allowed the message)
    const cooldownMs = rules.cooldown * 1000;
    let key = "";
    if (cooldownMs > 0) {
      key = `${input.deviceId}/${input.lockId ?? "-"}`;
      const e = this.slots.get(key);
      if (e !== undefined) {
        if (e.at > now) e.at = now; // a clock set back never lengthens a wait
        const elapsed = now - e.at;
        if (e.pending && elapsed < SLOT_HOLD_MS) {
          return deny("cooldown", `a command for this door is being sent through this node; try again in ${rules.cooldown} s`, rules.cooldown);
        }
        if (!e.pending && elapsed < cooldownMs) {
          const left = Math.ceil((cooldownMs - elapsed) / 1000);
          return deny("cooldown", `this door was opened through this node less than ${rules.cooldown} s ago; try again in ${left} s`, left);
        }
      }
    }

    // 4. PIN, and the lockout it leads to. The lockout is looked at before the PIN is compared,
    // so that while it lasts no answer says whether a PIN was right.
    if (rules.hasPin) {
      const lock = this.lockout(now);
      if (lock.locked) {
        return deny("locked-out", `locked: ${lock.wrongPins} wrong PINs, every message is refused until ${rules.formatClock(lock.until!)} (${rules.timeZone})`, lock.retryAfter!);
      }
      const kind = this.comparePin(input.pin);
      if (kind !== true) {
        if (kind === "missing") return deny("pin", "a PIN is needed: msg.pin is missing");
        this.wrongPins.push(now);
        if (this.wrongPins.length >= LOCKOUT_AFTER) {
          this.lockedWith = this.wrongPins.length;
          this.lockedUntil = now + LOCKOUT_MS;
          this.wrongPins = [];
          return {
            allowed: false,
            reason: "pin",
            message: `wrong PIN; that was ${LOCKOUT_AFTER} wrong PINs within ${LOCKOUT_WINDOW_MS / 60_000} minutes: every message is refused until ${rules.formatClock(this.lockedUntil)} (${rules.timeZone})`,
            lockoutStarted: true,
          };
        }
        return deny("pin", kind === "unusable" ? "wrong PIN (msg.pin must be the PIN's digits, as text or a number)" : "wrong PIN");
      }
    }

    // Every rule allowed it: take the slot.
    if (cooldownMs === 0) return { allowed: true, slot: NO_SLOT };
    this.sweep(now, cooldownMs);
    const entry: SlotEntry = { pending: true, at: now };
    this.slots.set(key, entry);
    return { allowed: true, slot: this.slotFor(key, entry) };
  }

  /**
   * The rules that need no door, actor then schedule, as `check()` applies them, without taking
   * a slot or counting anything: a node asks this before it resolves a door name against the
   * service, so that a message these rules refuse makes no request at all. `check()` applies them
   * again afterwards (the time may have moved on). null: neither refuses.
   */
  precheck(input: { actor: unknown; now: number }): Denied | null {
    const { now } = input;
    if (typeof now !== "number" || !Number.isFinite(now)) throw new TypeError("precheck() needs now as a finite number of ms");
    return this.doorless(input.actor, now);
  }

  /** The lockout as of `now`, for the node status ("locked: 5 wrong PINs, until 14:32"). */
  lockout(now: number): LockoutState {
    if (this.lockedUntil !== null) {
      if (this.lockedUntil - now > LOCKOUT_MS) this.lockedUntil = now + LOCKOUT_MS; // clock set back
      if (now < this.lockedUntil) {
        return { locked: true, wrongPins: this.lockedWith, until: this.lockedUntil, retryAfter: Math.ceil((this.lockedUntil - now) / 1000) };
      }
      this.lockedUntil = null;
      this.lockedWith = 0;
    }
    this.pruneWrongPins(now);
    return { locked: false, wrongPins: this.wrongPins.length, until: null, retryAfter: null };
  }

  /** "locked: 5 wrong PINs, until 14:32" while locked, else null. */
  lockoutText(now: number): string | null {
    const l = this.lockout(now);
    return l.locked ? `locked: ${l.wrongPins} wrong PINs, until ${this.rules.formatClock(l.until!)}` : null;
  }

  /** Counters for tests and diagnostics (no secret): slots held, wrong PINs kept. */
  stats(): { slots: number; wrongPins: number; lockedUntil: number | null } {
    return { slots: this.slots.size, wrongPins: this.wrongPins.length, lockedUntil: this.lockedUntil };
  }

  /**
   * What each rule's state means at `now`, without changing it (tests and diagnostics; no
   * secret): the slots still in force (pending, or sent within the cooldown), the wrong PINs
   * still counted, the lockout's end.
   */
  snapshot(now: number): { slots: { key: string; pending: boolean; at: number }[]; wrongPins: number[]; lockedUntil: number | null } {
    const cooldownMs = this.rules.cooldown * 1000;
    const slots = [...this.slots]
      .filter(([, e]) => now - Math.min(e.at, now) < (e.pending ? SLOT_HOLD_MS : cooldownMs))
      .map(([key, e]) => ({ key, pending: e.pending, at: e.at }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const locked = this.lockedUntil !== null && now < this.lockedUntil;
    return {
      slots,
      wrongPins: locked ? [] : this.wrongPins.filter((t) => now - Math.min(t, now) < LOCKOUT_WINDOW_MS),
      lockedUntil: locked ? this.lockedUntil : null,
    };
  }

  toJSON(): object {
    return { rules: this.rules.toJSON(), ...this.stats() };
  }

  toString(): string {
    return `AccessState(${this.rules.summary()})`;
  }

  /** Actor, then schedule: state-free, the first two rules of check() and all of precheck(). */
  private doorless(actor: unknown, now: number): Denied | null {
    const rules = this.rules;
    if (!rules.actorAllowed(actor)) {
      const who = typeof actor === "string" ? `"${clipText(actor, 100)}"` : "the actor";
      return deny("actor", `${who} is not among the actors allowed to open doors through this node`);
    }
    if (rules.windows.length > 0) {
      const { day, minute } = this.localAt(now);
      if (!rules.inWindows(day, minute)) {
        return deny("schedule", `outside this node's schedule: it is ${DAY_NAMES[day]} ${pad(Math.floor(minute / 60))}:${pad(minute % 60)} in ${rules.timeZone}`);
      }
    }
    return null;
  }

  private localAt(now: number): { day: number; minute: number } {
    const second = Math.floor(now / 1000);
    if (second !== this.cachedSecond) {
      let t: { day: number; minute: number };
      if (now >= this.offsetFrom && now < this.offsetUntil) {
        t = shifted(now, this.offset);
      } else {
        t = this.rules.localTime(now);
        // A node whose messages come within the hour also reads the offset an hour ahead: the
        // same offset at both ends means none changed between (OFFSET_SPAN_MS), and the local
        // time of that hour is then worked out without Intl. A node with one message now and
        // then reads Intl once per message, as without the cache.
        if (now - this.lastRead < OFFSET_SPAN_MS && now >= this.lastRead) {
          const offset = offsetOf(now, t);
          const ahead = now + OFFSET_SPAN_MS;
          if (offsetOf(ahead, this.rules.localTime(ahead)) === offset) {
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

  /** true for the right PIN; else why not. Constant time over the stored PIN. */
  private comparePin(pin: unknown): true | PinKind {
    let text: string | null;
    let kind: PinKind = "candidate";
    if (pin === undefined || pin === null || pin === "") {
      text = null;
      kind = "missing";
    } else if (typeof pin === "string") {
      text = pin.length <= PIN_MAX_DIGITS ? pin : null; // a longer text can never be the PIN
    } else if (typeof pin === "number" && Number.isSafeInteger(pin) && pin >= 0) {
      text = String(pin); // a number has no leading zeros: it never matches a PIN that starts with 0
    } else {
      text = null;
      kind = "unusable";
    }
    const secret = secrets.get(this.rules)!;
    // Masked and compared for every message that reaches the PIN, in the same 16 bytes, so the
    // time taken does not depend on the stored PIN nor on how many digits were right.
    maskPin(text, secret.key, secret.scratch);
    const same = timingSafeEqual(secret.scratch, secret.masked);
    return same && text !== null ? true : kind;
  }

  private pruneWrongPins(now: number): void {
    const w = this.wrongPins;
    for (let i = 0; i < w.length; i++) if (w[i] > now) w[i] = now; // a clock set back
    let drop = 0;
    while (drop < w.length && now - w[drop] >= LOCKOUT_WINDOW_MS) drop++;
    if (drop > 0) w.splice(0, drop);
  }

  /** Drops slots whose cooldown (or hold) is over; at most once per cooldown (or minute). */
  private sweep(now: number, cooldownMs: number): void {
    if (now < this.nextSweep && this.nextSweep - now <= Math.max(cooldownMs, 60_000)) return;
    for (const [k, e] of this.slots) {
      if (e.at > now) e.at = now; // a clock set back never lengthens a wait, nor ends one
      if (now - e.at >= (e.pending ? SLOT_HOLD_MS : cooldownMs)) this.slots.delete(k);
    }
    this.nextSweep = now + Math.max(cooldownMs, 60_000);
  }

  private slotFor(key: string, entry: SlotEntry): CooldownSlot {
    const slots = this.slots;
    return {
      sent(now: number): void {
        if (slots.get(key) !== entry || !entry.pending) return;
        // Held past SLOT_HOLD_MS, the slot is dropped as released, whether or not a sweep has
        // removed it yet: its late sent() starts no cooldown.
        if (now - Math.min(entry.at, now) >= SLOT_HOLD_MS) {
          slots.delete(key);
          return;
        }
        entry.pending = false;
        entry.at = now;
      },
      release(): void {
        if (slots.get(key) === entry && entry.pending) slots.delete(key);
      },
    };
  }
}

const mod = (a: number, n: number): number => ((a % n) + n) % n;

/** ISO weekday (1..7) and minute of the day of `now` shifted by `offset` minutes. */
function shifted(now: number, offset: number): { day: number; minute: number } {
  const m = Math.floor(now / 60_000) + offset;
  // 1970-01-01, day 0, was a Thursday (ISO 4).
  return { day: mod(Math.floor(m / 1440) + 3, 7) + 1, minute: mod(m, 1440) };
}

/** The offset from UTC, in minutes, of a zone whose wall clock reads `local` at `now`. */
function offsetOf(now: number, local: { day: number; minute: number }): number {
  const utc = shifted(now, 0);
  const week = 7 * 1440;
  return mod((local.day - utc.day) * 1440 + (local.minute - utc.minute) + week / 2, week) - week / 2;
}

function deny(reason: DenyReason, message: string, retryAfter?: number): Denied {
  return retryAfter === undefined ? { allowed: false, reason, message } : { allowed: false, reason, message, retryAfter };
}

function pad(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}
