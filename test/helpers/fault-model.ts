/**
 * The model behind the property-based fault tests: random sequences of unlock and status
 * messages (valid and invalid), faults injected at the simulator, token expiries, superseding
 * logins and redeploys, run against a real simulator through the same code the nodes use
 * (Account, performUnlock, selectDoor), and the invariants checked afterwards against the
 * simulator's request log and the audit file.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { Account } from "../../src/account/account.js";
import { readAuditFile } from "../../src/audit/audit-log.js";
import { selectDoor } from "../../src/doors/select.js";
import { startSimulator, type FaultKind, type RequestLogEntry } from "../../src/simulator/index.js";
import type { OperationId } from "../../src/spec/schemas.js";
import { performUnlock, type UnlockResult } from "../../src/unlock/unlock.js";
import type { Clock } from "../../src/util/clock.js";

/** Real time, but timers fire `factor` times sooner and `now()` runs `factor` times faster. */
export function acceleratedClock(factor: number): Clock {
  const t0 = Date.now();
  return {
    now: () => t0 + (Date.now() - t0) * factor,
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
  | { valid: true; input: { msgDeviceId?: unknown; msgDoor?: unknown; msgLockId?: unknown } }
  | { valid: false; byName?: true; input: { msgDeviceId?: unknown; msgDoor?: unknown; msgLockId?: unknown; msgActor?: unknown } };

const VALID_TARGETS: UnlockTarget[] = [
  { valid: true, input: { msgDeviceId: 101 } },
  { valid: true, input: { msgDoor: "Main Street 1 / Back Door" } },
  { valid: true, input: { msgDeviceId: 104, msgLockId: 2 } },
  { valid: true, input: { msgDeviceId: 105 } }, // offline → 503
  { valid: true, input: { msgDeviceId: 106 } }, // no key → 403
  { valid: true, input: { msgDeviceId: 999 } }, // unknown → 404
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

export type Action =
  | { t: "unlock"; target: UnlockTarget }
  | { t: "burst"; targets: UnlockTarget[] }
  | { t: "status"; deviceId: unknown; valid: boolean }
  | { t: "fault"; kind: FaultKind; endpoint: OperationId; count: number }
  | { t: "expire" }
  | { t: "revoke" }
  | { t: "supersede" }
  | { t: "expireRefresh" }
  | { t: "redeploy" }
  | { t: "reconnect" };

const target = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...VALID_TARGETS) },
  { weight: 1, arbitrary: fc.constantFrom(...INVALID_TARGETS) },
);
const faultKinds: FaultKind[] = ["429", "500", "502", "503", "504", "latency", "drop"];
const faultEndpoints: OperationId[] = ["unlockDevice", "unlockDeviceLock", "getDevice", "listUserDevices", "refreshToken", "loginByPhone"];

export const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: target.map((t) => ({ t: "unlock" as const, target: t })) },
  { weight: 2, arbitrary: fc.array(target, { minLength: 2, maxLength: 8 }).map((ts) => ({ t: "burst" as const, targets: ts })) },
  { weight: 2, arbitrary: fc.constantFrom<[unknown, boolean]>([101, true], [105, true], [999, true], ["x", false], [0, false]).map(([d, v]) => ({ t: "status" as const, deviceId: d, valid: v })) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom(...faultKinds), endpoint: fc.constantFrom(...faultEndpoints), count: fc.integer({ min: 1, max: 3 }) }).map((f) => ({ t: "fault" as const, ...f })) },
  { weight: 1, arbitrary: fc.constant({ t: "expire" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "revoke" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "supersede" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "expireRefresh" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "redeploy" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "reconnect" as const }) },
);

export interface RunStats {
  messages: number;
  invalid: number;
  faults: number;
  puts: number;
  invariantsChecked: number;
}

const PUT_OPS = new Set(["unlockDevice", "unlockDeviceLock"]);

/** Runs one generated sequence and checks every invariant; throws on a violation. */
export async function runSequence(actions: Action[], stats: RunStats): Promise<void> {
  const sim = await startSimulator({ rateLimit: false });
  const dir = mkdtempSync(path.join(tmpdir(), "door-prop-"));
  const clock = acceleratedClock(50);
  const startedAt = clock.now();
  const make = () =>
    new Account({
      baseUrl: sim.url,
      credentials: { method: "phone", phoneNumber: "+15550000001", password: "demo-password" },
      tokenFile: path.join(dir, "session.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      clock,
      client: { random: Math.random, headersTimeoutMs: 3000, bodyTimeoutMs: 3000 },
    });
  let account = make();
  void account.start();
  const settings = { nodeId: "prop", door: null, lockId: "", actor: "", rejectRetained: true };
  const results = new Map<string, UnlockResult>();
  let seq = 0;
  let disturbances = 0; // events that may legitimately need a login
  let authFaults = 0;
  const putsNow = () => sim.control.requests().filter((r) => PUT_OPS.has(r.operation)).length;

  const unlock = async (t: UnlockTarget) => {
    const msgid = `m${++seq}`;
    stats.messages++;
    const before = putsNow();
    const timeout = new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`message ${msgid} never finished`)), 20_000).unref());
    const r = await Promise.race([performUnlock(account, { msgDeviceId: undefined, msgDoor: undefined, msgLockId: undefined, msgActor: undefined, msgRetain: undefined, msgid, ...t.input }, settings), timeout]);
    assert.ok(!results.has(msgid), "one result per message");
    results.set(msgid, r);
    if (!t.valid) {
      stats.invalid++;
      const allowed = t.byName ? ["invalid-input", "session-halted", "service-unreachable", "error"] : ["invalid-input"];
      assert.ok(allowed.includes(r.outcome), `invalid input ${JSON.stringify(t.input)} gave ${r.outcome}`);
      return before;
    }
    return before;
  };

  try {
    for (const a of actions) {
      switch (a.t) {
        case "unlock": {
          const before = await unlock(a.target);
          if (!a.target.valid) assert.equal(putsNow(), before, "no request for invalid input");
          break;
        }
        case "burst":
          await Promise.all(a.targets.map((t) => unlock(t)));
          break;
        case "status": {
          stats.messages++;
          try {
            const sel = await selectDoor(account.directory, { msgDeviceId: a.deviceId, msgDoor: undefined, configured: null });
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
          sim.control.inject({ kind: a.kind, endpoint: a.endpoint, count: a.count, retryAfter: a.kind === "429" ? 1 : undefined, latencyMs: 30 });
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
    const elapsedMin = Math.ceil((clock.now() - startedAt) / 60_000);
    checkInvariants(sim.control.requests(), await readAuditFile(path.join(dir, "audit.jsonl")), results, { disturbances, authFaults, elapsedMin }, stats);
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
  assert.ok([...perMsg.values()].every((n) => n <= 2), "never more than one replay");
  assert.ok(doubled <= puts.filter((p) => p.status === 401).length, "a second PUT for a message only after a 401");
  stats.invariantsChecked += 3;

  // 2. Every PUT has an attempt record written before it (k-th PUT after k-th attempt).
  const attemptTimes = attempts.map((a) => Date.parse(a.ts)).sort((x, y) => x - y);
  const putTimes = puts.map((p) => p.startedAt).sort((x, y) => x - y);
  putTimes.forEach((t, k) => assert.ok(attemptTimes[k]! <= t, `PUT #${k + 1} at ${t} before its attempt record at ${attemptTimes[k]}`));
  stats.invariantsChecked += 1;

  // 3. Accepted outcomes match 200 PUTs; every message has exactly one outcome and one
  //    closing audit record (result or rejected).
  const accepted = [...results.values()].filter((r) => r.outcome === "accepted").length;
  assert.equal(accepted, puts.filter((p) => p.status === 200).length, "accepted results = PUTs answered 200");
  assert.equal(resultsRec.length + rejected.length, results.size, "one closing audit record per message");
  stats.invariantsChecked += 2;

  // 4. Logins bounded: no loop.
  const logins = log.filter((r) => r.operation === "loginByPhone").length;
  const bound = 2 * (1 + ctx.disturbances + ctx.authFaults) + 2 * ctx.elapsedMin;
  assert.ok(logins <= bound, `${logins} login requests > bound ${bound}`);
  stats.invariantsChecked += 1;

  // 5. At most one refresh in flight at any instant.
  const refreshes = log.filter((r) => r.operation === "refreshToken").sort((x, y) => x.startedAt - y.startedAt);
  for (let i = 1; i < refreshes.length; i++) {
    assert.ok(refreshes[i]!.startedAt >= refreshes[i - 1]!.endedAt || refreshes[i - 1]!.status === 0, "two refreshes in flight at once");
  }
  stats.invariantsChecked += 1;
}
