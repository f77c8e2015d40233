/**
 * What the audit writer adds to an unlock's attempt record, against the same durable work by
 * hand, measured in one process and interleaved so that both see the same disk:
 *
 * - raw:    one attempt line (the same fields, no seq/prev) appended and fsynced on a plain handle;
 * - writer: AuditLog.attempt() (src/audit/audit-log.ts): the chain's seq/prev, the name check
 *           before the write (one lstat), the one after it (while the fsync runs), write + fsync.
 *
 * Each iteration is one unlock as a flow sends them back to back: the attempt (timed, awaited),
 * a turn of the event loop (the PUT), then the result record queued (not timed: it rides with
 * the next attempt's fsync, as in the node). Prints the p50 of each, and the writer's overhead
 * in microseconds and as a ratio to raw.
 *
 *   node dist/bench/audit-writer.js [--rounds N]      (not part of npm run bench)
 */
import { promises as fsp } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { AuditLog } from "../src/audit/audit-log.js";

const PER_BLOCK = 50;

function p50(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main(): Promise<void> {
  const i = process.argv.indexOf("--rounds");
  const rounds = i > 0 ? Math.max(2, Number(process.argv[i + 1]) || 80) : 80;
  const dir = await fsp.mkdtemp(path.join(tmpdir(), "door-audit-bench-"));
  const raw = await fsp.open(path.join(dir, "raw.jsonl"), "a", 0o600);
  const log = new AuditLog(path.join(dir, "audit.jsonl"));
  const rec = { actor: "node-red:3f2a9c1d7b6e5a40", deviceId: 101, lockId: null, door: "Main Street 1 / Front Door" };
  const t: Record<"raw" | "writer", number[]> = { raw: [], writer: [] };
  try {
    for (let round = 0; round < rounds; round++) {
      for (const v of round % 2 === 0 ? (["raw", "writer"] as const) : (["writer", "raw"] as const)) {
        for (let n = 0; n < PER_BLOCK; n++) {
          const msgid = `b${round}.${n}`;
          const t0 = process.hrtime.bigint();
          if (v === "raw") {
            await raw.write(
              JSON.stringify({ type: "unlock-attempt", ts: new Date().toISOString(), ...rec, msgid }) + "\n",
            );
            await raw.sync();
          } else {
            await log.attempt({ ...rec, msgid });
          }
          const us = Number(process.hrtime.bigint() - t0) / 1000;
          if (round > 0) t[v].push(us); // the first round warms up
          await new Promise((r) => setTimeout(r, 0));
          if (v === "writer")
            void log.result({ ...rec, msgid, outcome: "accepted", status: 200 }).catch(() => undefined);
        }
      }
    }
  } finally {
    await log.close();
    await raw.close();
    await fsp.rm(dir, { recursive: true, force: true });
  }
  const r = p50(t.raw);
  const w = p50(t.writer);
  process.stdout.write(
    `attempt record durable, p50 of ${t.raw.length} each (Node.js ${process.versions.node}):\n` +
      `  raw write + fsync      ${r.toFixed(1)} µs\n` +
      `  AuditLog.attempt()     ${w.toFixed(1)} µs\n` +
      `  writer overhead        ${(w - r).toFixed(1)} µs (${(w / r).toFixed(3)}×)\n`,
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`audit-writer bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
