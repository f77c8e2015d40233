/**
 * What guest passes cost (docs/passes.md#what-passes-cost), in-process, on the file book:
 *
 *   node dist/bench/passes.js
 *
 * - checkNs: a message's pass check with 10,000 live passes on the account (the code looked up,
 *   the door and window checked, a use reserved and given back): goal under 20 µs;
 * - weeklyCheckNs: the same among 10,000 live passes with weekly hours in five zones (each opens
 *   now: its hours read on its zone's wall clock too): goal under 20 µs (weeklyCheckCpuNs: the CPU
 *   time of it, which a busy machine does not inflate); weeklyRefusedNs: a code
 *   refused outside its hours, the next opening named in local time (what a refusal costs);
 * - turnoverCheckNs: the same for a cleaner's turnover pass among 10,000 live passes, 1,500 of them
 *   ten calendars' bookings (docs/passes.md#between-guests-the-turnover-window): goal under 20 µs
 *   (turnoverCheckCpuNs: its CPU time);
 * - issue1000Ms: 1,000 passes issued at once (a flow sending them together): goal under 1 s;
 *   issue1000SerialMs: one after another, each awaited (each one written to disk);
 * - feed: a feed of 10,000 bookings (about 5 MB with descriptions) read in the worker and applied:
 *   the longest the event loop was held meanwhile (goal: 50 ms at a time) and the total time;
 * - calendarFlow: 10,000 bookings through a door-pass node in a real runtime with a one-line
 *   Function node after it (passes-flow.ts): the longest hold of the event loop, goal 50 ms;
 * - platformFlow: 10,000 bookings in the platforms' shapes with 5,000 events of blocked time and
 *   placeholder names mixed in, through a door-pass node and example 11's flow after it, each
 *   output wired to a sink (passes-flow.ts): the longest hold, goal 50 ms; the passes made, the
 *   blocks skipped, checked.
 *
 * Every feed comes from one generator, booking-feed.ts.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { FilePassBook } from "../src/passes/file-pass-book.js";
import { passRefusal } from "../src/unlock/pass-check.js";
import { readFeedOffThread } from "../src/passes/calendar-poller.js";
import { DEFAULT_BLOCKED, matchKey } from "../src/passes/calendar-settings.js";
import { applyBookings } from "../src/passes/calendar-sync.js";
import { bookingFeed } from "./booking-feed.js";
import { measureCalendarFlow, measurePlatformFlow } from "./passes-flow.js";

const HOUR = 3600_000;

function book(): FilePassBook {
  const dir = mkdtempSync(path.join(tmpdir(), "door-pass-bench-"));
  return new FilePassBook(path.join(dir, "passes.json"), path.join(dir, "pass-key"), Date.now, () => undefined);
}

const ZONES = ["Europe/Oslo", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "UTC"];

/** The pass check among 10,000 live passes with weekly hours (docs/passes.md#what-passes-cost). */
async function measureWeekly(
  now: number,
): Promise<{ weeklyCheckNs: number; weeklyCheckCpuNs: number; weeklyRefusedNs: number }> {
  const b = book();
  const issue = (i: number, schedule: { days: number[]; from: string; to: string }[]) =>
    b.issue(
      {
        guest: `w${i}`,
        doors: [{ deviceId: 101 + (i % 5), door: null }],
        from: new Date(now - HOUR).toISOString(),
        until: new Date(now + 365 * 24 * HOUR).toISOString(),
        uses: null,
        ref: `w${i}`,
        schedule,
        timeZone: ZONES[i % ZONES.length],
      },
      8,
    );
  const allWeek = [{ days: [1, 2, 3, 4, 5, 6, 7], from: "00:00", to: "00:00" }];
  const codes = (await Promise.all(Array.from({ length: 10_000 }, (_, i) => issue(i, allWeek)))).map((x) => x.code);
  const check = (i: number) => {
    const p = b.find(codes[i % codes.length]);
    if (p === null || passRefusal(p, p.doors[0].deviceId, Date.now(), undefined, b) !== null)
      throw new Error("pass refused");
    const t = b.reserve(p);
    if (t === null) throw new Error("no use");
    t.release();
  };
  for (let i = 0; i < 20_000; i++) check(i);
  const N = 50_000;
  const cpu0 = process.cpuUsage();
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) check(i);
  const weeklyCheckNs = Number(process.hrtime.bigint() - t0) / N;
  // The CPU time it took too: on a machine shared with other work, wall time also counts the waits.
  const cpu = process.cpuUsage(cpu0);
  const weeklyCheckCpuNs = ((cpu.user + cpu.system) * 1000) / N;
  // Refused: a window that is not open now (one minute, half a day away in UTC).
  const away = new Date(now + 12 * HOUR);
  const hhmm = (d: Date) => d.toISOString().slice(11, 16);
  const closed = await issue(-1, [
    { days: [((away.getUTCDay() + 6) % 7) + 1], from: hhmm(away), to: hhmm(new Date(away.getTime() + 60_000)) },
  ]);
  const p = b.find(closed.code)!;
  const M = 2_000;
  t0 = process.hrtime.bigint();
  for (let i = 0; i < M; i++)
    if (passRefusal(p, 101, Date.now(), undefined, b) === null) throw new Error("opened outside its hours");
  const weeklyRefusedNs = Number(process.hrtime.bigint() - t0) / M;
  return {
    weeklyCheckNs: Math.round(weeklyCheckNs),
    weeklyCheckCpuNs: Math.round(weeklyCheckCpuNs),
    weeklyRefusedNs: Math.round(weeklyRefusedNs),
  };
}

/**
 * A turnover pass's check among 10,000 live passes (docs/passes.md#between-guests-the-turnover-window):
 * 10 listings' calendars of 150 bookings each (3-night stays a night apart, 150 days back and
 * ahead: what a busy listing's feed keeps), and 8,500 cleaners' passes, each bounded by one
 * calendar; now is between a check-out and the next check-in, so each check opens.
 */
export async function measureTurnover(now: number): Promise<{ turnoverCheckNs: number; turnoverCheckCpuNs: number }> {
  const b = book();
  const DAY = 24 * HOUR;
  const base = (i: number) => ({ doors: [{ deviceId: 101 + (i % 10), door: null }], uses: null });
  const stays: Promise<unknown>[] = [];
  for (let c = 0; c < 10; c++)
    for (let k = -75; k < 75; k++)
      stays.push(
        b.issue(
          {
            ...base(c),
            guest: `guest ${c}/${k}`,
            // 3 nights then one empty: now is 1 hour after a check-out, 23 hours before the next check-in.
            from: new Date(now - HOUR + k * 4 * DAY - 3 * DAY).toISOString(),
            until: new Date(now - HOUR + k * 4 * DAY).toISOString(),
            ref: `stay-${c}-${k}`,
            source: `cal-${c}`,
          },
          8,
        ),
      );
  await Promise.all(stays);
  const cleaners = await Promise.all(
    Array.from({ length: 8_500 }, (_, i) =>
      b.issue(
        {
          ...base(i),
          guest: `cleaner ${i}`,
          from: new Date(now - DAY).toISOString(),
          until: new Date(now + 365 * DAY).toISOString(),
          ref: `cleaner-${i}`,
          timeZone: ZONES[i % ZONES.length],
          turnover: `cal-${i % 10}`,
        },
        8,
      ),
    ),
  );
  const codes = cleaners.map((x) => x.code);
  const check = (i: number) => {
    const p = b.find(codes[i % codes.length]);
    if (p === null || passRefusal(p, p.doors[0].deviceId, Date.now(), undefined, b) !== null)
      throw new Error("turnover pass refused");
    const t = b.reserve(p);
    if (t === null) throw new Error("no use");
    t.release();
  };
  for (let i = 0; i < 20_000; i++) check(i);
  const N = 50_000;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) check(i);
  const ns = Number(process.hrtime.bigint() - t0) / N;
  const cpu = process.cpuUsage(cpu0);
  return { turnoverCheckNs: Math.round(ns), turnoverCheckCpuNs: Math.round(((cpu.user + cpu.system) * 1000) / N) };
}

export async function measurePasses(simUrl?: string): Promise<Record<string, number>> {
  const now = Date.now();
  const b = book();
  const issued = await Promise.all(
    Array.from({ length: 10_000 }, (_, i) =>
      b.issue(
        {
          guest: `g${i}`,
          doors: [{ deviceId: 101 + (i % 5), door: null }],
          from: new Date(now - HOUR).toISOString(),
          until: new Date(now + 24 * HOUR).toISOString(),
          uses: null,
          ref: `r${i}`,
        },
        8,
      ),
    ),
  );
  const codes = issued.map((x) => x.code);
  const check = (i: number) => {
    const p = b.find(codes[i % codes.length]);
    if (p === null || passRefusal(p, p.doors[0].deviceId, Date.now(), undefined, b) !== null)
      throw new Error("pass refused");
    const t = b.reserve(p);
    if (t === null) throw new Error("no use");
    t.release();
  };
  for (let i = 0; i < 20_000; i++) check(i);
  const N = 50_000;
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) check(i);
  const checkNs = Number(process.hrtime.bigint() - t0) / N;

  const weekly = await measureWeekly(now);
  const turnover = await measureTurnover(now);

  const b2 = book();
  const mk = (i: number) => ({
    guest: `h${i}`,
    doors: [{ deviceId: 101, door: null }],
    from: new Date(now).toISOString(),
    until: new Date(now + HOUR).toISOString(),
    uses: 1,
    ref: null,
  });
  t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: 1000 }, (_, i) => b2.issue(mk(i), 8)));
  const issue1000Ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const b3 = book();
  t0 = process.hrtime.bigint();
  for (let i = 0; i < 1000; i++) await b3.issue(mk(i), 8);
  const issue1000SerialMs = Number(process.hrtime.bigint() - t0) / 1e6;

  const text = bookingFeed(10_000, { filler: true }).text;
  const h = monitorEventLoopDelay({ resolution: 5 });
  const b4 = book();
  h.enable();
  t0 = process.hrtime.bigint();
  const read = await readFeedOffThread(
    text,
    {
      url: "http://127.0.0.1/x.ics",
      everyMinutes: 15,
      checkIn: "15:00",
      checkOut: "11:00",
      timeZone: "Europe/Oslo",
      bufferBeforeMin: 0,
      bufferAfterMin: 0,
      blocked: DEFAULT_BLOCKED.map(matchKey),
      placeholderGuest: "Guest",
    },
    Date.now(),
  );
  if (!read.ok) throw new Error(read.problem);
  await applyBookings(b4, "bench", read.bookings, [{ deviceId: 101, door: null }], 8, Date.now());
  const feedTotalMs = Number(process.hrtime.bigint() - t0) / 1e6;
  h.disable();
  const flow = await measureCalendarFlow(simUrl);
  const platforms = await measurePlatformFlow(simUrl);
  return {
    ...flow,
    ...platforms,
    checkNs: Math.round(checkNs),
    ...weekly,
    ...turnover,
    issue1000Ms: Math.round(issue1000Ms),
    issue1000SerialMs: Math.round(issue1000SerialMs),
    feedBytes: Buffer.byteLength(text),
    feedBookings: read.bookings.length,
    feedTotalMs: Math.round(feedTotalMs),
    feedMaxLoopDelayMs: Math.round(h.max / 1e6),
  };
}

if (require.main === module) {
  void measurePasses().then((r) => {
    console.log(`guest passes (Node.js ${process.versions.node}):`, r);
  });
}
