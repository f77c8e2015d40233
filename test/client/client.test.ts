/**
 * The service client against the simulator: every answer is checked against the service
 * description and every failure is a typed error that says whether the request may have
 * reached the service (docs/outcomes.md#door-unlock-outcomes, docs/session.md#connection-errors);
 * each operation has its own retry policy: a read up to 4 attempts within 30 s
 * (docs/nodes.md#door-status), an unlock never (docs/nodes.md#door-unlock), a login or refresh
 * once on a 5xx (docs/session.md#renewal). Requests are counted at the simulator.
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

describe("client: an answer that breaks the service description is a clear error, and every failure says whether it may have reached the service (docs/outcomes.md#door-unlock-outcomes)", function () {
  this.timeout(20_000);
  let sim: RunningSimulator;
  let client: DoorApiClient;
  let token: string;

  before(async () => {
    sim = await startSimulator({ rateLimit: false });
    client = new DoorApiClient({ baseUrl: sim.url, random: () => 0, headersTimeoutMs: 1500, bodyTimeoutMs: 1500 });
    token = (await client.login(DEMO_PHONE)).accessToken;
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  after(async () => {
    await client.close();
    await sim.close();
  });

  it("reads the capitalised TokenPair case-insensitively", async () => {
    const pair = await client.login(DEMO_PHONE);
    assert.equal(pair.accessToken.split(".").length, 3);
    assert.match(pair.refreshToken, /\S{10,}/);
    token = pair.accessToken;
  });

  it("validates the Device record and keeps fields the spec does not list", async () => {
    const d = await client.getDevice(token, 104);
    assert.equal(d.id, 104);
    assert.equal(d.name, "Loading Bay");
    assert.ok(Array.isArray((d as { locks?: unknown }).locks), "unknown fields are tolerated and kept");
    const list = await client.listDevices(token);
    assert.ok(list.length >= 5 && list.every((x) => Number.isInteger(x.id)));
    const locations = await client.listLocations(token);
    assert.ok(locations.length >= 2);
  });

  const bodyFaults: { kind: "non-json" | "truncated" | "huge" | "wrong-content-type"; pattern: RegExp }[] = [
    { kind: "non-json", pattern: /not JSON/ },
    { kind: "truncated", pattern: /cut off/ },
    { kind: "huge", pattern: /larger than/ },
    { kind: "wrong-content-type", pattern: /content type/ },
  ];
  for (const f of bodyFaults) {
    it(`a ${f.kind} body is a clear invalid-response error, not retried, no crash`, async () => {
      sim.control.inject({ kind: f.kind, endpoint: "getDevice" });
      await assert.rejects(client.getDevice(token, 101), isApiError((e) => e.kind === "invalid-response" && f.pattern.test(e.message)));
      // The simulator logs a call when its answer ends; a body we stopped reading ends a moment later.
      await waitUntil(() => sim.control.requests({ operation: "getDevice" }).length >= 1);
      assert.equal(sim.control.requests({ operation: "getDevice" }).length, 1);
      assert.equal((await client.getDevice(token, 101)).id, 101, "the client still works afterwards");
    });
  }

  it("a TokenPair without its fields is a clear error", async () => {
    sim.control.inject({ kind: "empty-token-pair", endpoint: "loginByPhone" });
    await assert.rejects(client.login(DEMO_PHONE), isApiError((e) => e.kind === "invalid-response" && /AccessToken/.test(e.message)));
  });

  it("a slow-loris answer times out (headers timeout) instead of hanging", async () => {
    sim.control.inject({ kind: "slow-headers", endpoint: "unlockDevice", latencyMs: 5000 });
    await assert.rejects(client.unlock(token, 101, null), isApiError((e) => e.kind === "timeout" && e.mayHaveReached));
    assert.equal(sim.control.requests({ operation: "unlockDevice" }).length <= 1, true);
  });

  it("an invalid request body is refused before sending: nothing reaches the service", async () => {
    await assert.rejects(
      client.login({ method: "phone", phoneNumber: "0701234567", password: "demo-password" }),
      isApiError((e) => !e.mayHaveReached && /phoneNumber/.test(e.message) && !e.message.includes("0701234567")),
    );
    await assert.rejects(client.login({ method: "email", email: "not-an-email", password: "x" }));
    await assert.rejects(client.unlock(token, -1, null), isApiError((e) => !e.mayHaveReached));
    await assert.rejects(client.unlock(token, 2 ** 31, null));
    await assert.rejects(client.unlock(token, 101, 1.5));
    assert.equal(sim.control.requests().length, 0);
  });

  it("carries status, title and detail of an ErrorResponse, and never the token in its message", async () => {
    const e = await client.unlock(token, 106, null).then(() => null, (x: unknown) => x);
    assert.ok(e instanceof DoorApiError);
    assert.equal(e.status, 403);
    assert.equal(e.kind, "http");
    assert.ok(e.title !== null);
    assert.ok(!e.message.includes(token) && !JSON.stringify(e).includes(token));
  });

  it("a refused connection is a network error that never left (mayHaveReached false)", async () => {
    const closed = await startSimulator();
    const url = closed.url;
    await closed.close();
    const c = new DoorApiClient({ baseUrl: url });
    await assert.rejects(c.unlock(token, 101, null), isApiError((e) => e.kind === "network" && e.mayHaveReached === false));
    await c.close();
  });

  it("a failed TLS handshake (https:// to a plain HTTP port) never left either: mayHaveReached false, and the service saw nothing (docs/session.md#connection-errors)", async () => {
    const c = new DoorApiClient({ baseUrl: sim.url.replace(/^http:/, "https:") });
    await assert.rejects(
      c.unlock(token, 101, null),
      isApiError((e) => e.kind === "network" && e.mayHaveReached === false && /\(TLS handshake failed, [A-Z_]+: the port does not answer TLS\): check the base URL's scheme and port$/.test(e.message)),
    );
    await c.close();
    assert.equal(sim.control.requests().length, 0);
  });
});

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
    const p = client.getDevice(token, 101).then(() => null, (e: unknown) => e);
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
      sim.control.inject({ kind: status, endpoint: "listUserDevices", count: 1, retryAfter: status === "429" ? 1 : undefined });
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
    await assert.rejects(client.getDevice(token, 101), isApiError((e) => e.status === 429 && e.retryAfter === 120));
    assert.equal(count(), 1);
  });

  it("stops within the total time bound (30 s) even if attempts remain", async () => {
    sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: 20, count: 4 });
    const p = client.getDevice(token, 101).then(() => null, (e: unknown) => e);
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
      sim.control.inject({ kind, endpoint: ["unlockDevice", "unlockDeviceLock"], retryAfter: kind === "429" ? 1 : undefined, count: 5 });
      await assert.rejects(client.unlock(token, 101, null), isApiError((e) => e.attempts === 1));
      await clock.tickAsync(60_000);
      await assert.rejects(client.unlock(token, 104, 2));
      await clock.tickAsync(60_000);
      assert.equal(sim.control.requests({ operation: "unlockDevice" }).length, 1);
      assert.equal(sim.control.requests({ operation: "unlockDeviceLock" }).length, 1);
    });
  }

  it("login: never retried on 401; at most one retry on 5xx", async () => {
    await assert.rejects(client.login({ ...DEMO_PHONE, password: "wrong" }), isApiError((e) => e.status === 401));
    assert.equal(count(), 1);
    sim.control.inject({ kind: "500", endpoint: "loginByPhone", count: 5 });
    const p = client.login(DEMO_PHONE).then(() => null, (e: unknown) => e);
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
    await assert.rejects(client.login({ method: "email", email: "demo@example.com", password: "demo-password" }), isApiError((e) => e.status === 429));
    await clock.tickAsync(5000);
    assert.equal(count(), 1);
  });

  it("refresh: one retry on 5xx, never on 400/401", async () => {
    sim.control.inject({ kind: "502", endpoint: "refreshToken", count: 5 });
    const p = client.refresh("rt_" + "A".repeat(43)).then(() => null, (e: unknown) => e);
    await waitUntil(() => count() === 1);
    await backingOff();
    await clock.tickAsync(500);
    await waitUntil(() => count() === 2);
    await clock.tickAsync(60_000);
    assert.ok(((await p) as DoorApiError).status === 502);
    assert.equal(count(), 2);
    sim.control.clearFaults();
    sim.control.resetRequests();
    await assert.rejects(client.refresh("rt_" + "A".repeat(43)), isApiError((e) => e.status === 400 || e.status === 401));
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
