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

/** A node's lockout as its events say it: locked-out once per lockout, lockout-ended once when it is over. */
export class LockoutEvents {
  /** The end of the lockout told (or read back at deploy), ms since epoch; null: none. */
  private told: number | null = null;

  constructor(
    private readonly rules: AccessState,
    private readonly node: string,
    private readonly hub: () => AccountEvents | null,
  ) {}

  /** A lockout read back at deploy or restart: no change, but its end will be told. */
  known(now: number): void {
    const l = this.rules.lockout(now);
    if (l.locked) this.told = l.until;
  }

  /** After a message or a timer: tells what changed. */
  check(now: number): void {
    try {
      const l = this.rules.lockout(now);
      const hub = this.hub();
      if (l.locked && l.until !== null && this.told !== l.until) {
        const already = this.told !== null;
        this.told = l.until;
        if (already || !hub) return;
        const until = new Date(l.until).toISOString();
        // The message in local time in the rules' zone; the `until` field stays ISO (docs/events.md#rule).
        const local = `${this.rules.rules.formatClock(l.until)} (${this.rules.rules.timeZone})`;
        const codes = this.rules.tries() === "codes";
        hub.emit(
          "rule",
          "locked-out",
          `${this.node}: ${l.wrongPins} wrong ${this.rules.tries()}; the node refuses every message until ${local}. If nobody you know typed them, someone is guessing ${codes ? "a code" : "the PIN"}`,
          { node: this.node, until, wrongPins: l.wrongPins },
        );
      } else if (!l.locked && this.told !== null) {
        this.told = null;
        const word = this.rules.tries() === "codes" ? "codes" : "PINs";
        hub?.emit("rule", "lockout-ended", `${this.node}: the lockout is over; the node takes ${word} again`, {
          node: this.node,
        });
      }
    } catch {
      /* events inform; they never fail a message */
    }
  }
}
