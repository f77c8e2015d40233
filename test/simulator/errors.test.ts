/**
 * Requests are checked as the service's description says: 400 for a bad body (changing nothing),
 * 401 without a valid access token, 404, 405, 413. docs/simulator.md#requests-and-errors
 */
import { strict as assert } from "node:assert";
import { Readable } from "node:stream";
import { request } from "undici";
import type { RunningSimulator } from "../../src/simulator/index.js";
import {
  DEMO_ACCOUNT,
  FakeClock,
  LOGIN_PATHS,
  assertError,
  call,
  login,
  refresh,
  withSim,
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

describe("simulator requests and errors: a request the description does not allow is refused with { status, title, detail } and changes nothing (docs/simulator.md#requests-and-errors)", () => {
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
        assert.equal(
          (await call(sim, "GET", "/api/user/device", { token: pair.access })).status,
          200,
          "session not superseded",
        );
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
      assertError(
        await call(sim, "POST", LOGIN_PATHS.loginByPhone, { json: { phoneNumber: "+1555", password: "x" } }),
        400,
      );
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
        for (const [method, path] of [...endpoints.slice(1), endpoints[0]]) {
          assertError(await call(sim, method, path, { token: pair.access }), 401, `${method} ${path}`);
        }
        assert.equal(sim.control.counts().unlocks, 0);
      });
    }
  });

  describe("an unknown path is 404, a wrong method 405 with Allow, a body over 64 KiB 413 (64 KiB itself is read)", () => {
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

    /** A valid login body padded with JSON whitespace to exactly `bytes` bytes. */
    const loginBody = (bytes: number): Buffer => {
      const json = JSON.stringify({ phoneNumber: PHONE, password: PW });
      const body = Buffer.from(json + " ".repeat(bytes - json.length));
      assert.equal(body.length, bytes);
      return body;
    };
    /** Sends `body` in two chunks without a Content-Length (chunked transfer coding). */
    const chunked = async (body: Buffer) => {
      const res = await request(sim.url + LOGIN_PATHS.loginByPhone, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: Readable.from([body.subarray(0, 30_000), body.subarray(30_000)]),
      });
      await res.body.text();
      return res.statusCode;
    };

    it("a body of exactly 64 KiB (65,536 bytes) is read and logs in; 65,537 bytes answer 413, with a Content-Length and chunked", async () => {
      // docs/simulator.md#requests-and-errors: at most 64 KiB.
      assertError(await call(sim, "POST", LOGIN_PATHS.loginByPhone, { raw: loginBody(65_537) }), 413);
      assert.equal(await chunked(loginBody(65_537)), 413);
      assert.equal(sim.control.hasSession("demo"), false);
      const exact = await call(sim, "POST", LOGIN_PATHS.loginByPhone, { raw: loginBody(65_536) });
      assert.equal(exact.status, 200, exact.text);
      assert.equal(sim.control.hasSession("demo"), true);
      assert.equal(await chunked(loginBody(65_536)), 200);
    });
  });
});
