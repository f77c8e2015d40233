/**
 * What an operator is told (docs/events.md): one hub of events per account in this runtime,
 * keyed by the account key, so every config-node copy, every core that replaces another (a new
 * password, a conflict resolved) and every `door-events` node of the account meet in one place.
 *
 * The hub turns what the package already learns into events, one per change and never one per
 * message: the session's state and the client's holds and failed connections (session/...), a
 * door's reachability as the device list, a status read or an unlock answer tells it
 * (device/...), and what the nodes report (unlock/..., rule/..., service/...). It makes no
 * request of its own. It knows nothing of Node-RED: `door-events` nodes subscribe with the
 * kinds they want, and the sidebar reads the last events.
 *
 * No event holds a token, password, phone number, email or PIN: the fields are the ones named
 * here, and the texts are the package's own words.
 */
import type { ClientObserver } from "../client/client.js";
import type { SessionSnapshot, SessionState } from "../session/types.js";
import { type Clock, systemClock } from "../util/clock.js";

import type { EventKind } from "./event-kinds.js";

export { DEFAULT_KINDS, EVENT_KINDS, type EventKind, eventKinds } from "./event-kinds.js";
/** How many of the last events the sidebar shows (docs/events.md#in-the-sidebar). */
export const RECENT_EVENTS = 20;

export interface AccountEvent {
  readonly kind: EventKind;
  readonly event: string;
  /** ISO time. */
  readonly at: string;
  /** One line for a person: what happened and what to do. */
  readonly message: string;
  readonly [field: string]: unknown;
}

export type EventListener = (event: AccountEvent) => void;

/** The session as the hub reads it: one core of the account at a time. */
export interface EventSource {
  readonly clock: Clock;
  readonly session: {
    readonly state: SessionState;
    on(event: "state", fn: (s: SessionSnapshot) => void): unknown;
    off(event: "state", fn: (s: SessionSnapshot) => void): unknown;
  };
  readonly client: { heldForMs(): number };
}

type Condition = "ready" | "halted" | "rate-limited" | "unreachable";

export class AccountEvents implements ClientObserver {
  private readonly listeners = new Map<EventListener, ReadonlySet<EventKind>>();
  private readonly wanted = new Map<EventKind, number>();
  private readonly recentEvents: AccountEvent[] = [];
  /** What the package last learnt of each door: online or not (the first thing learnt is not a change). */
  private readonly doors = new Map<number, boolean>();
  private condition: Condition | null = null;
  private source: EventSource | null = null;
  private sessionState: SessionState = "idle";
  private sessionReason: string | null = null;
  private connectionDown: string | null = null;
  private holdTimer: unknown = null;
  private holdClock: Clock = systemClock;
  private lastDifferences = "";
  /** The session is "unreachable" because its login was answered 429 (a wait, not a lost service). */
  private waitingOutLogin = false;
  /** A configuration conflict stops the account (no core runs): its text, else null. */
  private conflictText: string | null = null;
  /** The service answered the attached core (a resumed pair alone proves nothing: it may be down). */
  private answeredSinceAttach = false;

  /** Whether a listener wants `kind`: the unlock path asks it before it builds an event. */
  wants(kind: EventKind): boolean {
    return (this.wanted.get(kind) ?? 0) > 0;
  }

  /** A `door-events` node listens; returns its unsubscribe. */
  subscribe(kinds: readonly EventKind[], fn: EventListener): () => void {
    const set = new Set(kinds);
    this.listeners.set(fn, set);
    for (const k of set) this.wanted.set(k, (this.wanted.get(k) ?? 0) + 1);
    return () => {
      if (!this.listeners.delete(fn)) return;
      for (const k of set) this.wanted.set(k, (this.wanted.get(k) ?? 1) - 1);
    };
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  /** The last events (oldest first), `unlock` events excepted: the audit table shows those. */
  recent(): AccountEvent[] {
    return [...this.recentEvents];
  }

  /** Tells every listener of its kind; a listener that throws never stops the others nor the caller. */
  emit(kind: EventKind, event: string, message: string, fields: Record<string, unknown> = {}): void {
    const e: AccountEvent = { ...fields, kind, event, at: new Date(this.holdClock.now()).toISOString(), message };
    if (kind !== "unlock") {
      this.recentEvents.push(e);
      if (this.recentEvents.length > RECENT_EVENTS) this.recentEvents.shift();
    }
    if (!this.wants(kind)) return;
    // A Map iterates safely while a listener unsubscribes (a node closing mid-event).
    for (const [fn, kinds] of this.listeners) {
      if (!kinds.has(kind)) continue;
      try {
        fn(e);
      } catch {
        /* a listener's failure is its own */
      }
    }
  }

  // ---- the session ----------------------------------------------------------------------

  /** A core of the account starts: its session and client feed the hub until `detach()`. */
  attach(source: EventSource): () => void {
    const previous = this.source;
    if (previous) previous.session.off("state", this.onState);
    this.source = source;
    this.holdClock = source.clock;
    this.sessionState = source.session.state;
    this.waitingOutLogin = false;
    this.conflictText = null; // a core runs only when the settings agree
    this.answeredSinceAttach = false;
    source.session.on("state", this.onState);
    return () => {
      source.session.off("state", this.onState);
      if (this.source === source) {
        this.source = null;
        this.stopHoldTimer();
      }
    };
  }

  private readonly onState = (snap: SessionSnapshot): void => {
    this.sessionState = snap.state;
    this.sessionReason = snap.reason;
    // A login answered 429 leaves the session "unreachable" until a message logs in again: that
    // is the service's wait (rate-limited), not a service that cannot be reached.
    this.waitingOutLogin = snap.state === "unreachable" && (this.source?.client.heldForMs() ?? 0) > 0;
    if (snap.state === "ready") this.connectionDown = null;
    this.evaluate();
  };

  answered(): void {
    const first = !this.answeredSinceAttach;
    this.answeredSinceAttach = true;
    if (this.connectionDown === null && !first) return;
    this.connectionDown = null;
    this.evaluate();
  }

  unreachable(detail: string): void {
    if (this.connectionDown !== null) return;
    this.connectionDown = detail;
    this.evaluate();
  }

  /**
   * The account's door-account nodes differ in password or session store (registry.ts): no core
   * runs and every message fails as session-halted, so it is a halt (reason "conflict").
   */
  configurationConflict(text: string): void {
    this.conflictText = text;
    this.evaluate();
  }

  held(): void {
    this.evaluate();
    this.watchHold();
  }

  /** The account's condition now, from the session's state, the client's hold and the last connection. */
  private current(): Condition | null {
    if (this.conflictText !== null) return "halted";
    const s = this.sessionState;
    if (s === "halted-login-failed" || s === "halted-superseded") return "halted";
    if (this.source && this.source.client.heldForMs() > 0) return "rate-limited";
    // After a login's wait: no change until the next login (ready) or a failed connection.
    if (s === "unreachable" && this.waitingOutLogin && this.connectionDown === null) return null;
    if (s === "unreachable" || s === "store-unreachable") return "unreachable";
    if (this.connectionDown !== null && s !== "closed" && s !== "idle") return "unreachable";
    // A stored pair resumed at start is no proof: ready once the service has answered this core.
    if (s === "ready") return this.answeredSinceAttach ? "ready" : null;
    return null; // logging in, renewing, closed: no change to tell
  }

  private evaluate(): void {
    const next = this.current();
    if (next === null || next === this.condition) return;
    // session/ready once at start and after each of the others ends (docs/events.md#session).
    this.condition = next;
    switch (next) {
      case "ready":
        this.emit("session", "ready", "the door account is working: doors can be opened");
        return;
      case "halted": {
        if (this.conflictText !== null) {
          this.emit(
            "session",
            "halted",
            "the session stopped: door-account nodes of this login differ in password or session store. Make their settings agree and deploy",
            { reason: "conflict", detail: this.conflictText },
          );
          return;
        }
        const superseded = this.sessionState === "halted-superseded";
        this.emit(
          "session",
          "halted",
          superseded
            ? "the session stopped: another client logged in to this account. Give Node-RED an account of its own (or log the other client out), then press Reconnect in the Door access sidebar or redeploy"
            : "the session stopped: the service refused the login. Correct the account's phone number, email or password in its dialog and deploy, or press Reconnect",
          { reason: superseded ? "superseded" : "login-refused", detail: this.sessionReason },
        );
        return;
      }
      case "rate-limited": {
        const left = Math.ceil((this.source?.client.heldForMs() ?? 0) / 1000);
        this.emit(
          "session",
          "rate-limited",
          `the service asked this account to wait ${left} s (429): nothing is sent until then; slow down what sends the messages if this repeats`,
          { retryAfter: left },
        );
        return;
      }
      case "unreachable": {
        const store = this.sessionState === "store-unreachable";
        this.emit(
          "session",
          "unreachable",
          store
            ? "the session store (Redis) cannot be reached: doors cannot be opened until it is back. Check the Redis server"
            : "the service cannot be reached: doors cannot be opened until it is back. Check the network and the service's base URL",
          { what: store ? "session-store" : "service", detail: store ? this.sessionReason : this.connectionDown },
        );
        return;
      }
    }
  }

  /** The end of a hold is a change too: looked at again when it is over. */
  private watchHold(): void {
    const src = this.source;
    if (!src) return;
    const left = src.client.heldForMs();
    if (left <= 0) return;
    this.stopHoldTimer();
    const clock = src.clock;
    this.holdClock = clock;
    this.holdTimer = clock.setTimeout(() => {
      this.holdTimer = null;
      if (this.source !== src) return;
      if (src.client.heldForMs() > 0) this.watchHold();
      else this.evaluate();
    }, left + 5);
  }

  private stopHoldTimer(): void {
    if (this.holdTimer !== null) this.holdClock.clearTimeout(this.holdTimer);
    this.holdTimer = null;
  }

  // ---- doors ----------------------------------------------------------------------------

  /**
   * What the package learnt of a door's reachability (a list, a status read, an unlock answered
   * 200 or 503): an event when it changed (docs/events.md#device).
   */
  door(deviceId: number, door: string | null, online: boolean): void {
    const before = this.doors.get(deviceId);
    if (before === online) return;
    this.doors.set(deviceId, online);
    if (before === undefined) return;
    const name = door ?? `door ${deviceId}`;
    this.emit(
      "device",
      online ? "online" : "offline",
      online
        ? `${name} is reachable again`
        : `${name} is offline or out of range: it cannot be opened from here. Check its power and connection`,
      { deviceId, door },
    );
  }

  /** Every door of a device list. */
  doorsListed(list: readonly { id: number; name?: string | null; online?: boolean | null }[]): void {
    for (const d of list) if (typeof d.online === "boolean") this.door(d.id, d.name ?? null, d.online);
  }

  // ---- the service description ----------------------------------------------------------

  /** The description check found these differences (said once per change, however many accounts share it). */
  descriptionDiffers(differences: readonly string[]): void {
    const key = differences.join("\n");
    if (key === this.lastDifferences) return;
    this.lastDifferences = key;
    if (differences.length === 0) return;
    const n = differences.length;
    this.emit(
      "service",
      "description-changed",
      `the service's description differs from the one this package was built for in ${n} thing${n === 1 ? "" : "s"} it relies on: doors keep working; look for a package update`,
      { differences: [...differences] },
    );
  }
}

const hubs = new Map<string, AccountEvents>();

/** The hub of an account (its account key), made on first use. */
export function accountEvents(key: string): AccountEvents {
  let hub = hubs.get(key);
  if (!hub) hubs.set(key, (hub = new AccountEvents()));
  return hub;
}

/**
 * For shutdown and tests (as a restart): forget the hubs nobody listens to, with what they learnt
 * (the next start says session/ready again, and the first thing learnt of a door is no change).
 */
export function forgetIdleEventHubs(): void {
  for (const [key, hub] of hubs) if (hub.listenerCount === 0) hubs.delete(key);
}
