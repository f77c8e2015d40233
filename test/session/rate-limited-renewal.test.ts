/**
 * A renewal the service rate-limited (docs/session.md#rate-limits), on a fake clock against the
 * simulator (requests counted in its request log): a refresh answered 429 binds every later
 * renewal, scheduled or needed by a message, whatever the wall clock does; a token that expired
 * meanwhile is renewed with its refresh token after the Retry-After, not replaced by a login; the
 * operator's Reconnect within the Retry-After sends nothing, says when it will log in, and after
 * it one renewal follows (docs/session.md#halts-and-reconnect); a close in between cancels it.
 */
import { strict as assert } from "node:assert";
import { RenewalFailedError } from "../../src/session/errors.js";
import type { RunningSimulator } from "../../src/simulator/index.js";
import type { FakeClock } from "../helpers/fake-clock.js";
import { count, logins } from "../helpers/requests.js";
import { closeAll, ops, sessionOnFakeClock, waitUntil, type Built } from "../helpers/session.js";

const MIN = 60_000;

describe("A refresh answered 429 binds every later renewal, whatever the clocks do, and the operator's Reconnect: nothing is sent within its Retry-After (docs/session.md#rate-limits)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let b: Built;

  async function setup(accessTtlSec: number) {
    ({ sim, clock, b } = await sessionOnFakeClock({ accessTtlSec }));
  }
  afterEach(async () => {
    await closeAll({ b, sim, clock });
  });
  const call = () => b.session.call((t) => b.client.getDevice(t, 101));

  // Fixed in c309f63.
  it("a 1 h token that expires within a scheduled refresh's Retry-After is not refreshed before it has passed", async () => {
    await setup(3600);
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 1200, count: 1 });
    // 1 h token: renewal due at 45 min; it is answered 429 Retry-After 1200 s (until 65 min).
    await clock.tickAsync(45 * MIN + 1000);
    await waitUntil(
      () => count(sim, "refreshToken") === 1 && b.session.state === "ready",
      5000,
      () => `the scheduled refresh: ${JSON.stringify(ops(sim))}`,
    );
    assert.equal(b.session.state, "ready");
    // At 59.5 min the token is within its expiry skew; a message needs the session.
    await clock.tickAsync(14 * MIN);
    await assert.rejects(call(), (e: unknown) => e instanceof RenewalFailedError && e.rateLimited);
    assert.equal(
      count(sim, "refreshToken"),
      1,
      `a refresh 14 min into a 20 min Retry-After: ${JSON.stringify(ops(sim))}`,
    );
    assert.equal(logins(sim), 0, JSON.stringify(ops(sim)));
  });

  // The refresh token lives 30 days and a login ends the session: a good refresh token is not thrown away for a login.
  // Fixed in d68fe75.
  it("a 1 h token that expired while its refreshes were answered 429: after the Retry-After the next message refreshes with the stored refresh token, no login", async () => {
    await setup(3600);
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 1200, count: 2 });
    // Renewal due at 45 min: 429 until 65 min; then the token has expired (60 min) and the retry is 429 again.
    await clock.tickAsync(45 * MIN + 1000);
    // The session must have read the 429 (and set its retry after the Retry-After) before the clock moves.
    await waitUntil(
      () => count(sim, "refreshToken") === 1 && b.session.state !== "refreshing",
      5000,
      () => `the scheduled refresh: ${JSON.stringify(ops(sim))}`,
    );
    await clock.tickAsync(20 * MIN + 1000);
    await waitUntil(
      () => count(sim, "refreshToken") === 2 && b.session.state !== "refreshing",
      5000,
      () => `the retried refresh: ${JSON.stringify(ops(sim))}`,
    );
    await clock.tickAsync(20 * MIN + 1000);
    await call();
    assert.equal(logins(sim), 0, `logged in although the refresh token was good: ${JSON.stringify(ops(sim))}`);
    assert.deepEqual(ops(sim).slice(-2), ["refreshToken 200", "getDevice 200"]);
  });

  // Fixed in c309f63.
  it("whatever the wall clock does: a scheduled refresh answered 429 Retry-After 600 s, wall clock set 4 h forward: no refresh (nor login) before 600 s have passed", async () => {
    await setup(24 * 3600);
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 600, count: 1 });
    // 24 h token: renewal due at 21 h.
    await clock.tickAsync(21 * 60 * MIN + 1000);
    await waitUntil(
      () => count(sim, "refreshToken") === 1 && b.session.state === "ready",
      5000,
      () => `the scheduled refresh: ${JSON.stringify(ops(sim))}`,
    );
    assert.equal(b.session.state, "ready");
    clock.jump(4 * 60 * MIN); // a time sync sets the wall clock forward: the token looks expired
    await clock.tickAsync(1000);
    await call().catch(() => undefined);
    assert.equal(
      count(sim, "refreshToken") + logins(sim),
      1,
      `renewed 2 s into a 600 s Retry-After: ${JSON.stringify(ops(sim))}`,
    );
  });

  // Fixed in c309f63.
  it("Reconnect pressed after a refresh answered 429 Retry-After 300 s sends no login within it", async () => {
    await setup(24 * 3600);
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 300, count: 1 });
    await assert.rejects(call());
    assert.equal(count(sim, "refreshToken"), 1);
    await b.session.reconnect();
    await b.session.reconnect();
    assert.equal(logins(sim), 0, `Reconnect logged in 0 s into a 300 s Retry-After: ${JSON.stringify(ops(sim))}`);
  });

  it("refresh answered 429 Retry-After 300 s after a 401 (token expired at the service), Reconnect twice, then close before it passes: no login at all", async () => {
    await setup(24 * 3600);
    sim.control.expireAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 300, count: 1 });
    await assert.rejects(call());
    await b.session.reconnect();
    await b.session.reconnect();
    assert.equal(logins(sim), 0, JSON.stringify(ops(sim)));
    await b.session.close();
    await clock.tickAsync(400_000);
    assert.equal(logins(sim), 0, JSON.stringify(ops(sim)));
    assert.equal(clock.pendingTimers(), 0);
  });
});

describe("Reconnect within a refresh's Retry-After sends nothing until it has passed, then one renewal (docs/session.md#halts-and-reconnect)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let b: Built;
  afterEach(async () => {
    await closeAll({ b, sim, clock });
  });

  // Fixed in c309f63.
  it("refresh answered 429 Retry-After 300 s after a 401, Reconnect pressed: nothing is sent within it (the state says when), then one renewal (the scheduled refresh, or the deferred login), ready", async () => {
    ({ sim, clock, b } = await sessionOnFakeClock());
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 300, count: 1 });
    await assert.rejects(b.session.call((t) => b.client.getDevice(t, 101)));
    await b.session.reconnect();
    assert.match(b.session.snapshot().reason ?? "", /reconnect requested: login in \d+ s/);
    await clock.tickAsync(299_000);
    assert.equal(logins(sim), 0, JSON.stringify(ops(sim)));
    await clock.tickAsync(2000);
    const renewals = () =>
      logins(sim) + sim.control.requests({ operation: "refreshToken" }).filter((r) => r.status === 200).length;
    await waitUntil(
      () => renewals() === 1 && b.session.state === "ready",
      5000,
      () => `one renewal after the Retry-After: ${JSON.stringify(ops(sim))}`,
    );
    await clock.tickAsync(60_000);
    await b.session.call((t) => b.client.getDevice(t, 101));
    assert.equal(
      renewals(),
      1,
      `the deferred Reconnect logged in over a session renewed after it was pressed: ${JSON.stringify(ops(sim))}`,
    );
  });
});
