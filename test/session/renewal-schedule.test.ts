/**
 * When the session renews (docs/session.md#renewal), on a fake clock against the simulator
 * (refreshes counted in its request log): a quarter of a short token's lifetime before it expires,
 * every 36 h for long ones, never less than 30 s apart, and all of it whatever the local clock
 * says (hours fast, set back every minute): bounded, never a loop, no login.
 */
import { strict as assert } from "node:assert";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import type { Clock } from "../../src/util/clock.js";
import { fakeClock, type FakeClock } from "../helpers/fake-clock.js";
import { count, logins } from "../helpers/requests.js";
import { buildSession, closeAll, ops, sessionOnFakeClock, waitUntil, type Built } from "../helpers/session.js";

const MIN = 60_000;
const H = 60 * MIN;

describe("Renewal is bounded whatever the lifetime and the local clock: a quarter-lifetime before exp, 36 h at most, never less than 30 s apart (docs/session.md#renewal)", function () {
  this.timeout(30_000);
  // Fixed in 6ca31c5.
  let sim: RunningSimulator;
  let clock: FakeClock;
  let b: Built;
  afterEach(async () => {
    await closeAll({ b, sim, clock });
  });
  async function setup(accessTtlSec: number, offsetMs = 0) {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false, now: () => clock.now(), accessTtlSec });
    // The session's clock may be off from the service's by offsetMs (same timers).
    const local: Clock = {
      now: () => clock.now() + offsetMs,
      monotonic: () => clock.monotonic(),
      setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
      clearTimeout: (h) => clock.clearTimeout(h),
    };
    b = buildSession(sim, { clock: local });
    await b.session.start();
    sim.control.resetRequests();
  }
  const refreshes = () => sim.control.requests({ operation: "refreshToken" }).length;

  it("1 h tokens: no refresh in the first 8 s, then one every 45 min", async () => {
    await setup(3600);
    await clock.tickAsync(8000);
    assert.equal(refreshes(), 0, "the old code refreshed about 700 times here");
    for (let i = 1; i <= 3; i++) {
      await clock.tickAsync(45 * 60_000);
      await waitUntil(
        () => refreshes() === i && b.session.state === "ready",
        5000,
        () => `refresh ${i}: ${JSON.stringify(ops(sim))}`,
      );
      assert.equal(
        b.session.snapshot().renewAt! - clock.now(),
        45 * 60_000 - 0,
        "next renewal a quarter-lifetime before exp",
      );
    }
  });

  it("a local clock 45 h fast: 48 h tokens are still renewed every 36 h, not in a loop", async () => {
    await setup(48 * 3600, 45 * H);
    await clock.tickAsync(8000);
    assert.equal(refreshes(), 0);
    assert.ok(b.session.snapshot().renewAt! - (clock.now() + 45 * H) > 35 * H, "renewal 36 h after it was obtained");
  });

  it("1 min tokens over 10 min: renewals spaced by at least the minimum interval (30 s)", async () => {
    await setup(60);
    // From renewal to renewal: the clock is moved to the time the session has scheduled, then
    // the refresh (real HTTP, its pair saved and the lock released) is waited for before the clock
    // moves again.
    const end = clock.now() + 10 * MIN;
    for (let i = 1; ; i++) {
      const due = b.session.snapshot().renewAt;
      assert.ok(
        typeof due === "number",
        `a renewal is scheduled after refresh ${i - 1}: ${JSON.stringify(b.session.snapshot())}`,
      );
      if (due > end) break;
      await clock.tickAsync(Math.max(due - clock.now(), 0));
      await waitUntil(
        () =>
          refreshes() === i && b.session.state === "ready" && !b.session.busy && b.session.snapshot().renewAt !== due,
        5000,
        () => `refresh ${i} at ${clock.now()}: ${JSON.stringify(ops(sim))} ${JSON.stringify(b.session.snapshot())}`,
      );
    }
    const n = refreshes();
    assert.ok(
      n >= 5 && n <= 21,
      `${n} refreshes in 10 min; ops ${JSON.stringify(ops(sim))}; log ${b.log.lines.join(" | ")}; at ${clock.now()}: ${JSON.stringify(b.session.snapshot())}`,
    );
    const times = sim.control.requests({ operation: "refreshToken" }).map((r) => r.startedAt);
    for (let i = 1; i < times.length; i++)
      assert.ok(
        times[i] - times[i - 1] >= 30_000,
        `refreshes ${i - 1} and ${i} only ${times[i] - times[i - 1]} ms apart`,
      );
  });
});

describe("1-minute tokens with the wall clock set an hour back every minute: no login, renewals at most one per 30 s (docs/session.md#renewal)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let b: Built;

  afterEach(async () => {
    await closeAll({ b, sim, clock });
  });
  const call = () => b.session.call((t) => b.client.getDevice(t, 101));

  it("1-minute tokens for 10 minutes, a message every 5 s, the wall clock set an hour back every minute: no login, renewals spaced (at most one per 30 s)", async () => {
    ({ sim, clock, b } = await sessionOnFakeClock({ accessTtlSec: 60, timings: { minRenewalIntervalMs: 30_000 } }));
    for (let s = 5; s <= 600; s += 5) {
      await clock.tickAsync(5000);
      if (s % 60 === 0) clock.jump(-H);
      await call();
    }
    assert.equal(logins(sim), 0, JSON.stringify(ops(sim)));
    assert.ok(count(sim, "refreshToken") <= 21, `${count(sim, "refreshToken")} refreshes in 10 min`);
    assert.ok(count(sim, "refreshToken") >= 9, `${count(sim, "refreshToken")} refreshes in 10 min for 1-minute tokens`);
  });
});
