/**
 * Closing and deleting an account while a login or renewal is in flight, against the simulator
 * (requests counted in its request log): a close leaves no renewal timer behind; a delete logs out
 * the session the login or refresh in flight brought, with its token, and deletes the stored pair
 * (docs/session.md#one-session-per-account); a close lets a refresh in flight finish and store its
 * pair, so the next start needs no login (docs/session.md#renewal).
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { fakeClock, type FakeClock } from "../helpers/fake-clock.js";
import { count, logins } from "../helpers/requests.js";
import { buildSession, closeAll, ops, tempDir, waitUntil, type Built } from "../helpers/session.js";

describe("Closing or deleting while a login or refresh is in flight: no timer left; a delete logs out the session it brought and deletes the pair (docs/session.md#one-session-per-account)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock | null = null;
  let b: Built;
  afterEach(async () => {
    await closeAll({ b, sim, clock });
    clock = null;
  });

  // Fixed in c309f63.
  it("after close no timer is left running: a refresh in flight at close() that is answered 429 leaves no renewal timer behind", async () => {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false });
    b = buildSession(sim, { clock, timings: { minRenewalIntervalMs: 1000 } });
    await b.session.start();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 300, latencyMs: 300, count: 1 });
    const pending = b.session.call((t) => b.client.getDevice(t, 101)).catch((e: unknown) => e);
    await waitUntil(
      () => sim.control.inFlight().some((r) => r.operation === "refreshToken"),
      5000,
      "the refresh to reach the service",
    );
    await b.session.close();
    await pending;
    assert.equal(count(sim, "refreshToken"), 1);
    assert.equal(b.session.state, "closed");
    assert.equal(
      clock.pendingTimers(),
      0,
      `timers left after close: ${clock.pendingTimers()} (renewAt ${b.session.snapshot().renewAt})`,
    );
  });

  // Fixed in c309f63.
  it("deleting the account logs out and deletes the stored pair: deleted while the start-up login is in flight, the session that login opened is logged out", async () => {
    sim = await startSimulator({ rateLimit: false });
    b = buildSession(sim);
    sim.control.inject({ kind: "latency", endpoint: "loginByPhone", latencyMs: 400, count: 1 });
    const started = b.session.start();
    await waitUntil(
      () => sim.control.inFlight().some((r) => r.operation === "loginByPhone"),
      5000,
      "the login to reach the service",
    );
    await b.session.destroy();
    await started;
    assert.equal(count(sim, "loginByPhone"), 1);
    assert.equal(
      sim.control.hasSession("demo"),
      false,
      `the session opened by the login in flight is still active at the service: ${JSON.stringify(ops(sim))}`,
    );
    assert.equal(await b.store.load(), null, "the stored pair is deleted");
  });

  // Fixed in c309f63.
  it("deleting the account logs out: deleted while a refresh is in flight, the logout carries the token that refresh brought", async () => {
    sim = await startSimulator({ rateLimit: false });
    b = buildSession(sim);
    await b.session.start();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "latency", endpoint: "refreshToken", latencyMs: 400, count: 1 });
    const pending = b.session.call((t) => b.client.getDevice(t, 101)).catch((e: unknown) => e);
    await waitUntil(
      () => sim.control.inFlight().some((r) => r.operation === "refreshToken"),
      5000,
      "the refresh to reach the service",
    );
    await b.session.destroy();
    await pending;
    assert.equal(count(sim, "refreshToken"), 1);
    assert.equal(
      sim.control.hasSession("demo"),
      false,
      `the session is still active at the service after the account was deleted: ${JSON.stringify(ops(sim))}`,
    );
  });
});

describe("Closing lets a refresh in flight finish and store its pair: the next start needs no login (docs/session.md#renewal)", function () {
  this.timeout(30_000);
  // Fixed in 6ca31c5.
  it("closing lets a refresh in flight finish and persist its pair: the next start needs no login", async () => {
    const sim = await startSimulator({ rateLimit: false });
    const tokenFile = path.join(tempDir(), "s.json");
    const first = buildSession(sim, { tokenFile });
    await first.session.start();
    sim.control.expireAccessToken("demo");
    // The service executes the refresh (the token is consumed) and answers only after 800 ms.
    sim.control.inject({ kind: "slow-headers", endpoint: "refreshToken", latencyMs: 800, count: 1 });
    const call = first.session.call((t) => first.client.getDevice(t, 101)).catch((e: Error) => e);
    await waitUntil(
      () => sim.control.inFlight().some((e) => e.operation === "refreshToken"),
      5000,
      "the refresh in flight",
    );
    await first.session.close();
    await call;
    await first.client.close();
    sim.control.resetRequests();
    const second = buildSession(sim, { tokenFile });
    try {
      await second.session.start();
      const d = await second.session.call((t) => second.client.getDevice(t, 101));
      assert.equal(d.id, 101);
      assert.equal(logins(sim), 0, `the rotated pair was persisted: ${JSON.stringify(ops(sim))}`);
    } finally {
      await closeAll({ b: second, sim });
    }
  });
});
