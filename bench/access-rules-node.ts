/**
 * What door-unlock's access rules cost per message at the node: a door-unlock node with all four
 * rules (an actor list with patterns, a weekly schedule in Europe/Oslo, a cooldown, a PIN) beside
 * the bench's own door-unlock node without rules, in the same runtime, on the same door, against
 * the same simulator, in the same run as the bench's no-rule unlock figures.
 *
 * Both nodes get the same message ({ actor, pin }; the node without rules ignores both and
 * deletes msg.pin too), one of each in turn (the order swapped every pair), each answered by a
 * real PUT; the figure is the difference of their p50 latencies, message in → accepted out.
 *
 * The cooldown: so that every message through the rules node is allowed (the path on which every
 * rule is evaluated and the cooldown slot is taken, sent and released), the runtime's wall clock
 * (Date.now, which the account's clock reads) is moved on by the cooldown before each of its
 * messages, and put back at the end. Each of its messages is then in a new second too, so the
 * schedule reads the zone's wall clock every time (the dearer path of bench/access-rules.ts).
 * Nothing else in the runtime measures time with Date.now: timers, undici and the latency
 * samples use their own clocks.
 */

/** The rules node's id, its sinks, and its PIN (a bench value, never a real one). */
export const RULES_NODE = "ur";
const PIN = "482916";
const COOLDOWN_S = 1;

/** A door-unlock node with all four rules on `door`, and its two helper sinks. */
export function rulesBenchNodes(
  tab: string,
  door: { deviceId: number; doorName: string; doorLocation: string },
): Record<string, unknown>[] {
  return [
    {
      id: RULES_NODE,
      type: "door-unlock",
      z: tab,
      name: "all four rules",
      account: "acc1",
      deviceId: String(door.deviceId),
      doorName: door.doorName,
      doorLocation: door.doorLocation,
      lockId: "",
      actor: "",
      rejectRetained: true,
      wires: [[`${RULES_NODE}-ok`], [`${RULES_NODE}-fail`]],
      allowActors: ["cleaner-*", "alice", "bob", "node-red:*"],
      schedule: [
        { days: [1, 2, 3, 4, 5, 6, 7], from: "00:00", to: "00:00" },
        { days: [5], from: "22:00", to: "02:00" },
      ],
      timeZone: "Europe/Oslo",
      cooldown: COOLDOWN_S,
    },
    { id: `${RULES_NODE}-ok`, type: "helper", z: tab },
    { id: `${RULES_NODE}-fail`, type: "helper", z: tab },
  ];
}

/** The rules node's credential. */
export function rulesBenchCredentials(): Record<string, { pin: string }> {
  return { [RULES_NODE]: { pin: PIN } };
}

/** The message both nodes get. */
export function rulesBenchMessage(): Record<string, unknown> {
  return { actor: "cleaner-anna", pin: PIN };
}

export type RulesNodeFigures = {
  /** p50 of the node without rules in this phase, ms. */
  rulesPlainP50Ms: number;
  /** p50 of the node with all four rules, ms. */
  rulesNodeP50Ms: number;
  /** Median over the repetitions of (p50 with rules − p50 without), µs. */
  rulesExtraP50Us: number;
  /** The same from the means of the middle 80 % of each side's samples, µs (less noisy). */
  rulesExtraTrimmedUs: number;
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
function trimmedMean(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const cut = Math.floor(s.length * 0.1);
  const mid = s.slice(cut, s.length - cut);
  return mid.reduce((a, b) => a + b, 0) / mid.length;
}
const round = (x: number, d: number): number => Math.round(x * 10 ** d) / 10 ** d;

/**
 * `plain` and `ruled` send one message into the node without and with rules and resolve true
 * when it came out accepted. `n` timed pairs after `warm` untimed ones, `reps` times.
 */
export async function measureRulesNode(opts: {
  plain: (msg: Record<string, unknown>) => Promise<boolean>;
  ruled: (msg: Record<string, unknown>) => Promise<boolean>;
  n: number;
  warm: number;
  reps: number;
  log?: (s: string) => void;
}): Promise<RulesNodeFigures> {
  const realNow = Date.now;
  let skew = 0;
  Date.now = () => realNow() + skew;
  const p50: { plain: number[]; ruled: number[] } = { plain: [], ruled: [] };
  const extra: number[] = [];
  const extraTrimmed: number[] = [];
  try {
    for (let rep = 0; rep < opts.reps; rep++) {
      const samples: { plain: number[]; ruled: number[] } = { plain: [], ruled: [] };
      const one = async (kind: "plain" | "ruled", timed: boolean): Promise<void> => {
        if (kind === "ruled") skew += COOLDOWN_S * 1000; // the door's cooldown is over for this message
        const t0 = process.hrtime.bigint();
        const ok = await opts[kind](rulesBenchMessage());
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (!ok)
          throw new Error(
            `access rules bench: the ${kind === "ruled" ? "rules" : "plain"} node did not accept its message`,
          );
        if (timed) samples[kind].push(ms);
      };
      for (let i = 0; i < opts.warm + opts.n; i++) {
        const order: ("plain" | "ruled")[] = (i + rep) % 2 === 0 ? ["plain", "ruled"] : ["ruled", "plain"];
        for (const k of order) await one(k, i >= opts.warm);
      }
      const a = median(samples.plain);
      const b = median(samples.ruled);
      p50.plain.push(a);
      p50.ruled.push(b);
      extra.push((b - a) * 1000);
      extraTrimmed.push((trimmedMean(samples.ruled) - trimmedMean(samples.plain)) * 1000);
      opts.log?.(
        `access rules rep ${rep + 1}: p50 without rules ${a.toFixed(3)} ms, with all four ${b.toFixed(3)} ms: ${((b - a) * 1000).toFixed(1)} µs more (trimmed means: ${extraTrimmed[extraTrimmed.length - 1].toFixed(1)} µs)`,
      );
    }
  } finally {
    Date.now = realNow;
  }
  return {
    rulesPlainP50Ms: round(median(p50.plain), 3),
    rulesNodeP50Ms: round(median(p50.ruled), 3),
    rulesExtraP50Us: round(median(extra), 1),
    rulesExtraTrimmedUs: round(median(extraTrimmed), 1),
  };
}
