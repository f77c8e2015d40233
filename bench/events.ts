/**
 * What the account's events cost an unlock (docs/events.md#what-it-costs): ns per message at
 * `tellUnlock` (nodes/door-unlock/unlock-events.ts), called once per ended message off the
 * door's path. Pure CPU, in-process:
 *
 *   node dist/bench/events.js [--n N] [--reps R]
 *
 * - noListenerNs: no door-events node asks for `unlock` (the door's reachability is still noted);
 * - oneListenerNs: one listener that copies the event as the door-events node does (without
 *   Node-RED's send, which any node pays per message it sends).
 * Median of `reps` blocks of `n` calls each, after a warm-up.
 */
import { AccountEvents } from "../src/account/events.js";
import { tellUnlock } from "../nodes/door-unlock/unlock-events.js";
import type { UnlockResult } from "../src/unlock/unlock.js";

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};

function result(i: number): UnlockResult {
  return {
    outcome: "accepted",
    status: 200,
    deviceId: 101,
    lockId: null,
    door: "Front Door",
    actor: `bench-${i % 10}`,
    at: new Date().toISOString(),
    mayHaveOpened: true,
  };
}

function timeBlock(hub: AccountEvents, n: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) tellUnlock(hub, result(i), `m${i}`);
  return Number(process.hrtime.bigint() - start) / n;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

export function measureEvents(n = 20_000, reps = 7): { noListenerNs: number; oneListenerNs: number; n: number } {
  const quiet = new AccountEvents();
  const heard = new AccountEvents();
  let sink = 0;
  heard.subscribe(["unlock"], (e) => {
    const payload = { ...e, account: "demo", message: `demo: ${e.message}` };
    sink += payload.message.length;
  });
  timeBlock(quiet, n);
  timeBlock(heard, n);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < reps; r++) {
    a.push(timeBlock(quiet, n));
    b.push(timeBlock(heard, n));
  }
  if (sink < 0) console.log(sink);
  return { noListenerNs: Math.round(median(a)), oneListenerNs: Math.round(median(b)), n };
}

if (require.main === module) {
  const r = measureEvents(arg("n", 20_000), arg("reps", 7));
  console.log(
    `events per ended unlock message (Node.js ${process.versions.node}, median of blocks of ${r.n}): ` +
      `no listener ${r.noListenerNs} ns, one door-events listener ${r.oneListenerNs} ns`,
  );
}
