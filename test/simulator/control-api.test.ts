/** The /_sim control surface over HTTP, the control object's account actions, loopback-only start, seeds. */
import { strict as assert } from "node:assert";
import { demoSeed, startSimulator, validateSeed, type RunningSimulator, type Seed } from "../../src/simulator/index.js";
import { isLoopbackHost } from "../../src/util/loopback.js";
import { DEMO_ACCOUNT, assertError, call, login, refresh, withSim } from "../helpers/simulator.js";

describe("simulator: control surface over HTTP (/_sim)", () => {
  let sim: RunningSimulator;
  let token: string;
  beforeEach(async () => {
    sim = await withSim();
    token = (await login(sim)).access;
  });
  afterEach(async () => {
    await sim.close();
  });

  it("POST /_sim/faults injects a fault; GET lists it; DELETE clears", async () => {
    const r = await call(sim, "POST", "/_sim/faults", { json: { kind: "503", endpoint: "unlockDevice", deviceId: 101, count: 2 } });
    assert.equal(r.status, 201);
    assert.equal(typeof r.json.id, "string");
    const list = await call(sim, "GET", "/_sim/faults");
    assert.equal(list.json.length, 1);
    assert.equal(list.json[0].remaining, 2);
    assertError(await call(sim, "PUT", "/api/device/101/unlock", { token }), 503);
    assert.equal((await call(sim, "GET", "/_sim/faults")).json[0].remaining, 1);
    assert.equal((await call(sim, "DELETE", "/_sim/faults")).status, 204);
    assert.equal((await call(sim, "PUT", "/api/device/101/unlock", { token })).status, 200);
  });

  it("DELETE /_sim/faults/:id removes one fault; an invalid FaultSpec is 400", async () => {
    const { json } = await call(sim, "POST", "/_sim/faults", { json: { kind: "500" } });
    assert.equal((await call(sim, "DELETE", `/_sim/faults/${json.id}`)).status, 204);
    assert.equal((await call(sim, "DELETE", `/_sim/faults/${json.id}`)).status, 404);
    assert.equal((await call(sim, "GET", "/api/user/device", { token })).status, 200);
    assertError(await call(sim, "POST", "/_sim/faults", { json: { kind: "teapot" } }), 400);
    assertError(await call(sim, "POST", "/_sim/faults", { raw: "{" }), 400);
  });

  it("POST /_sim/devices/:id/online switches the device; GET /_sim/devices/:id reads its state", async () => {
    const r = await call(sim, "POST", "/_sim/devices/101/online", { json: { online: false } });
    assert.equal(r.status, 200);
    assert.equal(r.json.online, false);
    assertError(await call(sim, "PUT", "/api/device/101/unlock", { token }), 503);
    await call(sim, "POST", "/_sim/devices/101/online", { json: { online: true } });
    assert.equal((await call(sim, "PUT", "/api/device/101/unlock", { token })).status, 200);
    const state = await call(sim, "GET", "/_sim/devices/101");
    assert.equal(state.status, 200);
    assert.equal(state.json.id, 101);
    assert.equal(state.json.unlocks.length, 1);
    assert.equal(state.json.lastUnlock.accountId, "demo");
    assert.equal(state.json.lastUnlock.lockId, null);
    assertError(await call(sim, "GET", "/_sim/devices/4242"), 404);
    assertError(await call(sim, "POST", "/_sim/devices/101/online", { json: { online: "no" } }), 400);
  });

  it("POST /_sim/accounts/:id/expire-access makes the access token 401; a refresh recovers", async () => {
    const pair = await login(sim);
    assert.equal((await call(sim, "POST", "/_sim/accounts/demo/expire-access")).status, 204);
    assertError(await call(sim, "GET", "/api/user/device", { token: pair.access }), 401);
    const r = await refresh(sim, pair.refresh);
    assert.equal(r.status, 200);
    assert.equal((await call(sim, "GET", "/api/user/device", { token: r.json.AccessToken })).status, 200);
  });

  it("POST /_sim/accounts/:id/revoke-access makes the access token 401", async () => {
    const pair = await login(sim);
    await call(sim, "POST", "/_sim/accounts/demo/revoke-access");
    const r = await call(sim, "GET", "/api/user/device", { token: pair.access });
    assertError(r, 401);
    assert.match(r.json.detail, /revoked/);
  });

  it("POST /_sim/accounts/:id/expire-refresh makes the refresh answer 401", async () => {
    const pair = await login(sim);
    await call(sim, "POST", "/_sim/accounts/demo/expire-refresh");
    assertError(await refresh(sim, pair.refresh), 401);
    assert.equal((await call(sim, "GET", "/api/user/device", { token: pair.access })).status, 200, "access token unaffected");
  });

  it("POST /_sim/accounts/:id/supersede ends the session from elsewhere; GET /_sim/accounts/:id shows a session", async () => {
    const pair = await login(sim);
    await call(sim, "POST", "/_sim/accounts/demo/supersede");
    assertError(await call(sim, "GET", "/api/user/device", { token: pair.access }), 401);
    assertError(await refresh(sim, pair.refresh), 401);
    assert.deepEqual((await call(sim, "GET", "/_sim/accounts/demo")).json, { id: "demo", hasSession: true });
    assert.equal(sim.control.counts().logins, 2, "a superseding control action is not an HTTP login");
    assertError(await call(sim, "POST", "/_sim/accounts/nobody/supersede"), 404);
    assertError(await call(sim, "POST", "/_sim/accounts/demo/explode"), 404);
  });

  it("GET/DELETE /_sim/requests read and clear the log (filtered); /_sim calls are never logged", async () => {
    await call(sim, "PUT", "/api/device/101/unlock", { token });
    await call(sim, "GET", "/api/user/device", { token });
    const all = await call(sim, "GET", "/_sim/requests");
    assert.deepEqual(all.json.map((e: { operation: string }) => e.operation), ["loginByPhone", "unlockDevice", "listUserDevices"]);
    const filtered = await call(sim, "GET", "/_sim/requests?operation=unlockDevice&accountId=demo&deviceId=101");
    assert.equal(filtered.json.length, 1);
    assert.equal(filtered.json[0].status, 200);
    assert.equal((await call(sim, "GET", "/_sim/requests?deviceId=102")).json.length, 0);
    assert.equal((await call(sim, "DELETE", "/_sim/requests")).status, 204);
    assert.deepEqual((await call(sim, "GET", "/_sim/requests")).json, []);
  });

  it("GET /_sim/counts counts successful logins, refreshes and executed unlocks", async () => {
    const pair = await login(sim, "loginByEmail");
    await refresh(sim, pair.refresh);
    await refresh(sim, pair.refresh); // 400: not counted
    await call(sim, "PUT", "/api/device/104/unlock/1", { token: pair.access });
    await call(sim, "PUT", "/api/device/105/unlock", { token: pair.access }); // offline: not counted
    assert.deepEqual((await call(sim, "GET", "/_sim/counts")).json, { logins: 2, refreshes: 1, unlocks: 1 });
  });

  it("POST /_sim/rate-limit sets or switches off the limit", async () => {
    assert.equal((await call(sim, "POST", "/_sim/rate-limit", { json: { capacity: 1, refillPerSec: 0 } })).status, 204);
    assert.equal((await call(sim, "GET", "/api/user/device", { token })).status, 200);
    const limited = await call(sim, "GET", "/api/user/device", { token });
    assertError(limited, 429);
    assert.ok(Number(limited.headers["retry-after"]) >= 1);
    await call(sim, "POST", "/_sim/rate-limit", { raw: "false" });
    assert.equal((await call(sim, "GET", "/api/user/device", { token })).status, 200);
    assertError(await call(sim, "POST", "/_sim/rate-limit", { json: { capacity: -1 } }), 400);
  });

  it("unknown control routes are 404 and wrong methods 405", async () => {
    assertError(await call(sim, "GET", "/_sim/nothing"), 404);
    assertError(await call(sim, "PUT", "/_sim/counts"), 405);
  });
});

describe("simulator: start-up guards and seeds", () => {
  it("refuses a non-loopback host unless allowRemoteControl", async () => {
    await assert.rejects(startSimulator({ host: "0.0.0.0", port: 0 }), /refuses to listen on non-loopback host "0.0.0.0"/);
    await assert.rejects(startSimulator({ host: "192.168.1.10", port: 0 }), /allowRemoteControl/);
    assert.equal(isLoopbackHost("127.0.0.1"), true);
    assert.equal(isLoopbackHost("127.3.2.1"), true);
    assert.equal(isLoopbackHost("::1"), true);
    assert.equal(isLoopbackHost("[::1]"), true);
    assert.equal(isLoopbackHost("localhost"), true);
    assert.equal(isLoopbackHost("0.0.0.0"), false);
    assert.equal(isLoopbackHost("::"), false);
    assert.equal(isLoopbackHost("10.0.0.1"), false);
    assert.equal(isLoopbackHost("localhost.example.com"), false);
  });

  it("holds the listen host to the one loopback rule: an IPv4-mapped address, an octet over 255 or a FQDN localhost is refused", async () => {
    for (const host of ["::ffff:127.0.0.1", "[::ffff:127.0.0.1]", "127.0.0.256", "127.1", "localhost."]) {
      await assert.rejects(startSimulator({ host, port: 0 }), /refuses to listen on non-loopback host/, host);
    }
  });

  it("starts on other loopback forms (localhost, 127.0.0.2)", async () => {
    for (const host of ["localhost", "127.0.0.2"]) {
      const sim = await startSimulator({ host, port: 0 });
      try {
        assert.ok(sim.url.startsWith(`http://${host}:`), sim.url);
        const r = await call(sim, "POST", "/api/auth/login-by-phone", { json: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password } });
        assert.equal(r.status, 200);
      } finally {
        await sim.close();
      }
    }
  });

  it("validates seeds with clear messages", () => {
    const broken = (change: (s: Seed) => void): Seed => {
      const s = demoSeed();
      change(s);
      return s;
    };
    assert.throws(() => validateSeed(broken((s) => { s.doors[0]!.locationId = 999; })), /doors\[0\]\.locationId|unknown location 999/);
    assert.throws(() => validateSeed(broken((s) => { s.doors[1]!.id = 101; })), /duplicate id 101/);
    assert.throws(() => validateSeed(broken((s) => { s.accounts[0]!.phoneNumber = "555"; })), /phoneNumber/);
    assert.throws(() => validateSeed(broken((s) => { s.keys.push({ accountId: "demo", deviceId: 106, lockIds: [7] }); })), /door 106 has no lock 7/);
    assert.throws(() => validateSeed(broken((s) => { s.keys.push({ accountId: "ghost", deviceId: 106 }); })), /unknown account ghost/);
    assert.throws(() => validateSeed({ companies: [] }), /invalid seed/);
    assert.equal(validateSeed(demoSeed()).doors.length, 9);
  });

  it("runs a custom seed", async () => {
    const seed: Seed = {
      companies: [{ id: 5, name: "Acme" }],
      locations: [{ id: 50, companyId: 5, name: "Depot" }],
      doors: [{ id: 7, locationId: 50, name: "Gate" }],
      accounts: [{ id: "acme", companyId: 5, email: "ops@acme.test", password: "pw" }],
      keys: [{ accountId: "acme", deviceId: 7 }],
    };
    const sim = await startSimulator({ seed });
    try {
      const r = await call(sim, "POST", "/api/auth/login-by-email", { json: { email: "ops@acme.test", password: "pw" } });
      assert.equal(r.status, 200);
      const d = await call(sim, "GET", "/api/user/device", { token: r.json.AccessToken });
      assert.deepEqual(d.json.map((x: { id: number; name: string }) => [x.id, x.name]), [[7, "Gate"]]);
      assert.equal((await call(sim, "PUT", "/api/device/7/unlock/1", { token: r.json.AccessToken })).status, 200);
    } finally {
      await sim.close();
    }
    await assert.rejects(startSimulator({ seed: { ...seed, keys: [{ accountId: "acme", deviceId: 8 }] } }), /unknown door 8/);
  });
});
