/**
 * What a `door-unlock` node tells its account's events (docs/events.md): one `unlock/<outcome>`
 * per message that ended (built only when a `door-events` node asks for the kind), what the
 * answer taught of the door's reachability, and `rule/locked-out` / `rule/lockout-ended`.
 * Called off the door's path (after the message has left); never throws.
 */
import type { AccountEvents } from "../../src/account/events.js";
import type { AccessState } from "../../src/unlock/access-rules.js";
import type { UnlockResult } from "../../src/unlock/unlock.js";

/** One line for a person: what happened at the door (never the message's own text, which may quote a flow). */
export function unlockEventText(r: UnlockResult): string {
  const door = r.door ?? (r.deviceId !== null ? `door ${r.deviceId}` : "the door");
  if (r.outcome === "accepted") return `${door} was unlocked for ${r.actor}`;
  if (r.outcome === "denied")
    return `${door} was not opened for ${r.actor}: refused by the node's ${r.reason ?? "access"} rule`;
  const status = r.status !== null ? ` (${r.status})` : "";
  const opened = r.mayHaveOpened ? "the door may have opened: look before you send again" : "nothing was opened";
  return `${door}: ${r.outcome}${status} for ${r.actor}; ${opened}`;
}

/** Tells the account what one message ended with. */
export function tellUnlock(hub: AccountEvents, r: UnlockResult, msgid: string | null): void {
  try {
    // docs/events.md#device: an answer of the door itself is news of its reachability.
    if (r.deviceId !== null && (r.outcome === "accepted" || r.outcome === "offline"))
      hub.door(r.deviceId, r.door, r.outcome === "accepted");
    if (r.pass !== undefined && r.outcome === "accepted") {
      // docs/events.md#pass: `first` on the pass's first use ("the guest has arrived").
      const guest = r.actor.startsWith("guest:") ? r.actor.slice("guest:".length) : r.actor;
      const door = r.door ?? `door ${r.deviceId}`;
      hub.emit(
        "pass",
        "used",
        r.pass.first
          ? `${guest} used their pass for the first time, at ${door}`
          : `${guest} used their pass at ${door}`,
        { id: r.pass.id, guest, ref: r.pass.ref, deviceId: r.deviceId, door: r.door, first: r.pass.first },
      );
    }
    if (!hub.wants("unlock")) return;
    hub.emit("unlock", r.outcome, unlockEventText(r), {
      deviceId: r.deviceId,
      lockId: r.lockId,
      door: r.door,
      actor: r.actor,
      ...(r.outcome === "denied" ? { reason: r.reason ?? null } : {}),
      ...(r.status !== null ? { status: r.status } : {}),
      msgid,
    });
  } catch {
    /* events inform; they never fail a message */
  }
}

/** One lock of a node as its events name it: the node's (kept whole, or the ceiling), or a door's. */
interface Lock {
  deviceId: number | null;
  wrongPins: number;
  until: number;
}

/**
 * A node's lockouts as its events say them (docs/events.md#rule): `rule/locked-out` once per
 * lockout, naming the door (`deviceId`, `door`; both null for the whole node), and
 * `rule/lockout-ended` once when it is over, with `by`: who ended it (null: it ran out).
 */
export class LockoutEvents {
  /** The end of each lockout told (or read back at deploy), ms since epoch, by "node" or device id. */
  private readonly told = new Map<number | "node", number>();

  constructor(
    private readonly rules: AccessState,
    private readonly node: string,
    private readonly hub: () => AccountEvents | null,
    /** A door's name as the account's device list has it. */
    private readonly label: (deviceId: number) => string | null = () => null,
  ) {}

  private locks(now: number): Map<number | "node", Lock> {
    const out = new Map<number | "node", Lock>();
    const l = this.rules.lockout(now);
    if (l.locked) out.set("node", { deviceId: null, wrongPins: l.wrongPins, until: l.until! });
    for (const d of this.rules.doorLockouts(now)) out.set(d.deviceId, d);
    return out;
  }

  /** Lockouts read back at deploy or restart: no change, but their end will be told. */
  known(now: number): void {
    for (const [key, l] of this.locks(now)) this.told.set(key, l.until);
  }

  /** After a message or a timer: tells what changed. */
  check(now: number): void {
    try {
      const hub = this.hub();
      const locks = this.locks(now);
      for (const [key, l] of locks) {
        if (this.told.get(key) === l.until) continue;
        const already = this.told.has(key);
        this.told.set(key, l.until);
        if (already || !hub) continue;
        const until = new Date(l.until).toISOString();
        const door = l.deviceId === null ? null : this.doorName(l.deviceId);
        const where = door === null ? "the node refuses every message" : `${door} refuses every message`;
        const what = this.rules.perDoor ? (door === null ? "wrong tries at its doors" : "wrong tries") : "wrong PINs";
        // The message in local time in the rules' zone; the `until` field stays ISO (docs/events.md#rule).
        const local = `${this.rules.rules.formatClock(l.until)} (${this.rules.rules.timeZone})`;
        hub.emit(
          "rule",
          "locked-out",
          `${this.node}: ${l.wrongPins} ${what}; ${where} until ${local}. If nobody you know typed them, someone is guessing`,
          { node: this.node, deviceId: l.deviceId, door, until, wrongPins: l.wrongPins },
        );
      }
      for (const key of [...this.told.keys()]) if (!locks.has(key)) this.tellEnded(key, null);
    } catch {
      /* events inform; they never fail a message */
    }
  }

  /** The host ended these lockouts (`by`: the editor user, or the flow's actor). */
  ended(keys: readonly (number | "node")[], by: string): void {
    try {
      for (const key of keys) this.tellEnded(key, by);
    } catch {
      /* events inform; they never fail a message */
    }
  }

  private tellEnded(key: number | "node", by: string | null): void {
    this.told.delete(key);
    const deviceId = key === "node" ? null : key;
    const door = deviceId === null ? null : this.doorName(deviceId);
    const what = door === null ? "the node takes" : `${door} takes`;
    const how = by === null ? "is over" : `was ended by ${by}`;
    const kind = this.rules.perDoor ? "lockout" : "PIN lockout";
    this.hub()?.emit(
      "rule",
      "lockout-ended",
      `${this.node}: the ${kind} ${how}; ${what} ${this.rules.perDoor ? "codes" : "PINs"} again`,
      {
        node: this.node,
        deviceId,
        door,
        by,
      },
    );
  }

  private doorName(deviceId: number): string {
    try {
      return this.label(deviceId) ?? `#${deviceId}`;
    } catch {
      return `#${deviceId}`;
    }
  }
}
