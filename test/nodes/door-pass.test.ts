/**
 * Guest passes in a real Node-RED runtime against the simulator (docs/passes.md): door-pass
 * issues, revokes and lists; a door-unlock with acceptPasses opens for a live pass's code and for
 * nothing else; a use is counted once, also when messages race for the last one; the code is in
 * the issued message and nowhere else; passes outlive a restart. Requests are counted at the
 * simulator.
 */
import { strict as assert } from "node:assert";
import crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import sinon from "sinon";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { forgetPassBooks } from "../../src/passes/pass-book.js";
import {
  ALL_NODES,
  assertAccepted,
  assertFailed,
  catchModule,
  catchNode,
  doorPassNode,
  helper,
  helperNodes,
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
  ) {
    ({ userDir } = await loadFlow(flow(sim.url, unlockExtra, passExtra), { nodes: NODES, userDir: dir }));
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
      assert.equal(r.error.error.code, "invalid-input");
      const listed = await pass({ action: "list" });
      assert.ok("ok" in listed);
      assert.deepEqual(listed.ok.payload.passes, []);
    });
  }

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
    for (const m of fail) assert.equal(m.payload.reason, "pass");
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
});
