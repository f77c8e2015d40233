/**
 * door-devices and door-status in a real Node-RED runtime against the simulator
 * (docs/nodes.md#door-devices, docs/nodes.md#door-status): payloads, the 24 h cache, msg.refresh
 * within the list's back-off, the idempotent retry, and failures caught by a Catch node with
 * msg.outcome and msg.statusCode (docs/outcomes.md#door-devices-and-door-status-failures). Every
 * message gets its own copy of the list. Messages of every shape: a field that cannot be read is
 * invalid-input with nothing sent; a message that cannot carry what was read ends with an error
 * that says what was read; no message ends in an unhandled rejection. Requests are counted at the
 * simulator.
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import {
  accountNode,
  accountOf,
  assertAccepted,
  assertFailed,
  catchNode,
  count,
  doorDevicesNode,
  doorStatusNode,
  helper,
  helperNodes,
  lastStatus,
  loadFlow,
  next,
  startSim,
  tab,
  teardown,
  unlock,
  unlockNode,
  unlockPuts,
  unlockRequests,
  until,
  waitReady,
  waitState,
} from "../helpers/flow.js";
import {
  LONE_SURROGATE,
  type Status,
  errorMessage,
  received,
  recordErrors,
  recordStatuses,
  revoked,
  settle,
  unhandledSince,
  withoutOnSendHooks,
} from "../helpers/odd-messages.js";
import { assertRetryAfterInText } from "../helpers/session.js";
import { unhandledSeen } from "../hooks/no-unhandled.js";

const VISIBLE = [101, 102, 103, 104, 105, 106, 107, 201];

function send(nodeId: string, msg: Record<string, unknown>): void {
  helper.getNode(nodeId).receive(msg);
}

describe("door-devices and door-status: payloads, the 24 h cache, msg.refresh, retried reads, failures for a Catch node (docs/nodes.md#door-devices, docs/nodes.md#door-status)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSim();
    const flow = [
      tab(),
      accountNode(sim.url),
      doorDevicesNode("dev", { list: "devices" }),
      doorDevicesNode("devdef"),
      doorDevicesNode("loc", { list: "locations" }),
      doorStatusNode("st", { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" }),
      doorStatusNode("stmsg"),
      ...helperNodes("dev-out", "devdef-out", "loc-out", "st-out", "stmsg-out"),
      ...catchNode(),
    ];
    await loadFlow(flow);
    await waitReady();
  });
  after(async () => {
    await teardown();
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });

  describe("door-devices", () => {
    it("list devices (the default when list is unset): msg.payload is the validated Device array, served from the warm cache", async () => {
      const got = next("devdef-out");
      send("devdef", { topic: "x" });
      const msg = await got;
      assert.ok(Array.isArray(msg.payload));
      assert.deepEqual(msg.payload.map((d: any) => d.id).sort(), VISIBLE);
      const front = msg.payload.find((d: any) => d.id === 101);
      assert.equal(front.name, "Front Door");
      assert.equal(front.locationName, "Main Street 1");
      assert.equal(msg.topic, "x", "the rest of the message is kept");
      assert.equal(count(sim, "listUserDevices"), 0, "warmed at deploy, served from the cache");
    });

    it("a second message is served from the cache: no new GET /api/user/device", async () => {
      for (let i = 0; i < 3; i++) {
        const got = next("dev-out");
        send("dev", {});
        assert.equal((await got).payload.length, VISIBLE.length);
      }
      assert.equal(count(sim, "listUserDevices"), 0);
    });

    it("msg.refresh === true forces exactly one fetch; a truthy non-true value does not", async () => {
      let got = next("dev-out");
      send("dev", { refresh: true });
      await got;
      assert.equal(count(sim, "listUserDevices"), 1);
      got = next("dev-out");
      send("dev", { refresh: "yes" });
      await got;
      assert.equal(count(sim, "listUserDevices"), 1);
    });

    it("list locations: GET /api/user/location once, then from the cache", async () => {
      let got = next("loc-out");
      send("loc", {});
      const msg = await got;
      assert.ok(Array.isArray(msg.payload));
      assert.ok(msg.payload.length >= 2);
      assert.equal(count(sim, "listUserLocations"), 1);
      got = next("loc-out");
      send("loc", {});
      await got;
      assert.equal(count(sim, "listUserLocations"), 1);
      assert.equal(count(sim, "listUserDevices"), 0);
    });

    it("failure (503 on every attempt) → done(err) with a real Error, caught by a Catch node with msg.outcome offline and msg.statusCode 503", async () => {
      sim.control.inject({ kind: "503", endpoint: "listUserDevices", count: 4 });
      const node = helper.getNode("dev");
      const errorsBefore = node.error.callCount;
      const caught = next("caught");
      send("dev", { refresh: true, _msgid: "fail-1" });
      const msg = await caught;
      assert.equal(msg._msgid, "fail-1");
      assert.equal(msg.outcome, "offline");
      assert.equal(msg.statusCode, 503);
      assert.equal(msg.error.source.id, "dev");
      assert.match(msg.error.message, /door-devices/);
      assert.match(msg.error.message, /devices/);
      assert.equal(count(sim, "listUserDevices"), 4, "the idempotent GET is tried 4 times, no more");
      const call = node.error
        .getCalls()
        .slice(errorsBefore)
        .find((c: any) => c.thisValue === node);
      assert.ok(call, "node.error was called by done(err)");
      assert.ok(call.args[0] instanceof Error, "done() got a real Error");
      assert.equal(lastStatus(node)?.fill, "red");
    });
  });

  describe("door-status", () => {
    it("payload is the Device record and msg.deviceId is set (configured door)", async () => {
      const got = next("st-out");
      send("st", {});
      const msg = await got;
      assert.equal(msg.payload.id, 101);
      assert.equal(msg.payload.name, "Front Door");
      assert.equal(msg.payload.online, true);
      assert.equal(msg.deviceId, 101);
      assert.equal(count(sim, "getDevice", 101), 1);
    });

    // docs/outcomes.md: msg.outcome, msg.statusCode and msg.retryAfter describe a failure of this node.
    it("a message that carries an earlier failure's fields (a Catch → retry loop) leaves on success without them", async () => {
      const got = next("st-out");
      send("st", { outcome: "rate-limited", statusCode: 429, retryAfter: 90 });
      const msg = await got;
      assert.equal(msg.payload.id, 101);
      for (const k of ["outcome", "statusCode", "retryAfter"]) assert.ok(!(k in msg), `no ${k} on success`);
      const list = next("dev-out");
      send("dev", { outcome: "offline", statusCode: 503 });
      const m2 = await list;
      assert.ok(Array.isArray(m2.payload));
      for (const k of ["outcome", "statusCode", "retryAfter"])
        assert.ok(!(k in m2), `door-devices: no ${k} on success`);
    });

    it("msg.deviceId and msg.door select the device", async () => {
      let got = next("stmsg-out");
      send("stmsg", { deviceId: 105 });
      let msg = await got;
      assert.equal(msg.payload.id, 105);
      assert.equal(msg.payload.online, false);
      got = next("stmsg-out");
      send("stmsg", { door: "harbour warehouse / back door" });
      msg = await got;
      assert.equal(msg.payload.id, 103);
      assert.equal(msg.deviceId, 103);
      assert.deepEqual(
        sim.control.requests({ operation: "getDevice" }).map((r) => r.deviceId),
        [105, 103],
      );
    });

    it("invalid input → Catch with outcome invalid-input, nothing sent", async () => {
      const caught = next("caught");
      send("stmsg", { deviceId: "101" });
      const msg = await caught;
      assert.equal(msg.outcome, "invalid-input");
      assert.equal(msg.statusCode, undefined);
      assert.equal(count(sim, "getDevice"), 0);
    });

    it("429 (Retry-After 1) then success is retried: one output, exactly 2 GETs", async () => {
      sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: 1, count: 1 });
      const outs: any[] = [];
      const got = next("st-out");
      const started = Date.now();
      send("st", {});
      outs.push(await got);
      assert.ok(Date.now() - started >= 900, "Retry-After honoured");
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(outs.length, 1);
      assert.equal(outs[0].payload.id, 101);
      assert.equal(count(sim, "getDevice", 101), 2);
    });

    it("503 on all 4 attempts → Catch with outcome offline, statusCode 503, exactly 4 GETs", async () => {
      sim.control.inject({ kind: "503", endpoint: "getDevice", count: 4 });
      const caught = next("caught");
      send("st", { _msgid: "st-fail" });
      const msg = await caught;
      assert.equal(msg._msgid, "st-fail");
      assert.equal(msg.outcome, "offline");
      assert.equal(msg.statusCode, 503);
      assert.equal(msg.deviceId, 101);
      assert.equal(msg.error.source.id, "st");
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(count(sim, "getDevice", 101), 4);
    });

    it("404 for an unknown id → Catch with outcome not-found, statusCode 404, one GET", async () => {
      const caught = next("caught");
      send("stmsg", { deviceId: 999 });
      const msg = await caught;
      assert.equal(msg.outcome, "not-found");
      assert.equal(msg.statusCode, 404);
      assert.equal(count(sim, "getDevice", 999), 1);
    });
  });
});

// docs/session.md#rate-limits: a rate-limited failure sets
// msg.outcome "rate-limited", msg.statusCode 429 and msg.retryAfter (whole seconds until the
// package sends again), and the error's text names the same number.
describe("door-devices and door-status: a rate-limited failure carries msg.retryAfter, named in its error (docs/session.md#rate-limits)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSim();
    // Retry-After above a minute: the client does not wait it out, the request fails at once.
    sim.control.inject({ kind: "429", endpoint: "listUserDevices", retryAfter: 90 });
    const flow = [
      tab(),
      accountNode(sim.url),
      doorDevicesNode("dev", { list: "devices" }),
      doorDevicesNode("loc", { list: "locations" }),
      doorStatusNode("stmsg"),
      ...helperNodes("dev-out", "loc-out", "stmsg-out"),
      ...catchNode(),
    ];
    await loadFlow(flow);
    await until("the start-up list fetch to fail", () => accountOf().account?.directory.nextRetryAt() != null);
  });
  after(async () => {
    await teardown();
    await sim.close();
  });
  beforeEach(() => {
    sim.control.resetRequests();
  });

  async function caught(nodeId: string, msg: Record<string, unknown>): Promise<any> {
    const got = next("caught");
    send(nodeId, msg);
    const m = await got;
    assert.equal(m.outcome, "rate-limited", JSON.stringify({ outcome: m.outcome, error: m.error?.message }));
    assert.equal(m.statusCode, 429);
    assert.equal(assertRetryAfterInText({ retryAfter: m.retryAfter, message: m.error.message }), m.retryAfter);
    return m;
  }

  it("door-devices: the device list within its Retry-After", async () => {
    const m = await caught("dev", {});
    assert.ok(m.retryAfter >= 88 && m.retryAfter <= 90, `retryAfter ${m.retryAfter}`);
    assert.equal(count(sim, "listUserDevices"), 0, "nothing fetched within the Retry-After");
  });

  // docs/session.md#a-retry-after-holds-the-account
  it("door-devices: the location list while the account is held by the device list's Retry-After: not sent, rate-limited with the seconds left", async () => {
    const m = await caught("loc", {});
    assert.ok(m.retryAfter >= 85 && m.retryAfter <= 90, `retryAfter ${m.retryAfter}`);
    assert.equal(sim.control.requests().length, 0, "nothing sent while the account is held");
  });

  it("door-status: msg.door while the device list is within its Retry-After", async () => {
    const m = await caught("stmsg", { door: "Front Door" });
    assert.ok(m.retryAfter >= 85 && m.retryAfter <= 90, `retryAfter ${m.retryAfter}`);
    assert.equal(sim.control.requests().length, 0, "nothing sent");
  });

  // docs/session.md#a-retry-after-holds-the-account
  it("door-status: a device read while the account is held: not sent, rate-limited with the seconds left", async () => {
    const m = await caught("stmsg", { deviceId: 101 });
    assert.ok(m.retryAfter >= 85 && m.retryAfter <= 90, `retryAfter ${m.retryAfter}`);
    assert.equal(sim.control.requests().length, 0, "nothing sent while the account is held");
  });
});

describe("A Retry-After holds the account: after a status read answered 429, nothing is sent until the wait is over; a short wait is waited out inside the bounded retry (docs/session.md#a-retry-after-holds-the-account)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  beforeEach(async () => {
    sim = await startSim({ rateLimit: false });
    await loadFlow([
      tab(),
      accountNode(sim.url),
      doorStatusNode("stmsg"),
      doorDevicesNode("dev", { list: "devices" }),
      unlockNode(),
      ...helperNodes("stmsg-out", "dev-out", "u1-ok", "u1-fail"),
      ...catchNode(),
    ]);
    await waitReady();
    await until("the start-up device list", () => count(sim, "listUserDevices") >= 1);
    sim.control.resetRequests();
  });
  afterEach(async () => {
    await teardown();
    await sim.close();
  });

  it("a device read answered 429 (Retry-After 120): a read 1 s later sends nothing and fails rate-limited with msg.retryAfter the seconds left; an unlock and a list fetch send nothing either", async () => {
    sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: 120 });
    let got = next("caught");
    send("stmsg", { deviceId: 101 });
    let m = await got;
    assert.equal(m.outcome, "rate-limited");
    assert.equal(m.retryAfter, 120);
    assert.equal(count(sim, "getDevice"), 1);
    await new Promise((r) => setTimeout(r, 1000));
    got = next("caught");
    send("stmsg", { deviceId: 101 });
    m = await got;
    assert.equal(m.outcome, "rate-limited");
    assert.equal(m.statusCode, 429);
    assert.ok(m.retryAfter >= 117 && m.retryAfter <= 119, `retryAfter ${m.retryAfter}`);
    const p = assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    assert.ok(p.retryAfter >= 117 && p.retryAfter <= 119, `retryAfter ${p.retryAfter}`);
    assert.equal(p.mayHaveOpened, false);
    got = next("caught");
    send("dev", { refresh: true });
    m = await got;
    assert.equal(m.outcome, "rate-limited");
    assert.equal(count(sim, "getDevice"), 1, "no second read");
    assert.equal(unlockRequests(sim), 0, "no PUT");
    assert.equal(count(sim, "listUserDevices"), 0, "no list fetch");
  });

  it("a device read answered 429 (Retry-After 1): the next read waits the second out inside its bounded retry and succeeds, with exactly one more GET", async () => {
    sim.control.inject({ kind: "429", endpoint: "getDevice", retryAfter: 1 });
    const first = next("stmsg-out");
    send("stmsg", { deviceId: 101 });
    // The client's own retry already waits a 1 s Retry-After out: the read succeeds after it.
    const ok = await first;
    assert.equal(ok.payload.id, 101);
    assert.equal(count(sim, "getDevice"), 2, "the answered 429 and one read after the second");
    const gets = sim.control.requests({ operation: "getDevice" });
    assert.ok(gets[1].startedAt - gets[0].startedAt >= 1000, "nothing sent within the Retry-After");
  });
});

describe("door-devices: every message gets its own copy of the list (docs/nodes.md#door-devices)", function () {
  this.timeout(30_000);

  // Fixed in 6ca31c5.
  it("door-devices: a flow that sorts and edits msg.payload changes nothing else: each message gets its own copy", async () => {
    const sim = await startSim();
    try {
      const flow = [
        tab(),
        accountNode(sim.url),
        doorDevicesNode("dev", { list: "devices" }),
        unlockNode(),
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
      assert.deepEqual(
        second.payload.map((d: { id: number }) => d.id),
        original,
        "the account's list is unchanged",
      );
      assert.equal(second.payload.find((d: { id: number }) => d.id === 101)?.name, "Front Door");
      assertAccepted(await unlock({ door: "Front Door" }));
      assert.deepEqual(
        unlockPuts(sim).map((r) => r.path),
        ["/api/device/101/unlock"],
        "the name still resolves to the real Front Door",
      );
    } finally {
      await teardown();
      await sim.close();
    }
  });
});

describe("door-status and door-devices: the Catch node's msg.error.message is the node's own text, without an \"Error: \" in front, as door-unlock's (docs/outcomes.md#door-devices-and-door-status-failures)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  before(async () => {
    sim = await startSim();
  });
  after(async () => {
    await teardown();
    await sim.close();
  });

  it('after a halt (login refused), a door-status and a door-devices message: msg.error.message starts with the node\'s type, not with "Error:"', async () => {
    await loadFlow(
      [
        tab(),
        accountNode(sim.url),
        doorStatusNode("st", { deviceId: "101" }),
        doorDevicesNode("dev", { list: "devices" }),
        ...helperNodes("st-out", "dev-out"),
        ...catchNode(),
      ],
      { creds: { acc1: { phoneNumber: "+15550000001", password: "wrong-password" } } },
    );
    await waitState("halted-login-failed");
    const caught = received("caught");
    send("st", { _msgid: "status-halted" });
    send("dev", { _msgid: "devices-halted" });
    await until("both messages at the Catch node", () =>
      ["status-halted", "devices-halted"].every((id) => caught.some((m) => m._msgid === id)),
    );
    for (const [id, type] of [
      ["status-halted", "door-status"],
      ["devices-halted", "door-devices"],
    ] as const) {
      const m = caught.find((c) => c._msgid === id);
      assert.equal(m.outcome, "session-halted", type);
      assert.doesNotMatch(m.error.message, /^Error:/, `${type}: ${m.error.message}`);
      assert.ok(m.error.message.startsWith(`${type}: `), `${type}: ${m.error.message}`);
    }
  });
});

describe("door-status and door-devices: a field that throws again when the Catch node's copy reads it is logged on the node; nothing unhandled (docs/outcomes.md#door-devices-and-door-status-failures)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSim();
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  afterEach(async () => {
    await teardown();
  });

  describe("door-status and door-devices with a Catch node on the tab", function () {
    beforeEach(async () => {
      const flow = [
        tab(),
        accountNode(sim.url),
        doorStatusNode("st", { wires: [["st-out", "st-out2"]] }),
        doorDevicesNode("dv"),
        ...helperNodes("st-out", "st-out2", "dv-out"),
        ...catchNode(),
      ];
      await loadFlow(flow);
      await waitReady();
    });

    // Fixed in 1f34024.
    for (const id of ["st", "dv"]) {
      it(`${id === "st" ? "door-status" : "door-devices"}: a message with a getter that throws (on deviceId, and on refresh), which the Catch node's copy reads again: the error is logged, no unhandled rejection`, async () => {
        withoutOnSendHooks();
        const u0 = unhandledSeen().length;
        const node = helper.getNode(id);
        const errors = recordErrors(node);
        const msg: Record<string, unknown> = { _msgid: `${id}-getter` };
        for (const field of ["deviceId", "refresh"])
          Object.defineProperty(msg, field, {
            enumerable: true,
            get() {
              throw new Error(`no ${field} today`);
            },
          });
        node.receive(msg);
        await until("the error", () => errors.some((e) => /could not be handed on/.test(e)), 5000);
        await settle();
        assert.deepEqual(unhandledSince(u0), []);
        assert.equal(unlockRequests(sim), 0);
      });
    }
  });
});

describe("door-status and door-devices with a message that cannot carry the result: the error says the door was read, the status shows it; a revoked Proxy is invalid-input; nothing unhandled (docs/outcomes.md#door-devices-and-door-status-failures)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  const seen: Status[] = [];
  const last = (): Status => seen[seen.length - 1] ?? {};
  let errors: string[] = [];

  function watch(id: string): void {
    recordStatuses(helper.getNode(id), seen);
    recordErrors(helper.getNode(id), errors);
  }

  before(async () => {
    sim = await startSim();
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
    seen.length = 0;
  });
  afterEach(async () => {
    await teardown();
  });

  describe("door-status and door-devices", function () {
    beforeEach(async () => {
      const flow = [
        tab(),
        accountNode(sim.url),
        doorStatusNode("st"),
        doorDevicesNode("dv"),
        ...helperNodes("st-out", "dv-out"),
        ...catchNode(),
      ];
      await loadFlow(flow);
      await waitReady();
      errors = [];
    });

    // Fixed in ca79a32.
    it("door-status, frozen message: the GET is done, the message ends with an error saying the door was read, and the node status does not stay on 'reading'", async () => {
      const u0 = unhandledSeen().length;
      watch("st");
      helper.getNode("st").receive(Object.freeze({ _msgid: "st-frozen", deviceId: 101 }));
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.notEqual(last().fill, "blue", `status stayed ${JSON.stringify(last())}; errors ${JSON.stringify(errors)}`);
      assert.match(
        errors.join("\n"),
        /door #101 was read \(.*\) but the message could not carry it or be sent to every wire/,
      );
    });

    // Fixed in ca79a32.
    it("door-status, msg.payload setter throws: the door was read, so the status shows its state, and the error on done says the message could not carry it; no unhandled", async () => {
      const u0 = unhandledSeen().length;
      watch("st");
      const m: Record<string, unknown> = { _msgid: "st-ro", deviceId: 101 };
      Object.defineProperty(m, "payload", {
        enumerable: true,
        get() {
          return 0;
        },
        set() {
          throw new Error("ro payload");
        },
      });
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.ok(last().fill === "green" || last().fill === "yellow", JSON.stringify(last()));
      assert.match(
        errors.join("\n"),
        /door #101 was read \(.*\) but the message could not carry it or be sent to every wire: ro payload/,
      );
    });

    // Fixed in ca79a32.
    it("door-status, msg.deviceId a revoked Proxy: invalid-input (msg.outcome), no GET, no unhandled", async () => {
      const u0 = unhandledSeen().length;
      watch("st");
      const m: Record<string, unknown> = { _msgid: "st-rev", deviceId: revoked() };
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(m.outcome, "invalid-input", `outcome ${String(m.outcome)}; ${errors.join(" | ")}`);
    });

    for (const id of ["st", "dv"]) {
      it(`${id === "st" ? "door-status" : "door-devices"}: a getter (deviceId / refresh) throwing an object whose 'message' getter throws a null-prototype object: the message ends, no unhandled`, async () => {
        withoutOnSendHooks();
        const u0 = unhandledSeen().length;
        watch(id);
        const m: Record<string, unknown> = { _msgid: `${id}-nasty` };
        const nasty = {
          get message(): string {
            throw Object.create(null);
          },
        };
        for (const f of ["deviceId", "refresh"])
          Object.defineProperty(m, f, {
            enumerable: true,
            get() {
              // eslint-disable-next-line @typescript-eslint/only-throw-error -- the case under test: a getter that throws something that is not an Error
              throw nasty;
            },
          });
        helper.getNode(id).receive(m);
        await until("an error", () => errors.length > 0, 5000);
        await settle();
        assert.deepEqual(unhandledSince(u0), []);
      });
    }

    it("door-devices, a frozen message and a payload setter that throws: errors on done, no unhandled", async () => {
      const u0 = unhandledSeen().length;
      watch("dv");
      helper.getNode("dv").receive(Object.freeze({ _msgid: "dv-frozen" }));
      const m: Record<string, unknown> = { _msgid: "dv-ro" };
      Object.defineProperty(m, "payload", {
        enumerable: true,
        get() {
          return 0;
        },
        set() {
          throw new Error("ro payload");
        },
      });
      helper.getNode("dv").receive(m);
      await until("two errors", () => errors.length >= 2, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
    });
  });
});

describe("door-status and door-devices: a field that cannot be read is invalid-input with nothing sent; odd msg.door values are refused with a bounded error; a frozen message's failure is named (docs/outcomes.md#door-devices-and-door-status-failures)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  const seen: Record<string, Status[]> = {};
  const last = (id: string): Status => seen[id]?.[seen[id].length - 1] ?? {};
  let errors: string[] = [];

  function watch(id: string): void {
    seen[id] = recordStatuses(helper.getNode(id));
    recordErrors(helper.getNode(id), errors, errorMessage);
  }

  const door = { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" };

  before(async () => {
    sim = await startSim();
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  afterEach(async () => {
    await teardown();
  });

  describe("door-devices (list=locations) and door-status (configured door)", function () {
    beforeEach(async () => {
      const flow = [
        tab(),
        accountNode(sim.url),
        doorStatusNode("st", door),
        doorDevicesNode("dv", { list: "locations" }),
        ...helperNodes("st-out", "dv-out"),
        ...catchNode(),
      ];
      await loadFlow(flow);
      await waitReady();
      errors = [];
      watch("st");
      watch("dv");
    });

    it("door-devices locations, msg.refresh a revoked Proxy: served (not forced), no unhandled, status not stuck", async () => {
      const u0 = unhandledSeen().length;
      const out = received("dv-out");
      const m: Record<string, unknown> = { _msgid: "dv-rev", refresh: revoked() };
      helper.getNode("dv").receive(m);
      await until("an output or an error", () => out.length + errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.notEqual(last("dv").fill, "blue");
    });

    // Fixed in 77c49db.
    it("door-devices locations, msg.refresh a getter that throws: invalid-input, nothing sent, no unhandled", async () => {
      const u0 = unhandledSeen().length;
      sim.control.resetRequests();
      const m: Record<string, unknown> = { _msgid: "dv-get" };
      Object.defineProperty(m, "refresh", {
        enumerable: true,
        configurable: true,
        get() {
          throw new Error("no refresh today");
        },
      });
      helper.getNode("dv").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(sim.control.requests().length, 0, "nothing sent");
      assert.equal(m.outcome, "invalid-input", `outcome ${String(m.outcome)}; errors ${JSON.stringify(errors)}`);
    });

    it("door-status, configured door, msg.door a revoked Proxy: invalid-input, no GET, no unhandled", async () => {
      const u0 = unhandledSeen().length;
      sim.control.resetRequests();
      const m: Record<string, unknown> = { _msgid: "st-rev-door", door: revoked() };
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(count(sim, "getDevice"), 0);
      assert.equal(m.outcome, "invalid-input", `outcome ${String(m.outcome)}; ${errors.join(" | ")}`);
      assert.notEqual(last("st").fill, "blue");
    });

    // Fixed in 77c49db.
    for (const field of ["deviceId", "door"]) {
      it(`door-status, configured door, a getter that throws on msg.${field}: invalid-input, no GET`, async () => {
        const u0 = unhandledSeen().length;
        sim.control.resetRequests();
        const m: Record<string, unknown> = { _msgid: `st-get-${field}` };
        Object.defineProperty(m, field, {
          enumerable: true,
          configurable: true,
          get() {
            throw new Error(`no ${field} today`);
          },
        });
        helper.getNode("st").receive(m);
        await until("an error", () => errors.length > 0, 5000);
        await settle();
        assert.deepEqual(unhandledSince(u0), []);
        assert.equal(count(sim, "getDevice"), 0);
        assert.equal(m.outcome, "invalid-input", `outcome ${String(m.outcome)}; errors ${JSON.stringify(errors)}`);
      });
    }

    it("door-status, odd msg.door values (String object, throwing toString, BigInt, 100 kB string): invalid-input each, no GET, bounded error", async () => {
      const u0 = unhandledSeen().length;
      sim.control.resetRequests();
      const values: unknown[] = [
        new String("Front Door"),
        {
          toString() {
            throw new Error("no text");
          },
        },
        10n,
        "F".repeat(100_000),
      ];
      const msgs: Record<string, unknown>[] = values.map((v, i) => ({ _msgid: `st-odd-${i}`, door: v }));
      for (const m of msgs) helper.getNode("st").receive(m);
      await until("errors", () => errors.length >= values.length, 5000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(count(sim, "getDevice"), 0);
      assert.deepEqual(
        msgs.map((m) => m.outcome),
        values.map(() => "invalid-input"),
      );
      assert.ok(
        errors.every((e) => e.length < 2000),
        `error lengths ${errors.map((e) => e.length).join(",")}`,
      );
    });
  });

  describe("door-status, frozen message, a GET that fails", function () {
    beforeEach(async () => {
      const flow = [
        tab(),
        accountNode(sim.url),
        doorStatusNode("st", { ...door, wires: [["st-out", "st-out2"]] }),
        ...helperNodes("st-out", "st-out2"),
        ...catchNode(),
      ];
      await loadFlow(flow);
      await waitReady();
      errors = [];
      watch("st");
    });

    it("door-status, a frozen message, GET answers 404: the error says not-found and that msg.outcome could not be set; status red, not 'reading'; no unhandled", async () => {
      withoutOnSendHooks();
      const u0 = unhandledSeen().length;
      helper.getNode("st").receive(Object.freeze({ _msgid: "st-frozen-404", deviceId: 999 }));
      await until("an error", () => errors.length > 0, 8000);
      await settle();
      assert.deepEqual(unhandledSince(u0), []);
      assert.equal(last("st").fill, "red");
      assert.match(errors[0], /msg\.outcome could not be set/);
    });
  });
});

describe("door-status: msg.deviceId and msg.door must name the same door; the error is bounded and cut at whole characters (docs/doors.md#message-overrides)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  const seen: Record<string, Status[]> = {};
  const last = (id: string): Status => seen[id]?.[seen[id].length - 1] ?? {};
  let errors: string[] = [];

  function watch(id: string): void {
    seen[id] = recordStatuses(helper.getNode(id));
    recordErrors(helper.getNode(id), errors, errorMessage);
  }

  before(async () => {
    sim = await startSim();
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  afterEach(async () => {
    await teardown();
  });
  describe("door-status: msg.deviceId and msg.door name different doors", function () {
    beforeEach(async () => {
      const flow = [tab(), accountNode(sim.url), doorStatusNode("st"), ...helperNodes("st-out"), ...catchNode()];
      await loadFlow(flow);
      await waitReady();
      errors = [];
      watch("st");
    });

    it("deviceId 101, door 'Boiler Room': invalid-input, no GET, status red", async () => {
      const m: Record<string, unknown> = { _msgid: "st-both", deviceId: 101, door: "Boiler Room" };
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.equal(count(sim, "getDevice"), 0);
      assert.equal(m.outcome, "invalid-input", errors.join(" | "));
      assert.equal(last("st").fill, "red");
    });

    // Fixed in d9a32e9.
    it("deviceId 101, door naming 106 whose name has 100,000 inner spaces: invalid-input, no GET, error bounded (under 5,000 characters)", async () => {
      sim.control.editDevice(106, { name: `Boiler${" ".repeat(100_000)}Room` });
      try {
        await helper.getNode("acc1").account.devices(true);
        sim.control.resetRequests();
        const m: Record<string, unknown> = { _msgid: "st-both-long", deviceId: 101, door: "Boiler Room" };
        helper.getNode("st").receive(m);
        await until("an error", () => errors.length > 0, 5000);
        await settle();
        assert.equal(count(sim, "getDevice"), 0);
        assert.equal(m.outcome, "invalid-input");
        assert.ok(errors[0].length < 5000, `error length ${errors[0].length}`);
      } finally {
        sim.control.editDevice(106, { name: "Boiler Room" });
      }
    });

    // Fixed in d9a32e9.
    it("a msg.door getter whose error has an emoji at character 200: the error text has no lone surrogate, no GET", async () => {
      const m: Record<string, unknown> = { _msgid: "st-emoji" };
      Object.defineProperty(m, "door", {
        enumerable: true,
        configurable: true,
        get() {
          throw new Error(`${"e".repeat(199)}😀 tail`);
        },
      });
      withoutOnSendHooks();
      helper.getNode("st").receive(m);
      await until("an error", () => errors.length > 0, 5000);
      await settle();
      assert.equal(count(sim, "getDevice"), 0);
      assert.ok(!LONE_SURROGATE.test(errors[0]), JSON.stringify(errors[0].slice(-40)));
    });
  });
});

describe("door-devices: msg.refresh within the list's back-off fetches at most once per window, never within a Retry-After (docs/doors.md#the-device-list)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  const seen: Record<string, Status[]> = {};
  let errors: string[] = [];

  function watch(id: string): void {
    seen[id] = recordStatuses(helper.getNode(id));
    recordErrors(helper.getNode(id), errors, errorMessage);
  }

  before(async () => {
    sim = await startSim();
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  afterEach(async () => {
    await teardown();
  });
  describe("door-devices: msg.refresh during a list back-off", function () {
    beforeEach(async () => {
      const flow = [
        tab(),
        accountNode(sim.url),
        doorDevicesNode("dv", { list: "devices" }),
        ...helperNodes("dv-out"),
        ...catchNode(),
      ];
      await loadFlow(flow);
      await waitReady();
      errors = [];
      watch("dv");
    });

    it("429 Retry-After 60 on the list: five msg.refresh messages make the GETs of one fetch at most, none within Retry-After after it", async () => {
      sim.control.inject({ kind: "429", endpoint: "listUserDevices", count: 50, retryAfter: 60 });
      sim.control.resetRequests();
      const outs = received("dv-out");
      for (let i = 0; i < 5; i++) {
        const before = outs.length + errors.length;
        helper.getNode("dv").receive({ _msgid: `dv-r${i}`, refresh: true });
        await until("an answer", () => outs.length + errors.length > before, 10000);
      }
      await settle();
      const gets = count(sim, "listUserDevices");
      assert.ok(gets <= 1, `list GETs ${gets}`);
    });

    it("503 on the list: five msg.refresh messages: at most the first fetch (≤4 attempts) plus one message try", async () => {
      sim.control.inject({ kind: "503", endpoint: "listUserDevices", count: 50 });
      sim.control.resetRequests();
      const outs = received("dv-out");
      for (let i = 0; i < 5; i++) {
        const before = outs.length + errors.length;
        helper.getNode("dv").receive({ _msgid: `dv-s${i}`, refresh: true });
        await until("an answer", () => outs.length + errors.length > before, 15000);
      }
      await settle();
      const gets = count(sim, "listUserDevices");
      assert.ok(gets <= 8, `list GETs ${gets}`);
    });
  });
});
