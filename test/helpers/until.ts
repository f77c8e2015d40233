/**
 * Waiting on a condition (docs/testing.md#writing-a-test-that-runs-beside-others), apart from
 * test/helpers/flow.ts so that a test file that starts no Node-RED can use it and stay in the fast
 * loop (test/helpers/test-scope.ts).
 */

/** Waits for a condition (15 s by default: a login takes seconds when the machine runs eight files at once). */
export async function until(what: string, cond: () => boolean, timeoutMs = 15_000, stepMs = 10): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/**
 * Waits until `count()` reaches `target`, for as long as it keeps moving: fails only when the count
 * has not changed for `stallMs` (a stall, never a machine that is merely slow), or passes `target`.
 */
export async function untilCount(
  what: string,
  count: () => number,
  target: number,
  stallMs = 60_000,
  stepMs = 100,
): Promise<void> {
  let last = count();
  let lastChange = Date.now();
  while (last < target) {
    await new Promise((r) => setTimeout(r, stepMs));
    const now = count();
    if (now !== last) {
      last = now;
      lastChange = Date.now();
    } else if (Date.now() - lastChange > stallMs) {
      throw new Error(`${what}: stuck at ${last} of ${target} for ${Math.round(stallMs / 1000)} s`);
    }
  }
  if (last > target) throw new Error(`${what}: ${last}, more than ${target}`);
}
