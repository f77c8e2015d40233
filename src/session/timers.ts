/**
 * The session's timers on its clock (a fake one in tests): a one-shot timer that knows when it
 * fires, a wait bounded in time, and a wait for something to settle, bounded in time.
 */
import type { Clock } from "../util/clock.js";

/** One pending call of `fire` at most; starting it again replaces the pending one. */
export class OneShotTimer {
  private handle: unknown = null;
  /** ms since epoch (the clock's `now`) when it fires, while it is pending. */
  at: number | null = null;

  constructor(private readonly clock: Clock) {}

  get pending(): boolean {
    return this.handle !== null;
  }

  /** `now`: the clock's time the delay is counted from, when the caller has already read it. */
  start(delayMs: number, fire: () => void, now = this.clock.now()): void {
    this.stop();
    this.at = now + delayMs;
    this.handle = this.clock.setTimeout(() => {
      this.handle = null;
      this.at = null;
      fire();
    }, delayMs);
  }

  stop(): void {
    if (this.handle !== null) this.clock.clearTimeout(this.handle);
    this.handle = null;
    this.at = null;
  }
}

/** `p`, or `timedOut()` as a rejection once `ms` have passed first. */
export function within(clock: Clock, p: Promise<void>, ms: number, timedOut: () => Error): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const t = clock.setTimeout(() => reject(timedOut()), ms);
    p.then(
      () => {
        clock.clearTimeout(t);
        resolve();
      },
      (e) => {
        clock.clearTimeout(t);
        reject(e);
      },
    );
  });
}

/** Resolves when `p` has settled or `ms` have passed, whichever is first; never rejects. */
export async function settledWithin(clock: Clock, p: Promise<unknown>, ms: number): Promise<void> {
  let t: unknown = null;
  await Promise.race([p.catch(() => undefined), new Promise<void>((r) => (t = clock.setTimeout(r, ms)))]);
  if (t !== null) clock.clearTimeout(t);
}
