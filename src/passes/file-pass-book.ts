/**
 * An account's guest passes in a file (docs/passes.md#where-passes-are-kept): one book per account
 * in this runtime (every config-node copy and every door node of the account share it), kept
 * beside the account's session (`door-access/passes-<id>.json`, written whole and atomically, mode
 * 0600) so passes outlive a deploy and a restart. A code is never stored: only its HMAC under the
 * account's pass key, a random key in its own file made with the first pass, sealed under
 * Node-RED's credential secret (pass-key.ts).
 *
 * The use of a pass is taken in two steps, as a door's cooldown slot is: `reserve()` at the
 * check (synchronous, so two messages in one millisecond cannot both take a pass's last use) and
 * `commit()` before the command leaves (the count written to disk first) or `release()` when
 * nothing is sent.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { writeFileAtomic } from "../util/atomic-file.js";
import { accountStoreId } from "../util/store-id.js";
import { type Pass, type PassView, isLive, passCheck, refusalText, viewOf } from "./pass.js";
import { passesFileText } from "./pass-file.js";
import { PassIndex, bookingKey } from "./pass-index.js";
import { loadPassKey, passKeySealer } from "./pass-key.js";
import {
  type BookingPass,
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

export class FilePassBook implements PassBook {
  private readonly index = new PassIndex();
  private key: Buffer | null = null;
  private loading: Promise<void> | null = null;
  private writing: Promise<void> = Promise.resolve();
  /** A booking's pass being issued, by bookingKey: another issue for it waits, then finds it. */
  private readonly booking = new Map<string, Promise<unknown>>();
  private version = 0;
  private written = 0;
  /** While a write is turned into text: the passes changed since it began, as they were (pass-file.ts). */
  private before: Map<string, string> | null = null;

  constructor(
    private readonly file: string,
    private readonly keyFile: string,
    private readonly now: () => number,
    private readonly onProblem: (message: string) => void,
    /** Seals the pass key file (passKeySealer); null: Node-RED has no credential secret, the key is kept as is. */
    private readonly sealer: Buffer | null = null,
  ) {}

  /** Reads the file and the key once; later calls wait for the same read. Never rejects. */
  ready(): Promise<void> {
    this.loading ??= this.load();
    return this.loading;
  }

  refresh(): Promise<void> {
    return this.ready();
  }

  get loaded(): boolean {
    return this.key !== null;
  }

  private async load(): Promise<void> {
    await this.loadKey();
    try {
      const data = JSON.parse(await fs.readFile(this.file, "utf8")) as { v?: unknown; passes?: unknown };
      const list = Array.isArray(data.passes) ? data.passes : [];
      for (const p of list) if (wellFormed(p)) this.add(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT")
        this.onProblem(`the passes file ${this.file} could not be read (${(e as Error).message}); it is read as empty`);
    }
  }

  private async loadKey(): Promise<void> {
    this.key = await loadPassKey(this.keyFile, this.sealer, this.onProblem);
  }

  private add(p: Pass): void {
    this.index.add(p);
  }

  private drop(p: Pass): void {
    this.index.drop(p);
  }

  /** Issues a pass; its code is returned once and kept only as a hash. */
  async issue(n: NewPass, codeLength: number): Promise<{ pass: Pass; code: string }> {
    await this.ready();
    return this.issueReady(n, codeLength);
  }

  /** Refuses a calendar read's write once a later read of its calendar has begun (synchronous, before the change). */
  private fenced(fence: ReadFence | undefined): void {
    if (fence !== undefined && !this.index.latestRead(fence.source, fence.stamp))
      throw new LaterReadBegun(fence.source);
  }

  /** Issues a pass once the book is read: from its checks to its entry in the book, nothing awaits. */
  private async issueReady(n: NewPass, codeLength: number): Promise<{ pass: Pass; code: string }> {
    const now = this.now();
    this.prune(now);
    if (this.index.passes.size >= MAX_PASSES)
      throw new PassBookFull(`the account has ${MAX_PASSES} passes: revoke some first`);
    const { pass, code } = makePass(n, this.key!, codeLength, now, (hash) => this.index.liveWithHash(hash, now));
    this.add(pass);
    // The copy handed back is made now: thousands of issues waiting on one coalesced write all
    // resume at once when it lands, and must not each copy their pass then (a calendar's read).
    const copy = structuredClone(pass);
    try {
      await this.save();
    } catch (e) {
      this.drop(pass); // not kept: not issued
      throw e;
    }
    return { pass: copy, code };
  }

  async issueBooking(
    n: BookingPass,
    codeLength: number,
    fence?: ReadFence,
  ): Promise<{ pass: Pass; code: string } | null> {
    await this.ready();
    const key = bookingKey(n.source, n.ref);
    for (let pending = this.booking.get(key); pending !== undefined; pending = this.booking.get(key))
      await pending.catch(() => undefined);
    // From here to the booking's entry, nothing awaits: no other issue of this booking runs between.
    this.fenced(fence);
    if (this.index.booked(n.source, n.ref) !== null) return null;
    const run = this.issueReady(n, codeLength);
    this.booking.set(key, run);
    try {
      return await run;
    } finally {
      if (this.booking.get(key) === run) this.booking.delete(key);
    }
  }

  serially<T>(source: string, read: () => Promise<T>): Promise<T> {
    return this.index.serially(source, read);
  }

  readStamp(source: string): Promise<number> {
    return Promise.resolve(this.index.readStamp(source));
  }

  latestRead(source: string, stamp: number): Promise<boolean> {
    return Promise.resolve(this.index.latestRead(source, stamp));
  }

  /** Revokes the passes with this id or ref (several for one ref); returns those it revoked. */
  async revoke(by: { id?: string; ref?: string; byCalendar?: boolean; fence?: ReadFence }): Promise<Pass[]> {
    await this.ready();
    this.fenced(by.fence);
    // By id alone: that pass, without a scan of the book (a deleted calendar's thousands, revokeAtOnce).
    const byId = by.ref === undefined && by.id !== undefined ? this.index.passes.get(by.id) : undefined;
    const hit =
      by.ref === undefined && by.id !== undefined
        ? byId !== undefined && byId.revoked === null
          ? [byId]
          : []
        : [...this.index.passes.values()].filter(
            (p) =>
              p.revoked === null &&
              ((by.id !== undefined && p.id === by.id) || (by.ref !== undefined && p.ref === by.ref)),
          );
    if (hit.length === 0) return [];
    const at = new Date(this.now()).toISOString();
    for (const p of hit) {
      this.changing(p);
      p.revoked = at;
      if (by.byCalendar === true) p.revokedBy = "calendar";
    }
    const copies = hit.map((p) => structuredClone(p)); // made now, as at issue
    try {
      await this.save();
    } catch (e) {
      // Not written: not revoked (the file and the book stay alike; a retry revokes it again).
      for (const p of hit) {
        this.changing(p);
        p.revoked = null;
        delete p.revokedBy;
      }
      throw e;
    }
    return copies;
  }

  /** Changes a pass's guest, doors or window, keeping its code and uses; null when there is no such pass. */
  async update(id: string, change: PassChange, fence?: ReadFence): Promise<Pass | null> {
    await this.ready();
    this.fenced(fence);
    const p = this.index.passes.get(id);
    if (!p) return null;
    const before = structuredClone(p);
    this.changing(p);
    p.guest = change.guest;
    p.doors = change.doors.map((d) => ({ ...d }));
    p.from = change.from;
    p.until = change.until;
    if (change.booking !== undefined) p.booking = { ...change.booking };
    this.index.doorsChanged(p);
    const copy = structuredClone(p); // made now, as at issue
    try {
      await this.save();
    } catch (e) {
      this.changing(p);
      Object.assign(p, before);
      this.index.doorsChanged(p);
      throw e;
    }
    return copy;
  }

  async reissue(id: string, codeLength: number): Promise<{ pass: Pass; code: string } | null> {
    await this.ready();
    const now = this.now();
    const p = this.index.passes.get(id);
    if (!p || !isLive(p, now)) return null;
    const { code, hash } = freshCode(this.key!, codeLength, (h) => this.index.liveWithHash(h, now));
    const before = p.hash;
    this.changing(p);
    // Indexed under the new hash from here: the old code finds nothing any more.
    this.drop(p);
    p.hash = hash;
    this.add(p);
    try {
      await this.save();
    } catch (e) {
      this.changing(p);
      this.drop(p);
      p.hash = before;
      this.add(p);
      throw e;
    }
    return { pass: structuredClone(p), code };
  }

  /** Revocations run at once: each scans the book once (20,000 passes at most), and they share one write of the file. */
  readonly revokeAtOnce = 500;

  /** The passes a calendar (its door-pass node id) made, revoked ones included. */
  async fromSource(source: string): Promise<Pass[]> {
    await this.ready();
    return this.index.fromSource(source);
  }

  async list(): Promise<PassView[]> {
    await this.ready();
    const now = this.now();
    return [...this.index.passes.values()].map((p) => viewOf(p, now));
  }

  async liveOf(node: string): Promise<number> {
    await this.ready();
    return this.index.liveOf(node, this.now());
  }

  bookingsOf(source: string): readonly Pass[] {
    return this.index.bookingsOf(source);
  }

  calendarsOn(doors: readonly { deviceId: number }[]): string[] {
    return this.index.calendarsOn(doors);
  }

  /** The pass with this code (a live one first), or null. Synchronous: the book must be ready. */
  find(code: string): Pass | null {
    return this.key ? this.index.find(this.key, code, this.now()) : null;
  }

  /** Takes one use of an active pass, or null when none is left (counting uses reserved by messages in flight). */
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
        // Checked again as it is now: the command may leave a while after the check (a token
        // renewal first), and a pass revoked, moved or changed meanwhile no longer opens.
        const why = this.index.passes.has(live.id) ? passCheck(live, this.now(), deviceId, this.index) : "gone";
        if (why !== null) {
          release();
          throw new PassUseRefused(refusalText(why, live, this.now(), undefined, this.index), why);
        }
        const first = live.used === 0;
        this.changing(live);
        live.used++;
        if (first) live.firstUsed = new Date(this.now()).toISOString();
        release();
        try {
          await this.save();
        } catch (e) {
          this.changing(live);
          live.used--;
          if (first) live.firstUsed = null;
          throw e;
        }
        return { first };
      },
    };
  }

  /** How many uses of a pass are taken by messages in flight. */
  inFlight(id: string): number {
    return this.index.inFlight(id);
  }

  /**
   * Before pass `p` is changed in place: while a write is turned into text, it keeps the pass as it
   * was, so that write holds the book as it was when it began (the change is the next write's).
   */
  private changing(p: Pass): void {
    if (this.before !== null && !this.before.has(p.id)) this.before.set(p.id, JSON.stringify(p));
  }

  private prunedAt = Number.NEGATIVE_INFINITY;

  /** Drops passes long over; at most once a minute (a calendar issues thousands in one go). */
  private prune(now: number): void {
    if (Math.abs(now - this.prunedAt) < 60_000) return;
    this.prunedAt = now;
    for (const p of [...this.index.passes.values()]) {
      const ended = p.revoked !== null ? Date.parse(p.revoked) : Date.parse(p.until);
      if (!isLive(p, now) && now - ended > KEEP_ENDED_MS && this.index.inFlight(p.id) === 0) this.drop(p);
    }
  }

  /**
   * Writes the whole book (one write at a time; the last one has every change), in slices
   * (pass-file.ts): a change made meanwhile is written by the next write. Rejects when it could not.
   */
  private save(): Promise<void> {
    const version = ++this.version;
    const run = async () => {
      if (this.written >= version) return;
      const upTo = this.version;
      const before = new Map<string, string>();
      this.before = before;
      let text: string;
      try {
        text = await passesFileText([...this.index.passes.values()], before);
      } finally {
        this.before = null;
      }
      await writeFileAtomic(this.file, text);
      this.written = Math.max(this.written, upTo);
    };
    this.writing = this.writing.then(run, run);
    return this.writing;
  }
}

const books = new Map<string, FilePassBook>();

/** The pass book of an account (its key), in the folder of its session file. */
export function passBookFor(
  accountKey: string,
  tokenFile: string,
  now: () => number,
  onProblem: (message: string) => void,
  /** Node-RED's credential secret: the pass key file is sealed under it. */
  secret: string | null = null,
): FilePassBook {
  const dir = path.dirname(tokenFile);
  const id = accountStoreId(accountKey);
  const file = path.join(dir, `passes-${id}.json`);
  let book = books.get(file);
  if (!book) {
    book = new FilePassBook(file, path.join(dir, `pass-key-${id}`), now, onProblem, passKeySealer(secret, accountKey));
    books.set(file, book);
  }
  return book;
}

/** For tests and a restart: forget the books held in memory (the files stay). */
export function forgetPassBooks(): void {
  books.clear();
}
