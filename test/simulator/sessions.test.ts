/** Sessions and tokens: login, superseding, refresh rotation, logout, token expiry. docs/simulator.md#sessions-and-tokens */
import { strict as assert } from "node:assert";
import { SignJWT } from "jose";
import type { RunningSimulator } from "../../src/simulator/index.js";
import {
  DEMO_ACCOUNT,
  FakeClock,
  LOGIN_PATHS,
  OTHER_ACCOUNT,
  assertError,
  call,
  claims,
  login,
  refresh,
  withSim,
  type LoginVia,
} from "../helpers/simulator.js";

const VIAS: LoginVia[] = ["login", "loginByPhone", "loginByEmail"];

describe("simulator sessions and tokens: one session per account; a login supersedes it, a refresh token works once, logout ends it, an access token ends at its exp (docs/simulator.md#sessions-and-tokens)", () => {
  let sim: RunningSimulator;
  const clock = new FakeClock();
  const ACCESS_TTL = 3600;
  const REFRESH_TTL = 7200;

  beforeEach(async () => {
    sim = await withSim({
      now: clock.now,
      accessTtlSec: ACCESS_TTL,
      refreshTtlSec: REFRESH_TTL,
      jwtSecret: "test-secret",
    });
  });
  afterEach(async () => {
    await sim.close();
  });

  describe("no session -> login (valid credentials)", () => {
    for (const via of VIAS) {
      it(`${via} answers 200 with a capitalised TokenPair and a session starts`, async () => {
        assert.equal(sim.control.hasSession("demo"), false);
        const r = await call(sim, "POST", LOGIN_PATHS[via], {
          json:
            via === "loginByEmail"
              ? { email: DEMO_ACCOUNT.email, password: DEMO_ACCOUNT.password }
              : { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password },
        });
        assert.equal(r.status, 200);
        assert.match(String(r.headers["content-type"]), /^application\/json/);
        assert.deepEqual(Object.keys(r.json).sort(), ["AccessToken", "RefreshToken"]);
        assert.match(r.json.RefreshToken, /^rt_[A-Za-z0-9_-]{43}$/);
        const c = claims(r.json.AccessToken);
        assert.equal(c.sub, "demo");
        assert.equal(typeof c.sid, "string");
        assert.equal(typeof c.jti, "string");
        assert.equal(c.iat, Math.floor(clock.t / 1000));
        assert.equal(c.exp, Math.floor(clock.t / 1000) + ACCESS_TTL);
        assert.equal(sim.control.hasSession("demo"), true);
        assert.equal(sim.control.counts().logins, 1);
        // the token works
        const devices = await call(sim, "GET", "/api/user/device", { token: r.json.AccessToken });
        assert.equal(devices.status, 200);
      });
    }

    it("the access token is an HS256 JWT", async () => {
      const pair = await login(sim);
      const header = JSON.parse(Buffer.from(pair.access.split(".")[0], "base64url").toString());
      assert.equal(header.alg, "HS256");
    });

    it("wrong credentials answer 401 and change nothing (an existing session survives)", async () => {
      const pair = await login(sim);
      const attempts: Array<[string, unknown]> = [
        [LOGIN_PATHS.loginByPhone, { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: "wrong" }],
        [LOGIN_PATHS.login, { phoneNumber: "+15559999999", password: DEMO_ACCOUNT.password }],
        [LOGIN_PATHS.loginByEmail, { email: DEMO_ACCOUNT.email, password: OTHER_ACCOUNT.password }],
        [LOGIN_PATHS.loginByEmail, { email: "nobody@example.com", password: "x" }],
      ];
      for (const [path, json] of attempts) assertError(await call(sim, "POST", path, { json }), 401, path);
      assert.equal(sim.control.counts().logins, 1);
      assert.equal((await call(sim, "GET", "/api/user/device", { token: pair.access })).status, 200);
      assert.equal((await refresh(sim, pair.refresh)).status, 200);
    });
  });

  describe("session active -> another login supersedes it", () => {
    for (const first of VIAS) {
      for (const second of VIAS) {
        it(`a login via ${second} supersedes a session from ${first}`, async () => {
          const old = await login(sim, first);
          const fresh = await login(sim, second);
          assertError(await call(sim, "GET", "/api/user/device", { token: old.access }), 401);
          assertError(await refresh(sim, old.refresh), 401, "old refresh token is revoked");
          assert.equal((await call(sim, "GET", "/api/user/device", { token: fresh.access })).status, 200);
          assert.equal(sim.control.hasSession("demo"), true);
        });
      }
    }

    it("another account's login does not touch the session", async () => {
      const demo = await login(sim);
      await login(sim, "loginByPhone", OTHER_ACCOUNT);
      assert.equal((await call(sim, "GET", "/api/user/device", { token: demo.access })).status, 200);
    });
  });

  describe("session active -> refresh", () => {
    it("a valid unused refresh token gives a pair with both values new; the sent token is dead at once", async () => {
      const first = await login(sim);
      clock.advance(1000);
      const r = await refresh(sim, first.refresh);
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.json).sort(), ["AccessToken", "RefreshToken"]);
      assert.notEqual(r.json.AccessToken, first.access);
      assert.notEqual(r.json.RefreshToken, first.refresh);
      assert.equal(claims(r.json.AccessToken).sid, claims(first.access).sid, "same session");
      assert.equal(claims(r.json.AccessToken).exp, Math.floor(clock.t / 1000) + ACCESS_TTL);
      assertError(await refresh(sim, first.refresh), 400, "reuse of a consumed token");
      assert.equal((await call(sim, "GET", "/api/user/device", { token: r.json.AccessToken })).status, 200);
      // Documented behaviour: the previous access token stays valid until its own exp.
      assert.equal((await call(sim, "GET", "/api/user/device", { token: first.access })).status, 200);
      // The rotated token works once more, and rotates again.
      const again = await refresh(sim, r.json.RefreshToken);
      assert.equal(again.status, 200);
      assert.equal(sim.control.counts().refreshes, 2);
    });

    it("two concurrent refreshes with one token: exactly one succeeds, the other gets 400", async () => {
      const pair = await login(sim);
      const results = await Promise.all([refresh(sim, pair.refresh), refresh(sim, pair.refresh)]);
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 400]);
    });

    const bad: Array<[string, unknown]> = [
      ["missing", undefined],
      ["empty string", ""],
      ["malformed (not the opaque format)", "not-a-refresh-token"],
      ["malformed (a JWT)", "eyJhbGciOiJIUzI1NiJ9.e30.sig"],
      ["unknown (well-formed)", "rt_" + "A".repeat(43)],
    ];
    for (const [label, token] of bad) {
      it(`refresh token ${label} -> 400, session unchanged`, async () => {
        const pair = await login(sim);
        const r =
          token === undefined ? await call(sim, "POST", "/api/auth/refresh", { json: {} }) : await refresh(sim, token);
        assertError(r, 400);
        assert.equal(sim.control.hasSession("demo"), true);
        assert.equal((await call(sim, "GET", "/api/user/device", { token: pair.access })).status, 200);
        assert.equal((await refresh(sim, pair.refresh)).status, 200, "the real refresh token still works");
      });
    }

    it("an expired refresh token (own lifetime) -> 401, session unchanged", async () => {
      const pair = await login(sim);
      clock.advance(REFRESH_TTL * 1000);
      assertError(await refresh(sim, pair.refresh), 401);
      assert.equal(sim.control.hasSession("demo"), true);
      assertError(await refresh(sim, pair.refresh), 401, "never works again");
    });

    it("a refresh token revoked by a new login -> 401 (not 400)", async () => {
      const pair = await login(sim);
      await login(sim, "loginByEmail");
      assertError(await refresh(sim, pair.refresh), 401);
    });

    it("the refresh token lives until just before its lifetime ends", async () => {
      const pair = await login(sim);
      clock.advance(REFRESH_TTL * 1000 - 1);
      assert.equal((await refresh(sim, pair.refresh)).status, 200);
    });
  });

  describe("session active -> logout", () => {
    it("a valid access token ends the session: 200 without body, old tokens 401", async () => {
      const pair = await login(sim);
      const r = await call(sim, "POST", "/api/auth/logout", { token: pair.access });
      assert.equal(r.status, 200);
      assert.equal(r.text, "");
      assert.equal(sim.control.hasSession("demo"), false);
      assertError(await call(sim, "GET", "/api/user/device", { token: pair.access }), 401);
      assertError(await refresh(sim, pair.refresh), 401);
      assertError(await call(sim, "POST", "/api/auth/logout", { token: pair.access }), 401, "second logout");
    });

    it("logout without a token answers 401", async () => {
      assertError(await call(sim, "POST", "/api/auth/logout"), 401);
    });

    it("a new login after logout works", async () => {
      const pair = await login(sim);
      await call(sim, "POST", "/api/auth/logout", { token: pair.access });
      const again = await login(sim);
      assert.equal((await call(sim, "GET", "/api/user/device", { token: again.access })).status, 200);
    });
  });

  describe("access token validity", () => {
    it("expires at exp on the simulator clock", async () => {
      const pair = await login(sim);
      clock.advance(ACCESS_TTL * 1000 - 1000);
      assert.equal((await call(sim, "GET", "/api/user/device", { token: pair.access })).status, 200);
      clock.advance(1000);
      assertError(await call(sim, "GET", "/api/user/device", { token: pair.access }), 401);
      // a refresh still works (refresh lifetime is longer) and gives a working token
      const r = await refresh(sim, pair.refresh);
      assert.equal(r.status, 200);
      assert.equal((await call(sim, "GET", "/api/user/device", { token: r.json.AccessToken })).status, 200);
    });

    it("rejects a token with a wrong signature, alg none, or garbage", async () => {
      const pair = await login(sim);
      const c = claims(pair.access);
      const forged = await new SignJWT(c)
        .setProtectedHeader({ alg: "HS256" })
        .sign(new TextEncoder().encode("other-secret"));
      const none = Buffer.from('{"alg":"none"}').toString("base64url") + "." + pair.access.split(".")[1] + ".";
      const [h, p, s] = pair.access.split(".");
      const tampered = `${h}.${p}.${s.slice(0, -2)}${s.endsWith("AA") ? "BB" : "AA"}`;
      for (const token of [forged, none, tampered, "garbage"]) {
        assertError(await call(sim, "GET", "/api/user/device", { token }), 401, token);
      }
      assertError(
        await call(sim, "GET", "/api/user/device", { headers: { authorization: `Basic ${pair.access}` } }),
        401,
      );
      assert.equal((await call(sim, "GET", "/api/user/device", { token: pair.access })).status, 200);
    });

    it("a token signed with the right secret but never issued is refused", async () => {
      const pair = await login(sim);
      const c = claims(pair.access);
      const minted = await new SignJWT({ ...c, jti: "made-up" })
        .setProtectedHeader({ alg: "HS256" })
        .sign(new TextEncoder().encode("test-secret"));
      assertError(await call(sim, "GET", "/api/user/device", { token: minted }), 401);
    });
  });
});
