/**
 * One fresh process for the load footprint (bench/footprint.ts): requires the given steps in
 * order and prints, for each, the time and RSS it added. Nothing but Node's own modules is
 * loaded before the first step, so the first step pays what loading a package costs in a
 * Node-RED process that has not loaded it yet.
 *
 *   node dist/bench/load-child.js '<json: [[specifier, ...], ...]>' [resolveFrom]
 *
 * Prints one JSON line: { steps: [{ ms, rssBytes, modules }], node }.
 */
import { createRequire } from "node:module";
import * as path from "node:path";

const steps = JSON.parse(process.argv[2] ?? "[]") as string[][];
const from = createRequire(path.join(path.resolve(process.argv[3] ?? process.cwd()), "noop.js"));
const out: { ms: number; rssBytes: number; modules: number }[] = [];
const cacheSize = () => Object.keys(require.cache).length;

// Settle the process first: the RSS of a fresh process still moves for a moment after start-up.
setTimeout(() => {
  for (const step of steps) {
    const m0 = cacheSize();
    const r0 = process.memoryUsage.rss();
    const t0 = process.hrtime.bigint();
    for (const spec of step) from(spec);
    const t1 = process.hrtime.bigint();
    const r1 = process.memoryUsage.rss();
    out.push({ ms: Number(t1 - t0) / 1e6, rssBytes: r1 - r0, modules: cacheSize() - m0 });
  }
  process.stdout.write(JSON.stringify({ steps: out, node: process.version }) + "\n");
}, 200);
