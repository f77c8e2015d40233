/**
 * The clock every timer of the package goes through, so tests can drive the 36 h / 48 h /
 * 24 h clocks with sinon's fake timers without faking the timers undici itself uses.
 */
export interface Clock {
  /** Wall-clock time in ms since epoch: for what is shared with others (token expiry, records). */
  now(): number;
  /**
   * A monotonic time in ms that never jumps when the wall clock is set: for every wait the
   * package measures itself (Retry-After, back-off, renewal spacing, the re-login window).
   */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Node's own timers; every timer is unref'd so a forgotten one never keeps a process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.min(Math.max(0, ms), 2_147_483_647));
    t.unref();
    return t;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

/** Resolves after `ms` on `clock`; rejects with the signal's reason if aborted first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason ?? new Error("aborted"));
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal?.reason ?? new Error("aborted"));
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
