/** Doors: what an account sees (device list, locations, one device) and what its keys open. docs/simulator.md#doors */
import { strict as assert } from "node:assert";
import { Device, DeviceList, LocationList } from "../../src/spec/schemas.js";
import { DEMO_DOORS, type RunningSimulator } from "../../src/simulator/index.js";
import { FakeClock, OTHER_ACCOUNT, assertError, call, login, withSim } from "../helpers/simulator.js";

describe("simulator doors: an account sees its company's doors and the doors it holds a key to; a key opens what it covers; an offline door answers 503 (docs/simulator.md#doors)", () => {
  let sim: RunningSimulator;
  let token: string;
  const clock = new FakeClock();

  beforeEach(async () => {
    sim = await withSim({ now: clock.now });
    token = (await login(sim)).access;
  });
  afterEach(async () => {
    await sim.close();
  });

  describe("GET /api/user/device (10)", () => {
    it("lists the account's own company's doors plus doors shared to it, as Device records with extra fields", async () => {
      const r = await call(sim, "GET", "/api/user/device", { token });
      assert.equal(r.status, 200);
      const list = DeviceList.parse(r.json);
      assert.deepEqual(
        list.map((d) => d.id),
        [101, 102, 103, 104, 105, 106, 107, 201],
      );
      for (const d of r.json) {
        for (const field of ["id", "name", "locationId", "locationName", "companyName", "doorType", "online"]) {
          assert.ok(field in d, `${field} in ${JSON.stringify(d)}`);
        }
        assert.ok(Array.isArray(d.locks) && d.locks.length >= 1, "extra field locks");
        assert.equal(typeof d.firmware, "string", "extra field firmware");
      }
      const shared = r.json.find((d: Device) => d.id === DEMO_DOORS.shared);
      assert.equal(shared.companyName, "Neighbour Offices Ltd");
      const offline = r.json.find((d: Device) => d.id === DEMO_DOORS.offline);
      assert.equal(offline.online, false);
      const twoLocks = r.json.find((d: Device) => d.id === DEMO_DOORS.twoLocks);
      assert.deepEqual(
        twoLocks.locks.map((l: { id: number }) => l.id),
        [1, 2],
      );
    });

    it("has two doors of the same name in different locations", async () => {
      const r = await call(sim, "GET", "/api/user/device", { token });
      const backDoors = r.json.filter((d: Device) => d.name === "Back Door");
      assert.equal(backDoors.length, 2);
      assert.notEqual(backDoors[0].locationName, backDoors[1].locationName);
    });

    it("another account sees only its own doors", async () => {
      const other = (await login(sim, "loginByPhone", OTHER_ACCOUNT)).access;
      const r = await call(sim, "GET", "/api/user/device", { token: other });
      assert.deepEqual(
        r.json.map((d: Device) => d.id),
        [201, 202],
      );
    });
  });

  describe("GET /api/user/location (9)", () => {
    it("lists the locations visible to the account as objects with id, name, companyName", async () => {
      const r = await call(sim, "GET", "/api/user/location", { token });
      assert.equal(r.status, 200);
      LocationList.parse(r.json);
      assert.deepEqual(
        r.json.map((l: { id: number }) => l.id),
        [10, 11, 20],
      );
      for (const l of r.json) {
        assert.equal(typeof l.name, "string");
        assert.equal(typeof l.companyName, "string");
      }
      const other = (await login(sim, "loginByPhone", OTHER_ACCOUNT)).access;
      const o = await call(sim, "GET", "/api/user/location", { token: other });
      assert.deepEqual(
        o.json.map((l: { id: number }) => l.id),
        [20],
      );
    });
  });

  describe("GET /api/device/{deviceId} (6)", () => {
    it("200 with the Device for a door the account holds a key to (own and shared)", async () => {
      for (const id of [DEMO_DOORS.frontDoor, DEMO_DOORS.shared, DEMO_DOORS.partialKey]) {
        const r = await call(sim, "GET", `/api/device/${id}`, { token });
        assert.equal(r.status, 200);
        assert.equal(Device.parse(r.json).id, id);
        assert.ok(Array.isArray(r.json.locks));
      }
    });
    it("403 for a visible door without a key", async () => {
      assertError(await call(sim, "GET", `/api/device/${DEMO_DOORS.noKey}`, { token }), 403);
    });
    it("404 for an unknown id and for another company's door not shared to the account", async () => {
      assertError(await call(sim, "GET", "/api/device/999999", { token }), 404);
      assertError(await call(sim, "GET", `/api/device/${DEMO_DOORS.notVisible}`, { token }), 404);
    });
    it("400 for a deviceId that is not an int32", async () => {
      assertError(await call(sim, "GET", "/api/device/abc", { token }), 400);
      assertError(await call(sim, "GET", "/api/device/2147483648", { token }), 400);
    });
    it("reflects the online flag set through the control surface", async () => {
      sim.control.setOnline(DEMO_DOORS.frontDoor, false);
      const r = await call(sim, "GET", `/api/device/${DEMO_DOORS.frontDoor}`, { token });
      assert.equal(r.json.online, false);
    });
  });

  describe("PUT /api/device/{deviceId}/unlock (7)", () => {
    it("200 without body; the device records the unlock (time, accountId, lockId null)", async () => {
      const r = await call(sim, "PUT", `/api/device/${DEMO_DOORS.frontDoor}/unlock`, { token });
      assert.equal(r.status, 200);
      assert.equal(r.text, "");
      const state = sim.control.device(DEMO_DOORS.frontDoor);
      assert.equal(state.unlocks.length, 1);
      assert.deepEqual(state.lastUnlock, { at: clock.t, accountId: "demo", lockId: null });
      assert.equal(sim.control.counts().unlocks, 1);
    });
    it("each call is one unlock (two calls, two records)", async () => {
      await call(sim, "PUT", `/api/device/${DEMO_DOORS.frontDoor}/unlock`, { token });
      clock.advance(5000);
      await call(sim, "PUT", `/api/device/${DEMO_DOORS.frontDoor}/unlock`, { token });
      const state = sim.control.device(DEMO_DOORS.frontDoor);
      assert.equal(state.unlocks.length, 2);
      assert.equal(state.lastUnlock?.at, clock.t);
    });
    it("works on a door shared from another company", async () => {
      assert.equal((await call(sim, "PUT", `/api/device/${DEMO_DOORS.shared}/unlock`, { token })).status, 200);
      assert.equal(sim.control.device(DEMO_DOORS.shared).lastUnlock?.accountId, "demo");
    });
    it("works on a multi-lock door when the key covers all locks", async () => {
      assert.equal((await call(sim, "PUT", `/api/device/${DEMO_DOORS.twoLocks}/unlock`, { token })).status, 200);
    });
    it("404 for an unknown device (and a door the account cannot see); nothing recorded", async () => {
      assertError(await call(sim, "PUT", "/api/device/999999/unlock", { token }), 404);
      assertError(await call(sim, "PUT", `/api/device/${DEMO_DOORS.notVisible}/unlock`, { token }), 404);
      assert.equal(sim.control.device(DEMO_DOORS.notVisible).unlocks.length, 0);
      assert.equal(sim.control.counts().unlocks, 0);
    });
    it("403 without a key, and with a key limited to some locks; nothing recorded", async () => {
      assertError(await call(sim, "PUT", `/api/device/${DEMO_DOORS.noKey}/unlock`, { token }), 403);
      assertError(await call(sim, "PUT", `/api/device/${DEMO_DOORS.partialKey}/unlock`, { token }), 403);
      assert.equal(sim.control.device(DEMO_DOORS.noKey).unlocks.length, 0);
      assert.equal(sim.control.device(DEMO_DOORS.partialKey).unlocks.length, 0);
    });
    it("503 for an offline device, nothing recorded; 200 once it is back online", async () => {
      assertError(await call(sim, "PUT", `/api/device/${DEMO_DOORS.offline}/unlock`, { token }), 503);
      assert.equal(sim.control.device(DEMO_DOORS.offline).unlocks.length, 0);
      sim.control.setOnline(DEMO_DOORS.offline, true);
      assert.equal((await call(sim, "PUT", `/api/device/${DEMO_DOORS.offline}/unlock`, { token })).status, 200);
      assert.equal(sim.control.device(DEMO_DOORS.offline).unlocks.length, 1);
    });
    it("GET is not the unlock method: 405", async () => {
      const r = await call(sim, "GET", `/api/device/${DEMO_DOORS.frontDoor}/unlock`, { token });
      assertError(r, 405);
      assert.equal(sim.control.device(DEMO_DOORS.frontDoor).unlocks.length, 0);
    });
  });

  describe("PUT /api/device/{deviceId}/unlock/{lockId} (8)", () => {
    it("200 and the unlock is recorded with the lockId", async () => {
      const r = await call(sim, "PUT", `/api/device/${DEMO_DOORS.twoLocks}/unlock/2`, { token });
      assert.equal(r.status, 200);
      assert.equal(r.text, "");
      assert.deepEqual(sim.control.device(DEMO_DOORS.twoLocks).lastUnlock, {
        at: clock.t,
        accountId: "demo",
        lockId: 2,
      });
    });
    it("a key with lockIds opens exactly those locks", async () => {
      assert.equal((await call(sim, "PUT", `/api/device/${DEMO_DOORS.partialKey}/unlock/2`, { token })).status, 200);
      assertError(await call(sim, "PUT", `/api/device/${DEMO_DOORS.partialKey}/unlock/1`, { token }), 403);
      const unlocks = sim.control.device(DEMO_DOORS.partialKey).unlocks;
      assert.deepEqual(
        unlocks.map((u) => u.lockId),
        [2],
      );
    });
    it("404 for a lock that is not on the device and for an unknown device", async () => {
      assertError(await call(sim, "PUT", `/api/device/${DEMO_DOORS.twoLocks}/unlock/99`, { token }), 404);
      assertError(await call(sim, "PUT", "/api/device/999999/unlock/1", { token }), 404);
      assert.equal(sim.control.counts().unlocks, 0);
    });
    it("403 for a lock of a door without a key", async () => {
      assertError(await call(sim, "PUT", `/api/device/${DEMO_DOORS.noKey}/unlock/1`, { token }), 403);
    });
    it("503 when the device is offline", async () => {
      sim.control.setOnline(DEMO_DOORS.twoLocks, false);
      assertError(await call(sim, "PUT", `/api/device/${DEMO_DOORS.twoLocks}/unlock/1`, { token }), 503);
      assert.equal(sim.control.device(DEMO_DOORS.twoLocks).unlocks.length, 0);
    });
    it("400 for a lockId that is not an int32", async () => {
      assertError(await call(sim, "PUT", `/api/device/${DEMO_DOORS.twoLocks}/unlock/first`, { token }), 400);
    });
  });
});
