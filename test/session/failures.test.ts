/**
 * What the session does when a call, a refresh or a login fails: one refresh and one replay
 * after a 401 (docs/session.md#a-401-and-its-replay), at most one re-login an hour and one retry
 * on a 5xx (docs/session.md#renewal), a halt on refused credentials
 * (docs/session.md#halts-and-reconnect), the service's Retry-After and nothing longer
 * (docs/session.md#rate-limits), and connection errors that say what to fix
 * (docs/session.md#connection-errors). Each case is driven at the simulator and its
 * consequences counted in its request log.
 */
import { strict as assert } from "node:assert";
import { readFileSync, rmSync } from "node:fs";
import * as path from "node:path";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from "node:net";
import { request } from "undici";
import { Account } from "../../src/account/account.js";
import { DoorApiError } from "../../src/client/errors.js";
import { SessionHaltedError, SessionUnavailableError } from "../../src/session/errors.js";
import type { Credentials } from "../../src/client/client.js";
import type { OperationId } from "../../src/spec/schemas.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { performUnlock, type UnlockResult } from "../../src/unlock/unlock.js";
import { refusedPort } from "../helpers/refused-port.js";
import { fakeClock, type FakeClock } from "../helpers/fake-clock.js";
import {
  CapturingLog,
  DEMO_PHONE,
  assertRetryAfterInText,
  buildSession,
  closeAll,
  ops,
  tempDir,
  tickUntil,
  waitUntil,
  type Built,
} from "../helpers/session.js";

describe("session: a failed call, refresh or login gets one bounded answer: one refresh and replay after a 401, a halt on refused credentials, never a loop (docs/session.md#a-401-and-its-replay)", function () {
  this.timeout(20_000);
  let sim: RunningSimulator;
  let b: Built;
  let clock: FakeClock | null = null;

  beforeEach(async () => {
    clock = null;
    sim = await startSimulator({ rateLimit: false });
  });
  afterEach(async () => {
    await closeAll({ b, sim, clock });
  });

  async function ready(opts: Parameters<typeof buildSession>[1] = {}): Promise<void> {
    b = buildSession(sim, opts);
    await b.session.start();
    assert.equal(b.session.state, "ready");
    sim.control.resetRequests();
  }

  it("a call answered 401: refresh once, replay once", async () => {
    await ready();
    sim.control.expireAccessToken("demo");
    const d = await b.session.call((t) => b.client.getDevice(t, 101));
    assert.equal(d.id, 101);
    assert.deepEqual(ops(sim), ["getDevice 401", "refreshToken 200", "getDevice 200"]);
  });

  it("401 again after the refresh: halted-superseded, no loop, no further requests", async () => {
    await ready();
    sim.control.expireAccessToken("demo");
    let calls = 0;
    const halts: SessionHaltedError[] = [];
    b.session.on("halt", (e: SessionHaltedError) => halts.push(e));
    await assert.rejects(
      b.session.call(async (t) => {
        calls++;
        // Before the replay, another login takes the account (the new token dies at once).
        if (calls === 2) sim.control.supersede("demo");
        return b.client.getDevice(t, 101);
      }),
      (e: unknown) => e instanceof DoorApiError && e.status === 401,
    );
    assert.equal(calls, 2, "exactly one replay");
    assert.equal(b.session.state, "halted-superseded");
    assert.equal(halts.length, 1, "the halt is raised once");
    const before = sim.control.requests().length;
    for (let i = 0; i < 20; i++) {
      await assert.rejects(
        b.session.call((t) => b.client.getDevice(t, 101)),
        SessionHaltedError,
      );
    }
    assert.equal(sim.control.requests().length, before, "nothing is sent while halted");
    assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 0, "no login loop");
    assert.equal(b.log.lines.filter((l) => l.startsWith("error session halted")).length, 1, "written once to the log");
  });

  it("refresh 401 (revoked by a superseding login): one full login; a second within the hour halts as superseded", async () => {
    await ready();
    sim.control.supersede("demo");
    await b.session.call((t) => b.client.getDevice(t, 101));
    assert.deepEqual(ops(sim), ["getDevice 401", "refreshToken 401", "loginByPhone 200", "getDevice 200"]);
    sim.control.resetRequests();
    sim.control.supersede("demo");
    await assert.rejects(b.session.call((t) => b.client.getDevice(t, 101)));
    assert.deepEqual(ops(sim), ["getDevice 401", "refreshToken 401"], "no second login within the hour");
    assert.equal(b.session.state, "halted-superseded");
    await assert.rejects(
      b.session.call((t) => b.client.getDevice(t, 101)),
      SessionHaltedError,
    );
    assert.equal(sim.control.requests().length, 2);
  });

  it("refresh 400 (token already consumed): full login, never that token again", async () => {
    await ready();
    // Consume the session's refresh token from outside, as a second component would.
    const stored = await b.store.load();
    assert.ok(stored);
    const res = await request(`${sim.url}/api/auth/refresh`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refreshToken: stored.refreshToken }),
    });
    await res.body.dump();
    assert.equal(res.statusCode, 200);
    sim.control.resetRequests();
    sim.control.expireAccessToken("demo");
    await b.session.call((t) => b.client.getDevice(t, 101));
    assert.deepEqual(ops(sim), ["getDevice 401", "refreshToken 400", "loginByPhone 200", "getDevice 200"]);
  });

  it("refresh 5xx: one retry after a back-off, then a full login (token expired)", async () => {
    await ready();
    sim.control.expireAccessToken("demo");
    sim.control.inject({ kind: "503", endpoint: "refreshToken", count: 2 });
    await b.session.call((t) => b.client.getDevice(t, 101));
    assert.deepEqual(ops(sim), [
      "getDevice 401",
      "refreshToken 503",
      "refreshToken 503",
      "loginByPhone 200",
      "getDevice 200",
    ]);
  });

  it("refresh network error: one retry, and the retry's success is used", async () => {
    await ready();
    sim.control.expireAccessToken("demo");
    sim.control.inject({ kind: "drop", endpoint: "refreshToken", count: 1 });
    await b.session.call((t) => b.client.getDevice(t, 101));
    assert.deepEqual(ops(sim), ["getDevice 401", "refreshToken 0", "refreshToken 200", "getDevice 200"]);
  });

  it("login refused on credentials (401): halted-login-failed, no retry, no loop", async () => {
    b = buildSession(sim, {
      credentials: { method: "phone", phoneNumber: "+15550000001", password: "wrong-password" },
    });
    await b.session.start();
    assert.equal(b.session.state, "halted-login-failed");
    for (let i = 0; i < 10; i++)
      await assert.rejects(
        b.session.call((t) => b.client.getDevice(t, 101)),
        SessionHaltedError,
      );
    assert.deepEqual(ops(sim), ["loginByPhone 401"]);
  });

  it("login by email and by the generic endpoint use their own operations", async () => {
    b = buildSession(sim, { credentials: { method: "email", email: "demo@example.com", password: "demo-password" } });
    await b.session.start();
    assert.equal(b.session.state, "ready");
    await b.session.close();
    b = buildSession(sim, { credentials: { method: "login", phoneNumber: "+15550000001", password: "demo-password" } });
    await b.session.start();
    assert.equal(b.session.state, "ready");
    assert.deepEqual(ops(sim), ["loginByEmail 200", "login 200"]);
  });

  it("login 5xx: one retry, then 'unreachable' (not a halt); next login only when needed and at most once a minute", async () => {
    clock = fakeClock();
    await sim.close();
    sim = await startSimulator({ rateLimit: false, now: () => clock!.now() });
    sim.control.inject({ kind: "503", endpoint: "loginByPhone", count: 10 });
    b = buildSession(sim, { clock });
    const started = b.session.start();
    await waitUntil(() => sim.control.requests().length === 1, 5000, "first login");
    // The back-off before the single retry (500 ms, jitter 0): moved only once it is set.
    await tickUntil(clock, () => sim.control.requests().length === 2, 10_000, "the single retry");
    await started;
    assert.deepEqual(ops(sim), ["loginByPhone 503", "loginByPhone 503"]);
    assert.equal(b.session.state, "unreachable");
    // Within the minute: calls fail at once, nothing is sent.
    for (let i = 0; i < 5; i++) await assert.rejects(b.session.token(), SessionUnavailableError);
    assert.equal(sim.control.requests().length, 2);
    // Time passes with no message: no login by itself.
    await clock.tickAsync(10 * 60_000);
    assert.equal(sim.control.requests().length, 2, "no background login loop");
    // A message needs the session: one login (the service has recovered).
    sim.control.clearFaults();
    const d = await b.session.call((t) => b.client.getDevice(t, 101));
    assert.equal(d.id, 101);
    assert.deepEqual(ops(sim), ["loginByPhone 503", "loginByPhone 503", "loginByPhone 200", "getDevice 200"]);
  });

  it("login 429 is not a halt and not read as bad credentials: unreachable until Retry-After passes", async () => {
    clock = fakeClock();
    await sim.close();
    sim = await startSimulator({ rateLimit: false, now: () => clock!.now() });
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 120 });
    b = buildSession(sim, { clock });
    await b.session.start();
    assert.equal(b.session.state, "unreachable");
    assert.deepEqual(ops(sim), ["loginByPhone 429"], "429 on login is not retried at once");
    await clock.tickAsync(61_000);
    await assert.rejects(
      b.session.token(),
      (e: unknown) => e instanceof SessionUnavailableError && (e.retryAfter ?? 0) > 0,
    );
    assert.equal(sim.control.requests().length, 1, "Retry-After (120 s) is honoured beyond the 1 minute floor");
    await clock.tickAsync(60_000);
    await b.session.token();
    assert.deepEqual(ops(sim), ["loginByPhone 429", "loginByPhone 200"]);
  });

  it("operator reconnect after a halt: exactly one login", async () => {
    b = buildSession(sim, {
      credentials: { method: "phone", phoneNumber: "+15550000001", password: "wrong-password" },
    });
    await b.session.start();
    assert.equal(b.session.state, "halted-login-failed");
    await b.session.reconnect();
    assert.equal(b.session.state, "halted-login-failed");
    assert.deepEqual(ops(sim), ["loginByPhone 401", "loginByPhone 401"]);
  });

  // docs/security.md#secrets: the login and the password never reach a log line, a message or an
  // error text, also when the service's own error title quotes them ("no account +1555...").
  it("a service error title that quotes the login or the password reaches no log line and no unlock outcome", async () => {
    const dir = tempDir("door-title-");
    const echoed = "+15550000001 (15550000001) demo@example.com DEMO@EXAMPLE.COM demo-password";
    for (const credentials of [
      DEMO_PHONE,
      { method: "email" as const, email: "demo@example.com", password: DEMO_PHONE.password },
    ]) {
      const log = new CapturingLog();
      const account = new Account({
        baseUrl: sim.url,
        credentials,
        tokenFile: path.join(dir, `${credentials.method}.json`),
        auditLogPath: path.join(dir, "audit.jsonl"),
        log,
        client: { random: () => 0 },
      });
      try {
        sim.control.inject({
          kind: "500",
          endpoint: ["loginByPhone", "loginByEmail"],
          title: `no account ${echoed}`,
          count: 2,
        });
        await account.start();
        assert.equal(account.session.state, "unreachable");
        await account.session.reconnect();
        await account.start();
        sim.control.inject({ kind: "500", endpoint: "unlockDevice", title: `key of ${echoed} refused`, count: 1 });
        const r = await performUnlock(
          account,
          {
            msgDeviceId: 101,
            msgDoor: undefined,
            msgLockId: undefined,
            msgActor: undefined,
            msgRetain: undefined,
            msgid: credentials.method,
          },
          { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true },
        );
        assert.equal(r.outcome, "error", JSON.stringify(r));
        const text = [...log.lines, JSON.stringify(r), account.session.snapshot().reason ?? ""].join("\n");
        const secrets =
          credentials.method === "email"
            ? ["demo@example.com", "DEMO@EXAMPLE.COM", "demo-password"]
            : ["+15550000001", "15550000001", "demo-password"];
        for (const secret of secrets) {
          assert.ok(
            !text.includes(secret),
            `${credentials.method} login: the service's title put a secret into: ${text}`,
          );
        }
      } finally {
        await account.close();
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("never writes a token, password or phone number to the log", async () => {
    await ready();
    sim.control.expireAccessToken("demo");
    await b.session.call((t) => b.client.getDevice(t, 101));
    sim.control.supersede("demo");
    await b.session.call((t) => b.client.getDevice(t, 101));
    const stored = await b.store.load();
    assert.ok(stored);
    const text = b.log.lines.join("\n") + readFileSync(b.tokenFile, "utf8").length;
    assert.ok(b.log.lines.length >= 2, "something was logged");
    for (const secret of [stored.accessToken, stored.refreshToken, "demo-password", "+15550000001", "15550000001"]) {
      assert.ok(!text.includes(secret), "a secret reached the log");
    }
  });
});

// docs/security.md#secrets: the login is a secret, also when the service's own words quote it.
describe("session: a service error text that quotes the account's login", function () {
  this.timeout(20_000);
  let sim: RunningSimulator;
  let b: Built | null = null;

  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: false });
  });
  afterEach(async () => {
    await closeAll({ b, sim });
  });

  const logins: { credentials: Credentials; op: OperationId; login: string }[] = [
    { credentials: DEMO_PHONE, op: "loginByPhone", login: "+15550000001" },
    {
      credentials: { method: "email", email: "demo@example.com", password: "demo-password" },
      op: "loginByEmail",
      login: "demo@example.com",
    },
  ];
  for (const { credentials, op, login } of logins) {
    it(`reaches no log line, session state or error text (${op}): the login is blanked out of the service's words`, async () => {
      sim.control.inject({
        kind: "503",
        endpoint: op,
        count: 2,
        title: `no gateway for ${login} (account ${login.replace("+", "")})`,
      });
      b = buildSession(sim, { credentials });
      await b.session.start();
      assert.equal(b.session.state, "unreachable");
      const err = (await b.session.token().then(
        () => null,
        (e: unknown) => e,
      )) as Error | null;
      assert.ok(err, "no session: the call fails");
      const snap = b.session.snapshot();
      const text = [...b.log.lines, snap.reason ?? "", snap.detail ?? "", err.message].join("\n");
      assert.match(text, /no gateway for/, "the service's words are still told");
      assert.ok(
        !text.includes(login) && !text.includes(login.replace("+", "")),
        `the login reached the log, the state or an error: ${text.replaceAll(login, "<LOGIN>")}`,
      );
    });
  }

  it("reaches no error text when a session resumed from its stored pair (no login since the start) gets an error that quotes the login", async () => {
    const first = buildSession(sim);
    await first.session.start();
    await first.session.close();
    await first.client.close();
    b = buildSession(sim, { tokenFile: first.tokenFile });
    sim.control.resetRequests();
    await b.session.start();
    assert.deepEqual(ops(sim), [], "resumed: no login");
    sim.control.inject({ kind: "503", endpoint: "getDevice", count: 4, title: "no key for +15550000001" });
    const err = (await b.session
      .call((t) => b!.client.getDevice(t, 101))
      .then(
        () => null,
        (e: unknown) => e,
      )) as Error | null;
    assert.ok(err, "the call fails");
    assert.match(err.message, /no key for/);
    assert.ok(
      !err.message.includes("15550000001"),
      `the login is in the error text: ${err.message.replace(/\+?15550000001/g, "<LOGIN>")}`,
    );
  });

  it("reaches no error text when it quotes the token sent: an access token in a call's error, a refresh token in a refresh's error", async () => {
    b = buildSession(sim);
    await b.session.start();
    const pair = (await b.store.load())!;
    sim.control.inject({
      kind: "503",
      endpoint: "getDevice",
      count: 4,
      title: `gateway down for bearer ${pair.accessToken}`,
    });
    const callErr = (await b.session
      .call((t) => b!.client.getDevice(t, 101))
      .then(
        () => null,
        (e: unknown) => e,
      )) as Error | null;
    assert.ok(callErr, "the call fails");
    assert.match(callErr.message, /gateway down for bearer/);
    // (the service's words are clipped to 200 characters: a token's start would be left)
    assert.ok(
      !callErr.message.includes(pair.accessToken.split(".")[1].slice(0, 30)),
      "the access token is in the call's error text",
    );
    sim.control.clearFaults();
    sim.control.inject({ kind: "503", endpoint: "refreshToken", count: 2, title: `cannot renew ${pair.refreshToken}` });
    const renewErr = (await b.client.refresh(pair.refreshToken).then(
      () => null,
      (e: unknown) => e,
    )) as Error | null;
    assert.ok(renewErr, "the refresh fails");
    assert.match(renewErr.message, /cannot renew/);
    assert.ok(!renewErr.message.includes(pair.refreshToken), "the refresh token is in the refresh's error text");
    const text = b.log.lines.join("\n");
    assert.ok(!text.includes(pair.accessToken) && !text.includes(pair.refreshToken), "a token reached the log");
  });
});

// docs/session.md#rate-limits: a 429 on login or refresh is waited out for the service's
// Retry-After and nothing longer; only consecutive 429s grow the wait (doubling with jitter,
// at most 15 min). The session, the simulator and the waits share one fake clock; every
// request is counted, and timed, in the simulator's request log.
describe("session: a rate limit is the service's, not ours (docs/session.md#rate-limits)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let clock: FakeClock;
  let dir: string;
  let account: Account;
  let n = 0;

  beforeEach(async () => {
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false, now: () => clock.now() });
    dir = tempDir("door-rate-limit-");
    // The default timings: the renewal spacing (30 s) must not stretch a 1 s Retry-After.
    account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      clock,
      client: { random: () => 0 },
    });
  });
  afterEach(async () => {
    await account.close();
    await sim.close();
    clock.uninstall();
    rmSync(dir, { recursive: true, force: true });
  });

  const settings = { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true };
  const unlock = (): Promise<UnlockResult> =>
    performUnlock(
      account,
      {
        msgDeviceId: 101,
        msgDoor: undefined,
        msgLockId: undefined,
        msgActor: undefined,
        msgRetain: undefined,
        msgid: `m${++n}`,
      },
      settings,
    );
  const refreshes = () => sim.control.requests({ operation: "refreshToken" });

  it("a refresh answered 429 with Retry-After: 1 is tried again by the first message after that second, and the unlock is accepted", async () => {
    await account.start();
    sim.control.resetRequests();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 1, count: 1 });
    const first = await unlock();
    assert.equal(first.outcome, "rate-limited", JSON.stringify(first));
    assert.equal(assertRetryAfterInText(first), 1);
    assert.deepEqual(ops(sim), ["unlockDevice 401", "refreshToken 429"]);
    // Within the second: nothing is sent, and the wait left is still named.
    await clock.tickAsync(999);
    const early = await unlock();
    assert.equal(early.outcome, "rate-limited", JSON.stringify(early));
    assert.equal(assertRetryAfterInText(early), 1);
    assert.equal(sim.control.requests().length, 2, `sent within the Retry-After: ${JSON.stringify(ops(sim))}`);
    // The second has passed: the next message renews and opens the door.
    await clock.tickAsync(1);
    const later = await unlock();
    assert.equal(later.outcome, "accepted", JSON.stringify(later));
    assert.deepEqual(ops(sim), ["unlockDevice 401", "refreshToken 429", "refreshToken 200", "unlockDevice 200"]);
    const [limited, renewed] = refreshes();
    const gap = renewed.startedAt - limited.endedAt;
    assert.ok(gap >= 1000 && gap <= 2000, `the refresh was tried again ${gap} ms after the 429, not 1-2 s`);
    assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 0);
  });

  it("a refresh answered 429 without a Retry-After is tried again after the spec's first back-off step (500 ms plus jitter)", async () => {
    await account.start();
    sim.control.resetRequests();
    sim.control.revokeAccessToken("demo");
    // A Retry-After that is neither seconds nor a date counts as none.
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: "soon", count: 1 });
    const first = await unlock();
    assert.equal(first.outcome, "rate-limited", JSON.stringify(first));
    assert.equal(assertRetryAfterInText(first), 1, "500 ms, named as the whole second it ends in");
    await clock.tickAsync(499);
    assert.equal((await unlock()).outcome, "rate-limited");
    assert.equal(refreshes().length, 1, `refreshed within the back-off: ${JSON.stringify(ops(sim))}`);
    await clock.tickAsync(1);
    assert.equal((await unlock()).outcome, "accepted");
    const [limited, renewed] = refreshes();
    assert.equal(renewed.startedAt - limited.endedAt, 500, "jitter 0 (random() = 0): exactly 500 ms");
  });

  // docs/session.md#rate-limits: a Retry-After "that cannot be read" counts as none. HTTP knows
  // two forms, whole seconds and an HTTP date; "-5", "1.5" and "+3" are neither (a lenient date
  // parser reads them as days in 2001, a date long past: no wait at all).
  for (const unreadable of ["-5", "1.5", "+3"]) {
    it(`a refresh answered 429 with Retry-After: ${unreadable} (neither seconds nor a date) is tried again after the first back-off step, not at once`, async () => {
      await account.start();
      sim.control.resetRequests();
      sim.control.revokeAccessToken("demo");
      sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: unreadable, count: 1 });
      const first = await unlock();
      assert.equal(first.outcome, "rate-limited", JSON.stringify(first));
      assert.equal(assertRetryAfterInText(first), 1, "500 ms, named as the whole second it ends in");
      const early = await unlock();
      assert.equal(early.outcome, "rate-limited", JSON.stringify(early));
      assert.equal(refreshes().length, 1, `refreshed at once: ${JSON.stringify(ops(sim))}`);
      await clock.tickAsync(500);
      assert.equal((await unlock()).outcome, "accepted");
      const [limited, renewed] = refreshes();
      assert.equal(renewed.startedAt - limited.endedAt, 500);
    });
  }

  // Every rate-limited outcome carries retryAfter in whole seconds, named in its text; a wait the
  // package cannot keep (longer than its longest timer) is never promised.
  // docs/session.md#a-retry-after-holds-the-account: the refresh's Retry-After then holds the list and the PUT too.
  it("a Retry-After of 400 digits (the refresh; then the device list and the PUT within its hold): retryAfter is whole seconds its text names, and nothing is sent a day later", async () => {
    const huge = "9".repeat(400);
    await account.start();
    sim.control.resetRequests();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: huge, count: 1 });
    const renewal = await unlock();
    assert.equal(renewal.outcome, "rate-limited", JSON.stringify(renewal));
    const wait = assertRetryAfterInText(renewal, "the refresh: ");
    assert.ok(wait >= 24 * 3600, `retryAfter ${wait} s: the service asked for more than a day`);
    const list = await performUnlock(
      account,
      {
        msgDeviceId: undefined,
        msgDoor: "Front Door",
        msgLockId: undefined,
        msgActor: undefined,
        msgRetain: undefined,
        msgid: `m${++n}`,
      },
      settings,
    );
    assert.equal(list.outcome, "rate-limited", JSON.stringify(list));
    assert.ok(assertRetryAfterInText(list, "the device list: ") >= 24 * 3600);
    const put = await unlock();
    assert.equal(put.outcome, "rate-limited", JSON.stringify(put));
    assert.ok(assertRetryAfterInText(put, "the PUT: ") >= 24 * 3600);
    await clock.tickAsync(24 * 3600_000);
    const later = await unlock();
    assert.equal(later.outcome, "rate-limited", JSON.stringify(later));
    assertRetryAfterInText(later, "a day later: ");
    assert.deepEqual(ops(sim), ["unlockDevice 401", "refreshToken 429"], "nothing sent within the Retry-After");
  });

  it("a login answered 429 with Retry-After: 1 is tried again by the first message after that second (no minute floor); the message within it is rate-limited", async () => {
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 1, count: 1 });
    await account.start();
    assert.deepEqual(ops(sim), ["loginByPhone 429"]);
    const early = await unlock();
    assert.equal(early.outcome, "rate-limited", JSON.stringify(early));
    assert.equal(early.mayHaveOpened, false);
    assert.equal(assertRetryAfterInText(early), 1);
    assert.equal(sim.control.requests().length, 1, "nothing sent within the Retry-After");
    await clock.tickAsync(1000);
    const later = await unlock();
    assert.equal(later.outcome, "accepted", JSON.stringify(later));
    assert.deepEqual(ops(sim), ["loginByPhone 429", "loginByPhone 200", "unlockDevice 200"]);
    const [limited, loggedIn] = sim.control.requests({ operation: "loginByPhone" });
    assert.equal(loggedIn.startedAt - limited.endedAt, 1000);
  });

  // The device list a door name (or a door picked in the editor) needs is fetched through the
  // session: a renewal the service rate-limited sent nothing for the list, so it is the session's
  // wait, not a failure of the list with a back-off (30 s, doubling) of its own on top.
  it("logins answered 429 twice at start-up (Retry-After: 1): a door by name opens by the first message after the second wait, with no list back-off on top", async () => {
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 1, count: 2 });
    await account.start();
    account.warmDevices();
    const byName = (): Promise<UnlockResult> =>
      performUnlock(
        account,
        {
          msgDeviceId: undefined,
          msgDoor: "Front Door",
          msgLockId: undefined,
          msgActor: undefined,
          msgRetain: undefined,
          msgid: `m${++n}`,
        },
        settings,
      );
    const first = await byName();
    assert.equal(first.outcome, "rate-limited", JSON.stringify(first));
    assert.equal(assertRetryAfterInText(first), 1);
    await clock.tickAsync(1000);
    const second = await byName();
    assert.equal(second.outcome, "rate-limited", JSON.stringify(second));
    assert.deepEqual(ops(sim), ["loginByPhone 429", "loginByPhone 429"]);
    // The second 429 in a row: twice the first step (jitter 0), and nothing more.
    assert.equal(assertRetryAfterInText(second), 2, "the session's wait, not the device list's back-off");
    await clock.tickAsync(2000);
    const third = await byName();
    assert.equal(third.outcome, "accepted", JSON.stringify(third));
    assert.deepEqual(ops(sim), [
      "loginByPhone 429",
      "loginByPhone 429",
      "loginByPhone 200",
      "listUserDevices 200",
      "unlockDevice 200",
    ]);
  });

  // docs/session.md#renewal: no timer may fire in a loop. The start-up list fetch that waits for a
  // rate-limited renewal is tried again once that wait is over, not at once and again and again.
  it("the start-up device list fetch meets a 401 whose refresh is answered 429 (Retry-After: 10): it is tried again once, after 10 s, and no timer fires in a loop meanwhile", async () => {
    // The account's clock, with every timer it sets counted.
    let timersSet = 0;
    const counting = { ...clock, setTimeout: (fn: () => void, ms: number) => (timersSet++, clock.setTimeout(fn, ms)) };
    await account.close();
    account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      clock: counting,
      client: { random: () => 0 },
    });
    await account.start();
    sim.control.resetRequests();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 10, count: 1 });
    account.warmDevices();
    await waitUntil(
      () => refreshes().length === 1 && account.directory.inFlight() === null,
      5000,
      "the refresh answered 429",
    );
    await new Promise((r) => setTimeout(r, 50));
    const before = timersSet;
    for (let s = 0; s < 9; s++) await clock.tickAsync(1000);
    assert.ok(
      timersSet - before <= 3,
      `${timersSet - before} timers set within the Retry-After: a timer fires in a loop`,
    );
    assert.deepEqual(ops(sim), ["listUserDevices 401", "refreshToken 429"], "nothing sent within the Retry-After");
    await clock.tickAsync(1000);
    await waitUntil(
      () => account.directory.cached() !== null,
      5000,
      () => `the list fetched after the wait: ${JSON.stringify(ops(sim))}`,
    );
    assert.deepEqual(ops(sim), ["listUserDevices 401", "refreshToken 429", "refreshToken 200", "listUserDevices 200"]);
  });

  it("consecutive 429s on the refresh double the wait (Retry-After 1 s, then 2, 4 ... s), never send within it, and stay at 15 min at most", async () => {
    await account.start();
    sim.control.resetRequests();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 1, count: 14 });
    const named: number[] = [];
    for (let i = 1; i <= 14; i++) {
      const r = await unlock();
      assert.equal(r.outcome, "rate-limited", `message ${i}: ${JSON.stringify(r)}`);
      const wait = assertRetryAfterInText(r, `message ${i}: `);
      named.push(wait);
      assert.equal(refreshes().length, i, `message ${i}: ${JSON.stringify(ops(sim))}`);
      // A message just before the wait ends sends nothing.
      await clock.tickAsync(wait * 1000 - 1);
      const early = await unlock();
      assert.equal(early.outcome, "rate-limited", `within wait ${i}: ${JSON.stringify(early)}`);
      assert.equal(assertRetryAfterInText(early), 1);
      assert.equal(refreshes().length, i, `refreshed within wait ${i} (${wait} s): ${JSON.stringify(ops(sim))}`);
      await clock.tickAsync(1);
    }
    const at = refreshes().map((r) => r.startedAt);
    const gaps = at.slice(1).map((t, i) => (t - at[i]) / 1000);
    assert.deepEqual(
      gaps,
      [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900],
      `waits between the refreshes (s): ${JSON.stringify(gaps)}`,
    );
    assert.deepEqual(named, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900, 900]);
    // The service relents: the next message renews, and a new 429 starts again at its Retry-After.
    const ok = await unlock();
    assert.equal(ok.outcome, "accepted", JSON.stringify(ok));
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 1, count: 1 });
    const again = await unlock();
    assert.equal(again.outcome, "rate-limited");
    assert.equal(assertRetryAfterInText(again), 1, "a success ends the run of 429s");
    assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 0);
  });
});

describe("session: a login that cannot connect says what failed, where, and what to fix (docs/session.md#connection-errors)", function () {
  this.timeout(20_000);
  let b: Built | null = null;
  const servers: Server[] = [];
  const held: Socket[] = [];
  afterEach(async () => {
    await closeAll({ b });
    b = null;
    for (const socket of held.splice(0)) socket.destroy(); // a server's close() waits for its connections
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  });

  const listen = async (server: Server): Promise<number> => {
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return (server.address() as AddressInfo).port;
  };

  /** Starts a session on `baseUrl`; returns its state's reason and detail and the message a caller gets. */
  async function attempt(
    baseUrl: string,
    connectTimeoutMs?: number,
  ): Promise<{ reason: string; detail: string; message: string; log: string }> {
    b = buildSession({ url: baseUrl } as RunningSimulator, { client: connectTimeoutMs ? { connectTimeoutMs } : {} });
    await b.session.start();
    const snap = b.session.snapshot();
    assert.equal(
      snap.state,
      "unreachable",
      "not a halt: the account recovers by itself once the service can be reached",
    );
    const err = await b.session.token().then(
      () => assert.fail("no token without a connection"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SessionUnavailableError);
    return { reason: snap.reason ?? "", detail: snap.detail ?? "", message: err.message, log: b.log.lines.join("\n") };
  }

  it("a wrong port (connection refused): 'cannot connect to <base URL> (connection refused): check the base URL'", async () => {
    const port = await refusedPort();
    const got = await attempt(`http://127.0.0.1:${port}`);
    assert.equal(got.reason, `cannot connect to http://127.0.0.1:${port} (connection refused): check the base URL`);
    assert.match(
      got.message,
      new RegExp(
        `^service unreachable: cannot connect to http://127\\.0\\.0\\.1:${port} \\(connection refused\\): check the base URL; next login attempt in \\d+ s$`,
      ),
    );
    assert.equal(got.detail, "connection refused");
    assert.match(got.log, /\[ECONNREFUSED\]/, "the log keeps the system's code");
  });

  it("a base URL of any length is clipped to 120 characters in the text (it reaches a status, a message and the editor)", async () => {
    const port = await refusedPort();
    const long = `http://127.0.0.1:${port}/${"a".repeat(5000)}`;
    const got = await attempt(long);
    const where = /^cannot connect to (\S+) \(connection refused\): check the base URL$/.exec(got.reason);
    assert.ok(where, got.reason);
    assert.equal(where[1].length, 120);
    assert.ok(where[1].endsWith("…") && long.startsWith(where[1].slice(0, -1)), where[1]);
    assert.ok(got.message.length < 400, `message of ${got.message.length} characters`);
  });

  it("a host name that does not resolve: 'cannot connect to <base URL> (host name ... not found)'", async () => {
    const got = await attempt("https://door-access-test.invalid");
    assert.match(
      got.reason,
      /^cannot connect to https:\/\/door-access-test\.invalid \(host name door-access-test\.invalid (not found|could not be resolved: the name server did not answer)\): check the base URL/,
    );
    assert.match(got.detail, /^host name not (found|resolved)$/);
  });

  it("https:// to a port that does not answer TLS: the handshake failed, check the base URL's scheme and port", async () => {
    const port = await listen(createHttpServer((_q, r) => r.end("plain http")));
    const got = await attempt(`https://127.0.0.1:${port}`);
    assert.match(
      got.reason,
      new RegExp(
        `^cannot connect to https://127\\.0\\.0\\.1:${port} \\(TLS handshake failed, (ERR_SSL_WRONG_VERSION_NUMBER|EPROTO): the port does not answer TLS\\): check the base URL's scheme and port$`,
      ),
    );
    assert.equal(got.detail, "TLS handshake failed");
  });

  it("a certificate that is not trusted: 'TLS: the service's certificate is self-signed', check the base URL and the certificate", async () => {
    const port = await listen(
      createHttpsServer(
        {
          key: readFileSync("test/fixtures/self-signed-test.key"),
          cert: readFileSync("test/fixtures/self-signed-test.crt"),
        },
        (_q, r) => r.end("{}"),
      ),
    );
    const got = await attempt(`https://127.0.0.1:${port}`);
    assert.equal(
      got.reason,
      `cannot connect to https://127.0.0.1:${port} (TLS: the service's certificate is self-signed, DEPTH_ZERO_SELF_SIGNED_CERT): check the base URL and the service's certificate`,
    );
    assert.equal(got.detail, "TLS certificate refused");
  });

  it("no connection within the connect time-out (a port that accepts and never answers): says how long it waited", async () => {
    const port = await listen(createTcpServer((socket) => held.push(socket))); // accepts, never speaks TLS
    const got = await attempt(`https://127.0.0.1:${port}`, 300);
    assert.equal(
      got.reason,
      `cannot connect to https://127.0.0.1:${port} (no connection within 300 ms): check the base URL and the network (a firewall may drop the connection)`,
    );
    assert.equal(got.detail, "connect timed out");
  });
});
