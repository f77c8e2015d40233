/**
 * Small statistics and the two ways every part of the bench drives an operation: one at a time
 * (latency samples) and a closed loop with k in flight (throughput, and CPU per operation).
 */

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Nearest-rank percentile of samples (ms). */
export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export const now = (): bigint => process.hrtime.bigint();
export const msSince = (t0: bigint): number => Number(now() - t0) / 1e6;
export const MiB = (b: number): number => b / (1024 * 1024);
export const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

/** An operation the bench times: resolves true on success. */
export type Op = () => Promise<boolean>;

/** One at a time: latency samples in ms. */
export async function sequential(n: number, op: Op): Promise<{ samples: number[]; ok: number }> {
  const samples: number[] = [];
  let ok = 0;
  for (let i = 0; i < n; i++) {
    const t0 = now();
    const good = await op();
    samples.push(msSince(t0));
    if (good) ok++;
  }
  return { samples, ok };
}

/** Closed loop with `k` operations in flight until `n` have completed: operations per second. */
export async function inFlight(k: number, n: number, op: Op): Promise<{ perSec: number; ok: number; cpuUs: number }> {
  let started = 0;
  let ok = 0;
  const cpu0 = process.cpuUsage();
  const t0 = now();
  await Promise.all(
    Array.from({ length: Math.min(k, n) }, async () => {
      while (started < n) {
        started++;
        if (await op()) ok++;
      }
    }),
  );
  const secs = msSince(t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  // CPU time of this process (user + system) per operation: our cost, less sensitive to the
  // other processes on the machine than the throughput is.
  return { perSec: n / secs, ok, cpuUs: (cpu.user + cpu.system) / n };
}

/**
 * Interleaved: one operation of each kind in turn (the order rotated every round), `warm + n`
 * rounds, the first `warm` not counted. The disk's and the host's drift falls on every kind
 * alike, and each operation finds the caches as the other kinds left them. Latency samples in
 * ms per kind. Throws when an operation fails.
 */
export async function interleaved<K extends string>(
  ops: Record<K, Op>,
  warm: number,
  n: number,
  what: string,
): Promise<Record<K, number[]>> {
  const kinds = Object.keys(ops) as K[];
  const samples = Object.fromEntries(kinds.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let i = 0; i < warm + n; i++) {
    for (let j = 0; j < kinds.length; j++) {
      const k = kinds[(i + j) % kinds.length];
      const t0 = now();
      if (!(await ops[k]())) throw new Error(`${what} ${k} (interleaved): failed`);
      if (i >= warm) samples[k].push(msSince(t0));
    }
  }
  return samples;
}
