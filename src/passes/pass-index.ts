/**
 * What both pass books (file-pass-book.ts: a file; redis-pass-book.ts: Redis) keep in memory the same
 * way: the passes by id, their ids by code hash (several when ended passes share a code with a
 * live one), a calendar's passes by booking (node id and ref), the uses that messages in flight
 * have reserved, and the calendar reads of one node, one at a time.
 */
import { type Bookings, type Pass, codeHash, isLive, passState } from "./pass.js";

/** Passes copied in one turn of the event loop for a calendar's read (fromSource). */
export const COPY_SLICE = 500;

export class PassIndex implements Bookings {
  readonly passes = new Map<string, Pass>();
  private readonly byHash = new Map<string, string[]>();
  /** A calendar's passes (its door-pass node id): a turnover pass's check reads them (docs/passes.md#between-guests-the-turnover-window). */
  private readonly bySource = new Map<string, Set<string>>();
  /** bookingsOf()'s arrays, made again after a pass of that calendar is added or dropped. */
  private readonly sourceList = new Map<string, Pass[]>();
  /** calendarsOn()'s door sets, by calendar. */
  private readonly sourceDoors = new Map<string, Set<number>>();
  private readonly bySourceRef = new Map<string, string[]>();
  private readonly reserved = new Map<string, number>();
  private readonly reads = new Map<string, Promise<unknown>>();

  add(p: Pass): void {
    this.passes.set(p.id, p);
    push(this.byHash, p.hash, p.id);
    if (p.source !== undefined && p.ref !== null) push(this.bySourceRef, bookingKey(p.source, p.ref), p.id);
    if (p.source !== undefined) {
      this.sourceList.delete(p.source);
      this.sourceDoors.delete(p.source);
      const ids = this.bySource.get(p.source);
      if (ids) ids.add(p.id);
      else this.bySource.set(p.source, new Set([p.id]));
    }
  }

  drop(p: Pass): void {
    this.passes.delete(p.id);
    pull(this.byHash, p.hash, p.id);
    if (p.source !== undefined && p.ref !== null) pull(this.bySourceRef, bookingKey(p.source, p.ref), p.id);
    if (p.source !== undefined) this.sourceList.delete(p.source);
    this.doorsChanged(p);
    const ids = p.source !== undefined ? this.bySource.get(p.source) : undefined;
    if (ids) {
      ids.delete(p.id);
      if (ids.size === 0) this.bySource.delete(p.source!);
    }
  }

  /**
   * The calendars (door-pass node ids) with a pass on one of `doors`: those whose bookings bound a
   * turnover pass on those doors (docs/passes.md#between-guests-the-turnover-window). Each
   * calendar's doors are kept as a set, made again after one of its passes is added, dropped or
   * moved to other doors (doorsChanged).
   */
  calendarsOn(doors: readonly { deviceId: number }[]): string[] {
    const out: string[] = [];
    for (const source of this.bySource.keys()) {
      let set = this.sourceDoors.get(source);
      if (set === undefined) {
        set = new Set();
        for (const p of this.bookingsOf(source)) for (const d of p.doors) set.add(d.deviceId);
        this.sourceDoors.set(source, set);
      }
      for (const d of doors)
        if (set.has(d.deviceId)) {
          out.push(source);
          break;
        }
    }
    return out;
  }

  /** Pass `p`'s doors were changed in place (the file book's update): its calendar's doors are read again. */
  doorsChanged(p: Pass): void {
    if (p.source !== undefined) this.sourceDoors.delete(p.source);
  }

  /** The passes calendar `source` made, as kept now (revoked ones included; changed in place by an update). */
  bookingsOf(source: string): readonly Pass[] {
    let list = this.sourceList.get(source);
    if (list === undefined) {
      list = [];
      for (const id of this.bySource.get(source) ?? []) {
        const p = this.passes.get(id);
        if (p !== undefined) list.push(p);
      }
      this.sourceList.set(source, list);
    }
    return list;
  }

  /**
   * Copies of the passes calendar `source` (its door-pass node id) made, revoked ones included:
   * COPY_SLICE at a time, with a turn of the event loop between, so a calendar's 10,000 passes
   * never hold Node-RED for all of them (docs/passes.md#what-passes-cost). Each copy is its pass
   * as it was when copied.
   */
  async fromSource(source: string): Promise<Pass[]> {
    const mine = [...this.bookingsOf(source)];
    const copies: Pass[] = [];
    for (let i = 0; i < mine.length; i += COPY_SLICE) {
      if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      for (const p of mine.slice(i, i + COPY_SLICE)) copies.push(structuredClone(p));
    }
    return copies;
  }

  /** Forgets the passes (a book read again); the reserved uses stay with their messages. */
  clear(): void {
    this.passes.clear();
    this.byHash.clear();
    this.bySourceRef.clear();
    this.bySource.clear();
    this.sourceList.clear();
    this.sourceDoors.clear();
  }

  /**
   * The pass a calendar (its door-pass node id) made for booking `ref` and that is not revoked, or
   * null: while there is one, that booking gets no other (docs/passes.md#from-a-booking-calendar).
   */
  booked(source: string, ref: string): Pass | null {
    for (const id of this.bySourceRef.get(bookingKey(source, ref)) ?? []) {
      const p = this.passes.get(id);
      if (p !== undefined && p.revoked === null) return p;
    }
    return null;
  }

  /** Runs `read` once every earlier read of calendar `source` in this runtime has ended: one at a time. */
  serially<T>(source: string, read: () => Promise<T>): Promise<T> {
    const before = this.reads.get(source) ?? Promise.resolve();
    const run = before.then(read, read);
    const settled = run.catch(() => undefined);
    this.reads.set(source, settled);
    void settled.then(() => {
      if (this.reads.get(source) === settled) this.reads.delete(source);
    });
    return run;
  }

  private readonly stamps = new Map<string, number>();

  /** A file book is one runtime's: the stamps of a calendar's reads are counted in memory. */
  readStamp(source: string): number {
    const n = (this.stamps.get(source) ?? 0) + 1;
    this.stamps.set(source, n);
    return n;
  }

  latestRead(source: string, stamp: number): boolean {
    return (this.stamps.get(source) ?? 0) <= stamp;
  }

  /** The pass with this code (a live one first), or null. */
  find(key: Buffer, code: string, now: number): Pass | null {
    const ids = this.byHash.get(codeHash(key, code));
    if (!ids) return null;
    const all = ids.map((id) => this.passes.get(id)).filter((p): p is Pass => p !== undefined);
    return all.find((p) => isLive(p, now)) ?? all[all.length - 1] ?? null;
  }

  /** How many live passes door-pass node `node` made (its calendar's, or a flow's through it). */
  liveOf(node: string, now: number): number {
    let n = 0;
    for (const p of this.passes.values()) if ((p.source ?? p.node) === node && isLive(p, now)) n++;
    return n;
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

/** A booking's key: a node id holds no NUL, so the first one ends it. */
export function bookingKey(source: string, ref: string): string {
  return `${source}\0${ref}`;
}

function push(m: Map<string, string[]>, k: string, id: string): void {
  const ids = m.get(k);
  if (ids) ids.push(id);
  else m.set(k, [id]);
}

function pull(m: Map<string, string[]>, k: string, id: string): void {
  const ids = (m.get(k) ?? []).filter((x) => x !== id);
  if (ids.length > 0) m.set(k, ids);
  else m.delete(k);
}
