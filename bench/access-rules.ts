/**
 * What the access rules cost per message: ns per `AccessState.check()` (src/unlock/access-rules.ts)
 * for a node with all four rules (an actor pattern list, a weekly schedule in Europe/Oslo, a
 * cooldown, a PIN), on the path where every rule is evaluated and the message is allowed
 * (check, then the slot released, so the next check is allowed too). Pure CPU, in-process, no
 * service: the bench adds this beside its unlock figures (`measureAccessRules`), and it runs on
 * its own too:
 *
 *   node dist/bench/access-rules.js [--reps N] [--n N]
 *
 * Figures (median of `reps` timed blocks of `n` checks each, after a warm-up):
 * - allowedColdNs: each check in a new second, so the local time is worked out again each time
 *   (from the zone's offset, cached over a checked hour; Intl about once an hour of message
 *   time). In a busy runtime the node pays more than this tight loop shows: the bench's
 *   node-level figure is bench/access-rules-node.ts;
 * - allowedWarmNs: checks within one second (a burst: the local time is cached per second);
 * - deniedActorNs, deniedCooldownNs: the cheap refusals;
 * - noRulesNs: a node without rules (the node skips the engine then; this is the floor).
 */
import { type AccessState, parseAccessRules } from "../src/unlock/access-rules.js";

export interface AccessRulesBench {
  allowedColdNs: number;
  allowedWarmNs: number;
  deniedActorNs: number;
  deniedCooldownNs: number;
  noRulesNs: number;
  n: number;
  reps: number;
}

const ALL_FOUR = {
  allowActors: ["cleaner-*", "alice", "bob", "node-red:*"],
  schedule: [
    { days: [1, 2, 3, 4, 5], from: "07:00", to: "19:00" },
    { days: [6], from: "09:00", to: "13:00" },
    { days: [5], from: "22:00", to: "02:00" },
  ],
  timeZone: "Europe/Oslo",
  cooldown: 5,
  pin: "482916",
};

// Tuesday 2025-03-04 08:00 in Oslo; + up to an hour stays inside the weekday window.
const START = Date.UTC(2025, 2, 4, 7, 0, 0);

function stateOf(config: object): AccessState {
  const r = parseAccessRules(config);
  if (!r.ok) throw new Error(r.message);
  return r.rules.newState();
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** ns per call of `one(i)`, median of `reps` blocks of `n` calls after a warm-up block. */
function timeIt(n: number, reps: number, one: (i: number) => void): number {
  for (let i = 0; i < Math.min(n, 5000); i++) one(i);
  const per: number[] = [];
  let k = 0;
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) one(k++);
    per.push(Number(process.hrtime.bigint() - t0) / n);
  }
  return median(per);
}

export function measureAccessRules(opts: { n?: number; reps?: number } = {}): AccessRulesBench {
  const n = opts.n ?? 20_000;
  const reps = opts.reps ?? 7;
  let sink = 0;

  const cold = stateOf(ALL_FOUR);
  const allowedColdNs = timeIt(n, reps, (i) => {
    const d = cold.check({
      actor: "cleaner-anna",
      deviceId: 101,
      lockId: null,
      pin: "482916",
      now: START + (i % 3000) * 1001,
    });
    if (!d.allowed) throw new Error(`bench: expected allowed, got ${d.reason}`);
    d.slot.release();
  });

  const warm = stateOf(ALL_FOUR);
  const allowedWarmNs = timeIt(n, reps, () => {
    const d = warm.check({ actor: "cleaner-anna", deviceId: 101, lockId: null, pin: "482916", now: START });
    if (!d.allowed) throw new Error(`bench: expected allowed, got ${d.reason}`);
    d.slot.release();
  });

  const actor = stateOf(ALL_FOUR);
  const deniedActorNs = timeIt(n, reps, (i) => {
    sink += actor.check({ actor: "mallory", deviceId: 101, lockId: null, pin: "482916", now: START + i }).allowed
      ? 1
      : 0;
  });

  const cd = stateOf(ALL_FOUR);
  const first = cd.check({ actor: "alice", deviceId: 101, lockId: null, pin: "482916", now: START });
  if (first.allowed) first.slot.sent(START);
  const deniedCooldownNs = timeIt(n, reps, () => {
    sink += cd.check({ actor: "alice", deviceId: 101, lockId: null, pin: "482916", now: START + 1 }).allowed ? 1 : 0;
  });

  const none = stateOf({});
  const noRulesNs = timeIt(n, reps, (i) => {
    sink += none.check({ actor: "alice", deviceId: 101, lockId: null, pin: undefined, now: START + i }).allowed ? 1 : 0;
  });

  if (sink < 0) throw new Error("unreachable");
  const round = (x: number) => Math.round(x);
  return {
    allowedColdNs: round(allowedColdNs),
    allowedWarmNs: round(allowedWarmNs),
    deniedActorNs: round(deniedActorNs),
    deniedCooldownNs: round(deniedCooldownNs),
    noRulesNs: round(noRulesNs),
    n,
    reps,
  };
}

if (require.main === module) {
  const arg = (name: string): number | undefined => {
    const i = process.argv.indexOf(name);
    return i > 0 ? Number(process.argv[i + 1]) : undefined;
  };
  const r = measureAccessRules({ n: arg("--n"), reps: arg("--reps") });
  process.stdout.write(
    `access rules, ns per check() (median of ${r.reps} x ${r.n}; Node.js ${process.versions.node}):\n` +
      `  all four rules, allowed, new second each   ${r.allowedColdNs}\n` +
      `  all four rules, allowed, same second       ${r.allowedWarmNs}\n` +
      `  refused for its actor                      ${r.deniedActorNs}\n` +
      `  refused by the cooldown                    ${r.deniedCooldownNs}\n` +
      `  no rules                                   ${r.noRulesNs}\n`,
  );
}
