/**
 * Who may do what through the admin routes this package registers, behind Node-RED's real
 * RED.auth.needsPermission with adminAuth: a user with "*" and a user with "read"
 * (docs/security.md#who-can-do-what-the-admin-routes); what a request from another site may do
 * without adminAuth (docs/security.md#cross-site-requests); what a read-only user learns of an
 * account's login through Node-RED's own credentials route (docs/security.md#secrets).
 *
 * ROUTES is the table of every route: a test compares it with the routes Node-RED's admin app
 * holds, so a route added without a row fails here. Everything a route causes is counted at the
 * simulator's request log, with the account in the state where causing a login is easiest: no
 * session (the service was unreachable) and the login spacing open, so any path that may log
 * in, would.
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { type NodeRedAuth, realAdminAuth, withNeedsPermission } from "../helpers/admin-auth.js";
import {
  DEMO_ACCOUNT,
  EDITOR_HEADERS,
  accountModule,
  accountNode,
  accountOf,
  assertAccepted,
  count,
  devicesModule,
  helper,
  helperNodes,
  loadFlow,
  logins,
  readAudit,
  pluginModule,
  startSim,
  statusModule,
  stopFlows,
  tab,
  teardown,
  unlock,
  unlockModule,
  unlockNode,
  until,
  waitReady,
  waitState,
} from "../helpers/flow.js";
import { resolveFromNodeRed } from "../helpers/runtime.js";
import { recordForLeakScan } from "../hooks/leak-scan.js";
const ACC = "/door-access/accounts";
const SIDEBAR = "/door-access/sidebar/accounts";
const READ = "door-account.read";
const WRITE = "door-account.write";

type Cause = "nothing" | "list-fetch" | "login";
interface Call {
  url: string;
  /** POST body (sent as JSON with the editor's headers); built from the simulator's URL. */
  body?: (simUrl: string) => Record<string, unknown>;
  /** What a read-only user gets: the route's answer on a read route, 403 on a write route. */
  reader: number;
  /** What an admin gets on a route that may cause nothing, when it is not `reader`'s. */
  admin?: number;
}
interface Row {
  method: "GET" | "POST";
  route: string;
  permission: typeof READ | typeof WRITE;
  /** The most the route may cause at the service, whoever asks. */
  mayCause: Cause;
  calls: Call[];
}

/** The deployed account as the editor sends it: its base URL and login, the stored secrets as "__PWRD__". */
const edited = (simUrl: string) => ({
  baseUrl: simUrl,
  loginMethod: "phone",
  phoneNumber: "__PWRD__",
  sessionStore: "file",
});

const ROUTES: Row[] = [
  {
    method: "GET",
    route: `${ACC}/:id/state`,
    permission: READ,
    mayCause: "nothing",
    calls: [{ url: `${ACC}/acc1/state`, reader: 200 }],
  },
  {
    method: "GET",
    route: `${ACC}/:id/devices`,
    permission: READ,
    mayCause: "nothing",
    calls: [
      { url: `${ACC}/acc1/devices`, reader: 200 },
      { url: `${ACC}/acc1/devices?refresh=1`, reader: 400 },
    ],
  },
  {
    method: "POST",
    route: `${ACC}/:id/devices`,
    permission: READ,
    mayCause: "nothing",
    calls: [
      { url: `${ACC}/acc1/devices`, body: edited, reader: 200 },
      { url: `${ACC}/acc1/devices`, body: (u) => ({ ...edited(u), refresh: true }), reader: 400 },
    ],
  },
  {
    method: "POST",
    route: `${ACC}/:id/devices/refresh`,
    permission: WRITE,
    mayCause: "list-fetch",
    calls: [{ url: `${ACC}/acc1/devices/refresh`, body: edited, reader: 403 }],
  },
  {
    method: "POST",
    route: `${ACC}/:id/reconnect`,
    permission: WRITE,
    mayCause: "login",
    calls: [{ url: `${ACC}/acc1/reconnect`, body: () => ({}), reader: 403 }],
  },
  {
    method: "POST",
    route: `${ACC}/:id/sign-in`,
    permission: WRITE,
    mayCause: "login",
    calls: [{ url: `${ACC}/acc1/sign-in`, body: (u) => ({ ...edited(u), password: "__PWRD__" }), reader: 403 }],
  },
  { method: "GET", route: SIDEBAR, permission: READ, mayCause: "nothing", calls: [{ url: SIDEBAR, reader: 200 }] },
  {
    method: "GET",
    route: `${SIDEBAR}/:id/records`,
    permission: READ,
    mayCause: "nothing",
    calls: [{ url: `${SIDEBAR}/acc1/records`, reader: 200 }],
  },
  {
    method: "GET",
    route: `${SIDEBAR}/:id/verify`,
    permission: READ,
    mayCause: "nothing",
    calls: [{ url: `${SIDEBAR}/acc1/verify`, reader: 200 }],
  },
  {
    method: "GET",
    route: `${SIDEBAR}/:id/export.csv`,
    permission: READ,
    mayCause: "nothing",
    calls: [{ url: `${SIDEBAR}/acc1/export.csv`, reader: 200 }],
  },
  {
    method: "GET",
    route: `${SIDEBAR}/:id/passes`,
    permission: READ,
    mayCause: "nothing",
    calls: [{ url: `${SIDEBAR}/acc1/passes`, reader: 200 }],
  },
  // Revoking a pass changes the account's passes, nothing at the service (docs/passes.md#in-the-sidebar).
  {
    method: "POST",
    route: `${SIDEBAR}/:id/passes/:passId/revoke`,
    permission: WRITE,
    mayCause: "nothing",
    calls: [{ url: `${SIDEBAR}/acc1/passes/pass-000000000000/revoke`, body: () => ({}), reader: 403, admin: 404 }],
  },
  // A new code for a live pass: sent on its door-pass node's output, never in the answer; nothing at the service (docs/passes.md#a-new-code).
  {
    method: "POST",
    route: `${SIDEBAR}/:id/passes/:passId/reissue`,
    permission: WRITE,
    mayCause: "nothing",
    calls: [{ url: `${SIDEBAR}/acc1/passes/pass-000000000000/reissue`, body: () => ({}), reader: 403, admin: 404 }],
  },
  // A door-unlock node's lockouts, and the host's end of one: nothing at the service (docs/access-rules.md#ending-a-lockout).
  {
    method: "GET",
    route: `${SIDEBAR}/:id/lockouts`,
    permission: READ,
    mayCause: "nothing",
    calls: [{ url: `${SIDEBAR}/acc1/lockouts`, reader: 200 }],
  },
  {
    method: "POST",
    route: `${SIDEBAR}/:id/lockouts/:nodeId/end`,
    permission: WRITE,
    mayCause: "nothing",
    calls: [{ url: `${SIDEBAR}/acc1/lockouts/no-such-node/end`, body: () => ({}), reader: 403, admin: 404 }],
  },
];

/** Node-RED's real adminAuth: users with "*", with "read", and with flows.read only; a token for each. */
async function adminAuth(): Promise<{ auth: NodeRedAuth; admin: string; reader: string; flowsOnly: string }> {
  const { auth, tokens } = await realAdminAuth([
    { username: "admin", permissions: "*" },
    { username: "reader", permissions: "read" },
    { username: "flows-only", permissions: ["flows.read"] },
  ]);
  return { auth, admin: tokens.admin, reader: tokens.reader, flowsOnly: tokens["flows-only"] };
}

/** The package's modules with Node-RED's real RED.auth, as a runtime with adminAuth gives them. */
function withRealAuth(auth: NodeRedAuth): unknown[] {
  return [
    withNeedsPermission(auth, accountModule),
    devicesModule,
    statusModule,
    unlockModule,
    withNeedsPermission(auth, pluginModule),
  ];
}

/** One request of a row, as the editor sends it (JSON and its headers on a POST), with a bearer token or none. */
function send(row: Row, call: Call, simUrl: string, token: string | null): any {
  let r = row.method === "GET" ? helper.request().get(call.url) : helper.request().post(call.url).set(EDITOR_HEADERS);
  if (token) r = r.set("Authorization", `Bearer ${token}`);
  return row.method === "POST" ? r.send(JSON.stringify(call.body!(simUrl))) : r;
}

/**
 * The account with no session and the login spacing open: the service failed the last login
 * (503 twice: the client's single retry), and the once-a-minute spacing is set to 0, so a path
 * that may log in would log in now. The request log is then emptied.
 */
async function unreachableAndFreeToLogIn(sim: RunningSimulator, adminToken: string | null): Promise<void> {
  sim.control.inject({ kind: "503", endpoint: "loginByPhone", count: 2 });
  let r = helper.request().post(`${ACC}/acc1/reconnect`).set(EDITOR_HEADERS);
  if (adminToken) r = r.set("Authorization", `Bearer ${adminToken}`);
  await r.send("{}").expect(202);
  await waitState("unreachable");
  await until(
    "the failed login to settle",
    () => !accountOf().account.session.busy && sim.control.inFlight().length === 0,
  );
  accountOf().account.session.timings.loginRetryMs = 0;
  sim.control.clearFaults();
  sim.control.resetRequests();
}

/** Nothing was sent to the service and nothing is under way: no login, no renewal, no list fetch. */
function assertNothingCaused(sim: RunningSimulator, what: string): void {
  const session = accountOf().account.session;
  // The service description check fetches /openapi.json once after start-up, on its own
  // schedule and without a token (docs/service-description.md): a late one is not the routes'.
  assert.deepEqual(
    sim.control
      .requests()
      .map((r) => r.operation)
      .filter((op) => op !== "docs"),
    [],
    `${what}: requests at the service`,
  );
  assert.equal(session.busy, false, `${what}: a login or renewal under way`);
  assert.equal(session.state, "unreachable", `${what}: the session state`);
}

describe("admin routes: who may do what, with adminAuth (a '*' user and a 'read' user) (docs/security.md#who-can-do-what-the-admin-routes)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  let tokens: Awaited<ReturnType<typeof adminAuth>>;
  let userDir = "";
  // No service description check: it fetches /openapi.json a second after the start-up on its
  // own (docs/service-description.md#when), which a slow run would count against a route here.
  const flow = () => [
    tab(),
    accountNode(sim.url, { specCheck: false }),
    unlockNode(),
    ...helperNodes("u1-ok", "u1-fail"),
  ];

  before(async () => {
    sim = await startSim();
    tokens = await adminAuth();
    ({ userDir } = await loadFlow(flow(), { nodes: withRealAuth(tokens.auth) }));
    await waitReady();
    assertAccepted(await unlock({ deviceId: 101, actor: "alice" })); // a record for the sidebar's routes to read
    await unreachableAndFreeToLogIn(sim, tokens.admin);
  });
  after(async () => {
    await teardown();
    await sim.close();
  });

  it("the table lists every admin route the package registers", () => {
    const stack: any[] = helper._httpAdmin._router?.stack ?? helper._httpAdmin.router?.stack;
    const registered = stack
      .filter((l: any) => l.route && String(l.route.path).startsWith("/door-access"))
      .flatMap((l: any) => Object.keys(l.route.methods).map((m) => `${m.toUpperCase()} ${l.route.path}`))
      .sort();
    assert.deepEqual(registered, ROUTES.map((r) => `${r.method} ${r.route}`).sort());
  });

  it("without a token or with a bogus one: 401 on every route; a user without door-account.read: 403; nothing sent", async () => {
    for (const row of ROUTES) {
      for (const call of row.calls) {
        const none = await send(row, call, sim.url, null);
        assert.equal(none.status, 401, `${row.method} ${call.url} without a token`);
        const bogus = await send(row, call, sim.url, "not-a-token");
        assert.equal(bogus.status, 401, `${row.method} ${call.url} with a bogus token`);
        const other = await send(row, call, sim.url, tokens.flowsOnly);
        assert.equal(other.status, 403, `${row.method} ${call.url} as a user with flows.read only`);
        assert.ok(
          !/alice|Front Door/.test(none.text + bogus.text + other.text),
          `${row.method} ${call.url}: nothing of the account in a refusal`,
        );
      }
    }
    assertNothingCaused(sim, "refused requests");
  });

  for (const row of ROUTES) {
    const statuses = row.calls.map((c) => c.reader).join(", ");
    it(`${row.method} ${row.route} (${row.permission}; may cause: ${row.mayCause}) as a read-only user: ${statuses}, no login, no request to the service`, async () => {
      for (const call of row.calls) {
        const res = await send(row, call, sim.url, tokens.reader);
        recordForLeakScan(`${row.method} ${call.url} as reader`, res.text);
        assertNothingCaused(sim, `${row.method} ${call.url} as a read-only user`);
        assert.equal(res.status, call.reader, `${row.method} ${call.url}: ${res.status} ${res.text}`);
      }
    });
  }

  it("as an admin, every route that may cause nothing causes nothing, also while the account may log in", async () => {
    for (const row of ROUTES.filter((r) => r.mayCause === "nothing")) {
      for (const call of row.calls) {
        const res = await send(row, call, sim.url, tokens.admin);
        assert.equal(
          res.status,
          call.admin ?? call.reader,
          `${row.method} ${call.url} as admin: ${res.status} ${res.text}`,
        );
      }
    }
    assertNothingCaused(sim, "the admin's reads");
  });

  it("as an admin, a forced list refresh never logs in: without a session it answers 503 and sends nothing", async () => {
    const row = ROUTES.find((r) => r.mayCause === "list-fetch")!;
    const res = await send(row, row.calls[0], sim.url, tokens.admin);
    assert.equal(res.status, 503, res.text);
    assert.match(res.body.error, /no session|Reconnect/i);
    assertNothingCaused(sim, "a refresh without a session");
  });

  it("as an admin, Reconnect logs in once; then forced refreshes fetch the list at most once per 10 s per account, and Sign-in of the running login logs in no more", async () => {
    await helper
      .request()
      .post(`${ACC}/acc1/reconnect`)
      .set(EDITOR_HEADERS)
      .set("Authorization", `Bearer ${tokens.admin}`)
      .send("{}")
      .expect(202);
    await waitReady();
    await until("no login under way", () => !accountOf().account.session.busy && sim.control.inFlight().length === 0);
    assert.equal(logins(sim), 1, "one login for one Reconnect");
    const refresh = ROUTES.find((r) => r.mayCause === "list-fetch")!;
    const before = count(sim, "listUserDevices");
    const first = await send(refresh, refresh.calls[0], sim.url, tokens.admin);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.devices.length, 8);
    for (let i = 0; i < 4; i++) {
      const again = await send(refresh, refresh.calls[0], sim.url, tokens.admin);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.throttled, true, again.text);
    }
    assert.equal(count(sim, "listUserDevices") - before, 1, "one list fetch for five presses within 10 s");
    const signIn = ROUTES.find((r) => r.route.endsWith("/sign-in"))!;
    const res = await send(signIn, signIn.calls[0], sim.url, tokens.admin);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.already, true);
    assert.equal(logins(sim), 1, "no second login");
    assert.deepEqual(
      sim.control
        .requests()
        .filter((r) => !/^(loginByPhone|listUserDevices)$/.test(r.operation))
        .map((r) => r.operation),
      [],
    );
  });

  it("the refresh interval is the account's: a redeploy that gives the same login a new session core does not open it again", async () => {
    const refresh = ROUTES.find((r) => r.mayCause === "list-fetch")!;
    const first = await send(refresh, refresh.calls[0], sim.url, tokens.admin);
    assert.equal(first.status, 200, first.text);
    const core = accountOf().account.core;
    // Another password, then the right one again: each a new core for the same login, which checks
    // the password with one login (docs/session.md#changed-credentials-are-checked).
    await stopFlows();
    await loadFlow(flow(), {
      userDir,
      nodes: withRealAuth(tokens.auth),
      creds: { acc1: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: "changed-password" } },
    });
    await waitState("halted-login-failed");
    await stopFlows();
    await loadFlow(flow(), { userDir, nodes: withRealAuth(tokens.auth) });
    await waitReady();
    assert.notEqual(accountOf().account.core, core, "a new session core");
    sim.control.resetRequests();
    const again = await send(refresh, refresh.calls[0], sim.url, tokens.admin);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.throttled, true, again.text);
    assert.equal(count(sim, "listUserDevices"), 0);
  });
});

describe("admin routes: a request from another site, without adminAuth, is refused unless it is the editor's JSON (docs/security.md#cross-site-requests)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSim();
    await loadFlow(
      [tab(), accountNode(sim.url, { specCheck: false }), unlockNode(), ...helperNodes("u1-ok", "u1-fail")],
      { nodes: [accountModule, devicesModule, statusModule, unlockModule, pluginModule] },
    ); // no description check: as above
    await waitReady();
    await unreachableAndFreeToLogIn(sim, null);
  });
  after(async () => {
    await teardown();
    await sim.close();
  });

  // What a page on another origin can send without a CORS preflight: a form (urlencoded or
  // multipart), or fetch/sendBeacon with text/plain; none can add a custom header.
  // The form carries the fields the route reads, as a hostile page would write them.
  const form = (b: Record<string, unknown>) =>
    new URLSearchParams(Object.entries(b).map(([k, v]) => [k, String(v)])).toString();
  const crossSite: {
    what: string;
    type: string | null;
    body: (b: Record<string, unknown>) => string;
    header: boolean;
  }[] = [
    {
      what: "a form post (application/x-www-form-urlencoded)",
      type: "application/x-www-form-urlencoded",
      body: form,
      header: false,
    },
    { what: "a text/plain post", type: "text/plain", body: (b) => JSON.stringify(b), header: false },
    { what: "a post without a body", type: null, body: () => "", header: false },
    {
      what: "JSON without the editor's X-Requested-With",
      type: "application/json",
      body: (b) => JSON.stringify(b),
      header: false,
    },
    {
      what: "the editor's header with a form body",
      type: "application/x-www-form-urlencoded",
      body: form,
      header: true,
    },
  ];

  for (const row of ROUTES.filter((r) => r.method === "POST")) {
    it(`POST ${row.route} (may cause: ${row.mayCause}) is refused with 403 unless it is JSON with the editor's header: no login, nothing sent`, async () => {
      for (const call of row.calls) {
        for (const c of crossSite) {
          let r = helper.request().post(call.url);
          if (c.type) r = r.set("Content-Type", c.type);
          if (c.header) r = r.set("X-Requested-With", "XMLHttpRequest");
          const body = c.body(call.body!(sim.url));
          const res = await (body ? r.send(body) : r);
          assert.equal(res.status, 403, `${c.what} to ${call.url}: ${res.status} ${res.text}`);
          assert.match(res.body.error, /application\/json.*X-Requested-With/, res.text);
        }
      }
      assertNothingCaused(sim, `cross-site posts to ${row.route}`);
    });
  }

  // Node-RED 4 answers every preflight of its admin API with Access-Control-Allow-Origin: *
  // (@node-red/editor-api applies cors({ origin: "*" }) whatever httpAdminCors says), so a page on
  // another site may send JSON with X-Requested-With and read the answer. What tells such a
  // request apart is what the browser adds and a page cannot change: Sec-Fetch-Site, Origin.
  const EDITOR_HOST = "editor.example:1880";
  const fromPage: { what: string; headers: Record<string, string> }[] = [
    { what: "a page on another site", headers: { Origin: "http://evil.example", "Sec-Fetch-Site": "cross-site" } },
    {
      what: "a page on another port of the same host (same-site)",
      headers: { Origin: "http://editor.example:8080", "Sec-Fetch-Site": "same-site" },
    },
    { what: "a page on another site, in a browser without Sec-Fetch-Site", headers: { Origin: "http://evil.example" } },
    { what: "a sandboxed page (Origin: null)", headers: { Origin: "null" } },
  ];

  for (const row of ROUTES) {
    it(`${row.method} ${row.route}: a request a page on another site makes, with the editor's headers (Node-RED 4 grants its preflight), is refused with 403: nothing sent, nothing of the account in the answer`, async () => {
      for (const call of row.calls) {
        for (const p of fromPage) {
          let r =
            row.method === "GET" ? helper.request().get(call.url) : helper.request().post(call.url).set(EDITOR_HEADERS);
          r = r.set("Host", EDITOR_HOST).set(p.headers);
          const res = await (row.method === "POST" ? r.send(JSON.stringify(call.body!(sim.url))) : r);
          assert.equal(res.status, 403, `${p.what}: ${row.method} ${call.url}: ${res.status} ${res.text}`);
          assert.ok(
            !/Front Door|alice|acc1|"state"/.test(res.text),
            `${p.what}: ${row.method} ${call.url} answered with the account: ${res.text}`,
          );
        }
      }
      assertNothingCaused(sim, `${row.route} from another site`);
    });
  }

  it("the editor's own page (same origin) is served: Sec-Fetch-Site same-origin, or an Origin naming the editor's host", async () => {
    for (const headers of [
      { Origin: `http://${EDITOR_HOST}`, "Sec-Fetch-Site": "same-origin" },
      { Origin: `http://${EDITOR_HOST}` },
      { "Sec-Fetch-Site": "none" },
    ]) {
      const res = await helper.request().get(`${ACC}/acc1/state`).set("Host", EDITOR_HOST).set(headers);
      assert.equal(res.status, 200, `${JSON.stringify(headers)}: ${res.text}`);
    }
    assertNothingCaused(sim, "same-origin reads");
  });

  it("the editor's request (JSON with X-Requested-With) is accepted: Reconnect logs in once", async () => {
    await helper.request().post(`${ACC}/acc1/reconnect`).set(EDITOR_HEADERS).send("{}").expect(202);
    await waitReady();
    assert.equal(logins(sim), 1);
  });
});

describe("admin routes: an account's login is a secret, also in Node-RED's own credentials route (docs/security.md#secrets)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  let tokens: Awaited<ReturnType<typeof adminAuth>>;
  const emailCreds = { acc1: { email: DEMO_ACCOUNT.email, password: DEMO_ACCOUNT.password } };

  before(async () => {
    sim = await startSim();
    tokens = await adminAuth();
    // An email account deployed as before (its credentials file unchanged): it still logs in.
    await loadFlow([tab(), accountNode(sim.url, { loginMethod: "email" })], {
      nodes: withRealAuth(tokens.auth),
      creds: emailCreds,
    });
    await waitReady();
    // Node-RED's GET /credentials/:type/:id (what the editor reads when a dialog opens), mounted
    // on the test runtime's admin app as Node-RED's editor API mounts it.
    const editorApi = path.dirname(resolveFromNodeRed("@node-red/editor-api/package.json"));
    const runtimeDir = path.dirname(resolveFromNodeRed("@node-red/runtime/package.json"));
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a module inside the selected Node-RED, found at run time
    const flowsApi = require(path.join(runtimeDir, "lib", "api", "flows"));
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a module inside the selected Node-RED, found at run time
    const credentialsRoute = require(path.join(editorApi, "lib", "editor", "credentials"));
    flowsApi.init({ log: { audit: () => undefined }, nodes: helper._redNodes });
    credentialsRoute.init({ flows: flowsApi });
    helper._httpAdmin.get(
      "/credentials/:type/:id",
      tokens.auth.needsPermission("credentials.read"),
      credentialsRoute.get,
    );
  });
  after(async () => {
    await teardown();
    await sim.close();
  });

  it("a read-only user reading the account's credentials learns that an email and a password are stored, not the email", async () => {
    assert.equal(count(sim, "loginByEmail"), 1, "the email account of an existing flow logged in");
    const res = await helper
      .request()
      .get("/credentials/door-account/acc1")
      .set("Authorization", `Bearer ${tokens.reader}`)
      .expect(200);
    recordForLeakScan("GET /credentials/door-account/acc1 as reader", res.text);
    assert.ok(!res.text.includes(DEMO_ACCOUNT.email), `the email in ${res.text}`);
    assert.equal(res.body.email, undefined);
    assert.equal(res.body.has_email, true);
    assert.equal(res.body.has_password, true);
    assert.equal(res.body.has_phoneNumber, false);
  });

  // docs/security.md#who-can-do-what-the-admin-routes: a read-only user never learns the login.
  it("a read-only user cannot test a guessed login: the door list of an account as edited answers alike for the right and a wrong typed email or phone number", async () => {
    sim.control.resetRequests();
    const ask = async (login: Record<string, string>) => {
      const res = await helper
        .request()
        .post(`${ACC}/acc1/devices`)
        .set(EDITOR_HEADERS)
        .set("Authorization", `Bearer ${tokens.reader}`)
        .send(JSON.stringify({ baseUrl: sim.url, sessionStore: "file", ...login }));
      recordForLeakScan("POST devices with a typed login as reader", res.text);
      return { status: res.status as number, body: res.body as Record<string, unknown> };
    };
    const right = await ask({ loginMethod: "email", email: DEMO_ACCOUNT.email });
    const wrong = await ask({ loginMethod: "email", email: "someone.else@example.com" });
    assert.deepEqual(right, wrong, "the answer tells whether the typed email is the running account's login");
    assert.equal(right.status, 403, JSON.stringify(right.body));
    assert.equal(right.body.devices, undefined, "no door list for a typed login");
    const rightPhone = await ask({ loginMethod: "phone", phoneNumber: DEMO_ACCOUNT.phoneNumber });
    const wrongPhone = await ask({ loginMethod: "phone", phoneNumber: "+15550009999" });
    assert.deepEqual(rightPhone, wrongPhone);
    // The dialog of the deployed account (its stored login as "__PWRD__") still lists its doors.
    const stored = await ask({ loginMethod: "email", email: "__PWRD__" });
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    // An admin may look a typed login up (the picker of an account not deployed yet).
    const admin = await helper
      .request()
      .post(`${ACC}/acc1/devices`)
      .set(EDITOR_HEADERS)
      .set("Authorization", `Bearer ${tokens.admin}`)
      .send(
        JSON.stringify({ baseUrl: sim.url, sessionStore: "file", loginMethod: "email", email: DEMO_ACCOUNT.email }),
      );
    assert.equal(admin.status, 200, admin.text);
    assert.deepEqual(
      sim.control.requests().map((r) => r.operation),
      [],
      "nothing sent",
    );
  });

  it("the editor sends a stored email it was never shown as '__PWRD__': the picker finds the running session, Sign-in logs in no more", async () => {
    sim.control.resetRequests();
    const list = await helper
      .request()
      .post(`${ACC}/acc1/devices`)
      .set(EDITOR_HEADERS)
      .set("Authorization", `Bearer ${tokens.reader}`)
      .send(JSON.stringify({ baseUrl: sim.url, loginMethod: "email", email: "__PWRD__", sessionStore: "file" }));
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.devices.length, 8);
    const signIn = await helper
      .request()
      .post(`${ACC}/acc1/sign-in`)
      .set(EDITOR_HEADERS)
      .set("Authorization", `Bearer ${tokens.admin}`)
      .send(
        JSON.stringify({
          baseUrl: sim.url,
          loginMethod: "email",
          email: "__PWRD__",
          password: "__PWRD__",
          sessionStore: "file",
        }),
      );
    assert.equal(signIn.status, 200, signIn.text);
    assert.equal(signIn.body.already, true);
    assert.deepEqual(
      sim.control.requests().map((r) => r.operation),
      [],
      "nothing sent",
    );
  });
});

describe("admin routes: the host ends a door-unlock's lockout from the sidebar, with door-account.write only (docs/access-rules.md#ending-a-lockout)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  let tokens: Awaited<ReturnType<typeof adminAuth>>;
  let userDir = "";

  before(async () => {
    sim = await startSim({ rateLimit: false });
    tokens = await adminAuth();
    ({ userDir } = await loadFlow(
      [
        tab(),
        accountNode(sim.url, { specCheck: false }),
        unlockNode({ deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1", acceptPasses: true }),
        ...helperNodes("u1-ok", "u1-fail"),
      ],
      { nodes: withRealAuth(tokens.auth) },
    ));
    await waitReady();
  });
  after(async () => {
    await teardown();
    await sim.close();
  });

  const lockouts = async (token: string) => {
    const r = await helper.request().get(`${SIDEBAR}/acc1/lockouts`).set("Authorization", `Bearer ${token}`);
    assert.equal(r.status, 200, r.text);
    return r.body.lockouts as any[];
  };
  const end = (token: string, body: Record<string, unknown>) =>
    helper
      .request()
      .post(`${SIDEBAR}/acc1/lockouts/u1/end`)
      .set(EDITOR_HEADERS)
      .set("Authorization", `Bearer ${token}`)
      .send(JSON.stringify(body));

  it("a locked door is listed to a reader; the reader cannot end it (403, still locked); the admin ends it: the door opens again, one lockout-ended audit record and one rule/lockout-ended event name editor:admin, nothing sent to the service", async () => {
    const events: any[] = [];
    const stop = accountOf().account.core.events.subscribe(["rule"], (e: any) => events.push(e));
    for (let i = 1; i <= 5; i++) {
      const r = await unlock({ pass: String(90_000_000 + i), deviceId: 102 });
      assert.equal(r.port, 1);
    }
    const listed = await lockouts(tokens.reader);
    assert.deepEqual(
      listed.map((l) => [l.node, l.deviceId, l.door, l.wrongPins]),
      [["u1", 102, "Main Street 1 / Back Door", 5]],
    );
    sim.control.resetRequests();
    const refused = await end(tokens.reader, { deviceId: 102 });
    assert.equal(refused.status, 403, refused.text);
    assert.equal((await lockouts(tokens.admin)).length, 1, "a reader ended nothing");
    const ended = await end(tokens.admin, { deviceId: 102 });
    assert.equal(ended.status, 200, ended.text);
    assert.deepEqual(ended.body.ended, [{ deviceId: 102, door: "Main Street 1 / Back Door" }]);
    assert.deepEqual(await lockouts(tokens.admin), []);
    assert.deepEqual(sim.control.requests(), [], "ending a lockout sends nothing to the service");
    await until("rule/lockout-ended", () => events.some((e) => e.event === "lockout-ended"));
    stop();
    const told = events.filter((e) => e.event === "lockout-ended");
    assert.deepEqual(
      told.map((e) => [e.deviceId, e.by]),
      [[102, "editor:admin"]],
    );
    await until("the audit record", () => readAudit(userDir).some((r) => r.type === "lockout-ended"));
    const records = readAudit(userDir).filter((r) => r.type === "lockout-ended");
    assert.deepEqual(
      records.map((r) => [r.actor, r.deviceId, r.ended]),
      [["editor:admin", 102, ["door 102"]]],
    );
    const r = await unlock({ pass: "90000099", deviceId: 102 });
    assert.equal(r.msg.payload.reason, "pass", "the door takes codes again");
  });
});
