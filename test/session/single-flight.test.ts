/**
 * One login or refresh in flight per account, whatever the number of callers
 * (docs/session.md#login-and-start-up): concurrent refreshes are serialised, and the account
 * logs in once at start-up. Every count is read from the simulator's request log.
 */
import { strict as assert } from "node:assert";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { buildSession, closeAll, type Built } from "../helpers/session.js";

describe("session: only one login or refresh is ever in flight for an account, and every caller waits for it (docs/session.md#login-and-start-up)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let b: Built;

  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: false });
  });
  afterEach(async () => {
    await closeAll({ b, sim });
  });

  it("logs in once for 50 concurrent first callers", async () => {
    b = buildSession(sim);
    void b.session.start();
    const results = await Promise.all(
      Array.from({ length: 50 }, () => b.session.call((t) => b.client.getDevice(t, 101))),
    );
    assert.equal(results.length, 50);
    assert.ok(results.every((d) => d.id === 101));
    const logins = sim.control.requests({ operation: "loginByPhone" });
    assert.equal(logins.length, 1, "exactly one login at the simulator");
    assert.equal(sim.control.requests({ operation: "getDevice" }).length, 50);
  });

  it("refreshes exactly once when 1,000 concurrent calls meet an access token the service expired (401 path)", async () => {
    b = buildSession(sim);
    await b.session.start();
    sim.control.resetRequests();
    sim.control.expireAccessToken("demo");
    const results = await Promise.all(
      Array.from({ length: 1000 }, () => b.session.call((t) => b.client.getDevice(t, 102))),
    );
    assert.equal(results.length, 1000);
    const refreshes = sim.control.requests({ operation: "refreshToken" });
    assert.equal(refreshes.length, 1, "one refresh for 1,000 callers");
    assert.equal(refreshes[0].status, 200);
    assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 0, "no login");
    const gets = sim.control.requests({ operation: "getDevice" });
    const unauthorized = gets.filter((r) => r.status === 401).length;
    // Each call is sent at most twice: the original and the one replay.
    assert.ok(gets.length <= 2000, `at most one replay per call, saw ${gets.length} GETs`);
    assert.equal(gets.filter((r) => r.status === 200).length, 1000);
    assert.equal(gets.length, 1000 + unauthorized);
    assert.equal(b.session.state, "ready");
  });

  it("refreshes exactly once when 1,000 calls meet an access token past its exp (no 401 needed)", async () => {
    const { fakeClock } = await import("../helpers/fake-clock.js");
    const clock = fakeClock();
    await sim.close();
    sim = await startSimulator({ rateLimit: false, now: () => clock.now() });
    b = buildSession(sim, { clock });
    await b.session.start();
    sim.control.resetRequests();
    clock.jump(49 * 3600_000); // past the 48 h exp, without firing the renewal timer
    await Promise.all(Array.from({ length: 1000 }, () => b.session.call((t) => b.client.getDevice(t, 101))));
    assert.equal(sim.control.requests({ operation: "refreshToken" }).length, 1);
    assert.equal(
      sim.control.requests({ operation: "getDevice" }).filter((r) => r.status === 401).length,
      0,
      "the expired token was never sent",
    );
    clock.uninstall();
  });

  it("never has two refreshes in flight at once, across repeated expiries", async () => {
    b = buildSession(sim);
    await b.session.start();
    for (let round = 0; round < 5; round++) {
      sim.control.expireAccessToken("demo");
      await Promise.all(Array.from({ length: 100 }, () => b.session.call((t) => b.client.getDevice(t, 101))));
    }
    const refreshes = sim.control.requests({ operation: "refreshToken" });
    assert.equal(refreshes.length, 5, "one refresh per expiry");
    const sorted = [...refreshes].sort((x, y) => x.startedAt - y.startedAt);
    for (let i = 1; i < sorted.length; i++) {
      assert.ok(sorted[i].startedAt >= sorted[i - 1].endedAt, "refresh intervals never overlap");
    }
  });
});
