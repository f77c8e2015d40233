/**
 * One session per account, whatever the flows look like (docs/session.md#one-session-per-account),
 * and a redeploy gives a halted account one fresh start (docs/session.md#halts-and-reconnect).
 * A real Node-RED runtime (node-red-node-test-helper, real deploys through
 * helper.setFlows) and the simulator over loopback; every request counted at the simulator.
 * The same cases with the file store and with the Redis store (a real redis-server).
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import type { SimulatorOptions } from "../../src/simulator/types.js";
import { registrySnapshot } from "../../src/account/registry.js";
import {
  DEMO_ACCOUNT,
  accountOf,
  assertAccepted,
  assertFailed,
  count,
  freshUserDir,
  helper,
  lastStatus,
  loadFlow,
  logins,
  startSim,
  teardown,
  unlock,
  unlockRequests,
  until,
  waitReady,
  waitState,
  deployFlows,
} from "../helpers/flow.js";
import {
  type Flow,
  TAB_A,
  TAB_B,
  demoCreds,
  subflowFlow,
  tabNode,
  twoTabs,
  unlockOn,
} from "../helpers/account-flows.js";
import { RedisServer } from "../helpers/redis.js";
import { needProgram } from "../helpers/programs.js";

const PHONE = DEMO_ACCOUNT.phoneNumber;
const PASSWORD: string = DEMO_ACCOUNT.password;

const answered401 = (sim: RunningSimulator) => sim.control.requests().filter((r) => r.status === 401).length;

async function alternate(sim: RunningSimulator, nodes: string[], n: number): Promise<void> {
  for (let i = 0; i < n; i++) assertAccepted(await unlock({ deviceId: 101 }, nodes[i % nodes.length]));
  assert.equal(unlockRequests(sim), n, `${n} messages, ${n} PUTs`);
}

/** Node-RED's deploy: "full" (every node restarted) or "nodes" (only the changed ones). */
async function deploy(flow: Flow, type: "full" | "nodes", credentials: Record<string, unknown>): Promise<void> {
  await deployFlows(flow, type, credentials);
}

function cases(
  storeName: string,
  store: () => Record<string, unknown>,
  setup: (this: Mocha.Context) => Promise<void>,
  cleanup: () => Promise<void>,
  beforeEachCase: () => void,
): void {
  describe(`all door-account nodes of one login share one session, whatever the flows look like (${storeName} store; docs/session.md#one-session-per-account)`, function () {
    this.timeout(30000);
    let sim: RunningSimulator;
    before(setup);
    after(cleanup);
    beforeEach(async () => {
      beforeEachCase();
      sim = await startSim();
    });
    afterEach(async () => {
      await teardown();
      await sim.close();
    });

    it("two account nodes with the same login on two tabs, 20 messages alternating: 1 login, 0 answers 401, all accepted; a restart resumes it under other node ids: 0 logins", async () => {
      const userDir = freshUserDir();
      await loadFlow(twoTabs(sim.url, store()), { userDir, creds: demoCreds(["accA", "accB"]) });
      await waitReady("accA");
      await waitReady("accB");
      assert.equal(accountOf("accA").account.core, accountOf("accB").account.core, "one shared core");
      await alternate(sim, ["uA", "uB"], 20);
      assert.equal(logins(sim), 1, "one login for the two nodes");
      assert.equal(answered401(sim), 0, "nobody was logged out");
      // Restart (nothing parked any more), the config nodes now with other ids: the pair is
      // stored under the account key, not a node id.
      await teardown();
      sim.control.resetRequests();
      await loadFlow(twoTabs(sim.url, store(), ["accC", "accD"]), { userDir, creds: demoCreds(["accC", "accD"]) });
      await waitReady("accC");
      await alternate(sim, ["uA", "uB"], 20);
      assert.equal(logins(sim), 0, "the restart resumed the stored pair");
      assert.equal(count(sim, "refreshToken"), 0);
      assert.equal(answered401(sim), 0);
    });

    it("a subflow holding a door-account, used by three instances: 1 login, 0 answers 401, all accepted", async () => {
      await loadFlow(subflowFlow(sim.url, store(), 3), { creds: demoCreds(["sacc"]) });
      await until("the three cloned accounts ready", () =>
        registrySnapshot().some((e) => e.members === 3 && e.running),
      );
      await waitState("ready", "inst1-sacc");
      await alternate(sim, ["inst1", "inst2", "inst3"], 21);
      assert.equal(logins(sim), 1);
      assert.equal(answered401(sim), 0);
    });

    it("conflicting passwords for the same login: a clear configuration error on both nodes (status and log), at most one login attempt, nothing sent", async () => {
      const flow = twoTabs(sim.url, store());
      const c = { ...demoCreds(["accA"]), ...demoCreds(["accB"], "another-password") };
      await loadFlow(flow, { creds: c });
      // The whole reason is the node's problem (the dialog, the sidebar, the log); its status a few
      // words (docs/nodes.md#node-status).
      await until("the conflict on both nodes", () =>
        ["accA", "accB"].every((id) => /configuration conflict/.test(accountOf(id).problem ?? "")),
      );
      for (const id of ["accA", "accB"]) {
        assert.equal(accountOf(id).statusFor().text, "door-account.state.configuration");
        const text = accountOf(id).problem as string;
        assert.match(text, /same login on the same base URL with a different password/, text);
        assert.ok(
          !text.includes(PASSWORD) && !text.includes("another-password") && !text.includes(PHONE),
          "no secret in the text",
        );
        const logged = accountOf(id)
          .error.getCalls()
          .filter((call: any) => call.thisValue === accountOf(id))
          .map((call: any) => String(call.args[0]));
        assert.ok(
          logged.some((m: string) => /configuration conflict/.test(m)),
          `${id} logged the conflict: ${JSON.stringify(logged)}`,
        );
      }
      await until(
        "the flow nodes show it",
        () => lastStatus(helper.getNode("uB"))?.text === "door-account.state.configuration",
      );
      const out = assertFailed(await unlock({ deviceId: 101 }, "uA"), "session-halted", null);
      assert.match(out.message, /configuration conflict/);
      await new Promise((r) => setImmediate(r));
      assert.ok(logins(sim) <= 1, `at most one login attempt (${logins(sim)})`);
      assert.equal(unlockRequests(sim), 0);
    });

    it(`delete one of two nodes: no logout, the other goes on; delete both: ${storeName === "file" ? "one logout" : "no logout (the Redis session is shared with other instances: docs/session.md#the-redis-session-store)"}`, async () => {
      const flow = twoTabs(sim.url, store());
      const c = demoCreds(["accA", "accB"]);
      await loadFlow(flow, { creds: c });
      await waitReady("accA");
      const withoutB = flow.filter((n) => n.id !== "accB" && n.z !== TAB_B && n.id !== TAB_B);
      await deploy(withoutB, "nodes", demoCreds(["accA"]));
      assert.equal(helper.getNode("accB"), null);
      assert.equal(count(sim, "logout"), 0, "removing one node does not log the other out");
      assertAccepted(await unlock({ deviceId: 101 }, "uA"));
      assert.equal(logins(sim), 1);
      assert.equal(answered401(sim), 0);
      await deploy([tabNode(TAB_A, "A")], "full", {});
      await until("the account to be gone", () => registrySnapshot().length === 0);
      if (storeName === "file") await until("the logout", () => count(sim, "logout") === 1);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(count(sim, "logout"), storeName === "file" ? 1 : 0);
    });

    it("redeploys: a healthy account keeps its session across a full and a modified-nodes deploy (0 logins); a halted one gets exactly one fresh login", async () => {
      const flow = twoTabs(sim.url, store());
      const c = demoCreds(["accA", "accB"]);
      await loadFlow(flow, { creds: c });
      await waitReady("accA");
      const core = accountOf("accA").account.core;
      await deploy(flow, "full", c);
      await deploy(
        flow.map((n) => (n.id === "accA" ? { ...n, name: "renamed" } : n)),
        "nodes",
        c,
      );
      assert.equal(accountOf("accA").account.core, core, "the same session after both deploys");
      assertAccepted(await unlock({ deviceId: 101 }, "uA"));
      assert.equal(logins(sim), 1, "0 logins for the redeploys");
      // Halt it: a takeover re-logs in once; a second one within the hour halts as superseded.
      sim.control.supersede("demo");
      assertAccepted(await unlock({ deviceId: 101 }, "uA"));
      sim.control.supersede("demo");
      assertFailed(await unlock({ deviceId: 101 }, "uB"), "unauthorized", 401);
      await waitState("halted-superseded", "accA");
      const before = sim.control.counts().logins;
      const loginRequests = logins(sim);
      // The operator's natural recovery: deploy again (full).
      await deploy(flow, "full", c);
      await waitState("ready", "accB");
      assert.equal(logins(sim) - loginRequests, 1, "exactly one login after the redeploy");
      assert.equal(sim.control.counts().logins - before, 1);
      assertAccepted(await unlock({ deviceId: 101 }, "uB"));
      assertAccepted(await unlock({ deviceId: 101 }, "uA"));
      assert.equal(logins(sim) - loginRequests, 1);
    });
  });
}

cases(
  "file",
  () => ({}),
  () => Promise.resolve(),
  () => Promise.resolve(),
  () => undefined,
);

let redis: RedisServer | null = null;
let prefix = 0;
cases(
  "redis",
  () => ({ sessionStore: "redis", redisUrl: redis!.url, redisKeyPrefix: `share${prefix}:` }),
  async function () {
    needProgram(this, "redis-server");
    redis = await RedisServer.start();
  },
  async () => {
    await redis?.stop();
  },
  () => {
    prefix += 1; // a fresh key space per case
  },
);

describe("a halted account (login refused) is given one fresh start by a redeploy, not one per node (docs/session.md#halts-and-reconnect)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  beforeEach(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
    await sim.close();
  });

  it("wrong password: halted after 1 attempt; a full deploy with the same settings: exactly 1 more attempt; with the right password: 1 login, ready", async () => {
    const flow = twoTabs(sim.url, {});
    const wrong = demoCreds(["accA", "accB"], "wrong-password");
    await loadFlow(flow, { creds: wrong });
    await waitState("halted-login-failed", "accA");
    assert.equal(logins(sim), 1);
    await deploy(flow, "full", wrong);
    await until("the fresh attempt", () => logins(sim) === 2);
    await waitState("halted-login-failed", "accA");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(logins(sim), 2, "one fresh start, not one per node");
    await deploy(flow, "full", demoCreds(["accA", "accB"]));
    await waitReady("accB");
    assert.equal(logins(sim), 3);
    assertAccepted(await unlock({ deviceId: 101 }, "uA"));
  });
});

describe("two door-account nodes with different logins (phone and email) to one service account: both nodes are warned, and the halt names the other node (docs/session.md#one-session-per-account)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  afterEach(async () => {
    await teardown();
    await sim?.close();
  });

  /** accP logs in by phone, accE by email: the same account of the simulator. */
  function twoLogins(url: string): Flow {
    return [
      tabNode(TAB_A, "A"),
      { id: "accP", type: "door-account", name: "front desk", baseUrl: url, loginMethod: "phone", auditLog: "" },
      { id: "accE", type: "door-account", name: "back office", baseUrl: url, loginMethod: "email", auditLog: "" },
      ...unlockOn("uP", TAB_A, "accP"),
      ...unlockOn("uE", TAB_A, "accE"),
    ];
  }
  const bothCreds = {
    accP: { phoneNumber: PHONE, password: PASSWORD },
    accE: { email: DEMO_ACCOUNT.email, password: PASSWORD },
  };

  /** Every warning and error the two account nodes wrote. */
  const written = (): string[] =>
    ["accP", "accE"].flatMap((id) => {
      const node = accountOf(id);
      // The test helper's spies are shared by every node: each node's own calls.
      return [...node.warn.getCalls(), ...node.error.getCalls()]
        .filter((c: any) => c.thisValue === node)
        .map((c: any) => `${id}: ${String(c.args[0])}`);
    });

  /** Messages through both nodes in turn until one account halts (each login ends the other's session). */
  async function fightUntilHalted(): Promise<{ halted: string; other: string; reason: string }> {
    for (let i = 0; i < 12; i++) {
      await unlock({ deviceId: 101 }, i % 2 === 0 ? "uP" : "uE");
      for (const [id, other] of [
        ["accP", "accE"],
        ["accE", "accP"],
      ]) {
        const snap = accountOf(id).account.session.snapshot();
        if (snap.state === "halted-superseded") return { halted: id, other, reason: snap.reason };
      }
    }
    return assert.fail(
      `no halt after 12 messages: ${JSON.stringify(["accP", "accE"].map((id) => accountOf(id).account.session.snapshot()))}`,
    );
  }

  async function start(options: SimulatorOptions): Promise<void> {
    sim = await startSim(options);
    await loadFlow(twoLogins(sim.url), { creds: bothCreds });
    // Each login ends the other's session, so their start-ups (login, device list) may already
    // fight to a halt: both settled, ready or halted as superseded (fightUntilHalted sees either).
    const settled = (id: string): boolean =>
      ["ready", "halted-superseded"].includes(accountOf(id).account.session.state as string);
    await until("both accounts past their start-up", () => settled("accP") && settled("accE"));
  }

  it("the tokens name the account (sub): recognised at deploy, one warning on each node naming both; the halt names the other node; never the phone number, email or subject", async () => {
    await start({});
    // The deploy-time warning, not the halt (which may already have come: each login ends the other's session).
    const deployWarnings = (): string[] =>
      written().filter((t) => /same service account/.test(t) && !/session halted/.test(t));
    await until("the warning", () => deployWarnings().length >= 2);
    const warnings = deployWarnings();
    assert.equal(warnings.length, 2, `once on each node: ${JSON.stringify(warnings)}`);
    for (const w of warnings) {
      assert.match(w, /door-account "front desk" \(phone number login\)|door-account "back office" \(email login\)/);
      assert.ok(
        w.includes('door-account "front desk" (phone number login)') &&
          w.includes('door-account "back office" (email login)'),
        w,
      );
      assert.match(w, /the service keeps one session per account, so each login ends the other's session/);
    }
    const { other, reason } = await fightUntilHalted();
    assert.equal(deployWarnings().length, 2, `still once on each node after the halt: ${JSON.stringify(written())}`);
    const otherName =
      other === "accP" ? 'door-account "front desk" (phone number login)' : 'door-account "back office" (email login)';
    assert.match(reason, /another client is using this account|another login has taken over this account/);
    assert.ok(
      reason.includes(`${otherName} of this Node-RED logs in to the same service account with another login`),
      reason,
    );
    for (const text of [...written(), reason]) {
      for (const secret of [PHONE, PHONE.slice(1), DEMO_ACCOUNT.email, PASSWORD, '"demo"'])
        assert.ok(!text.includes(secret), `no login, password or subject in: ${text}`);
    }
  });

  it("tokens without a sub claim: nothing can be recognised at deploy; the halt says another node of this Node-RED on the same base URL may hold the account, and names it", async () => {
    await start({ subClaim: false });
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(
      written().filter((t) => /same service account/.test(t)),
      [],
      "no claim of a shared account without a sign of it",
    );
    const { other, reason } = await fightUntilHalted();
    const otherName =
      other === "accP" ? 'door-account "front desk" (phone number login)' : 'door-account "back office" (email login)';
    assert.ok(
      reason.includes(
        `another door-account node of this Node-RED on the same base URL may hold this account with another login: ${otherName}`,
      ),
      reason,
    );
  });
});

describe("an email login in any letter case is the same login: one account key, one session (docs/session.md#one-session-per-account)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  afterEach(async () => {
    await teardown();
    await sim?.close();
  });

  it("two door-account nodes with the email typed as demo@example.com and DEMO@Example.COM: one shared core, 1 login, 0 answers 401, 20 messages accepted", async () => {
    sim = await startSim();
    const upper = DEMO_ACCOUNT.email.toUpperCase().replace("EXAMPLE.COM", "Example.COM");
    assert.notEqual(upper, DEMO_ACCOUNT.email, "the two emails differ in case");
    const flow: Flow = [
      { id: TAB_A, type: "tab", label: "A" },
      { id: TAB_B, type: "tab", label: "B" },
      { id: "accL", type: "door-account", name: "lower", baseUrl: sim.url, loginMethod: "email", auditLog: "" },
      { id: "accU", type: "door-account", name: "upper", baseUrl: sim.url, loginMethod: "email", auditLog: "" },
      ...unlockOn("uL", TAB_A, "accL"),
      ...unlockOn("uU", TAB_B, "accU"),
    ];
    await loadFlow(flow, {
      creds: { accL: { email: DEMO_ACCOUNT.email, password: PASSWORD }, accU: { email: upper, password: PASSWORD } },
    });
    await waitReady("accL");
    await waitReady("accU");
    assert.equal(accountOf("accL").account.core, accountOf("accU").account.core, "one shared core");
    assert.equal(registrySnapshot().length, 1, "one account in the registry");
    await alternate(sim, ["uL", "uU"], 20);
    assert.equal(logins(sim), 1, "one login for the two nodes");
    assert.equal(answered401(sim), 0, "neither logged the other out");
  });
});
