/**
 * door-account's service description check in a Node-RED runtime against the simulator
 * (docs/service-description.md#what-you-see): what the node says (one warning naming each
 * difference, a debug line for a failed fetch), what the sidebar shows, and that the unlock is
 * accepted in every case. The check on the account alone is in
 * test/account/service-description-check.test.ts. Requests are counted and their headers read in
 * the simulator's request log.
 */
import { strict as assert } from "node:assert";
import { createServer, type Server, type Socket } from "node:net";
import sinon from "sinon";
import { type RequestLogEntry, type RunningSimulator } from "../../src/simulator/index.js";
import {
  CREDS,
  accountModule,
  accountOf,
  assertAccepted,
  doorEventsNode,
  eventsModule,
  helper,
  helperNodes,
  loadFlow,
  pluginModule,
  startSim,
  teardown,
  unlock,
  unlockFlow,
  unlockModule,
  unlockNode,
  until,
  waitReady,
} from "../helpers/flow.js";
import {
  DRIFT_DIFFERENCES,
  assertNoCredential,
  description,
  docsRequests,
  drifted,
  hostileDescriptions,
  irrelevantlyChanged,
} from "../helpers/service-description.js";

/** Calls of a node's log method (Node.prototype's methods are sinon spies under the test helper). */
function logged(node: any, level: "warn" | "debug" | "log" | "error"): string[] {
  const spy = node[level];
  return spy
    .getCalls()
    .filter((c: any) => c.thisValue === node)
    .map((c: any) => String(c.args[0]));
}

const descriptionWarnings = (node: any) => logged(node, "warn").filter((m) => m.includes("service description"));

describe("service description check: in a Node-RED runtime against the simulator (docs/service-description.md#what-you-see)", function () {
  this.timeout(20_000);
  let sim: RunningSimulator;
  const SIDEBAR = "/door-access/sidebar/accounts";

  beforeEach(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
    await sim.close();
  });

  async function deploy(accountExtra: Record<string, unknown> = {}): Promise<any> {
    await loadFlow(unlockFlow(sim.url, { deviceId: "101" }, accountExtra), {
      nodes: [accountModule, unlockModule, pluginModule],
    });
    await waitReady();
    return accountOf();
  }

  /** Waits for the first check to have been answered (or failed) and handled. */
  async function firstCheckDone(node: any): Promise<RequestLogEntry> {
    await until("the description request", () => docsRequests(sim).length === 1, 8000);
    const check = node.account.descriptionCheck;
    await until("the check to finish", () => check.inflight === null, 8000);
    return docsRequests(sim)[0];
  }

  async function sidebarView(): Promise<any> {
    const res = await helper.request().get(SIDEBAR).expect(200);
    return res.body.accounts.find((a: any) => a.id === "acc1");
  }

  it("unchanged: one request after the start-up, no token, nothing said, the unlock accepted", async () => {
    const node = await deploy();
    const entry = await firstCheckDone(node);
    assertNoCredential(entry);
    assert.equal(entry.ifNoneMatch, null, "no ETag known yet");
    assert.equal(entry.status, 200);
    const login = sim.control.requests({ operation: "loginByPhone" });
    assert.equal(login.length, 1);
    assert.ok(entry.seq > login[0].seq, "the description is read after the login, never before it");
    assertAccepted(await unlock({}));
    assert.deepEqual(descriptionWarnings(node), []);
    assert.deepEqual(logged(node, "debug"), []);
    const view = await sidebarView();
    assert.deepEqual(view.serviceDescription.differences, []);
    assert.equal(view.serviceDescription.url, `${sim.url}/openapi.json`);
    assert.ok(view.serviceDescription.checkedAt);
  });

  it("changed in nothing the package relies on: nothing said", async () => {
    sim.control.serveDescription({ description: irrelevantlyChanged() });
    const node = await deploy();
    assert.equal((await firstCheckDone(node)).status, 200);
    assertAccepted(await unlock({}));
    assert.deepEqual(descriptionWarnings(node), []);
    assert.deepEqual((await sidebarView()).serviceDescription.differences, []);
  });

  // docs/events.md#service
  it("drifted: a door-events node gets one service/description-changed with the same differences; the next check of the same description says nothing more", async () => {
    sim.control.serveDescription({ description: drifted() });
    await loadFlow([...unlockFlow(sim.url, { deviceId: "101" }), doorEventsNode("ev"), ...helperNodes("ev-out")], {
      nodes: [accountModule, unlockModule, eventsModule, pluginModule],
    });
    const got: any[] = [];
    helper.getNode("ev-out").on("input", (m: any) => got.push(m));
    await waitReady();
    const node = accountOf();
    await firstCheckDone(node);
    await until("the event", () => got.some((m) => m.topic === "service/description-changed"));
    const changed = got.filter((m) => m.topic === "service/description-changed");
    assert.equal(changed.length, 1);
    assert.deepEqual(changed[0].payload.differences, DRIFT_DIFFERENCES);
    assert.match(changed[0].payload.message, /doors keep working/);
    assertAccepted(await unlock({}));
    assert.equal(got.filter((m) => m.topic === "service/description-changed").length, 1);
  });

  it("drifted (an operation removed, a required request field added): one warning naming each difference, the same list in the sidebar, the unlock accepted", async () => {
    sim.control.serveDescription({ description: drifted() });
    const node = await deploy();
    assertNoCredential(await firstCheckDone(node));
    const warnings = descriptionWarnings(node);
    assert.equal(warnings.length, 1, warnings.join("\n---\n"));
    for (const d of DRIFT_DIFFERENCES) assert.ok(warnings[0].includes(d), `the warning names ${d}`);
    assert.ok(warnings[0].includes(`${sim.url}/openapi.json`));
    assertAccepted(await unlock({}));
    assert.equal(node.account.session.state, "ready");
    assert.deepEqual((await sidebarView()).serviceDescription.differences, DRIFT_DIFFERENCES);
  });

  // the rule in docs/session.md#one-session-per-account: copies of a config node are one
  // account. The description is the service's: one request and one warning, whatever the copies.
  it("two copies of one account node (a copied flow): one description request, one warning, the list in the sidebar for both", async () => {
    sim.control.serveDescription({ description: drifted() });
    const copy = {
      id: "acc2",
      type: "door-account",
      name: "demo (copy)",
      baseUrl: sim.url,
      loginMethod: "phone",
      auditLog: "",
    };
    const flow = [
      ...unlockFlow(sim.url, { deviceId: "101" }),
      copy,
      unlockNode({ deviceId: "101", account: "acc2" }, "u2"),
      ...helperNodes("u2-ok", "u2-fail"),
    ];
    await loadFlow(flow, { nodes: [accountModule, unlockModule, pluginModule], creds: { ...CREDS, acc2: CREDS.acc1 } });
    await waitReady("acc1");
    await waitReady("acc2");
    const nodes = [accountOf("acc1"), accountOf("acc2")];
    await until(
      "each node's check to have read the description",
      () => nodes.every((n) => n.account.descriptionCheck.report().checkedAt !== null),
      8000,
    );
    assert.equal(docsRequests(sim).length, 1, "one request for the description");
    const warnings = nodes.flatMap((n) => descriptionWarnings(n));
    assert.equal(warnings.length, 1, warnings.join("\n---\n"));
    const res = await helper.request().get(SIDEBAR).expect(200);
    for (const id of ["acc1", "acc2"]) {
      assert.deepEqual(
        res.body.accounts.find((a: any) => a.id === id).serviceDescription.differences,
        DRIFT_DIFFERENCES,
        id,
      );
    }
    assertAccepted(await unlock({}, "u2"));
  });

  for (const [what, change] of [
    ["unreachable (the connection closes without an answer)", { drop: true }],
    ["answered 404", { status: 404 }],
    ["a body that is not a description", { body: "<html>maintenance</html>", contentType: "text/html" }],
  ] as const) {
    it(`${what}: one debug line, no warning, the session untouched, the unlock accepted`, async () => {
      sim.control.serveDescription(change);
      const node = await deploy();
      assertNoCredential(await firstCheckDone(node));
      const debug = logged(node, "debug");
      assert.equal(debug.length, 1, debug.join("\n"));
      assert.match(debug[0], /service description check: .*\/openapi\.json could not be read \(.+\); next try in 24 h/);
      assert.deepEqual(descriptionWarnings(node), []);
      assertAccepted(await unlock({}));
      assert.equal(docsRequests(sim).length, 1, "no retry before the next 24-hour mark");
      const view = await sidebarView();
      assert.deepEqual(view.serviceDescription.differences, []);
      assert.equal(view.serviceDescription.checkedAt, null);
    });
  }

  it("a description request that hangs delays no message: the unlock is accepted while it is still open", async () => {
    const sockets = new Set<Socket>();
    const server: Server = createServer((sock) => sockets.add(sock)); // accepts, never answers
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const node = await deploy({ docsUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}` });
      await until("the description request to hang", () => sockets.size === 1, 8000);
      assertAccepted(await unlock({}));
      assert.ok(
        [...sockets].every((sock) => !sock.destroyed),
        "the description request is still open",
      );
      assert.ok(node.account.descriptionCheck.inflight !== null);
      assert.deepEqual(logged(node, "debug"), []);
    } finally {
      await teardown();
      for (const sock of sockets) sock.destroy();
      await new Promise((r) => server.close(r));
    }
  });

  // docs/service-description.md#when: never on a message's path, never delaying a message. A
  // schema whose allOf parts refer back to it (four times) is read in one go on the main thread:
  // had each part been followed anew, ten levels deep, the runtime would stand still for seconds.
  it("a description whose schemas refer back to themselves through allOf is read at once: the runtime never stands still, the unlock is accepted", async () => {
    const d = description();
    d.components.schemas.LoginRequest = {
      allOf: [1, 2, 3, 4].map(() => ({ $ref: "#/components/schemas/LoginRequest" })),
    };
    const chain = [...Array(12).keys()];
    for (const i of chain)
      d.components.schemas[`Part${i}`] = {
        allOf: [1, 2, 3, 4].map(() => ({ $ref: `#/components/schemas/Part${i + 1}` })),
      };
    d.components.schemas.Part12 = d.components.schemas.Device;
    d.components.schemas.Device = { $ref: "#/components/schemas/Part0" };
    sim.control.serveDescription({ description: d });
    let worst = 0;
    let last = performance.now();
    const watch = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 5);
    try {
      const node = await deploy();
      await firstCheckDone(node);
      assertAccepted(await unlock({}));
      assert.deepEqual(descriptionWarnings(node), [], "a schema that refers back to itself is not judged");
    } finally {
      clearInterval(watch);
    }
    assert.ok(worst < 1000, `the runtime stood still for ${Math.round(worst)} ms while the description was read`);
  });

  // docs/service-description.md#when
  it('a description built to be slow (1,000 paths, each a chain of $refs through 500-segment pointers) is given up as "too complex to check", warned once; the runtime never stands still, the unlock is accepted', async () => {
    sim.control.serveDescription({ description: hostileDescriptions()[1][1]() });
    let worst = 0;
    let last = performance.now();
    const watch = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 5);
    try {
      const node = await deploy();
      await firstCheckDone(node);
      assertAccepted(await unlock({}));
      const warned = descriptionWarnings(node);
      assert.equal(warned.length, 1, JSON.stringify(warned));
      assert.match(warned[0], /too complex to check/);
    } finally {
      clearInterval(watch);
    }
    assert.ok(worst < 1000, `the runtime stood still for ${Math.round(worst)} ms while the description was read`);
  });

  // docs/service-description.md#when: the description is parsed and compared in a worker thread.
  it("an ordinary description of nearly 4 MiB is parsed and compared off the event loop: Node-RED's thread never parses it, nothing is said, the unlock is accepted", async () => {
    const d = description();
    const pad = "x".repeat(900);
    let size = JSON.stringify(d).length;
    for (let i = 0; size < 4 * 1024 * 1024 - 20_000; i++) {
      const item = { get: { summary: pad, responses: { "200": { description: `ok ${i}` } } } };
      d.paths[`/extra/${i}`] = item;
      size += JSON.stringify(item).length + `"/extra/${i}":,`.length;
    }
    const body = JSON.stringify(d);
    assert.ok(body.length > 4_000_000 && body.length <= 4 * 1024 * 1024, String(body.length));
    sim.control.serveDescription({ body });
    const parse = sinon.spy(JSON, "parse");
    try {
      const node = await deploy();
      await firstCheckDone(node);
      assertAccepted(await unlock({}));
      assert.deepEqual(descriptionWarnings(node), [], "compared: it differs in nothing the package relies on");
      assert.ok(node.account.descriptionCheck.report().checkedAt !== null, "it was read");
    } finally {
      parse.restore();
    }
    const big = parse.getCalls().filter((c) => typeof c.args[0] === "string" && c.args[0].length > 1024 * 1024);
    assert.equal(big.length, 0, "no JSON.parse of the description on Node-RED's thread");
  });

  it("specCheck off: no request for the description", async () => {
    const node = await deploy({ specCheck: false });
    assert.equal(node.account.descriptionCheck, null);
    assertAccepted(await unlock({}));
    assert.equal(sim.control.requests({ operation: "docs" }).length, 0);
    assert.equal((await sidebarView()).serviceDescription, null);
  });

  it("docsUrl: the description is read there, not at the base URL; a docs URL that is not usable turns the check off with a warning, never the account", async () => {
    const docsSim = await startSim();
    try {
      docsSim.control.serveDescription({ description: drifted() });
      const node = await deploy({ docsUrl: docsSim.url });
      assert.equal(
        (await until("the description request at the docs URL", () => docsRequests(docsSim).length === 1, 8000),
        docsRequests(docsSim)[0].status),
        200,
      );
      await until("the warning", () => descriptionWarnings(node).length === 1, 8000);
      assert.equal(docsRequests(sim).length, 0);
      assertAccepted(await unlock({}));
    } finally {
      await docsSim.close();
    }
    await teardown();
    const node = await deploy({ docsUrl: "http://docs.example" });
    assert.equal(node.account.descriptionCheck, null);
    assert.ok(
      logged(node, "warn").some((m) => /the docs URL must use https.*the service description check is off/.test(m)),
    );
    assertAccepted(await unlock({}));
  });
});
