/**
 * An account's guest passes in its Redis session store (docs/passes.md#where-passes-are-kept),
 * shared by every Node-RED instance on the account. Keys, beside the session's
 * (`<prefix><id>:...`):
 *
 * - `passes`: a hash, pass id → the pass as JSON (never its code: the code's HMAC), with `rev`
 *   (+1 at every change) and its window in epoch ms for the scripts;
 * - `pass-uses`: a hash, pass id → uses taken, `<id>:first` → the time of its first use;
 * - `pass-key`: the HMAC key of the codes, made once by whichever instance comes first (SET NX)
 *   and sealed (AES-256-GCM) under a key derived from the session's secret, as the pair is;
 * - `passes-version` and `passes-changed`: a counter bumped by every change of a pass and a sorted
 *   set of the passes changed at each version, so an instance refreshes its copy in memory with
 *   one GET per pass message (and reads only the passes changed since);
 * - `pass-bookings`: a hash, a calendar's booking (`<node id>\0<ref>`) → the id of the pass issued
 *   for it, so that a booking's pass is issued by one script only if none is kept unrevoked, by
 *   whichever instance comes first (field `""`: the passes kept before it existed are in it).
 *
 * A use is counted by one Lua script, atomic in Redis: it checks the pass as stored (revoked, window,
 * door, uses left) and only then counts it (of two instances racing for a last use, one is refused).
 * A change (issue, revoke, update, reissue) is written only over the revision it was made from (CAS).
 */
import { randomBytes } from "node:crypto";
import { type Pass, type PassRefusal, type PassView, isLive, opensNow, refusalText, viewOf } from "./pass.js";
import { PassIndex, bookingKey } from "./pass-index.js";
import {
  type BookingPass,
  CHANGE_TRIES,
  KEEP_ENDED_MS,
  LaterReadBegun,
  MAX_PASSES,
  type NewPass,
  type PassBook,
  PassBookFull,
  type PassChange,
  type PassTicket,
  PassUseRefused,
  type ReadFence,
  freshCode,
  makePass,
  wellFormed,
} from "./pass-book.js";
import { ISSUE, PUT, USE } from "./redis-pass-scripts.js";

/** What the account's Redis store offers the book (src/session/redis-store.ts). */
export interface PassCommands {
  readonly description: string;
  keyOf(name: string): string;
  command<T = unknown>(args: string[]): Promise<T>;
  sealText(text: string, info: string): Promise<string>;
  openText(sealed: string, info: string): Promise<string>;
}

const KEY_INFO = "door-access pass key v1";

/** Ended passes are looked for at most this often (at an issue). */
const PRUNE_EVERY_MS = 60_000;
/** Changed passes read one by one up to this many; more: the whole hash is read again. */
const DELTA_MAX = 500;

interface Stored {
  pass: Pass;
  rev: number;
}

export class RedisPassBook implements PassBook {
  private readonly index = new PassIndex();
  private revs = new Map<string, number>();
  private key: Buffer | null = null;
  private loading: Promise<void> | null = null;
  private version = -1;
  private prunedAt = Number.NEGATIVE_INFINITY;
  private readonly k: {
    passes: string;
    uses: string;
    version: string;
    changed: string;
    key: string;
    bookings: string;
  };

  constructor(
    private readonly redis: PassCommands,
    private readonly now: () => number,
    private readonly onProblem: (message: string) => void,
  ) {
    this.k = {
      passes: redis.keyOf("passes"),
      uses: redis.keyOf("pass-uses"),
      version: redis.keyOf("passes-version"),
      changed: redis.keyOf("passes-changed"),
      key: redis.keyOf("pass-key"),
      bookings: redis.keyOf("pass-bookings"),
    };
  }

  /** Reads the key and every pass once (again after a failed read). Never rejects. */
  ready(): Promise<void> {
    this.loading ??= this.load().catch((e: unknown) => {
      this.loading = null;
      this.onProblem(`the passes in the ${this.redis.description} could not be read (${(e as Error).message})`);
    });
    return this.loading;
  }

  private async load(): Promise<void> {
    if (this.key === null) this.key = await this.readKey();
    await this.reloadAll();
  }

  private async readKey(): Promise<Buffer> {
    let sealed = await this.redis.command<string | null>(["GET", this.k.key]);
    if (sealed === null || sealed === undefined) {
      const made = await this.redis.sealText(randomBytes(32).toString("hex"), KEY_INFO);
      await this.redis.command(["SET", this.k.key, made, "NX"]);
      sealed = await this.redis.command<string | null>(["GET", this.k.key]);
    }
    const key = Buffer.from((await this.redis.openText(String(sealed), KEY_INFO)).trim(), "hex");
    if (key.length !== 32) throw new Error("the pass key is not readable");
    return key;
  }

  private async reloadAll(): Promise<void> {
    const version = Number((await this.redis.command<string | null>(["GET", this.k.version])) ?? 0);
    const [all, uses] = await Promise.all([
      this.redis.command<string[]>(["HGETALL", this.k.passes]),
      this.redis.command<string[]>(["HGETALL", this.k.uses]),
    ]);
    const used = pairs(uses);
    this.index.clear();
    this.revs.clear();
    const list = pairs(all);
    for (const [id, raw] of list) {
      const s = parse(raw);
      if (s) this.put(s, Number(used.get(id) ?? 0), used.get(`${id}:first`) ?? null);
    }
    this.version = version;
  }

  async refresh(): Promise<void> {
    await this.ready();
    if (this.key === null) throw new Error(`the passes in the ${this.redis.description} could not be read`);
    const version = Number((await this.redis.command<string | null>(["GET", this.k.version])) ?? 0);
    if (version === this.version) return;
    if (version < this.version) return this.reloadAll(); // Redis lost its data (a restart without persistence)
    const ids = await this.redis.command<string[]>(["ZRANGEBYSCORE", this.k.changed, `(${this.version}`, "+inf"]);
    if (ids.length > DELTA_MAX) return this.reloadAll();
    if (ids.length > 0) {
      const [raws, uses] = await Promise.all([
        this.redis.command<(string | null)[]>(["HMGET", this.k.passes, ...ids]),
        this.redis.command<(string | null)[]>(["HMGET", this.k.uses, ...ids.flatMap((id) => [id, `${id}:first`])]),
      ]);
      ids.forEach((id, i) => {
        const old = this.index.passes.get(id);
        if (old) this.drop(old);
        const s = raws[i] ? parse(raws[i]) : null;
        if (s) this.put(s, Number(uses[2 * i] ?? 0), uses[2 * i + 1] ?? null);
      });
    }
    this.version = Math.max(this.version, version);
  }

  /** The uses of every pass as counted in Redis (other instances' included). */
  private async readUses(): Promise<void> {
    await this.refresh();
    const used = pairs(await this.redis.command<string[]>(["HGETALL", this.k.uses]));
    for (const p of this.index.passes.values()) {
      p.used = Math.max(p.used, Number(used.get(p.id) ?? 0));
      p.firstUsed = used.get(`${p.id}:first`) ?? p.firstUsed;
    }
  }

  private put(s: Stored, used: number, firstUsed: string | null): void {
    const p = { ...s.pass, used, firstUsed };
    this.index.add(p);
    this.revs.set(p.id, s.rev);
  }

  private drop(p: Pass): void {
    this.index.drop(p);
    this.revs.delete(p.id);
  }

  /** The read counter of a fence's calendar, and its stamp (none: a write of no read, never refused). */
  private fenceArgs(fence: ReadFence | undefined): [key: string, stamp: string] {
    return fence === undefined
      ? [this.redis.keyOf("pass-read:"), ""]
      : [this.redis.keyOf(`pass-read:${fence.source}`), String(fence.stamp)];
  }

  /**
   * Writes `next` over revision `rev` (null: a new pass; next null: deletes). false: another change
   * came first. A fenced write (a calendar read's) refused by a later read: LaterReadBegun.
   */
  private async write(id: string, rev: number | null, next: Pass | null, fence?: ReadFence): Promise<boolean> {
    const json = next === null ? "" : stored(next, (rev ?? 0) + 1);
    const [readKey, stamp] = this.fenceArgs(fence);
    const v = Number(
      await this.redis.command([
        "EVAL",
        PUT,
        "6",
        this.k.passes,
        this.k.version,
        this.k.changed,
        this.k.uses,
        this.k.bookings,
        readKey,
        id,
        rev === null ? "" : String(rev),
        json,
        stamp,
      ]),
    );
    if (v === -1) throw new LaterReadBegun(fence!.source);
    return v > 0;
  }

  /** Applies `change` to pass `id` over its latest revision (again when another instance changed it meanwhile). */
  private async change(id: string, change: (p: Pass) => Pass | null, fence?: ReadFence): Promise<Pass | null> {
    for (let i = 0; i < CHANGE_TRIES; i++) {
      await this.refresh();
      const p = this.index.passes.get(id);
      if (!p) return null;
      const next = change(structuredClone(p));
      if (next === null) return null;
      if (await this.write(id, this.revs.get(id)!, next, fence)) {
        // Stored: answered even when the read after it fails, so its message goes out (the next
        // read of a calendar finds the change made and would not tell it again).
        if (!(await this.refreshAfterStored())) return structuredClone(next);
        return structuredClone(this.index.passes.get(id) ?? next);
      }
    }
    throw new Error(`the pass ${id} kept being changed by other instances; try again`);
  }

  /** A new pass with a fresh code, after the book is read and checked for room. */
  private async make(n: NewPass, codeLength: number): Promise<{ pass: Pass; code: string }> {
    await this.refresh();
    const now = this.now();
    await this.prune(now);
    if (this.index.passes.size >= MAX_PASSES)
      throw new PassBookFull(`the account has ${MAX_PASSES} passes: revoke some first`);
    return makePass(n, this.key!, codeLength, now, (hash) => this.index.liveWithHash(hash, now));
  }

  async issue(n: NewPass, codeLength: number): Promise<{ pass: Pass; code: string }> {
    const made = await this.make(n, codeLength);
    if (!(await this.write(made.pass.id, null, made.pass))) throw new Error("a pass with this id exists; try again");
    await this.refreshAfterStored();
    return { pass: structuredClone(made.pass), code: made.code };
  }

  /** In one script: issued only if no pass of this booking is kept unrevoked, by this instance or another. */
  async issueBooking(
    n: BookingPass,
    codeLength: number,
    fence?: ReadFence,
  ): Promise<{ pass: Pass; code: string } | null> {
    const made = await this.make(n, codeLength);
    const [readKey, stamp] = this.fenceArgs(fence);
    const r = await this.redis.command<[number, string]>([
      "EVAL",
      ISSUE,
      "5",
      this.k.passes,
      this.k.version,
      this.k.changed,
      this.k.bookings,
      readKey,
      made.pass.id,
      stored(made.pass, 1),
      bookingKey(n.source, n.ref),
      stamp,
    ]);
    const v = Number(r[0]);
    if (v === -2) throw new LaterReadBegun(fence!.source);
    if (v < 0) throw new Error("a pass with this id exists; try again");
    await this.refreshAfterStored();
    return v === 0 ? null : { pass: structuredClone(made.pass), code: made.code };
  }

  /**
   * A change is stored: it is answered even when the read after it fails (Redis going away just
   * then), since a booking's stored pass is never issued again (its code would be lost) and a
   * stored update or revoke is not made again (its message would be lost). false: not read; the
   * next call of the book reads again.
   */
  private async refreshAfterStored(): Promise<boolean> {
    try {
      await this.refresh();
      return true;
    } catch {
      return false;
    }
  }

  serially<T>(source: string, read: () => Promise<T>): Promise<T> {
    return this.index.serially(source, read);
  }

  /** A counter per calendar in Redis (`pass-read:<node id>`), shared by every instance. */
  async readStamp(source: string): Promise<number> {
    return Number(await this.redis.command<number>(["INCR", this.redis.keyOf(`pass-read:${source}`)]));
  }

  async latestRead(source: string, stamp: number): Promise<boolean> {
    const now = await this.redis.command<string | null>(["GET", this.redis.keyOf(`pass-read:${source}`)]);
    return Number(now ?? 0) <= stamp;
  }

  async revoke(by: { id?: string; ref?: string; byCalendar?: boolean; fence?: ReadFence }): Promise<Pass[]> {
    await this.refresh();
    const at = new Date(this.now()).toISOString();
    const match = (p: Pass) =>
      p.revoked === null && ((by.id !== undefined && p.id === by.id) || (by.ref !== undefined && p.ref === by.ref));
    const out: Pass[] = [];
    for (const p of [...this.index.passes.values()].filter(match)) {
      const done = await this.change(
        p.id,
        (x) =>
          match(x)
            ? { ...x, revoked: at, ...(by.byCalendar === true ? { revokedBy: "calendar" as const } : {}) }
            : null,
        by.fence,
      );
      if (done) out.push(done);
    }
    return out;
  }

  update(id: string, change: PassChange, fence?: ReadFence): Promise<Pass | null> {
    return this.change(
      id,
      (p) => ({
        ...p,
        guest: change.guest,
        doors: change.doors.map((d) => ({ ...d })),
        from: change.from,
        until: change.until,
        ...(change.booking !== undefined ? { booking: { ...change.booking } } : {}),
      }),
      fence,
    );
  }

  /** Written over the pass's revision like any change (none: null): its uses (kept apart) stay as counted. */
  async reissue(id: string, codeLength: number): Promise<{ pass: Pass; code: string } | null> {
    await this.refresh();
    const now = this.now();
    const { code, hash } = freshCode(this.key!, codeLength, (h) => this.index.liveWithHash(h, now));
    const done = await this.change(id, (x) => (isLive(x, now) ? { ...x, hash } : null));
    return done === null ? null : { pass: done, code };
  }

  /** Revocations run at once: each reads back the changes the others made (2,500 at 200 at once: 10 s; at 50: 2.5 s). */
  readonly revokeAtOnce = 50;

  async fromSource(source: string): Promise<Pass[]> {
    await this.readUses();
    return this.index.fromSource(source);
  }

  async list(): Promise<PassView[]> {
    await this.readUses();
    const now = this.now();
    return [...this.index.passes.values()].map((p) => viewOf(p, now));
  }

  async liveOf(node: string): Promise<number> {
    await this.refresh();
    return this.index.liveOf(node, this.now());
  }

  bookingsOf(source: string): readonly Pass[] {
    return this.index.bookingsOf(source);
  }

  calendarsOn(doors: readonly { deviceId: number }[]): string[] {
    return this.index.calendarsOn(doors);
  }

  find(code: string): Pass | null {
    return this.key ? this.index.find(this.key, code, this.now()) : null;
  }

  reserve(p: Pass, deviceId?: number): PassTicket | null {
    const taken = this.index.take(p, this.now());
    if (taken === null) return null;
    const live = taken.live;
    let done = false;
    const release = () => {
      done = true;
      taken.release();
    };
    return {
      pass: live,
      release,
      commit: async () => {
        if (done) throw new Error("the pass's use was already taken or given back");
        const now = this.now();
        let r: [number, string, number];
        try {
          // A turnover pass's windows come from its calendar's passes, which another instance may
          // have changed since this message's check: read them again before the use is counted.
          if (live.turnover !== undefined) await this.refresh();
          r = await this.redis.command<[number, string, number]>([
            "EVAL",
            USE,
            "2",
            this.k.passes,
            this.k.uses,
            live.id,
            String(now),
            deviceId === undefined ? "" : String(deviceId),
            new Date(now).toISOString(),
            // Hours and turnover windows (from the calendar's passes as this instance last read them).
            opensNow(live, now, this.index) ? "1" : "0",
          ]);
        } finally {
          release();
        }
        const [n, why, used] = [Number(r[0]), String(r[1]) as PassRefusal | "gone", Number(r[2])];
        live.used = Math.max(live.used, used);
        if (n < 0) throw new PassUseRefused(refusalText(why, live, now, undefined, this.index), why);
        if (n === 1) live.firstUsed = new Date(now).toISOString();
        return { first: n === 1 };
      },
    };
  }

  inFlight(id: string): number {
    return this.index.inFlight(id);
  }

  /** Drops the passes over for 30 days (each only if no other instance changed it meanwhile). */
  private async prune(now: number): Promise<void> {
    if (now - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = now;
    for (const p of [...this.index.passes.values()]) {
      const ended = p.revoked !== null ? Date.parse(p.revoked) : Date.parse(p.until);
      if (!isLive(p, now) && now - ended > KEEP_ENDED_MS && this.index.inFlight(p.id) === 0)
        await this.write(p.id, this.revs.get(p.id)!, null);
    }
    await this.refresh();
  }
}

/** A pass as kept in the `passes` hash: without its uses (kept apart), with its revision and window in ms. */
function stored(p: Pass, rev: number): string {
  const { used: _u, firstUsed: _f, ...rest } = p;
  return JSON.stringify({ ...rest, rev, f: Date.parse(p.from), u: Date.parse(p.until) });
}

function parse(raw: string | null): Stored | null {
  if (raw === null) return null;
  try {
    const x = JSON.parse(raw) as Record<string, unknown>;
    const { rev, f: _f, u: _u, ...rest } = x;
    const p = { ...rest, used: 0, firstUsed: null };
    if (!wellFormed(p) || typeof rev !== "number") return null;
    return { pass: p, rev };
  } catch {
    return null;
  }
}

/** HGETALL's flat [field, value, ...] as a map. */
function pairs(flat: string[] | Record<string, string>): Map<string, string> {
  if (!Array.isArray(flat)) return new Map(Object.entries(flat));
  const m = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) m.set(flat[i], flat[i + 1]);
  return m;
}
