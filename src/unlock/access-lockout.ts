/**
 * The wrong tries of one door-unlock node and the lockouts they lead to
 * (docs/access-rules.md#pin-and-lockout). A node without *Accept passes* keeps one count for the
 * whole node: five wrong PINs in 15 minutes lock it. A node with *Accept passes* keeps one count
 * per door (a guest's wrong codes at one door never lock another) under a ceiling across its
 * doors: fifteen wrong tries in 15 minutes, at any of its doors, lock the whole node
 * (docs/passes.md#how-hard-a-code-is-to-guess).
 */

/** Wrong tries that lock a door (or a node kept whole), counted over a sliding LOCKOUT_WINDOW_MS. */
export const LOCKOUT_AFTER = 5;
/** Wrong tries, at any of its doors, that lock a node kept per door: three doors' worth. */
export const CEILING_AFTER = 3 * LOCKOUT_AFTER;
/** How long a wrong try counts. */
export const LOCKOUT_WINDOW_MS = 15 * 60_000;
/** How long a lockout lasts. */
export const LOCKOUT_MS = 15 * 60_000;

/** One lockout as of a time. */
export interface LockoutState {
  locked: boolean;
  /** Wrong tries counted now (while locked: the number that locked it). */
  wrongPins: number;
  /** ms since the epoch when the lockout ends; null when not locked. */
  until: number | null;
  /** Whole seconds left, rounded up; null when not locked. */
  retryAfter: number | null;
}

/** What a restart must not forget of one count: wrong tries (epoch ms) and the lockout. */
export interface PinRecord {
  wrongPins: number[];
  lockedUntil: number | null;
  lockedWith: number;
}

/** One count of wrong tries and its lockout. Memory: at most `after - 1` tries are kept. */
export class TryCounter {
  private wrong: number[] = [];
  private lockedUntil: number | null = null;
  private lockedWith = 0;

  constructor(readonly after: number) {}

  /** Counts one wrong try at `now`; true when it started the lockout. */
  add(now: number): boolean {
    this.state(now);
    if (this.lockedUntil !== null) return false;
    this.wrong.push(now);
    if (this.wrong.length < this.after) return false;
    this.lockedWith = this.wrong.length;
    this.lockedUntil = now + LOCKOUT_MS;
    this.wrong = [];
    return true;
  }

  /** The lockout as of `now`. */
  state(now: number): LockoutState {
    if (this.lockedUntil !== null) {
      if (this.lockedUntil - now > LOCKOUT_MS) this.lockedUntil = now + LOCKOUT_MS; // clock set back
      if (now < this.lockedUntil) {
        const retryAfter = Math.ceil((this.lockedUntil - now) / 1000);
        return { locked: true, wrongPins: this.lockedWith, until: this.lockedUntil, retryAfter };
      }
      this.lockedUntil = null;
      this.lockedWith = 0;
    }
    this.prune(now);
    return { locked: false, wrongPins: this.wrong.length, until: null, retryAfter: null };
  }

  /** Nothing counted and no lockout: the count may be forgotten. */
  empty(now: number): boolean {
    const s = this.state(now);
    return !s.locked && s.wrongPins === 0;
  }

  /** Ends the lockout and forgets the tries (the host ended it): true when there was a lockout. */
  end(now: number): boolean {
    const was = this.state(now).locked;
    this.lockedUntil = null;
    this.lockedWith = 0;
    this.wrong = [];
    return was;
  }

  /** What a restart must keep, with the time after which it means nothing; null: nothing. */
  record(now: number): { record: PinRecord; expiresAt: number } | null {
    const l = this.state(now);
    if (l.locked) {
      return { record: { wrongPins: [], lockedUntil: l.until, lockedWith: this.lockedWith }, expiresAt: l.until! };
    }
    if (this.wrong.length === 0) return null;
    return {
      record: { wrongPins: [...this.wrong], lockedUntil: null, lockedWith: 0 },
      expiresAt: this.wrong[this.wrong.length - 1] + LOCKOUT_WINDOW_MS,
    };
  }

  /**
   * Takes back what record() kept, read defensively: anything unusable is ignored; times in the
   * future (a clock set back) count from now; a lockout never runs longer than LOCKOUT_MS from
   * now; merged with what the count has, never shortening it.
   */
  restore(record: unknown, now: number): void {
    if (typeof record !== "object" || record === null) return;
    const r = record as Partial<Record<keyof PinRecord, unknown>>;
    const until = r.lockedUntil;
    if (typeof until === "number" && Number.isFinite(until) && until > now) {
      const at = Math.min(until, now + LOCKOUT_MS);
      const withPins = typeof r.lockedWith === "number" && r.lockedWith > 0 ? Math.min(r.lockedWith, 1000) : this.after;
      if (this.lockedUntil === null || this.lockedUntil < at) {
        this.lockedUntil = at;
        this.lockedWith = Math.max(withPins, this.lockedWith);
      }
      this.wrong = [];
      return;
    }
    if (!Array.isArray(r.wrongPins) || this.lockedUntil !== null) return;
    const kept = r.wrongPins
      .filter((t): t is number => typeof t === "number" && Number.isFinite(t))
      .map((t) => Math.min(t, now))
      .filter((t) => now - t < LOCKOUT_WINDOW_MS);
    this.wrong = [...kept, ...this.wrong].sort((a, b) => a - b).slice(-(this.after - 1));
  }

  /** The tries still counted at `now` (none while locked) and the lockout's end. */
  snapshot(now: number): { wrongPins: number[]; lockedUntil: number | null } {
    const locked = this.lockedUntil !== null && now < this.lockedUntil;
    return {
      wrongPins: locked ? [] : this.wrong.filter((t) => now - Math.min(t, now) < LOCKOUT_WINDOW_MS),
      lockedUntil: locked ? this.lockedUntil : null,
    };
  }

  /** Tries kept (tests and diagnostics). */
  get kept(): number {
    return this.wrong.length;
  }

  private prune(now: number): void {
    const w = this.wrong;
    for (let i = 0; i < w.length; i++) if (w[i] > now) w[i] = now; // a clock set back
    let drop = 0;
    while (drop < w.length && now - w[drop] >= LOCKOUT_WINDOW_MS) drop++;
    if (drop > 0) w.splice(0, drop);
  }
}
