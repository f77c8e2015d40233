/**
 * The service client's retry policy per operation, against the simulator on a fake clock: a
 * read (device, lists, logout) up to 4 attempts within 30 s, after the Retry-After or 500 ms
 * doubling (docs/nodes.md#door-status); an unlock never (docs/nodes.md#door-unlock); a login or
 * refresh once on a 5xx, never on 400/401 or 429 (docs/session.md#renewal,
 * docs/session.md#rate-limits). Requests are counted at the simulator.
 */
import { strict as assert } from "node:assert";
import { DoorApiClient } from "../../src/client/client.js";
import { DoorApiError } from "../../src/client/errors.js";
import { parseRetryAfter } from "../../src/client/retry-policy.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { fakeClock, type FakeClock } from "../helpers/fake-clock.js";
import { DEMO_PHONE, ops, waitUntil } from "../helpers/session.js";

function isApiError(pred: (e: DoorApiError) => boolean) {
  return (e: unknown) => e instanceof DoorApiError && pred(e);
}

describe("client: a read is retried up to 4 times within 30 s after Retry-After, an unlock never, a login or refresh once on a 5xx (docs/nodes.md#door-status, docs/nodes.md#door-unlock)", function () {
  this.timeout(20_000);
  let sim: RunningSimulator;
  let client: DoorApiClient;
  let clock: FakeClock;
  let token: string;

  beforeEach(async () => {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false, now: () => clock.now() });
    client = new DoorApiClient({ baseUrl: sim.url, clock, random: () => 0 });
    token = (await client.login(DEMO_PHONE)).accessToken;
    sim.control.resetRequests();
  });
  afterEach(async () => {
    await client.close();
    await sim.close();
    clock.uninstall();
  });

  const count = () => sim.control.requests().length;
  // The simulator logs a request before the client has read its answer: only once the client
  // waits out its back-off (the only timer it sets on the fake clock) may the test move the
  // clock. Ticking earlier moved time past a timer not yet set, and the retry never came (a CI
  // run under load timed out in "a dropped connection on a GET is retried").
  const backingOff = () => waitUntil(() => clock.pendingTimers() > 0, 10_000, "the client's back-off timer");

  it("idempotent GET on 503: at most 4 attempts, 500 ms doubling (500, 1000, 2000)", async () => {
    sim.control.inject({ kind: "503", endpoint: "getDevice", count: 10 });
    const p = client.getDevice(token, 101).then(
      () => null,
      (e: unknown) => e,
    );
    await waitUntil(() => count() === 1);
    await backingOff();
    await clock.tickAsync(499);
    // The retry reaches the simulator only after real I/O: that the back-off timer is still
    // pending is what shows nothing was due before 500 ms.
    assert.equal(clock.pendingTimers(), 1, "the back-off timer has not fired at 499 ms");
    assert.equal(count(), 1, "no retry before 500 ms");
    await clock.tickAsync(1);
    await waitUntil(() => count() === 2);
    await backingOff();
    await clock.tickAsync(999);
    assert.equal(clock.pendingTimers(), 1, "the second back-off timer has not fired at 999 ms");
    assert.equal(count(), 2, "second delay is 1000 ms");
    await clock.tickAsync(1);
    await waitUntil(() => count() === 3);
    await backingOff();
    await clock.tickAsync(2000);
    await waitUntil(() => count() === 4);
    await clock.tickAsync(60_000);
    const e = await p;
    assert.ok(e instanceof DoorApiError && e.status === 503 && e.attempts === 4);
    assert.equal(count(), 4, "never a fifth attempt");
  });

  for (const status of ["429", "500", "502", "504"] as const) {
    it(`idempotent GET retries ${status} and succeeds`, async () => {
      sim.control.inject({
        kind: status,
        endpoint: "listUserDevices",
        count: 1,
        retryAfter: status === "429" ? 1 : undefined,
      });
      const p = client.listDevices(token);
      await waitUntil(() => count() === 1);
      await backingOff();
      await clock.tickAsync(1000);
      assert.ok((await p).length > 0);
      assert.deepEqual(ops(sim), [`listUserDevices ${status}`, "listUserDevices 200"]);
    });
  }

  it("honours Retry-After in seconds: no retry before it", async () => {
    sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: 3 });
    const p = client.getDevice(token, 101);
    await waitUntil(() => count() === 1);
    await backingOff();
    await clock.tickAsync(2999);
    assert.equal(clock.pendingTimers(), 1, "the Retry-After timer has not fired at 2999 ms");
    assert.equal(count(), 1);
    await clock.tickAsync(1);
    assert.equal((await p).id, 101);
    assert.equal(count(), 2);
  });

  it("honours Retry-After as an HTTP date", async () => {
    sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: new Date(clock.now() + 4000).toUTCString() });
    const p = client.getDevice(token, 101);
    await waitUntil(() => count() === 1);
    await backingOff();
    await clock.tickAsync(3000);
    assert.equal(clock.pendingTimers(), 1, "the Retry-After timer has not fired at 3000 ms of 4000");
    assert.equal(count(), 1);
    await clock.tickAsync(1000);
    assert.equal((await p).id, 101);
    assert.equal(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", Date.UTC(2015, 9, 21, 7, 27, 0)), 60);
  });

  it("a Retry-After beyond 60 s is not waited for: the call fails with retryAfter", async () => {
    sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: 120 });
    await assert.rejects(
      client.getDevice(token, 101),
      isApiError((e) => e.status === 429 && e.retryAfter === 120),
    );
    assert.equal(count(), 1);
  });

  it("stops within the total time bound (30 s) even if attempts remain", async () => {
    sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: 20, count: 4 });
    const p = client.getDevice(token, 101).then(
      () => null,
      (e: unknown) => e,
    );
    await waitUntil(() => count() === 1);
    await backingOff();
    await clock.tickAsync(20_000);
    await waitUntil(() => count() === 2);
    const e = await p;
    assert.ok(e instanceof DoorApiError && e.status === 429);
    assert.equal(count(), 2, "a third attempt would end after 40 s");
  });

  it("a dropped connection on a GET is retried", async () => {
    sim.control.inject({ kind: "drop", endpoint: "getDevice" });
    const p = client.getDevice(token, 101);
    await waitUntil(() => count() === 1);
    await backingOff();
    await clock.tickAsync(500);
    assert.equal((await p).id, 101);
    assert.deepEqual(ops(sim), ["getDevice 0", "getDevice 200"]);
  });

  for (const kind of ["429", "500", "502", "503", "504", "drop"] as const) {
    it(`unlock is never repeated: ${kind} → exactly one PUT`, async () => {
      sim.control.inject({
        kind,
        endpoint: ["unlockDevice", "unlockDeviceLock"],
        retryAfter: kind === "429" ? 1 : undefined,
        count: 5,
      });
      await assert.rejects(
        client.unlock(token, 101, null),
        isApiError((e) => e.attempts === 1),
      );
      await clock.tickAsync(60_000);
      await assert.rejects(client.unlock(token, 104, 2));
      await clock.tickAsync(60_000);
      assert.equal(sim.control.requests({ operation: "unlockDevice" }).length, 1);
      assert.equal(sim.control.requests({ operation: "unlockDeviceLock" }).length, 1);
    });
  }

  it("login: never retried on 401; at most one retry on 5xx", async () => {
    await assert.rejects(
      client.login({ ...DEMO_PHONE, password: "wrong" }),
      isApiError((e) => e.status === 401),
    );
    assert.equal(count(), 1);
    sim.control.inject({ kind: "500", endpoint: "loginByPhone", count: 5 });
    const p = client.login(DEMO_PHONE).then(
      () => null,
      (e: unknown) => e,
    );
    await waitUntil(() => count() === 2);
    await backingOff();
    await clock.tickAsync(500);
    await waitUntil(() => count() === 3);
    await clock.tickAsync(60_000);
    const e = await p;
    assert.ok(e instanceof DoorApiError && e.status === 500 && e.attempts === 2);
    assert.equal(count(), 3);
  });

  it("login: a 429 is not retried (the session decides when to try again)", async () => {
    sim.control.inject({ kind: "429", endpoint: "loginByEmail", retryAfter: 1 });
    await assert.rejects(
      client.login({ method: "email", email: "demo@example.com", password: "demo-password" }),
      isApiError((e) => e.status === 429),
    );
    await clock.tickAsync(5000);
    assert.equal(count(), 1);
  });

  it("refresh: one retry on 5xx, never on 400/401", async () => {
    sim.control.inject({ kind: "502", endpoint: "refreshToken", count: 5 });
    const p = client.refresh("rt_" + "A".repeat(43)).then(
      () => null,
      (e: unknown) => e,
    );
    await waitUntil(() => count() === 1);
    await backingOff();
    await clock.tickAsync(500);
    await waitUntil(() => count() === 2);
    await clock.tickAsync(60_000);
    assert.ok(((await p) as DoorApiError).status === 502);
    assert.equal(count(), 2);
    sim.control.clearFaults();
    sim.control.resetRequests();
    await assert.rejects(
      client.refresh("rt_" + "A".repeat(43)),
      isApiError((e) => e.status === 400 || e.status === 401),
    );
    await clock.tickAsync(60_000);
    assert.equal(count(), 1);
  });

  it("logout: harmless to repeat, so a 503 is retried", async () => {
    sim.control.inject({ kind: "503", endpoint: "logout" });
    const p = client.logout(token);
    await waitUntil(() => count() === 1);
    await backingOff();
    await clock.tickAsync(500);
    await p;
    assert.deepEqual(ops(sim), ["logout 503", "logout 200"]);
  });
});
