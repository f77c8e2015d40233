/**
 * The service description check of an account (docs/service-description.md): once after the
 * account's start-up and then every 24 hours, GET `<docsUrl or baseUrl>/openapi.json` with
 * `If-None-Match` (the last ETag) and no credential of any kind, and compare what the package
 * relies on with it (src/spec/description.ts). Differences give one warning naming each; a
 * 304 or a description with nothing relevant changed says nothing; a failed fetch is one
 * debug line and waits for the next 24-hour mark.
 *
 * It has its own connection (never the session's pool), starts only once the session's
 * start-up has settled, and nothing of it is awaited by the session or a message: it informs
 * an operator, it never stops a door. The body is parsed and compared in a worker thread, never
 * on the event loop, given up after DESCRIPTION_READ_DEADLINE_MS. Every timer goes through the
 * account's clock (unref'd) and is cleared by close(), which also ends a read in progress; no
 * promise of it can reject unhandled.
 */
import { createHash } from "node:crypto";
import type { Dispatcher } from "undici";
import { BaseUrlError, parseBaseUrl } from "../client/base-url.js";
import { undiciPool } from "../client/pool.js";
import * as path from "node:path";
import { Worker } from "node:worker_threads";
import { TOO_COMPLEX } from "../spec/description.js";
import type { DescriptionRead } from "../spec/description-read.js";
import { type Clock, sleep, systemClock } from "../util/clock.js";
import { controlCharsAsSpaces } from "../util/text.js";

/** The period of the check (and of the retry after a failed fetch). */
export const DESCRIPTION_CHECK_INTERVAL_MS = 24 * 3600_000;
/** The first check follows the end of the session's start-up by this much (after the device list warm-up has started). */
export const DESCRIPTION_FIRST_CHECK_DELAY_MS = 1_000;
/** ... or comes this long after the account started, should the start-up not settle before. */
export const DESCRIPTION_FIRST_CHECK_LATEST_MS = 60_000;
/** A description larger than this is not read (the service's is about 25 kB). */
export const DESCRIPTION_MAX_BYTES = 4 * 1024 * 1024;
const CONNECT_TIMEOUT_MS = 10_000;
const ANSWER_TIMEOUT_MS = 20_000;
/**
 * The whole fetch (connection, answer, body) ends within this, on the account's clock: a body that
 * trickles in a byte at a time never trips the per-chunk time-out, and a fetch that never ends
 * would be joined by every later check (no check again until a redeploy).
 */
export const DESCRIPTION_FETCH_DEADLINE_MS = 60_000;
/** Reading a description (parse and compare, in a worker thread) is given up after this: "too complex to check". */
export const DESCRIPTION_READ_DEADLINE_MS = 10_000;
/** The worker thread's heap limit: a description that needs more is "too complex to check". */
export const DESCRIPTION_READ_MEMORY_MB = 256;

export interface DescriptionCheckLog {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
}

/** What the editor's sidebar shows of the check (no secret: the URL has no user or password). */
export interface DescriptionReport {
  url: string;
  /** When a check last got an answer that was, or kept, a description (ISO time); null before. */
  checkedAt: string | null;
  /** The differences in what the package relies on, as last found; empty when there are none. */
  differences: string[];
}

/**
 * Where the account's description is: `docsUrl` (empty = the base URL) with `/openapi.json`
 * appended, unless it already names a `.json` file. The same rules as the base URL (https, or
 * http for a loopback host; no user, password, query or fragment). Throws a BaseUrlError.
 */
export function descriptionUrl(docsUrl: unknown, baseUrl: string): URL {
  const raw = typeof docsUrl === "string" && docsUrl.trim() !== "" ? docsUrl.trim() : baseUrl;
  let url: URL;
  try {
    url = parseBaseUrl(raw);
  } catch (e) {
    throw new BaseUrlError(
      e instanceof BaseUrlError ? e.message.replace(/^base URL/, "the docs URL") : "the docs URL is invalid",
    );
  }
  if (!/\.json$/i.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, "")}/openapi.json`;
  return url;
}

/** The session as far as the check looks at it: has its start-up settled? */
export interface StartUpSource {
  readonly state: string;
  on(event: "state", listener: (snap: { state: string }) => void): unknown;
  off(event: "state", listener: (snap: { state: string }) => void): unknown;
}

/** States in which the session's start-up is still under way. */
const STARTING = new Set(["idle", "logging-in", "refreshing"]);

class FetchFailed extends Error {}

export class ServiceDescriptionCheck {
  readonly url: URL;
  /** How long the accounts that use this check must still send nothing (a 429's Retry-After): the fetch waits. */
  private readonly heldForMs: () => number;
  private readonly clock: Clock;
  private readonly log: DescriptionCheckLog;
  private timer: unknown = null;
  private latestTimer: unknown = null;
  private source: StartUpSource | null = null;
  private readonly onState = (snap: { state: string }) => {
    if (!STARTING.has(snap.state)) this.startUpSettled();
  };
  private inflight: Promise<void> | null = null;
  private abort: AbortController | null = null;
  private readonly readWorker: string;
  /** Ends the worker thread reading a description, if one runs. */
  private stopReading: (() => void) | null = null;
  private closed = false;
  private first = true;
  private etag: string | null = null;
  private bodyHash: string | null = null;
  private checkedAt: number | null = null;
  private differences: string[] = [];
  /** The differences the last warning named ("" = none warned, or matching again since). */
  private warned = "";
  /** Told each time what the check found changes (the accounts' events: docs/events.md#service). */
  private readonly watchers = new Set<(differences: readonly string[]) => void>();

  constructor(options: {
    url: URL;
    clock?: Clock;
    log: DescriptionCheckLog;
    heldForMs?: () => number;
    /** The worker thread's script (tests: one that never answers); default src/spec/description-worker.ts. */
    readWorker?: string;
  }) {
    this.heldForMs = options.heldForMs ?? (() => 0);
    this.readWorker = options.readWorker ?? path.join(__dirname, "..", "spec", "description-worker.js");
    this.url = new URL(options.url.href);
    this.clock = options.clock ?? systemClock;
    this.log = options.log;
  }

  /**
   * Schedules the first check DESCRIPTION_FIRST_CHECK_DELAY_MS after the session's start-up
   * has settled (ready, halted, unreachable: whichever), at the latest
   * DESCRIPTION_FIRST_CHECK_LATEST_MS from now; then one every 24 hours.
   */
  startAfter(session: StartUpSource): void {
    if (this.closed || !this.first || this.source || this.timer !== null) return;
    if (!STARTING.has(session.state)) {
      this.schedule(DESCRIPTION_FIRST_CHECK_DELAY_MS);
      return;
    }
    this.source = session;
    session.on("state", this.onState);
    this.latestTimer = this.clock.setTimeout(() => {
      this.latestTimer = null;
      // Not settled within the limit: the check runs now, not one more second later.
      this.detach();
      if (this.closed || !this.first || this.timer !== null) return;
      this.first = false;
      this.schedule(DESCRIPTION_CHECK_INTERVAL_MS);
      void this.checkNow();
    }, DESCRIPTION_FIRST_CHECK_LATEST_MS);
  }

  private startUpSettled(): void {
    this.detach();
    if (!this.closed && this.first && this.timer === null) this.schedule(DESCRIPTION_FIRST_CHECK_DELAY_MS);
  }

  private detach(): void {
    if (this.source) this.source.off("state", this.onState);
    this.source = null;
    if (this.latestTimer !== null) this.clock.clearTimeout(this.latestTimer);
    this.latestTimer = null;
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      this.first = false;
      // The next mark is counted from this one, whatever this check takes or finds.
      this.schedule(DESCRIPTION_CHECK_INTERVAL_MS);
      void this.checkNow();
    }, ms);
  }

  /** One check now (one GET at most; joins one in flight). Never rejects. */
  checkNow(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (!this.inflight) {
      this.inflight = this.fetchAndCompare()
        .catch((e: unknown) => {
          if (this.closed) return;
          const why = e instanceof FetchFailed ? e.message : describeFailure(e);
          this.log.debug(`service description check: ${this.url.href} could not be read (${why}); next try in 24 h`);
        })
        .finally(() => {
          this.inflight = null;
        });
    }
    return this.inflight;
  }

  report(): DescriptionReport {
    return {
      url: this.url.href,
      checkedAt: this.checkedAt === null ? null : new Date(this.checkedAt).toISOString(),
      differences: [...this.differences],
    };
  }

  /** Stops the timers and any fetch in flight. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.detach();
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    this.abort?.abort(new Error("the account closed"));
    this.stopReading?.();
  }

  private async fetchAndCompare(): Promise<void> {
    const abort = new AbortController();
    this.abort = abort;
    // docs/session.md#a-retry-after-holds-the-account: nothing goes to the service while it asked
    // an account that uses this check to wait; the check is off the message path, so it just waits.
    const held = this.heldForMs();
    if (held > 0) await sleep(this.clock, held, abort.signal);
    const Pool = undiciPool();
    const pool = new Pool(this.url.origin, {
      connections: 1,
      connect: { timeout: CONNECT_TIMEOUT_MS },
      headersTimeout: ANSWER_TIMEOUT_MS,
      bodyTimeout: ANSWER_TIMEOUT_MS,
      keepAliveTimeout: 1_000,
    });
    let body: Buffer;
    let etag: string | null;
    const deadline = this.clock.setTimeout(
      () => abort.abort(new FetchFailed(`no complete answer within ${DESCRIPTION_FETCH_DEADLINE_MS / 1000} s`)),
      DESCRIPTION_FETCH_DEADLINE_MS,
    );
    try {
      // No Authorization, no cookie: the description is public, and this request is not the session's.
      const headers: Record<string, string> = { accept: "application/json" };
      if (this.etag !== null) headers["if-none-match"] = this.etag;
      const res = await pool.request({
        path: this.url.pathname + this.url.search,
        method: "GET",
        headers,
        signal: abort.signal,
      });
      const tag = res.headers.etag;
      etag = typeof tag === "string" && tag.length > 0 && tag.length <= 200 ? tag : null;
      if (res.statusCode === 304 && this.etag !== null) {
        await res.body.dump().catch(() => undefined);
        this.checkedAt = this.clock.now();
        return; // unchanged: silent
      }
      if (res.statusCode !== 200) {
        await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
        throw new FetchFailed(`answered ${res.statusCode}`);
      }
      body = await readLimited(res);
    } catch (e) {
      if (abort.signal.reason instanceof FetchFailed) throw abort.signal.reason;
      throw e;
    } finally {
      this.clock.clearTimeout(deadline);
      this.abort = null;
      await pool.destroy().catch(() => undefined);
    }
    if (this.closed) return;
    const hash = createHash("sha256").update(body).digest("hex");
    if (hash === this.bodyHash) {
      // The same description as last time: silent, and not read again.
      this.checkedAt = this.clock.now();
      this.etag = etag;
      return;
    }
    // docs/service-description.md#when: parsed and compared in a worker thread, never on the
    // event loop; given up (too complex) after DESCRIPTION_READ_DEADLINE_MS or if the thread fails.
    const read = await this.readInWorker(body);
    if (this.closed) return;
    if (read.kind === "not-json") throw new FetchFailed("the answer is not JSON");
    if (read.kind === "not-openapi") throw new FetchFailed("the answer is not an OpenAPI 3 description");
    this.checkedAt = this.clock.now();
    this.etag = etag;
    this.bodyHash = hash;
    this.differences = read.differences;
    this.tell();
  }

  /**
   * Reads the body in a worker thread (src/spec/description-worker.ts), with a memory limit and a
   * deadline on the account's clock; close() ends it. Never rejects: a thread that fails, runs out
   * of memory or overruns is "too complex to check".
   */
  private readInWorker(body: Buffer): Promise<DescriptionRead> {
    const tooComplex: DescriptionRead = { kind: "compared", differences: [TOO_COMPLEX] };
    // A copy of its own, moved (not copied again) to the thread.
    const own = new Uint8Array(body);
    return new Promise<DescriptionRead>((resolve) => {
      let worker: Worker;
      try {
        worker = new Worker(this.readWorker, {
          workerData: { body: own },
          transferList: [own.buffer],
          // None of Node-RED's own options or preloads (-r): the reader needs none, and a preload
          // written for the main thread (one that watches stdin, an APM agent) must not run here.
          execArgv: [],
          resourceLimits: { maxOldGenerationSizeMb: DESCRIPTION_READ_MEMORY_MB, maxYoungGenerationSizeMb: 32 },
          stdout: true,
          stderr: true,
        });
      } catch {
        resolve(tooComplex);
        return;
      }
      let settled = false;
      const finish = (r: DescriptionRead): void => {
        if (settled) return;
        settled = true;
        this.clock.clearTimeout(deadline);
        this.stopReading = null;
        void worker.terminate().catch(() => undefined);
        resolve(r);
      };
      const deadline = this.clock.setTimeout(() => finish(tooComplex), DESCRIPTION_READ_DEADLINE_MS);
      this.stopReading = () => finish(tooComplex);
      worker.once("message", (r: DescriptionRead) => finish(r));
      worker.once("error", () => finish(tooComplex));
      worker.once("exit", () => finish(tooComplex));
    });
  }

  /** `fn` is told what the check finds, now if it found differences and at each change; returns its unsubscribe. */
  watch(fn: (differences: readonly string[]) => void): () => void {
    this.watchers.add(fn);
    if (this.differences.length > 0) fn([...this.differences]);
    return () => this.watchers.delete(fn);
  }

  /** Warns once about what the last comparison found (or that it gave up). */
  private tell(): void {
    const key = this.differences.join("\n");
    if (key !== this.warned) for (const fn of [...this.watchers]) fn([...this.differences]);
    if (this.differences.length === 1 && this.differences[0] === TOO_COMPLEX && key !== this.warned) {
      // docs/service-description.md#when: given up within the work bound, said once.
      this.warned = key;
      this.log.warn(
        `the service description at ${this.url.href} is too complex to check: it needs more work than the check's bound allows, so it was not compared (doors keep working as before)`,
      );
    } else if (this.differences.length > 0 && key !== this.warned) {
      this.warned = key;
      const n = this.differences.length;
      this.log.warn(
        `the service description at ${this.url.href} differs from the one this package was built against, ` +
          `in ${n} thing${n === 1 ? "" : "s"} the package relies on (doors keep working as before; a package update may be needed):\n` +
          this.differences.map((d) => `  - ${d}`).join("\n"),
      );
    } else if (this.differences.length === 0 && this.warned !== "") {
      this.warned = "";
      this.log.info(`the service description at ${this.url.href} matches what this package relies on again`);
    }
  }
}

async function readLimited(res: Dispatcher.ResponseData): Promise<Buffer> {
  const declared = Number(res.headers["content-length"]);
  if (Number.isFinite(declared) && declared > DESCRIPTION_MAX_BYTES) {
    res.body.destroy();
    throw new FetchFailed(`the answer is larger than ${DESCRIPTION_MAX_BYTES} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += (chunk as Buffer).length;
    if (size > DESCRIPTION_MAX_BYTES) {
      res.body.destroy();
      throw new FetchFailed(`the answer is larger than ${DESCRIPTION_MAX_BYTES} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function describeFailure(e: unknown): string {
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur && typeof cur === "object"; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string")
      return code === "ECONNREFUSED" ? "connection refused" : code === "ENOTFOUND" ? "host not found" : code;
    cur = (cur as { cause?: unknown }).cause;
  }
  const message = e instanceof Error ? e.message : String(e);
  return controlCharsAsSpaces(message).slice(0, 120);
}

/** A shared check and the logs of the nodes that use it (the first one warns). */
type SharedCheck = { check: ServiceDescriptionCheck; logs: DescriptionCheckLog[]; holds: (() => number)[] };

/**
 * One check per description (its URL) in this runtime, however many `door-account` nodes name it
 * (copies of a config node, the instances of a subflow, other logins on the same service): the
 * description is the service's, so it is read once and a difference is warned once, in the log of
 * the first node that still uses it. The last node to let go closes it. Keyed per clock as well,
 * so accounts on separate (test) clocks never share one.
 */
const sharedChecks = new WeakMap<Clock, Map<string, SharedCheck>>();

export function acquireDescriptionCheck(options: {
  url: URL;
  clock?: Clock;
  log: DescriptionCheckLog;
  /** The account's hold after a 429 (ms left): the check sends nothing before it is over. */
  heldForMs?: () => number;
}): {
  check: ServiceDescriptionCheck;
  release(): void;
} {
  const clock = options.clock ?? systemClock;
  let byUrl = sharedChecks.get(clock);
  if (!byUrl) sharedChecks.set(clock, (byUrl = new Map<string, SharedCheck>()));
  const key = options.url.href;
  let entry = byUrl.get(key);
  if (!entry) {
    const logs: DescriptionCheckLog[] = [];
    const first = (): DescriptionCheckLog | undefined => logs[0];
    const log: DescriptionCheckLog = {
      debug: (m) => first()?.debug(m),
      info: (m) => first()?.info(m),
      warn: (m) => first()?.warn(m),
    };
    const holds: (() => number)[] = [];
    const heldForMs = () => holds.reduce((most, h) => Math.max(most, h()), 0);
    entry = { check: new ServiceDescriptionCheck({ url: options.url, clock, log, heldForMs }), logs, holds };
    byUrl.set(key, entry);
  }
  const mine = entry;
  const own = options.log;
  mine.logs.push(own);
  const hold = options.heldForMs;
  if (hold) mine.holds.push(hold);
  let released = false;
  return {
    check: mine.check,
    release() {
      if (released) return;
      released = true;
      const i = mine.logs.indexOf(own);
      if (i >= 0) mine.logs.splice(i, 1);
      const h = hold ? mine.holds.indexOf(hold) : -1;
      if (h >= 0) mine.holds.splice(h, 1);
      if (mine.logs.length > 0) return;
      mine.check.close();
      if (byUrl.get(key) === mine) byUrl.delete(key);
    },
  };
}
