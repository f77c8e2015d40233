/**
 * The simulator's request log: every /api and description request, what it carried and how it
 * was answered; never a secret, never a header's value. docs/simulator.md#request-log
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { DEMO_ACCOUNT, FakeClock, LOGIN_PATHS, call, login, refresh, withSim } from "../helpers/simulator.js";

const PHONE = DEMO_ACCOUNT.phoneNumber;
const PW = DEMO_ACCOUNT.password;

describe("simulator request log: every /api and description request is logged with what it carried, never a secret or a header's value (docs/simulator.md#request-log)", () => {
  let sim: RunningSimulator;
  const clock = new FakeClock();

  beforeEach(async () => {
    sim = await withSim({ now: clock.now });
  });
  afterEach(async () => {
    await sim.close();
  });

  it("logs each /api and docs call with operation, status, account, device, lock and sim-clock times; no secret", async () => {
    const pair = await login(sim);
    clock.advance(10);
    await call(sim, "PUT", "/api/device/104/unlock/2", { token: pair.access });
    await call(sim, "POST", LOGIN_PATHS.loginByEmail, { json: { email: DEMO_ACCOUNT.email, password: "wrong" } });
    await refresh(sim, pair.refresh);
    await call(sim, "GET", "/openapi.json");
    await call(sim, "GET", "/nope");
    await call(sim, "GET", "/_sim/counts");
    const log = sim.control.requests();
    assert.deepEqual(
      log.map((e) => [e.operation, e.status]),
      [
        ["loginByPhone", 200],
        ["unlockDeviceLock", 200],
        ["loginByEmail", 401],
        ["refreshToken", 200],
        ["docs", 200],
        ["unknown", 404],
      ],
    );
    const unlock = log[1];
    assert.equal(unlock.accountId, "demo");
    assert.equal(unlock.deviceId, 104);
    assert.equal(unlock.lockId, 2);
    assert.equal(unlock.method, "PUT");
    assert.equal(unlock.path, "/api/device/104/unlock/2");
    assert.equal(unlock.startedAt, clock.t);
    assert.equal(unlock.endedAt, clock.t);
    assert.ok(log[0].seq < log[1].seq);
    assert.equal(log[2].accountId, "demo", "the login identity resolves to the opaque account id");
    const text = JSON.stringify(log);
    for (const secret of [pair.access, pair.refresh, PW, PHONE, DEMO_ACCOUNT.email, "wrong"]) {
      assert.ok(!text.includes(secret), `log leaks ${secret.slice(0, 12)}`);
    }
    assert.deepEqual(sim.control.requests({ operation: "unlockDeviceLock" }).length, 1);
    assert.deepEqual(sim.control.requests({ deviceId: 104 }).length, 1);
    assert.deepEqual(sim.control.requests({ accountId: "other" }).length, 0);
    sim.control.resetRequests();
    assert.equal(sim.control.requests().length, 0);
  });

  it("the request log keeps header names and If-None-Match, never another header's value", async () => {
    sim.control.resetRequests();
    await call(sim, "GET", "/openapi.json", {
      token: "not-a-real-token-value",
      headers: { "if-none-match": '"abc"', cookie: "session=secret-cookie-value" },
    });
    const [entry] = sim.control.requests({ operation: "docs" });
    assert.ok(entry);
    assert.equal(entry.ifNoneMatch, '"abc"');
    for (const h of ["authorization", "cookie", "if-none-match", "host"]) assert.ok(entry.headers.includes(h), h);
    const text = JSON.stringify(sim.control.requests());
    assert.ok(!text.includes("not-a-real-token-value") && !text.includes("secret-cookie-value"), text);
    assert.equal((await call(sim, "GET", "/_sim/requests")).json[0].ifNoneMatch, '"abc"');
  });
});
