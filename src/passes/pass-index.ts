/**
 * What both pass books (pass-book.ts: a file; redis-pass-book.ts: Redis) keep in memory the same
 * way: the passes by id, their ids by code hash (several when ended passes share a code with a
 * live one), and the uses that messages in flight have reserved.
 */
import { type Pass, codeHash, isLive, passState } from "./pass.js";

export class PassIndex {
  readonly passes = new Map<string, Pass>();
  private readonly byHash = new Map<string, string[]>();
  private readonly reserved = new Map<string, number>();

  add(p: Pass): void {
    this.passes.set(p.id, p);
    const ids = this.byHash.get(p.hash);
    if (ids) ids.push(p.id);
    else this.byHash.set(p.hash, [p.id]);
  }

  drop(p: Pass): void {
    this.passes.delete(p.id);
    const ids = (this.byHash.get(p.hash) ?? []).filter((x) => x !== p.id);
    if (ids.length > 0) this.byHash.set(p.hash, ids);
    else this.byHash.delete(p.hash);
  }

  /** Forgets the passes (a book read again); the reserved uses stay with their messages. */
  clear(): void {
    this.passes.clear();
    this.byHash.clear();
  }

  /** The pass with this code (a live one first), or null. */
  find(key: Buffer, code: string, now: number): Pass | null {
    const ids = this.byHash.get(codeHash(key, code));
    if (!ids) return null;
    const all = ids.map((id) => this.passes.get(id)).filter((p): p is Pass => p !== undefined);
    return all.find((p) => isLive(p, now)) ?? all[all.length - 1] ?? null;
  }

  /** Whether a live pass has this code hash (a new code must not be one). */
  liveWithHash(hash: string, now: number): boolean {
    return (this.byHash.get(hash) ?? []).some((id) => {
      const p = this.passes.get(id);
      return p !== undefined && isLive(p, now);
    });
  }

  /**
   * Reserves one use of an active pass for a message in flight: the pass as kept and the function
   * that gives the use back (once), or null when it is not active or none is left.
   */
  take(p: Pass, now: number): { live: Pass; release: () => void } | null {
    const live = this.passes.get(p.id);
    if (!live || passState(live, now) !== "active") return null;
    const inFlight = this.reserved.get(live.id) ?? 0;
    if (live.uses !== null && live.used + inFlight >= live.uses) return null;
    this.reserved.set(live.id, inFlight + 1);
    let done = false;
    return {
      live,
      release: () => {
        if (done) return;
        done = true;
        const left = (this.reserved.get(live.id) ?? 1) - 1;
        if (left > 0) this.reserved.set(live.id, left);
        else this.reserved.delete(live.id);
      },
    };
  }

  /** How many uses of a pass messages in flight hold. */
  inFlight(id: string): number {
    return this.reserved.get(id) ?? 0;
  }
}
