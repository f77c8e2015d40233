/**
 * Keeps an account's session alive across a redeploy that leaves the account unchanged.
 *
 * When a `door-account` node is stopped but not removed, its Account is parked here for a
 * few seconds under the node id and a fingerprint of its settings; the node Node-RED starts
 * next with the same id and the same fingerprint takes it back, so no login happens. If no
 * node claims it in time, it is closed (its token pair stays on disk for the next start).
 */
import { createHash } from "node:crypto";
import type { Account } from "../account/account.js";

interface Parked {
  account: Account;
  fingerprint: string;
  timer: NodeJS.Timeout;
}

const parked = new Map<string, Parked>();
export const PARK_MS = 15_000;

/** A hash of everything that makes the account what it is (credentials included, in memory only). */
export function fingerprint(parts: unknown[]): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex");
}

export function park(id: string, fp: string, account: Account): void {
  const old = parked.get(id);
  if (old) {
    clearTimeout(old.timer);
    void old.account.close();
  }
  const timer = setTimeout(() => {
    if (parked.get(id)?.account === account) parked.delete(id);
    void account.close();
  }, PARK_MS);
  timer.unref();
  parked.set(id, { account, fingerprint: fp, timer });
}

/** The parked account of this id if its settings are unchanged; otherwise closes it. */
export function reclaim(id: string, fp: string): Account | null {
  const p = parked.get(id);
  if (!p) return null;
  parked.delete(id);
  clearTimeout(p.timer);
  if (p.fingerprint === fp) return p.account;
  void p.account.close();
  return null;
}

/** For shutdown and tests: close everything still parked. */
export async function closeAllParked(): Promise<void> {
  const all = [...parked.values()];
  parked.clear();
  await Promise.all(all.map((p) => (clearTimeout(p.timer), p.account.close())));
}
