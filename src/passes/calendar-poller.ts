/**
 * Reads a door-pass node's booking calendar every `everyMinutes` (docs/passes.md#from-a-booking-calendar):
 * a GET with If-None-Match / If-Modified-Since (an unchanged feed is answered 304 and costs
 * nothing more), the body (at most MAX_FEED_BYTES) read into bookings in a worker thread, then
 * handed to `apply`. A feed that cannot be fetched, read or applied changes nothing: `onProblem`
 * is told once per kind of problem, and the next poll tries again. One read at a time.
 */
import { Worker } from "node:worker_threads";
import * as path from "node:path";
import type { Pool as UndiciPool } from "undici";
import { undiciPool } from "../client/pool.js";
import type { Booking, CalendarSettings, FeedRead } from "./calendar.js";
import { feedUrl } from "./calendar-settings.js";

export const MAX_FEED_BYTES = 20 * 1024 * 1024;
export const READ_DEADLINE_MS = 10_000;
export const FETCH_TIMEOUT_MS = 30_000;
/** The whole fetch, headers and body: a feed that trickles in never holds the next reads back. */
export const FETCH_DEADLINE_MS = 60_000;

export type PollResult =
  { kind: "unchanged" } | { kind: "read"; bookings: Booking[]; skipped: number } | { kind: "failed"; problem: string };

/** Reads a feed's text into bookings in a worker thread (bounded in time and memory). */
export function readFeedOffThread(text: string, settings: CalendarSettings, now: number): Promise<FeedRead> {
  return new Promise((resolve) => {
    let worker: Worker;
    try {
      worker = new Worker(path.join(__dirname, "calendar-worker.js"), {
        workerData: { text, settings, now },
        execArgv: [],
        resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32 },
        stdout: true,
        stderr: true,
      });
    } catch (e) {
      resolve({ ok: false, problem: `the feed could not be read (${(e as Error).message})` });
      return;
    }
    let settled = false;
    const finish = (r: FeedRead) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      void worker.terminate().catch(() => undefined);
      resolve(r);
    };
    const deadline = setTimeout(
      () => finish({ ok: false, problem: `reading the feed took more than ${READ_DEADLINE_MS / 1000} s` }),
      READ_DEADLINE_MS,
    );
    deadline.unref();
    worker.once("message", (r: FeedRead) => finish(r));
    worker.once("error", (e) =>
      finish({ ok: false, problem: `the feed could not be read (${e.message.slice(0, 120)})` }),
    );
    worker.once("exit", () => finish({ ok: false, problem: "the feed could not be read (its reader stopped)" }));
  });
}

export class CalendarPoller {
  private etag: string | null = null;
  private lastModified: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<PollResult> | null = null;
  private stopped = false;
  private readonly abort = new AbortController();
  /** One connection pool to the feed's origin (undici's Pool alone: src/client/pool.ts), made on the first read. */
  private pool: UndiciPool | null = null;

  constructor(
    private readonly settings: CalendarSettings,
    /**
     * `stamp`: what `stamp()` gave as this read began (null when it could not). "superseded": a
     * read begun later (another instance's) applies the feed; this one was not applied, or only
     * up to that read's start. false: applied in part (nothing issued yet): the next read reads
     * the feed in full again.
     */
    private readonly apply: (
      bookings: Booking[],
      skipped: number,
      stamp: number | null,
      /** Events of the feed skipped as blocked time: a feed that lists them is not an empty feed. */
      blocked: number,
    ) => Promise<boolean | void | "superseded">,
    /**
     * `reason`: `fetch`, `feed` (not readable), or the apply's (CalendarRefused's reason, else
     * `apply`); with a null problem, `unchanged` when the feed was answered 304 (nothing applied).
     */
    private readonly onProblem: (problem: string | null, reason?: string) => void,
    private readonly now: () => number = Date.now,
    private readonly fetchDeadlineMs: number = FETCH_DEADLINE_MS,
    /**
     * Called as a read begins, before its request: the order of the reads of this calendar among
     * every instance (docs/passes.md#from-a-booking-calendar), handed to `apply`; null: no account (apply says why). When it rejects, the read is not made.
     */
    private readonly stamp: () => Promise<number | null> = () => Promise.resolve(null),
  ) {}

  /** Reads now and then every everyMinutes. */
  start(): void {
    if (this.stopped || this.timer !== null) return;
    void this.poll().catch(() => undefined);
    this.timer = setInterval(() => void this.poll().catch(() => undefined), this.settings.everyMinutes * 60_000);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.abort.abort();
    void this.pool?.close().catch(() => undefined);
    this.pool = null;
  }

  /** One read (the timer's): waits for one in progress instead of starting a second. Never rejects. */
  poll(): Promise<PollResult> {
    if (this.stopped) return Promise.resolve({ kind: "failed", problem: "the node is stopping" });
    this.running ??= this.readOnce().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private following: Promise<PollResult> | null = null;

  /**
   * One read for a `sync` message: the feed as it is once the sync is asked. A read under way began
   * before (perhaps before the feed changed), so one more read follows it, shared by every sync
   * asked meanwhile (docs/passes.md#from-a-booking-calendar). Never rejects.
   */
  pollNow(): Promise<PollResult> {
    if (this.running === null) return this.poll();
    this.following ??= this.running.then(() => {
      this.following = null;
      return this.poll();
    });
    return this.following;
  }

  /**
   * `again`: a read overtaken by a later one ("superseded") reads once more at once, numbered after
   * it: the later read may yet fail (its fetch, its feed, its node stopped) or answer 304, and this
   * read's feed must not wait for the timer (docs/passes.md#from-a-booking-calendar).
   */
  private async readOnce(again = true): Promise<PollResult> {
    // Without its number a read's writes could not be refused once a later read has begun (an older
    // answer would undo a newer one): a read that cannot be numbered is not made
    // (docs/passes.md#from-a-booking-calendar).
    let stamp: number | null;
    try {
      stamp = await this.stamp();
    } catch (e) {
      const problem = `the order of the calendar's reads could not be kept (${(e as Error).message}): not read`;
      this.onProblem(problem, "store");
      return { kind: "failed", problem };
    }
    const r = await this.fetchFeed();
    if (r.kind === "failed") {
      this.onProblem(r.problem, "fetch");
      return r;
    }
    if (r.kind === "unchanged") {
      // The feed as last applied (answered 304): a read all the same (the status says when), and
      // after a failed read, it reads again (calendar-ok).
      this.onProblem(null, "unchanged");
      return r;
    }
    const feed = await readFeedOffThread(r.text, this.settings, this.now());
    if (!feed.ok) {
      this.onProblem(feed.problem, "feed");
      return { kind: "failed", problem: feed.problem };
    }
    let whole: boolean | void;
    try {
      const applied = await this.apply(feed.bookings, feed.skipped, stamp, feed.blocked);
      if (applied === "superseded") {
        // No ETag kept: the next read is in full, whatever the later read did.
        this.etag = null;
        this.lastModified = null;
        if (again && !this.stopped) return this.readOnce(false);
        return { kind: "unchanged" };
      }
      whole = applied;
    } catch (e) {
      // Not applied: the next read tries again (no ETag kept, so it is read again in full).
      this.etag = null;
      this.lastModified = null;
      const reason = (e as { reason?: unknown }).reason;
      this.onProblem((e as Error).message, typeof reason === "string" ? reason : "apply");
      return { kind: "failed", problem: (e as Error).message };
    }
    this.etag = whole === false ? null : r.etag;
    this.lastModified = whole === false ? null : r.lastModified;
    this.onProblem(null);
    return { kind: "read", bookings: feed.bookings, skipped: feed.skipped };
  }

  private async fetchFeed(): Promise<
    | { kind: "unchanged" }
    | { kind: "failed"; problem: string }
    | { kind: "body"; text: string; etag: string | null; lastModified: string | null }
  > {
    const headers: Record<string, string> = { accept: "text/calendar, */*;q=0.5" };
    if (this.etag) headers["if-none-match"] = this.etag;
    if (this.lastModified) headers["if-modified-since"] = this.lastModified;
    const deadline = AbortSignal.timeout(this.fetchDeadlineMs);
    try {
      const url = feedUrl(this.settings.url);
      if (this.pool === null) {
        const Pool = undiciPool();
        this.pool = new Pool(url.origin, {
          connections: 1,
          headersTimeout: FETCH_TIMEOUT_MS,
          bodyTimeout: FETCH_TIMEOUT_MS,
          connect: { timeout: FETCH_TIMEOUT_MS },
        });
      }
      const res = await this.pool.request({
        path: url.pathname + url.search,
        method: "GET",
        headers,
        signal: AbortSignal.any([this.abort.signal, deadline]),
      });
      if (res.statusCode === 304) {
        await res.body.dump().catch(() => undefined);
        return { kind: "unchanged" };
      }
      if (res.statusCode !== 200) {
        await res.body.dump().catch(() => undefined);
        return { kind: "failed", problem: `the calendar answered ${res.statusCode}` };
      }
      const declared = Number(res.headers["content-length"]);
      if (Number.isFinite(declared) && declared > MAX_FEED_BYTES) {
        res.body.destroy();
        return { kind: "failed", problem: `the calendar is larger than ${MAX_FEED_BYTES / 1024 / 1024} MB` };
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > MAX_FEED_BYTES) {
          res.body.destroy();
          return { kind: "failed", problem: `the calendar is larger than ${MAX_FEED_BYTES / 1024 / 1024} MB` };
        }
        chunks.push(chunk as Buffer);
      }
      const h = (k: string) => {
        const v = res.headers[k];
        return typeof v === "string" && v.length <= 200 ? v : null;
      };
      return {
        kind: "body",
        text: Buffer.concat(chunks).toString("utf8"),
        etag: h("etag"),
        lastModified: h("last-modified"),
      };
    } catch (e) {
      if (deadline.aborted && !this.abort.signal.aborted)
        return { kind: "failed", problem: `the calendar was not read within ${this.fetchDeadlineMs / 1000} s` };
      const code = (e as { code?: string }).code;
      return {
        kind: "failed",
        problem: `the calendar could not be fetched (${code ?? (e as Error).message.slice(0, 100)})`,
      };
    }
  }
}
