/**
 * The session's state, its reason and since when (docs/session.md#login-and-start-up), owned here
 * and changed only through `set`, which checks every change against the one table of allowed
 * changes (transitions.ts): a change it forbids is refused and logged, and throws in the test
 * suite. The session and its renewals read it and ask it to change; nothing else writes it.
 */
import type { Clock } from "../util/clock.js";
import { IllegalTransitionError, strictTransitions, transitionAllowed } from "./transitions.js";
import type { SessionLog, SessionState } from "./types.js";

export class SessionStatus {
  private current: SessionState = "idle";
  private why: string | null = null;
  private words: string | null = null;
  private changedAt: number;

  constructor(
    private readonly clock: Clock,
    private readonly log: SessionLog,
    /** Told after each change that made a difference (the session emits its "state" event). */
    private readonly onChange: () => void,
  ) {
    this.changedAt = clock.now();
  }

  get state(): SessionState {
    return this.current;
  }

  get reason(): string | null {
    return this.why;
  }

  /** A few words of the reason for a node status ("connection refused"), when there are. */
  get detail(): string | null {
    return this.words;
  }

  get since(): number {
    return this.changedAt;
  }

  /** A change the transition table forbids is refused (transitions.ts); nothing leaves `closed`. */
  set(state: SessionState, reason: string | null, detail: string | null = null): void {
    if (this.current === "closed" && state !== "closed") return;
    if (!transitionAllowed(this.current, state)) {
      const illegal = new IllegalTransitionError(this.current, state);
      if (strictTransitions.enabled) {
        strictTransitions.seen?.(illegal);
        throw illegal;
      }
      this.log.error(illegal.message);
      return;
    }
    const changed = this.current !== state || this.why !== reason || this.words !== detail;
    this.current = state;
    this.why = reason;
    this.words = detail;
    if (changed) {
      this.changedAt = this.clock.now();
      this.onChange();
    }
  }
}
