/**
 * A booking calendar of 10,000 bookings applied in a real Node-RED runtime with the documented
 * flow after the door-pass node (docs/passes.md#what-passes-cost): a one-line Function node that
 * writes the guest's message. Measured: the longest the event loop was held from the `sync` to
 * the last of the 10,000 messages through the Function node (monitorEventLoopDelay; goal 50 ms
 * at a time), and the total time.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { startSimulator } from "../src/simulator/index.js";
import { loadRuntime, nodeOf, unloadRuntime, waitReady } from "./runtime.js";

const DAY = 24 * 3600_000;

function feed(n: number): string {
  const day = (d: number) => new Date(Date.now() + d * DAY).toISOString().slice(0, 10).replace(/-/g, "");
  const ev: string[] = [];
  for (let i = 0; i < n; i++)
    ev.push(
      [
        "BEGIN:VEVENT",
        `UID:flow-${i}@example.com`,
        `SUMMARY:Guest ${i}`,
        `DTSTART;VALUE=DATE:${day(1 + (i % 300))}`,
        `DTEND;VALUE=DATE:${day(3 + (i % 300))}`,
        "END:VEVENT",
      ].join("\r\n"),
    );
  return ["BEGIN:VCALENDAR", "VERSION:2.0", ...ev, "END:VCALENDAR", ""].join("\r\n");
}

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`bench: ${what} did not happen within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `simUrl`: the bench's simulator; absent, one is started in this process. */
export async function measureCalendarFlow(simUrl?: string): Promise<Record<string, number>> {
  const ownSim = simUrl === undefined ? await startSimulator({ port: 0 }) : null;
  const baseUrl = simUrl ?? ownSim!.url;
  let body = feed(0);
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/calendar" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const calendarUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/listing.ics`;
  const userDir = mkdtempSync(path.join(tmpdir(), "door-bench-calendar-"));
  const z = "tab1";
  try {
    await loadRuntime(
      [
        { id: z, type: "tab", label: "calendar" },
        { id: "acc1", type: "door-account", name: "demo", baseUrl, loginMethod: "phone", auditLog: "" },
        {
          id: "dp",
          type: "door-pass",
          z,
          account: "acc1",
          calendarUrl,
          doors: ["Front Door"],
          timeZone: "Europe/Oslo",
          wires: [["fn"]],
        },
        {
          id: "fn",
          type: "function",
          z,
          func: "msg.payload = `Hello ${msg.payload.guest}, your door code is ${msg.payload.code}`; return msg;",
          outputs: 1,
          wires: [],
        },
      ],
      userDir,
    );
    await waitReady();
    let through = 0;
    nodeOf("fn").on("input", () => through++);
    // The first read (an empty feed) is over before the measured one starts.
    await new Promise((r) => setTimeout(r, 1500));
    body = feed(10_000);
    const h = monitorEventLoopDelay({ resolution: 5 });
    h.enable();
    const t0 = process.hrtime.bigint();
    nodeOf("dp").receive({ payload: { action: "sync" } });
    await until("10,000 messages through the Function node", () => through >= 10_000, 180_000);
    const totalMs = Number(process.hrtime.bigint() - t0) / 1e6;
    h.disable();
    return {
      calendarFlowMessages: through,
      calendarFlowTotalMs: Math.round(totalMs),
      calendarFlowMaxLoopDelayMs: Math.round(h.max / 1e6),
    };
  } finally {
    await unloadRuntime();
    await new Promise<void>((r) => server.close(() => r()));
    await ownSim?.close();
    rmSync(userDir, { recursive: true, force: true });
  }
}
