/**
 * door-events in a real Node-RED runtime against the simulator (docs/events.md): one event per
 * change and never one per message, whatever the number of nodes and config-node copies of the
 * account; what each event carries, and nothing secret; the kinds a node asked for; the code a
 * Catch node routes on. Requests are counted at the simulator: events send none.
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import {
  ALL_NODES,
  CREDS,
  DEMO_ACCOUNT,
  accountNode,
  assertAccepted,
  assertFailed,
  catchModule,
  catchNode,
  deployFlows,
  doorEventsNode,
  doorStatusNode,
  eventsModule,
  helper,
  helperNodes,
  lastStatus,
  loadFlow,
  startSim,
  tab,
  teardown,
  textMatches,
  unlock,
  unlockNode,
  until,
  waitReady,
  waitState,
} from "../helpers/flow.js";
import { received } from "../helpers/odd-messages.js";
import { TEST_PIN, WRONG_PINS } from "../helpers/pins.js";

const NODES = [...ALL_NODES, eventsModule];
const topics = (got: any[]) => got.map((m) => m.topic as string);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Nothing of the account's secrets, in any event (docs/events.md#what-an-event-holds). */
function assertNoSecret(got: any[]): void {
  const text = JSON.stringify(got);
  for (const secret of [
    DEMO_ACCOUNT.password,
    DEMO_ACCOUNT.phoneNumber,
    DEMO_ACCOUNT.phoneNumber.replace(/^\+/, ""),
    TEST_PIN,
    ...WRONG_PINS,
  ])
    assert.ok(!text.includes(secret), `an event holds ${"a secret"}: ${text}`);
  assert.ok(!/eyJ[A-Za-z0-9_-]{10,}/.test(text), "an event holds a token");
}

describe("door-events: what an operator is told, one event per change (docs/events.md)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;

  beforeEach(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
    await sim.close();
  });

  function flow(
    extra: Record<string, unknown>[] = [],
    events: Record<string, unknown> = {},
  ): Record<string, unknown>[] {
    return [
      tab(),
      accountNode(sim.url),
      unlockNode({ deviceId: "101" }),
      doorEventsNode("ev", events),
      ...helperNodes("u1-ok", "u1-fail", "ev-out"),
      ...extra,
    ];
  }

  // docs/events.md#session
  it("session/ready once at start; a superseding login gives exactly one session/halted within a second, and a redeploy one session/ready", async () => {
    await loadFlow(flow(), { nodes: NODES });
    let got = received("ev-out");
    await waitReady();
    await until("session/ready", () => topics(got).includes("session/ready"));
    sim.control.supersede("demo");
    assertAccepted(await unlock({})); // the first takeover is taken back with one login: no change
    sim.control.supersede("demo");
    assertFailed(await unlock({}), "unauthorized", 401);
    await waitState("halted-superseded");
    const haltedAt = Date.now();
    await until("session/halted", () => topics(got).includes("session/halted"), 1000);
    assert.ok(Date.now() - haltedAt <= 1000);
    for (let i = 0; i < 5; i++) assertFailed(await unlock({}), "session-halted", null);
    await sleep(200);
    assert.deepEqual(topics(got), ["session/ready", "session/halted"], "one event per change, none per message");
    const halted = got[1].payload;
    assert.equal(halted.kind, "session");
    assert.equal(halted.event, "halted");
    assert.equal(halted.reason, "superseded");
    assert.equal(halted.account, "demo");
    assert.ok(halted.message.startsWith("demo: "), halted.message);
    assert.match(halted.message, /Reconnect|redeploy/);
    assert.ok(!Number.isNaN(Date.parse(halted.at)));
    // A redeploy clears the halt with one fresh login (docs/session.md#halts-and-reconnect).
    await deployFlows(flow(), "full", CREDS);
    got = received("ev-out");
    await waitState("ready");
    await until("session/ready after the redeploy", () => topics(got).includes("session/ready"));
    await sleep(200);
    assert.deepEqual(topics(got), ["session/ready"]);
    assertNoSecret(got);
  });

  // docs/events.md#device
  it("ten unlocks of an offline door give one device/offline, and one device/online once it answers again; no request is made for events", async () => {
    await loadFlow(flow(), { nodes: NODES });
    const got = received("ev-out");
    await waitReady();
    await until("session/ready", () => topics(got).includes("session/ready"));
    sim.control.setOnline(101, false);
    sim.control.resetRequests();
    for (let i = 0; i < 10; i++) assertFailed(await unlock({}), "offline", 503);
    await until("device/offline", () => topics(got).includes("device/offline"));
    assert.equal(sim.control.requests().length, 10, "ten PUTs and nothing else");
    sim.control.setOnline(101, true);
    assertAccepted(await unlock({}));
    assertAccepted(await unlock({}));
    await until("device/online", () => topics(got).includes("device/online"));
    await sleep(200);
    assert.deepEqual(topics(got), ["session/ready", "device/offline", "device/online"]);
    assert.equal(got[1].payload.deviceId, 101);
    assert.equal(typeof got[1].payload.door, "string");
    assert.equal(sim.control.requests().length, 12);
  });

  // docs/events.md#device: the first thing learnt of a door is not a change
  it("a door first learnt offline is no event; a status read that finds it back online is one", async () => {
    sim.control.setOnline(102, false);
    await loadFlow(flow([doorStatusNode("st", { deviceId: "102" }), ...helperNodes("st-out")]), { nodes: NODES });
    const got = received("ev-out");
    await waitReady();
    await until("session/ready", () => topics(got).includes("session/ready"));
    sim.control.setOnline(102, true);
    helper.getNode("st").receive({});
    await until("device/online", () => topics(got).includes("device/online"));
    assert.deepEqual(topics(got), ["session/ready", "device/online"]);
    assert.equal(got[1].payload.deviceId, 102);
  });

  // docs/events.md#session: one per change, whatever the nodes and copies of the account
  it("an account used by three door-unlock nodes and two config-node copies emits each session event once per door-events node", async () => {
    const f = [
      tab(),
      accountNode(sim.url),
      { ...accountNode(sim.url), id: "acc2", name: "demo copy" },
      unlockNode({ deviceId: "101" }, "u1"),
      unlockNode({ deviceId: "102" }, "u2"),
      { ...unlockNode({ deviceId: "103" }, "u3"), account: "acc2" },
      doorEventsNode("ev"),
      doorEventsNode("ev2", { account: "acc2" }),
      ...helperNodes("u1-ok", "u1-fail", "u2-ok", "u2-fail", "u3-ok", "u3-fail", "ev-out", "ev2-out"),
    ];
    await loadFlow(f, { nodes: NODES, creds: { ...CREDS, acc2: CREDS.acc1 } });
    const one = received("ev-out");
    const two = received("ev2-out");
    await waitReady();
    await until("session/ready at both", () => one.length > 0 && two.length > 0);
    sim.control.supersede("demo");
    assertAccepted(await unlock({}, "u1"));
    sim.control.supersede("demo");
    await unlock({}, "u2");
    await waitState("halted-superseded");
    for (const id of ["u1", "u2", "u3"]) await unlock({}, id);
    await until(
      "session/halted at both",
      () => topics(one).includes("session/halted") && topics(two).includes("session/halted"),
    );
    await sleep(300);
    assert.deepEqual(topics(one), ["session/ready", "session/halted"]);
    assert.deepEqual(topics(two), ["session/ready", "session/halted"]);
    assert.equal(one[1].payload.account, "demo");
    assert.equal(two[1].payload.account, "demo copy", "each node names its own account node");
  });

  // docs/events.md#session, docs/session.md#one-session-per-account: a configuration conflict stops the account
  it("a copy of the account deployed with another password halts the account: one session/halted (conflict), and session/ready once the settings agree", async () => {
    await loadFlow(flow(), { nodes: NODES });
    await waitReady();
    const copy = [{ ...accountNode(sim.url), id: "acc2", name: "demo copy" }];
    await deployFlows([...flow(), ...copy], "full", {
      ...CREDS,
      acc2: { ...CREDS.acc1, password: "another-password-9" },
    });
    let got = received("ev-out");
    assertFailed(await unlock({}), "session-halted", null);
    await until("session/halted", () => topics(got).includes("session/halted"));
    assertFailed(await unlock({}), "session-halted", null);
    await sleep(200);
    assert.deepEqual(topics(got), ["session/halted"]);
    assert.equal(got[0].payload.reason, "conflict");
    assert.match(got[0].payload.message, /password|session store/);
    assertNoSecret(got);
    assert.ok(!JSON.stringify(got).includes("another-password-9"));
    await deployFlows([...flow(), ...copy], "full", { ...CREDS, acc2: CREDS.acc1 });
    got = received("ev-out");
    await waitReady();
    await until("session/ready", () => topics(got).includes("session/ready"));
    await sleep(200);
    assert.deepEqual(topics(got), ["session/ready"]);
  });

  // docs/events.md#unlock
  it("unlock events (asked for): one per message that ended, with its door, actor, reason and msgid; none without asking", async () => {
    const f = [
      ...flow([], { kinds: ["unlock"] }),
      doorEventsNode("evd"), // the default kinds: no unlock events
      ...helperNodes("evd-out"),
    ];
    f[2] = unlockNode({ deviceId: "101", allowActors: ["alice"] });
    await loadFlow(f, { nodes: NODES });
    const got = received("ev-out");
    const dflt = received("evd-out");
    await waitReady();
    const ok = assertAccepted(await unlock({ actor: "alice", _msgid: "m-1" }));
    assertFailed(await unlock({ actor: "mallory" }), "denied", null);
    await until("two unlock events", () => got.length === 2);
    assert.deepEqual(topics(got), ["unlock/accepted", "unlock/denied"]);
    assert.equal(got[0].payload.deviceId, 101);
    assert.equal(got[0].payload.door, ok.door);
    assert.equal(got[0].payload.actor, "alice");
    assert.equal(got[0].payload.msgid, "m-1");
    assert.equal(got[1].payload.reason, "actor");
    assert.equal(got[1].payload.actor, "mallory");
    await sleep(200);
    assert.ok(!topics(dflt).some((t) => t.startsWith("unlock/")), "unlock is not a default kind");
  });

  // docs/events.md#rule
  it("five wrong PINs give one rule/locked-out naming the node and the end, and no PIN", async () => {
    const f = flow([], { kinds: ["rule"] });
    f[2] = { ...unlockNode({ deviceId: "101", name: "front door panel", pinSet: true }) };
    await loadFlow(f, { nodes: NODES, creds: { ...CREDS, u1: { pin: TEST_PIN } } });
    const got = received("ev-out");
    await waitReady();
    for (let i = 0; i < 7; i++) assertFailed(await unlock({ pin: WRONG_PINS[i % WRONG_PINS.length] }), "denied", null);
    await until("rule/locked-out", () => got.length > 0);
    await sleep(200);
    assert.deepEqual(topics(got), ["rule/locked-out"]);
    assert.equal(got[0].payload.node, "front door panel");
    assert.ok(Date.parse(got[0].payload.until) > Date.now());
    assertNoSecret(got);
  });

  // docs/events.md#rule, docs/passes.md#at-a-door-unlock: a guest reads "code", and local time
  it("on a node with Accept passes, rule/locked-out says 'wrong tries', never PINs, names the door and gives the end in local time in the node's zone, never ISO UTC; its until field stays ISO", async () => {
    const zone = "Pacific/Auckland";
    const f = flow([], { kinds: ["rule"] });
    f[2] = { ...unlockNode({ deviceId: "101", name: "guest keypad", acceptPasses: true, timeZone: zone }) };
    await loadFlow(f, { nodes: NODES });
    const got = received("ev-out");
    await waitReady();
    for (let i = 0; i < 5; i++) assertFailed(await unlock({ pass: `9${i}123456` }), "denied", null);
    await until("rule/locked-out", () => got.length > 0);
    const e = got[0].payload;
    const hhmm = new Intl.DateTimeFormat("en-GB", {
      timeZone: zone,
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    }).format(Date.parse(e.until));
    assert.equal(
      e.message.slice(e.message.indexOf("guest keypad:")),
      `guest keypad: 5 wrong tries; ${e.door} refuses every message until ${hhmm} (${zone}). If nobody you know typed them, someone is guessing`,
    );
    assert.equal(e.deviceId, 101);
    assert.doesNotMatch(e.message, /PIN|\d{4}-\d\d-\d\dT/);
    assert.ok(e.until.endsWith("Z") && Date.parse(e.until) > Date.now(), "the machine field stays ISO");
    assertNoSecret(got);
  });

  // docs/events.md#session
  it("a 429 with Retry-After gives one session/rate-limited with retryAfter, and session/ready when the wait is over", async () => {
    await loadFlow(flow(), { nodes: NODES });
    const got = received("ev-out");
    await waitReady();
    await until("session/ready", () => got.length === 1);
    sim.control.inject({ kind: "429", endpoint: "unlockDevice", retryAfter: 1, count: 1 });
    assertFailed(await unlock({}), "rate-limited", 429);
    assertFailed(await unlock({}), "rate-limited", 429); // held: not sent, no second event
    await until("session/ready again", () => got.length === 3, 5000);
    assert.deepEqual(topics(got), ["session/ready", "session/rate-limited", "session/ready"]);
    assert.equal(got[1].payload.retryAfter, 1);
  });

  // docs/events.md#session: a login answered 429 is a wait, not a service that cannot be reached
  it("a login answered 429 gives session/rate-limited and, once a login works, session/ready: never session/unreachable", async () => {
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 1, count: 1 });
    await loadFlow(flow(), { nodes: NODES });
    const got = received("ev-out");
    await until("session/rate-limited", () => topics(got).includes("session/rate-limited"));
    await sleep(1600); // the wait is over; no message needs the session yet
    assertAccepted(await unlock({}));
    await until("session/ready", () => topics(got).includes("session/ready"));
    await sleep(200);
    assert.deepEqual(topics(got), ["session/rate-limited", "session/ready"]);
  });

  // docs/events.md#session
  it("the service not reachable gives one session/unreachable; the next answer gives session/ready", async () => {
    await loadFlow(flow(), { nodes: NODES });
    const got = received("ev-out");
    await waitReady();
    await until("session/ready", () => got.length === 1);
    sim.control.inject({ kind: "drop", endpoint: "unlockDevice", count: 2 });
    await unlock({});
    await unlock({});
    await until("session/unreachable", () => topics(got).includes("session/unreachable"));
    assertAccepted(await unlock({}));
    await until("session/ready again", () => got.length === 3);
    assert.deepEqual(topics(got), ["session/ready", "session/unreachable", "session/ready"]);
    assert.equal(got[1].payload.what, "service");
  });

  // docs/events.md#session: ready means the service answered, not only that a stored pair was resumed
  it("a restart while the service does not answer gives session/unreachable and no session/ready until it answers", async () => {
    const { userDir } = await loadFlow(flow(), { nodes: NODES });
    await waitReady();
    await teardown(); // as a restart: the stored pair stays
    sim.control.inject({ kind: "drop", count: 1000 });
    await loadFlow(flow(), { nodes: NODES, userDir });
    const got = received("ev-out");
    await until("session/unreachable", () => topics(got).includes("session/unreachable"));
    await sleep(300);
    assert.deepEqual(topics(got), ["session/unreachable"]);
    sim.control.clearFaults();
    assertAccepted(await unlock({}));
    await until("session/ready", () => topics(got).includes("session/ready"));
    assert.deepEqual(topics(got), ["session/unreachable", "session/ready"]);
  });

  // docs/events.md#catch-errors
  it("a door-status failure reaches a Catch node with msg.error.code = the outcome word", async () => {
    sim.control.inject({ kind: "503", endpoint: "getDevice", count: 10 });
    await loadFlow([...flow([doorStatusNode("st", { deviceId: "101" }), ...helperNodes("st-out")]), ...catchNode()], {
      nodes: [...NODES, catchModule],
    });
    const caught = received("caught");
    await waitReady();
    helper.getNode("st").receive({});
    await until("the error at the Catch node", () => caught.length > 0);
    assert.equal(caught[0].error.code, caught[0].outcome);
    assert.equal(caught[0].error.code, "offline");
  });

  it("a door-events node without an account says so on its status and sends nothing", async () => {
    await loadFlow([tab(), doorEventsNode("ev", { account: "" }), ...helperNodes("ev-out")], { nodes: NODES });
    const got = received("ev-out");
    const s = lastStatus(helper.getNode("ev"));
    assert.equal(s?.fill, "red");
    assert.ok(textMatches(s?.text, "door-events.status.no-account", /no door-account/), JSON.stringify(s));
    await sleep(200);
    assert.deepEqual(got, []);
  });
});
