/**
 * The simulator's rate limit: a token bucket per account, per login identity or client address
 * before login; an empty bucket answers 429 with Retry-After. docs/simulator.md#rate-limit
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import {
  DEMO_ACCOUNT,
  FakeClock,
  LOGIN_PATHS,
  OTHER_ACCOUNT,
  assertError,
  call,
  login,
  refresh,
  withSim,
} from "../helpers/simulator.js";

const PHONE = DEMO_ACCOUNT.phoneNumber;
const PW = DEMO_ACCOUNT.password;

describe("simulator rate limit: a token bucket per account answers 429 with Retry-After and carries nothing out; logout is never limited (docs/simulator.md#rate-limit)", () => {
  let sim: RunningSimulator;
  const clock = new FakeClock();

  beforeEach(async () => {
    sim = await withSim({ now: clock.now });
  });
  afterEach(async () => {
    await sim.close();
  });

  it("answers 429 with Retry-After in whole seconds once the bucket is empty, and refills over time", async () => {
    sim.control.setRateLimit({ capacity: 3, refillPerSec: 0.5 });
    const pair = await login(sim); // 1
    assert.equal((await call(sim, "GET", "/api/user/device", { token: pair.access })).status, 200); // 2
    assert.equal((await call(sim, "GET", "/api/user/location", { token: pair.access })).status, 200); // 3
    const r = await call(sim, "PUT", "/api/device/101/unlock", { token: pair.access });
    assertError(r, 429);
    assert.match(String(r.headers["retry-after"]), /^[0-9]+$/);
    assert.equal(r.headers["retry-after"], "2");
    assert.equal(sim.control.counts().unlocks, 0, "a rate-limited unlock is not executed");
    clock.advance(2000);
    assert.equal((await call(sim, "PUT", "/api/device/101/unlock", { token: pair.access })).status, 200);
  });

  it("covers login, refresh and every bearer endpoint except logout", async () => {
    sim.control.setRateLimit({ capacity: 2, refillPerSec: 1 });
    const pair = await login(sim);
    await call(sim, "GET", "/api/user/device", { token: pair.access });
    for (const [method, path] of [
      ["GET", "/api/user/device"],
      ["GET", "/api/user/location"],
      ["GET", "/api/device/101"],
      ["PUT", "/api/device/101/unlock"],
      ["PUT", "/api/device/104/unlock/1"],
    ]) {
      assertError(await call(sim, method, path, { token: pair.access }), 429, path);
    }
    assertError(await refresh(sim, pair.refresh), 429, "refresh");
    assertError(
      await call(sim, "POST", LOGIN_PATHS.loginByEmail, { json: { email: DEMO_ACCOUNT.email, password: PW } }),
      429,
    );
    assertError(await call(sim, "POST", LOGIN_PATHS.login, { json: { phoneNumber: PHONE, password: PW } }), 429);
    // the rate-limited refresh did not consume the token, the rate-limited login did not supersede
    assert.equal(sim.control.counts().logins, 1);
    const out = await call(sim, "POST", "/api/auth/logout", { token: pair.access });
    assert.equal(out.status, 200, "logout is never rate limited");
  });

  it("is per account: another account is not limited", async () => {
    sim.control.setRateLimit({ capacity: 1, refillPerSec: 1 });
    await login(sim);
    assertError(await call(sim, "POST", LOGIN_PATHS.loginByPhone, { json: { phoneNumber: PHONE, password: PW } }), 429);
    await login(sim, "loginByPhone", OTHER_ACCOUNT);
  });

  it("keys logins for an unknown identity by that identity", async () => {
    sim.control.setRateLimit({ capacity: 1, refillPerSec: 1 });
    const wrong = { phoneNumber: "+15551234567", password: "x" };
    assertError(await call(sim, "POST", LOGIN_PATHS.login, { json: wrong }), 401);
    assertError(await call(sim, "POST", LOGIN_PATHS.login, { json: wrong }), 429);
    assertError(
      await call(sim, "POST", LOGIN_PATHS.login, { json: { ...wrong, phoneNumber: "+15557654321" } }),
      401,
      "another identity",
    );
  });

  it("can be switched off", async () => {
    sim.control.setRateLimit(false);
    const pair = await login(sim);
    for (let i = 0; i < 1100; i++) {
      const r = await call(sim, "GET", "/api/user/location", { token: pair.access });
      assert.equal(r.status, 200);
    }
  });

  it("defaults to capacity 1000 refilled at 500 per second", async () => {
    const pair = await login(sim); // call 1
    let limited = 0;
    for (let i = 0; i < 999; i++) {
      if ((await call(sim, "GET", "/api/user/location", { token: pair.access })).status === 429) limited++;
    }
    assert.equal(limited, 0, "1000 calls at one instant pass");
    const r = await call(sim, "GET", "/api/user/location", { token: pair.access });
    assertError(r, 429, "call 1001 at the same instant");
    assert.equal(r.headers["retry-after"], "1");
    clock.advance(2); // 500/s -> one token per 2 ms
    assert.equal((await call(sim, "GET", "/api/user/location", { token: pair.access })).status, 200);
  });
});
