/**
 * A message that arrives while the login is under way waits for it, up to 30 s; then it fails as
 * `service-unreachable`, with nothing sent (docs/session.md#login-and-start-up). The login is held
 * at the simulator (a latency fault); the account's clock is a fake one, so the 30 s are fake
 * time and the test asserts when the message fails, not how long a run takes.
 */
import { strict as assert } from "node:assert";
import { rmSync } from "node:fs";
import * as path from "node:path";
import { Account } from "../../src/account/account.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { performUnlock, type UnlockResult } from "../../src/unlock/unlock.js";
import type { Clock } from "../../src/util/clock.js";
import { fakeClock, type FakeClock } from "../helpers/fake-clock.js";
import { DEMO_PHONE, tempDir, waitUntil } from "../helpers/session.js";

const WAIT_MS = 30_000;

describe("a message waiting for the login fails after 30 s (not before) as service-unreachable, with nothing sent (docs/session.md#login-and-start-up)", function () {
  this.timeout(20_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let dir: string;
  let account: Account | null = null;

  beforeEach(async () => {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false });
    dir = tempDir("door-login-wait-");
  });
  afterEach(async () => {
    await sim.close(); // ends the held login first
    const closing = account?.close(0);
    await clock.tickAsync(120_000); // whatever still waits on the account's clock (a test that failed half-way)
    await closing;
    account = null;
    clock.uninstall();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the login held at the service: the unlock has no outcome at 29.999 s, and at 30 s it is service-unreachable, mayHaveOpened false; no PUT, one login request", async () => {
    sim.control.inject({ kind: "latency", endpoint: "loginByPhone", latencyMs: 600_000 });
    // The account's clock, noting each timer it is asked for (to know when the message's wait is set).
    const asked: number[] = [];
    const spied: Clock = {
      now: () => clock.now(),
      monotonic: () => clock.monotonic(),
      setTimeout: (fn, ms) => (asked.push(ms), clock.setTimeout(fn, ms)),
      clearTimeout: (h) => clock.clearTimeout(h),
    };
    account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      clock: spied,
    });
    void account.start();
    await waitUntil(
      () => sim.control.inFlight().some((e) => e.operation === "loginByPhone"),
      5000,
      "the login at the service",
    );
    assert.equal(account.session.state, "logging-in");
    const before = asked.length;

    let result: UnlockResult | null = null;
    const done = performUnlock(
      account,
      {
        msgDeviceId: 101,
        msgDoor: undefined,
        msgLockId: undefined,
        msgActor: undefined,
        msgRetain: undefined,
        msgid: "m1",
      },
      { nodeId: "u1", door: null, lockId: "", actor: "", rejectRetained: true },
      (r) => (result = r),
    );
    await waitUntil(
      () => asked.length > before,
      5000,
      "the message to wait for the login (a timer on the account's clock)",
    );

    await clock.tickAsync(WAIT_MS - 1);
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    assert.equal(result, null, "still waiting just before 30 s");

    await clock.tickAsync(1);
    await waitUntil(() => result !== null, 5000, "the outcome at 30 s");
    const r = result as unknown as UnlockResult;
    assert.equal(r.outcome, "service-unreachable", JSON.stringify(r));
    assert.equal(r.status, null);
    assert.equal(r.mayHaveOpened, false);
    assert.match(r.message ?? "", /still logging-in after 30 s/);
    assert.equal(
      sim.control.requests().filter((e) => e.operation.startsWith("unlock")).length +
        sim.control.inFlight().filter((e) => e.operation.startsWith("unlock")).length,
      0,
      "no PUT",
    );
    assert.equal(
      sim.control.inFlight().filter((e) => e.operation === "loginByPhone").length +
        sim.control.requests({ operation: "loginByPhone" }).length,
      1,
      "one login, still held",
    );
    await clock.tickAsync(100); // the closing record's flush timer
    await done;
  });
});
