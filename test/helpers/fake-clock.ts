/**
 * A sinon fake clock installed on a private object, not on the real globals: the session's
 * timers and the simulator's clock follow it, while undici and mocha keep real time.
 */
import sinon from "sinon";
import type { Clock } from "../../src/util/clock.js";

export interface FakeClock extends Clock {
  /** Advance time, firing due timers and letting promises settle between them. */
  tickAsync(ms: number): Promise<void>;
  /** Set the wall clock forward (or back, ms < 0) without firing timers; monotonic() does not move. */
  jump(ms: number): void;
  uninstall(): void;
  pendingTimers(): number;
}

export function fakeClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)): FakeClock {
  const ctx: Record<string, unknown> = {
    Date,
    setTimeout,
    clearTimeout,
    setInterval,
    clearInterval,
    setImmediate,
    clearImmediate,
    Promise,
    queueMicrotask,
  };
  const clock = sinon.useFakeTimers({
    global: ctx as never,
    now: start,
    toFake: ["setTimeout", "clearTimeout", "Date", "setInterval", "clearInterval"],
  } as never);
  let jumped = 0;
  return {
    now: () => clock.now,
    monotonic: () => clock.now - jumped,
    setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
    clearTimeout: (h) => clock.clearTimeout(h as never),
    async tickAsync(ms) {
      await clock.tickAsync(ms);
    },
    jump(ms) {
      jumped += ms;
      clock.setSystemTime(clock.now + ms);
    },
    uninstall: () => clock.uninstall(),
    pendingTimers: () => clock.countTimers(),
  };
}
