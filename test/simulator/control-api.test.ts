/** The /_sim control API over HTTP. docs/simulator.md#control-api */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { assertError, call, login, refresh, withSim } from "../helpers/simulator.js";

describe("simulator control API: the /_sim routes inject faults, switch doors, end sessions, read the request log and counts and set the rate limit; unknown routes 404, wrong methods 405 (docs/simulator.md#control-api)", () => {
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
    const r = await call(sim, "POST", "/_sim/faults", {
      json: { kind: "503", endpoint: "unlockDevice", deviceId: 101, count: 2 },
    });
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
    assert.equal(
      (await call(sim, "GET", "/api/user/device", { token: pair.access })).status,
      200,
      "access token unaffected",
    );
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
    assert.deepEqual(
      all.json.map((e: { operation: string }) => e.operation),
      ["loginByPhone", "unlockDevice", "listUserDevices"],
    );
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
