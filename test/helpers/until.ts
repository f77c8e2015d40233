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
