/**
 * The defects an outside review reproduced (issue 11), one test each, against the simulator
 * over loopback and, where the defect was seen through Node-RED, a real Node-RED runtime.
 * Every test here failed on 1a78a08 (before the fixes); each names the CONTRACT line it follows.
 * Requests are counted in the simulator's request log.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Account, checkAccountSettings } from "../src/account/account.js";
import { RenewalFailedError } from "../src/session/errors.js";
import { FileTokenStore, accountKey } from "../src/session/token-store.js";
import { startSimulator, type RunningSimulator } from "../src/simulator/index.js";
import { performUnlock } from "../src/unlock/unlock.js";
import type { Clock } from "../src/util/clock.js";
import { fakeClock, type FakeClock } from "./helpers/fake-clock.js";
import {
  TAB, accountNode, assertAccepted, assertFailed, helper, helperNodes, loadFlow, logins, next, startSim, tab, teardown,
  unlock, unlockFlow, unlockRequests, waitReady,
} from "./helpers/flow.js";
import { DEMO_PHONE, buildSession, ops, tempDir, waitUntil, type Built } from "./helpers/session.js";

const H = 3600_000;
const PUT_OPS = ["unlockDevice", "unlockDeviceLock"];
const puts = (sim: RunningSimulator) => sim.control.requests().filter((r) => PUT_OPS.includes(r.operation));

describe("issue 11 regressions: the wrong door, crashes and loops", function () {
  this.timeout(30_000);

  // ---- defect 1 ---------------------------------------------------------------------------
  describe("a picked door opens itself or nothing (CONTRACT 'Door selection', rules 1-4)", () => {
    let sim: RunningSimulator;
    const picked = { deviceId: "102", doorName: "Back Door", doorLocation: "Main Street 1" };
    beforeEach(async () => {
      sim = await startSim();
    });
    afterEach(async () => {
      await teardown();
      await sim.close();
    });

    it("102 removed from the list: invalid-input naming the Back Door elsewhere, no PUT (never 103)", async () => {
      sim.control.editDevice(102, { remove: true });
      await loadFlow(unlockFlow(sim.url, picked));
      await waitReady();
      const p = assertFailed(await unlock({}), "invalid-input", null);
      assert.match(p.message, /Harbour Warehouse \/ Back Door/);
      assert.equal(unlockRequests(sim), 0, `requests: ${JSON.stringify(puts(sim).map((r) => r.path))}`);
    });

    it("102 renamed: rule 3 opens 102, the door that was picked", async () => {
      sim.control.editDevice(102, { name: "Yard Door" });
      await loadFlow(unlockFlow(sim.url, picked));
      await waitReady();
      assertAccepted(await unlock({}));
      assert.deepEqual(puts(sim).map((r) => r.path), ["/api/device/102/unlock"]);
    });

    it("102 renumbered to 9102 (same name and location): rule 2 opens 9102", async () => {
      sim.control.editDevice(102, { newId: 9102 });
      await loadFlow(unlockFlow(sim.url, picked));
      await waitReady();
      assertAccepted(await unlock({}));
      assert.deepEqual(puts(sim).map((r) => r.path), ["/api/device/9102/unlock"]);
    });

    it("102 renumbered AND renamed: nothing matches by id or by name+location, so nothing is sent", async () => {
      sim.control.editDevice(102, { newId: 9102, name: "Yard Door" });
      await loadFlow(unlockFlow(sim.url, picked));
      await waitReady();
      assertFailed(await unlock({}), "invalid-input", null);
      assert.equal(unlockRequests(sim), 0);
    });
  });

  // ---- defect 7 ---------------------------------------------------------------------------
  it("door-devices: a flow that sorts and edits msg.payload changes nothing else (CONTRACT: 'each message's own copy')", async () => {
    const sim = await startSim();
    try {
      const flow = [
        tab(), accountNode(sim.url),
        { id: "dev", type: "door-devices", z: TAB, name: "", account: "acc1", list: "devices", wires: [["dev-out"]] },
        { id: "u1", type: "door-unlock", z: TAB, name: "", account: "acc1", deviceId: "", doorName: "", doorLocation: "", lockId: "", actor: "", rejectRetained: true, wires: [["u1-ok"], ["u1-fail"]] },
        ...helperNodes("dev-out", "u1-ok", "u1-fail"),
      ];
      await loadFlow(flow);
      await waitReady();
      const got = next("dev-out");
      helper.getNode("dev").receive({});
      const msg = await got;
      const original = msg.payload.map((d: { id: number }) => d.id);
      // What a function node might do: sort in place, then edit a device.
      msg.payload.sort((a: { id: number }, b: { id: number }) => b.id - a.id);
      const front = msg.payload.find((d: { name: string }) => d.name === "Front Door");
      front.id = 106;
      front.name = "Boiler Room";
      const again = next("dev-out");
      helper.getNode("dev").receive({});
      const second = await again;
      assert.deepEqual(second.payload.map((d: { id: number }) => d.id), original, "the account's list is unchanged");
      assert.equal(second.payload.find((d: { id: number }) => d.id === 101)?.name, "Front Door");
      assertAccepted(await unlock({ door: "Front Door" }));
      assert.deepEqual(puts(sim).map((r) => r.path), ["/api/device/101/unlock"], "the name still resolves to the real Front Door");
    } finally {
      await teardown();
      await sim.close();
    }
  });

  // ---- defect 2 ---------------------------------------------------------------------------
  describe("a replay only follows a renewal (CONTRACT 'A replay only follows a renewal')", () => {
    let sim: RunningSimulator;
    let dir: string;
    let account: Account;
    const make = (timings = {}) =>
      new Account({
        baseUrl: sim.url, credentials: DEMO_PHONE, tokenFile: path.join(dir, "s.json"), auditLogPath: path.join(dir, "audit.jsonl"),
        timings, client: { random: () => 0 },
      });
    beforeEach(async () => {
      sim = await startSimulator({ rateLimit: false });
      dir = mkdtempSync(path.join(tmpdir(), "door-replay-"));
    });
    afterEach(async () => {
      await account.close();
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("access revoked, refresh 429: one PUT (401), no replay, no halt; rate-limited with retryAfter; later the account recovers without a login", async () => {
      account = make({ minRenewalIntervalMs: 200 });
      await account.start();
      sim.control.resetRequests();
      sim.control.revokeAccessToken("demo");
      sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 1, count: 1 });
      const settings = { nodeId: "t", door: null, lockId: "", actor: "", rejectRetained: true };
      const r = await performUnlock(account, { msgDeviceId: 101, msgDoor: undefined, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid: "m1" }, settings);
      assert.equal(r.outcome, "rate-limited", JSON.stringify(r));
      assert.equal(r.retryAfter !== undefined && r.retryAfter >= 1, true, JSON.stringify(r));
      assert.equal(r.mayHaveOpened, false);
      assert.deepEqual(ops(sim), ["unlockDevice 401", "refreshToken 429"], "the rejected token is never sent again");
      assert.ok(!account.session.state.startsWith("halted"), account.session.state);
      // Retry-After (1 s) honoured: a message before it sends nothing.
      const early = await performUnlock(account, { msgDeviceId: 101, msgDoor: undefined, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid: "m2" }, settings);
      assert.equal(early.outcome, "rate-limited");
      assert.equal(ops(sim).length, 2, `nothing sent before Retry-After: ${JSON.stringify(ops(sim))}`);
      await new Promise((r) => setTimeout(r, 1100));
      const later = await performUnlock(account, { msgDeviceId: 101, msgDoor: undefined, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid: "m3" }, settings);
      assert.equal(later.outcome, "accepted", JSON.stringify(later));
      assert.deepEqual(ops(sim).slice(2), ["refreshToken 200", "unlockDevice 200"]);
      assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 0, "the refresh token was still good: no login");
    });

    it("a scheduled refresh failing on 5xx while a call meets a 401: the call fails without a replay, the account does not halt", async () => {
      account = make({ renewEveryMs: 1500, minRenewalIntervalMs: 100 });
      await account.start();
      sim.control.resetRequests();
      // The scheduled refresh (at 1.5 s) fails with 503, twice (the client retries once). The first
      // attempt hangs 3 s: the call below must meet its 401 while the refresh is still under way,
      // which a busy machine did not always do within the 600 ms this once waited.
      sim.control.inject({ kind: "503", endpoint: "refreshToken", latencyMs: 3000, count: 1 });
      sim.control.inject({ kind: "503", endpoint: "refreshToken", latencyMs: 600, count: 1 });
      await waitUntil(() => sim.control.inFlight().some((e) => e.operation === "refreshToken"), 5000, "the scheduled refresh");
      sim.control.revokeAccessToken("demo");
      await assert.rejects(account.getDevice(101), (e: unknown) => e instanceof RenewalFailedError && !e.rateLimited);
      assert.equal(sim.control.requests({ operation: "getDevice" }).length, 1, `no replay with the rejected token: ${JSON.stringify(ops(sim))}`);
      assert.ok(!account.session.state.startsWith("halted"), account.session.state);
      // The next call renews (the refresh token is good) and succeeds: no login, no halt.
      await new Promise((r) => setTimeout(r, 150));
      const d = await account.getDevice(101);
      assert.equal(d.id, 101);
      assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 0);
      assert.equal(account.session.state, "ready");
    });
  });

  // ---- defect 3 ---------------------------------------------------------------------------
  it("Reconnect pressed twice while a login hangs never rejects (CONTRACT 'Nothing crashes the runtime')", async () => {
    const sim = await startSimulator({ rateLimit: false });
    const b = buildSession(sim, { timings: { waitMs: 300 } });
    try {
      sim.control.inject({ kind: "latency", endpoint: "loginByPhone", latencyMs: 1500, count: 2 });
      const started = b.session.start();
      await waitUntil(() => sim.control.inFlight().some((e) => e.operation === "loginByPhone"), 5000, "the login in flight");
      // Longer than waitMs (300 ms): the old reconnect rejected here, and door-account's `void` made it fatal.
      await b.session.reconnect();
      await b.session.reconnect();
      await new Promise((r) => setTimeout(r, 400));
      await started;
      assert.equal(b.session.state, "ready");
      assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 1, "the presses did not start logins of their own");
    } finally {
      await b.session.close();
      await b.client.close();
      await sim.close();
    }
  });

  // ---- defect 4 ---------------------------------------------------------------------------
  describe("renewal is bounded whatever the lifetime and the clock (CONTRACT 'Renewal is bounded')", () => {
    let sim: RunningSimulator;
    let clock: FakeClock;
    let b: Built;
    afterEach(async () => {
      await b.session.close();
      await b.client.close();
      await sim.close();
      clock.uninstall();
    });
    async function setup(accessTtlSec: number, offsetMs = 0) {
      clock = fakeClock();
      sim = await startSimulator({ rateLimit: false, now: () => clock.now(), accessTtlSec });
      // The session's clock may be off from the service's by offsetMs (same timers).
      const local: Clock = { now: () => clock.now() + offsetMs, monotonic: clock.monotonic, setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout };
      b = buildSession(sim, { clock: local });
      await b.session.start();
      sim.control.resetRequests();
    }
    const refreshes = () => sim.control.requests({ operation: "refreshToken" }).length;

    it("1 h tokens: no refresh in the first 8 s, then one every 45 min", async () => {
      await setup(3600);
      await clock.tickAsync(8000);
      assert.equal(refreshes(), 0, "the old code refreshed about 700 times here");
      for (let i = 1; i <= 3; i++) {
        await clock.tickAsync(45 * 60_000);
        await waitUntil(() => refreshes() === i && b.session.state === "ready", 5000, () => `refresh ${i}: ${JSON.stringify(ops(sim))}`);
        assert.equal(b.session.snapshot().renewAt! - clock.now(), 45 * 60_000 - 0, "next renewal a quarter-lifetime before exp");
      }
    });

    it("a local clock 45 h fast: 48 h tokens are still renewed every 36 h, not in a loop", async () => {
      await setup(48 * 3600, 45 * H);
      await clock.tickAsync(8000);
      assert.equal(refreshes(), 0);
      assert.ok(b.session.snapshot().renewAt! - (clock.now() + 45 * H) > 35 * H, "renewal 36 h after it was obtained");
    });

    it("1 min tokens over 10 min: renewals spaced by at least the minimum interval (30 s)", async () => {
      await setup(60);
      for (let t = 0; t < 600; t += 5) await clock.tickAsync(5000).then(() => new Promise((r) => setTimeout(r, 2)));
      const n = refreshes();
      assert.ok(n >= 5 && n <= 21, `${n} refreshes in 10 min`);
      const times = sim.control.requests({ operation: "refreshToken" }).map((r) => r.startedAt);
      for (let i = 1; i < times.length; i++) assert.ok(times[i]! - times[i - 1]! >= 30_000, `refreshes ${i - 1} and ${i} only ${times[i]! - times[i - 1]!} ms apart`);
    });
  });

  // ---- defect 6 ---------------------------------------------------------------------------
  describe("the device list is never fetched on the unlock path when one is cached (CONTRACT 'Door selection')", () => {
    it("an expired list serves the unlock at once while the failing fetch runs in the background", async () => {
      const sim = await startSimulator({ rateLimit: false });
      const dir = tempDir();
      const account = new Account({ baseUrl: sim.url, credentials: DEMO_PHONE, tokenFile: path.join(dir, "s.json"), auditLogPath: path.join(dir, "a.jsonl"), deviceListTtlMs: 100, client: { random: () => 0 } });
      try {
        await account.start();
        await account.devices();
        await new Promise((r) => setTimeout(r, 150)); // the list is now expired
        sim.control.resetRequests();
        sim.control.inject({ kind: "503", endpoint: "listUserDevices", latencyMs: 2000, count: 4 });
        const r = await performUnlock(account, { msgDeviceId: undefined, msgDoor: "Front Door", msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid: "x" }, { nodeId: "t", door: { id: 101, name: "Front Door", location: "Main Street 1" }, lockId: "", actor: "", rejectRetained: true });
        assert.equal(r.outcome, "accepted", JSON.stringify(r));
        assert.equal(sim.control.requests({ operation: "unlockDevice" }).length, 1);
        assert.equal(sim.control.requests({ operation: "listUserDevices" }).length, 0, "the PUT did not wait for the list (still in flight)");
        assert.ok(sim.control.inFlight().some((e) => e.operation === "listUserDevices"), "the refresh runs in the background");
      } finally {
        await account.close();
        await sim.close();
      }
    });

    it("a failed start-up list fetch is retried after 30 s (not sooner), and succeeds", async () => {
      const clock = fakeClock();
      const sim = await startSimulator({ rateLimit: false, now: () => clock.now() });
      const dir = tempDir();
      const account = new Account({ baseUrl: sim.url, credentials: DEMO_PHONE, tokenFile: path.join(dir, "s.json"), auditLogPath: path.join(dir, "a.jsonl"), clock, client: { random: () => 0 } });
      const lists = () => sim.control.requests({ operation: "listUserDevices" }).length;
      try {
        sim.control.inject({ kind: "503", endpoint: "listUserDevices", count: 4 }); // every attempt of the first fetch
        await account.start();
        account.warmDevices();
        for (let i = 0; i < 40 && lists() < 4; i++) await clock.tickAsync(250).then(() => new Promise((r) => setTimeout(r, 5)));
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

  // ---- defect 8 ---------------------------------------------------------------------------
  it("closing lets a refresh in flight finish and persist its pair: the next start needs no login", async () => {
    const sim = await startSimulator({ rateLimit: false });
    const tokenFile = path.join(tempDir(), "s.json");
    const first = buildSession(sim, { tokenFile });
    await first.session.start();
    sim.control.expireAccessToken("demo");
    // The service executes the refresh (the token is consumed) and answers only after 800 ms.
    sim.control.inject({ kind: "slow-headers", endpoint: "refreshToken", latencyMs: 800, count: 1 });
    const call = first.session.call((t) => first.client.getDevice(t, 101)).catch((e: Error) => e);
    await waitUntil(() => sim.control.inFlight().some((e) => e.operation === "refreshToken"), 5000, "the refresh in flight");
    await first.session.close();
    await call;
    await first.client.close();
    sim.control.resetRequests();
    const second = buildSession(sim, { tokenFile });
    try {
      await second.session.start();
      const d = await second.session.call((t) => second.client.getDevice(t, 101));
      assert.equal(d.id, 101);
      assert.equal(logins(sim), 0, `the rotated pair was persisted: ${JSON.stringify(ops(sim))}`);
    } finally {
      await second.session.close();
      await second.client.close();
      await sim.close();
    }
  });

  // ---- defect 9 ---------------------------------------------------------------------------
  it("an email the request schema refuses is a configuration error at deploy, and nothing is sent", async () => {
    for (const email of ["ops@example.c", "josé@example.com"]) {
      const r = checkAccountSettings({ baseUrl: "http://127.0.0.1:1", loginMethod: "email", email, password: "pw" });
      assert.equal(r.ok, false, email);
    }
    const sim = await startSim();
    try {
      await loadFlow([tab(), accountNode(sim.url, { loginMethod: "email" })], { creds: { acc1: { email: "ops@example.c", password: "demo-password" } } });
      const n = helper.getNode("acc1");
      assert.match(n.problem ?? "", /email/);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(sim.control.requests().length, 0);
    } finally {
      await teardown();
      await sim.close();
    }
  });

  // ---- defect 11 --------------------------------------------------------------------------
  it("a compromised renewal lock is reported, not thrown from a timer", async () => {
    const dir = tempDir();
    const problems: string[] = [];
    const store = new FileTokenStore({ filePath: path.join(dir, "s.json"), accountKey: accountKey("http://127.0.0.1:1", "phone", "+15550000009"), onProblem: (m) => problems.push(m) });
    await store.withRenewalLock(async () => {
      rmSync(path.join(dir, "s.json.lock"), { recursive: true, force: true }); // someone removed our lock
      await waitUntil(() => problems.length > 0, 8000, "the lock library to notice");
    });
    assert.match(problems[0]!, /compromised/);
  });
});
