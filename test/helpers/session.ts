/** Builds sessions against a running simulator for the client and session tests. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { DoorApiClient, type ClientOptions, type Credentials } from "../../src/client/client.js";
import { Session, type SessionLog, type SessionTimings } from "../../src/session/session.js";
import { FileTokenStore, accountKey } from "../../src/session/token-store.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import type { Clock } from "../../src/util/clock.js";
import { fakeClock, type FakeClock } from "./fake-clock.js";

export const DEMO_PHONE: Credentials = { method: "phone", phoneNumber: "+15550000001", password: "demo-password" };

export function tempDir(prefix = "door-test-"): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** A log that keeps every line, so tests can search it for secrets. */
export class CapturingLog implements SessionLog {
  readonly lines: string[] = [];
  info(m: string) {
    this.lines.push(`info ${m}`);
  }
  warn(m: string) {
    this.lines.push(`warn ${m}`);
  }
  error(m: string) {
    this.lines.push(`error ${m}`);
  }
}

export interface Built {
  client: DoorApiClient;
  session: Session;
  store: FileTokenStore;
  log: CapturingLog;
  tokenFile: string;
}

export function buildSession(
  sim: RunningSimulator,
  opts: {
    credentials?: Credentials;
    tokenFile?: string;
    clock?: Clock;
    timings?: Partial<SessionTimings>;
    client?: Partial<ClientOptions>;
    secret?: string | null;
    random?: () => number;
  } = {},
): Built {
  const credentials = opts.credentials ?? DEMO_PHONE;
  const tokenFile = opts.tokenFile ?? path.join(tempDir(), "session.json");
  const log = new CapturingLog();
  const client = new DoorApiClient({
    baseUrl: sim.url,
    clock: opts.clock,
    random: opts.random ?? (() => 0),
    ...opts.client,
  });
  const identity = credentials.method === "email" ? credentials.email : credentials.phoneNumber;
  const store = new FileTokenStore({
    filePath: tokenFile,
    accountKey: accountKey(sim.url, credentials.method, identity),
    secret: opts.secret ?? null,
    onProblem: (m) => log.warn(m),
  });
  const session = new Session({
    client,
    credentials,
    store,
    clock: opts.clock,
    log,
    timings: opts.timings,
    random: opts.random ?? (() => 0),
  });
  return { client, session, store, log, tokenFile };
}

/** A session on a fake clock against a simulator of its own. */
export interface OnFakeClock {
  sim: RunningSimulator;
  clock: FakeClock;
  b: Built;
}

/**
 * A fake clock, a simulator on loopback (rate limit off; access tokens of `accessTtlSec`), and a
 * session built on the clock (renewals at least 1 s apart unless `timings` says otherwise),
 * started unless `start` is false; then the request log is emptied. What was set up before a
 * step that fails is closed again.
 */
export async function sessionOnFakeClock(
  opts: { accessTtlSec?: number; start?: boolean; timings?: Partial<SessionTimings> } = {},
): Promise<OnFakeClock> {
  const clock = fakeClock();
  let sim: RunningSimulator | undefined;
  let b: Built | undefined;
  try {
    sim = await startSimulator({ rateLimit: false, accessTtlSec: opts.accessTtlSec });
    b = buildSession(sim, { clock, timings: { minRenewalIntervalMs: 1000, ...opts.timings } });
    if (opts.start !== false) await b.session.start();
    sim.control.resetRequests();
    return { sim, clock, b };
  } catch (e) {
    await closeAll({ b, sim, clock });
    throw e;
  }
}

/** Closes a built session and its client, then the simulator, then puts the fake clock away; each may be missing. */
export async function closeAll(parts: {
  b?: Built | null;
  sim?: RunningSimulator | null;
  clock?: FakeClock | null;
}): Promise<void> {
  await parts.b?.session.close();
  await parts.b?.client.close();
  await parts.sim?.close();
  parts.clock?.uninstall();
}

export function ops(sim: RunningSimulator): string[] {
  return sim.control.requests().map((r) => `${r.operation} ${r.status}`);
}

/** Polls (in real time) until `cond` holds; fails after `ms`. */
export async function waitUntil(
  cond: () => boolean,
  ms = 5000,
  what: string | (() => string) = "condition",
): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${typeof what === "function" ? what() : what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Moves a fake clock in small steps until `cond` holds, letting real I/O run between steps. For a
 * timer that is set only once an answer has been read (a back-off before a retry): the simulator
 * logs a request before the client has read its answer, so one tick right after the request is
 * logged can pass a timer not yet set, and the retry never comes. Bounded by `maxMs` of fake time.
 */
export async function tickUntil(
  clock: { tickAsync(ms: number): Promise<void> },
  cond: () => boolean,
  maxMs: number,
  what: string | (() => string) = "condition",
  stepMs = 50,
): Promise<void> {
  let moved = 0;
  while (!cond()) {
    if (moved >= maxMs)
      throw new Error(`still waiting for ${typeof what === "function" ? what() : what} after ${moved} ms of fake time`);
    await clock.tickAsync(stepMs);
    moved += stepMs;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Every wait a text names ("12 s"). A rate-limited outcome names one wait, the one its
 * `retryAfter` gives (docs/session.md#rate-limits).
 */
export function secondsNamed(text: string): number[] {
  return [...text.matchAll(/(\d+) s\b/g)].map((m) => Number(m[1]));
}

/** Asserts a rate-limited payload's text names exactly its retryAfter, and returns that. */
export function assertRetryAfterInText(payload: { retryAfter?: unknown; message?: unknown }, where = ""): number {
  const retryAfter = payload.retryAfter;
  if (typeof retryAfter !== "number" || !Number.isInteger(retryAfter) || retryAfter < 0) {
    throw new Error(
      `${where}retryAfter is ${JSON.stringify(retryAfter)}, not whole seconds: ${JSON.stringify(payload)}`,
    );
  }
  const named = secondsNamed(typeof payload.message === "string" ? payload.message : "");
  if (named.length === 0 || named.some((n) => n !== retryAfter)) {
    throw new Error(
      `${where}the text names ${JSON.stringify(named)} s, retryAfter is ${retryAfter}: ${JSON.stringify(payload.message)}`,
    );
  }
  return retryAfter;
}
