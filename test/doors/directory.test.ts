/**
 * The account's device list and door resolution (docs/doors.md): the list is fetched once at a
 * time, kept 24 hours, kept as it was when a fetch fails and fetched again after a 404
 * (docs/doors.md#the-device-list); a door name resolves to one door or fails naming the
 * candidates (docs/doors.md#message-overrides); a picked door resolves by the rules in
 * docs/doors.md#resolution-rules.
 */
import { strict as assert } from "node:assert";
import type { Device } from "../../src/spec/schemas.js";
import { DeviceDirectory, type Resolution } from "../../src/doors/directory.js";
import { normalizeDoorKey } from "../../src/doors/names.js";

const HOUR = 60 * 60 * 1000;

const V1: Device[] = [
  { id: 1, name: "Front Door", locationId: 10, locationName: "Main House", online: true },
  { id: 2, name: "Back Door", locationId: 10, locationName: "Main House" },
  { id: 3, name: "Back Door", locationId: 20, locationName: "Garage" },
  { id: 4, name: "Gate", locationId: null, locationName: null },
  { id: 99, name: null, locationName: "Garage" },
];

/** A fetch function that counts its calls and returns whatever `source` currently holds. */
function fakeFetch(initial: Device[]) {
  const state = {
    calls: 0,
    source: initial,
    fail: null as Error | null,
    /** When set, every fetch waits for release() before answering. */
    gate: null as Promise<void> | null,
  };
  let release: () => void = () => undefined;
  const hold = () => {
    state.gate = new Promise<void>((r) => (release = r));
  };
  const fetch = async (): Promise<Device[]> => {
    state.calls += 1;
    if (state.gate) await state.gate;
    if (state.fail) throw state.fail;
    return state.source.map((d) => ({ ...d }));
  };
  return { state, fetch, hold, release: () => release() };
}

function ok(r: Resolution): Device {
  if (!r.ok) assert.fail(`expected a device, got ${r.reason}: ${r.message}`);
  return r.device;
}

function notOk(r: Resolution) {
  if (r.ok) assert.fail(`expected a failure, got device #${r.device.id}`);
  return r;
}

describe("door directory: the device list and how a door is found in it (docs/doors.md)", function () {
  describe("the device list is fetched one at a time, kept 24 hours, and kept when a fetch fails (docs/doors.md#the-device-list)", function () {
    it("fetches once and serves the list until the ttl (24 h by default) runs out", async function () {
      let t = 1_000_000;
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch, { now: () => t });
      assert.equal(dir.cached(), null);
      const a = await dir.devices();
      assert.equal(f.state.calls, 1);
      assert.equal(a.length, 5);
      t += 24 * HOUR - 1;
      await dir.devices();
      await dir.resolveName("Front Door");
      assert.equal(f.state.calls, 1, "still fresh one ms before 24 h");
      t += 1;
      await dir.devices();
      assert.equal(f.state.calls, 2, "re-fetched at 24 h");
      assert.equal(dir.cached()?.fetchedAt, t);
    });

    it("honours a custom ttl and force", async function () {
      let t = 0;
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch, { ttlMs: 1000, now: () => t });
      await dir.devices();
      await dir.devices(true);
      assert.equal(f.state.calls, 2, "force fetches even when fresh");
      await dir.resolveName("Gate", true);
      assert.equal(f.state.calls, 3, "resolveName passes force on");
      t = 999;
      await dir.devices();
      assert.equal(f.state.calls, 3);
      t = 1000;
      await dir.devices();
      assert.equal(f.state.calls, 4);
    });

    it("single flight: 20 concurrent callers (forced or not) share one fetch", async function () {
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch);
      f.hold();
      const waiting = Array.from({ length: 20 }, (_, i) => dir.devices(i % 2 === 0));
      const names = Array.from({ length: 5 }, () => dir.resolveName("Front Door"));
      await new Promise((r) => setImmediate(r));
      assert.equal(f.state.calls, 1);
      f.release();
      const lists = await Promise.all(waiting);
      assert.equal(f.state.calls, 1);
      assert.ok(
        lists.every((l) => l === lists[0]),
        "everyone gets the same list",
      );
      for (const r of await Promise.all(names)) assert.equal(ok(r).id, 1);
    });

    it("a failed fetch rejects all waiters and keeps the previous list", async function () {
      let t = 0;
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch, { now: () => t, monotonic: () => t });
      const first = await dir.devices();
      const boom = Object.assign(new Error("GET /api/user/device failed: 503"), { outcome: "offline" });
      f.state.fail = boom;
      const results = await Promise.allSettled(Array.from({ length: 5 }, () => dir.devices(true)));
      assert.equal(f.state.calls, 2, "one fetch for the five waiters");
      for (const r of results) {
        assert.equal(r.status, "rejected");
        assert.equal(r.reason, boom, "the fetch's own error, outcome intact");
      }
      assert.equal(dir.cached()?.devices, first, "previous list kept");
      assert.equal(dir.cached()?.fetchedAt, 0);
      // Still fresh: served from the kept list without another fetch.
      assert.equal(ok(await dir.resolveName("front door")).id, 1);
      assert.equal(f.state.calls, 2);
      // Stale: tries again (and fails again), the old list stays in cached().
      t = 24 * HOUR;
      await assert.rejects(dir.devices(), /503/);
      assert.equal(f.state.calls, 3);
      assert.equal(dir.cached()?.devices, first);
      // Recovers once the service answers: that failure opened a back-off window, whose one
      // message try this is.
      f.state.fail = null;
      f.state.source = [{ id: 5, name: "Shed" }];
      assert.equal((await dir.devices()).length, 1);
      assert.equal(f.state.calls, 4);
      // A failure again, then two more calls within its window: one message try, no more.
      f.state.fail = boom;
      t += 24 * HOUR;
      await assert.rejects(dir.devices(), /503/);
      await assert.rejects(dir.devices(), /503/);
      // Typed: the assert.equal(calls, n) above narrowed the count to n, and 2, 3 and 4 to never.
      const before: number = f.state.calls;
      assert.equal((await dir.devices()).length, 1, "the expired list serves within the window");
      assert.equal(f.state.calls, before, "no fetch per call within a back-off window");
      t += 15 * 60_000; // the longest back-off (docs/doors.md#the-device-list: 15 minutes)
      await assert.rejects(dir.devices(), /503/);
      assert.equal(f.state.calls, before + 1, "the window has passed: one try");
    });

    it("after a failed fetch the next waits 30 s, doubling up to 15 min, then every 15 min: 30, 60, 120, 240, 480, 900, 900, 900 s", async function () {
      let t = 0;
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch, { now: () => t, monotonic: () => t });
      await dir.devices();
      t = 24 * HOUR; // expired: the unlock path serves it and fetches in the background
      f.state.fail = Object.assign(new Error("GET /api/user/device failed: 503"), { outcome: "offline" });
      const settled = async () => {
        await dir.inFlight()?.catch(() => undefined);
      };
      assert.equal(ok(await dir.resolveName("Front Door")).id, 1);
      assert.equal(f.state.calls, 2, "the background fetch");
      await settled();
      // docs/doors.md#the-device-list: "the next one waits 30 s, doubling up to 15 minutes, then every 15 minutes".
      for (const [k, seconds] of [30, 60, 120, 240, 480, 900, 900, 900].entries()) {
        assert.equal(dir.retryInMs(), seconds * 1000, `the wait after failure ${k + 1}`);
        assert.equal(dir.nextRetryAt(), t + seconds * 1000);
        const calls: number = f.state.calls;
        t += seconds * 1000 - 1;
        assert.equal(ok(await dir.resolveName("Front Door")).id, 1, "the list in hand serves meanwhile");
        assert.equal(f.state.calls, calls, `no fetch 1 ms before ${seconds} s`);
        t += 1;
        assert.equal(ok(await dir.resolveName("Front Door")).id, 1);
        assert.equal(f.state.calls, calls + 1, `one fetch at ${seconds} s`);
        await settled();
      }
      // A fetch that succeeds ends the back-off.
      f.state.fail = null;
      t += 900_000;
      await dir.resolveName("Front Door");
      await settled();
      assert.equal(dir.retryInMs(), null);
    });

    it("a first fetch that fails leaves nothing cached, and a fetch throwing synchronously is handled", async function () {
      let calls = 0;
      const dir = new DeviceDirectory(() => {
        calls += 1;
        if (calls === 1) throw new Error("sync failure");
        return Promise.resolve(V1);
      });
      await assert.rejects(dir.devices(), /sync failure/);
      assert.equal(dir.cached(), null);
      assert.equal((await dir.devices()).length, 5, "the failed flight did not stay stuck");
      assert.equal(calls, 2);
    });

    it("rejects a fetch result that is not an array", async function () {
      const dir = new DeviceDirectory(() => Promise.resolve({ devices: [] } as unknown as Device[]));
      await assert.rejects(dir.devices(), /did not return an array/);
    });
  });

  describe("a door name or Location / Name resolves to one door, or fails naming the candidates (docs/doors.md#message-overrides)", function () {
    it("matches name or Location / Name, trimmed, case-insensitive, tolerant of spaces", async function () {
      const dir = new DeviceDirectory(fakeFetch(V1).fetch);
      const cases: Array<[string, number]> = [
        ["Front Door", 1],
        ["  front DOOR  ", 1],
        ["Front    Door", 1],
        ["Main House / Front Door", 1],
        ["main house/back door", 2],
        ["Main House  /   Back Door", 2],
        ["GARAGE /Back Door", 3],
        ["gate", 4],
      ];
      for (const [q, id] of cases) assert.equal(ok(await dir.resolveName(q)).id, id, q);
    });

    it("an ambiguous name fails with the Location / Name labels of the matches", async function () {
      const dir = new DeviceDirectory(fakeFetch(V1).fetch);
      const r = notOk(await dir.resolveName("Back Door"));
      assert.equal(r.reason, "ambiguous");
      assert.deepEqual(r.candidates, ["Main House / Back Door", "Garage / Back Door"]);
      assert.equal(
        r.message,
        'door "Back Door" is ambiguous: "Main House / Back Door", "Garage / Back Door"; use "Location / Door"',
      );
    });

    it("doors with the same name in the same location can only be told apart by id", async function () {
      const dir = new DeviceDirectory(
        fakeFetch([
          { id: 7, name: "Lab", locationName: "HQ" },
          { id: 8, name: "Lab", locationName: "HQ" },
        ]).fetch,
      );
      const r = notOk(await dir.resolveName("HQ / Lab"));
      assert.equal(r.reason, "ambiguous");
      assert.deepEqual(r.candidates, ["HQ / Lab (#7)", "HQ / Lab (#8)"]);
      assert.match(r.message, /use msg\.deviceId$/);
    });

    it("an unknown name fails listing the known doors, closest first", async function () {
      const dir = new DeviceDirectory(fakeFetch(V1).fetch);
      const r = notOk(await dir.resolveName("Frnt"));
      assert.equal(r.reason, "unknown");
      assert.equal(r.candidates[0], "Front Door");
      assert.deepEqual([...r.candidates].sort(), [
        "Front Door",
        "Garage / Back Door",
        "Gate",
        "Main House / Back Door",
      ]);
      assert.ok(r.message.startsWith('no door named "Frnt" — known doors: "Front Door", '), r.message);
      assert.ok(!r.candidates.includes("#99"), "unnamed devices are not name candidates");
    });

    it("lists at most 10 candidates in the message, then 'and N more'", async function () {
      const many: Device[] = Array.from({ length: 15 }, (_, i) => ({
        id: i + 1,
        name: `Door ${String(i + 1).padStart(2, "0")}`,
      }));
      const dir = new DeviceDirectory(fakeFetch(many).fetch);
      const r = notOk(await dir.resolveName("Window"));
      assert.equal(r.candidates.length, 15);
      assert.ok(r.message.endsWith(" and 5 more"), r.message);
      assert.equal((r.message.match(/"Door \d\d"/g) ?? []).length, 10);
    });

    it("invalid input is refused with a clear message and without fetching", async function () {
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch);
      const bad: Array<[unknown, RegExp]> = [
        ["", /empty/],
        ["   ", /empty/],
        ["x".repeat(201), /longer than 200/],
        ["Front\nDoor", /control characters/],
        ["Front\u0000", /control characters/],
        ["Front\u007f", /control characters/],
        [42, /must be a string/],
        [null, /must be a string, got null/],
      ];
      for (const [q, re] of bad) {
        const r = notOk(await dir.resolveName(q as string));
        assert.equal(r.reason, "invalid");
        assert.match(r.message, re);
        assert.deepEqual(r.candidates, []);
      }
      assert.equal(f.state.calls, 0, "nothing fetched for invalid input");
      assert.equal(ok(await dir.resolveName("x".repeat(0) + "Gate")).id, 4);
      assert.equal(f.state.calls, 1);
    });

    it("finds doors in a 10,000-device list through the index", async function () {
      const big: Device[] = [];
      for (let i = 0; i < 10_000; i++) {
        big.push({ id: i + 1, name: `Door ${i}`, locationName: `Site ${i % 100}` });
      }
      big.push({ id: 20_001, name: "Door 5", locationName: "Annex" }); // makes "Door 5" ambiguous
      const f = fakeFetch(big);
      const dir = new DeviceDirectory(f.fetch);
      assert.equal(ok(await dir.resolveName("door 9999")).id, 10_000);
      assert.equal(ok(await dir.resolveName("Annex / Door 5")).id, 20_001);
      const amb = notOk(await dir.resolveName("Door 5"));
      assert.deepEqual(amb.candidates, ["Site 5 / Door 5", "Annex / Door 5"]);
      const started = process.hrtime.bigint();
      for (let i = 0; i < 10_000; i++) {
        assert.equal(ok(await dir.resolveName(`Site ${i % 100} / Door ${i}`)).id, i + 1);
      }
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      assert.ok(ms < 3000, `10,000 lookups in ${ms.toFixed(0)} ms: not an index lookup`);
      assert.equal(f.state.calls, 1);
      const unknown = notOk(await dir.resolveName("Door 99999x"));
      assert.equal(unknown.reason, "unknown");
      assert.ok(unknown.candidates.length > 0 && unknown.candidates.length <= 10, String(unknown.candidates.length));
      assert.match(unknown.message, /closest names: .* \(of 10001 doors\)$/);
    });
  });

  describe("a door is labelled by its name, Location / Name when the name repeats, #id without a name (docs/doors.md#resolution-rules)", function () {
    it("Location / Name when the name repeats, else Name, else #id", async function () {
      const dir = new DeviceDirectory(fakeFetch(V1).fetch);
      await dir.devices();
      assert.equal(dir.label(V1[0]), "Front Door");
      assert.equal(dir.label(V1[1]), "Main House / Back Door");
      assert.equal(dir.label(V1[2]), "Garage / Back Door");
      assert.equal(dir.label(V1[3]), "Gate");
      assert.equal(dir.label(V1[4]), "#99");
      assert.equal(dir.label({ id: 5, name: "   " }), "#5");
    });
  });

  describe("a picked door resolves by id and name, then name and location, then id; a stored location is never dropped (docs/doors.md#resolution-rules)", function () {
    it("keeps the stored id when it still carries the same name", async function () {
      const dir = new DeviceDirectory(fakeFetch(V1).fetch);
      const d = ok(await dir.resolveIdentity({ id: 2, name: "back door", location: "Main House" }));
      assert.equal(d.id, 2);
    });

    it("re-maps by identity when the door got a new id", async function () {
      const v2: Device[] = [
        { id: 1, name: "Office", locationName: "Main House" }, // id 1 reused for another door
        { id: 11, name: "Front Door", locationName: "Main House" },
        { id: 2, name: "Back Door", locationName: "Main House" },
        { id: 3, name: "Back Door", locationName: "Garage" },
      ];
      const dir = new DeviceDirectory(fakeFetch(v2).fetch);
      assert.equal(ok(await dir.resolveIdentity({ id: 1, name: "Front Door", location: "Main House" })).id, 11);
      // Name repeated: the location picks the one.
      assert.equal(ok(await dir.resolveIdentity({ id: 42, name: "Back Door", location: "Garage" })).id, 3);
      // docs/doors.md#resolution-rules: a stored location is never dropped. A door of the same name
      // at another location is named as a candidate, never resolved in its place.
      const moved = notOk(await dir.resolveIdentity({ id: 7, name: "Front Door", location: "Old House" }));
      assert.equal(moved.reason, "unknown");
      assert.deepEqual(moved.candidates, ["Main House / Front Door"]);
    });

    it("never resolves a picked door to a same-named door at another location", async function () {
      // The seed's shape: "Main Street 1 / Back Door" #102 and "Harbour Warehouse / Back Door" #103.
      const seed: Device[] = [
        { id: 101, name: "Front Door", locationName: "Main Street 1" },
        { id: 102, name: "Back Door", locationName: "Main Street 1" },
        { id: 103, name: "Back Door", locationName: "Harbour Warehouse" },
      ];
      const picked = { id: 102, name: "Back Door", location: "Main Street 1" };
      const renamed = [seed[0], { ...seed[1], name: "Yard Door" }, seed[2]];
      assert.equal(
        ok(await new DeviceDirectory(fakeFetch(renamed).fetch).resolveIdentity(picked)).id,
        102,
        "rule 3: renamed, same id",
      );
      const removed = [seed[0], seed[2]];
      const gone = notOk(await new DeviceDirectory(fakeFetch(removed).fetch).resolveIdentity(picked));
      assert.equal(gone.reason, "unknown", "rule 4: removed from the list");
      assert.deepEqual(gone.candidates, ["Harbour Warehouse / Back Door"]);
      const renumbered = [seed[0], { ...seed[1], id: 202 }, seed[2]];
      assert.equal(
        ok(await new DeviceDirectory(fakeFetch(renumbered).fetch).resolveIdentity(picked)).id,
        202,
        "rule 2: new id, same name and location",
      );
      const movedAway = [seed[0], { ...seed[1], id: 202, locationName: "Harbour Warehouse" }, seed[2]];
      const amb = await new DeviceDirectory(fakeFetch(movedAway).fetch).resolveIdentity(picked);
      assert.equal(amb.ok, false, "moved to another location under a new id: not opened");
    });

    // The directory keeps the door found for an identity object per list (a door node resolves
    // the same stored identity message after message). docs/doors.md#resolution-rules: the stored
    // identity decides against the current list; a kept answer must never outlive either.
    it("one identity object, resolved again and again: the answer follows a new list and the identity's own fields, never a kept door", async function () {
      const seed: Device[] = [
        { id: 101, name: "Front Door", locationName: "Main Street 1" },
        { id: 102, name: "Back Door", locationName: "Main Street 1" },
        { id: 103, name: "Back Door", locationName: "Harbour Warehouse" },
      ];
      const f = fakeFetch(seed);
      const dir = new DeviceDirectory(f.fetch);
      const picked = { id: 102, name: "Back Door", location: "Main Street 1" };
      assert.equal(ok(await dir.resolveIdentity(picked)).id, 102);
      assert.equal(ok(await dir.resolveIdentity(picked)).id, 102, "same list, same identity");
      // Renumbered in a new list: rule 2 finds the new id.
      f.state.source = [seed[0], { ...seed[1], id: 202 }, seed[2]];
      assert.equal(ok(await dir.resolveIdentity(picked, true)).id, 202, "new list: resolved again");
      assert.equal(ok(await dir.resolveIdentity(picked)).id, 202);
      // The same object changed in place (a flow or the editor editing what it holds).
      picked.location = "Harbour Warehouse";
      picked.id = 103;
      assert.equal(ok(await dir.resolveIdentity(picked)).id, 103, "changed location: the other door, not the one kept");
      picked.name = "Cellar";
      picked.id = 999;
      assert.equal(notOk(await dir.resolveIdentity(picked)).reason, "unknown", "changed name: not in the list");
      picked.name = null as unknown as string;
      picked.id = 1.5;
      assert.equal(notOk(await dir.resolveIdentity(picked)).reason, "invalid", "an invalid identity is checked again");
      // Removed from a new list: not found any more.
      picked.id = 202;
      picked.name = "Back Door";
      picked.location = "Main Street 1";
      assert.equal(ok(await dir.resolveIdentity(picked)).id, 202);
      f.state.source = [seed[0], seed[2]];
      const gone = notOk(await dir.resolveIdentity(picked, true));
      assert.equal(gone.reason, "unknown");
    });

    it('a door\'s label follows the list it is shown with ("Location / Name" once its name repeats)', async function () {
      const f = fakeFetch([{ id: 1, name: "Gate", locationName: "Yard" }]);
      const dir = new DeviceDirectory(f.fetch);
      const gate = ok(await dir.resolveName("Gate"));
      assert.equal(dir.label(gate), "Gate");
      assert.equal(dir.label(gate), "Gate");
      f.state.source = [
        { id: 1, name: "Gate", locationName: "Yard" },
        { id: 2, name: "Gate", locationName: "Garden" },
      ];
      await dir.devices(true);
      assert.equal(dir.label(gate), "Yard / Gate", "the same device object, labelled against the new list");
    });

    it("falls back to the id when the door was renamed, and to unknown when neither is found", async function () {
      const dir = new DeviceDirectory(fakeFetch(V1).fetch);
      assert.equal(ok(await dir.resolveIdentity({ id: 4, name: "Yard Gate", location: null })).id, 4);
      assert.equal(
        ok(await dir.resolveIdentity({ id: 99, name: null, location: null })).id,
        99,
        "unnamed device by id",
      );
      const r = notOk(await dir.resolveIdentity({ id: 500, name: "Cellar", location: "Main House" }));
      assert.equal(r.reason, "unknown");
      assert.ok(
        r.message.startsWith('door "Main House / Cellar" #500 is not in the account\'s device list — known doors: '),
        r.message,
      );
      assert.ok(r.candidates.length > 0);
    });

    it("an ambiguous stored name without a usable id is reported as ambiguous", async function () {
      const dir = new DeviceDirectory(fakeFetch(V1).fetch);
      const r = notOk(await dir.resolveIdentity({ id: 500, name: "Back Door", location: null }));
      assert.equal(r.reason, "ambiguous");
      assert.deepEqual(r.candidates, ["Main House / Back Door", "Garage / Back Door"]);
    });

    it("refuses an invalid identity without fetching", async function () {
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch);
      for (const id of [1.5, Number.NaN, 2 ** 31]) {
        assert.equal(notOk(await dir.resolveIdentity({ id, name: null, location: null })).reason, "invalid");
      }
      assert.equal(notOk(await dir.resolveIdentity({ id: null, name: null, location: null })).reason, "invalid");
      assert.equal(notOk(await dir.resolveIdentity({ id: 1, name: "a\tb", location: null })).reason, "invalid");
      assert.equal(notOk(await dir.refreshAfterNotFound({ id: null, name: "", location: null })).reason, "invalid");
      assert.equal(f.state.calls, 0);
    });
  });

  describe("a 404 for a listed door fetches the list again once (docs/doors.md#the-device-list)", function () {
    it("re-fetches once for 20 simultaneous 404 reports and returns the door's new id", async function () {
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch);
      await dir.devices();
      assert.equal(f.state.calls, 1);
      f.state.source = [
        { id: 21, name: "Front Door", locationName: "Main House" },
        { id: 2, name: "Back Door", locationName: "Main House" },
      ];
      f.hold();
      const identity = { id: 1, name: "Front Door", location: "Main House" };
      const reports = Array.from({ length: 20 }, () => dir.refreshAfterNotFound(identity));
      await new Promise((r) => setImmediate(r));
      f.release();
      const results = await Promise.all(reports);
      assert.equal(f.state.calls, 2, "one re-fetch for twenty reports");
      for (const r of results) assert.equal(ok(r).id, 21);
      // The cache now holds the new mapping: a plain lookup finds the new id without fetching.
      assert.equal(ok(await dir.resolveIdentity(identity)).id, 21);
      // A late 404 for the old id: the id is no longer in the list, so nothing new to learn.
      assert.equal(ok(await dir.refreshAfterNotFound(identity)).id, 21);
      assert.equal(f.state.calls, 2);
    });

    it("a removed door resolves to unknown after the re-fetch", async function () {
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch);
      await dir.devices();
      f.state.source = V1.filter((d) => d.id !== 4);
      const r = notOk(await dir.refreshAfterNotFound({ id: 4, name: "Gate", location: null }));
      assert.equal(r.reason, "unknown");
      assert.equal(f.state.calls, 2);
    });

    it("re-fetches again for a later 404 on an id the list still shows, unless within the min age", async function () {
      let t = 0;
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch, { now: () => t, notFoundRefreshMinAgeMs: 10_000 });
      await dir.devices();
      const lock404 = { id: 2, name: "Back Door", location: "Main House" };
      t = 5_000;
      assert.equal(ok(await dir.refreshAfterNotFound(lock404)).id, 2);
      assert.equal(f.state.calls, 1, "list fetched 5 s ago is reused");
      t = 10_000;
      assert.equal(ok(await dir.refreshAfterNotFound(lock404)).id, 2);
      assert.equal(f.state.calls, 2);
    });

    it("propagates a failed re-fetch and keeps the old list", async function () {
      const f = fakeFetch(V1);
      const dir = new DeviceDirectory(f.fetch);
      await dir.devices();
      f.state.fail = new Error("network down");
      await assert.rejects(dir.refreshAfterNotFound({ id: 1, name: "Front Door", location: null }), /network down/);
      assert.equal(dir.cached()?.devices.length, 5);
    });
  });

  // docs/doors.md#message-overrides: folded in time linear in its length. The quadratic fold took 8.4 s on 435c9b9.
  it("a name with 100,000 spaces in it (from the service, or msg.door from a flow) is folded in linear time: no event-loop stall", () => {
    const long = `Boiler${" ".repeat(100_000)}Room`;
    const started = performance.now();
    const key = normalizeDoorKey(long);
    const slashes = normalizeDoorKey(`a${" / ".repeat(30_000)}b`);
    const ms = performance.now() - started;
    assert.equal(key, "boiler room");
    assert.ok(slashes.startsWith("a / / "), slashes.slice(0, 20));
    // Linear work is about a millisecond here; the quadratic fold took 8,400 ms. The bound leaves
    // two orders of magnitude for a loaded machine.
    assert.ok(ms < 1000, `${ms.toFixed(0)} ms`);
  });

  it("the linear fold keys short names as the old one did: spaces, tabs, NBSP, slashes, combining accents (also checked against the old fold on 200,000 random strings: no difference)", () => {
    const cases: [string, string][] = [
      ["  Front   Door ", "front door"],
      ["Main Street 1/Front Door", "main street 1 / front door"],
      ["Main Street 1  /  Front\tDoor", "main street 1 / front door"],
      ["a / / b", "a / / b"],
      [" / a", " / a"],
      ["Cafe\u0301\u00a0Door", "caf\u00e9 door"],
    ];
    for (const [input, want] of cases) assert.equal(normalizeDoorKey(input), want, JSON.stringify(input));
  });
});

describe("device list: nothing of ours goes unhandled (docs/performance.md#reliability-checks)", () => {
  it("inFlight() asked only whether a fetch runs, its promise dropped, leaves no unhandled rejection when that fetch fails", async () => {
    const seen: unknown[] = [];
    const onUnhandled = (reason: unknown) => seen.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const dir = new DeviceDirectory(async () => {
        await new Promise((r) => setTimeout(r, 5));
        throw Object.assign(new Error("refresh rate-limited"), { rateLimited: true });
      });
      const fetching = dir.fetchNow().catch(() => "failed");
      assert.notEqual(dir.inFlight(), null, "a fetch runs"); // the caller drops the promise
      assert.equal(await fetching, "failed");
      await new Promise((r) => setTimeout(r, 20)); // past the turn in which Node reports unhandled rejections
      assert.deepEqual(seen, []);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});

describe("a door stored without a location matches, by name, only a door of that name without a location (docs/doors.md#resolution-rules)", function () {
  it("the only door of the stored name has a location: not opened in its place (named as a candidate); the same with the stored id gone", async function () {
    const list: Device[] = [
      { id: 1, name: "Front Door", locationName: "Main House" },
      { id: 3, name: "Gate", locationId: 20, locationName: "Garage" },
    ];
    const dir = new DeviceDirectory(fakeFetch(list).fetch);
    // Rule 2 looks for a door named "Gate" without a location: there is none, and "Garage / Gate" is not it.
    const r = notOk(await dir.resolveIdentity({ id: 4, name: "Gate", location: null }));
    assert.deepEqual(r.candidates, ["Gate"], r.message);
    const byName = notOk(await dir.resolveIdentity({ id: null, name: "gate", location: null }));
    assert.deepEqual(byName.candidates, ["Gate"], byName.message);
  });

  it("one door of the stored name without a location and one with: the one without is the door (rule 2), not an ambiguity", async function () {
    const list: Device[] = [
      { id: 3, name: "Gate", locationId: 20, locationName: "Garage" },
      { id: 14, name: "Gate", locationId: null, locationName: null }, // the stored door, under a new id
    ];
    const dir = new DeviceDirectory(fakeFetch(list).fetch);
    assert.equal(ok(await dir.resolveIdentity({ id: 4, name: "Gate", location: null })).id, 14);
    assert.equal(ok(await dir.resolveIdentity({ id: null, name: "gate", location: null })).id, 14);
  });
});

describe("an unknown door name lists every door of an account with at most 25, else the 10 closest names (docs/doors.md#message-overrides)", function () {
  const others = [
    "Alpha Gate",
    "Bravo Hall",
    "Charlie Yard",
    "Delta Dock",
    "Echo Lift",
    "Foxtrot Roof",
    "Golf Shed",
    "Hotel Lobby",
    "India Vault",
    "Juliet Porch",
    "Kilo Annex",
    "Lima Cellar",
    "Mike Attic",
    "November Wing",
    "Oscar Stair",
  ];
  const doors = (storeRooms: number, otherCount: number): Device[] => [
    ...Array.from({ length: storeRooms }, (_, i) => ({ id: 1 + i, name: `Store Room ${i + 1}` })),
    ...others.slice(0, otherCount).map((name, i) => ({ id: 100 + i, name })),
  ];

  it("25 named doors: an unknown name lists all 25 as candidates (the text names 10, 'and 15 more')", async function () {
    const list = doors(10, 15);
    assert.equal(list.length, 25);
    const r = notOk(await new DeviceDirectory(fakeFetch(list).fetch).resolveName("Store Room"));
    assert.equal(r.reason, "unknown");
    assert.deepEqual([...r.candidates].sort(), list.map((d) => d.name!).sort());
    assert.match(r.message, /known doors: .* and 15 more$/);
  });

  it("26 named doors: only the 10 closest names, closest first, the text says of how many doors", async function () {
    const list = doors(12, 14);
    assert.equal(list.length, 26);
    const r = notOk(await new DeviceDirectory(fakeFetch(list).fetch).resolveName("Store Room"));
    assert.equal(r.reason, "unknown");
    assert.equal(r.candidates.length, 10);
    assert.ok(
      r.candidates.every((c) => c.startsWith("Store Room ")),
      JSON.stringify(r.candidates),
    );
    assert.match(r.message, /closest names: .*\(of 26 doors\)$/);
    assert.equal((r.message.match(/"Store Room \d+"/g) ?? []).length, 10);
    const near = notOk(await new DeviceDirectory(fakeFetch(list).fetch).resolveName("Alpha Gat"));
    assert.equal(near.candidates[0], "Alpha Gate", "closest first");
    assert.ok(near.candidates.length <= 10);
  });
});
