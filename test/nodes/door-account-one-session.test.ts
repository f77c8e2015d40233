/**
 * One session per account, whatever the flows look like (docs/session.md#one-session-per-account),
 * in a real Node-RED runtime (node-red-node-test-helper) against the simulator; requests counted
 * in the simulator's request log only. All door-account nodes of one base URL and login share one
 * session: a copy that replaces a node in one deploy keeps it (no logout, no login); the last node
 * of a login deleted, every instance of a subflow holding it deleted, or the node moved to another
 * login, logs out once. On several tabs: a halt reaches every tab's Catch node once, a conflict of
 * passwords shows on both nodes with at most one login, Reconnect pressed twice makes one login,
 * a rate-limited shared start one login attempt, and a sign-in then two copies one login.
 */
import { strict as assert } from "node:assert";
import { registrySnapshot } from "../../src/account/registry.js";
import type { RunningSimulator } from "../../src/simulator/index.js";
import {
  type Flow,
  TAB_A,
  TAB_B,
  demoCreds,
  namedAccount,
  subflowFlow,
  tabNode,
  twoTabs,
  unlockOn,
} from "../helpers/account-flows.js";
import {
  DEMO_ACCOUNT,
  assertAccepted,
  count,
  editorPost,
  freshUserDir,
  helper,
  loadFlow,
  logins,
  startSim,
  tab,
  teardown,
  unlock,
  until,
  waitReady,
  waitState,
  deployFlows,
} from "../helpers/flow.js";
import { received } from "../helpers/odd-messages.js";

const ADMIN = "/door-access/accounts";
const PHONE: string = DEMO_ACCOUNT.phoneNumber;
const PASSWORD: string = DEMO_ACCOUNT.password;
const OTHER = { email: "other@example.com", password: "other-password" };

const demoLogouts = (sim: RunningSimulator) => sim.control.requests({ operation: "logout", accountId: "demo" }).length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("door-account nodes of one login keep one session across deploys; the last one gone logs out once (docs/session.md#one-session-per-account)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  beforeEach(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
    await sim.close();
  });

  // Fixed in 88ece48.
  it("replacing the account node by a copy with another id in one deploy neither logs out nor logs in again", async () => {
    const flowA: Flow = [tabNode(TAB_A, "A"), namedAccount("accA", sim.url), ...unlockOn("uA", TAB_A, "accA")];
    await loadFlow(flowA, { creds: demoCreds(["accA"]) });
    await waitReady("accA");
    assertAccepted(await unlock({}, "uA"));
    assert.equal(logins(sim), 1);
    // The operator imports the same flow with its own account node (new id) and deletes the old
    // one, then deploys once: the account is still used by a door-account node afterwards.
    const flowC: Flow = [tabNode(TAB_A, "A"), namedAccount("accC", sim.url), ...unlockOn("uA", TAB_A, "accC")];
    await deployFlows(flowC, "full", demoCreds(["accC"]));
    await waitReady("accC");
    assertAccepted(await unlock({}, "uA"));
    await sleep(200);
    assert.equal(count(sim, "logout"), 0, "no logout: a door-account of this login is still deployed");
    assert.equal(logins(sim), 1, "no second login");
  });

  // Fixed in 88ece48.
  it("deleting the last node of a login soon after another copy moved to another login still logs out", async () => {
    const flow = twoTabs(sim.url);
    await loadFlow(flow, { creds: demoCreds(["accA", "accB"]) });
    await waitReady("accA");
    // accB is changed to another login (modified-nodes deploy).
    const moved = flow.map((n) => (n.id === "accB" ? { ...n, loginMethod: "email" } : n));
    await deployFlows(moved, "nodes", { ...demoCreds(["accA"]), accB: OTHER });
    await until("accB on the other login", () =>
      sim.control.requests({ accountId: "other" }).some((r) => r.operation === "loginByEmail" && r.status === 200),
    );
    await waitReady("accB");
    assert.equal(demoLogouts(sim), 0);
    // accA, now the last node of the demo login, is deleted (modified-nodes deploy).
    const withoutA = moved.filter((n) => n.id !== "accA" && n.z !== TAB_A && n.id !== TAB_A);
    await deployFlows(withoutA, "nodes", { accB: OTHER });
    assert.equal(helper.getNode("accA"), null);
    await until("the demo account's logout", () => demoLogouts(sim) === 1, 5000).catch(() => undefined);
    assert.equal(
      demoLogouts(sim),
      1,
      `the last node of the demo login was deleted: one logout (${JSON.stringify(sim.control.requests().map((r) => [r.operation, r.accountId, r.status]))})`,
    );
  });

  // Fixed in 88ece48.
  it("deleting every instance of a subflow holding the account logs out once", async () => {
    await loadFlow(subflowFlow(sim.url, {}, 2), { creds: demoCreds(["sacc"]) });
    await until("the two cloned accounts ready", () => registrySnapshot().some((e) => e.members === 2 && e.running));
    await waitState("ready", "inst1-sacc");
    assertAccepted(await unlock({}, "inst1"));
    // Delete both instances (modified-nodes deploy): no door-account of that login is left.
    await deployFlows(subflowFlow(sim.url, {}, 0), "nodes", demoCreds(["sacc"]));
    await until("the logout", () => count(sim, "logout") === 1, 5000).catch(() => undefined);
    assert.equal(count(sim, "logout"), 1, `one logout (registry: ${JSON.stringify(registrySnapshot())})`);
  });
});

describe("door-account nodes of one login on two tabs: one halt error per tab, a conflict on both, one login for Reconnect, a rate-limited start and a sign-in (docs/session.md#one-session-per-account)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  beforeEach(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
    await sim.close();
  });

  /** The test helper registers a core node once per node of its type: load with one Catch node, then deploy both. */
  async function loadWithCatches(flow: Flow, creds: Record<string, unknown>): Promise<void> {
    await loadFlow(
      flow.filter((n) => n.id !== "cB"),
      { creds },
    );
    await deployFlows(flow, "full", creds);
  }

  const twoTabsWithCatch = (url: string, scoped = false): Flow => [
    tabNode(TAB_A, "A"),
    tabNode(TAB_B, "B"),
    namedAccount("accA", url, scoped ? { z: TAB_A } : {}),
    namedAccount("accB", url, scoped ? { z: TAB_B } : {}),
    ...unlockOn("uA", TAB_A, "accA"),
    ...unlockOn("uB", TAB_B, "accB"),
    { id: "cA", type: "catch", z: TAB_A, name: "", scope: null, uncaught: false, wires: [["caughtA"]] },
    { id: "caughtA", type: "helper", z: TAB_A },
    { id: "cB", type: "catch", z: TAB_B, name: "", scope: null, uncaught: false, wires: [["caughtB"]] },
    { id: "caughtB", type: "helper", z: TAB_B },
  ];

  it("a halt reaches the Catch node of every tab that uses the account, once per tab", async () => {
    await loadWithCatches(twoTabsWithCatch(sim.url), demoCreds(["accA", "accB"]));
    await waitReady("accA");
    const gotA = received("caughtA");
    const gotB = received("caughtB");
    sim.control.supersede("demo");
    assertAccepted(await unlock({}, "uA"));
    sim.control.supersede("demo");
    await unlock({}, "uB");
    await waitState("halted-superseded", "accA");
    await sleep(200);
    const halts = (l: any[]) => l.filter((m) => m.topic === "door-access/session-halted").length;
    assert.equal(halts(gotA), 1, `tab A: ${JSON.stringify(gotA.map((m) => m.error?.message))}`);
    assert.equal(halts(gotB), 1, `tab B: ${JSON.stringify(gotB.map((m) => m.error?.message))}`);
  });

  it("config nodes scoped to two tabs, different passwords: the conflict on both, at most one login attempt", async () => {
    await loadWithCatches(twoTabsWithCatch(sim.url, true), {
      ...demoCreds(["accA"]),
      ...demoCreds(["accB"], "another"),
    });
    // The reason in full (the dialog, the sidebar); a few words on the canvas (docs/nodes.md#node-status).
    await until("the conflict on both", () =>
      ["accA", "accB"].every((id) => /configuration conflict/.test(helper.getNode(id).problem ?? "")),
    );
    for (const id of ["accA", "accB"])
      assert.equal(helper.getNode(id).statusFor().text, "door-account.state.configuration");
    await sleep(300);
    assert.ok(logins(sim) <= 1, `${logins(sim)} logins`);
  });

  it("reconnect pressed twice quickly on one of two shared nodes: one login, the other node keeps working (no 401)", async () => {
    await loadWithCatches(twoTabsWithCatch(sim.url), demoCreds(["accA", "accB"]));
    await waitReady("accA");
    await Promise.all([
      editorPost(`${ADMIN}/accA/reconnect`).send({}).expect(202),
      editorPost(`${ADMIN}/accA/reconnect`).send({}).expect(202),
    ]);
    await waitState("ready", "accA");
    await sleep(100);
    assertAccepted(await unlock({}, "uB"));
    assertAccepted(await unlock({}, "uA"));
    assert.equal(logins(sim), 2);
    assert.equal(sim.control.requests().filter((r) => r.status === 401).length, 0);
  });

  // docs/session.md#rate-limits: a login the service rate-limited fails messages as rate-limited
  // (with retryAfter), not as service-unreachable (that is for 5xx and the network).
  it("login 429 with Retry-After at the shared start: one login attempt for two nodes; messages fail as rate-limited without a login", async () => {
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 120 });
    await loadWithCatches(twoTabsWithCatch(sim.url), demoCreds(["accA", "accB"]));
    await waitState("unreachable", "accA");
    const a = await unlock({}, "uA");
    const b = await unlock({}, "uB");
    assert.equal(a.msg.payload.outcome, "rate-limited");
    assert.equal(b.msg.payload.outcome, "rate-limited");
    for (const p of [a.msg.payload, b.msg.payload])
      assert.ok(p.retryAfter > 100 && p.retryAfter <= 120, JSON.stringify(p));
    assert.equal(logins(sim), 1);
  });

  it("sign-in from the editor, then deploy of two copies with other ids: 1 login in total", async () => {
    const userDir = freshUserDir();
    await loadFlow([tab()], { creds: {}, userDir });
    await editorPost(`${ADMIN}/x/sign-in`)
      .send({ baseUrl: sim.url, loginMethod: "phone", phoneNumber: PHONE, password: PASSWORD, sessionStore: "file" })
      .expect(200);
    await deployFlows(twoTabs(sim.url), "full", demoCreds(["accA", "accB"]));
    await waitReady("accB");
    assertAccepted(await unlock({}, "uA"));
    assertAccepted(await unlock({}, "uB"));
    assert.equal(logins(sim), 1);
  });
});
