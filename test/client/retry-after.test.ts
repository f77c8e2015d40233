/**
 * Every wait the package measures itself runs on a monotonic clock (docs/session.md#renewal,
 * docs/session.md#rate-limits): a wall clock set forward never sends before a Retry-After, set
 * back it never stalls the account. An operator's Reconnect honours Retry-After too
 * (docs/session.md#halts-and-reconnect), and the device list is not fetched once per message
 * within a Retry-After (docs/doors.md#the-device-list). Requests are counted in the simulator's
 * request log. The fake clock's `jump` sets the wall clock only, as a time-sync would.
 * Each test failed on e4306f5, before the fix.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Account } from "../../src/account/account.js";
import { SessionUnavailableError } from "../../src/session/errors.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { performUnlock } from "../../src/unlock/unlock.js";
import { fakeClock, type FakeClock } from "../helpers/fake-clock.js";
import { DEMO_PHONE, assertRetryAfterInText, buildSession, ops, waitUntil, type Built } from "../helpers/session.js";

const MIN = 60_000;
const H = 60 * MIN;
const count = (sim: RunningSimulator, operation: string) => sim.control.requests({ operation }).length;

describe("session waits run on a monotonic clock, and a Retry-After binds Reconnect too (docs/session.md#rate-limits)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let b: Built;

  beforeEach(async () => {
    clock = fakeClock();
    // The service keeps real time: only the client's wall clock is set.
    sim = await startSimulator({ rateLimit: false });
    b = buildSession(sim, { clock, timings: { minRenewalIntervalMs: 1000 } });
    await b.session.start();
    sim.control.resetRequests();
  });
  afterEach(async () => {
    await b.session.close();
    await b.client.close();
    await sim.close();
    clock.uninstall();
  });

  /** Both tokens of the demo account become unusable: the next call meets 401, its refresh 401. */
  function killPair() {
    sim.control.expireAccessToken("demo");
    sim.control.expireRefreshToken("demo");
  }
  /** A new session with no stored pair: its start logs in. */
  async function fresh() {
    await b.session.close();
    await b.client.close();
    b = buildSession(sim, { clock, timings: { minRenewalIntervalMs: 1000 } });
  }
  const call = () => b.session.call((t) => b.client.getDevice(t, 101));

  // docs/session.md#renewal: a refresh rejected twice within the hour halts as superseded (at most one re-login an hour).
  it("refresh rejected, re-login, clock set 2 h forward, rejected again within the hour: halt, no second re-login", async () => {
    killPair();
    await call();
    assert.equal(count(sim, "loginByPhone"), 1, JSON.stringify(ops(sim)));
    await clock.tickAsync(10 * MIN);
    clock.jump(2 * H);
    killPair();
    await assert.rejects(call());
    assert.equal(b.session.state, "halted-superseded", JSON.stringify(ops(sim)));
    assert.equal(
      count(sim, "loginByPhone"),
      1,
      `a second re-login 10 min after the first: ${JSON.stringify(ops(sim))}`,
    );
  });

  // The same rule read the other way: a clock set back must not turn a rejection 61 min later into a halt.
  it("refresh rejected, re-login, clock set 2 h back, rejected again 61 min later: one more re-login, no halt", async () => {
    killPair();
    await call();
    clock.jump(-2 * H);
    await clock.tickAsync(61 * MIN);
    killPair();
    await call();
    assert.equal(b.session.state, "ready", JSON.stringify(ops(sim)));
    assert.equal(count(sim, "loginByPhone"), 2, JSON.stringify(ops(sim)));
  });

  // docs/session.md#rate-limits: honour the Retry-After; docs/session.md#a-401-and-its-replay: a replay only follows a renewal.
  it("refresh 429 Retry-After 300 s after a 401, clock set 10 min forward: still no refresh before 300 s have passed", async () => {
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 300, count: 1 });
    await assert.rejects(call());
    assert.equal(count(sim, "refreshToken"), 1);
    clock.jump(10 * MIN);
    await clock.tickAsync(60_000);
    await assert.rejects(call(), (e: unknown) => (e as { retryAfter?: number }).retryAfter! > 0);
    assert.equal(count(sim, "refreshToken"), 1, `refreshed within the Retry-After: ${JSON.stringify(ops(sim))}`);
    await clock.tickAsync(240_000);
    await call();
    assert.equal(count(sim, "refreshToken"), 2);
    assert.equal(b.session.state, "ready");
  });

  it("refresh 429 Retry-After 300 s after a 401, clock set a day back: renewed once 300 s have passed, not a day later", async () => {
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 300, count: 1 });
    await assert.rejects(call());
    clock.jump(-24 * H);
    await clock.tickAsync(301_000);
    await call();
    assert.equal(count(sim, "refreshToken"), 2, JSON.stringify(ops(sim)));
    assert.equal(b.session.state, "ready");
  });

  it("login 429 Retry-After 600 s, clock set 20 min forward: no login before 600 s have passed", async () => {
    await fresh();
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 600, count: 1 });
    sim.control.resetRequests();
    await b.session.start();
    assert.equal(b.session.state, "unreachable");
    clock.jump(20 * MIN);
    await clock.tickAsync(61_000);
    await assert.rejects(b.session.token(), SessionUnavailableError);
    assert.equal(count(sim, "loginByPhone"), 1, `logged in within the Retry-After: ${JSON.stringify(ops(sim))}`);
    await clock.tickAsync(540_000);
    await b.session.token();
    assert.equal(count(sim, "loginByPhone"), 2);
  });

  // docs/session.md#halts-and-reconnect: Reconnect never overrides the service's Retry-After.
  it("Reconnect pressed twice within a login's Retry-After sends nothing then, and one login once it has passed", async () => {
    await fresh();
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 600, count: 1 });
    sim.control.resetRequests();
    await b.session.start();
    assert.equal(b.session.state, "unreachable");
    await b.session.reconnect();
    await b.session.reconnect();
    assert.equal(
      count(sim, "loginByPhone"),
      1,
      `Reconnect logged in within the Retry-After: ${JSON.stringify(ops(sim))}`,
    );
    assert.match(b.session.snapshot().reason ?? "", /\d+ s/, "the state says when the login will be tried");
    await clock.tickAsync(600_000);
    await waitUntil(
      () => b.session.state === "ready",
      5000,
      () => `ready after the Retry-After: ${b.session.state} ${JSON.stringify(ops(sim))}`,
    );
    assert.equal(count(sim, "loginByPhone"), 2, "exactly one login for two presses");
  });
});

describe("the device list is never fetched within its Retry-After, nor once per message within its back-off (docs/doors.md#the-device-list)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let dir: string;
  let account: Account;
  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: false });
    dir = mkdtempSync(path.join(tmpdir(), "door-list-ra-"));
  });
  afterEach(async () => {
    await account?.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("no list yet, listDevices 429 Retry-After 120 s: six messages by name within it are rate-limited with retryAfter, and send no list fetch and no PUT", async () => {
    sim.control.inject({ kind: "429", endpoint: "listUserDevices", retryAfter: 120, count: 10 });
    account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      client: { random: () => 0 },
    });
    await account.start();
    account.warmDevices();
    await waitUntil(() => account.directory.nextRetryAt() !== null, 10000, "the start-up list fetch to fail");
    const settings = { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true };
    for (let i = 0; i < 6; i++) {
      const r = await performUnlock(
        account,
        {
          msgDeviceId: undefined,
          msgDoor: "Front Door",
          msgLockId: undefined,
          msgActor: undefined,
          msgRetain: undefined,
          msgid: `m${i}`,
        },
        settings,
      );
      // docs/session.md#rate-limits: a limited list fetch is rate-limited like any other
      // rate limit, with the seconds until the list is fetched again, named in its text.
      assert.equal(r.outcome, "rate-limited", JSON.stringify(r));
      assert.equal(r.status, 429);
      assert.equal(r.mayHaveOpened, false);
      const left = assertRetryAfterInText(r, `message ${i}: `);
      assert.ok(left >= 115 && left <= 120, `retryAfter ${left}`);
    }
    assert.equal(count(sim, "listUserDevices"), 1, `list fetched within its Retry-After: ${JSON.stringify(ops(sim))}`);
    assert.equal(sim.control.requests().filter((r) => r.operation.startsWith("unlock")).length, 0);
  });

  it("no list yet, listDevices 503 (no Retry-After): six messages in the first back-off window make at most one extra fetch", async () => {
    sim.control.inject({ kind: "503", endpoint: "listUserDevices", count: 100 });
    account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      client: { random: () => 0 },
    });
    await account.start();
    account.warmDevices();
    await waitUntil(() => account.directory.nextRetryAt() !== null, 10000, "the start-up list fetch to fail");
    const settings = { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true };
    for (let i = 0; i < 6; i++) {
      const r = await performUnlock(
        account,
        {
          msgDeviceId: undefined,
          msgDoor: "Front Door",
          msgLockId: undefined,
          msgActor: undefined,
          msgRetain: undefined,
          msgid: `m${i}`,
        },
        settings,
      );
      assert.equal(r.outcome, "error", JSON.stringify(r)); // outcome table, last row; nothing was sent
      assert.equal(r.mayHaveOpened, false);
    }
    // The start-up fetch and one message's try, each with up to 4 attempts of an idempotent GET (docs/nodes.md#door-status).
    assert.ok(count(sim, "listUserDevices") <= 8, `list fetched once per message: ${JSON.stringify(ops(sim))}`);
    assert.equal(sim.control.requests().filter((r) => r.operation.startsWith("unlock")).length, 0);
  });
});

describe("a Retry-After longer than about 24.8 days is read as 2,147,483 s, a wait the package keeps (docs/session.md#rate-limits)", function () {
  this.timeout(30_000);
  const LONGEST_S = 2_147_483;
  let sim: RunningSimulator;
  let clock: FakeClock;
  let dir: string;
  let account: Account | null = null;
  const settings = { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true };
  const unlock101 = (msgid: string) =>
    performUnlock(
      account!,
      { msgDeviceId: 101, msgDoor: undefined, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid },
      settings,
    );

  beforeEach(async () => {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false });
    dir = mkdtempSync(path.join(tmpdir(), "door-ra-cap-"));
  });
  afterEach(async () => {
    await account?.close(0);
    account = null;
    await sim.close();
    clock.uninstall();
    rmSync(dir, { recursive: true, force: true });
  });

  function open(): Account {
    account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      clock,
      client: { random: () => 0 },
    });
    return account;
  }

  it("an unlock answered 429 with Retry-After 2147484, 99999999999 or an HTTP date in 2099: rate-limited, retryAfter 2147483, the text names 2147483 s; 2147483 itself is taken as it is", async () => {
    await open().start();
    for (const retryAfter of [2_147_484, 99_999_999_999, "Thu, 01 Jan 2099 00:00:00 GMT", 2_147_483]) {
      sim.control.inject({ kind: "429", endpoint: "unlockDevice", retryAfter, count: 1 });
      const r = await unlock101(`m-${retryAfter}`);
      assert.equal(r.outcome, "rate-limited", JSON.stringify(r));
      assert.equal(r.status, 429);
      assert.equal(assertRetryAfterInText(r, `Retry-After ${retryAfter}: `), LONGEST_S);
    }
  });

  it("a login answered 429 with Retry-After 99999999999: messages fail rate-limited with retryAfter 2147483 and send nothing; once 2,147,483 s have passed the next message logs in and is accepted", async () => {
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 99_999_999_999, count: 1 });
    await open().start();
    const first = await unlock101("m1");
    assert.equal(first.outcome, "rate-limited", JSON.stringify(first));
    assert.equal(assertRetryAfterInText(first), LONGEST_S);
    await clock.tickAsync((LONGEST_S - 1) * 1000);
    const second = await unlock101("m2");
    assert.equal(second.outcome, "rate-limited", JSON.stringify(second));
    assert.equal(assertRetryAfterInText(second), 1, "1 s left of the wait");
    assert.equal(count(sim, "loginByPhone"), 1, `nothing sent within the wait: ${JSON.stringify(ops(sim))}`);
    assert.equal(sim.control.requests().filter((e) => e.operation.startsWith("unlock")).length, 0);
    await clock.tickAsync(1000);
    const third = await unlock101("m3");
    assert.equal(third.outcome, "accepted", JSON.stringify(third));
    assert.equal(count(sim, "loginByPhone"), 2);
  });
});
