/**
 * Adversarial review of issue 11 after 4f849e6 ("Waits on a monotonic clock ...; Reconnect
 * honours a login's Retry-After; the device list makes one message try per back-off window and
 * none within a Retry-After"). Each test names the spec / CONTRACT line it checks and failed on
 * 4f849e6 (7308174). Requests are counted in the simulator's request log only; races are forced
 * (fake clock, held requests), never slept on.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Account } from "../src/account/account.js";
import { RenewalFailedError } from "../src/session/errors.js";
import { startSimulator, type RunningSimulator } from "../src/simulator/index.js";
import { performUnlock } from "../src/unlock/unlock.js";
import { fakeClock, type FakeClock } from "./helpers/fake-clock.js";
import { DEMO_PHONE, buildSession, ops, waitUntil, type Built } from "./helpers/session.js";

const MIN = 60_000;
const count = (sim: RunningSimulator, operation: string) => sim.control.requests({ operation }).length;
const logins = (sim: RunningSimulator) => sim.control.requests().filter((r) => /^login/.test(r.operation)).length;
const settings = { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true };
const byId = (id: number, i: number) => ({ msgDeviceId: id, msgDoor: undefined, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid: `m${i}` });
/** The directory's list fetch in flight, if any (to let one settle before the next message: forced, not slept on). */
const listInflight = (a: Account) => (a.directory as unknown as { inflight: Promise<unknown> | null }).inflight;

describe("break-11: Retry-After of a refresh binds every later renewal and the operator (fake clock + simulator)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let b: Built;

  async function setup(accessTtlSec: number) {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false, accessTtlSec });
    b = buildSession(sim, { clock, timings: { minRenewalIntervalMs: 1000 } });
    await b.session.start();
    sim.control.resetRequests();
  }
  afterEach(async () => {
    await b?.session.close();
    await b?.client.close();
    await sim?.close();
    clock?.uninstall();
  });
  const call = () => b.session.call((t) => b.client.getDevice(t, 101));

  it("spec error table, 429 on 4 'Honour the Retry-After header': a 1 h token that expires within a scheduled refresh's Retry-After is not refreshed before it has passed", async () => {
    await setup(3600);
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 1200, count: 1 });
    // 1 h token: renewal due at 45 min; it is answered 429 Retry-After 1200 s (until 65 min).
    await clock.tickAsync(45 * MIN + 1000);
    await waitUntil(() => count(sim, "refreshToken") === 1 && b.session.state === "ready", 5000, () => `the scheduled refresh: ${JSON.stringify(ops(sim))}`);
    assert.equal(b.session.state, "ready");
    // At 59.5 min the token is within its expiry skew; a message needs the session.
    await clock.tickAsync(14 * MIN);
    await assert.rejects(call(), (e: unknown) => e instanceof RenewalFailedError && e.rateLimited);
    assert.equal(count(sim, "refreshToken"), 1, `a refresh 14 min into a 20 min Retry-After: ${JSON.stringify(ops(sim))}`);
    assert.equal(logins(sim), 0, JSON.stringify(ops(sim)));
  });

  // Spec: the refresh token lives 30 days and a login ends the session; a good refresh token is not thrown away for a login.
  it("a 1 h token that expired while its refreshes were answered 429: after the Retry-After the next message refreshes with the stored refresh token, no login", async () => {
    await setup(3600);
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 1200, count: 2 });
    // Renewal due at 45 min: 429 until 65 min; then the token has expired (60 min) and the retry is 429 again.
    await clock.tickAsync(45 * MIN + 1000);
    // The session must have read the 429 (and set its retry after the Retry-After) before the clock moves.
    await waitUntil(() => count(sim, "refreshToken") === 1 && b.session.state !== "refreshing", 5000, () => `the scheduled refresh: ${JSON.stringify(ops(sim))}`);
    await clock.tickAsync(20 * MIN + 1000);
    await waitUntil(() => count(sim, "refreshToken") === 2 && b.session.state !== "refreshing", 5000, () => `the retried refresh: ${JSON.stringify(ops(sim))}`);
    await clock.tickAsync(20 * MIN + 1000);
    await call();
    assert.equal(logins(sim), 0, `logged in although the refresh token was good: ${JSON.stringify(ops(sim))}`);
    assert.deepEqual(ops(sim).slice(-2), ["refreshToken 200", "getDevice 200"]);
  });

  it("spec error table, 429 on 4 'Honour the Retry-After header', whatever the wall clock does: a scheduled refresh answered 429 Retry-After 600 s, wall clock set 4 h forward: no refresh (nor login) before 600 s have passed", async () => {
    await setup(24 * 3600);
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 600, count: 1 });
    // 24 h token: renewal due at 21 h.
    await clock.tickAsync(21 * 60 * MIN + 1000);
    await waitUntil(() => count(sim, "refreshToken") === 1 && b.session.state === "ready", 5000, () => `the scheduled refresh: ${JSON.stringify(ops(sim))}`);
    assert.equal(b.session.state, "ready");
    clock.jump(4 * 60 * MIN); // a time sync sets the wall clock forward: the token looks expired
    await clock.tickAsync(1000);
    await call().catch(() => undefined);
    assert.equal(count(sim, "refreshToken") + logins(sim), 1, `renewed 2 s into a 600 s Retry-After: ${JSON.stringify(ops(sim))}`);
  });

  it("session.ts reconnect() 'The operator overrides the once-an-hour re-login rule, never the service's Retry-After': Reconnect pressed after a refresh answered 429 Retry-After 300 s sends no login within it", async () => {
    await setup(24 * 3600);
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 300, count: 1 });
    await assert.rejects(call());
    assert.equal(count(sim, "refreshToken"), 1);
    await b.session.reconnect();
    await b.session.reconnect();
    assert.equal(logins(sim), 0, `Reconnect logged in 0 s into a 300 s Retry-After: ${JSON.stringify(ops(sim))}`);
  });

  it("session.ts reconnect() 'never the service's Retry-After' and issue 11 'must not log in after close': refresh answered 429 Retry-After 300 s after a 401 (token expired at the service), Reconnect twice, then close before it passes: no login at all", async () => {
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

describe("break-11: list fetches within a back-off window, forced or after a 404 (Account + simulator)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let dir: string;
  let account: Account;
  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: false });
    dir = mkdtempSync(path.join(tmpdir(), "door-break11-"));
    account = new Account({ baseUrl: sim.url, credentials: DEMO_PHONE, tokenFile: path.join(dir, "s.json"), auditLogPath: path.join(dir, "audit.jsonl"), client: { random: () => 0 } });
  });
  afterEach(async () => {
    await account?.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("CONTRACT door-devices 'msg.refresh === true forces a fetch' within the spec's list back-off: msg.refresh spammed while the list answers 429 (Retry-After: 0) makes at most one message try per back-off window", async () => {
    sim.control.inject({ kind: "429", endpoint: "listUserDevices", retryAfter: 0, count: 10_000 });
    await account.start();
    account.warmDevices();
    await waitUntil(() => account.directory.nextRetryAt() !== null, 10_000, "the start-up list fetch to fail");
    const startup = count(sim, "listUserDevices");
    for (let i = 0; i < 6; i++) {
      await assert.rejects(account.devices(true));
      await waitUntil(() => listInflight(account) === null, 5000, "the list fetch to settle");
    }
    // One message try in the 30 s window (each try: the spec's up to 4 attempts of an idempotent GET).
    assert.ok(count(sim, "listUserDevices") <= 2 * startup, `${count(sim, "listUserDevices")} list requests (start-up try: ${startup}) for six forced messages within one 30 s back-off window`);
  });

  it("CONTRACT door-devices 'list: locations' served 'like the device list': six messages while GET /api/user/location answers 429 Retry-After 120 s send one request, none within the Retry-After", async () => {
    sim.control.inject({ kind: "429", endpoint: "listUserLocations", retryAfter: 120, count: 10_000 });
    await account.start();
    for (let i = 0; i < 6; i++) await assert.rejects(account.locations(i % 2 === 1));
    assert.equal(count(sim, "listUserLocations"), 1, `location list fetched within its Retry-After: ${JSON.stringify(ops(sim))}`);
  });

  it("CONTRACT 're-fetched on a 404 for a known id' within the spec's list back-off: four unlocks of a removed door while the list answers 429 (Retry-After: 0) make one re-fetch and at most one more try in its back-off window", async () => {
    await account.start();
    await account.devices();
    sim.control.editDevice(101, { remove: true });
    sim.control.inject({ kind: "429", endpoint: "listUserDevices", retryAfter: 0, count: 10_000 });
    sim.control.resetRequests();
    for (let i = 0; i < 4; i++) {
      const r = await performUnlock(account, byId(101, i), settings);
      assert.equal(r.outcome, "not-found", JSON.stringify(r));
      await waitUntil(() => listInflight(account) === null && sim.control.inFlight().length === 0, 5000, "the re-fetch to settle");
    }
    // The first 404's re-fetch (it fails and opens a 30 s back-off window), then at most one message try in that window.
    const tries = count(sim, "listUserDevices") / 4;
    assert.ok(tries <= 2, `${count(sim, "listUserDevices")} list requests (${tries} tries of 4 attempts) for four 404s within one 30 s back-off window: ${JSON.stringify(ops(sim))}`);
  });
});

describe("break-11: close and delete while a renewal is in flight (simulator)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock | null = null;
  let b: Built;
  afterEach(async () => {
    await b?.session.close();
    await b?.client.close();
    await sim?.close();
    clock?.uninstall();
    clock = null;
  });

  it("issue 11 'no timer left running' after close: a refresh in flight at close() that is answered 429 leaves no renewal timer behind", async () => {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false });
    b = buildSession(sim, { clock, timings: { minRenewalIntervalMs: 1000 } });
    await b.session.start();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 300, latencyMs: 300, count: 1 });
    const pending = b.session.call((t) => b.client.getDevice(t, 101)).catch((e: unknown) => e);
    await waitUntil(() => sim.control.inFlight().some((r) => r.operation === "refreshToken"), 5000, "the refresh to reach the service");
    await b.session.close();
    await pending;
    assert.equal(count(sim, "refreshToken"), 1);
    assert.equal(b.session.state, "closed");
    assert.equal(clock.pendingTimers(), 0, `timers left after close: ${clock.pendingTimers()} (renewAt ${b.session.snapshot().renewAt})`);
  });

  it("CONTRACT 'Deleting the config node logs out and deletes the stored pair': deleted while the start-up login is in flight, the session that login opened is logged out", async () => {
    sim = await startSimulator({ rateLimit: false });
    b = buildSession(sim);
    sim.control.inject({ kind: "latency", endpoint: "loginByPhone", latencyMs: 400, count: 1 });
    const started = b.session.start();
    await waitUntil(() => sim.control.inFlight().some((r) => r.operation === "loginByPhone"), 5000, "the login to reach the service");
    await b.session.destroy();
    await started;
    assert.equal(count(sim, "loginByPhone"), 1);
    assert.equal(sim.control.hasSession("demo"), false, `the session opened by the login in flight is still active at the service: ${JSON.stringify(ops(sim))}`);
    assert.equal(await b.store.load(), null, "the stored pair is deleted");
  });

  it("CONTRACT 'Deleting the config node logs out': deleted while a refresh is in flight, the logout carries the token that refresh brought", async () => {
    sim = await startSimulator({ rateLimit: false });
    b = buildSession(sim);
    await b.session.start();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "latency", endpoint: "refreshToken", latencyMs: 400, count: 1 });
    const pending = b.session.call((t) => b.client.getDevice(t, 101)).catch((e: unknown) => e);
    await waitUntil(() => sim.control.inFlight().some((r) => r.operation === "refreshToken"), 5000, "the refresh to reach the service");
    await b.session.destroy();
    await pending;
    assert.equal(count(sim, "refreshToken"), 1);
    assert.equal(sim.control.hasSession("demo"), false, `the session is still active at the service after the account was deleted: ${JSON.stringify(ops(sim))}`);
  });
});

describe("break-11: Reconnect within a refresh's Retry-After (fake clock + simulator)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let b: Built;
  afterEach(async () => {
    await b?.session.close();
    await b?.client.close();
    await sim?.close();
    clock?.uninstall();
  });

  it("session.ts reconnect() 'never the service's Retry-After': refresh answered 429 Retry-After 300 s after a 401, Reconnect pressed: nothing is sent within it (the state says when), then one renewal (the scheduled refresh, or the deferred login), ready", async () => {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false });
    b = buildSession(sim, { clock, timings: { minRenewalIntervalMs: 1000 } });
    await b.session.start();
    sim.control.resetRequests();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 300, count: 1 });
    await assert.rejects(b.session.call((t) => b.client.getDevice(t, 101)));
    await b.session.reconnect();
    assert.match(b.session.snapshot().reason ?? "", /reconnect requested: login in \d+ s/);
    await clock.tickAsync(299_000);
    assert.equal(logins(sim), 0, JSON.stringify(ops(sim)));
    await clock.tickAsync(2000);
    const renewals = () => logins(sim) + sim.control.requests({ operation: "refreshToken" }).filter((r) => r.status === 200).length;
    await waitUntil(() => renewals() === 1 && b.session.state === "ready", 5000, () => `one renewal after the Retry-After: ${JSON.stringify(ops(sim))}`);
    await clock.tickAsync(60_000);
    await b.session.call((t) => b.client.getDevice(t, 101));
    assert.equal(renewals(), 1, `the deferred Reconnect logged in over a session renewed after it was pressed: ${JSON.stringify(ops(sim))}`);
  });
});

describe("property counter-example (CI, Node 22 under load): our own Reconnect during a replay is not 'another login'", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let b: Built;
  afterEach(async () => {
    await b?.session.close();
    await b?.client.close();
    await sim?.close();
  });

  // CONTRACT "Session": halted-superseded means another login took the account; a login of our own in flight is not one.
  it("a replay answered 401 because our own Reconnect login (still in flight) superseded its token: the call fails, the account does not halt", async () => {
    sim = await startSimulator({ rateLimit: false });
    b = buildSession(sim);
    await b.session.start();
    sim.control.resetRequests();
    sim.control.revokeAccessToken("demo");
    // The replay is held at the service; the Reconnect login executes at once but its answer is held.
    sim.control.inject({ kind: "latency", endpoint: "getDevice", latencyMs: 400, count: 2 });
    sim.control.inject({ kind: "slow-headers", endpoint: "loginByPhone", latencyMs: 1500, count: 1 });
    const call = b.session.call((t) => b.client.getDevice(t, 101));
    await waitUntil(() => count(sim, "refreshToken") === 1 && sim.control.inFlight().some((r) => r.operation === "getDevice"), 5000, () => `the replay in flight: ${JSON.stringify(ops(sim))}`);
    const reconnect = b.session.reconnect();
    await assert.rejects(call);
    assert.notEqual(b.session.state, "halted-superseded", `halted by our own login: ${JSON.stringify(ops(sim))}`);
    await reconnect;
    assert.equal(b.session.state, "ready", JSON.stringify(ops(sim)));
    await b.session.call((t) => b.client.getDevice(t, 101));
    await waitUntil(() => logins(sim) === 1, 5000, () => `the login in the request log: ${JSON.stringify(ops(sim))} ${JSON.stringify(b.log.lines)}`);
  });
});
