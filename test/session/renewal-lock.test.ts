/**
 * The renewal lock of the file token store (docs/session.md#token-storage): two Node-RED
 * processes on one user directory never refresh at the same time; a lock someone else removed is
 * reported through onProblem, never thrown from a timer.
 */
import { strict as assert } from "node:assert";
import { rmSync } from "node:fs";
import * as path from "node:path";
import { FileTokenStore, accountKey } from "../../src/session/token-store.js";
import { tempDir, waitUntil } from "../helpers/session.js";

describe("A renewal lock someone removed is reported, not thrown from a timer (docs/session.md#token-storage)", function () {
  this.timeout(30_000);
  // Fixed in 6ca31c5.
  it("a compromised renewal lock is reported, not thrown from a timer", async () => {
    const dir = tempDir();
    const problems: string[] = [];
    const store = new FileTokenStore({
      filePath: path.join(dir, "s.json"),
      accountKey: accountKey("http://127.0.0.1:1", "phone", "+15550000009"),
      onProblem: (m) => problems.push(m),
    });
    await store.withRenewalLock(async () => {
      rmSync(path.join(dir, "s.json.lock"), { recursive: true, force: true }); // someone removed our lock
      await waitUntil(() => problems.length > 0, 8000, "the lock library to notice");
    });
    assert.match(problems[0], /compromised/);
  });
});
