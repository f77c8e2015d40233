/**
 * Session counts, read from the simulator's request log (exact, not timed):
 *
 * - logins while the first C.logins messages after the deploy are sent, 50 in flight (the deploy's
 *   own login included); this is also the runtime's warm-up;
 * - refreshes and logins when C.refresh messages, all in flight at once, meet an expired token.
 */
import { DEMO_ACCOUNT } from "../src/simulator/seed.js";
import { type Figures, log } from "./args.js";
import type { Rig } from "./runtime.js";
import { isLogin, resetLog, simControl, simRequests } from "./sim-process.js";
import { inFlight } from "./stats.js";

/** When the logins are not measured, the first messages after the deploy still warm the runtime up. */
export async function warmUp(rig: Rig): Promise<Figures> {
  await inFlight(50, 200, rig.ops.node);
  return {};
}

export async function measureLogins(rig: Rig): Promise<Figures> {
  const n = rig.C.logins;
  const r = await inFlight(50, n, rig.ops.node);
  if (r.ok !== n) throw new Error(`logins phase: ${n - r.ok} unlocks failed`);
  const demo = await simRequests(rig.simUrl, DEMO_ACCOUNT.id);
  const loginsPer10k = demo.filter(isLogin).length;
  log(`logins: ${loginsPer10k} login(s) for ${n} messages (deploy included)`);
  return { loginsPer10k, loginsMessages: n };
}

export async function measureRefresh(rig: Rig): Promise<Figures> {
  const n = rig.C.refresh;
  await resetLog(rig.simUrl);
  await simControl(rig.simUrl, "POST", `/_sim/accounts/${DEMO_ACCOUNT.id}/expire-access`);
  const outs = await Promise.all(Array.from({ length: n }, () => rig.unlock.send({})));
  const demo = await simRequests(rig.simUrl, DEMO_ACCOUNT.id);
  const f = {
    refreshesUnder1000: demo.filter((e) => e.operation === "refreshToken").length,
    refreshMessages: n,
    refreshAccepted: outs.filter((o) => o.port === 0).length,
    loginsUnderExpiry: demo.filter(isLogin).length,
  };
  log(
    `expired token: ${f.refreshesUnder1000} refresh(es), ${f.loginsUnderExpiry} login(s), ${f.refreshAccepted}/${n} accepted`,
  );
  return f;
}
