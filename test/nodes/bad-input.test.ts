/**
 * Bad input gets a clear error and sends nothing (docs/performance.md#reliability-checks):
 * oversized messages, bad account configuration (docs/nodes.md#door-account), a bad base URL
 * quoted clipped (docs/security.md#text-in-the-editor-and-the-dashboard), and a token without
 * `exp` (docs/session.md#renewal). Requests are counted at the simulator.
 */
import { strict as assert } from "node:assert";
import { BaseUrlError, parseBaseUrl } from "../../src/client/base-url.js";
import { SessionHaltedError } from "../../src/session/errors.js";
import type { RunningSimulator } from "../../src/simulator/index.js";
import { startSimulator } from "../../src/simulator/index.js";
import { fakeClock } from "../helpers/fake-clock.js";
import {
  accountOf,
  assertAccepted,
  assertFailed,
  helper,
  lastStatus,
  loadFlow,
  startSim,
  teardown,
  unlock,
  unlockFlow,
  until,
  waitReady,
  waitState,
} from "../helpers/flow.js";
import { buildSession, ops } from "../helpers/session.js";

const apiRequests = (sim: RunningSimulator) => sim.control.requests().filter((r) => r.operation !== "docs").length;

describe("Bad input gets a clear error and sends nothing: a 10 MB door name or payload, an account setting that cannot be used (docs/nodes.md#door-account)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
  });
  after(async () => {
    await sim.close();
  });

  it("a 10 MB door name is refused without a request, and the error does not echo it", async () => {
    await loadFlow(unlockFlow(sim.url));
    // Ready, and the start-up fetch of the device list is done (so it is not counted below).
    await waitReady();
    sim.control.resetRequests();
    const huge = "D".repeat(10 * 1024 * 1024);
    const out = await unlock({ door: huge, payload: huge });
    const p = assertFailed(out, "invalid-input", null);
    assert.ok(p.message.length < 500, `the message is short (${p.message.length} characters)`);
    assert.equal(apiRequests(sim), 0);
  });

  it("a 10 MB payload with a valid door: exactly one PUT, and the payload is replaced by the result", async () => {
    await loadFlow(unlockFlow(sim.url));
    await waitState("ready");
    sim.control.resetRequests();
    const out = await unlock({ deviceId: 101, payload: Buffer.alloc(10 * 1024 * 1024, 1) });
    assertAccepted(out);
    assert.equal(sim.control.requests({ operation: "unlockDevice" }).length, 1);
  });

  for (const [what, extra, creds, pattern] of [
    ["http:// to a non-loopback host", { baseUrl: "http://door.example.com" }, undefined, /https/],
    ["a base URL that is not a URL", { baseUrl: "not a url" }, undefined, /not a URL/],
    [
      "a loopback address without a scheme (the fix is suggested)",
      { baseUrl: "127.0.0.1:18787" },
      undefined,
      /base URL "127\.0\.0\.1:18787" has no scheme: write it as http:\/\/127\.0\.0\.1:18787 \(a loopback host may use http:\/\/\) or https:\/\/127\.0\.0\.1:18787/,
    ],
    [
      "localhost and a port without a scheme (not read as a scheme 'localhost:')",
      { baseUrl: "localhost:18787" },
      undefined,
      /base URL "localhost:18787" has no scheme: write it as http:\/\/localhost:18787/,
    ],
    [
      "a host name without a scheme (the fix is suggested)",
      { baseUrl: "door.example.com" },
      undefined,
      /base URL "door\.example\.com" has no scheme: write it as https:\/\/door\.example\.com/,
    ],
    [
      "an empty phone number",
      {},
      { acc1: { phoneNumber: "", password: "demo-password" } },
      /the phone number is missing/,
    ],
    [
      "an email login with an empty email",
      { loginMethod: "email" },
      { acc1: { email: "  ", password: "demo-password" } },
      /the email address is missing/,
    ],
    [
      "a malformed phone number",
      {},
      { acc1: { phoneNumber: "0701234567", password: "demo-password" } },
      /phone number/,
    ],
    ["an empty password", {}, { acc1: { phoneNumber: "+15550000001", password: "" } }, /password/],
    [
      "an email login without an email",
      { loginMethod: "email" },
      { acc1: { password: "demo-password" } },
      /the email address is missing/,
    ],
  ] as const) {
    it(`account configured with ${what}: red status, every unlock fails clearly, nothing is sent`, async () => {
      sim.control.resetRequests();
      const base = (extra as { baseUrl?: string }).baseUrl ?? sim.url;
      await loadFlow(unlockFlow(base, {}, extra), creds ? { creds } : {});
      const acc = accountOf();
      assert.equal(acc.account, null, "no session is started");
      assert.match(acc.problem, pattern);
      if (/missing/.test(pattern.source))
        assert.doesNotMatch(
          acc.problem,
          /must be \+ followed by|malformed/,
          "a missing value is called missing, not malformed",
        );
      assert.ok(!String(acc.problem).includes("0701234567"), "the error does not echo the phone number");
      await until("red status", () => lastStatus(helper.getNode("u1"))?.fill === "red");
      const p = assertFailed(await unlock({ deviceId: 101 }), "session-halted", null);
      assert.match(p.message, pattern);
      assert.equal(apiRequests(sim), 0);
    });
  }
});

// docs/security.md#text-in-the-editor-and-the-dashboard: the error reaches the editor.
describe("A bad base URL is quoted in its error as a clipped JSON string, never echoed raw (docs/security.md#text-in-the-editor-and-the-dashboard)", () => {
  const messageOf = (value: string): string => {
    try {
      parseBaseUrl(value);
    } catch (e) {
      assert.ok(e instanceof BaseUrlError);
      return e.message;
    }
    return assert.fail(`${value} was accepted`);
  };

  it("markup is quoted whole when short: its quotes escaped, the text otherwise as typed", () => {
    const markup = '<img src=x onerror="window.__xss=1">';
    assert.equal(messageOf(markup), `base URL ${JSON.stringify(markup)} is not a URL`);
  });

  it("a long value is cut to 80 characters with an ellipsis; line breaks show as \\n", () => {
    const long = "x".repeat(10_000);
    const m = messageOf(`a\nb ${long}`);
    assert.ok(m.length < 120, `short (${m.length})`);
    assert.ok(m.includes('"a\\nb x') && m.includes('x…"'), m);
  });

  it("a value typed without a scheme is quoted and clipped too: markup, 10 000 characters", () => {
    const markup = "door.example/<img/src=x/onerror=window.__xss=1>";
    assert.ok(messageOf(markup).includes(JSON.stringify(markup)), messageOf(markup));
    const m = messageOf(`door.example/${"x".repeat(10_000)}`);
    assert.ok(m.length < 250, `short (${m.length}): ${m.slice(0, 300)}`);
  });

  // docs/security.md#secrets: a password typed into the base URL reaches no error text.
  it("a user name and password typed into a base URL are not quoted back, whatever else is wrong with it", () => {
    for (const value of [
      "ops:12345678@door.example.com",
      "https://ops:S3cret pw@door.example.com",
      "https://ops:S3cret%pw@door example.com/x",
    ]) {
      const m = messageOf(value);
      assert.ok(!/12345678|S3cret/.test(m), `${JSON.stringify(value)}: ${m}`);
    }
  });

  it("an http:// host and a foreign scheme are quoted too", () => {
    assert.match(messageOf("http://door.example.com"), /got host "door\.example\.com"$/);
    assert.match(messageOf(`ftp${"p".repeat(300)}://x`), /got "ftpp{16}…"$/);
  });
});

describe("A token without exp is accepted and renewed on the 36-hour schedule (docs/session.md#renewal)", function () {
  this.timeout(20_000);
  it("is accepted with one warning and renewed on the 36 h schedule (no crash, no loop)", async () => {
    const clock = fakeClock();
    const sim = await startSimulator({ rateLimit: false, now: () => clock.now() });
    try {
      sim.control.inject({ kind: "jwt-without-exp", endpoint: "loginByPhone" });
      const b = buildSession(sim, { clock });
      await b.session.start();
      assert.equal(b.session.state, "ready");
      assert.equal(b.session.snapshot().accessExpiresAt, null);
      assert.equal(b.log.lines.filter((l) => l.includes("no readable exp")).length, 1);
      assert.equal(b.session.snapshot().renewAt, clock.now() + 36 * 3600_000);
      await b.session.call((t) => b.client.getDevice(t, 101));
      await clock.tickAsync(36 * 3600_000);
      await until(
        "renewed",
        () => sim.control.requests({ operation: "refreshToken" }).length === 1 && b.session.state === "ready",
      );
      assert.deepEqual(ops(sim), ["loginByPhone 200", "getDevice 200", "refreshToken 200"]);
      await b.session.close();
      await assert.rejects(b.session.token(), SessionHaltedError);
      await b.client.close();
    } finally {
      await sim.close();
      clock.uninstall();
    }
  });
});
