/**
 * A booking calendar of 10,000 bookings applied in a real Node-RED runtime with a flow after the
 * door-pass node (docs/passes.md#what-passes-cost). Measured from the `sync` to the last guest's
 * message at the end of the flow: the longest the event loop was held (monitorEventLoopDelay;
 * goal 50 ms at a time), and the total time.
 *
 * - calendarFlow: 10,000 plain bookings, a one-line Function node after the node writing each
 *   guest's message.
 * - platformFlow: 10,000 bookings in the platforms' shapes with 5,000 events of blocked time and
 *   6,000 placeholder names mixed in (booking-feed.ts), through example 11's flow after the node
 *   (the switch on what changed, the function writing the guest's message, the change taking the
 *   code out of the answer), each output wired to a sink; then the same feed read again
 *   (platformFlowReread...: no ETag, so read and applied in full, changing nothing). Checked, or the bench fails: every
 *   booking got one pass and one guest message, no block got a pass, no guest is "Reserved"; and
 *   the events the reader skipped as blocked (ical.js read again in this process after the
 *   timing) are the blocks the feed has.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { readFeed } from "../src/passes/calendar.js";
import { startSimulator } from "../src/simulator/index.js";
import { REPO_ROOT } from "./args.js";
import { type BenchFeed, bookingFeed } from "./booking-feed.js";
import { accountOf, loadRuntime, nodeOf, unloadRuntime, waitReady } from "./runtime.js";

const BOOKINGS = 10_000;
const EXAMPLE_11 = path.join(REPO_ROOT, "examples", "11 Passes from a booking calendar.json");
/** The door-pass node's name: a guest the feed calls "Reserved" is "Apartment A guest" and the phone's last 4 digits. */
const LISTING = "Apartment A";

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`bench: ${what} did not happen within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The flow after the door-pass node: its nodes, the node's wires, and what its sinks count. */
interface After {
  nodes: Record<string, unknown>[];
  wires: string[][];
  /** Starts counting, once the flow is deployed. */
  listen(): void;
  /** Messages that reached the end of the flow since the last reset: guests' messages and `synced` answers. */
  counts(): { guests: number; synced: number };
  reset(): void;
}

/**
 * The one-line Function node of the first figure. Every message through it is counted: a read's
 * messages, then its `synced` answer (the last one the node sends).
 */
function oneLine(z: string): After {
  let through = 0;
  return {
    nodes: [
      {
        id: "fn",
        type: "function",
        z,
        func: "msg.payload = `Hello ${msg.payload.guest}, your door code is ${msg.payload.code}`; return msg;",
        outputs: 1,
        wires: [],
      },
    ],
    wires: [["fn"]],
    listen: () => nodeOf("fn").on("input", () => through++),
    counts: () => ({ guests: Math.max(0, through - 1), synced: Math.min(through, 1) }),
    reset: () => (through = 0),
  };
}

/**
 * Example 11's flow after its door-pass node, as shipped: its switch, function and change nodes;
 * each Debug node becomes a sink of the same id and the function's free output goes to one more
 * sink (where a host wires the e-mail or SMS node).
 */
function example11(z: string): After & { guests: string[] } {
  const flow = JSON.parse(readFileSync(EXAMPLE_11, "utf8")) as Record<string, unknown>[];
  const pass = flow.find((n) => n.type === "door-pass")!;
  const kept = new Set<string>();
  const walk = (ids: string[]) => {
    for (const id of ids) {
      if (kept.has(id)) continue;
      kept.add(id);
      walk(((flow.find((n) => n.id === id)?.wires as string[][] | undefined) ?? []).flat());
    }
  };
  walk((pass.wires as string[][]).flat());
  const guests: string[] = [];
  let synced = 0;
  const nodes = flow
    .filter((n) => kept.has(n.id as string))
    .map((n): Record<string, unknown> => {
      if (n.type === "debug") return { id: n.id, type: "helper", z };
      if (n.type !== "function") return { ...n, z };
      return { ...n, z, wires: [["sink-guest"]] };
    });
  const switchNode = nodes.find((n) => n.type === "switch")!;
  const syncedSink = (switchNode.wires as string[][])[3][0];
  return {
    nodes: [...nodes, { id: "sink-guest", type: "helper", z }],
    wires: pass.wires as string[][],
    guests,
    listen: () => {
      nodeOf("sink-guest").on("input", (m) => guests.push(String(m.guest)));
      nodeOf(syncedSink).on("input", () => synced++);
    },
    counts: () => ({ guests: guests.length, synced }),
    reset: () => {
      guests.length = 0;
      synced = 0;
    },
  };
}

/**
 * CPU time of Node-RED's thread so far (ms): on Linux the main thread's own (its schedstat, in
 * ns); elsewhere the whole process's (worker and garbage collector threads too: an upper bound).
 */
function mainThreadCpuMs(): number {
  try {
    return Number(readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
  } catch {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
}

/**
 * The longest hold of the event loop from now to `stop()` (ms), and the time it took. Besides,
 * the most CPU time Node-RED's thread used between two ticks of a 5 ms timer (maxHoldCpuMs):
 * what the longest hold cost in our own work, which a machine busy with other work does not
 * inflate (there, a hold also counts the time the system gave the core to other processes).
 */
function holdWatch(): { stop(): Timed } {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  const t0 = process.hrtime.bigint();
  let cpu = mainThreadCpuMs();
  let maxHoldCpuMs = 0;
  const tick = setInterval(() => {
    const at = mainThreadCpuMs();
    maxHoldCpuMs = Math.max(maxHoldCpuMs, at - cpu);
    cpu = at;
  }, 5);
  return {
    stop: () => {
      const totalMs = Number(process.hrtime.bigint() - t0) / 1e6;
      h.disable();
      clearInterval(tick);
      return { totalMs, maxLoopDelayMs: h.max / 1e6, maxHoldCpuMs };
    },
  };
}

type Timed = { totalMs: number; maxLoopDelayMs: number; maxHoldCpuMs: number };

/**
 * Deploys door-pass and the flow after it, reads an empty feed, then times the read of `feed`;
 * with `reread`, then times a second read of the same feed (no ETag: read and applied in full
 * again, as every poll of a feed that gives none), which changes nothing.
 */
async function timeRead(
  simUrl: string | undefined,
  feed: BenchFeed,
  after: (z: string) => After,
  check: (a: After) => Promise<Record<string, number>>,
  reread = false,
): Promise<Timed & { checked: Record<string, number>; again: Timed | null }> {
  const ownSim = simUrl === undefined ? await startSimulator({ port: 0 }) : null;
  const baseUrl = simUrl ?? ownSim!.url;
  let body = bookingFeed(0).text;
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/calendar" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const calendarUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/listing.ics`;
  const userDir = mkdtempSync(path.join(tmpdir(), "door-bench-calendar-"));
  const z = "tab1";
  const a = after(z);
  try {
    await loadRuntime(
      [
        { id: z, type: "tab", label: "calendar" },
        { id: "acc1", type: "door-account", name: "demo", baseUrl, loginMethod: "phone", auditLog: "" },
        {
          id: "dp",
          type: "door-pass",
          z,
          name: LISTING,
          account: "acc1",
          calendarUrl,
          doors: ["Front Door"],
          timeZone: "Europe/Oslo",
          wires: a.wires,
        },
        ...a.nodes,
      ],
      userDir,
    );
    await waitReady();
    // The first read (an empty feed) is over before the measured one starts: a sync waits for it.
    a.listen();
    nodeOf("dp").receive({ payload: { action: "sync" } });
    await until("the first read's synced answer", () => a.counts().synced >= 1, 30_000);
    a.reset();
    body = feed.text;
    let watch = holdWatch();
    nodeOf("dp").receive({ payload: { action: "sync" } });
    await until(
      `${feed.bookings} guests' messages at the end of the flow`,
      () => a.counts().guests >= feed.bookings && a.counts().synced >= 1,
      180_000,
    );
    const first = watch.stop();
    const checked = await check(a);
    if (!reread) return { ...first, checked, again: null };
    a.reset();
    watch = holdWatch();
    nodeOf("dp").receive({ payload: { action: "sync" } });
    await until("the second read's synced answer", () => a.counts().synced >= 1, 180_000);
    const again = watch.stop();
    if (a.counts().guests !== 0) throw new Error(`bench: the same feed read again sent ${a.counts().guests} codes`);
    return { ...first, checked, again };
  } finally {
    await unloadRuntime();
    await new Promise<void>((r) => server.close(() => r()));
    await ownSim?.close();
    rmSync(userDir, { recursive: true, force: true });
  }
}

/** 10,000 plain bookings, a one-line Function node after the node. `simUrl` absent: a simulator of its own. */
export async function measureCalendarFlow(simUrl?: string): Promise<Record<string, number>> {
  const r = await timeRead(simUrl, bookingFeed(BOOKINGS, { uid: "flow" }), oneLine, (a) =>
    Promise.resolve({ messages: a.counts().guests + a.counts().synced }),
  );
  return {
    calendarFlowMessages: r.checked.messages,
    calendarFlowTotalMs: Math.round(r.totalMs),
    calendarFlowMaxLoopDelayMs: Math.round(r.maxLoopDelayMs),
  };
}

/** 10,000 bookings with blocks and placeholders mixed in, through example 11's flow (above). */
export async function measurePlatformFlow(simUrl?: string): Promise<Record<string, number>> {
  const feed = bookingFeed(BOOKINGS, { platforms: true });
  let flow: ReturnType<typeof example11> | null = null;
  const r = await timeRead(
    simUrl,
    feed,
    (z) => (flow = example11(z)),
    async () => {
      const passes = await accountOf().core.passes.fromSource("dp");
      const guests = flow!.guests;
      const named = guests.filter((g) => /^Apartment A guest( \d{4})?$/.test(g)).length;
      const fail = (what: string) => {
        throw new Error(`bench: platformFlow: ${what}`);
      };
      if (passes.length !== feed.bookings) fail(`${passes.length} passes for ${feed.bookings} bookings`);
      if (passes.some((p) => p.ref !== null && feed.blockUids.has(p.ref))) fail("an event of blocked time got a pass");
      if (guests.length !== feed.bookings) fail(`${guests.length} guests' messages for ${feed.bookings} bookings`);
      if (guests.some((g) => /^(reserved|reservation|booked)$/i.test(g))) fail("a guest is called by a placeholder");
      if (named !== feed.placeholders) fail(`${named} placeholders named for the host, of ${feed.placeholders}`);
      return { passes: passes.length, guests: guests.length, named };
    },
    true,
  );
  // What the reader skipped as blocked time: the same text read again here, after the timing.
  const read = readFeed(
    feed.text,
    {
      url: "",
      everyMinutes: 15,
      checkIn: "15:00",
      checkOut: "11:00",
      timeZone: "Europe/Oslo",
      bufferBeforeMin: 0,
      bufferAfterMin: 0,
    },
    Date.now(),
  );
  if (!read.ok || read.blocked !== feed.blocks)
    throw new Error(`bench: platformFlow: the reader skipped ${read.ok ? read.blocked : "?"} of ${feed.blocks} blocks`);
  return {
    platformFlowEvents: feed.bookings + feed.blocks,
    platformFlowBytes: Buffer.byteLength(feed.text),
    platformFlowPasses: r.checked.passes,
    platformFlowGuestMessages: r.checked.guests,
    platformFlowPlaceholdersNamed: r.checked.named,
    platformFlowBlockedSkipped: read.blocked,
    platformFlowTotalMs: Math.round(r.totalMs),
    platformFlowMaxLoopDelayMs: Math.round(r.maxLoopDelayMs),
    platformFlowMaxHoldCpuMs: Math.round(r.maxHoldCpuMs),
    platformFlowRereadTotalMs: Math.round(r.again!.totalMs),
    platformFlowRereadMaxLoopDelayMs: Math.round(r.again!.maxLoopDelayMs),
    platformFlowRereadMaxHoldCpuMs: Math.round(r.again!.maxHoldCpuMs),
  };
}
