/**
 * The account's events hub without a runtime (src/account/events.ts; docs/events.md): the session
 * conditions told once per change, a hold's end, a door's first state no change, the description
 * told once per change, the kinds each listener asked for, a listener that throws, the sidebar's
 * bounded list. A fake session and client and a fake clock stand in for a core.
 */
import { strict as assert } from "node:assert";
import { EventEmitter } from "node:events";
import { AccountEvents, type AccountEvent, RECENT_EVENTS, eventKinds } from "../../src/account/events.js";
import { DEFAULT_KINDS, kindsValid } from "../../src/account/event-kinds.js";
import type { SessionState } from "../../src/session/types.js";
import { LockoutEvents } from "../../nodes/door-unlock/unlock-events.js";
import { parseAccessRules } from "../../src/unlock/access-rules.js";
import { type FakeClock, fakeClock } from "../helpers/fake-clock.js";

class FakeSession extends EventEmitter {
  state: SessionState = "idle";
  set(state: SessionState, reason: string | null = null): void {
    this.state = state;
    this.emit("state", { state, reason, since: 0, accessExpiresAt: null, renewAt: null });
  }
}

function rig() {
  const clock: FakeClock = fakeClock();
  const session = new FakeSession();
  let heldUntil = Number.NEGATIVE_INFINITY;
  const client = {
    heldForMs: () => Math.max(0, heldUntil - clock.monotonic()),
    hold(ms: number) {
      heldUntil = clock.monotonic() + ms;
    },
  };
  const hub = new AccountEvents();
  const detach = hub.attach({ clock, session, client });
  hub.answered(); // the service answered this core (its login)
  const got: AccountEvent[] = [];
  hub.subscribe([...DEFAULT_KINDS], (e) => got.push(e));
  const topics = () => got.map((e) => `${e.kind}/${e.event}`);
  return { clock, session, client, hub, got, topics, detach };
}

describe("account events: one per change (docs/events.md)", () => {
  // docs/events.md#session
  it("session: ready once at start; logging in and renewing are no change; halted, then ready again after a fresh login", () => {
    const { session, topics, got } = rig();
    session.set("logging-in");
    session.set("ready");
    session.set("refreshing");
    session.set("ready");
    assert.deepEqual(topics(), ["session/ready"]);
    session.set("halted-superseded", "another client");
    session.set("halted-superseded", "another client");
    session.set("logging-in");
    session.set("ready");
    assert.deepEqual(topics(), ["session/ready", "session/halted", "session/ready"]);
    assert.equal(got[1].reason, "superseded");
  });

  it("session: a refused login is halted with reason login-refused; a Redis store that cannot be reached is unreachable (session-store)", () => {
    const { session, got, topics } = rig();
    session.set("halted-login-failed", "the service refused the login (401)");
    session.set("logging-in");
    session.set("store-unreachable", "connection refused");
    assert.deepEqual(topics(), ["session/halted", "session/unreachable"]);
    assert.equal(got[0].reason, "login-refused");
    assert.equal(got[1].what, "session-store");
  });

  // docs/events.md#session: the end of a hold is told when it is over, without a request
  it("session: a hold is rate-limited once with retryAfter, however many 429s; ready when its time is over", async () => {
    const { session, client, hub, clock, got, topics } = rig();
    session.set("ready");
    client.hold(30_000);
    hub.held();
    client.hold(30_000);
    hub.held();
    assert.deepEqual(topics(), ["session/ready", "session/rate-limited"]);
    assert.equal(got[1].retryAfter, 30);
    await clock.tickAsync(29_000);
    assert.equal(got.length, 2);
    await clock.tickAsync(1_100);
    assert.deepEqual(topics(), ["session/ready", "session/rate-limited", "session/ready"]);
  });

  it("session: a connection that fails is unreachable once; the next answer is ready; answers while ready say nothing", () => {
    const { session, hub, topics, got } = rig();
    session.set("ready");
    hub.answered();
    hub.unreachable("connection refused");
    hub.unreachable("connection refused");
    assert.deepEqual(topics(), ["session/ready", "session/unreachable"]);
    assert.equal(got[1].detail, "connection refused");
    hub.answered();
    hub.answered();
    assert.deepEqual(topics(), ["session/ready", "session/unreachable", "session/ready"]);
  });

  // docs/events.md#session: a pair resumed from the store proves nothing of the service
  it("session: a core that resumed its pair is ready only once the service has answered it", () => {
    const clock: FakeClock = fakeClock();
    const session = new FakeSession();
    const hub = new AccountEvents();
    hub.attach({ clock, session, client: { heldForMs: () => 0 } });
    const got: AccountEvent[] = [];
    hub.subscribe([...DEFAULT_KINDS], (e) => got.push(e));
    session.set("ready");
    assert.equal(got.length, 0, "no ready before an answer");
    hub.unreachable("connection refused");
    hub.answered();
    assert.deepEqual(
      got.map((e) => e.event),
      ["unreachable", "ready"],
    );
  });

  it("session: a detached core tells nothing more (the core that replaces it does)", () => {
    const { session, detach, topics } = rig();
    session.set("ready");
    detach();
    session.set("halted-superseded");
    assert.deepEqual(topics(), ["session/ready"]);
  });

  // docs/events.md#device
  it("device: the first thing learnt of a door is no change; each change is one event, repeats none", () => {
    const { hub, topics, got } = rig();
    hub.doorsListed([
      { id: 101, name: "Front Door", online: true },
      { id: 102, name: "Back Door", online: false },
      { id: 103, name: "Gate", online: null },
    ]);
    assert.deepEqual(topics(), []);
    for (let i = 0; i < 10; i++) hub.door(101, "Front Door", false);
    hub.door(102, "Back Door", true);
    hub.door(103, "Gate", false); // first learnt: no change
    assert.deepEqual(topics(), ["device/offline", "device/online"]);
    assert.equal(got[0].deviceId, 101);
    assert.equal(got[0].door, "Front Door");
    assert.match(got[0].message, /Front Door is offline/);
  });

  // docs/events.md#service
  it("service: a description's differences are told once per change (however many accounts report them), nothing when they go", () => {
    const { hub, topics, got } = rig();
    hub.descriptionDiffers(["PUT /a: gone"]);
    hub.descriptionDiffers(["PUT /a: gone"]);
    hub.descriptionDiffers([]);
    hub.descriptionDiffers(["PUT /a: gone", "GET /b: moved"]);
    assert.deepEqual(topics(), ["service/description-changed", "service/description-changed"]);
    assert.deepEqual(got[1].differences, ["PUT /a: gone", "GET /b: moved"]);
  });

  // docs/events.md#kinds
  it("kinds: a listener gets only what it asked for; unlock is built only when someone asks (wants)", () => {
    const hub = new AccountEvents();
    assert.equal(hub.wants("unlock"), false);
    const unlocks: AccountEvent[] = [];
    const stop = hub.subscribe(["unlock"], (e) => unlocks.push(e));
    assert.equal(hub.wants("unlock"), true);
    assert.equal(hub.wants("session"), false);
    hub.emit("session", "ready", "x");
    hub.emit("unlock", "accepted", "y");
    assert.deepEqual(
      unlocks.map((e) => e.event),
      ["accepted"],
    );
    stop();
    stop();
    assert.equal(hub.wants("unlock"), false, "unsubscribing twice counts once");
  });

  it("kinds: absent, empty or unknown is the default (all but unlock); the dialog's check refuses what the runtime would not read as given", () => {
    assert.deepEqual(eventKinds(undefined), [...DEFAULT_KINDS]);
    assert.deepEqual(eventKinds([]), [...DEFAULT_KINDS]);
    assert.deepEqual(eventKinds(["nope"]), [...DEFAULT_KINDS]);
    assert.deepEqual(eventKinds(["unlock", "unlock", "rule"]), ["unlock", "rule"]);
    assert.ok(!DEFAULT_KINDS.includes("unlock"));
    assert.equal(kindsValid(["session"]), true);
    assert.equal(kindsValid([]), false);
    assert.equal(kindsValid(["session", "nope"]), false);
    assert.equal(kindsValid("session"), false);
  });

  it("a listener that throws stops neither the others nor the caller", () => {
    const hub = new AccountEvents();
    const got: string[] = [];
    hub.subscribe(["session"], () => {
      throw new Error("boom");
    });
    hub.subscribe(["session"], (e) => got.push(e.event));
    hub.emit("session", "ready", "x");
    assert.deepEqual(got, ["ready"]);
  });

  // docs/events.md#in-the-sidebar
  it("the sidebar's list keeps the last 20 events, unlock events not among them", () => {
    const hub = new AccountEvents();
    for (let i = 0; i < 30; i++) hub.emit("device", "offline", `m${i}`);
    hub.emit("unlock", "accepted", "u");
    const recent = hub.recent();
    assert.equal(recent.length, RECENT_EVENTS);
    assert.equal(recent[0].message, "m10");
    assert.equal(recent[recent.length - 1].message, "m29");
  });
});

describe("a door-unlock node's lockout events (docs/events.md#rule)", () => {
  const PIN = "5291736048";
  function lockedRules() {
    const parsed = parseAccessRules({ pin: PIN });
    assert.ok(parsed.ok);
    return parsed.rules.newState();
  }

  it("locked-out once when the lockout starts, lockout-ended once when it is over; a lockout read back at a restart is not a new one, its end is told", () => {
    const state = lockedRules();
    const hub = new AccountEvents();
    const got: AccountEvent[] = [];
    hub.subscribe(["rule"], (e) => got.push(e));
    const events = new LockoutEvents(state, "front panel", () => hub);
    const t0 = Date.UTC(2026, 10, 29, 12, 0, 0);
    for (let i = 0; i < 6; i++) {
      const r = state.check({ actor: "a", deviceId: 101, lockId: null, pin: "0000", now: t0 + i });
      if (r.allowed) r.slot.release();
      events.check(t0 + i);
    }
    assert.deepEqual(
      got.map((e) => e.event),
      ["locked-out"],
    );
    assert.equal(got[0].node, "front panel");
    const until = Date.parse(String(got[0].until));
    assert.ok(until > t0);
    assert.ok(!JSON.stringify(got).includes(PIN));
    events.check(until - 1);
    events.check(until + 1);
    events.check(until + 2);
    assert.deepEqual(
      got.map((e) => e.event),
      ["locked-out", "lockout-ended"],
    );
    // A restart: the lockout is read back (no event), and its end is told.
    const again = new LockoutEvents(state, "front panel", () => hub);
    for (let i = 0; i < 6; i++) {
      const r = state.check({ actor: "a", deviceId: 101, lockId: null, pin: "0000", now: until + 10 + i });
      if (r.allowed) r.slot.release();
    }
    const l = state.lockout(until + 20);
    assert.ok(l.locked);
    again.known(until + 20);
    again.check(until + 20);
    assert.equal(got.length, 2, "read back: no new locked-out");
    again.check(l.until! + 1);
    assert.deepEqual(
      got.map((e) => e.event),
      ["locked-out", "lockout-ended", "lockout-ended"],
    );
  });
});
