/**
 * The simulator in its own process (the shipped CLI, bin/door-access-sim.js), so its CPU and
 * memory (request log, unlock history) are not ours; and its request log, read over its /_sim
 * control surface, where every count the bench reports comes from.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as path from "node:path";
import { REPO_ROOT } from "./args.js";

export interface SimProc {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the simulator on an ephemeral loopback port, rate limit off, no latency faults. */
export async function startSimProcess(): Promise<SimProc> {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, "bin", "door-access-sim.js"), "--port", "0"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`door-access-sim did not start:\n${out}`)), 30_000);
    const onData = (c: Buffer) => {
      out += c.toString("utf8");
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`door-access-sim exited (${code}):\n${out}`));
    });
  });
  child.stdout.removeAllListeners("data");
  child.stdout.resume();
  child.stderr.resume();
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  process.once("exit", () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  await simControl(url, "POST", "/_sim/rate-limit", false);
  return {
    url,
    child,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** A call to the simulator's control API; its JSON answer (null for 204), as the caller types it. */
export async function simControl<T = unknown>(url: string, method: string, p: string, body?: unknown): Promise<T> {
  const res = await fetch(url + p, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return (res.status === 204 ? null : await res.json()) as T;
}

export interface LogEntry {
  operation: string;
  status: number;
  accountId: string | null;
}

export async function simRequests(url: string, accountId?: string): Promise<LogEntry[]> {
  return simControl<LogEntry[]>(
    url,
    "GET",
    `/_sim/requests${accountId ? `?accountId=${encodeURIComponent(accountId)}` : ""}`,
  );
}
export const resetLog = (url: string) => simControl(url, "DELETE", "/_sim/requests");
/** Calls to the service's API (not the docs, not unknown paths). */
export const apiCalls = (log: LogEntry[]) => log.filter((e) => e.operation !== "docs" && e.operation !== "unknown");
export const isLogin = (e: LogEntry) =>
  e.operation === "loginByPhone" || e.operation === "loginByEmail" || e.operation === "login";
