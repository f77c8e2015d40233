/**
 * The report: bench/results.json (every figure, and the load breakdown) and the table printed
 * on stdout. A new figure is one row in `rows` below (and its keys in test/demo/bench.test.ts).
 */
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { type Figures, versionOf } from "./args.js";
import { type Footprint, HA_PACKAGE } from "./footprint.js";

/** Writes the results file and prints the tables. */
export async function writeReport(out: string, results: Figures, footprint: Footprint | null): Promise<void> {
  await fsp.mkdir(path.dirname(out), { recursive: true });
  const written = footprint ? { ...results, loadBreakdown: footprint.breakdown } : results;
  await fsp.writeFile(out, JSON.stringify(written, null, 2) + "\n");
  process.stdout.write(
    table(results) +
      (footprint ? "\n\n" + footprintTable(footprint) : "") +
      `\nresults written to ${path.relative(process.cwd(), out) || out}\n`,
  );
}

/** Our load cost per module, and Home Assistant's total beside ours (or why it is missing). */
function footprintTable(f: Footprint): string {
  const r = f.figures;
  const rows: [string, string, string][] = [
    ["Our four node files (the package as Node-RED loads it)", `${r.loadMs} ms`, `${r.loadRssMiB} MiB`],
    ...Object.entries(f.breakdown).map(([name, c]): [string, string, string] => [
      `  ${name}: ${c.when}`,
      `${c.ms} ms`,
      `${c.rssMiB} MiB`,
    ]),
  ];
  if (f.haNote === null) {
    rows.push([`${HA_PACKAGE} ${r.haVersion} (its node-red.nodes)`, `${r.haLoadMs} ms`, `${r.haLoadRssMiB} MiB`]);
    rows.push(["Ours / Home Assistant's (goal: RSS ≤ 0.5, time ≤ 150 ms)", `${r.loadMsRatio}×`, `${r.loadRssRatio}×`]);
  }
  const w0 = Math.max(...rows.map((x) => x[0].length));
  const w1 = Math.max(...rows.map((x) => x[1].length));
  const w2 = Math.max(...rows.map((x) => x[2].length));
  const head = `| ${"Load footprint (fresh process, median of 5)".padEnd(w0)} | ${"require".padEnd(w1)} | ${"RSS".padEnd(w2)} |`;
  const sep = `|${"-".repeat(w0 + 2)}|${"-".repeat(w1 + 2)}|${"-".repeat(w2 + 2)}|`;
  const body = rows.map(([a, b, c]) => `| ${a.padEnd(w0)} | ${b.padEnd(w1)} | ${c.padEnd(w2)} |`);
  return [head, sep, ...body, ...(f.haNote ? ["", `Note: ${f.haNote}.`] : [])].join("\n");
}

/** The figures table: one row per figure (label, measured, goal), in the order printed. */
function table(r: Figures): string {
  const n = (k: string, d = 2) => (typeof r[k] === "number" ? r[k].toFixed(d) : String(r[k]));
  const rows: [string, string, string][] = [
    [
      "Interleaved (one of each in turn): unlock p50 (door-unlock, Node-RED 4) / floor p50 / Node-RED floor p50",
      `${n("unlockP50MsInterleaved", 3)} / ${n("floorP50MsInterleaved", 3)} / ${n("nodeRedFloorP50Ms", 3)} ms`,
      "",
    ],
    ["unlockP50Ratio (node p50 / floor p50, interleaved)", `${n("unlockP50Ratio")}×`, "≤ 1.15×"],
    ["unlockP99Ratio (node p99 / floor p99, interleaved)", `${n("unlockP99Ratio")}×`, ""],
    ["Guest pass check with 10,000 live passes (checkNs)", `${n("checkNs", 0)} ns`, "< 20,000 ns"],
    [
      "Weekly-hours pass check with 10,000 live passes (weeklyCheckNs; CPU time) / a refusal naming the next window",
      `${n("weeklyCheckNs", 0)} (${n("weeklyCheckCpuNs", 0)} CPU) / ${n("weeklyRefusedNs", 0)} ns`,
      "< 20,000 ns",
    ],
    [
      "1,000 passes issued at once / one after another",
      `${n("issue1000Ms", 0)} / ${n("issue1000SerialMs", 0)} ms`,
      "< 1,000 ms at once",
    ],
    [
      "Booking calendar of 10,000 bookings: bytes, total ms, longest event-loop hold",
      `${n("feedBytes", 0)} B, ${n("feedTotalMs", 0)} ms, ${n("feedMaxLoopDelayMs", 0)} ms`,
      "hold ≤ 50 ms",
    ],
    [
      "10,000 bookings through door-pass and a one-line Function node in a runtime: total ms, longest event-loop hold",
      `${n("calendarFlowTotalMs", 0)} ms, ${n("calendarFlowMaxLoopDelayMs", 0)} ms`,
      "hold ≤ 50 ms",
    ],
    [
      "10,000 bookings with blocks and placeholders mixed in (events, bytes), through door-pass and example 11's flow: total ms, longest event-loop hold (most CPU time in one)",
      `${n("platformFlowEvents", 0)} events, ${n("platformFlowBytes", 0)} B: ${n("platformFlowTotalMs", 0)} ms, ${n("platformFlowMaxLoopDelayMs", 0)} ms (${n("platformFlowMaxHoldCpuMs", 0)} ms CPU)`,
      "hold ≤ 50 ms",
    ],
    [
      "  of which bookings that became passes / guests' messages / guests named for a placeholder / events skipped as blocked",
      `${n("platformFlowPasses", 0)} / ${n("platformFlowGuestMessages", 0)} / ${n("platformFlowPlaceholdersNamed", 0)} / ${n("platformFlowBlockedSkipped", 0)}`,
      "10,000 / 10,000 / 6,000 / 5,000",
    ],
    [
      "  the same feed read again (no ETag: read and applied in full, nothing changes): total ms, longest event-loop hold (CPU)",
      `${n("platformFlowRereadTotalMs", 0)} ms, ${n("platformFlowRereadMaxLoopDelayMs", 0)} ms (${n("platformFlowRereadMaxHoldCpuMs", 0)} ms CPU)`,
      "hold ≤ 50 ms",
    ],
    [
      "Node-RED's own share: Node-RED floor p50 / floor p50 (a node doing the floor's work)",
      `${n("nodeRedFloorRatio")}×`,
      "",
    ],
    [
      "In blocks (1,000 of each in turn): unlock p50 / p99, message in → accepted out",
      `${n("unlockP50Ms", 3)} / ${n("unlockP99Ms", 3)} ms`,
      "",
    ],
    [
      "In blocks: floor (audit line + fsync, then the same PUT, raw undici) p50 / p99",
      `${n("floorP50Ms", 3)} / ${n("floorP99Ms", 3)} ms`,
      "",
    ],
    ["In blocks: node / floor, p50 / p99", `${n("unlockP50RatioBlock")}× / ${n("unlockP99RatioBlock")}×`, ""],
    ["Raw PUT without audit p50 / p99", `${n("rawPutP50Ms", 3)} / ${n("rawPutP99Ms", 3)} ms`, ""],
    [
      "Same durable work by hand (attempt + fsync, PUT, result + fsync) p50; node / it",
      `${n("bothRecordsP50Ms", 3)} ms; ${n("unlockP50RatioBothRecords")}×`,
      "",
    ],
    [
      "Yardstick: the node's bytes per unlock (result + attempt lines, seq/prev) in one write+fsync, then the PUT, p50; node / it",
      `${n("sameBytesP50Ms", 3)} ms; ${n("unlockP50RatioSameBytes")}×`,
      "",
    ],
    [
      "Audit bytes per unlock: node / yardstick / floor",
      `${n("nodeAuditBytesPerUnlock", 0)} / ${n("sameBytesPerUnlock", 0)} / ${n("floorBytesPerUnlock", 0)}`,
      "",
    ],
    [
      "A door-unlock node with all four access rules: extra per message, p50 / trimmed mean (interleaved with one without)",
      `${n("rulesExtraP50Us", 1)} / ${n("rulesExtraTrimmedUs", 1)} µs`,
      "< 20 µs",
    ],
    [
      "Ratio vs raw PUT without audit, p50 / p99",
      `${n("unlockP50RatioNoAudit")}× / ${n("unlockP99RatioNoAudit")}×`,
      "",
    ],
    [
      "Unlock throughput, 50 in flight: node / floor / raw PUT",
      `${n("unlockThroughput50", 0)} / ${n("floorThroughput50", 0)} / ${n("rawPutThroughput50", 0)} /s`,
      "",
    ],
    [
      "CPU per unlock in our process, 50 in flight: node / floor / raw PUT",
      `${n("unlockCpuUs", 0)} / ${n("floorCpuUs", 0)} / ${n("rawPutCpuUs", 0)} µs`,
      "",
    ],
    [
      "Audit: fsyncs per record (group commit) / records per unlock",
      `${n("fsyncsPerRecord", 3)} / ${n("auditRecordsPerUnlock", 2)}`,
      "< 1",
    ],
    [
      "Status throughput, 200 in flight: door-status / raw GET",
      `${n("statusThroughput200", 0)} / ${n("rawStatusThroughput200", 0)} /s`,
      "",
    ],
    ["statusThroughputRatio", `${n("statusThroughputRatio")}×`, "≥ 0.85×"],
    [
      "CPU per status read in our process: door-status / raw GET",
      `${n("statusCpuUs", 0)} / ${n("rawStatusCpuUs", 0)} µs`,
      "",
    ],
    [
      "Hand-built flow (http request → change → http request) p50 / p99",
      `${n("handBuiltP50Ms", 3)} / ${n("handBuiltP99Ms", 3)} ms`,
      "",
    ],
    ["Hand-built p50 / door-unlock p50", `${n("handBuiltP50VsNode")}×`, ""],
    [
      "Hand-built, 50 in flight: throughput / share accepted",
      `${n("handBuiltThroughput50", 0)} /s / ${(Number(r.handBuiltAcceptedShare50) * 100).toFixed(1)} %`,
      "",
    ],
    ["handBuiltCallsPerUnlock (login + unlock per message)", n("handBuiltCallsPerUnlock"), "(2 expected)"],
    ["callsPerUnlock (steady state, door-unlock)", n("callsPerUnlock"), "1.00"],
    [`loginsPer10k (logins while ${r.loginsMessages} messages are sent)`, String(r.loginsPer10k), "1"],
    [
      `refreshesUnder1000 (${r.refreshMessages} messages meet an expired token)`,
      `${r.refreshesUnder1000} (accepted ${r.refreshAccepted})`,
      "1",
    ],
    [
      `rssGrowthMiB (${r.memoryBaseMessages} → ${r.memoryMessages} unlocks, audit on)`,
      `${n("rssGrowthMiB")} MiB (heap ${n("heapGrowthMiB")} MiB)`,
      "< 10 MiB",
    ],
    [
      "deviceIndex10kMs (validate + index 10,000 doors)",
      `${n("deviceIndex10kMs")} ms (${n("deviceValidate10kMs")} + ${n("deviceIndexOnly10kMs")})`,
      "",
    ],
    ['nameLookupUs (one "Location / Name" lookup)', `${n("nameLookupUs")} µs`, ""],
  ];
  const w0 = Math.max(...rows.map((x) => x[0].length));
  const w1 = Math.max(...rows.map((x) => x[1].length));
  const w2 = Math.max(4, ...rows.map((x) => x[2].length));
  const head = `| ${"Figure".padEnd(w0)} | ${"Measured".padEnd(w1)} | ${"Goal".padEnd(w2)} |`;
  const sep = `|${"-".repeat(w0 + 2)}|${"-".repeat(w1 + 2)}|${"-".repeat(w2 + 2)}|`;
  const body = rows.map(([a, b, c]) => `| ${a.padEnd(w0)} | ${b.padEnd(w1)} | ${c.padEnd(w2)} |`);
  const foot = `Node.js ${r.node}, Node-RED ${r.nodeRed}, undici ${versionOf("undici")}; median of ${r.reps} repetitions; ${r.at}`;
  return [head, sep, ...body, "", foot].join("\n");
}
