/**
 * The state of one deployed door-unlock node under its access rules, and `check()`, which applies
 * the rules in their order (docs/access-rules.md#order-of-the-rules): the cooldown slots per door
 * and lock (docs/access-rules.md#cooldown), the wrong PINs and the lockout they lead to
 * (docs/access-rules.md#pin-and-lockout). The rule set it reads is src/unlock/access-rules.ts; the
 * PIN comparison, src/unlock/access-pin.ts; the wall clock, src/unlock/access-schedule.ts.
 *
 * A message refused by one rule changes no other rule's state: the actor and the schedule keep
 * none; the cooldown slot is taken only by a message every rule allowed; a wrong PIN is counted
 * only for a message that got as far as the PIN.
 *
 * Cooldown slots: an allowed message takes its door's slot in the same synchronous call (five
 * messages in one millisecond: one is allowed), and the node then says `slot.sent(now)` when the
 * command leaves (the cooldown counts from then) or `slot.release()` when nothing was sent.
 * `release()` after `sent()` does nothing, so a node may call `sent` where the request leaves and
 * `release` in a `finally`.
 */
import { comparePin } from "./access-pin.js";
import { type LocalTime, type ScheduleWindow, LocalClock, formatLocal } from "./access-schedule.js";
import { clip } from "../util/text.js";
import {
  CEILING_AFTER,
  LOCKOUT_AFTER,
  LOCKOUT_MS,
  LOCKOUT_WINDOW_MS,
  type LockoutState,
  type PinRecord,
  TryCounter,
} from "./access-lockout.js";

export { LOCKOUT_MS, LOCKOUT_WINDOW_MS, type PinRecord } from "./access-lockout.js";
/**
 * How long a slot an allowed message took may stay neither sent nor released before it is
 * dropped as released, so that a node that forgot to settle it never blocks a door for good.
 */
export const SLOT_HOLD_MS = 5 * 60_000;

export type DenyReason = "actor" | "schedule" | "cooldown" | "pin" | "locked-out" | "pass";

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
  /**
   * The message opens with a guest pass the node has checked: the pass replaces the actor rule and
   * the PIN; the schedule, the cooldown and the lockout still apply (docs/passes.md#at-a-door-unlock).
   */
  byPass?: boolean;
}

/** The door's cooldown slot taken by an allowed message. */
export interface CooldownSlot {
  /** The command left at `now`: the cooldown runs from then. Only the first call counts. */
  sent(now: number): void;
  /** Nothing was sent: give the slot back. Does nothing after `sent()` (or a second time). */
  release(): void;
}

interface Allowed {
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

/** What a restart must not forget of a node: its count, and per door the doors' (a node kept per door). */
export interface LockoutRecord extends PinRecord {
  doors?: Record<string, PinRecord>;
}

/** One door's lockout, for the status, the events and the sidebar. */
export interface DoorLockout {
  deviceId: number;
  wrongPins: number;
  until: number;
}

/**
 * What the state reads of its rule set (AccessRules, src/unlock/access-rules.ts). The rule set's
 * PIN is kept apart from it, by src/unlock/access-pin.ts, under the same object.
 */
export interface RuleSet {
  readonly schedule: readonly ScheduleWindow[];
  readonly timeZone: string;
  /** Seconds; 0 = off. */
  readonly cooldown: number;
  readonly hasPin: boolean;
  actorAllowed(actor: unknown): boolean;
  inWindows(day: number, minute: number): boolean;
  localTime(now: number): LocalTime;
  formatClock(at: number): string;
  summary(): string;
  toJSON(): object;
}

interface SlotEntry {
  pending: boolean;
  /** pending: when the slot was taken; sent: when the command left. */
  at: number;
}

const NO_SLOT: CooldownSlot = Object.freeze({
  sent(_now: number): void {},
  release(): void {},
});

/**
 * The state of one deployed node: cooldown slots per door and lock, wrong PINs, the lockout.
 * A new state (a deploy) starts with none of them. Memory is bounded: a slot is dropped once its
 * cooldown is over, at most LOCKOUT_AFTER - 1 wrong PINs are ever kept.
 */
export class AccessState {
  readonly rules: RuleSet;
  private readonly slots = new Map<string, SlotEntry>();
  private nextSweep = -Infinity;
  /** The node's count: the whole lockout (PIN only), or the ceiling across its doors (per door). */
  private node = new TryCounter(LOCKOUT_AFTER);
  /** Per door (a node that accepts passes, keepPerDoor()): each door's count; null: kept whole. */
  private doors: Map<number, TryCounter> | null = null;
  private counted = 0;
  /** The rules' zone's wall clock, cached for this node. */
  private readonly clock: LocalClock;

  constructor(rules: RuleSet) {
    this.rules = rules;
    this.clock = new LocalClock((now) => rules.localTime(now));
  }

  /**
   * Keeps the lockout per door under a ceiling across the node's doors (a node with *Accept
   * passes*: docs/passes.md#how-hard-a-code-is-to-guess). Called before the first message.
   */
  keepPerDoor(): void {
    if (this.doors !== null) return;
    this.doors = new Map();
    this.node = new TryCounter(CEILING_AFTER);
  }

  /** Whether the lockout is kept per door. */
  get perDoor(): boolean {
    return this.doors !== null;
  }

  /**
   * Checks one message against the rules, in their order, and takes the door's cooldown slot
   * when it is allowed. Synchronous: no other message can be checked between the test of the
   * slot and its taking.
   */
  check(input: CheckInput): AccessDecision {
    const { now } = input;
    if (typeof now !== "number" || !Number.isFinite(now)) {
      throw new TypeError("check() needs now as a finite number of ms");
    }
    const rules = this.rules;

    // 1. actor, 2. schedule
    const early = this.doorless(input.actor, now, input.byPass === true);
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
          const message = `a command for this door is being sent through this node; try again in ${rules.cooldown} s`;
          return deny("cooldown", message, rules.cooldown);
        }
        if (!e.pending && elapsed < cooldownMs) {
          const left = Math.ceil((cooldownMs - elapsed) / 1000);
          const ago = `this door was opened through this node less than ${rules.cooldown} s ago`;
          return deny("cooldown", `${ago}; try again in ${left} s`, left);
        }
      }
    }

    // 4. PIN, and the lockout it leads to. The lockout is looked at before the PIN is compared,
    // so that while it lasts no answer says whether a PIN was right.
    if (rules.hasPin || input.byPass === true) {
      const locked = this.lockedOut(now, input.deviceId);
      if (locked !== null) return locked;
    }
    if (rules.hasPin && input.byPass !== true) {
      const kind = comparePin(rules, input.pin);
      if (kind !== true) {
        if (kind === "missing") return deny("pin", "a PIN is needed: msg.pin is missing");
        const unusable = "wrong PIN (msg.pin must be the PIN's digits, as text or a number)";
        return this.countWrong(now, input.deviceId, "pin", kind === "unusable" ? unusable : "wrong PIN");
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
  precheck(input: { actor: unknown; now: number; byPass?: boolean }): Denied | null {
    const { now } = input;
    if (typeof now !== "number" || !Number.isFinite(now)) {
      throw new TypeError("precheck() needs now as a finite number of ms");
    }
    return this.doorless(input.actor, now, input.byPass === true);
  }

  /**
   * A guest pass code that opens nothing (unknown) at door `deviceId`: counted as a wrong PIN is,
   * toward the same lockout (docs/passes.md#at-a-door-unlock). While locked out, says so instead.
   */
  wrongCode(now: number, deviceId: number | null = null): Denied {
    return this.lockedOut(now, deviceId) ?? this.countWrong(now, deviceId, "pass", "no pass has this code");
  }

  /**
   * A message whose code belongs to a pass, refused (by the pass, the schedule, the cooldown, or
   * before its command could leave): it told the asker that the code is real, so it costs a try as
   * a code no pass has does (docs/passes.md#how-hard-a-code-is-to-guess). The refusal as it is, or
   * the one that says the node (or the door) is now locked.
   */
  costTry(now: number, refusal: Denied, deviceId: number | null = null): Denied {
    return this.count(now, deviceId, refusal, refusal.message);
  }

  /**
   * The lockout's refusal while it lasts, else null: the node's (kept whole, or the ceiling across
   * its doors), then door `deviceId`'s when the lockout is kept per door. Looked at before any code
   * is compared; a node that accepts passes asks it before anything else of a message it can
   * (the answer is then the same whatever the message holds: docs/passes.md#how-hard-a-code-is-to-guess).
   */
  lockedOut(now: number, deviceId: number | null = null): Denied | null {
    const lock = this.node.state(now);
    if (lock.locked) {
      const what = this.doors === null ? "wrong PINs" : "wrong codes at this node's doors";
      return this.lockedText(`${lock.wrongPins} ${what}`, lock);
    }
    const door = deviceId === null ? undefined : this.doors?.get(deviceId)?.state(now);
    if (door?.locked) return this.lockedText(`${door.wrongPins} wrong codes at this door`, door);
    return null;
  }

  private lockedText(what: string, lock: LockoutState): Denied {
    const until = `${this.rules.formatClock(lock.until!)} (${this.rules.timeZone})`;
    return deny("locked-out", `locked: ${what}, every message is refused until ${until}`, lock.retryAfter!);
  }

  /** Counts a wrong PIN (or pass code); the one that reaches the limit starts the lockout. */
  private countWrong(now: number, deviceId: number | null, reason: DenyReason, what: string): Denied {
    return this.count(now, deviceId, deny(reason, what), reason === "pass" ? what : "wrong PIN");
  }

  /**
   * Counts one try, at the node and (per door) at door `deviceId`; the one that reaches a limit
   * starts that lockout, and its refusal says so after `head`.
   */
  private count(now: number, deviceId: number | null, refusal: Denied, head: string): Denied {
    this.counted++;
    let started: string | null = null;
    let until = 0;
    if (this.doors !== null && deviceId !== null) {
      let door = this.doors.get(deviceId);
      if (door === undefined) this.doors.set(deviceId, (door = new TryCounter(LOCKOUT_AFTER)));
      if (door.add(now)) {
        started = `that was ${LOCKOUT_AFTER} wrong codes at this door within ${LOCKOUT_WINDOW_MS / 60_000} minutes: at this door,`;
        until = door.state(now).until!;
      }
    }
    if (this.node.add(now)) {
      started =
        this.doors === null
          ? `that was ${LOCKOUT_AFTER} wrong PINs within ${LOCKOUT_WINDOW_MS / 60_000} minutes:`
          : `that was ${CEILING_AFTER} wrong codes at this node's doors within ${LOCKOUT_WINDOW_MS / 60_000} minutes: at every door of this node,`;
      until = this.node.state(now).until!;
    }
    if (started === null) return refusal;
    const at = `${this.rules.formatClock(until)} (${this.rules.timeZone})`;
    const locked: Denied = {
      allowed: false,
      reason: refusal.reason,
      message: `${head}; ${started} every message is refused until ${at}`,
      lockoutStarted: true,
    };
    // A cooldown's refusal carries retryAfter (docs/access-rules.md#the-node-at-run-time): now the lockout's.
    return refusal.retryAfter === undefined ? locked : { ...locked, retryAfter: LOCKOUT_MS / 1000 };
  }

  /**
   * The node's lockout as of `now`, for the node status ("locked: 5 wrong PINs, until 14:32"):
   * kept whole, the node's; kept per door, the ceiling's (the doors': doorLockouts()).
   */
  lockout(now: number): LockoutState {
    return this.node.state(now);
  }

  /** The doors locked now (a node kept per door), by device id; drops the counts that mean nothing any more. */
  doorLockouts(now: number): DoorLockout[] {
    if (this.doors === null) return [];
    const out: DoorLockout[] = [];
    for (const [deviceId, c] of this.doors) {
      const l = c.state(now);
      if (l.locked) out.push({ deviceId, wrongPins: l.wrongPins, until: l.until! });
      else if (l.wrongPins === 0) this.doors.delete(deviceId);
    }
    return out.sort((a, b) => a.deviceId - b.deviceId);
  }

  /**
   * Ends a lockout before its time (the host: docs/access-rules.md#what-ends-a-lockout): door
   * `deviceId`'s, or with null every lockout of the node (the node's, the ceiling's and every
   * door's); the tries counted toward them are forgotten too. Returns the locks it ended: "node"
   * and the device ids.
   */
  endLockout(now: number, deviceId: number | null): (number | "node")[] {
    const ended: (number | "node")[] = [];
    if (deviceId === null || this.doors === null) {
      if (this.node.end(now)) ended.push("node");
      for (const [id, c] of this.doors ?? []) if (c.end(now)) ended.push(id);
      this.doors?.clear();
    } else {
      const c = this.doors.get(deviceId);
      if (c?.end(now)) ended.push(deviceId);
      this.doors.delete(deviceId);
    }
    this.counted++; // the record is written again
    return ended;
  }

  /**
   * What a restart must not forget (docs/access-rules.md#what-ends-a-lockout): the wrong PINs still
   * counted and the lockouts, with the time (epoch ms) after which they mean nothing (null: nothing
   * to keep). No PIN and nothing about one.
   */
  lockoutRecord(now: number): { record: LockoutRecord; expiresAt: number } | null {
    const mine = this.node.record(now);
    const doors: Record<string, PinRecord> = {};
    let expiresAt = mine?.expiresAt ?? 0;
    for (const [id, c] of this.doors ?? []) {
      const kept = c.record(now);
      if (kept === null) continue;
      doors[String(id)] = kept.record;
      expiresAt = Math.max(expiresAt, kept.expiresAt);
    }
    if (mine === null && Object.keys(doors).length === 0) return null;
    const record: LockoutRecord = mine?.record ?? { wrongPins: [], lockedUntil: null, lockedWith: 0 };
    return { record: this.doors === null ? record : { ...record, doors }, expiresAt };
  }

  /**
   * Takes back what lockoutRecord kept, before the first message is checked. Read defensively
   * (it comes from a file or Redis): anything unusable is ignored; times in the future (a clock
   * set back) count from now, and a lockout never runs longer than LOCKOUT_MS from now. Merged
   * with what this state already has, never shortening it.
   */
  restoreLockout(record: unknown, now: number): void {
    this.node.restore(record, now);
    if (this.doors === null || typeof record !== "object" || record === null) return;
    const doors = (record as { doors?: unknown }).doors;
    if (typeof doors !== "object" || doors === null) return;
    for (const [key, kept] of Object.entries(doors as Record<string, unknown>).slice(0, 1000)) {
      const id = Number(key);
      if (!Number.isInteger(id)) continue;
      let c = this.doors.get(id);
      if (c === undefined) this.doors.set(id, (c = new TryCounter(LOCKOUT_AFTER)));
      c.restore(kept, now);
      if (c.empty(now)) this.doors.delete(id);
    }
  }

  /** Counts the wrong PINs this state has counted: a node keeps its record when it grows. */
  get wrongPinCount(): number {
    return this.counted;
  }

  /** "locked: 5 wrong PINs, until 14:32" while locked, else null. */
  lockoutText(now: number): string | null {
    const l = this.lockout(now);
    const what = this.doors === null ? "wrong PINs" : "wrong codes at this node's doors";
    return l.locked ? `locked: ${l.wrongPins} ${what}, until ${this.rules.formatClock(l.until!)}` : null;
  }

  /** Counters for tests and diagnostics (no secret): slots held, wrong PINs kept. */
  stats(): { slots: number; wrongPins: number; lockedUntil: number | null } {
    return {
      slots: this.slots.size,
      wrongPins: this.node.kept,
      lockedUntil: this.node.snapshot(Date.now()).lockedUntil,
    };
  }

  /**
   * What each rule's state means at `now`, without changing it (tests and diagnostics; no
   * secret): the slots still in force (pending, or sent within the cooldown), the wrong PINs
   * still counted, the lockout's end.
   */
  snapshot(now: number): {
    slots: { key: string; pending: boolean; at: number }[];
    wrongPins: number[];
    lockedUntil: number | null;
  } {
    const cooldownMs = this.rules.cooldown * 1000;
    const slots = [...this.slots]
      .filter(([, e]) => now - Math.min(e.at, now) < (e.pending ? SLOT_HOLD_MS : cooldownMs))
      .map(([key, e]) => ({ key, pending: e.pending, at: e.at }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return { slots, ...this.node.snapshot(now) };
  }

  toJSON(): object {
    return { rules: this.rules.toJSON(), ...this.stats() };
  }

  toString(): string {
    return `AccessState(${this.rules.summary()})`;
  }

  /** Actor, then schedule: state-free, the first two rules of check() and all of precheck(). */
  private doorless(actor: unknown, now: number, byPass = false): Denied | null {
    const rules = this.rules;
    if (!byPass && !rules.actorAllowed(actor)) {
      const who = typeof actor === "string" ? `"${clip(actor, 100, "…")}"` : "the actor";
      return deny("actor", `${who} is not among the actors allowed to open doors through this node`);
    }
    if (rules.schedule.length > 0) {
      const { day, minute } = this.clock.at(now);
      if (!rules.inWindows(day, minute)) {
        return deny("schedule", `outside this node's schedule: it is ${formatLocal(day, minute)} in ${rules.timeZone}`);
      }
    }
    return null;
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

function deny(reason: DenyReason, message: string, retryAfter?: number): Denied {
  return retryAfter === undefined
    ? { allowed: false, reason, message }
    : { allowed: false, reason, message, retryAfter };
}
