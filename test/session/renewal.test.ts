/**
 * Proactive renewal (docs/session.md#renewal): the access token lives about 48 h (`exp` is
 * authoritative); the pair is renewed 36 h after it was obtained or 3 h before `exp`, whichever
 * comes first; timers are cleared on close. Driven by a fake clock shared by the session and
 * the simulator.
 */
import { strict as assert } from "node:assert";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { fakeClock, type FakeClock } from "../helpers/fake-clock.js";
import { Session } from "../../src/session/session.js";
import { DEMO_PHONE, buildSession, closeAll, ops, tickUntil, waitUntil, type Built } from "../helpers/session.js";

const H = 3600_000;

describe("session: the pair is renewed 36 h after it was obtained or 3 h before exp, whichever is first, with renewals spaced and no login (docs/session.md#renewal)", function () {
  this.timeout(20_000);
  let sim: RunningSimulator;
  let b: Built;
  let clock: FakeClock;

  async function setup(accessTtlSec: number) {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false, now: () => clock.now(), accessTtlSec });
    b = buildSession(sim, { clock });
    await b.session.start();
    sim.control.resetRequests();
  }
  afterEach(async () => {
    await closeAll({ b, sim, clock });
  });

  it("with a 48 h token, renews at 36 h (not before), once", async () => {
    await setup(48 * 3600);
    await clock.tickAsync(36 * H - 1000);
    assert.equal(sim.control.requests().length, 0, "nothing before 36 h");
    await clock.tickAsync(1000);
    await waitUntil(() => b.session.state === "ready" && sim.control.requests().length === 1, 5000, "renewal");
    assert.deepEqual(ops(sim), ["refreshToken 200"]);
  });

  it("with a 30 h token, renews 3 h before exp (27 h), which comes before 36 h", async () => {
    await setup(30 * 3600);
    await clock.tickAsync(27 * H - 1000);
    assert.equal(sim.control.requests().length, 0);
    await clock.tickAsync(1000);
    await waitUntil(() => sim.control.requests().length === 1 && b.session.state === "ready", 5000, "renewal");
    assert.deepEqual(ops(sim), ["refreshToken 200"]);
    // The next renewal is scheduled from the new pair: 27 h later, not earlier.
    const renewAt = b.session.snapshot().renewAt;
    assert.equal(renewAt, clock.now() + 27 * H);
  });

  it("keeps renewing over a week with one refresh per period and no login", async () => {
    await setup(48 * 3600);
    for (let i = 0; i < 5; i++) {
      await clock.tickAsync(36 * H);
      const why = () =>
        `renewal ${i + 1} (state ${b.session.state}, requests ${JSON.stringify(ops(sim))}, renewAt ${b.session.snapshot().renewAt! - clock.now()} ms from now)`;
      await waitUntil(() => sim.control.requests().length === i + 1 && b.session.state === "ready", 15_000, why);
    }
    assert.deepEqual(ops(sim), Array(5).fill("refreshToken 200"));
  });

  it("a proactive refresh failing on 5xx keeps the still-valid token and tries again later, without logging in", async () => {
    await setup(48 * 3600);
    sim.control.inject({ kind: "503", endpoint: "refreshToken", count: 2 });
    await clock.tickAsync(36 * H);
    await waitUntil(() => sim.control.requests().length === 1, 5000, "first refresh");
    // The back-off before the client's single retry: moved only once it is set.
    await tickUntil(clock, () => sim.control.requests().length === 2, 10_000, "the client's retry");
    await waitUntil(() => sim.control.requests().length === 2 && b.session.state === "ready", 5000, "retry");
    assert.deepEqual(ops(sim), ["refreshToken 503", "refreshToken 503"]);
    const d = await b.session.call((t) => b.client.getDevice(t, 101));
    assert.equal(d.id, 101, "the kept token still works");
    await clock.tickAsync(15 * 60_000);
    await waitUntil(() => sim.control.requests({ operation: "refreshToken" }).length === 3, 5000, "later retry");
    assert.deepEqual(ops(sim), ["refreshToken 503", "refreshToken 503", "getDevice 200", "refreshToken 200"]);
  });

  it("a renewal that comes due while the previous refresh is still releasing its lock is not lost", async () => {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false, now: () => clock.now(), accessTtlSec: 48 * 3600 });
    b = buildSession(sim, { clock });
    await b.session.close();
    // The same file store, but the lock release of the first renewal is held until we open it.
    let openGate!: () => void;
    const gate = new Promise<void>((r) => (openGate = r));
    let renewals = 0;
    const store = Object.create(b.store) as typeof b.store;
    store.withRenewalLock = async (fn) => {
      const result = await b.store.withRenewalLock(fn);
      if (++renewals === 1) await gate;
      return result;
    };
    const session = new Session({ client: b.client, credentials: DEMO_PHONE, store, clock, log: b.log });
    b = { ...b, session };
    await session.start();
    sim.control.resetRequests();
    await clock.tickAsync(36 * H);
    await waitUntil(() => sim.control.requests().length === 1 && session.state === "ready", 5000, "first renewal");
    // The next renewal comes due while the first one has not released its lock yet.
    await clock.tickAsync(36 * H);
    openGate();
    await waitUntil(
      () => sim.control.requests().length === 2 && session.state === "ready",
      5000,
      () => `second renewal (${JSON.stringify(ops(sim))})`,
    );
    assert.deepEqual(ops(sim), ["refreshToken 200", "refreshToken 200"]);
  });

  // docs/session.md#rate-limits: the spacing stays for the renewals the session starts on its
  // own, and consecutive 429s grow the wait beyond it, up to 15 min; no timer fires in a loop.
  it("scheduled renewals answered 429 (Retry-After: 0) again and again: never closer than the spacing, then doubling, at most 15 min apart", async () => {
    await setup(48 * 3600);
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 0, count: 14 });
    await clock.tickAsync(36 * H);
    for (let i = 1; i <= 14; i++) {
      const why = () => `renewal ${i} (state ${b.session.state}, requests ${JSON.stringify(ops(sim))})`;
      await waitUntil(
        () =>
          sim.control.requests().length === i && b.session.state === "ready" && b.session.snapshot().renewAt !== null,
        5000,
        why,
      );
      // Only the session's own timer renews here: moved to exactly when it is due.
      if (i < 14) await clock.tickAsync(b.session.snapshot().renewAt! - clock.now());
    }
    const at = sim.control.requests().map((r) => r.startedAt);
    const gaps = at.slice(1).map((t, i) => (t - at[i]) / 1000);
    assert.deepEqual(
      gaps,
      [30, 30, 30, 30, 30, 30, 32, 64, 128, 256, 512, 900, 900],
      `seconds between the scheduled refreshes: ${JSON.stringify(gaps)}`,
    );
    assert.ok(b.session.snapshot().renewAt! - clock.now() <= 15 * 60_000, "the next one is at most 15 min away");
    assert.deepEqual(new Set(ops(sim)), new Set(["refreshToken 429"]), "no login: the token is still good");
  });

  it("close() clears the renewal timer: no request after close however long", async () => {
    await setup(48 * 3600);
    assert.ok(b.session.snapshot().renewAt !== null);
    await b.session.close();
    assert.equal(clock.pendingTimers(), 0, "no timer left behind");
    await clock.tickAsync(100 * H);
    assert.equal(sim.control.requests().length, 0);
  });
});
