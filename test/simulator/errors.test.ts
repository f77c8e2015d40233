/** The spec's error table as the simulator produces it: 400, 401, 404/405/413, 429 and the request log. */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import {
  DEMO_ACCOUNT, FakeClock, LOGIN_PATHS, OTHER_ACCOUNT, assertError, call, login, refresh, withSim,
  type CallOptions,
} from "../helpers/simulator.js";

const PHONE = DEMO_ACCOUNT.phoneNumber;
const PW = DEMO_ACCOUNT.password;

/** Bodies every endpoint taking a JSON body must refuse with 400. */
const COMMON_BAD: Array<[string, CallOptions]> = [
  ["non-JSON body", { raw: "{phoneNumber: nope" }],
  ["empty body", { raw: "" }],
  ["JSON null", { raw: "null" }],
  ["JSON array", { raw: "[]" }],
  ["JSON string", { raw: '"x"' }],
  ["no Content-Type", { raw: JSON.stringify({ phoneNumber: PHONE, password: PW }), contentType: null }],
  ["text/plain Content-Type", { raw: JSON.stringify({ phoneNumber: PHONE, password: PW }), contentType: "text/plain" }],
];

const PHONE_BAD: Array<[string, CallOptions]> = [
  ...COMMON_BAD,
  ["additional property", { json: { phoneNumber: PHONE, password: PW, remember: true } }],
  ["missing password", { json: { phoneNumber: PHONE } }],
  ["missing phoneNumber", { json: { password: PW } }],
  ["empty object", { json: {} }],
  ["phoneNumber a number", { json: { phoneNumber: 15550000001, password: PW } }],
  ["password a number", { json: { phoneNumber: PHONE, password: 1234 } }],
  ["empty password", { json: { phoneNumber: PHONE, password: "" } }],
  ["phone without +", { json: { phoneNumber: "15550000001", password: PW } }],
  ["phone too short", { json: { phoneNumber: "+12345678", password: PW } }],
  ["phone too long", { json: { phoneNumber: "+12345678901234", password: PW } }],
  ["phone with spaces", { json: { phoneNumber: "+1 555 000 0001", password: PW } }],
  ["email body on the phone endpoint", { json: { email: DEMO_ACCOUNT.email, password: PW } }],
];

const EMAIL_BAD: Array<[string, CallOptions]> = [
  ...COMMON_BAD,
  ["additional property", { json: { email: DEMO_ACCOUNT.email, password: PW, x: 1 } }],
  ["missing email", { json: { password: PW } }],
  ["missing password", { json: { email: DEMO_ACCOUNT.email } }],
  ["not an email", { json: { email: "demo-at-example", password: PW } }],
  ["email a number", { json: { email: 5, password: PW } }],
  ["empty password", { json: { email: DEMO_ACCOUNT.email, password: "" } }],
  ["phone body on the email endpoint", { json: { phoneNumber: PHONE, password: PW } }],
];

describe("simulator: errors", () => {
  let sim: RunningSimulator;
  const clock = new FakeClock();

  beforeEach(async () => {
    sim = await withSim({ now: clock.now });
  });
  afterEach(async () => {
    await sim.close();
  });

  describe("400 for malformed bodies, changing no state", () => {
    const cases: Array<[string, Array<[string, CallOptions]>]> = [
      [LOGIN_PATHS.login, PHONE_BAD],
      [LOGIN_PATHS.loginByPhone, PHONE_BAD],
      [LOGIN_PATHS.loginByEmail, EMAIL_BAD],
    ];
    for (const [path, bodies] of cases) {
      it(`${path}: every kind of bad body -> 400 ErrorResponse, the existing session untouched`, async () => {
        const pair = await login(sim);
        for (const [label, opts] of bodies) {
          assertError(await call(sim, "POST", path, opts), 400, `${path} ${label}`);
        }
        assert.equal(sim.control.counts().logins, 1, "no login happened");
        assert.equal((await call(sim, "GET", "/api/user/device", { token: pair.access })).status, 200, "session not superseded");
      });
    }

    it("/api/auth/refresh: every kind of bad body -> 400, the refresh token still unused", async () => {
      const pair = await login(sim);
      const bodies: Array<[string, CallOptions]> = [
        ...COMMON_BAD.filter(([label]) => !label.includes("Content-Type")),
        ["no Content-Type", { raw: JSON.stringify({ refreshToken: pair.refresh }), contentType: null }],
        ["additional property", { json: { refreshToken: pair.refresh, extra: 1 } }],
        ["capitalised field name", { json: { RefreshToken: pair.refresh } }],
        ["refreshToken a number", { json: { refreshToken: 42 } }],
        ["refreshToken null", { json: { refreshToken: null } }],
      ];
      for (const [label, opts] of bodies) {
        assertError(await call(sim, "POST", "/api/auth/refresh", opts), 400, label);
      }
      assert.equal(sim.control.counts().refreshes, 0);
      assert.equal((await refresh(sim, pair.refresh)).status, 200, "the token was not consumed by a bad call");
    });

    it("a valid-looking login for a wrong account through the wrong field is 400, not 401", async () => {
      assertError(await call(sim, "POST", LOGIN_PATHS.loginByPhone, { json: { phoneNumber: "+1555", password: "x" } }), 400);
    });
  });

  describe("401 on every bearer endpoint (5-10)", () => {
    const endpoints: Array<[string, string]> = [
      ["POST", "/api/auth/logout"],
      ["GET", "/api/device/101"],
      ["PUT", "/api/device/101/unlock"],
      ["PUT", "/api/device/104/unlock/1"],
      ["GET", "/api/user/location"],
      ["GET", "/api/user/device"],
    ];

    it("missing and invalid tokens", async () => {
      for (const [method, path] of endpoints) {
        assertError(await call(sim, method, path), 401, `${method} ${path} without token`);
        assertError(await call(sim, method, path, { token: "not.a.jwt" }), 401, `${method} ${path} garbage`);
      }
      assert.equal(sim.control.counts().unlocks, 0);
    });

    const ways: Array<[string, (sim: RunningSimulator, clock: FakeClock) => Promise<void> | void]> = [
      ["expired (clock past exp)", (_s, c) => c.advance(48 * 3600 * 1000)],
      ["expired (control)", (s) => s.control.expireAccessToken("demo")],
      ["revoked (control)", (s) => s.control.revokeAccessToken("demo")],
      ["superseded (control)", (s) => s.control.supersede("demo")],
      ["superseded (new login)", async (s) => void (await login(s, "loginByEmail"))],
    ];
    for (const [label, make] of ways) {
      it(`a token that is ${label}`, async () => {
        const pair = await login(sim);
        await make(sim, clock);
        // logout last, since a 200 there would end the session
        for (const [method, path] of [...endpoints.slice(1), endpoints[0]!]) {
          assertError(await call(sim, method, path, { token: pair.access }), 401, `${method} ${path}`);
        }
        assert.equal(sim.control.counts().unlocks, 0);
      });
    }
  });

  describe("paths, methods and sizes", () => {
    it("an unknown path answers 404 ErrorResponse", async () => {
      assertError(await call(sim, "GET", "/api/nothing"), 404);
      assertError(await call(sim, "GET", "/api/user/device/"), 404);
      assertError(await call(sim, "GET", "/"), 404);
    });
    it("a wrong method answers 405 with Allow", async () => {
      const r = await call(sim, "GET", "/api/auth/login");
      assertError(r, 405);
      assert.equal(r.headers.allow, "POST");
      assertError(await call(sim, "DELETE", "/api/user/device"), 405);
      assertError(await call(sim, "POST", "/api/device/101/unlock"), 405);
    });
    it("a body over 64 KiB answers 413 and does not log in", async () => {
      const big = JSON.stringify({ phoneNumber: PHONE, password: "x".repeat(70 * 1024) });
      assertError(await call(sim, "POST", LOGIN_PATHS.loginByPhone, { raw: big }), 413);
      assert.equal(sim.control.hasSession("demo"), false);
    });
  });

  describe("429 rate limit (token bucket per account)", () => {
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
      for (const [method, path] of [["GET", "/api/user/device"], ["GET", "/api/user/location"], ["GET", "/api/device/101"], ["PUT", "/api/device/101/unlock"], ["PUT", "/api/device/104/unlock/1"]]) {
        assertError(await call(sim, method!, path!, { token: pair.access }), 429, path);
      }
      assertError(await refresh(sim, pair.refresh), 429, "refresh");
      assertError(await call(sim, "POST", LOGIN_PATHS.loginByEmail, { json: { email: DEMO_ACCOUNT.email, password: PW } }), 429);
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
      assertError(await call(sim, "POST", LOGIN_PATHS.login, { json: { ...wrong, phoneNumber: "+15557654321" } }), 401, "another identity");
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

  describe("request log", () => {
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
      assert.deepEqual(log.map((e) => [e.operation, e.status]), [
        ["loginByPhone", 200], ["unlockDeviceLock", 200], ["loginByEmail", 401], ["refreshToken", 200], ["docs", 200], ["unknown", 404],
      ]);
      const unlock = log[1]!;
      assert.equal(unlock.accountId, "demo");
      assert.equal(unlock.deviceId, 104);
      assert.equal(unlock.lockId, 2);
      assert.equal(unlock.method, "PUT");
      assert.equal(unlock.path, "/api/device/104/unlock/2");
      assert.equal(unlock.startedAt, clock.t);
      assert.equal(unlock.endedAt, clock.t);
      assert.ok(log[0]!.seq < log[1]!.seq);
      assert.equal(log[2]!.accountId, "demo", "the login identity resolves to the opaque account id");
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
  });
});
