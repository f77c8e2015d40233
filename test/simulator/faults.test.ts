/** Injected faults: every kind, matching by endpoint/device/account, counts, and what executes. docs/simulator.md#faults */
import { strict as assert } from "node:assert";
import { request } from "undici";
import type { FaultKind, RunningSimulator } from "../../src/simulator/index.js";
import { DeviceList } from "../../src/spec/schemas.js";
import {
  DEMO_ACCOUNT,
  LOGIN_PATHS,
  OTHER_ACCOUNT,
  assertError,
  call,
  claims,
  login,
  refresh,
  withSim,
} from "../helpers/simulator.js";

describe("simulator faults: a fault answers the next `count` matching requests as its kind says, and only the oldest matching fault applies (docs/simulator.md#faults)", () => {
  let sim: RunningSimulator;
  let token: string;

  beforeEach(async () => {
    sim = await withSim();
    token = (await login(sim)).access;
  });
  afterEach(async () => {
    await sim.close();
  });

  const unlock = (id = 101) => call(sim, "PUT", `/api/device/${id}/unlock`, { token });
  const unlocks = (id = 101) => sim.control.device(id).unlocks.length;

  describe("status faults", () => {
    it("429 answers with Retry-After (given, default 1) and does not execute", async () => {
      sim.control.inject({ kind: "429", endpoint: "unlockDevice", retryAfter: 7 });
      const r = await unlock();
      assertError(r, 429);
      assert.equal(r.headers["retry-after"], "7");
      sim.control.inject({ kind: "429", endpoint: "unlockDevice" });
      assert.equal((await unlock()).headers["retry-after"], "1");
      assert.equal(unlocks(), 0);
      assert.equal((await unlock()).status, 200, "faults are used up");
    });

    for (const kind of ["500", "502", "503", "504"] as FaultKind[]) {
      it(`${kind} answers ${kind} ErrorResponse and the unlock is not executed`, async () => {
        sim.control.inject({ kind, endpoint: "unlockDevice" });
        assertError(await unlock(), Number(kind));
        assert.equal(unlocks(), 0);
        assert.equal(sim.control.counts().unlocks, 0);
        assert.equal(sim.control.requests({ operation: "unlockDevice" })[0]?.fault, kind);
      });
    }

    it("a 5xx fault carries Retry-After when given", async () => {
      sim.control.inject({ kind: "503", endpoint: "unlockDevice", retryAfter: 30 });
      const r = await unlock();
      assert.equal(r.headers["retry-after"], "30");
    });

    it("a status fault with a title answers that title (any text, markup too) in its ErrorResponse", async () => {
      const title = '<img src=x onerror="alert(1)"> {{ 7*7 }}';
      sim.control.inject({ kind: "503", endpoint: "unlockDevice", title });
      sim.control.inject({ kind: "429", endpoint: "unlockDevice", title: "slow down, please" });
      const r = await unlock();
      assertError(r, 503);
      assert.equal(r.json.title, title);
      assert.equal((await unlock()).json.title, "slow down, please");
      sim.control.inject({ kind: "503", endpoint: "unlockDevice" });
      assert.equal((await unlock()).json.title, "Service Unavailable", "without it, the status's usual title");
    });

    it("504 with executed:true executes the unlock and still answers 504", async () => {
      sim.control.inject({ kind: "504", endpoint: "unlockDevice", executed: true });
      assertError(await unlock(), 504);
      assert.equal(unlocks(), 1);
      assert.equal(sim.control.counts().unlocks, 1);
    });

    it("a faulted login does not supersede the session; a faulted refresh does not consume the token", async () => {
      const pair = await login(sim);
      sim.control.inject({ kind: "503", endpoint: ["login", "loginByPhone", "loginByEmail"] });
      assertError(
        await call(sim, "POST", LOGIN_PATHS.loginByPhone, {
          json: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password },
        }),
        503,
      );
      sim.control.inject({ kind: "500", endpoint: "refreshToken" });
      assertError(await refresh(sim, pair.refresh), 500);
      assert.equal((await call(sim, "GET", "/api/user/device", { token: pair.access })).status, 200);
      assert.equal((await refresh(sim, pair.refresh)).status, 200);
    });
  });

  describe("drop", () => {
    it("reads the request, then destroys the socket without an answer; not executed", async () => {
      sim.control.inject({ kind: "drop", endpoint: "unlockDevice" });
      await assert.rejects(unlock());
      assert.equal(unlocks(), 0);
      const entry = sim.control.requests({ operation: "unlockDevice" })[0];
      assert.equal(entry?.status, 0);
      assert.equal(entry?.fault, "drop");
    });
    it("with executed:true the unlock happens before the socket is dropped", async () => {
      sim.control.inject({ kind: "drop", endpoint: "unlockDevice", executed: true });
      await assert.rejects(unlock());
      assert.equal(unlocks(), 1);
    });
  });

  describe("timing faults", () => {
    it("latency delays the answer, then handles the call normally (executed)", async () => {
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 250 });
      const t0 = Date.now();
      const r = await unlock();
      assert.ok(Date.now() - t0 >= 240, `took ${Date.now() - t0} ms`);
      assert.equal(r.status, 200);
      assert.equal(unlocks(), 1);
    });
    it("slow-headers sends the status line only after latencyMs, then the correct body", async () => {
      sim.control.inject({ kind: "slow-headers", endpoint: "listUserDevices", latencyMs: 300 });
      const t0 = Date.now();
      const res = await request(`${sim.url}/api/user/device`, { headers: { authorization: `Bearer ${token}` } });
      const headersAfter = Date.now() - t0;
      const body = await res.body.json();
      assert.ok(headersAfter >= 290, `headers after ${headersAfter} ms`);
      assert.equal(res.statusCode, 200);
      assert.equal(DeviceList.parse(body).length, 8);
    });
    it("close() does not wait for a pending latency fault", async () => {
      sim.control.inject({ kind: "latency", endpoint: "listUserDevices", latencyMs: 60_000 });
      const pending = call(sim, "GET", "/api/user/device", { token }).catch((err: Error) => err);
      await new Promise((r) => setTimeout(r, 50));
      const t0 = Date.now();
      await sim.close();
      assert.ok(Date.now() - t0 < 2000);
      assert.ok((await pending) instanceof Error, "the pending call fails instead of hanging");
    });
  });

  describe("body-shape faults", () => {
    it("non-json: 200 whose body is not JSON; not executed", async () => {
      sim.control.inject({ kind: "non-json", endpoint: "unlockDevice" });
      const r = await unlock();
      assert.equal(r.status, 200);
      assert.ok(r.text.length > 0);
      assert.throws(() => JSON.parse(r.text));
      assert.equal(unlocks(), 0);
    });
    it("truncated: the body stops before Content-Length and the connection closes", async () => {
      sim.control.inject({ kind: "truncated", endpoint: "listUserDevices" });
      await assert.rejects(async () => {
        const res = await request(`${sim.url}/api/user/device`, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(res.statusCode, 200);
        await res.body.text();
      });
    });
    it("huge: 200 with a JSON body of sizeBytes", async () => {
      sim.control.inject({ kind: "huge", endpoint: "listUserDevices", sizeBytes: 1_000_000 });
      const r = await call(sim, "GET", "/api/user/device", { token });
      assert.equal(r.status, 200);
      assert.equal(Buffer.byteLength(r.text), 1_000_000);
      assert.equal(typeof r.json, "object");
    });
    it("huge defaults to 8 MiB", async () => {
      sim.control.inject({ kind: "huge", endpoint: "listUserLocations" });
      const res = await request(`${sim.url}/api/user/location`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.headers["content-length"], String(8 * 1024 * 1024));
      let n = 0;
      for await (const chunk of res.body) n += (chunk as Buffer).length;
      assert.equal(n, 8 * 1024 * 1024);
    });
    it("empty-token-pair: login answers 200 {} and no session is created", async () => {
      await call(sim, "POST", "/api/auth/logout", { token });
      sim.control.inject({ kind: "empty-token-pair" });
      const r = await call(sim, "POST", LOGIN_PATHS.loginByPhone, {
        json: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password },
      });
      assert.equal(r.status, 200);
      assert.deepEqual(r.json, {});
      assert.equal(sim.control.hasSession("demo"), false);
      assert.equal(sim.control.counts().logins, 1, "only the first, real login counts");
    });
    it("empty-token-pair without endpoint leaves non-token operations alone", async () => {
      sim.control.inject({ kind: "empty-token-pair" });
      assert.ok(Array.isArray((await call(sim, "GET", "/api/user/device", { token })).json));
      assert.equal((await call(sim, "PUT", "/api/device/101/unlock", { token })).status, 200);
      const r = await call(sim, "POST", LOGIN_PATHS.login, {
        json: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password },
      });
      assert.deepEqual(r.json, {}, "the fault waited for the next token operation");
    });
    it("jwt-without-exp: the session is really created, the AccessToken has no exp and works", async () => {
      const old = token;
      sim.control.inject({ kind: "jwt-without-exp", endpoint: "loginByEmail" });
      const r = await call(sim, "POST", LOGIN_PATHS.loginByEmail, {
        json: { email: DEMO_ACCOUNT.email, password: DEMO_ACCOUNT.password },
      });
      assert.equal(r.status, 200);
      const c = claims(r.json.AccessToken);
      assert.equal(c.exp, undefined);
      assert.equal(c.sub, "demo");
      assert.equal((await call(sim, "GET", "/api/user/device", { token: r.json.AccessToken })).status, 200);
      assertError(await call(sim, "GET", "/api/user/device", { token: old }), 401, "the old session was superseded");
      assert.equal(sim.control.counts().logins, 2);
    });
    it("wrong-content-type: 200 with the correct body but Content-Type text/html", async () => {
      sim.control.inject({ kind: "wrong-content-type", endpoint: "listUserDevices" });
      const r = await call(sim, "GET", "/api/user/device", { token });
      assert.equal(r.status, 200);
      assert.match(String(r.headers["content-type"]), /^text\/html/);
      assert.equal(DeviceList.parse(r.json).length, 8);
    });
  });

  describe("matching and consumption", () => {
    it("matches by deviceId only", async () => {
      sim.control.inject({ kind: "503", deviceId: 102 });
      assert.equal((await unlock(101)).status, 200);
      assertError(await unlock(102), 503);
      assert.equal((await unlock(102)).status, 200);
    });
    it("matches by accountId only", async () => {
      const other = (await login(sim, "loginByPhone", OTHER_ACCOUNT)).access;
      sim.control.inject({ kind: "502", accountId: "other", endpoint: "unlockDevice" });
      assert.equal((await unlock(201)).status, 200, "demo is not affected");
      assertError(await call(sim, "PUT", "/api/device/201/unlock", { token: other }), 502);
    });
    it("matches a login by the identity's account", async () => {
      sim.control.inject({ kind: "503", accountId: "other" });
      await login(sim, "loginByEmail");
      const r = await call(sim, "POST", LOGIN_PATHS.loginByEmail, {
        json: { email: OTHER_ACCOUNT.email, password: OTHER_ACCOUNT.password },
      });
      assertError(r, 503);
    });
    it("affects exactly the next `count` matching calls", async () => {
      sim.control.inject({ kind: "500", endpoint: ["getDevice", "listUserDevices"], count: 3 });
      assertError(await call(sim, "GET", "/api/device/101", { token }), 500);
      assert.equal((await call(sim, "GET", "/api/user/location", { token })).status, 200, "not a listed endpoint");
      assertError(await call(sim, "GET", "/api/user/device", { token }), 500);
      assertError(await call(sim, "GET", "/api/device/101", { token }), 500);
      assert.equal((await call(sim, "GET", "/api/device/101", { token })).status, 200);
    });
    it("without endpoint it matches every /api operation but not the docs", async () => {
      sim.control.inject({ kind: "500", count: 2 });
      assert.equal((await call(sim, "GET", "/openapi.json")).status, 200);
      assertError(await call(sim, "GET", "/api/user/location", { token }), 500);
      assertError(await call(sim, "POST", "/api/auth/logout", { token }), 500);
      assert.equal(sim.control.hasSession("demo"), true, "the faulted logout did not execute");
    });
    it("clearFaults removes every pending fault", async () => {
      sim.control.inject({ kind: "503", count: 10 });
      sim.control.clearFaults();
      assert.equal((await unlock()).status, 200);
    });
    it("inject validates the fault and returns an id", () => {
      assert.equal(typeof sim.control.inject({ kind: "503" }), "string");
      assert.throws(() => sim.control.inject({ kind: "418" as FaultKind }), /invalid fault/);
      assert.throws(() => sim.control.inject({ kind: "503", endpoint: "nope" as "login" }), /invalid fault/);
      assert.throws(() => sim.control.inject({ kind: "503", count: 0 }), /invalid fault/);
    });
  });
});
