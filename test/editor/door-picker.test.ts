/**
 * The door picker before the first deploy (docs/doors.md#picking-a-door-in-the-editor): the editor's sign-in endpoint
 * (POST /door-access/accounts/:id/sign-in, door-account.write) and the picker's list of an
 * account being edited (POST /door-access/accounts/:id/devices, door-account.read), behind
 * Node-RED's real RED.auth.needsPermission with adminAuth. Counted at the simulator: one login
 * from the dialog, and the deploy that follows resumes it (docs/session.md#one-session-per-account:
 * the stored pair belongs to the account key, not to a node id).
 */
import { strict as assert } from "node:assert";
import { createRequire } from "node:module";
import * as path from "node:path";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { closeAllParked, registrySnapshot } from "../../src/account/registry.js";
import {
  ALL_NODES,
  DEMO_ACCOUNT,
  EDITOR_HEADERS,
  accountModule,
  accountOf,
  assertAccepted,
  count,
  devicesModule,
  freshUserDir,
  helper,
  helperNodes,
  loadFlow,
  logins,
  startSim,
  statusModule,
  tab,
  teardown,
  unlock,
  unlockModule,
  unlockNode,
  unlockRequests,
  until,
  waitReady,
  deployFlows,
} from "../helpers/flow.js";
import { resolveFromNodeRed } from "../helpers/runtime.js";
import { RedisServer } from "../helpers/redis.js";
import { needProgram } from "../helpers/programs.js";
import { ops } from "../helpers/session.js";

const ADMIN = "/door-access/accounts";
// Node-RED's editor-api internals are CommonJS, found by path at run time.
const requireCjs = createRequire(__filename);
const PHONE: string = DEMO_ACCOUNT.phoneNumber;
const PASSWORD: string = DEMO_ACCOUNT.password;

function assertNoSecret(text: string): void {
  assert.ok(!/eyJ[A-Za-z0-9_-]{10,}/.test(text), `nothing JWT-like in the response: ${text}`);
  assert.ok(!/rt_[A-Za-z0-9]/.test(text), "no refresh token");
  assert.ok(!text.includes(PASSWORD) && !text.includes("wrong-password"), "no password");
  assert.ok(!text.includes(PHONE) && !text.includes(PHONE.slice(1)), "no phone number");
}

describe("door picker before the first deploy: one sign-in from the editor lists the doors and the deploy resumes it (docs/doors.md#picking-a-door-in-the-editor; real needsPermission; Node-RED runtime + simulator)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  let adminToken = "";
  let readerToken = "";
  let nodes: unknown[] = [];
  const userDir = freshUserDir();

  before(async () => {
    const editorApi = path.dirname(resolveFromNodeRed("@node-red/editor-api/package.json"));
    const auth = requireCjs(path.join(editorApi, "lib", "auth"));
    const tokens = requireCjs(path.join(editorApi, "lib", "auth", "tokens"));
    auth.init(
      {
        adminAuth: {
          type: "credentials",
          users: [
            {
              username: "admin",
              password: "$2y$08$unused.hash.unused.hash.unused.hash.unused.hash.unus",
              permissions: "*",
            },
            {
              username: "reader",
              password: "$2y$08$unused.hash.unused.hash.unused.hash.unused.hash.unus",
              permissions: "read",
            },
          ],
        },
      },
      { getSessions: () => Promise.resolve({}), saveSessions: () => Promise.resolve() },
    );
    adminToken = (await tokens.create("admin", "node-red-editor", "*")).accessToken;
    readerToken = (await tokens.create("reader", "node-red-editor", "read")).accessToken;
    const withRealAuth = (red: any) => {
      red.auth = { needsPermission: auth.needsPermission };
      return accountModule(red);
    };
    nodes = [withRealAuth, devicesModule, statusModule, unlockModule];
    sim = await startSim();
    // The runtime runs with an empty flow: the account being edited is not deployed.
    await loadFlow([tab()], { userDir, nodes, creds: {} });
  });
  after(async () => {
    await teardown();
    await sim.close();
  });

  const typed = () => ({
    baseUrl: sim.url,
    loginMethod: "phone",
    phoneNumber: PHONE,
    password: PASSWORD,
    sessionStore: "file",
  });
  const post = (route: string, token: string | null, body: unknown) => {
    const r = helper.request().post(`${ADMIN}/new-acc/${route}`).set(EDITOR_HEADERS);
    return (token ? r.set("Authorization", `Bearer ${token}`) : r).send(body);
  };

  it("the picker of an undeployed account with no session for its login: 503 with a sign-in offer, nothing sent", async () => {
    const res = await post("devices", adminToken, {
      baseUrl: sim.url,
      loginMethod: "phone",
      phoneNumber: PHONE,
    }).expect(503);
    assert.equal(res.body.signIn, true);
    assert.match(res.body.error, /sign in|no-session/i);
    assertNoSecret(res.text);
    assert.equal(sim.control.requests().length, 0);
  });

  it("sign-in needs door-account.write: without a token 401, with a read-only user 403; no login either way", async () => {
    await post("sign-in", null, typed()).expect(401);
    await post("sign-in", readerToken, typed()).expect(403);
    await post("devices", null, typed()).expect(401);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(logins(sim), 0);
  });

  it("a wrong password: 422 'the service refused the login', one attempt, no secret in the answer; nothing kept", async () => {
    const res = await post("sign-in", adminToken, { ...typed(), password: "wrong-password" }).expect(422);
    assert.match(res.body.error, /refused|sign-in-refused/);
    assertNoSecret(res.text);
    assert.equal(logins(sim), 1);
  });

  it("sign in with the typed credentials: 1 login; the picker lists the doors (no second login); the response never carries a token, password or phone number", async () => {
    sim.control.resetRequests();
    const res = await post("sign-in", adminToken, typed()).expect(200);
    assert.equal(res.body.signedIn, true);
    assert.equal(res.body.already, false);
    assertNoSecret(res.text);
    assert.equal(logins(sim), 1);
    const list = await post("devices", adminToken, {
      baseUrl: sim.url,
      loginMethod: "phone",
      phoneNumber: PHONE,
    }).expect(200);
    assert.equal(list.body.devices.length, 8);
    assert.ok(list.body.devices.some((d: any) => d.id === 101 && d.name === "Front Door"));
    assertNoSecret(list.text);
    // A second press signs in to nothing new: the running session is used.
    const again = await post("sign-in", adminToken, typed()).expect(200);
    assert.equal(again.body.already, true);
    assert.equal(logins(sim), 1);
  });

  it("then the deploy resumes the signed-in session: still 1 login in total, and an unlock is one PUT", async () => {
    const flow = [
      tab(),
      { id: "new-acc", type: "door-account", name: "new", baseUrl: sim.url, loginMethod: "phone", auditLog: "" },
      unlockNode({ account: "new-acc", deviceId: "101" }),
      ...helperNodes("u1-ok", "u1-fail"),
    ];
    await deployFlows(flow, "full", { "new-acc": { phoneNumber: PHONE, password: PASSWORD } });
    await waitReady("new-acc");
    assertAccepted(await unlock({}));
    assert.equal(logins(sim), 1, "no second login after the deploy");
    assert.equal(unlockRequests(sim), 1);
    assert.equal(count(sim, "refreshToken"), 0);
  });

  it("a deployed account edited again: '__PWRD__' (the stored credential the editor is never shown) finds its session", async () => {
    const res = await post("devices", adminToken, {
      baseUrl: sim.url,
      loginMethod: "phone",
      phoneNumber: "__PWRD__",
    }).expect(200);
    assert.equal(res.body.devices.length, 8);
    const signIn = await post("sign-in", adminToken, {
      baseUrl: sim.url,
      loginMethod: "phone",
      phoneNumber: "__PWRD__",
      password: "__PWRD__",
    }).expect(200);
    assert.equal(signIn.body.already, true);
    assert.equal(logins(sim), 1);
  });

  it("a sign-in with another password for the login a deployed node uses: 409, the password cannot be checked without ending that session; no login", async () => {
    const res = await helper
      .request()
      .post(`${ADMIN}/other-id/sign-in`)
      .set(EDITOR_HEADERS)
      .set("Authorization", `Bearer ${adminToken}`)
      .send({ ...typed(), password: "wrong-password" })
      .expect(409);
    assert.match(
      res.body.error,
      /door-account "new" runs a session of this login with another password: the password typed cannot be checked without ending that session/,
    );
    assertNoSecret(res.text);
    assert.equal(logins(sim), 1);
  });
});

describe("a sign-in never reports success for a password that is not the account's, and never logs in over a session that runs (docs/session.md#signing-in-from-the-editor; Node-RED runtime + simulator)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  const userDir = freshUserDir();
  const right = () => ({
    baseUrl: sim.url,
    loginMethod: "phone",
    phoneNumber: PHONE,
    password: PASSWORD,
    sessionStore: "file",
  });
  const wrong = () => ({ ...right(), password: "wrong-password" });
  const signIn = (id: string, body: unknown) =>
    helper.request().post(`${ADMIN}/${id}/sign-in`).set(EDITOR_HEADERS).send(body);
  const accountFlow = (password: string) => ({
    flow: [
      tab(),
      { id: "acc1", type: "door-account", name: "front desk", baseUrl: sim.url, loginMethod: "phone", auditLog: "" },
      unlockNode({ deviceId: "101" }),
      ...helperNodes("u1-ok", "u1-fail"),
    ],
    creds: { acc1: { phoneNumber: PHONE, password } },
  });

  before(async () => {
    sim = await startSim();
    await loadFlow([tab()], { userDir, nodes: ALL_NODES, creds: {} });
  });
  after(async () => {
    await teardown();
    await sim.close();
  });

  it("a token pair is stored and no session runs here: a wrong password is checked by one login and refused (422); the right one: one login, signed in", async () => {
    await signIn("new-acc", right()).expect(200);
    await closeAllParked(); // the sign-in's session is no longer running here; its pair stays stored
    sim.control.resetRequests();
    const refused = await signIn("new-acc", wrong()).expect(422);
    assert.match(refused.body.error, /refused/);
    assert.notEqual(refused.body.signedIn, true);
    assertNoSecret(refused.text);
    assert.deepEqual(
      ops(sim),
      ["loginByPhone 401"],
      "the password typed was checked by a login, not taken on the stored pair's word",
    );
    const ok = await signIn("new-acc", right()).expect(200);
    assert.equal(ok.body.signedIn, true);
    assert.equal(ok.body.already, false);
    assert.deepEqual(ops(sim), ["loginByPhone 401", "loginByPhone 200"]);
  });

  it("a session signed in from the editor runs: another password sends nothing, is no success, and the answer says it cannot be checked without ending that session; the session goes on", async () => {
    sim.control.resetRequests();
    const res = await signIn("new-acc", wrong()).expect(409);
    assert.equal(res.body.signedIn, undefined);
    assert.match(
      res.body.error,
      /an earlier sign-in from the editor runs a session of this login with another password: the password typed cannot be checked without ending that session, so nothing was sent/,
    );
    assertNoSecret(res.text);
    const list = await helper
      .request()
      .post(`${ADMIN}/new-acc/devices`)
      .set(EDITOR_HEADERS)
      .send({ baseUrl: sim.url, loginMethod: "phone", phoneNumber: PHONE })
      .expect(200);
    assert.equal(list.body.devices.length, 8, "the running session still serves the picker");
    assert.equal(logins(sim), 0, "no login");
  });

  it("a deployed account runs on its resumed pair (no login since the start): a sign-in with its very password is no success (not checked) and sends nothing", async () => {
    await closeAllParked();
    const { flow, creds } = accountFlow(PASSWORD);
    await deployFlows(flow, "full", creds);
    await waitReady("acc1");
    sim.control.resetRequests();
    const res = await signIn("other-id", right()).expect(200);
    assert.equal(res.body.signedIn, false);
    assert.equal(res.body.passwordChecked, false);
    assert.match(
      res.body.message,
      /The password was not checked: only a login can check it, and a login would end that session/,
    );
    assertNoSecret(res.text);
    assert.equal(sim.control.requests().length, 0, "nothing sent");
  });

  // docs/session.md#changed-credentials-are-checked
  it("a wrong password deployed over a stored pair is checked, not resumed: one login, refused, halted; a sign-in with the same wrong password is no success either, and the right one sends nothing", async () => {
    const { flow, creds } = accountFlow("wrong-password");
    sim.control.resetRequests();
    await deployFlows(flow, "full", creds);
    await until("the halt", () => accountOf("acc1")?.account?.session.state === "halted-login-failed");
    assert.deepEqual(
      sim.control.requests().map((r) => `${r.operation} ${r.status}`),
      ["loginByPhone 401"],
      "one login with the new password, refused",
    );
    sim.control.resetRequests();
    const same = await signIn("other-id", wrong());
    assert.notEqual(same.body.signedIn, true, "never 'signed in' for a password no login has accepted");
    const other = await signIn("other-id", right());
    assert.notEqual(other.body.signedIn, true, "the deployed node holds this login with another password");
    assertNoSecret(same.text + other.text);
    assert.equal(sim.control.requests().length, 0, "nothing sent");
  });
});

describe("a sign-in with the Redis store: a pair that opens under the password typed is its proof; nothing logs in over it (docs/session.md#signing-in-from-the-editor; Node-RED runtime + simulator + redis-server)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  let redis: RedisServer;
  const body = (password: string) => ({
    baseUrl: sim.url,
    loginMethod: "phone",
    phoneNumber: PHONE,
    password,
    sessionStore: "redis",
    redisUrl: redis.url,
    redisKeyPrefix: "sign-in:",
  });
  const signIn = (password: string) =>
    helper.request().post(`${ADMIN}/new-acc/sign-in`).set(EDITOR_HEADERS).send(body(password));

  before(async function () {
    needProgram(this, "redis-server");
    redis = await RedisServer.start();
    sim = await startSim();
    await loadFlow([tab()], { nodes: ALL_NODES, creds: {} });
  });
  after(async () => {
    if (sim) {
      await teardown();
      await sim.close();
    }
    await redis?.stop();
  });

  it("the shared pair (another instance's session) and a wrong password: it does not open, one login checks it, refused; the right password opens it: signed in, no login", async () => {
    await signIn(PASSWORD).expect(200);
    await closeAllParked(); // the pair stays in Redis, as another instance's would
    sim.control.resetRequests();
    const refused = await signIn("wrong-password").expect(422);
    assertNoSecret(refused.text);
    assert.deepEqual(ops(sim), ["loginByPhone 401"]);
    const ok = await signIn(PASSWORD).expect(200);
    assert.equal(ok.body.signedIn, true, "the pair is sealed under the password: opening it proves it");
    assert.equal(logins(sim), 1, "no login over the shared session");
  });
});

// docs/session.md#signing-in-from-the-editor: "A sign-in after one that failed ... logs in only
// when the once-a-minute spacing and any Retry-After allow it". The service's Retry-After is the
// account's (its login's), not the password's: a password typed anew does not shorten it, nor does
// a deploy that gives the login a new session core.
describe("a sign-in or deploy within the Retry-After of the login before it sends no login, whatever password is typed (docs/session.md#rate-limits; Node-RED runtime + simulator)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  const signIn = (body: unknown) => helper.request().post(`${ADMIN}/new-acc/sign-in`).set(EDITOR_HEADERS).send(body);
  const typed = (password: string) => ({
    baseUrl: sim.url,
    loginMethod: "phone",
    phoneNumber: PHONE,
    password,
    sessionStore: "file",
  });
  const loginOps = () => ops(sim).filter((o) => o.startsWith("login"));

  before(async () => {
    await loadFlow([tab()], { nodes: ALL_NODES, creds: {} });
  });
  beforeEach(async () => {
    sim = await startSim(); // a new port: another account key for each test
  });
  afterEach(async () => {
    await deployFlows([tab()], "full", {});
    await closeAllParked();
    await sim.close();
  });
  after(async () => {
    await teardown();
  });

  it("a login answered 429 (Retry-After: 60) for a mistyped password: a sign-in with the password corrected a moment later sends nothing and says when it can", async () => {
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 60, count: 1 });
    const first = await signIn(typed("mistyped-password")).expect(502);
    assert.match(first.body.error, /retry after 60 s/);
    const again = await signIn(typed(PASSWORD));
    assert.deepEqual(
      loginOps(),
      ["loginByPhone 429"],
      `logged in within the service's Retry-After: ${JSON.stringify(again.body)}`,
    );
    assert.notEqual(again.body.signedIn, true);
    assert.match(String(again.body.error), /retry after (59|60) s/);
    assertNoSecret(first.text + again.text);
  });

  it("a deployed account whose login was answered 429 (Retry-After: 60), deployed again with another password: no login before the wait is over; a message says when", async () => {
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 60, count: 1 });
    const deployWith = (password: string) =>
      deployFlows(
        [
          tab(),
          {
            id: "acc1",
            type: "door-account",
            name: "front desk",
            baseUrl: sim.url,
            loginMethod: "phone",
            auditLog: "",
          },
          unlockNode({ deviceId: "101" }),
          ...helperNodes("u1-ok", "u1-fail"),
        ],
        "full",
        { acc1: { phoneNumber: PHONE, password } },
      );
    await deployWith("old-password");
    await until(
      "the login answered 429",
      () => loginOps().length === 1 && accountOf("acc1")?.account?.session.state === "unreachable",
    );
    await deployWith(PASSWORD);
    const out = await unlock({ payload: 1 });
    assert.equal(out.port, 1, JSON.stringify(out.msg.payload));
    assert.equal(out.msg.payload.outcome, "rate-limited");
    assert.match(out.msg.payload.message, /retry after (59|60) s/);
    assert.deepEqual(
      loginOps(),
      ["loginByPhone 429"],
      `no login within the service's Retry-After: ${JSON.stringify(ops(sim))}`,
    );
  });
});

// docs/session.md#signing-in-from-the-editor: a sign-in never logs in while a session of that
// account runs here (a login would end it). The service keeps one session per service account,
// whichever login opened it: a phone number and an email of one account are one account. This
// runtime cannot tell before a login whether an email is the account a deployed node holds with
// its phone number, so a sign-in with another login on the same base URL sends nothing until the
// operator confirms it.
describe("a sign-in with another login on the same service as a session that runs here sends nothing until confirmed (docs/session.md#signing-in-from-the-editor; Node-RED runtime + simulator)", function () {
  // Longer than the sign-in's own 30 s answer, so that a sign-in that waits shows its answer.
  this.timeout(45_000);
  let sim: RunningSimulator;
  const EMAIL = "demo@example.com";
  const body = (extra: object = {}) => ({
    baseUrl: sim.url,
    loginMethod: "email",
    email: EMAIL,
    password: PASSWORD,
    sessionStore: "file",
    ...extra,
  });
  before(async () => {
    sim = await startSim();
    const flow = [
      tab(),
      { id: "acc1", type: "door-account", name: "front desk", baseUrl: sim.url, loginMethod: "phone", auditLog: "" },
      unlockNode({ deviceId: "101" }),
      ...helperNodes("u1-ok", "u1-fail"),
    ];
    await loadFlow(flow, { creds: { acc1: { phoneNumber: PHONE, password: PASSWORD } } });
    await waitReady("acc1");
  });
  after(async () => {
    await teardown();
    await sim.close();
  });

  it("a deployed node logs in with the phone number; Sign in with the same account's email sends no login (409, names the node, asks to confirm), and the node's next unlock is one PUT on its own session", async () => {
    sim.control.resetRequests();
    const res = await helper.request().post(`${ADMIN}/new-acc/sign-in`).set(EDITOR_HEADERS).send(body());
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.notEqual(res.body.signedIn, true, JSON.stringify(res.body));
    assert.equal(res.body.confirm, true, "the editor may confirm");
    assert.match(
      res.body.error,
      /^another door-account of this Node-RED holds a session on this service: door-account "front desk" \(phone number login\)\. Nothing was sent\./,
    );
    assert.match(res.body.error, /press Sign in anyway$/);
    assert.equal(logins(sim), 0, `the sign-in logged in over the deployed node's session: ${JSON.stringify(ops(sim))}`);
    assertAccepted(await unlock({ payload: 1 }));
    assert.deepEqual(ops(sim), ["unlockDevice 200"]);
    assertNoSecret(res.text);
    assert.ok(!res.text.toLowerCase().includes(EMAIL), "no email in the answer");
  });

  it("confirmed (`confirm: true`): one login, signed in", async () => {
    sim.control.resetRequests();
    const res = await helper
      .request()
      .post(`${ADMIN}/new-acc/sign-in`)
      .set(EDITOR_HEADERS)
      .send(body({ confirm: true }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.signedIn, true, JSON.stringify(res.body));
    assert.equal(logins(sim), 1, JSON.stringify(ops(sim)));
    assertNoSecret(res.text);
  });

  it("`confirm` that is not `true` (a string) confirms nothing: nothing is sent", async () => {
    sim.control.resetRequests();
    const res = await helper
      .request()
      .post(`${ADMIN}/other-acc/sign-in`)
      .set(EDITOR_HEADERS)
      .send({ ...body({ confirm: "true" }), loginMethod: "phone", phoneNumber: "+15550000002" });
    assert.equal(
      res.status,
      409,
      `${JSON.stringify(res.body)}; the service saw ${JSON.stringify(ops(sim))}; accounts here: ${JSON.stringify(registrySnapshot())}`,
    );
    assert.equal(res.body.confirm, true);
    // The session the confirmed sign-in above opened may still be fetching its door list in the
    // background; this sign-in itself sends nothing: no login, no refresh, no other request.
    const sent = ops(sim).filter((o) => !o.startsWith("listUserDevices "));
    assert.equal(sent.length, 0, JSON.stringify(ops(sim)));
  });
});
