/**
 * The access rules of door-unlock (docs/access-rules.md), as pure logic: it knows nothing of
 * Node-RED, of the service or of the audit log. The node reads its configuration with
 * `parseAccessRules`, keeps one `AccessState` per deployed node (`rules.newState()`), asks
 * `check()` for every message before anything is sent, and tells the state what became of an
 * allowed message (docs/architecture.md#the-access-rules-engine).
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
 * This module holds the rule set (`AccessRules`, immutable) and is the one the rest of the
 * package imports. Its parts:
 *
 * - src/unlock/access-config.ts: reading the node's configuration, every problem listed
 *   (docs/access-rules.md#configuration-errors);
 * - src/unlock/access-schedule.ts: the weekly windows, the zone and its wall clock
 *   (docs/access-rules.md#schedule, #time-zone-and-daylight-saving);
 * - src/unlock/access-pin.ts: the PIN, kept masked, compared in constant time
 *   (docs/access-rules.md#pin-and-lockout);
 * - src/unlock/access-state.ts: one node's state (cooldown slots, wrong PINs, the lockout) and
 *   `check()` (docs/access-rules.md#cooldown, #pin-and-lockout).
 */
import { type AccessRulesConfig, readAccessConfig } from "./access-config.js";
import { keepPin } from "./access-pin.js";
import {
  type CompiledWindow,
  type LocalTime,
  type ScheduleWindow,
  compileWindow,
  inAnyWindow,
  readWallClock,
} from "./access-schedule.js";
import { AccessState, type RuleSet } from "./access-state.js";

export type { AccessRulesConfig } from "./access-config.js";
export {
  type AccessDecision,
  AccessState,
  type CheckInput,
  type CooldownSlot,
  type Denied,
  type DenyReason,
  LOCKOUT_MS,
  LOCKOUT_WINDOW_MS,
  SLOT_HOLD_MS,
} from "./access-state.js";

type ParseResult = { ok: true; rules: AccessRules } | { ok: false; problems: string[]; message: string };

/**
 * Reads a node's rule configuration. Every problem is listed (none of them names the PIN's
 * value); a rule set is returned only when all of it could be read, so a node never runs with
 * part of its rules (docs/access-rules.md#configuration-errors).
 */
export function parseAccessRules(config: AccessRulesConfig | null | undefined): ParseResult {
  const { actors, windows, zone, cooldown, pin, ...read } = readAccessConfig(config ?? {});
  const problems = read.problems.map((p) => p.text);
  if (problems.length > 0 || zone === null) {
    return { ok: false, problems, message: `the access rules cannot be read: ${problems.join("; ")}` };
  }
  return { ok: true, rules: new AccessRules(actors, windows, zone, cooldown, pin) };
}

/**
 * A node's rules, read and checked; immutable. It holds no state of its own: that is the
 * AccessState's (one per deployed node). Its JSON and inspection show the rules, and of the
 * PIN only whether there is one.
 */
export class AccessRules implements RuleSet {
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
    this.windows = windows.map(compileWindow);
    this.formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      weekday: "short",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    this.clockFormatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    if (pin !== null) keepPin(this, pin);
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
  localTime(now: number): LocalTime {
    return readWallClock(this.formatter, this.timeZone, now);
  }

  /** Whether the local (day, minute) falls in a window (docs/access-rules.md#schedule). */
  inWindows(day: number, minute: number): boolean {
    return inAnyWindow(this.windows, day, minute);
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
