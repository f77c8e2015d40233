/**
 * The one table of which session state may follow which (src/session/transitions.ts), checked in
 * setState: it is the table docs/session.md#login-and-start-up states, every change it allows is
 * accepted, and a change it forbids is refused: logged with the state kept in production, thrown
 * in the test suite (docs/architecture.md#the-sessions-modules).
 */
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import {
  IllegalTransitionError,
  TRANSITIONS,
  strictTransitions,
  transitionAllowed,
} from "../../src/session/transitions.js";
import type { SessionState } from "../../src/session/types.js";
import { DEMO_PHONE, buildSession, closeAll, ops, type Built } from "../helpers/session.js";

const STATES = Object.keys(TRANSITIONS) as SessionState[];

/** docs/session.md's "Which state can follow which" table: from → the states named in its row. */
function docsTable(): Map<string, string[]> {
  const md = readFileSync(path.join(__dirname, "..", "..", "..", "docs", "session.md"), "utf8");
  const start = md.indexOf("| from | can become |");
  assert.ok(start >= 0, "docs/session.md has the table of which state can follow which");
  const rows = md.slice(start).split("\n").slice(2);
  const table = new Map<string, string[]>();
  for (const row of rows) {
    if (!row.startsWith("|")) break;
    const [from, to] = row.split("|").slice(1, 3);
    table.set(
      /`([^`]+)`/.exec(from)![1],
      [...to.matchAll(/`([^`]+)`/g)].map((m) => m[1]),
    );
  }
  return table;
}

describe("session: one table of allowed state transitions, checked on every change (docs/session.md#login-and-start-up)", function () {
  this.timeout(20_000);

  it("the table is the one docs/session.md states, for every state", () => {
    const docs = docsTable();
    assert.deepEqual([...docs.keys()].sort(), [...STATES].sort(), "one row per state");
    for (const from of STATES)
      assert.deepEqual([...TRANSITIONS[from]].sort(), [...docs.get(from)!].sort(), `what can follow ${from}`);
  });

  it("every transition the docs allow is accepted, staying in a state too; every other one is refused", () => {
    const docs = docsTable();
    let allowed = 0;
    let refused = 0;
    for (const from of STATES) {
      for (const to of STATES) {
        const expected = from === to || docs.get(from)!.includes(to);
        assert.equal(transitionAllowed(from, to), expected, `${from} → ${to}`);
        if (expected) allowed++;
        else refused++;
      }
    }
    // Only a Reconnect (or closing) leaves a halt; nothing leaves closed.
    assert.equal(transitionAllowed("halted-login-failed", "ready"), false);
    assert.equal(transitionAllowed("halted-superseded", "refreshing"), false);
    assert.equal(transitionAllowed("closed", "logging-in"), false);
    assert.ok(allowed > 0 && refused > 0, `${allowed} allowed, ${refused} refused`);
  });

  describe("a forbidden change on a live session (a halted login made ready)", () => {
    let sim: RunningSimulator;
    let b: Built;
    const strict = { ...strictTransitions };

    beforeEach(async () => {
      sim = await startSimulator({ rateLimit: false });
      b = buildSession(sim, { credentials: { ...DEMO_PHONE, password: "not-the-password" } });
      await b.session.start();
      assert.equal(b.session.state, "halted-login-failed");
    });

    afterEach(async () => {
      Object.assign(strictTransitions, strict);
      await closeAll({ b, sim });
    });

    it("in production is refused and logged: the state stays, no state event, nothing sent, no throw", () => {
      strictTransitions.enabled = false;
      const events: unknown[] = [];
      b.session.on("state", (s) => events.push(s));
      const before = b.session.snapshot();
      sim.control.resetRequests();
      (b.session as any).setState("ready", null);
      assert.equal(b.session.state, "halted-login-failed");
      assert.deepEqual(b.session.snapshot(), before);
      assert.deepEqual(events, []);
      assert.deepEqual(ops(sim), []);
      assert.ok(
        b.log.lines.includes("error session: illegal state transition halted-login-failed → ready refused"),
        b.log.lines.join("\n"),
      );
    });

    it("in the test suite throws, and is reported to the suite's hook", () => {
      const seen: Error[] = [];
      strictTransitions.enabled = true;
      strictTransitions.seen = (e) => seen.push(e);
      assert.throws(() => (b.session as any).setState("refreshing", "x"), IllegalTransitionError);
      assert.equal(b.session.state, "halted-login-failed");
      assert.equal(seen.length, 1);
      assert.match(seen[0].message, /halted-login-failed → refreshing/);
    });
  });
});
