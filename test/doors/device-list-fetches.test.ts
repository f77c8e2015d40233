/**
 * The account's device list (docs/doors.md#the-device-list), through Account and the unlock
 * procedure against the simulator (list requests counted in its request log): the unlock path
 * never waits for a fetch when a list is there, even an expired one; a failed start-up fetch is
 * tried again after its back-off; within a back-off window, msg.refresh, the location list and a
 * 404's re-fetch make one try per window, none within a Retry-After; before any list has arrived,
 * a picked door goes to its stored id and a door name sends nothing (docs/doors.md#resolution-rules).
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Account } from "../../src/account/account.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { performUnlock } from "../../src/unlock/unlock.js";
import { fakeClock } from "../helpers/fake-clock.js";
import { DEMO_PHONE, ops, tempDir, waitUntil } from "../helpers/session.js";

const count = (sim: RunningSimulator, operation: string) => sim.control.requests({ operation }).length;
const puts = (sim: RunningSimulator) => sim.control.requests().filter((r) => r.operation.startsWith("unlock")).length;
const settings = { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true };
const byId = (id: number, i: number) => ({
  msgDeviceId: id,
  msgDoor: undefined,
  msgLockId: undefined,
  msgActor: undefined,
  msgRetain: undefined,
  msgid: `m${i}`,
});
/** The directory's list fetch in flight, if any (to let one settle before the next message: forced, not slept on). */
const listInflight = (a: Account) => (a.directory as unknown as { inflight: Promise<unknown> | null }).inflight;

describe("The unlock path never waits for a list fetch when a list is there; a failed start-up fetch is tried again after its back-off (docs/doors.md#the-device-list)", function () {
  this.timeout(30_000);
  // Fixed in 6ca31c5.
  it("an expired list serves the unlock at once while the failing fetch runs in the background", async () => {
    const sim = await startSimulator({ rateLimit: false });
    const dir = tempDir();
    const account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "a.jsonl"),
      deviceListTtlMs: 100,
      client: { random: () => 0 },
    });
    try {
      await account.start();
      await account.devices();
      await new Promise((r) => setTimeout(r, 150)); // the list is now expired
      sim.control.resetRequests();
      // The failing fetch is held 20 s at the service: far longer than the unlock can take on a
      // busy machine, so the PUT is seen while the fetch is still in flight.
      sim.control.inject({ kind: "503", endpoint: "listUserDevices", latencyMs: 20_000, count: 4 });
      const r = await performUnlock(
        account,
        {
          msgDeviceId: undefined,
          msgDoor: "Front Door",
          msgLockId: undefined,
          msgActor: undefined,
          msgRetain: undefined,
          msgid: "x",
        },
        {
          nodeId: "t",
          door: { id: 101, name: "Front Door", location: "Main Street 1" },
          lockId: "",
          actor: "",
          rejectRetained: true,
        },
      );
      assert.equal(r.outcome, "accepted", JSON.stringify(r));
      assert.equal(sim.control.requests({ operation: "unlockDevice" }).length, 1);
      assert.equal(
        sim.control.requests({ operation: "listUserDevices" }).length,
        0,
        "the PUT did not wait for the list (still in flight)",
      );
      assert.ok(
        sim.control.inFlight().some((e) => e.operation === "listUserDevices"),
        "the refresh runs in the background",
      );
    } finally {
      // The service first (it drops the held fetch), then the account (it need not wait for it).
      await sim.close();
      await account.close();
    }
  });

  it("a failed start-up list fetch is retried after 30 s (not sooner), and succeeds", async () => {
    const clock = fakeClock();
    const sim = await startSimulator({ rateLimit: false, now: () => clock.now() });
    const dir = tempDir();
    const account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "a.jsonl"),
      clock,
      client: { random: () => 0 },
    });
    const lists = () => sim.control.requests({ operation: "listUserDevices" }).length;
    try {
      sim.control.inject({ kind: "503", endpoint: "listUserDevices", count: 4 }); // every attempt of the first fetch
      await account.start();
      account.warmDevices();
      for (let i = 0; i < 40 && lists() < 4; i++)
        await clock.tickAsync(250).then(() => new Promise((r) => setTimeout(r, 5)));
      await waitUntil(() => account.directory.nextRetryAt() !== null, 3000, "the first fetch to fail");
      assert.equal(lists(), 4, "the spec's four attempts");
      await clock.tickAsync(25_000);
      assert.equal(lists(), 4, "no try before the back-off");
      await clock.tickAsync(6_000);
      await waitUntil(() => account.directory.cached() !== null, 5000, "the retried fetch");
      assert.equal(lists(), 5);
    } finally {
      await account.close();
      await sim.close();
      clock.uninstall();
    }
  });
});

describe("Within a list back-off window, msg.refresh, the location list and a 404's re-fetch make one try per window, none within a Retry-After (docs/doors.md#the-device-list)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let dir: string;
  let account: Account;
  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: false });
    dir = mkdtempSync(path.join(tmpdir(), "door-list-"));
    account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      client: { random: () => 0 },
    });
  });
  afterEach(async () => {
    await account?.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Fixed in c309f63.
  it("msg.refresh spammed while the list answers 429 (Retry-After: 0) makes at most one message try per back-off window", async () => {
    sim.control.inject({ kind: "429", endpoint: "listUserDevices", retryAfter: 0, count: 10_000 });
    await account.start();
    account.warmDevices();
    await waitUntil(() => account.directory.nextRetryAt() !== null, 10_000, "the start-up list fetch to fail");
    const startup = count(sim, "listUserDevices");
    for (let i = 0; i < 6; i++) {
      await assert.rejects(account.devices(true));
      await waitUntil(() => listInflight(account) === null, 5000, "the list fetch to settle");
    }
    // One message try in the 30 s window (each try: the spec's up to 4 attempts of an idempotent GET).
    assert.ok(
      count(sim, "listUserDevices") <= 2 * startup,
      `${count(sim, "listUserDevices")} list requests (start-up try: ${startup}) for six forced messages within one 30 s back-off window`,
    );
  });

  // Fixed in c309f63.
  it("the location list is served like the device list: six messages while GET /api/user/location answers 429 Retry-After 120 s send one request, none within the Retry-After", async () => {
    sim.control.inject({ kind: "429", endpoint: "listUserLocations", retryAfter: 120, count: 10_000 });
    await account.start();
    for (let i = 0; i < 6; i++) await assert.rejects(account.locations(i % 2 === 1));
    assert.equal(
      count(sim, "listUserLocations"),
      1,
      `location list fetched within its Retry-After: ${JSON.stringify(ops(sim))}`,
    );
  });

  // Fixed in c309f63.
  it("a 404's re-fetch keeps to the list back-off: four unlocks of a removed door while the list answers 429 (Retry-After: 0) make one re-fetch and at most one more try in its back-off window", async () => {
    await account.start();
    await account.devices();
    sim.control.editDevice(101, { remove: true });
    sim.control.inject({ kind: "429", endpoint: "listUserDevices", retryAfter: 0, count: 10_000 });
    sim.control.resetRequests();
    for (let i = 0; i < 4; i++) {
      const r = await performUnlock(account, byId(101, i), settings);
      assert.equal(r.outcome, "not-found", JSON.stringify(r));
      await waitUntil(
        () => listInflight(account) === null && sim.control.inFlight().length === 0,
        5000,
        "the re-fetch to settle",
      );
    }
    // The first 404's re-fetch (it fails and opens a 30 s back-off window), then at most one message try in that window.
    const tries = count(sim, "listUserDevices") / 4;
    assert.ok(
      tries <= 2,
      `${count(sim, "listUserDevices")} list requests (${tries} tries of 4 attempts) for four 404s within one 30 s back-off window: ${JSON.stringify(ops(sim))}`,
    );
  });
});

describe("Before any list has arrived, a picked door goes to its stored id and a door name sends nothing (docs/doors.md#resolution-rules)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  let dir: string;
  let account: Account;
  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: false });
    dir = mkdtempSync(path.join(tmpdir(), "door-no-list-"));
    account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "s.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      client: { random: () => 0 },
    });
  });
  afterEach(async () => {
    await account?.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const msg = (i: number, f: { id?: number; door?: string }) => ({
    msgDeviceId: f.id,
    msgDoor: f.door,
    msgLockId: undefined,
    msgActor: undefined,
    msgRetain: undefined,
    msgid: `m${i}`,
  });
  const node = { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true };

  it("no list (its fetch answers 503): a picked door goes to its stored id, a door name sends nothing", async () => {
    sim.control.inject({ kind: "503", endpoint: "listUserDevices", count: 10_000 });
    await account.start();
    const picked = { ...node, door: { id: 101, name: "Front Door", location: "Main Street 1" } };
    const r1 = await performUnlock(account, msg(1, {}), picked);
    assert.equal(r1.outcome, "accepted", JSON.stringify(r1));
    assert.equal(r1.deviceId, 101);
    const r2 = await performUnlock(account, msg(2, { door: "Front Door" }), node);
    assert.equal(r2.mayHaveOpened, false);
    assert.equal(puts(sim), 1, JSON.stringify(ops(sim)));
    const targets = sim.control
      .requests()
      .filter((r) => r.operation.startsWith("unlock"))
      .map((r) => r.deviceId);
    assert.deepEqual(targets, [101]);
  });
});
