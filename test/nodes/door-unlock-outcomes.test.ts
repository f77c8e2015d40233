/**
 * door-unlock in a real Node-RED 4 runtime against the simulator: every row of the outcome
 * table (docs/outcomes.md#door-unlock-outcomes), with the requests counted at the simulator; the
 * outcome on every wire, and done() only once its closing record is on disk
 * (docs/audit-log.md#group-commit).
 */
import { strict as assert } from "node:assert";
import type { RunningSimulator } from "../../src/simulator/index.js";
import {
  ALL_NODES,
  CREDS,
  accountNode,
  assertAccepted,
  assertFailed,
  completeModule,
  completeNode,
  count,
  helper,
  loadFlow,
  logins,
  nodeRedStatusModule,
  nodeRedStatusNode,
  readAudit,
  startSim,
  tab,
  teardown,
  unlock,
  unlockFlow,
  unlockNode,
  helperNodes,
  unlockRequests,
  until,
  waitReady,
  waitState,
  accountOf,
  stopFlows,
  editorPost,
} from "../helpers/flow.js";
import { refusedPort } from "../helpers/refused-port.js";
import { received, settle } from "../helpers/odd-messages.js";
import { assertRetryAfterInText } from "../helpers/session.js";

describe("door-unlock outcomes: every row of the outcome table, the requests counted (docs/outcomes.md#door-unlock-outcomes)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;

  before(async () => {
    sim = await startSim();
    const flow = [
      ...unlockFlow(sim.url, { deviceId: "101", doorName: "Front Door", doorLocation: "Main Street 1" }),
      unlockNode({ rejectRetained: false }, "u2"),
      ...helperNodes("u2-ok", "u2-fail"),
    ];
    ({ userDir } = await loadFlow(flow));
    await waitReady();
  });
  after(async () => {
    await teardown();
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });

  it("accepted: output 1 with outcome, status 200, deviceId, lockId, door, actor, at; exactly one PUT", async () => {
    const out = await unlock({ deviceId: 101 });
    const p = assertAccepted(out);
    assert.equal(p.deviceId, 101);
    assert.equal(p.lockId, null);
    assert.equal(p.door, "Front Door");
    assert.equal(p.actor, "node-red:u1");
    assert.ok(Math.abs(Date.parse(p.at) - Date.now()) < 10_000);
    assert.equal(count(sim, "unlockDevice", 101), 1);
    assert.equal(unlockRequests(sim), 1);
    assert.equal(sim.control.device(101).unlocks.length >= 1, true);
  });

  it("accepted: msg.actor is used as the actor; the configured door is used without msg fields", async () => {
    const out = await unlock({ actor: "reception" });
    const p = assertAccepted(out);
    assert.equal(p.actor, "reception");
    assert.equal(p.deviceId, 101);
    assert.equal(count(sim, "unlockDevice", 101), 1);
  });

  const badDeviceIds: [string, unknown][] = [
    ['string "101"', "101"],
    ["float 101.5", 101.5],
    ["negative -101", -101],
    ["2^31", 2 ** 31],
    ["NaN", Number.NaN],
    ["zero", 0],
    ["object", { id: 101 }],
    ["array", [101]],
    ["null", null],
  ];
  for (const [label, value] of badDeviceIds) {
    it(`invalid-input: msg.deviceId ${label} → output 2, nothing sent`, async () => {
      const out = await unlock({ deviceId: value });
      const p = assertFailed(out, "invalid-input", null);
      assert.match(p.message, /deviceId/);
      assert.equal(p.mayHaveOpened, false);
      assert.equal(unlockRequests(sim), 0);
    });
  }

  it("msg.deviceId 2147483647 (2^31 - 1, the largest id) is valid input: it reaches the service as that id (not-found there), one PUT", async () => {
    const p = assertFailed(await unlock({ deviceId: 2147483647 }), "not-found", 404);
    assert.equal(p.deviceId, 2147483647);
    assert.equal(count(sim, "unlockDevice", 2147483647), 1);
    assert.equal(unlockRequests(sim), 1);
  });

  const badLockIds: [string, unknown][] = [
    ['string "2"', "2"],
    ["zero", 0],
    ["float 1.5", 1.5],
    ["negative", -2],
    ["2^31", 2 ** 31],
    ["object", { id: 2 }],
  ];
  for (const [label, value] of badLockIds) {
    it(`invalid-input: msg.lockId ${label} on 104 → nothing sent`, async () => {
      const out = await unlock({ deviceId: 104, lockId: value });
      const p = assertFailed(out, "invalid-input", null);
      assert.match(p.message, /lockId/);
      assert.equal(unlockRequests(sim), 0);
    });
  }

  it("invalid-input: lock 3 of 104 (not one of its locks) → nothing sent", async () => {
    const out = await unlock({ deviceId: 104, lockId: 3 });
    const p = assertFailed(out, "invalid-input", null);
    assert.match(p.message, /no lock 3/);
    assert.equal(unlockRequests(sim), 0);
  });

  it("invalid-input: unknown door name lists the known doors, nothing sent", async () => {
    const out = await unlock({ door: "Front Dor" });
    const p = assertFailed(out, "invalid-input", null);
    assert.match(p.message, /Front Door/);
    assert.ok(Array.isArray(p.candidates) && p.candidates.includes("Front Door"), JSON.stringify(p.candidates));
    assert.equal(unlockRequests(sim), 0);
  });

  it('invalid-input: ambiguous "Back Door" lists both candidates, nothing sent', async () => {
    const out = await unlock({ door: "Back Door" });
    const p = assertFailed(out, "invalid-input", null);
    assert.match(p.message, /ambiguous/);
    assert.match(p.message, /Main Street 1 \/ Back Door/);
    assert.match(p.message, /Harbour Warehouse \/ Back Door/);
    assert.deepEqual([...p.candidates].sort(), ["Harbour Warehouse / Back Door", "Main Street 1 / Back Door"]);
    assert.equal(unlockRequests(sim), 0);
  });

  const badDoors: [string, unknown][] = [
    ["empty", ""],
    ["blank", "   "],
    ["huge", "D".repeat(10_000)],
    ["control character", "Front\u0000Door"],
    ["newline", "Front Door\n"],
    ["number", 101],
    ["object", { name: "Front Door" }],
  ];
  for (const [label, value] of badDoors) {
    it(`invalid-input: msg.door ${label} → nothing sent`, async () => {
      const out = await unlock({ door: value });
      const p = assertFailed(out, "invalid-input", null);
      assert.match(p.message, /door/);
      assert.ok(p.message.length < 500, "the message does not echo a huge input");
      assert.equal(unlockRequests(sim), 0);
    });
  }

  const badActors: [string, unknown][] = [
    ["empty", ""],
    ["number", 42],
    ["control character", "bob\u0007"],
    ["newline", "bob\nalice"],
    ["too long (201 characters, one more than docs/nodes.md#door-unlock allows)", "a".repeat(201)],
    ["object", { name: "bob" }],
  ];
  for (const [label, value] of badActors) {
    it(`invalid-input: msg.actor ${label} → nothing sent`, async () => {
      const out = await unlock({ deviceId: 101, actor: value });
      const p = assertFailed(out, "invalid-input", null);
      assert.match(p.message, /actor/);
      assert.equal(p.actor, "node-red:u1", "a bad actor is not echoed as the actor");
      assert.equal(unlockRequests(sim), 0);
    });
  }

  it("accepted: msg.actor of exactly 200 characters (the most docs/nodes.md#door-unlock allows, as for the node's actor) is the actor; one PUT", async () => {
    const actor = `${"a".repeat(99)} ${"b".repeat(100)}`;
    assert.equal(actor.length, 200);
    const p = assertAccepted(await unlock({ deviceId: 101, actor }));
    assert.equal(p.actor, actor);
    assert.equal(count(sim, "unlockDevice", 101), 1);
  });

  it("retained-rejected: msg.retain true → output 2, nothing sent", async () => {
    const out = await unlock({ deviceId: 101, retain: true });
    const p = assertFailed(out, "retained-rejected", null);
    assert.equal(p.mayHaveOpened, false);
    assert.equal(unlockRequests(sim), 0);
  });

  it("retained message with rejectRetained off: unlocks (one PUT)", async () => {
    const out = await unlock({ deviceId: 101, retain: true }, "u2");
    assertAccepted(out);
    assert.equal(unlockRequests(sim), 1);
  });

  it("forbidden 403: door 106 (no key), exactly one PUT", async () => {
    const p = assertFailed(await unlock({ deviceId: 106 }), "forbidden", 403);
    assert.equal(p.deviceId, 106);
    assert.equal(p.door, "Boiler Room");
    assert.equal(p.mayHaveOpened, false);
    assert.equal(unlockRequests(sim), 1);
  });

  it("forbidden 403: door 107 as a whole (key for lock 2 only), exactly one PUT", async () => {
    assertFailed(await unlock({ deviceId: 107 }), "forbidden", 403);
    assert.equal(count(sim, "unlockDevice", 107), 1);
    assert.equal(unlockRequests(sim), 1);
  });

  it("not-found 404: unknown id 999, exactly one PUT, not repeated; no list fetch for an id never listed", async () => {
    const p = assertFailed(await unlock({ deviceId: 999 }), "not-found", 404);
    assert.equal(p.deviceId, 999);
    assert.equal(p.mayHaveOpened, false);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(unlockRequests(sim), 1);
    // The list is fetched again after a 404 for a door that is in it (docs/doors.md#the-device-list);
    // 999 never was (see the known-id case in door-unlock-selection.test.ts, which proves the re-fetch).
    assert.equal(count(sim, "listUserDevices"), 0);
  });

  it("unreachable 502 (injected): exactly one PUT", async () => {
    sim.control.inject({ kind: "502", endpoint: "unlockDevice" });
    const p = assertFailed(await unlock({ deviceId: 101 }), "unreachable", 502);
    assert.equal(p.mayHaveOpened, false);
    assert.equal(unlockRequests(sim), 1);
  });

  it("offline 503: door 105 is offline, exactly one PUT", async () => {
    const p = assertFailed(await unlock({ deviceId: 105 }), "offline", 503);
    assert.equal(p.door, "Server Room");
    assert.equal(unlockRequests(sim), 1);
  });

  it("offline 503 (injected on 101): exactly one PUT", async () => {
    sim.control.inject({ kind: "503", endpoint: "unlockDevice", deviceId: 101 });
    assertFailed(await unlock({ deviceId: 101 }), "offline", 503);
    assert.equal(unlockRequests(sim), 1);
  });

  it("timeout 504: mayHaveOpened true, exactly one PUT", async () => {
    sim.control.inject({ kind: "504", endpoint: "unlockDevice" });
    const p = assertFailed(await unlock({ deviceId: 101 }), "timeout", 504);
    assert.equal(p.mayHaveOpened, true);
    assert.equal(unlockRequests(sim), 1);
  });

  it("network-error: connection dropped after the request left, mayHaveOpened true, exactly one PUT", async () => {
    sim.control.inject({ kind: "drop", endpoint: "unlockDevice" });
    const p = assertFailed(await unlock({ deviceId: 101 }), "network-error", null);
    assert.equal(p.mayHaveOpened, true);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(unlockRequests(sim), 1);
  });

  it("error: an unclassified status (500) is outcome error with its status, exactly one PUT", async () => {
    sim.control.inject({ kind: "500", endpoint: "unlockDevice" });
    assertFailed(await unlock({ deviceId: 101 }), "error", 500);
    assert.equal(unlockRequests(sim), 1);
  });

  it("401 path: an expired access token → one refresh, one replay: exactly 2 PUTs, accepted", async () => {
    const refreshesBefore = sim.control.counts().refreshes;
    sim.control.expireAccessToken("demo");
    const out = await unlock({ deviceId: 101 });
    assertAccepted(out);
    assert.equal(count(sim, "unlockDevice", 101), 2);
    assert.equal(count(sim, "refreshToken"), 1);
    assert.equal(sim.control.counts().refreshes - refreshesBefore, 1);
    assert.equal(logins(sim), 0);
  });

  it("rate-limited 429: retryAfter from Retry-After, exactly one PUT (last here: the Retry-After then holds the account, docs/session.md#a-retry-after-holds-the-account)", async () => {
    sim.control.inject({ kind: "429", endpoint: "unlockDevice", retryAfter: 7 });
    const p = assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    assert.equal(p.retryAfter, 7);
    assert.equal(p.mayHaveOpened, false);
    assert.equal(unlockRequests(sim), 1);
  });

  it("the audit file of the suite got attempt and result records", () => {
    const lines = readAudit(userDir);
    assert.ok(lines.some((l) => l.type === "unlock-attempt"));
    assert.ok(lines.some((l) => l.type === "unlock-result"));
  });
});

describe("door-unlock's own actor is one line of at most 200 characters: a node deployed with another says so, and a message that would carry it is invalid-input, nothing sent (docs/nodes.md#door-unlock)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  let userDir: string;
  const longest = `${"a".repeat(99)} ${"b".repeat(100)}`;

  /** The node's node.error calls, as text. */
  const errorsOf = (id: string): string[] => {
    const node = helper.getNode(id);
    return node.error
      .getCalls()
      .filter((c: { thisValue: unknown }) => c.thisValue === node)
      .map((c: { args: unknown[] }) => String((c.args[0] as Error)?.message ?? c.args[0]));
  };

  before(async () => {
    sim = await startSim();
    ({ userDir } = await loadFlow([
      ...unlockFlow(sim.url, {
        deviceId: "101",
        doorName: "Front Door",
        doorLocation: "Main Street 1",
        actor: longest,
      }),
      unlockNode({ deviceId: "101", actor: "c".repeat(201) }, "u2"),
      ...helperNodes("u2-ok", "u2-fail"),
      unlockNode({ deviceId: "101", actor: "front desk\nback office" }, "u3"),
      ...helperNodes("u3-ok", "u3-fail"),
    ]));
    await waitReady();
  });
  after(async () => {
    await teardown();
    await sim.close();
  });
  beforeEach(() => sim.control.resetRequests());

  it("200 characters: the node's actor, in the output and the audit records; one PUT; no error at deploy", async () => {
    assert.equal(longest.length, 200);
    assert.deepEqual(errorsOf("u1"), []);
    const msgid = "actor-200";
    const p = assertAccepted(await unlock({ _msgid: msgid }));
    assert.equal(p.actor, longest);
    assert.equal(unlockRequests(sim), 1);
    await until("the result record", () =>
      readAudit(userDir).some((r) => r.msgid === msgid && r.type === "unlock-result"),
    );
    assert.deepEqual(
      readAudit(userDir)
        .filter((r) => r.msgid === msgid)
        .map((r) => [r.type, r.actor]),
      [
        ["unlock-attempt", longest],
        ["unlock-result", longest],
      ],
    );
  });

  for (const [what, id] of [
    ["201 characters", "u2"],
    ["two lines", "u3"],
  ] as const) {
    it(`${what}: an error at deploy; a message without msg.actor is invalid-input naming the node's actor, nothing sent; one with msg.actor opens`, async () => {
      assert.ok(
        errorsOf(id).some((e) => /the node's actor must be one line of at most 200 characters/.test(e)),
        JSON.stringify(errorsOf(id)),
      );
      const p = assertFailed(await unlock({}, id), "invalid-input", null);
      assert.match(p.message, /the node's actor must be one line of at most 200 characters/);
      assert.equal(p.actor, `node-red:${id}`, "the bad actor is not carried");
      assert.equal(p.mayHaveOpened, false);
      assert.equal(unlockRequests(sim), 0);
      // msg.actor replaces the node's actor: the message names who asks, and the node's is not used.
      const ok = assertAccepted(await unlock({ actor: "reception" }, id));
      assert.equal(ok.actor, "reception");
      assert.equal(unlockRequests(sim), 1);
    });
  }
});

describe("door-unlock: session-halted and unauthorized (docs/outcomes.md#door-unlock-outcomes, docs/session.md#a-401-and-its-replay)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  beforeEach(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
    await sim.close();
  });

  it("session-halted: a wrong password halts the account; messages send nothing and log in no more", async () => {
    await loadFlow(unlockFlow(sim.url), {
      creds: { acc1: { phoneNumber: "+15550000001", password: "wrong-password" } },
    });
    await waitState("halted-login-failed");
    const loginsAfterStart = logins(sim);
    assert.equal(loginsAfterStart, 1, "the login is tried once, not retried on 401");
    for (let i = 0; i < 3; i++) {
      const p = assertFailed(await unlock({ deviceId: 101 }), "session-halted", null);
      assert.equal(p.mayHaveOpened, false);
    }
    assert.equal(unlockRequests(sim), 0);
    assert.equal(logins(sim), loginsAfterStart);
  });

  it("session-halted without a usable account: the payload's actor is msg.actor, else the node's Actor, else node-red:<id> (docs/outcomes.md#door-unlock-outcomes)", async () => {
    await loadFlow([tab(), unlockNode({ account: "", actor: "front desk" }), ...helperNodes("u1-ok", "u1-fail")]);
    assert.equal(assertFailed(await unlock({ deviceId: 101, actor: "alice" }), "session-halted", null).actor, "alice");
    assert.equal(assertFailed(await unlock({ deviceId: 101 }), "session-halted", null).actor, "front desk");
    // A msg.actor that is no actor is not taken: the node's stands in.
    assert.equal(assertFailed(await unlock({ deviceId: 101, actor: "" }), "session-halted", null).actor, "front desk");
    await teardown();
    await loadFlow([tab(), unlockNode({ account: "" }), ...helperNodes("u1-ok", "u1-fail")]);
    assert.equal(assertFailed(await unlock({ deviceId: 101 }), "session-halted", null).actor, "node-red:u1");
    assert.equal(unlockRequests(sim), 0);
  });

  it("session-halted: a second superseding login within the hour halts; then nothing is sent", async () => {
    await loadFlow(unlockFlow(sim.url));
    await waitReady();
    // First takeover: 401 → refresh refused → one re-login → the replay is accepted.
    sim.control.supersede("demo");
    sim.control.resetRequests();
    assertAccepted(await unlock({ deviceId: 101 }));
    assert.equal(count(sim, "unlockDevice"), 2);
    assert.equal(logins(sim), 1);
    // Second takeover within the hour: the account halts instead of fighting back.
    sim.control.supersede("demo");
    sim.control.resetRequests();
    // Its PUT was sent and answered 401 and could not be replayed: unauthorized, not halted.
    const second = assertFailed(await unlock({ deviceId: 101 }), "unauthorized", 401);
    assert.equal(second.mayHaveOpened, false);
    assert.equal(count(sim, "unlockDevice"), 1, "the PUT answered 401 is not replayed once the account halted");
    assert.equal(logins(sim), 0);
    assert.equal(accountOf().account.session.state, "halted-superseded");
    sim.control.resetRequests();
    for (let i = 0; i < 3; i++) assertFailed(await unlock({ deviceId: 101 }), "session-halted", null);
    assert.equal(
      sim.control.requests().filter((r) => r.operation !== "docs").length,
      0,
      "nothing at all is sent while halted",
    );
  });

  it("unauthorized 401: the replay after one refresh is answered 401 again → 2 PUTs, 1 refresh, account halted", async () => {
    await loadFlow(unlockFlow(sim.url));
    await waitReady();
    sim.control.resetRequests();
    const refreshes = sim.control.counts().refreshes;
    sim.control.expireAccessToken("demo");
    // Both PUTs are held 600 ms before the service checks the token, so the replay's fresh
    // token can be expired too while it is in flight.
    sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 600, count: 2 });
    const pending = unlock({ deviceId: 101 });
    await until("the refresh", () => sim.control.counts().refreshes > refreshes, 5000, 2);
    sim.control.expireAccessToken("demo");
    const p = assertFailed(await pending, "unauthorized", 401);
    assert.equal(p.deviceId, 101);
    assert.equal(count(sim, "unlockDevice"), 2);
    assert.equal(count(sim, "refreshToken"), 1);
    assert.equal(logins(sim), 0);
    assert.equal(accountOf().account.session.state, "halted-superseded");
  });

  it("service-unreachable: login fails on 5xx (with its single retry) → no login per message, nothing sent", async () => {
    sim.control.inject({ kind: "503", endpoint: "loginByPhone", count: 2 });
    await loadFlow(unlockFlow(sim.url));
    await waitState("unreachable");
    assert.equal(logins(sim), 2, "login and the spec's single retry");
    const p = assertFailed(await unlock({ deviceId: 101 }), "service-unreachable", null);
    assert.equal(p.mayHaveOpened, false);
    assertFailed(await unlock({ deviceId: 101 }), "service-unreachable", null);
    assert.equal(unlockRequests(sim), 0);
    assert.equal(logins(sim), 2, "no new login within the minute");
  });

  // docs/session.md#connection-errors
  it("network-error: a service that answered before and then stopped is said to be not reachable, not the base URL to be checked", async () => {
    const own = await startSim();
    try {
      await loadFlow(unlockFlow(own.url));
      await waitReady();
      assertAccepted(await unlock({ deviceId: 101 }));
    } finally {
      await own.close();
    }
    const p = assertFailed(await unlock({ deviceId: 101 }), "network-error", null);
    assert.match(
      p.message,
      /the service at http:\/\/127\.0\.0\.1:\d+ is not reachable \(connection refused\); it answered before/,
    );
    assert.doesNotMatch(p.message, /check the base URL/);
    assert.equal(p.mayHaveOpened, false);
  });

  it("service-unreachable: base URL on a closed loopback port → output 2, status null", async () => {
    await loadFlow(unlockFlow(`http://127.0.0.1:${await refusedPort()}`));
    await waitState("unreachable");
    const p = assertFailed(await unlock({ deviceId: 101 }), "service-unreachable", null);
    assert.equal(p.mayHaveOpened, false);
    assert.equal(unlockRequests(sim), 0);
  });
});

// docs/session.md#rate-limits: every rate-limited outcome carries retryAfter, the whole
// seconds until the package sends again, and its message names that same number; whether the
// PUT, the renewal (refresh or login) or the device-list fetch was limited.
describe("door-unlock: every rate-limited payload carries retryAfter, named in its text (docs/session.md#rate-limits)", function () {
  this.timeout(20000);
  let sim: RunningSimulator;
  beforeEach(async () => {
    sim = await startSim();
  });
  afterEach(async () => {
    await teardown();
    await sim.close();
  });

  it("the PUT answered 429 (Retry-After 7): retryAfter 7, and the text says 7 s", async () => {
    await loadFlow(unlockFlow(sim.url));
    await waitReady();
    sim.control.inject({ kind: "429", endpoint: "unlockDevice", retryAfter: 7 });
    const p = assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    assert.equal(assertRetryAfterInText(p), 7);
    assert.equal(unlockRequests(sim), 1);
  });

  it("the refresh after the PUT's 401 answered 429 (Retry-After 5): this message and the next both say when the package sends again", async () => {
    await loadFlow(unlockFlow(sim.url));
    await waitReady();
    sim.control.resetRequests();
    sim.control.revokeAccessToken("demo");
    sim.control.inject({ kind: "429", endpoint: "refreshToken", retryAfter: 5 });
    const first = assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    assert.equal(assertRetryAfterInText(first), 5, "the service's 5 s, not a wait of our own");
    assert.equal(first.mayHaveOpened, false);
    const second = assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    const left = assertRetryAfterInText(second);
    assert.ok(left >= 4 && left <= 5, `retryAfter ${left}`);
    assert.equal(second.mayHaveOpened, false);
    assert.equal(unlockRequests(sim), 1, "only the first message's PUT (answered 401) was sent");
    assert.equal(count(sim, "refreshToken"), 1);
  });

  it("the login answered 429 (Retry-After 5): a message is rate-limited (not service-unreachable), with retryAfter, and nothing is sent", async () => {
    sim.control.inject({ kind: "429", endpoint: "loginByPhone", retryAfter: 5 });
    await loadFlow(unlockFlow(sim.url));
    await waitState("unreachable");
    const p = assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    const left = assertRetryAfterInText(p);
    assert.ok(left >= 4 && left <= 5, `retryAfter ${left}`);
    assert.equal(p.mayHaveOpened, false);
    assert.equal(unlockRequests(sim), 0);
    assert.equal(logins(sim), 1);
  });

  it("msg.door with no list yet, the list fetch answered 429 (Retry-After 90): rate-limited (not error), with retryAfter, and no PUT", async () => {
    // More than a minute: the client does not wait it out, the fetch fails at once.
    sim.control.inject({ kind: "429", endpoint: "listUserDevices", retryAfter: 90 });
    await loadFlow(unlockFlow(sim.url));
    await until("the start-up list fetch to fail", () => accountOf().account?.directory.nextRetryAt() != null);
    const p = assertFailed(await unlock({ door: "Front Door" }), "rate-limited", 429);
    const left = assertRetryAfterInText(p);
    assert.ok(left >= 88 && left <= 90, `retryAfter ${left}`);
    assert.equal(p.mayHaveOpened, false);
    assert.equal(unlockRequests(sim), 0);
    assert.equal(count(sim, "listUserDevices"), 1, "nothing fetched within the Retry-After");
  });
});

describe("A Retry-After holds the account: after a PUT answered 429 with Retry-After, no message sends anything until it has passed, through any node or config-node copy of the account (docs/session.md#a-retry-after-holds-the-account)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  beforeEach(async () => {
    sim = await startSim({ rateLimit: false });
  });
  afterEach(async () => {
    await teardown();
    await sim.close();
  });

  it("the PUT answered 429 (Retry-After 30): a message 1 s later is rate-limited at once with the seconds left, nothing sent, mayHaveOpened false, one unlock-rejected record", async () => {
    const { userDir } = await loadFlow(unlockFlow(sim.url));
    await waitReady();
    sim.control.resetRequests();
    sim.control.inject({ kind: "429", endpoint: "unlockDevice", retryAfter: 30 });
    const first = assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    assert.equal(first.retryAfter, 30);
    await new Promise((r) => setTimeout(r, 1000));
    const second = assertFailed(await unlock({ deviceId: 101, _msgid: "held-1" }), "rate-limited", 429);
    // The seconds left, rounded up: never more than the service's 30, and counting down (the 2 s
    // case below sends again once they are over).
    assert.ok(second.retryAfter >= 28 && second.retryAfter <= 30, `retryAfter ${second.retryAfter}`);
    assert.equal(assertRetryAfterInText(second), second.retryAfter);
    assert.equal(second.mayHaveOpened, false);
    assert.equal(unlockRequests(sim), 1, "only the first PUT (answered 429) was sent");
    const put = sim.control.requests({ operation: "unlockDevice" })[0];
    const after = sim.control.requests().filter((r) => r.startedAt > put.startedAt);
    assert.deepEqual(
      after.map((r) => r.operation),
      [],
      "nothing at all was sent after it",
    );
    await until("the audit records", () => readAudit(userDir).some((r) => r.type === "unlock-rejected"));
    const records = readAudit(userDir).filter((r) => r.msgid === "held-1");
    assert.deepEqual(
      records.map((r) => [r.type, r.outcome]),
      [["unlock-rejected", "rate-limited"]],
      "one unlock-rejected record, no attempt",
    );
  });

  it("the hold is the account's: a second door-unlock node and a node on a copy of the account config send nothing; once the 2 s are over, the next message sends exactly one PUT", async () => {
    await loadFlow(
      [
        tab(),
        accountNode(sim.url),
        accountNode(sim.url, { id: "acc2", name: "copy" }),
        unlockNode(),
        unlockNode({}, "u2"),
        unlockNode({ account: "acc2" }, "u3"),
        ...helperNodes("u1-ok", "u1-fail", "u2-ok", "u2-fail", "u3-ok", "u3-fail"),
      ],
      { creds: { ...CREDS, acc2: CREDS.acc1 } },
    );
    await waitReady();
    sim.control.resetRequests();
    sim.control.inject({ kind: "429", endpoint: "unlockDevice", retryAfter: 2 });
    assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    for (const id of ["u2", "u3"]) {
      const p = assertFailed(await unlock({ deviceId: 102 }, id), "rate-limited", 429);
      assert.ok(p.retryAfter >= 1 && p.retryAfter <= 2, `${id}: retryAfter ${p.retryAfter}`);
    }
    assert.equal(sim.control.requests().length, 1, "one request in all: the PUT answered 429");
    await new Promise((r) => setTimeout(r, 2100));
    assertAccepted(await unlock({ deviceId: 102 }, "u2"));
    assert.equal(unlockRequests(sim), 2, "exactly one PUT after the wait, no burst");
  });

  // docs/session.md#halts-and-reconnect
  it("a Reconnect pressed during the hold sends nothing before it is over, then makes its one login by itself", async () => {
    await loadFlow(unlockFlow(sim.url));
    await waitReady();
    sim.control.resetRequests();
    sim.control.inject({ kind: "429", endpoint: "unlockDevice", retryAfter: 2 });
    assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    const heldAt = Date.now();
    await editorPost("/door-access/accounts/acc1/reconnect").send({}).expect(202);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(logins(sim), 0, "no login within the hold");
    await until("the one login after the hold", () => logins(sim) === 1, 5000);
    const login = sim.control.requests().find((r) => /^login/.test(r.operation))!;
    assert.ok(login.startedAt >= heldAt + 1900, `the login left ${login.startedAt - heldAt} ms after the 429`);
    await waitState("ready");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(logins(sim), 1, "one login");
  });

  it("the hold outlives a deploy that changes the account's password: the new session sends nothing, not even its login, until the wait is over; the next message then has it checked by one login", async () => {
    const flow = [tab(), accountNode(sim.url), unlockNode(), ...helperNodes("u1-ok", "u1-fail")];
    const { userDir } = await loadFlow(flow);
    await waitReady();
    sim.control.resetRequests();
    sim.control.inject({ kind: "429", endpoint: "unlockDevice", retryAfter: 3 });
    assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    const heldAt = Date.now();
    await stopFlows();
    // docs/session.md#changed-credentials-are-checked: a changed password starts a new session
    // with a login; docs/session.md#a-retry-after-holds-the-account: not before the wait is over.
    await loadFlow(flow, { userDir, creds: { acc1: { ...CREDS.acc1, password: "changed-password" } } });
    const p = assertFailed(await unlock({ deviceId: 101 }), "rate-limited", 429);
    assert.ok(p.retryAfter >= 1 && p.retryAfter <= 3, `retryAfter ${p.retryAfter}`);
    await new Promise((r) => setTimeout(r, Math.max(0, heldAt + 2500 - Date.now())));
    assert.deepEqual(
      sim.control.requests().map((r) => r.operation),
      ["unlockDevice"],
      "nothing was sent within the wait but the PUT answered 429",
    );
    await new Promise((r) => setTimeout(r, Math.max(0, heldAt + 3100 - Date.now())));
    // The next message, once the wait is over, has the new password checked by one login.
    assertFailed(await unlock({ deviceId: 101 }), "session-halted", null);
    const logins = sim.control.requests().filter((r) => /^login/.test(r.operation));
    assert.equal(logins.length, 1, "one login with the new password, once the wait was over");
    assert.ok(logins[0].startedAt >= heldAt + 2900, `the login left ${logins[0].startedAt - heldAt} ms after the 429`);
    assert.equal(unlockRequests(sim), 1, "no PUT but the one answered 429");
  });
});

describe("The outcome goes to every wire of its output; a Complete node fires only once the unlock-result is on disk; a Status node sees the outcome last (docs/audit-log.md#group-commit)", function () {
  this.timeout(60000);
  let sim: RunningSimulator;
  before(async () => {
    sim = await startSim({ rateLimit: false });
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  afterEach(async () => {
    await teardown();
  });

  it("output 1 wired twice, a Complete and a Status node on door-unlock: both wires get the outcome, the Complete node only once the unlock-result is on disk, the Status node's last status is the outcome", async () => {
    const flow = [
      tab(),
      accountNode(sim.url),
      unlockNode({ wires: [["u1-ok", "u1-ok2"], ["u1-fail"]] }),
      completeNode(),
      nodeRedStatusNode(),
      ...helperNodes("u1-ok", "u1-ok2", "u1-fail", "done-out", "status-out"),
    ];
    const { userDir } = await loadFlow(flow, { nodes: [...ALL_NODES, completeModule, nodeRedStatusModule] });
    await waitReady();
    sim.control.resetRequests();
    const second = received("u1-ok2");
    const atComplete: string[][] = [];
    helper.getNode("done-out").on("input", (m: any) =>
      atComplete.push(
        readAudit(userDir)
          .filter((r) => r.msgid === m._msgid)
          .map((r) => r.type),
      ),
    );
    const statuses: any[] = [];
    helper.getNode("status-out").on("input", (m: any) => statuses.push(m.status));
    const out = await unlock({ deviceId: 101, _msgid: "complete-after-record" });
    assert.equal(out.msg.payload.outcome, "accepted");
    await until("the Complete node", () => atComplete.length === 1, 5000);
    await settle();
    assert.equal(second.length, 1);
    assert.equal(second[0].payload.outcome, "accepted");
    assert.deepEqual(
      atComplete[0],
      ["unlock-attempt", "unlock-result"],
      "done() only once the closing record is on disk",
    );
    assert.equal(unlockRequests(sim), 1);
    assert.equal(statuses[statuses.length - 1]?.fill, "green", JSON.stringify(statuses));
  });
});
