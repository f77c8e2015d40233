/**
 * The hand-built flow (bench/flows.ts: http request → change → http request, logging in for
 * every message, with the simulator's other account), measured as door-unlock is: latency one
 * at a time against door-unlock's in the same repetition, throughput with 50 in flight (every
 * login supersedes the session of the messages still in flight, so few are accepted), and its
 * API calls per unlock from the simulator's request log.
 */
import { OTHER_ACCOUNT } from "../src/simulator/seed.js";
import { type Figures, log } from "./args.js";
import type { Rig } from "./runtime.js";
import { apiCalls, resetLog, simRequests } from "./sim-process.js";
import { inFlight, median, pct, round, sequential } from "./stats.js";

export async function measureHandBuilt(rig: Rig): Promise<Figures> {
  const { C, ops } = rig;
  const p50: number[] = [];
  const p99: number[] = [];
  const vsNode: number[] = [];
  const tput: number[] = [];
  const share: number[] = [];
  let calls = 0;
  let accepted = 0;
  for (let rep = 0; rep < rig.reps; rep++) {
    await sequential(Math.max(5, C.hbSeq / 10), ops.handBuilt);
    await resetLog(rig.simUrl);
    const s = await sequential(C.hbSeq, ops.handBuilt);
    calls += apiCalls(await simRequests(rig.simUrl, OTHER_ACCOUNT.id)).length;
    accepted += s.ok;
    if (s.ok !== C.hbSeq) throw new Error(`hand-built sequential: ${C.hbSeq - s.ok} failed`);
    await rig.refreshToken();
    const n = await sequential(C.hbSeq, ops.node);
    p50.push(pct(s.samples, 50));
    p99.push(pct(s.samples, 99));
    vsNode.push(pct(s.samples, 50) / pct(n.samples, 50));
    // 50 in flight: every login supersedes the session of the messages still in flight.
    const r = await inFlight(50, C.hbTput, ops.handBuilt);
    tput.push(r.perSec);
    share.push(r.ok / C.hbTput);
    log(
      `hand-built rep ${rep + 1}: p50 ${pct(s.samples, 50).toFixed(3)} p99 ${pct(s.samples, 99).toFixed(3)} ms; 50 in flight ${r.perSec.toFixed(0)}/s with ${r.ok}/${C.hbTput} accepted`,
    );
  }
  await resetLog(rig.simUrl);
  return {
    handBuiltP50Ms: round(median(p50)),
    handBuiltP99Ms: round(median(p99)),
    handBuiltP50VsNode: round(median(vsNode)),
    handBuiltThroughput50: round(median(tput), 1),
    handBuiltAcceptedShare50: round(median(share)),
    handBuiltCallsPerUnlock: round(calls / accepted, 4),
  };
}
