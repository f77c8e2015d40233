/**
 * Guest passes in a real Node-RED runtime against the simulator (docs/passes.md): door-pass
 * issues, revokes and lists; a door-unlock with acceptPasses opens for a live pass's code and for
 * nothing else; a use is counted once, also when messages race for the last one; the code is in
 * the issued message and nowhere else; passes outlive a restart; a guesser gets five tries per
 * lockout and nothing while it lasts. Requests are counted at the simulator.
 */
import { strict as assert } from "node:assert";
import crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import sinon from "sinon";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { makePass } from "../../src/passes/pass-book.js";
import { forgetPassBooks } from "../../src/passes/file-pass-book.js";
import { accountKey, accountStoreId } from "../../src/session/token-store.js";
import {
  ALL_NODES,
  DEMO_ACCOUNT,
  accountOf,
  assertAccepted,
  assertFailed,
  catchModule,
  catchNode,
  doorPassNode,
  freshUserDir,
  helper,
  helperNodes,
  lastStatus,
  loadFlow,
  passModule,
  readAudit,
  startSim,
  tab,
  teardown,
  unlock,
  unlockNode,
  unlockPuts,
  until,
  waitReady,
} from "../helpers/flow.js";
import { filesThatVerify } from "../helpers/key-search.js";
import { received } from "../helpers/odd-messages.js";

const NODES = [...ALL_NODES, passModule, catchModule];
const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

function flow(simUrl: string, unlockExtra: Record<string, unknown> = {}, passExtra: Record<string, unknown> = {}) {
  return [
    tab(),
    { id: "acc1", type: "door-account", name: "demo", baseUrl: simUrl, loginMethod: "phone", auditLog: "" },
    unlockNode({
      deviceId: "101",
      doorName: "Front Door",
      doorLocation: "Main Street 1",
      acceptPasses: true,
      ...unlockExtra,
    }),
    doorPassNode("dp", passExtra),
    ...helperNodes("u1-ok", "u1-fail", "dp-out"),
    ...catchNode(),
  ];
}

/** What reached the door-pass node's output and the Catch node since the deploy. */
let outs: any[] = [];
let caught: any[] = [];

/** Sends an action to the door-pass node: its answer, or the error a Catch node got. */
async function pass(payload: Record<string, unknown>): Promise<{ ok: any } | { error: any }> {
  const [o, c] = [outs.length, caught.length];
  helper.getNode("dp").receive({ payload });
  await until("the door-pass answer or its error", () => outs.length > o || caught.length > c, 10_000);
  return outs.length > o ? { ok: outs[o] } : { error: caught[c] };
}

async function issue(payload: Record<string, unknown>): Promise<any> {
  const r = await pass({ action: "issue", ...payload });
  assert.ok("ok" in r, `issued: ${JSON.stringify(r)}`);
  return r.ok.payload;
}

describe("guest passes: door-pass and door-unlock's acceptPasses (docs/passes.md)", function () {
  this.timeout(30000);
  let sim: RunningSimulator;
  let userDir: string;

  beforeEach(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
    forgetPassBooks();
    await sim.close();
  });

  async function deploy(
    unlockExtra: Record<string, unknown> = {},
    passExtra: Record<string, unknown> = {},
    dir?: string,
    settings?: Record<string, unknown>,
  ) {
    ({ userDir } = await loadFlow(flow(sim.url, unlockExtra, passExtra), { nodes: NODES, userDir: dir, settings }));
    outs = received("dp-out");
    caught = received("caught");
    await waitReady();
  }

  // docs/passes.md#issue
  it("issue: an 8-digit code in the issued message only; doors resolved to ids; the file keeps a hash, mode 0600", async () => {
    await deploy();
    const now = Date.now();
    const p = await issue({
      guest: "Ada",
      doors: ["Front Door", 102],
      from: iso(now - HOUR),
      until: iso(now + HOUR),
      uses: 2,
      ref: "b-1",
    });
    assert.equal(p.action, "issued");
    assert.match(p.code, /^\d{8}$/);
    assert.deepEqual(
      p.doors.map((d: any) => d.deviceId),
      [101, 102],
    );
    const dir = path.join(userDir, "door-access");
    const file = fs.readdirSync(dir).find((f) => f.startsWith("passes-"))!;
    const text = fs.readFileSync(path.join(dir, file), "utf8");
    assert.ok(!text.includes(p.code), "the passes file never holds the code");
    assert.equal(fs.statSync(path.join(dir, file)).mode & 0o777, 0o600);
    const listed = await pass({ action: "list" });
    assert.ok("ok" in listed);
    assert.ok(!JSON.stringify(listed.ok.payload).includes(p.code), "a list never holds a code");
    assert.equal(listed.ok.payload.passes[0].state, "active");
  });

  it("codeLength 6 issues 6-digit codes", async () => {
    await deploy({}, { codeLength: 6 });
    const now = Date.now();
    const p = await issue({ guest: "Bo", doors: [101], from: iso(now), until: iso(now + HOUR) });
    assert.match(p.code, /^\d{6}$/);
  });

  // docs/passes.md#at-a-door-unlock: the code as text or a number
  it("a code given as a number opens: a code never begins with 0, so a number loses none of its digits", async () => {
    await deploy();
    const now = Date.now();
    const real = crypto.randomInt;
    let calls = 0;
    // The first digit drawn is a 0 (as one code in ten would begin).
    const stub = sinon.stub(crypto, "randomInt").callsFake((n: number) => (calls++ === 0 ? 0 : real(n)));
    let p: any;
    try {
      p = await issue({ guest: "Ada", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR) });
    } finally {
      stub.restore();
    }
    assert.ok(calls > 0, "the code was drawn with node:crypto's randomInt");
    assertAccepted(await unlock({ pass: Number(p.code) }));
    assert.match(p.code, /^[1-9]\d{7}$/);
  });

  // docs/passes.md#issue: bad input names the field, nothing is stored
  for (const [what, payload, field] of [
    ["no guest", { doors: [101] }, "guest"],
    ["an unknown door", { guest: "Ada", doors: ["Nowhere Door"] }, "doors"],
    ["until not after from", { guest: "Ada", doors: [101], until: "2026-12-01T08:00:00Z" }, "until"],
    ["a time without its zone", { guest: "Ada", doors: [101], from: "2026-12-01T08:00:00" }, "from"],
    ["uses 0", { guest: "Ada", doors: [101], uses: 0 }, "uses"],
    // A date that does not exist (30 February, 29 February of 2027, 31 April, 24:00, minute 60, offset +25:00).
    ["until on 30 February", { guest: "Ada", doors: [101], until: "2027-02-30T11:00:00+01:00" }, "until"],
    ["until on 29 February 2027", { guest: "Ada", doors: [101], until: "2027-02-29T11:00:00+01:00" }, "until"],
    ["from on 31 April", { guest: "Ada", doors: [101], from: "2026-04-31T11:00:00+01:00" }, "from"],
    ["until at 24:00", { guest: "Ada", doors: [101], until: "2026-12-01T24:00:00Z" }, "until"],
    ["until at 25:00", { guest: "Ada", doors: [101], until: "2026-12-01T25:00:00Z" }, "until"],
    ["from at minute 60", { guest: "Ada", doors: [101], from: "2026-12-01T07:60:00Z" }, "from"],
    ["until with offset +25:00", { guest: "Ada", doors: [101], until: "2026-12-02T08:00:00+25:00" }, "until"],
  ] as const) {
    it(`issue with ${what}: an error naming ${field}, code invalid-input, nothing stored`, async () => {
      await deploy();
      const r = await pass({
        action: "issue",
        from: "2026-12-01T08:00:00Z",
        until: "2026-12-02T08:00:00Z",
        ...payload,
      });
      assert.ok("error" in r, JSON.stringify(r));
      assert.match(r.error.error.message, new RegExp(`^door-pass: .*${field}:`));
      if (/ on | at |offset/.test(what))
        assert.match(r.error.error.message, new RegExp(`${field}: ".*" does not exist`));
      assert.equal(r.error.error.code, "invalid-input");
      const listed = await pass({ action: "list" });
      assert.ok("ok" in listed);
      assert.deepEqual(listed.ok.payload.passes, []);
    });
  }

  // docs/passes.md#issue: a date that exists is taken as the instant it names
  it("issue with dates at the edges that exist (29 February 2028, 23:59:59, fractional seconds, Z): issued as the instants they name", async () => {
    await deploy();
    const p = await issue({
      guest: "Ada",
      doors: [101],
      from: "2027-12-31T23:59:59.25+01:00",
      until: "2028-02-29T23:59:59Z",
    });
    assert.equal(p.from, "2027-12-31T22:59:59.250Z");
    assert.equal(p.until, "2028-02-29T23:59:59.000Z");
  });

  // docs/passes.md#issue: from and until with their offsets are instants, also on the nights the clocks change
  it("New York's clock changes: 01:30 EDT to 01:30 EST is one real hour; 01:45 EST to 01:15 EDT is refused (until before from); 02:30-05:00 (a wall time New York skips) is the instant 07:30Z", async () => {
    await deploy();
    const hour = await issue({
      guest: "Ada",
      doors: [101],
      from: "2027-11-07T01:30:00-04:00",
      until: "2027-11-07T01:30:00-05:00",
    });
    assert.deepEqual([hour.from, hour.until], ["2027-11-07T05:30:00.000Z", "2027-11-07T06:30:00.000Z"]);
    const back = await pass({
      action: "issue",
      guest: "Bo",
      doors: [101],
      from: "2027-11-07T01:45:00-05:00",
      until: "2027-11-07T01:15:00-04:00",
    });
    assert.ok("error" in back);
    assert.match(back.error.error.message, /until: must be after from/);
    const gap = await issue({
      guest: "Cy",
      doors: [101],
      from: "2027-03-14T02:30:00-05:00",
      until: "2027-03-14T04:00:00-04:00",
    });
    assert.deepEqual([gap.from, gap.until], ["2027-03-14T07:30:00.000Z", "2027-03-14T08:00:00.000Z"]);
    const listed = await pass({ action: "list" });
    assert.ok("ok" in listed);
    assert.equal(listed.ok.payload.passes.length, 2, "the refused one is not stored");
  });

  // docs/passes.md#at-a-door-unlock
  it("a live pass opens its door once per message as guest:<guest>; msg.pass is gone from the output; the audit names the pass, never the code", async () => {
    await deploy({ allowActors: ["alice"] });
    const now = Date.now();
    const p = await issue({ guest: "Ada", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR) });
    sim.control.resetRequests();
    const out = await unlock({ pass: p.code });
    const r = assertAccepted(out);
    assert.equal(r.actor, "guest:Ada", "the pass replaces allowActors");
    assert.equal(out.msg.pass, undefined);
    assert.deepEqual(r.pass, { id: p.id, ref: null, first: true });
    assert.equal(unlockPuts(sim).length, 1);
    const second = assertAccepted(await unlock({ pass: p.code }));
    assert.equal(second.pass.first, false);
    await until("the audit records", () => readAudit(userDir).filter((x) => x.type === "unlock-result").length === 2);
    const audit = readAudit(userDir);
    assert.ok(audit.filter((x) => x.type !== "unlock-rejected").every((x) => x.pass === p.id));
    assert.ok(!JSON.stringify(audit).includes(p.code));
  });

  it("refusals say why, reason pass, nothing sent: another door, not yet valid, expired, revoked, used up", async () => {
    await deploy();
    const now = Date.now();
    const other = await issue({ guest: "A", doors: [102], from: iso(now - HOUR), until: iso(now + HOUR) });
    const later = await issue({ guest: "B", doors: [101], from: iso(now + HOUR), until: iso(now + 2 * HOUR) });
    const over = await issue({ guest: "C", doors: [101], from: iso(now - 2 * HOUR), until: iso(now - HOUR) });
    const gone = await issue({ guest: "D", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR), ref: "r-d" });
    const once = await issue({ guest: "E", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR), uses: 1 });
    const revoked = await pass({ action: "revoke", ref: "r-d" });
    assert.ok("ok" in revoked);
    assert.deepEqual(revoked.ok.payload, { action: "revoked", id: gone.id });
    assertAccepted(await unlock({ pass: once.code }));
    sim.control.resetRequests();
    for (const [code, why] of [
      [other.code, /not for this door/],
      [later.code, /not valid yet/],
      [over.code, /expired/],
      [gone.code, /revoked/],
      [once.code, /no use left/],
    ] as const) {
      const r = assertFailed(await unlock({ pass: code }), "denied", null);
      assert.equal(r.reason, "pass");
      assert.match(r.message, why);
      assert.ok(!r.message.includes(code));
    }
    assert.equal(unlockPuts(sim).length, 0);
  });

  // docs/passes.md#at-a-door-unlock: what a guest is told, as data and in words
  it("a refusal a guest reads is data (payload.passRefusal: why, at, the node's zone) and its words give local times in the node's zone, never ISO UTC, and say code, never PIN, the lockout and the node status included (docs/passes.md#at-a-door-unlock)", async () => {
    await deploy({ timeZone: "Europe/Oslo" });
    const now = Date.now();
    const oslo = (ms: number) =>
      new Intl.DateTimeFormat("en-GB", {
        timeZone: "Europe/Oslo",
        hour: "2-digit",
        minute: "2-digit",
        hourCycle: "h23",
      }).format(ms);
    const other = await issue({ guest: "A", doors: [102], from: iso(now - HOUR), until: iso(now + HOUR) });
    const later = await issue({ guest: "B", doors: [101], from: iso(now + HOUR), until: iso(now + 2 * HOUR) });
    const over = await issue({ guest: "C", doors: [101], from: iso(now - 2 * HOUR), until: iso(now - HOUR) });
    const gone = await issue({ guest: "D", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR), ref: "r-d" });
    assert.ok("ok" in (await pass({ action: "revoke", ref: "r-d" })));
    const zone = "Europe/Oslo";
    for (const [code, refusal, time] of [
      [other.code, { why: "door", timeZone: zone }, null],
      [later.code, { why: "not-yet", at: later.from, timeZone: zone }, oslo(now + HOUR)],
      [over.code, { why: "expired", at: over.until, timeZone: zone }, oslo(now - HOUR)],
      [gone.code, { why: "revoked", timeZone: zone }, null],
    ] as const) {
      const r = assertFailed(await unlock({ pass: code }), "denied", null);
      assert.deepEqual(r.passRefusal, refusal);
      assert.doesNotMatch(r.message, /\d{4}-\d{2}-\d{2}T|Z\b/, "no ISO time in words a guest reads");
      if (time !== null) assert.ok(r.message.includes(`${time} (Europe/Oslo)`), r.message);
    }
    // The four refusals above cost a try each, as a code no pass has does
    // (docs/passes.md#how-hard-a-code-is-to-guess): the fifth try, an unknown code, locks the node.
    const wrong = [other, later, over, gone].some((p) => p.code === "11111111") ? "22222222" : "11111111";
    const fifth = assertFailed(await unlock({ pass: wrong }), "denied", null);
    assert.deepEqual(fifth.passRefusal, { why: "unknown", timeZone: zone });
    assert.match(
      fifth.message,
      /that was 5 wrong codes at this door within 15 minutes: at this door, every message is refused until/,
    );
    assert.doesNotMatch(fifth.message, /PIN/);
    const locked = assertFailed(await unlock({ pass: wrong }), "denied", null);
    assert.equal(locked.reason, "locked-out");
    assert.equal(locked.passRefusal.why, "locked-out");
    assert.equal(locked.passRefusal.timeZone, zone);
    assert.ok(Math.abs(Date.parse(locked.passRefusal.at) - (Date.now() + locked.retryAfter * 1000)) < 2000);
    assert.match(
      locked.message,
      /^locked: 5 wrong codes at this door, every message is refused until \d\d:\d\d \(Europe\/Oslo\)$/,
    );
    assert.doesNotMatch(locked.message, /PIN/);
    const status = String(lastStatus(helper.getNode("u1"))?.text);
    assert.match(status, /^locked: .+, until \d\d:\d\d$/);
    assert.doesNotMatch(status, /PIN/);
  });

  // docs/passes.md#at-a-door-unlock: unknown codes count toward the lockout
  it("unknown codes count toward the node's lockout: the fifth locks it, and then even a live pass is refused", async () => {
    await deploy();
    const now = Date.now();
    const p = await issue({ guest: "Ada", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR) });
    const wrong = p.code === "11111111" ? "22222222" : "11111111";
    for (let i = 0; i < 5; i++) {
      const r = assertFailed(await unlock({ pass: wrong }), "denied", null);
      assert.equal(r.reason, "pass");
    }
    const r = assertFailed(await unlock({ pass: p.code }), "denied", null);
    assert.equal(r.reason, "locked-out");
  });

  // docs/passes.md#at-a-door-unlock: two messages racing for the last use send one command
  it("eight messages in one turn for a pass's last use: one command, seven refused", async () => {
    await deploy();
    const now = Date.now();
    const p = await issue({ guest: "Ada", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR), uses: 1 });
    sim.control.resetRequests();
    const ok = received("u1-ok");
    const fail = received("u1-fail");
    for (let i = 0; i < 8; i++) helper.getNode("u1").receive({ pass: p.code });
    await until("eight outcomes", () => ok.length + fail.length === 8);
    assert.equal(ok.length, 1);
    assert.equal(unlockPuts(sim).length, 1);
    // Each refusal told that the code is real, so each cost a try (docs/passes.md#how-hard-a-code-is-to-guess):
    // the fifth locked the node, and the last two were answered as every message is while it is locked.
    assert.deepEqual(fail.map((m) => m.payload.reason).sort(), [
      "locked-out",
      "locked-out",
      "pass",
      "pass",
      "pass",
      "pass",
      "pass",
    ]);
  });

  // docs/passes.md#at-a-door-unlock: a use is counted when the command is sent
  it("a message whose command is never sent (the session halted) takes no use of the pass", async () => {
    await deploy();
    const now = Date.now();
    const p = await issue({ guest: "Ada", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR), uses: 1 });
    // Two takeovers within the hour halt the account (docs/session.md): then nothing is sent.
    sim.control.supersede("demo");
    assertAccepted(await unlock({ deviceId: 101 }));
    sim.control.supersede("demo");
    assertFailed(await unlock({ deviceId: 101 }), "unauthorized", 401);
    sim.control.resetRequests();
    assertFailed(await unlock({ pass: p.code }), "session-halted", null);
    assert.equal(unlockPuts(sim).length, 0);
    const listed = await pass({ action: "list" });
    assert.ok("ok" in listed);
    const view = listed.ok.payload.passes.find((x: any) => x.id === p.id);
    assert.equal(view.used, 0, "nothing was sent: the use is still the guest's");
    assert.equal(view.state, "active");
  });

  it("a node without acceptPasses ignores msg.pass (its own rules apply) and deletes it", async () => {
    await deploy({ acceptPasses: false, allowActors: ["alice"] });
    const now = Date.now();
    const p = await issue({ guest: "Ada", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR) });
    const out = await unlock({ pass: p.code });
    const r = assertFailed(out, "denied", null);
    assert.equal(r.reason, "actor");
    assert.equal(out.msg.pass, undefined);
  });

  // docs/passes.md#where-passes-are-kept
  it("passes and their use counts outlive a restart", async () => {
    await deploy();
    const now = Date.now();
    const p = await issue({ guest: "Ada", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR), uses: 2 });
    assertAccepted(await unlock({ pass: p.code }));
    const dir = userDir;
    await teardown();
    forgetPassBooks();
    await deploy({}, {}, dir);
    const again = assertAccepted(await unlock({ pass: p.code }));
    assert.equal(again.pass.first, false);
    assertFailed(await unlock({ pass: p.code }), "denied", null);
  });

  // docs/passes.md#a-new-code
  it("reissue (id or ref): answered issued with the same id, a new code and reissued: true; the old code stops opening at once; the uses taken are kept; a pass not live: not-found", async () => {
    await deploy();
    const now = Date.now();
    const p = await issue({
      guest: "Ada",
      doors: [101],
      from: iso(now - HOUR),
      until: iso(now + HOUR),
      uses: 3,
      ref: "bk-7",
    });
    assertAccepted(await unlock({ pass: p.code }));
    const r = await pass({ action: "reissue", id: p.id });
    assert.ok("ok" in r, JSON.stringify(r));
    const again = r.ok.payload;
    assert.equal(again.action, "issued");
    assert.equal(again.id, p.id);
    assert.equal(again.reissued, true);
    assert.match(again.code, /^[1-9]\d{7}$/);
    assert.notEqual(again.code, p.code);
    sim.control.resetRequests();
    const old = assertFailed(await unlock({ pass: p.code }), "denied", null);
    assert.equal(old.reason, "pass");
    assert.match(old.message, /no pass has this code/);
    assert.equal(unlockPuts(sim).length, 0, "the old code sends nothing");
    const ok = assertAccepted(await unlock({ pass: again.code }));
    assert.equal(ok.pass.first, false, "the pass's first use was before the new code");
    // By ref: the same pass, one more new code; the uses stay counted (2 of 3).
    const byRef = await pass({ action: "reissue", ref: "bk-7" });
    assert.ok("ok" in byRef);
    assert.equal(byRef.ok.payload.id, p.id);
    const listed = await pass({ action: "list" });
    assert.ok("ok" in listed);
    const view = listed.ok.payload.passes.find((x: any) => x.id === p.id);
    assert.equal(view.used, 2);
    assert.ok(!JSON.stringify(listed.ok.payload).includes(byRef.ok.payload.code), "a list never holds a code");
    await pass({ action: "revoke", id: p.id });
    const gone = await pass({ action: "reissue", id: p.id });
    assert.ok("error" in gone);
    assert.equal(gone.error.error.code, "not-found");
    const none = await pass({ action: "reissue" });
    assert.ok("error" in none);
    assert.equal(none.error.error.code, "invalid-input");
  });

  // docs/passes.md#a-new-code
  it("reissue through a door-pass whose output reaches no node is refused (code not-wired): the new code would go nowhere, so the old code keeps opening (docs/passes.md#a-new-code)", async () => {
    ({ userDir } = await loadFlow([...flow(sim.url), { ...doorPassNode("dp2"), wires: [[]] }], { nodes: NODES }));
    outs = received("dp-out");
    caught = received("caught");
    await waitReady();
    const now = Date.now();
    const p = await issue({ guest: "Ada", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR), ref: "bk-8" });
    for (const ask of [{ id: p.id }, { ref: "bk-8" }]) {
      const c = caught.length;
      helper.getNode("dp2").receive({ payload: { action: "reissue", ...ask } });
      await until("the refusal", () => caught.length > c);
      assert.equal(caught[c].error.code, "not-wired");
      assert.match(caught[c].error.message, /reaches no node/);
    }
    assertAccepted(await unlock({ pass: p.code }));
  });

  /** The stored hash of a pass, as a copy of the user directory shows it. */
  function storedHash(id: string): string {
    const dir = path.join(userDir, "door-access");
    const file = fs.readdirSync(dir).find((f) => f.startsWith("passes-"))!;
    return JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")).passes.find((p: any) => p.id === id).hash;
  }

  // docs/passes.md#where-passes-are-kept: without Node-RED's credential secret, a copy of the user directory gives back no code
  it("with a credential secret, no file of the user directory verifies a known code (each tried as the HMAC key); under another secret the key file is left as it was and the code opens again once the secret is back", async () => {
    const secret = { credentialSecret: "the runtime's secret" };
    await deploy({}, {}, undefined, secret);
    const now = Date.now();
    const p = await issue({ guest: "Ada", doors: [101], from: iso(now - HOUR), until: iso(now + 4 * HOUR) });
    assertAccepted(await unlock({ pass: p.code }));
    assert.deepEqual(filesThatVerify(userDir, p.code, storedHash(p.id)), []);
    const dir = userDir;
    const keyFile = path.join(
      dir,
      "door-access",
      fs.readdirSync(path.join(dir, "door-access")).find((f) => f.startsWith("pass-key-"))!,
    );
    const sealed = fs.readFileSync(keyFile, "utf8");
    // Another secret (a copy started elsewhere): the code opens nothing, and the key is not written over.
    await teardown();
    forgetPassBooks();
    await deploy({}, {}, dir, { credentialSecret: "another secret" });
    assert.match(assertFailed(await unlock({ pass: p.code }), "denied", null).message, /no pass has this code/);
    assert.equal(fs.readFileSync(keyFile, "utf8"), sealed);
    await teardown();
    forgetPassBooks();
    await deploy({}, {}, dir, secret);
    assertAccepted(await unlock({ pass: p.code }));
  });

  // docs/passes.md#where-passes-are-kept: a key file of the first version is sealed in place
  it("a user directory of the first version (the pass key in plain hex): at the first start with a credential secret the key is sealed in place, 0600, and its passes keep opening", async () => {
    const dir = freshUserDir();
    const id = accountStoreId(accountKey(sim.url, "phone", DEMO_ACCOUNT.phoneNumber));
    const key = crypto.randomBytes(32);
    const now = Date.now();
    const { pass: old, code } = makePass(
      {
        guest: "Ada",
        doors: [{ deviceId: 101, door: "Front Door" }],
        from: iso(now - HOUR),
        until: iso(now + HOUR),
        uses: null,
        ref: null,
      },
      key,
      8,
      now,
      () => false,
    );
    fs.mkdirSync(path.join(dir, "door-access"), { recursive: true, mode: 0o700 });
    const keyFile = path.join(dir, "door-access", `pass-key-${id}`);
    fs.writeFileSync(keyFile, key.toString("hex") + "\n", { mode: 0o600 });
    fs.writeFileSync(
      path.join(dir, "door-access", `passes-${id}.json`),
      JSON.stringify({ v: 1, passes: [old] }) + "\n",
      {
        mode: 0o600,
      },
    );
    await deploy({}, {}, dir, { credentialSecret: "the runtime's secret" });
    assertAccepted(await unlock({ pass: code }));
    assert.equal(JSON.parse(fs.readFileSync(keyFile, "utf8")).enc, "aes-256-gcm");
    assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
    assert.deepEqual(filesThatVerify(dir, code, old.hash), []);
    await teardown();
    forgetPassBooks();
    await deploy({}, {}, dir, { credentialSecret: "the runtime's secret" });
    assertAccepted(await unlock({ pass: code }));
  });
});

/**
 * Guessing codes at a keypad (docs/passes.md#how-hard-a-code-is-to-guess). The runtime's clock is
 * faked (sinon, `Date` only, read by the simulator too), so that a lockout's 15 minutes are moved
 * over, not waited for; the pass book of the account is watched by wrapping its lookups.
 */
describe("guessing a code: while locked out a node looks up no code and answers every message alike; outside a lockout every refusal about a real pass costs a try (docs/passes.md#how-hard-a-code-is-to-guess)", function () {
  this.timeout(60_000);
  const MIN = 60_000;
  let sim: RunningSimulator;
  let clock: sinon.SinonFakeTimers;

  before(async () => {
    clock = sinon.useFakeTimers({ now: Date.now(), toFake: ["Date"] });
    sim = await startSim({ rateLimit: false, now: () => Date.now() });
  });
  after(async () => {
    await sim?.close();
    clock?.uninstall();
  });
  afterEach(async () => {
    await teardown();
    forgetPassBooks();
  });

  async function deploy(unlockExtra: Record<string, unknown> = {}, passExtra: Record<string, unknown> = {}) {
    await loadFlow(flow(sim.url, unlockExtra, passExtra), { nodes: NODES });
    outs = received("dp-out");
    caught = received("caught");
    await waitReady();
  }

  /** Counts what reaches the account's pass book: its refresh before a lookup, and the lookups. */
  function watchBook(): { lookups: () => number; reads: () => number; stop: () => void } {
    const book = accountOf().account.core.passes;
    const find = sinon.spy(book, "find");
    const refresh = sinon.spy(book, "refresh");
    return {
      lookups: () => find.callCount,
      reads: () => refresh.callCount,
      stop: () => {
        find.restore();
        refresh.restore();
      },
    };
  }

  /** A 6- or 8-digit code that no pass in `codes` has. */
  function miss(codes: Set<string>, digits = 8, from = 1): string {
    for (let n = from; ; n++) {
      const c = String(10 ** (digits - 1) + n);
      if (!codes.has(c)) return c;
    }
  }

  /** Sends five codes no pass has at a door (the node's own: 101), one after another: the fifth locks that door. */
  async function lockOut(codes: Set<string>, digits = 8, where: Record<string, unknown> = {}): Promise<void> {
    for (let i = 1; i <= 5; i++)
      assertFailed(await unlock({ pass: miss(codes, digits, i * 1000), ...where }), "denied", null);
    const r = assertFailed(await unlock({ pass: miss(codes, digits), ...where }), "denied", null);
    assert.equal(r.reason, "locked-out");
  }

  it("while locked out: no code reaches the pass book and every message is answered alike (denied, locked-out, the same text and fields), whatever msg.pass, msg.pin or msg.deviceId hold: a locked door, every message for it; the ceiling reached, every message", async () => {
    await deploy();
    const now = Date.now();
    const live = await issue({ guest: "A", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR) });
    const other = await issue({ guest: "B", doors: [102], from: iso(now - HOUR), until: iso(now + HOUR) });
    const over = await issue({ guest: "C", doors: [101], from: iso(now - 2 * HOUR), until: iso(now - HOUR) });
    const later = await issue({ guest: "D", doors: [101], from: iso(now + HOUR), until: iso(now + 2 * HOUR) });
    const codes = new Set([live.code, other.code, over.code, later.code]);
    await lockOut(codes);
    const alike = ({ at: _at, ...rest }: any) => rest;
    // Door 101 locked: every message for it (however it names it) gets the one answer.
    sim.control.resetRequests();
    const forDoor: Record<string, unknown>[] = [
      { pass: live.code },
      { pass: Number(live.code) },
      { pass: other.code },
      { pass: over.code },
      { pass: later.code },
      { pass: miss(codes) },
      { pass: live.code, deviceId: 101 },
      { pass: live.code, door: "Main Street 1 / Front Door" },
      { pass: live.code, pin: "1234" },
      { pin: "1234" },
      { deviceId: 101, lockId: 77 },
      {},
    ];
    const doorBook = watchBook();
    const atDoor: any[] = [];
    for (const m of forDoor) atDoor.push(assertFailed(await unlock(m), "denied", null));
    doorBook.stop();
    assert.match(atDoor[0].message, /^locked: 5 wrong codes at this door, /);
    for (const [i, a] of atDoor.entries())
      assert.deepEqual(alike(a), alike(atDoor[0]), `door message ${i + 1} (${Object.keys(forDoor[i]).join(", ")})`);
    assert.equal(doorBook.lookups(), 0, "no code was looked up for the locked door");
    assert.equal(sim.control.requests().length, 0, "nothing reached the service");
    // Two more doors locked: the ceiling locks the node, and every message gets the one answer.
    await lockOut(codes, 8, { deviceId: 103 });
    await lockOut(codes, 8, { deviceId: 106 });
    sim.control.resetRequests();
    const book = watchBook();
    const asked: Record<string, unknown>[] = [
      { pass: live.code },
      { pass: Number(live.code) },
      { pass: other.code },
      { pass: other.code, deviceId: 102 },
      { pass: over.code },
      { pass: later.code },
      { pass: live.code, deviceId: 999 },
      { pass: live.code, door: "No Such Door" },
      { pass: miss(codes) },
      { pass: "12ab" },
      { pass: live.code, pin: "1234" },
      { pin: "1234" },
      { deviceId: "x" },
      { deviceId: 101, lockId: 77 },
      {},
    ];
    const answers: any[] = [];
    for (const m of asked) answers.push(assertFailed(await unlock(m), "denied", null));
    book.stop();
    assert.equal(answers[0].reason, "locked-out");
    assert.match(answers[0].message, /^locked: 15 wrong codes at this node's doors, /);
    for (const [i, a] of answers.entries())
      assert.deepEqual(alike(a), alike(answers[0]), `message ${i + 1} (${Object.keys(asked[i]).join(", ")})`);
    assert.equal(book.lookups(), 0, "no code was looked up while locked out");
    assert.equal(book.reads(), 0, "the pass book was not read while locked out");
    assert.equal(unlockPuts(sim).length, 0);
    assert.equal(sim.control.requests().length, 0, "nothing reached the service");
  });

  it("every refusal about a real pass costs a try as a code no pass has does: five of one kind lock the door they were for (not for this door, an unknown msg.deviceId, not valid yet, expired, used up, revoked, the cooldown)", async () => {
    await deploy({ cooldown: 60 });
    const now = Date.now();
    const span = { from: iso(now - HOUR), until: iso(now + 2 * 24 * HOUR) };
    const live = await issue({ guest: "A", doors: [101], ...span });
    const other = await issue({ guest: "B", doors: [102], ...span });
    const later = await issue({ guest: "C", doors: [101], from: iso(now + 24 * HOUR), until: iso(now + 48 * HOUR) });
    const over = await issue({ guest: "D", doors: [101], from: iso(now - 2 * HOUR), until: iso(now - HOUR) });
    const once = await issue({ guest: "E", doors: [101], ...span, uses: 1 });
    const gone = await issue({ guest: "F", doors: [101], ...span, ref: "r-f" });
    assert.ok("ok" in (await pass({ action: "revoke", ref: "r-f" })));
    // The cooldown first: the pass with one use opens, and the door is in its cooldown for 60 s.
    assertAccepted(await unlock({ pass: once.code }));
    const kinds: [string, Record<string, unknown>, string][] = [
      ["the cooldown", { pass: live.code }, "cooldown"],
      ["not for this door", { pass: other.code }, "pass"],
      ["an unknown msg.deviceId", { pass: live.code, deviceId: 999 }, "pass"],
      ["not valid yet", { pass: later.code }, "pass"],
      ["expired", { pass: over.code }, "pass"],
      ["used up", { pass: once.code }, "pass"],
      ["revoked", { pass: gone.code }, "pass"],
    ];
    for (const [what, msg, reason] of kinds) {
      sim.control.resetRequests();
      for (let i = 1; i <= 5; i++) {
        const r = assertFailed(await unlock({ ...msg }), "denied", null);
        assert.equal(r.reason, reason, `${what}, try ${i}: ${r.message}`);
        assert.equal(/every message is refused until/.test(r.message), i === 5, `${what}, try ${i}: ${r.message}`);
      }
      const door = msg.deviceId === undefined ? {} : { deviceId: msg.deviceId };
      const locked = assertFailed(await unlock({ pass: live.code, ...door }), "denied", null);
      assert.equal(locked.reason, "locked-out", `five refusals (${what}) lock their door`);
      assert.equal(unlockPuts(sim).length, 0);
      clock.tick(15 * MIN); // the lockout is over; the count starts from zero
    }
    assertAccepted(await unlock({ pass: live.code }));
  });

  it("a message that can open nothing whatever its code (a door name no door has, a msg.deviceId that is no id, a lock the door has not) is answered before the code is looked up: a real code and a code no pass has get the same answer, neither reaches the pass book, and neither costs a try", async () => {
    await deploy();
    const now = Date.now();
    const live = await issue({ guest: "A", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR) });
    const codes = new Set([live.code]);
    const book = watchBook();
    for (const where of [{ door: "No Such Door" }, { deviceId: "x" }, { deviceId: 101, lockId: 77 }]) {
      const real = assertFailed(await unlock({ pass: live.code, ...where }), "invalid-input", null);
      const blind = assertFailed(await unlock({ pass: miss(codes), ...where }), "invalid-input", null);
      assert.equal(real.message, blind.message, JSON.stringify(where));
    }
    assert.equal(book.lookups(), 0);
    // Such answers cost no try: the node is not locked after more than five of them.
    assertAccepted(await unlock({ pass: live.code }));
    book.stop();
  });

  it("the lockout is kept per door: five wrong codes at one door lock that door only; a guest at another door of the same node still opens, and the count of each door is its own (docs/passes.md#how-hard-a-code-is-to-guess)", async () => {
    await deploy();
    const now = Date.now();
    const a = await issue({ guest: "A", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR) });
    const b = await issue({ guest: "B", doors: [102], from: iso(now - HOUR), until: iso(now + HOUR) });
    const codes = new Set([a.code, b.code]);
    // Four wrong codes at the back door, then five at the front door: only the front door locks.
    for (let i = 1; i <= 4; i++)
      assertFailed(await unlock({ pass: miss(codes, 8, 50_000 + i), deviceId: 102 }), "denied", null);
    await lockOut(codes);
    assert.equal(assertFailed(await unlock({ pass: a.code }), "denied", null).reason, "locked-out");
    sim.control.resetRequests();
    assertAccepted(await unlock({ pass: b.code, deviceId: 102 }));
    assert.deepEqual(
      unlockPuts(sim).map((r) => r.path),
      ["/api/device/102/unlock"],
      "the guest at the other door opened it",
    );
    // The back door's fifth wrong code locks it (its own four came before).
    const fifth = assertFailed(await unlock({ pass: miss(codes, 8, 60_000), deviceId: 102 }), "denied", null);
    assert.match(fifth.message, /at this door, every message is refused until/);
    assert.equal(assertFailed(await unlock({ pass: b.code, deviceId: 102 }), "denied", null).reason, "locked-out");
    // The end of a door's lockout: the guest opens again.
    clock.tick(15 * MIN);
    assertAccepted(await unlock({ pass: a.code }));
  });

  it("a ceiling across the node's doors bounds a guesser who spreads guesses over doors: fifteen wrong tries within 15 minutes at any of its doors lock every door of the node, also one with no wrong try (docs/passes.md#how-hard-a-code-is-to-guess)", async () => {
    await deploy();
    const now = Date.now();
    const b = await issue({ guest: "B", doors: [102], from: iso(now - HOUR), until: iso(now + HOUR) });
    const codes = new Set([b.code]);
    const book = watchBook();
    // Four at each of four doors (16 tries, no door reaches five): the fifteenth locks the node.
    const answers: any[] = [];
    for (const id of [101, 103, 104, 106])
      for (let i = 1; i <= 4; i++)
        answers.push(assertFailed(await unlock({ pass: miss(codes, 8, id * 100 + i), deviceId: id }), "denied", null));
    assert.equal(book.lookups(), 15, "fifteen codes looked up, then none");
    assert.match(
      answers[14].message,
      /15 wrong codes at this node's doors within 15 minutes: at every door of this node, every message is refused until/,
    );
    assert.equal(answers[15].reason, "locked-out");
    sim.control.resetRequests();
    const r = assertFailed(await unlock({ pass: b.code, deviceId: 102 }), "denied", null);
    assert.equal(r.reason, "locked-out", "the door nobody guessed at is locked too");
    assert.equal(book.lookups(), 15);
    assert.equal(sim.control.requests().length, 0);
    book.stop();
    clock.tick(15 * MIN);
    assertAccepted(await unlock({ pass: b.code, deviceId: 102 }));
  });

  it("the host ends a lockout from a flow (docs/access-rules.md#ending-a-lockout): msg.endLockout with msg.deviceId ends that door's lockout only, msg.endLockout alone every lockout of the node; each end is one lockout-ended audit record and one rule/lockout-ended event naming who ended it; nothing reaches the service", async () => {
    const { userDir } = await loadFlow(flow(sim.url), { nodes: NODES });
    outs = received("dp-out");
    caught = received("caught");
    await waitReady();
    const events: any[] = [];
    const stop = accountOf().account.core.events.subscribe(["rule"], (e: any) => events.push(e));
    const now = Date.now();
    const a = await issue({ guest: "A", doors: [101], from: iso(now - HOUR), until: iso(now + HOUR) });
    const b = await issue({ guest: "B", doors: [102], from: iso(now - HOUR), until: iso(now + HOUR) });
    const codes = new Set([a.code, b.code]);
    await lockOut(codes);
    await lockOut(codes, 8, { deviceId: 102 });
    await until("two rule/locked-out", () => events.filter((e) => e.event === "locked-out").length === 2);
    const locked = events.filter((e) => e.event === "locked-out");
    assert.deepEqual(
      locked.map((e) => [e.deviceId, e.door]),
      [
        [101, "Front Door"],
        [102, "Main Street 1 / Back Door"],
      ],
      "rule/locked-out names the door",
    );
    sim.control.resetRequests();
    // A guest's message never ends a lockout: with a code it is refused, and the door stays locked.
    const guest = assertFailed(await unlock({ endLockout: true, pass: a.code }), "invalid-input", null);
    assert.ok(!JSON.stringify(guest).includes(a.code));
    assert.equal(assertFailed(await unlock({ pass: a.code }), "denied", null).reason, "locked-out");
    // The back door's lockout, ended by the host's flow: the guest at the back door opens; the front door stays locked.
    const ended = await unlock({ endLockout: true, deviceId: 102, actor: "host:anna", _msgid: "end-1" });
    // On output 2: output 1 is for commands sent (docs/outcomes.md#door-unlock-outcomes); no door was opened.
    assert.equal(ended.port, 1, JSON.stringify(ended.msg.payload));
    assert.equal(ended.msg.payload.outcome, "lockout-ended");
    assert.equal(ended.msg.payload.by, "host:anna");
    assert.deepEqual(ended.msg.payload.ended, [{ deviceId: 102, door: "Main Street 1 / Back Door" }]);
    assert.equal(sim.control.requests().length, 0, "ending a lockout sends nothing to the service");
    assertAccepted(await unlock({ pass: b.code, deviceId: 102 }));
    assert.equal(assertFailed(await unlock({ pass: a.code }), "denied", null).reason, "locked-out");
    // Every lockout of the node, with the node's actor.
    const all = await unlock({ endLockout: true });
    assert.equal(all.msg.payload.outcome, "lockout-ended");
    assert.deepEqual(all.msg.payload.ended, [{ deviceId: 101, door: "Front Door" }]);
    assertAccepted(await unlock({ pass: a.code }));
    await until("two rule/lockout-ended", () => events.filter((e) => e.event === "lockout-ended").length === 2);
    stop();
    const endedEvents = events.filter((e) => e.event === "lockout-ended");
    assert.deepEqual(
      endedEvents.map((e) => [e.deviceId, e.by]),
      [
        [102, "host:anna"],
        [101, all.msg.payload.by],
      ],
    );
    await until(
      "two lockout-ended records",
      () => readAudit(userDir).filter((r) => r.type === "lockout-ended").length === 2,
    );
    const records = readAudit(userDir).filter((r) => r.type === "lockout-ended");
    assert.equal(
      readAudit(userDir).filter((r) => r.type === "unlock-rejected" && r.reason === "end-lockout").length,
      1,
      "the guest's refused end has its unlock-rejected record",
    );
    assert.deepEqual(
      records.map((r) => [r.actor, r.deviceId, r.ended, r.msgid]),
      [
        ["host:anna", 102, ["door 102"], "end-1"],
        [all.msg.payload.by, null, ["door 101"], records[1].msgid],
      ],
    );
  });

  it("a door's lockout and each door's wrong tries outlive a restart (docs/access-rules.md#what-ends-a-lockout): the locked door is still locked, and a door with three wrong tries locks at its fifth", async () => {
    const { userDir: dir } = await loadFlow(flow(sim.url), { nodes: NODES });
    outs = received("dp-out");
    caught = received("caught");
    await waitReady();
    const now = Date.now();
    const b = await issue({ guest: "B", doors: [102], from: iso(now - HOUR), until: iso(now + HOUR) });
    const codes = new Set([b.code]);
    await lockOut(codes, 8, { deviceId: 102 });
    for (let i = 1; i <= 3; i++) assertFailed(await unlock({ pass: miss(codes, 8, 70_000 + i) }), "denied", null);
    await teardown();
    forgetPassBooks();
    await loadFlow(flow(sim.url), { nodes: NODES, userDir: dir });
    await waitReady();
    assert.equal(assertFailed(await unlock({ pass: b.code, deviceId: 102 }), "denied", null).reason, "locked-out");
    assert.equal(assertFailed(await unlock({ pass: miss(codes, 8, 80_001) }), "denied", null).reason, "pass");
    const fifth = assertFailed(await unlock({ pass: miss(codes, 8, 80_002) }), "denied", null);
    assert.match(fifth.message, /at this door, every message is refused until/);
  });

  it("a flood of blind guesses against 300 passes with 6-digit codes finds no live code: the pass book is asked at most five times per lockout, however many guesses come and however fast", async () => {
    await deploy({}, { codeLength: 6 });
    const now = Date.now();
    const o = outs.length;
    for (let i = 0; i < 300; i++) {
      const doors = i % 3 === 0 ? [101] : [102];
      helper.getNode("dp").receive({
        payload: { action: "issue", guest: `G${i}`, doors, from: iso(now - HOUR), until: iso(now + 24 * HOUR) },
      });
    }
    await until("300 passes issued", () => outs.length - o === 300, 30_000);
    const codes = new Set(outs.slice(o).map((m) => m.payload.code as string));
    assert.equal(codes.size, 300);
    sim.control.resetRequests();
    const book = watchBook();
    const ok = received("u1-ok");
    const fail = received("u1-fail");
    /** Sends every guess in one turn (a flood), then waits for every answer. */
    const flood = async (guesses: string[]) => {
      const before = ok.length + fail.length;
      for (const g of guesses) helper.getNode("u1").receive({ pass: g });
      await until("every guess answered", () => ok.length + fail.length - before === guesses.length, 60_000);
    };
    // 1. A thousand codes no pass has, all at once: five are looked up, the fifth locks the node.
    const blind = Array.from({ length: 1000 }, (_, i) => miss(codes, 6, 1 + i * 700));
    await flood(blind);
    assert.equal(book.lookups(), 5, "five lookups for a thousand guesses at once");
    // 2. While locked: guesses that hold every live code, for this door and another, all at once.
    await flood([...codes, ...blind.slice(0, 200)]);
    assert.equal(book.lookups(), 5, "no lookup while locked, whatever the guesses");
    // 3. A second lockout period: five lookups more, never more than the lockout allows.
    clock.tick(15 * MIN);
    await flood(blind.slice(200));
    assert.equal(book.lookups(), 10, "five more lookups in the next 15 minutes");
    book.stop();
    assert.equal(ok.length, 0, "no guess opened a door");
    assert.equal(unlockPuts(sim).length, 0);
    const reasons = new Set(fail.map((m) => m.payload.reason));
    assert.deepEqual([...reasons].sort(), ["locked-out", "pass"]);
    const told = fail.filter((m) => m.payload.reason === "pass").map((m) => m.payload.message);
    assert.equal(told.length, 10);
    assert.ok(
      told.every((t) => t.startsWith("no pass has this code")),
      "no answer told a real code apart",
    );
  });
});
