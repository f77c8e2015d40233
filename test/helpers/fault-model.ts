/**
 * The model behind the property-based fault tests: random sequences of unlock and status
 * messages (valid and invalid), faults injected at the simulator, token expiries, superseding
 * logins and redeploys, run against a real simulator through the same code the nodes use
 * (Account, performUnlock, selectDoor), and the invariants checked afterwards against the
 * simulator's request log and the audit file. In some runs the node has access rules
 * (docs/access-rules.md: actors, a schedule in a zone, a cooldown, a PIN) and messages carry
 * actors and PINs: a denied message sends nothing, and a refusal counts for no other rule.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { Account } from "../../src/account/account.js";
import { readAuditFile } from "../../src/audit/audit-log.js";
import { selectDoor } from "../../src/doors/select.js";
import { demoSeed, startSimulator, type FaultKind, type RequestLogEntry } from "../../src/simulator/index.js";
import type { OperationId } from "../../src/spec/schemas.js";
import { performUnlock, type UnlockResult, type UnlockNodeSettings } from "../../src/unlock/unlock.js";
import type { DoorIdentity } from "../../src/doors/directory.js";
import { type AccessState, parseAccessRules } from "../../src/unlock/access-rules.js";
import type { Clock } from "../../src/util/clock.js";
import { textOf } from "../../src/util/text.js";
import { TEST_PIN, WRONG_PINS } from "./pins.js";

/** Real time, but timers fire `factor` times sooner and `now()` runs `factor` times faster. */
export function acceleratedClock(factor: number): Clock {
  const t0 = Date.now();
  const m0 = performance.now();
  return {
    now: () => t0 + (Date.now() - t0) * factor,
    monotonic: () => (performance.now() - m0) * factor,
    setTimeout: (fn, ms) => {
      const t = setTimeout(fn, Math.max(0, ms) / factor);
      t.unref();
      return t;
    },
    clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  };
}

/**
 * `byName`: invalid only against the device list (unknown or ambiguous name); while the list
 * cannot be read (no session) it fails as session-halted/service-unreachable instead, and
 * in either case nothing is sent.
 */
type UnlockTarget =
  | { valid: true; input: { msgDeviceId?: unknown; msgDoor?: unknown; msgLockId?: unknown }; picked?: DoorIdentity }
  | {
      valid: false;
      byName?: true;
      input: { msgDeviceId?: unknown; msgDoor?: unknown; msgLockId?: unknown; msgActor?: unknown };
    };

const VALID_TARGETS: UnlockTarget[] = [
  { valid: true, input: { msgDeviceId: 101 } },
  { valid: true, input: { msgDoor: "Main Street 1 / Back Door" } },
  { valid: true, input: { msgDeviceId: 104, msgLockId: 2 } },
  { valid: true, input: { msgDeviceId: 105 } }, // offline → 503
  { valid: true, input: { msgDeviceId: 106 } }, // no key → 403
  { valid: true, input: { msgDeviceId: 999 } }, // unknown → 404
  { valid: true, input: { msgDoor: "Front Door" } },
  // A door picked in the editor (docs/doors.md#resolution-rules: its stored id, name and location).
  { valid: true, input: {}, picked: { id: 102, name: "Back Door", location: "Main Street 1" } },
  { valid: true, input: {}, picked: { id: 101, name: "Front Door", location: "Main Street 1" } },
];
const INVALID_TARGETS: UnlockTarget[] = [
  { valid: false, input: { msgDeviceId: "101" } },
  { valid: false, input: { msgDeviceId: -1 } },
  { valid: false, input: { msgDeviceId: 1.5 } },
  { valid: false, input: { msgDeviceId: 2 ** 31 } },
  { valid: false, input: { msgDoor: "" } },
  { valid: false, byName: true, input: { msgDoor: "Back Door" } }, // ambiguous
  { valid: false, byName: true, input: { msgDoor: "No Such Door" } },
  { valid: false, input: { msgDeviceId: 104, msgLockId: 0 } },
  { valid: false, input: { msgDeviceId: 101, msgActor: "" } },
];

/** Who sends a message and with what PIN (absent: no msg.actor, no msg.pin). */
interface Who {
  actor?: string;
  pin?: string | number;
}

export type Action =
  | { t: "unlock"; target: UnlockTarget; who?: Who }
  | { t: "burst"; targets: UnlockTarget[]; whos?: Who[] }
  | { t: "status"; deviceId: unknown; valid: boolean }
  | { t: "fault"; kind: FaultKind | "hang"; endpoint: OperationId; count: number }
  | { t: "expire" }
  | { t: "revoke" }
  | { t: "supersede" }
  | { t: "expireRefresh" }
  | { t: "redeploy" }
  | { t: "reconnect" }
  | { t: "reconnectDuringBurst"; targets: UnlockTarget[]; presses: number }
  | { t: "deleteAccount" }
  | { t: "clockJump"; ms: number }
  | { t: "editDoor"; edit: DoorEdit }
  | { t: "listRefresh" };

/** A change to the device list between messages (the simulator's editDevice). */
type DoorEdit =
  | { id: number; name: string }
  | { id: number; newId: number }
  | { id: number; remove: true }
  | { id: number; locationId: number };
const DOOR_EDITS: DoorEdit[] = [
  { id: 102, name: "Yard Door" }, // renamed
  { id: 102, newId: 9102 }, // renumbered
  { id: 102, remove: true }, // left the list
  { id: 102, locationId: 11 }, // moved: now a second "Harbour Warehouse / Back Door"
  { id: 101, name: "Back Door" }, // a third "Back Door"
  { id: 101, newId: 9101 },
];
const LOCATION_NAMES: Record<number, string> = { 10: "Main Street 1", 11: "Harbour Warehouse", 20: "Neighbour HQ" };

const target = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...VALID_TARGETS) },
  { weight: 1, arbitrary: fc.constantFrom(...INVALID_TARGETS) },
);
/** Actors the rules below allow or not; the right PIN, a wrong one, the right one as a number. */
const whoArb: fc.Arbitrary<Who> = fc.record(
  {
    actor: fc.constantFrom("alice", "bob", "node-red:panel"),
    pin: fc.constantFrom<string | number>(TEST_PIN, TEST_PIN, WRONG_PINS[0], WRONG_PINS[1], Number(TEST_PIN)),
  },
  { requiredKeys: [] },
);

/** A node's access rules (docs/access-rules.md), as the editor stores them; the PIN is its credential. */
export interface RulesConfig {
  allowActors: string[];
  schedule: { days: number[]; from: string; to: string }[];
  timeZone: string;
  cooldown: number;
  pin?: string;
}
/**
 * Rules for half of the runs. The clock runs 50 times faster than real time and jumps, so the
 * cooldowns (1 s to 10 min) end within a run and the weekday window is open or shut by the hour.
 */
const rulesArb: fc.Arbitrary<RulesConfig | null> = fc.option(
  fc.record(
    {
      allowActors: fc.constantFrom<string[]>([], ["alice", "node-red:*"], ["alice"], ["*"]),
      schedule: fc.constantFrom<RulesConfig["schedule"]>(
        [],
        [{ days: [1, 2, 3, 4, 5, 6, 7], from: "00:00", to: "00:00" }],
        [
          { days: [1, 2, 3, 4, 5], from: "07:00", to: "19:00" },
          { days: [6], from: "22:00", to: "06:00" },
        ],
      ),
      timeZone: fc.constantFrom("", "UTC", "Europe/Oslo", "Asia/Kathmandu"),
      cooldown: fc.constantFrom(0, 1, 30, 600),
      pin: fc.constantFrom(TEST_PIN, undefined),
    },
    { requiredKeys: ["allowActors", "schedule", "timeZone", "cooldown"] },
  ),
  { freq: 2 },
);
const faultKinds: (FaultKind | "hang")[] = ["429", "500", "502", "503", "504", "latency", "drop", "hang"];
const faultEndpoints: OperationId[] = [
  "unlockDevice",
  "unlockDeviceLock",
  "getDevice",
  "listUserDevices",
  "refreshToken",
  "loginByPhone",
];
/** The client's header time-out in these runs; a "hang" fault answers later than this. */
const HEADERS_TIMEOUT_MS = 600;

export const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(target, whoArb).map(([t, who]) => ({ t: "unlock" as const, target: t, who })) },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.tuple(target, whoArb), { minLength: 2, maxLength: 8 })
      .map((ts) => ({ t: "burst" as const, targets: ts.map((x) => x[0]), whos: ts.map((x) => x[1]) })),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom<[unknown, boolean]>([101, true], [105, true], [999, true], ["x", false], [0, false])
      .map(([d, v]) => ({ t: "status" as const, deviceId: d, valid: v })),
  },
  {
    weight: 4,
    arbitrary: fc
      .record({
        kind: fc.constantFrom(...faultKinds),
        endpoint: fc.constantFrom(...faultEndpoints),
        count: fc.integer({ min: 1, max: 3 }),
      })
      .map((f) => ({ t: "fault" as const, ...f })),
  },
  { weight: 1, arbitrary: fc.constant({ t: "expire" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "revoke" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "supersede" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "expireRefresh" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "redeploy" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "reconnect" as const }) },
  {
    weight: 1,
    arbitrary: fc
      .record({ targets: fc.array(target, { minLength: 1, maxLength: 5 }), presses: fc.integer({ min: 1, max: 3 }) })
      .map((r) => ({ t: "reconnectDuringBurst" as const, ...r })),
  },
  { weight: 1, arbitrary: fc.constant({ t: "deleteAccount" as const }) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(45 * 3600_000, -45 * 3600_000, 2 * 3600_000, -2 * 3600_000)
      .map((ms) => ({ t: "clockJump" as const, ms })),
  },
  { weight: 2, arbitrary: fc.constantFrom(...DOOR_EDITS).map((edit) => ({ t: "editDoor" as const, edit })) },
  { weight: 1, arbitrary: fc.constant({ t: "listRefresh" as const }) },
);

/**
 * One generated run: the access token lifetime the service issues (1 min to 48 h), the node's
 * access rules (none when absent or null), then the actions.
 */
export interface Scenario {
  accessTtlSec: number;
  rules?: RulesConfig | null;
  actions: Action[];
}
export const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  accessTtlSec: fc.constantFrom(60, 600, 3600, 4 * 3600, 48 * 3600),
  rules: rulesArb,
  actions: fc.array(actionArb, { minLength: 5, maxLength: 25 }),
});

export interface RunStats {
  messages: number;
  invalid: number;
  faults: number;
  puts: number;
  invariantsChecked: number;
  doorEdits: number;
  operatorActions: number;
  clockJumps: number;
  /** Runs whose node had access rules, and the messages they denied. */
  runsWithRules: number;
  denied: number;
}

const PUT_OPS = new Set(["unlockDevice", "unlockDeviceLock"]);

/** Runs one generated sequence and checks every invariant; throws on a violation. */
export async function runSequence(scenario: Scenario, stats: RunStats): Promise<void> {
  const { actions, accessTtlSec } = scenario;
  const sim = await startSimulator({ rateLimit: false, accessTtlSec });
  const dir = mkdtempSync(path.join(tmpdir(), "door-prop-"));
  const accelerated = acceleratedClock(50);
  // The session's clock: accelerated, and off from the service's by a jump the run may make.
  let offset = 0;
  const clock: Clock = { ...accelerated, now: () => accelerated.now() + offset };
  const startedAt = accelerated.now();
  const halts: { state: string; at: number }[] = [];
  const make = () => {
    const a = new Account({
      baseUrl: sim.url,
      credentials: { method: "phone", phoneNumber: "+15550000001", password: "demo-password" },
      tokenFile: path.join(dir, "session.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      clock,
      client: { random: Math.random, headersTimeoutMs: HEADERS_TIMEOUT_MS, bodyTimeoutMs: HEADERS_TIMEOUT_MS },
    });
    a.on("halt", (e: { state: string }) => halts.push({ state: e.state, at: Date.now() }));
    return a;
  };
  let account = make();
  void account.start().then(() => account.warmDevices());
  // The node's rules: one state for the whole run (the door-unlock node is not redeployed here).
  let rules: AccessState | null = null;
  if (scenario.rules) {
    const parsed = parseAccessRules(scenario.rules);
    if (!parsed.ok) throw new Error(`the model's rules must be readable: ${parsed.message}`);
    rules = parsed.rules.active ? parsed.rules.newState() : null;
    if (rules) stats.runsWithRules++;
  }
  const settings: UnlockNodeSettings = {
    nodeId: "prop",
    door: null,
    lockId: "",
    actor: "",
    rejectRetained: true,
    access: rules ? { ok: true, state: rules } : null,
  };
  // Every (id, name, location) a door has had in this run: what a message may legitimately mean.
  const history: { id: number; name: string; location: string }[] = demoSeed().doors.map((d) => ({
    id: d.id,
    name: d.name,
    location: LOCATION_NAMES[d.locationId] ?? "",
  }));
  const live = new Map(demoSeed().doors.map((d) => [d.id, { id: d.id, name: d.name, locationId: d.locationId }]));
  const intents = new Map<string, UnlockTarget>();
  let edited = false;
  const results = new Map<string, UnlockResult>();
  let seq = 0;
  let disturbances = 0; // events that may legitimately need a login
  let authFaults = 0;
  const putsNow = () => sim.control.requests().filter((r) => PUT_OPS.has(r.operation)).length;

  const unlock = async (t: UnlockTarget, who: Who = {}) => {
    const msgid = `m${++seq}`;
    stats.messages++;
    const before = putsNow();
    const timeout = new Promise<never>((_, rej) =>
      setTimeout(() => rej(new Error(`message ${msgid} never finished`)), 20_000).unref(),
    );
    intents.set(msgid, t);
    const nodeSettings = t.valid && t.picked ? { ...settings, door: t.picked } : settings;
    const input = {
      msgDeviceId: undefined,
      msgDoor: undefined,
      msgLockId: undefined,
      msgActor: who.actor,
      msgRetain: undefined,
      msgid,
      msgPin: who.pin,
      ...t.input,
    };
    const r = await Promise.race([performUnlock(account, input, nodeSettings), timeout]);
    assert.ok(!results.has(msgid), "one result per message");
    results.set(msgid, r);
    if (r.outcome === "denied") {
      stats.denied++;
      assert.ok(rules !== null, `denied without rules: ${JSON.stringify(r)}`);
      assert.ok(
        ["actor", "schedule", "cooldown", "pin", "locked-out"].includes(r.reason as string),
        `a denied outcome names its rule: ${JSON.stringify(r)}`,
      );
      assert.equal(r.status, null);
      assert.equal(r.mayHaveOpened, false);
    }
    if (!t.valid) {
      stats.invalid++;
      if (t.byName && edited) return { before, r }; // a name the edits made valid (or still not): checked by the door invariant
      // Bad input is answered as such before any rule; a name that needs the list comes after actor and schedule.
      const allowed = t.byName
        ? [
            "invalid-input",
            "session-halted",
            "service-unreachable",
            "rate-limited",
            "error",
            ...(rules ? ["denied"] : []),
          ]
        : ["invalid-input"];
      assert.ok(allowed.includes(r.outcome), `invalid input ${JSON.stringify(t.input)} gave ${r.outcome}`);
      return { before, r };
    }
    return { before, r };
  };

  /**
   * One message on its own, with the rules' state looked at before and after it: a message
   * refused by one rule counts for no other (docs/access-rules.md#order-of-the-rules).
   */
  const unlockAlone = async (t: UnlockTarget, who: Who = {}) => {
    const stateBefore = rules?.snapshot(clock.now()) ?? null;
    const { before, r } = await unlock(t, who);
    if (rules && stateBefore) checkRuleState(stateBefore, rules.snapshot(clock.now()), r, putsNow() > before, who);
    if (r.outcome === "denied")
      assert.equal(putsNow(), before, "a denied message sends nothing (counted at the simulator)");
    return before;
  };

  try {
    for (const a of actions) {
      switch (a.t) {
        case "unlock": {
          const before = await unlockAlone(a.target, a.who);
          if (!a.target.valid && !(a.target.byName && edited))
            assert.equal(putsNow(), before, "no request for invalid input");
          break;
        }
        case "reconnectDuringBurst": {
          // Operator presses Reconnect (once or repeatedly) while messages, and perhaps a
          // login or refresh, are in flight.
          stats.operatorActions++;
          disturbances += a.presses;
          const burst = Promise.all(a.targets.map((t) => unlock(t)));
          await Promise.all(Array.from({ length: a.presses }, () => account.session.reconnect()));
          await burst;
          break;
        }
        case "deleteAccount":
          stats.operatorActions++;
          disturbances++;
          await account.destroy();
          account = make();
          void account.start().then(() => account.warmDevices());
          break;
        case "clockJump":
          stats.clockJumps++;
          disturbances++; // may make the token look expired: one renewal
          offset += a.ms;
          break;
        case "editDoor": {
          const e = a.edit;
          const door = live.get(e.id);
          if (!door) break; // already renumbered or removed
          stats.doorEdits++;
          edited = true;
          sim.control.editDevice(e.id, e);
          if ("remove" in e) live.delete(e.id);
          else {
            if ("name" in e) door.name = e.name;
            if ("locationId" in e) door.locationId = e.locationId;
            if ("newId" in e) {
              live.delete(e.id);
              door.id = e.newId;
            }
            live.set(door.id, door);
            history.push({ id: door.id, name: door.name, location: LOCATION_NAMES[door.locationId] ?? "" });
          }
          break;
        }
        case "listRefresh":
          await account.devices(true).catch(() => undefined);
          break;
        case "burst":
          await Promise.all(a.targets.map((t, i) => unlock(t, a.whos?.[i])));
          break;
        case "status": {
          stats.messages++;
          try {
            const sel = await selectDoor(account.directory, {
              msgDeviceId: a.deviceId,
              msgDoor: undefined,
              configured: null,
            });
            assert.equal(sel.ok, a.valid);
            if (sel.ok) await account.getDevice(sel.deviceId);
          } catch {
            /* failures are outcomes for the node; the invariants below are what matter */
          }
          break;
        }
        case "fault":
          stats.faults++;
          if (a.endpoint === "refreshToken" || a.endpoint === "loginByPhone") authFaults += a.count;
          if (a.kind === "hang") {
            // Answers only after the client's time-out: a request that hangs.
            sim.control.inject({
              kind: "503",
              endpoint: a.endpoint,
              count: a.count,
              latencyMs: HEADERS_TIMEOUT_MS + 300,
            });
          } else {
            sim.control.inject({
              kind: a.kind,
              endpoint: a.endpoint,
              count: a.count,
              retryAfter: a.kind === "429" ? 1 : undefined,
              latencyMs: 30,
            });
          }
          break;
        case "expire":
          stats.faults++;
          sim.control.expireAccessToken("demo");
          break;
        case "revoke":
          stats.faults++;
          sim.control.revokeAccessToken("demo");
          break;
        case "supersede":
          stats.faults++;
          disturbances++;
          sim.control.supersede("demo");
          break;
        case "expireRefresh":
          stats.faults++;
          disturbances++;
          sim.control.expireRefreshToken("demo");
          break;
        case "redeploy":
          disturbances++;
          await account.close();
          account = make();
          void account.start();
          break;
        case "reconnect":
          if (account.session.state.startsWith("halted") || account.session.state === "unreachable") {
            disturbances++;
            await account.session.reconnect();
          }
          break;
      }
    }
    await account.close();
    // The session may try a login once a (accelerated) minute while unreachable.
    const elapsedMin = Math.ceil((accelerated.now() - startedAt) / 60_000);
    const audit = await readAuditFile(path.join(dir, "audit.jsonl"));
    checkInvariants(sim.control.requests(), audit, results, { disturbances, authFaults, elapsedMin }, stats);
    checkDoors(sim.control.requests(), audit, intents, history, stats);
    checkHalts(sim.control.requests(), halts, stats);
  } finally {
    await account.close().catch(() => undefined);
    await sim.close();
  }
}

function checkInvariants(
  log: RequestLogEntry[],
  audit: Awaited<ReturnType<typeof readAuditFile>>,
  results: Map<string, UnlockResult>,
  ctx: { disturbances: number; authFaults: number; elapsedMin: number },
  stats: RunStats,
): void {
  const puts = log.filter((r) => PUT_OPS.has(r.operation));
  stats.puts += puts.length;
  assert.equal(audit.tornLastLine, false);
  assert.deepEqual(audit.badLines, []);
  const attempts = audit.records.filter((r) => r.type === "unlock-attempt");
  const resultsRec = audit.records.filter((r) => r.type === "unlock-result");
  const rejected = audit.records.filter((r) => r.type === "unlock-rejected");

  // 1. PUTs ≤ attempt records; attempts per message ≤ 2, the second only after a 401.
  assert.ok(puts.length <= attempts.length, `${puts.length} PUTs but ${attempts.length} attempt records`);
  const perMsg = new Map<string, number>();
  for (const a of attempts) perMsg.set(a.msgid ?? "", (perMsg.get(a.msgid ?? "") ?? 0) + 1);
  const doubled = [...perMsg.values()].filter((n) => n === 2).length;
  assert.ok(
    [...perMsg.values()].every((n) => n <= 2),
    "never more than one replay",
  );
  assert.ok(doubled <= puts.filter((p) => p.status === 401).length, "a second PUT for a message only after a 401");
  stats.invariantsChecked += 3;

  // 2. Every PUT has an attempt record written before it (k-th PUT after k-th attempt).
  const attemptTimes = attempts.map((a) => Date.parse(a.ts)).sort((x, y) => x - y);
  const putTimes = puts.map((p) => p.startedAt).sort((x, y) => x - y);
  putTimes.forEach((t, k) =>
    assert.ok(attemptTimes[k] <= t, `PUT #${k + 1} at ${t} before its attempt record at ${attemptTimes[k]}`),
  );
  stats.invariantsChecked += 1;

  // 3. Accepted outcomes match 200 PUTs; every message has exactly one outcome and one
  //    closing audit record (result or rejected). A PUT the service answered 200 after the client
  //    stopped waiting (its header time-out here is 600 ms: a loaded machine can exceed it) is a
  //    message told `mayHaveOpened: true` (docs/outcomes.md#door-unlock-outcomes), never one told
  //    nothing opened: each 200 without an accepted result is owed to such a message.
  const accepted = [...results.values()].filter((r) => r.outcome === "accepted").length;
  const answered200 = puts.filter((p) => p.status === 200).length;
  const mayHaveOpened = [...results.values()].filter((r) => r.outcome !== "accepted" && r.mayHaveOpened === true);
  assert.ok(accepted <= answered200, `accepted results (${accepted}) are PUTs answered 200 (${answered200})`);
  assert.ok(
    answered200 - accepted <= mayHaveOpened.length,
    `accepted results = PUTs answered 200, but for messages told they may have opened: ${accepted} accepted, ${answered200} answered 200, ${mayHaveOpened.length} may have opened`,
  );
  assert.equal(resultsRec.length + rejected.length, results.size, "one closing audit record per message");
  stats.invariantsChecked += 2;

  // 3b. A denied message sent nothing: no attempt record (and so no PUT, see checkDoors), and its
  //     closing record is one unlock-rejected that names the rule.
  const deniedIds = new Set([...results].filter(([, r]) => r.outcome === "denied").map(([id]) => id));
  for (const a of attempts)
    assert.ok(!deniedIds.has(a.msgid ?? ""), `a denied message (${a.msgid}) has an attempt record`);
  for (const id of deniedIds) {
    const closing = rejected.filter((r) => r.msgid === id);
    assert.equal(closing.length, 1, `denied ${id}: one unlock-rejected record`);
    assert.deepEqual(
      [closing[0].outcome, closing[0].reason],
      ["denied", results.get(id)!.reason],
      `denied ${id}: its record names the rule`,
    );
  }
  stats.invariantsChecked += 2;

  // 4. Logins bounded: no loop.
  const logins = log.filter((r) => r.operation === "loginByPhone").length;
  const bound = 2 * (1 + ctx.disturbances + ctx.authFaults) + 2 * ctx.elapsedMin;
  assert.ok(logins <= bound, `${logins} login requests > bound ${bound}`);
  stats.invariantsChecked += 1;

  // 4b. Refreshes bounded (docs/session.md#renewal): one per 401 answered, two per
  //     (accelerated) minute of scheduled renewals at the minimum spacing, and the disturbances.
  const refreshCount = log.filter((r) => r.operation === "refreshToken").length;
  const unauthorized = log.filter(
    (r) => r.status === 401 && r.operation !== "refreshToken" && r.operation !== "loginByPhone",
  ).length;
  const refreshBound = 2 + unauthorized + 2 * ctx.elapsedMin + 2 * (ctx.disturbances + ctx.authFaults);
  assert.ok(refreshCount <= refreshBound, `${refreshCount} refresh requests > bound ${refreshBound}: a renewal loop`);
  stats.invariantsChecked += 1;

  // 5. At most one refresh in flight at any instant.
  const refreshes = log.filter((r) => r.operation === "refreshToken").sort((x, y) => x.startedAt - y.startedAt);
  for (let i = 1; i < refreshes.length; i++) {
    assert.ok(
      refreshes[i].startedAt >= refreshes[i - 1].endedAt || refreshes[i - 1].status === 0,
      "two refreshes in flight at once",
    );
  }
  stats.invariantsChecked += 1;
}

type RuleSnapshot = ReturnType<AccessState["snapshot"]>;

/**
 * A message changes the rules' state only as its own outcome says: a cooldown slot only for a
 * message that sent its command (none left pending once it is done), a wrong PIN only for a
 * message denied as `pin` that gave one, a lockout only from such a message. So a message refused
 * for its actor, the schedule, the cooldown or the lockout, or for bad input, counts for no rule
 * at all (docs/access-rules.md#order-of-the-rules). Time only takes entries away, and a clock set
 * back only moves them earlier; neither counts as a change here.
 */
function checkRuleState(before: RuleSnapshot, after: RuleSnapshot, r: UnlockResult, sent: boolean, who: Who): void {
  const what = `${r.outcome}${r.reason ? `/${r.reason}` : ""}`;
  const was = new Map(before.slots.map((s) => [s.key, s]));
  const taken = after.slots.filter((s) => {
    const b = was.get(s.key);
    return b === undefined || b.pending !== s.pending || s.at > b.at;
  });
  assert.ok(
    after.slots.every((s) => !s.pending),
    `${what}: a cooldown slot is left pending after its message ended`,
  );
  if (sent) assert.ok(taken.length <= 1, `${what}: one message took ${taken.length} cooldown slots`);
  else assert.deepEqual(taken, [], `${what}: a message that sent nothing took a cooldown slot`);
  const wrongPin = r.outcome === "denied" && r.reason === "pin" && who.pin !== undefined;
  const newlyLocked = before.lockedUntil === null && after.lockedUntil !== null;
  if (wrongPin) {
    assert.ok(
      newlyLocked || (after.wrongPins.length >= 1 && after.wrongPins.length <= before.wrongPins.length + 1),
      `${what}: a wrong PIN counts once (${before.wrongPins.length} → ${after.wrongPins.length})`,
    );
  } else {
    assert.ok(
      after.wrongPins.length <= before.wrongPins.length,
      `${what}: counted as a wrong PIN (${before.wrongPins.length} → ${after.wrongPins.length})`,
    );
    assert.equal(newlyLocked, false, `${what}: started a lockout`);
  }
}

/**
 * "A message opens the door it identified, or none": every attempted PUT went to the door the
 * message meant — its msg.deviceId; a door that had that name (and location) at some moment of
 * the run; or, for a picked door, its stored id or a door that had its stored name AND location
 * (docs/doors.md#resolution-rules: a stored location is never dropped). And every PUT at the
 * service has an attempt record for that very device.
 */
function checkDoors(
  log: RequestLogEntry[],
  audit: Awaited<ReturnType<typeof readAuditFile>>,
  intents: Map<string, UnlockTarget>,
  history: { id: number; name: string; location: string }[],
  stats: RunStats,
): void {
  const norm = (x: string) =>
    x
      .trim()
      .replace(/\s*\/\s*/g, " / ")
      .replace(/\s+/g, " ")
      .toLowerCase();
  const hadName = (id: number, name: string, location: string | null) =>
    history.some(
      (h) => h.id === id && norm(h.name) === norm(name) && (location === null || norm(h.location) === norm(location)),
    );
  for (const rec of audit.records) {
    if (rec.type !== "unlock-attempt") continue;
    const t = intents.get(rec.msgid ?? "");
    assert.ok(t, `attempt for an unknown message ${rec.msgid}`);
    const id = rec.deviceId as number;
    const input = t.input as { msgDeviceId?: unknown; msgDoor?: unknown };
    if (input.msgDeviceId !== undefined) {
      assert.equal(id, input.msgDeviceId, `msg.deviceId ${textOf(input.msgDeviceId)} but the attempt went to ${id}`);
    } else if (typeof input.msgDoor === "string") {
      const [loc, name] = input.msgDoor.includes("/")
        ? input.msgDoor.split("/").map((x) => x.trim())
        : [null, input.msgDoor];
      assert.ok(
        hadName(id, name, loc ?? null),
        `msg.door ${JSON.stringify(input.msgDoor)} opened device ${id}, which never had that name${loc ? " at that location" : ""}`,
      );
    } else if (t.valid && t.picked) {
      const p = t.picked;
      assert.ok(
        id === p.id || hadName(id, p.name!, p.location),
        `picked ${JSON.stringify(p)} opened device ${id}: neither its id nor a door with its name at its location`,
      );
    }
  }
  stats.invariantsChecked += 1;
  const attemptsById = new Map<number, number>();
  for (const rec of audit.records)
    if (rec.type === "unlock-attempt")
      attemptsById.set(rec.deviceId as number, (attemptsById.get(rec.deviceId as number) ?? 0) + 1);
  const putsById = new Map<number, number>();
  for (const e of log)
    if (PUT_OPS.has(e.operation) && e.deviceId !== null) putsById.set(e.deviceId, (putsById.get(e.deviceId) ?? 0) + 1);
  for (const [id, n] of putsById)
    assert.ok(
      n <= (attemptsById.get(id) ?? 0),
      `${n} PUTs to device ${id} but ${attemptsById.get(id) ?? 0} attempt records for it`,
    );
  stats.invariantsChecked += 1;
}

/**
 * The account halts only after (a) a 401 on a token that a refresh or login issued after an
 * earlier 401 (the replay's token was fresh), (b) a refused login, or (c) a refresh rejected
 * (400/401) twice (within the hour: the whole run is shorter). And refreshes stay bounded.
 */
function checkHalts(log: RequestLogEntry[], halts: { state: string; at: number }[], stats: RunStats): void {
  const BEARER = new Set(["getDevice", "unlockDevice", "unlockDeviceLock", "listUserDevices", "listUserLocations"]);
  const renewals = log.filter(
    (e) => (e.operation === "refreshToken" || e.operation === "loginByPhone") && e.status === 200 && e.issuedTokenId,
  );
  for (const h of halts) {
    const before = log.filter((e) => e.startedAt <= h.at);
    if (h.state === "halted-login-failed") {
      assert.ok(
        before.some((e) => e.operation === "loginByPhone" && (e.status === 400 || e.status === 401)),
        "halted-login-failed without a refused login",
      );
      continue;
    }
    const rejectedRefreshes = before.filter(
      (e) => e.operation === "refreshToken" && (e.status === 400 || e.status === 401),
    ).length;
    const unauthorized = before.filter((e) => BEARER.has(e.operation) && e.status === 401);
    const freshTokenRejected = unauthorized.some((e2) =>
      unauthorized.some(
        (e1) =>
          e1.startedAt <= e2.startedAt &&
          e1 !== e2 &&
          renewals.some((r) => r.issuedTokenId === e2.tokenId && r.endedAt >= e1.startedAt),
      ),
    );
    assert.ok(
      rejectedRefreshes >= 2 || freshTokenRejected,
      `halted as superseded without cause: ${rejectedRefreshes} rejected refreshes, no 401 on a token renewed after a 401 (${unauthorized.length} 401s)`,
    );
  }
  stats.invariantsChecked += 1;
}
