/**
 * Attacks of the issue 11 break review (after 4f849e6) that held: kept as tests so they keep
 * holding. Requests are counted in the simulator's request log only; the fake clock's `jump`
 * moves the wall clock only.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Account } from "../src/account/account.js";
import { SessionHaltedError, SessionUnavailableError } from "../src/session/errors.js";
import { startSimulator, type RunningSimulator } from "../src/simulator/index.js";
import { performUnlock } from "../src/unlock/unlock.js";
import { fakeClock, type FakeClock } from "./helpers/fake-clock.js";
import { DEMO_PHONE, buildSession, ops, waitUntil, type Built } from "./helpers/session.js";

const MIN = 60_000;
const H = 60 * MIN;
const count = (sim: RunningSimulator, operation: string) => sim.control.requests({ operation }).length;
const logins = (sim: RunningSimulator) => sim.control.requests().filter((r) => /^login/.test(r.operation)).length;
const puts = (sim: RunningSimulator) => sim.control.requests().filter((r) => r.operation.startsWith("unlock")).length;

describe("break-11 held: operator and clock against the session (fake clock + simulator)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let b: Built;

  async function setup(opts: { accessTtlSec?: number; start?: boolean; timings?: Record<string, number> } = {}) {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false, accessTtlSec: opts.accessTtlSec });
    b = buildSession(sim, { clock, timings: { minRenewalIntervalMs: 1000, ...opts.timings } });
    if (opts.start !== false) await b.session.start();
    sim.control.resetRequests();
  }
  afterEach(async () => {
    await b?.session.close();
    await b?.client.close();
    await sim?.close();
    clock?.uninstall();
  });
  const call = () => b.session.call((t) => b.client.getDevice(t, 101));

  it("Reconnect pressed five times while the start-up login hangs, a message's wait times out, then close: one login, no unhandled rejection, no timer left", async () => {
    await setup({ start: false });
    sim.control.inject({ kind: "latency", endpoint: "loginByPhone", latencyMs: 800, count: 1 });
    const started = b.session.start();
    await waitUntil(() => sim.control.inFlight().some((r) => r.operation === "loginByPhone"), 5000, "the login to reach the service");
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
    await waitUntil(() => b.session.state === "ready", 5000, () => `ready: ${b.session.state} ${JSON.stringify(ops(sim))}`);
    assert.equal(logins(sim), 2, JSON.stringify(ops(sim)));
  });

  it("1-minute tokens for 10 minutes, a message every 5 s, the wall clock set an hour back every minute: no login, renewals spaced (at most one per 30 s)", async () => {
    await setup({ accessTtlSec: 60, timings: { minRenewalIntervalMs: 30_000 } });
    for (let s = 5; s <= 600; s += 5) {
      await clock.tickAsync(5000);
      if (s % 60 === 0) clock.jump(-H);
      await call();
    }
    assert.equal(logins(sim), 0, JSON.stringify(ops(sim)));
    assert.ok(count(sim, "refreshToken") <= 21, `${count(sim, "refreshToken")} refreshes in 10 min`);
    assert.ok(count(sim, "refreshToken") >= 9, `${count(sim, "refreshToken")} refreshes in 10 min for 1-minute tokens`);
  });

  it("login refused (401): halted; five messages send nothing; one Reconnect makes one login", async () => {
    await setup({ start: false });
    b = buildSession(sim, { clock, credentials: { ...DEMO_PHONE, password: "wrong-password-1" } as typeof DEMO_PHONE });
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

describe("break-11 held: messages against the account (Account + simulator)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let dir: string;
  let account: Account;
  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: false });
    dir = mkdtempSync(path.join(tmpdir(), "door-break11h-"));
    account = new Account({ baseUrl: sim.url, credentials: DEMO_PHONE, tokenFile: path.join(dir, "s.json"), auditLogPath: path.join(dir, "audit.jsonl"), client: { random: () => 0 } });
  });
  afterEach(async () => {
    await account?.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const msg = (i: number, f: { id?: number; door?: string }) => ({ msgDeviceId: f.id, msgDoor: f.door, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid: `m${i}` });
  const node = { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true };

  it("ten unlocks at once on a revoked access token: one refresh, no login, each message at most one PUT plus one replay", async () => {
    await account.start();
    await account.devices();
    sim.control.revokeAccessToken("demo");
    sim.control.resetRequests();
    const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => performUnlock(account, msg(i, { id: 101 }), node)));
    assert.ok(rs.every((r) => r.outcome === "accepted"), JSON.stringify(rs.map((r) => r.outcome)));
    assert.equal(count(sim, "refreshToken"), 1, JSON.stringify(ops(sim)));
    assert.equal(logins(sim), 0);
    assert.ok(puts(sim) <= 20, `${puts(sim)} PUTs for ten messages`);
  });

  it("no list (its fetch answers 503): a picked door goes to its stored id, a door name sends nothing", async () => {
    sim.control.inject({ kind: "503", endpoint: "listUserDevices", count: 10_000 });
    await account.start();
    const picked = { ...node, door: { id: 101, name: "Front Door", location: "Main Street 1" } };
    const r1 = await performUnlock(account, msg(1, {}), picked);
    assert.equal(r1.outcome, "accepted", JSON.stringify(r1));
    assert.equal(r1.deviceId, 101);
    const r2 = await performUnlock(account, msg(2, { door: "Front Door" }), node);
    assert.equal(r2.mayHaveOpened, false);
    assert.equal(puts(sim), 1, JSON.stringify(ops(sim)));
    const targets = sim.control.requests().filter((r) => r.operation.startsWith("unlock")).map((r) => r.deviceId);
    assert.deepEqual(targets, [101]);
  });
});
