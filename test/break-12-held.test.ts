/**
 * Adversarial review of issue 12: what was tried and held (kept as regression tests; the
 * defects found are in break-12.test.ts). A real Node-RED runtime and the simulator; requests
 * counted in the simulator's request log only.
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../src/simulator/index.js";
import {
  DEMO_ACCOUNT, assertAccepted, editorPost, freshUserDir, helper, loadFlow, logins, startSim, tab, teardown, unlock, until, waitReady, waitState,
} from "./helpers/flow.js";

const ADMIN = "/door-access/accounts";
const PHONE: string = DEMO_ACCOUNT.phoneNumber;
const PASSWORD: string = DEMO_ACCOUNT.password;
const TAB_A = "tabA";
const TAB_B = "tabB";

type Flow = Record<string, unknown>[];

function account(id: string, url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, type: "door-account", name: `account ${id}`, baseUrl: url, loginMethod: "phone", auditLog: "", ...extra };
}
function unlockOn(id: string, z: string, acc: string): Flow {
  return [
    { id, type: "door-unlock", z, name: "", account: acc, deviceId: "101", doorName: "", doorLocation: "", lockId: "", actor: "", rejectRetained: true, wires: [[`${id}-ok`], [`${id}-fail`]] },
    { id: `${id}-ok`, type: "helper", z },
    { id: `${id}-fail`, type: "helper", z },
  ];
}
const demoCreds = (...ids: string[]) => Object.fromEntries(ids.map((id) => [id, { phoneNumber: PHONE, password: PASSWORD }]));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("break-12 (held): tried against issue 12 (Node-RED runtime + simulator)", function () {
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
    await loadFlow(flow.filter((n) => n.id !== "cB"), { creds });
    await helper.setFlows(flow, "full", creds);
  }

  const twoTabsWithCatch = (url: string, scoped = false): Flow => [
    { id: TAB_A, type: "tab", label: "A" }, { id: TAB_B, type: "tab", label: "B" },
    { ...account("accA", url), ...(scoped ? { z: TAB_A } : {}) }, { ...account("accB", url), ...(scoped ? { z: TAB_B } : {}) },
    ...unlockOn("uA", TAB_A, "accA"), ...unlockOn("uB", TAB_B, "accB"),
    { id: "cA", type: "catch", z: TAB_A, name: "", scope: null, uncaught: false, wires: [["caughtA"]] }, { id: "caughtA", type: "helper", z: TAB_A },
    { id: "cB", type: "catch", z: TAB_B, name: "", scope: null, uncaught: false, wires: [["caughtB"]] }, { id: "caughtB", type: "helper", z: TAB_B },
  ];

  it("a halt reaches the Catch node of every tab that uses the account, once per tab", async () => {
    await loadWithCatches(twoTabsWithCatch(sim.url), demoCreds("accA", "accB"));
    await waitReady("accA");
    const gotA: any[] = [];
    const gotB: any[] = [];
    helper.getNode("caughtA").on("input", (m: any) => gotA.push(m));
    helper.getNode("caughtB").on("input", (m: any) => gotB.push(m));
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
    await loadWithCatches(twoTabsWithCatch(sim.url, true), { ...demoCreds("accA"), accB: { phoneNumber: PHONE, password: "another" } });
    await until("the conflict on both", () => ["accA", "accB"].every((id) => /configuration conflict/.test(helper.getNode(id).statusFor().text ?? "")));
    await sleep(300);
    assert.ok(logins(sim) <= 1, `${logins(sim)} logins`);
  });

  it("reconnect pressed twice quickly on one of two shared nodes: one login, the other node keeps working (no 401)", async () => {
    await loadWithCatches(twoTabsWithCatch(sim.url), demoCreds("accA", "accB"));
    await waitReady("accA");
    await Promise.all([editorPost(`${ADMIN}/accA/reconnect`).send({}).expect(202), editorPost(`${ADMIN}/accA/reconnect`).send({}).expect(202)]);
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
    await loadWithCatches(twoTabsWithCatch(sim.url), demoCreds("accA", "accB"));
    await waitState("unreachable", "accA");
    const a = await unlock({}, "uA");
    const b = await unlock({}, "uB");
    assert.equal(a.msg.payload.outcome, "rate-limited");
    assert.equal(b.msg.payload.outcome, "rate-limited");
    for (const p of [a.msg.payload, b.msg.payload]) assert.ok(p.retryAfter > 100 && p.retryAfter <= 120, JSON.stringify(p));
    assert.equal(logins(sim), 1);
  });

  it("sign-in from the editor, then deploy of two copies with other ids: 1 login in total", async () => {
    const userDir = freshUserDir();
    await loadFlow([tab()], { creds: {}, userDir });
    await editorPost(`${ADMIN}/x/sign-in`).send({ baseUrl: sim.url, loginMethod: "phone", phoneNumber: PHONE, password: PASSWORD, sessionStore: "file" }).expect(200);
    await helper.setFlows([{ id: TAB_A, type: "tab", label: "A" }, { id: TAB_B, type: "tab", label: "B" }, account("accA", sim.url), account("accB", sim.url), ...unlockOn("uA", TAB_A, "accA"), ...unlockOn("uB", TAB_B, "accB")], "full", demoCreds("accA", "accB"));
    await waitReady("accB");
    assertAccepted(await unlock({}, "uA"));
    assertAccepted(await unlock({}, "uB"));
    assert.equal(logins(sim), 1);
  });
});
