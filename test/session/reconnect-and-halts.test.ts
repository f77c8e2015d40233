/**
 * Halts and Reconnect (docs/session.md#halts-and-reconnect), against the simulator (on a fake
 * clock where time matters; requests counted in its request log): Reconnect never waits on, and
 * never fails because of, a login already under way, and starts none of its own; within a login's
 * Retry-After it sends nothing and one login follows once the wait has passed on the monotonic
 * clock, unless a close or a delete cancelled it; a refused login halts (messages send nothing)
 * until one Reconnect makes one login; a login answered with something unreadable is no halt
 * (docs/session.md#login-and-start-up).
 */
import { strict as assert } from "node:assert";
import { SessionHaltedError, SessionUnavailableError } from "../../src/session/errors.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import type { FakeClock } from "../helpers/fake-clock.js";
import { logins } from "../helpers/requests.js";
import {
  DEMO_PHONE,
  buildSession,
  closeAll,
  ops,
  sessionOnFakeClock,
  waitUntil,
  type Built,
} from "../helpers/session.js";

const MIN = 60_000;
const H = 60 * MIN;

describe("Reconnect pressed twice while a login hangs never rejects and starts no login of its own (docs/session.md#halts-and-reconnect)", function () {
  this.timeout(30_000);
  // Fixed in 6ca31c5.
  it("Reconnect pressed twice while a login hangs never rejects", async () => {
    const sim = await startSimulator({ rateLimit: false });
    const b = buildSession(sim, { timings: { waitMs: 300 } });
    try {
      sim.control.inject({ kind: "latency", endpoint: "loginByPhone", latencyMs: 1500, count: 2 });
      const started = b.session.start();
      await waitUntil(
        () => sim.control.inFlight().some((e) => e.operation === "loginByPhone"),
        5000,
        "the login in flight",
      );
      // Longer than waitMs (300 ms): the old reconnect rejected here, and door-account's `void` made it fatal.
      await b.session.reconnect();
      await b.session.reconnect();
      await new Promise((r) => setTimeout(r, 400));
      await started;
      assert.equal(b.session.state, "ready");
      assert.equal(
        sim.control.requests({ operation: "loginByPhone" }).length,
        1,
        "the presses did not start logins of their own",
      );
    } finally {
      await closeAll({ b, sim });
    }
  });
});

describe("Reconnect, close and delete against the session, on a fake clock: one login at most, none after a close, no timer left; a refused login halts, an unreadable one does not (docs/session.md#halts-and-reconnect)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let b: Built;

  async function setup(opts: { start?: boolean } = {}) {
    ({ sim, clock, b } = await sessionOnFakeClock(opts));
  }
  afterEach(async () => {
    await closeAll({ b, sim, clock });
  });
  const call = () => b.session.call((t) => b.client.getDevice(t, 101));

  it("Reconnect pressed five times while the start-up login hangs, a message's wait times out, then close: one login, no unhandled rejection, no timer left", async () => {
    await setup({ start: false });
    sim.control.inject({ kind: "latency", endpoint: "loginByPhone", latencyMs: 800, count: 1 });
    const started = b.session.start();
    await waitUntil(
      () => sim.control.inFlight().some((r) => r.operation === "loginByPhone"),
      5000,
      "the login to reach the service",
    );
    const waiting = b.session.token().catch((e: unknown) => e);
    for (let i = 0; i < 5; i++) await b.session.reconnect();
    await clock.tickAsync(31_000);
    assert.ok((await waiting) instanceof SessionUnavailableError);
    await b.session.close();
    await started;
    await clock.tickAsync(10 * MIN);
    assert.equal(logins(sim), 1, JSON.stringify(ops(sim)));
    assert.equal(b.session.state, "closed");
    assert.equal(clock.pendingTimers(), 0);
  });

  it("a deferred Reconnect (login 429 Retry-After 600 s) cancelled by close: no login after close, no timer left", async () => {
    await setup({ start: false });
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 600, count: 1 });
    await b.session.start();
    assert.equal(b.session.state, "unreachable");
    await b.session.reconnect();
    await b.session.reconnect();
    await b.session.close();
    await clock.tickAsync(700_000);
    assert.equal(logins(sim), 1, JSON.stringify(ops(sim)));
    assert.equal(clock.pendingTimers(), 0);
  });

  it("a deferred Reconnect cancelled by delete (destroy): no login, no logout without a token, the pair gone", async () => {
    await setup({ start: false });
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 600, count: 1 });
    await b.session.start();
    await b.session.reconnect();
    await b.session.destroy();
    await clock.tickAsync(700_000);
    assert.equal(logins(sim), 1, JSON.stringify(ops(sim)));
    assert.equal(clock.pendingTimers(), 0);
    assert.equal(await b.store.load(), null);
  });

  it("a deferred Reconnect while the wall clock is set a day back and two days forward: one login, once 600 s have passed on the monotonic clock", async () => {
    await setup({ start: false });
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 600, count: 1 });
    await b.session.start();
    await b.session.reconnect();
    clock.jump(-24 * H);
    await clock.tickAsync(300_000);
    clock.jump(48 * H);
    await b.session.reconnect();
    await clock.tickAsync(299_000);
    assert.equal(logins(sim), 1, JSON.stringify(ops(sim)));
    await clock.tickAsync(2000);
    await waitUntil(
      () => b.session.state === "ready",
      5000,
      () => `ready: ${b.session.state} ${JSON.stringify(ops(sim))}`,
    );
    assert.equal(logins(sim), 2, JSON.stringify(ops(sim)));
  });

  it("login refused (401): halted; five messages send nothing; one Reconnect makes one login", async () => {
    await setup({ start: false });
    b = buildSession(sim, { clock, credentials: { ...DEMO_PHONE, password: "wrong-password-1" } });
    await b.session.start();
    assert.equal(b.session.state, "halted-login-failed");
    for (let i = 0; i < 5; i++) await assert.rejects(call(), SessionHaltedError);
    assert.equal(logins(sim), 1);
    await b.session.reconnect();
    assert.equal(logins(sim), 2);
  });

  it("login answered with a non-JSON 200: unreachable, not halted; no second login within the minute; one after it", async () => {
    await setup({ start: false });
    sim.control.inject({ kind: "non-json", endpoint: "loginByPhone", count: 1 });
    await b.session.start();
    assert.equal(b.session.state, "unreachable");
    for (let i = 0; i < 5; i++) await assert.rejects(call(), SessionUnavailableError);
    assert.equal(logins(sim), 1, JSON.stringify(ops(sim)));
    await clock.tickAsync(61_000);
    await call();
    assert.equal(logins(sim), 2, JSON.stringify(ops(sim)));
  });
});
