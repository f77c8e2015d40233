/**
 * Which state of the session may follow which (docs/session.md#login-and-start-up, the states'
 * table and the list of what follows each). SessionStatus.set (session-status.ts) checks every change
 * against TRANSITIONS: staying in a state (a new reason) is always allowed, and nothing follows
 * `closed` (refused silently, as close() intends). Any other change not in the table is a bug: it
 * is refused and logged, never thrown, so that it cannot crash Node-RED; the test suite turns it
 * into a failure (`strictTransitions`, set by test/hooks/no-unhandled.ts).
 */
import type { SessionState } from "./types.js";

/** From each state, the states the session may go to next. */
export const TRANSITIONS: Readonly<Record<SessionState, readonly SessionState[]>> = {
  // A start resumes a stored pair (ready, or refreshing when it is due), logs in, or waits for a
  // Retry-After held over from the session this one replaced (unreachable).
  idle: ["logging-in", "refreshing", "ready", "unreachable", "closed"],
  "logging-in": [
    "refreshing",
    "ready",
    "unreachable",
    "store-unreachable",
    "halted-login-failed",
    "halted-superseded",
    "closed",
  ],
  refreshing: ["logging-in", "ready", "unreachable", "store-unreachable", "halted-superseded", "closed"],
  ready: ["logging-in", "refreshing", "unreachable", "store-unreachable", "halted-superseded", "closed"],
  unreachable: ["logging-in", "refreshing", "ready", "store-unreachable", "halted-superseded", "closed"],
  "store-unreachable": ["logging-in", "refreshing", "ready", "unreachable", "halted-superseded", "closed"],
  // Only an operator's Reconnect (or a redeploy) leaves a halt.
  "halted-login-failed": ["logging-in", "closed"],
  "halted-superseded": ["logging-in", "closed"],
  closed: [],
};

/** Whether the session may go from `from` to `to` (staying is always allowed). */
export function transitionAllowed(from: SessionState, to: SessionState): boolean {
  return from === to || TRANSITIONS[from].includes(to);
}

/**
 * Set by the test suite: a transition the table forbids throws instead of being logged, and is
 * told to `seen` (the suite fails the file even when the throw was caught on the way).
 */
export const strictTransitions: { enabled: boolean; seen: ((e: Error) => void) | null } = {
  enabled: false,
  seen: null,
};

/** A transition the table forbids, thrown only when `strictTransitions.enabled`. */
export class IllegalTransitionError extends Error {
  constructor(
    readonly from: SessionState,
    readonly to: SessionState,
  ) {
    super(`session: illegal state transition ${from} → ${to} refused`);
    this.name = "IllegalTransitionError";
  }
}
