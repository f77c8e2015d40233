/**
 * door-access-sim: a local, stateful implementation of the Door Unlock Access Service
 * specification, used as the ground truth of the tests and as the demo backend.
 *
 *   const sim = await startSimulator();            // 127.0.0.1, ephemeral port, demo seed
 *   // sim.url -> "http://127.0.0.1:40123"; sim.control.inject({kind: "503", endpoint: "unlockDevice"})
 *   await sim.close();
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { isLoopbackHost } from "../util/loopback.js";
import { FaultStore } from "./faults.js";
import { Closed, createHandler, type Runtime } from "./routes.js";
import { demoSeed, validateSeed } from "./seed.js";
import { SimState } from "./state.js";
import type { RunningSimulator, SimulatorControl, SimulatorOptions } from "./types.js";

export * from "./types.js";
export { DEMO_ACCOUNT, DEMO_DOORS, OTHER_ACCOUNT, demoSeed, loadSeedFile, validateSeed } from "./seed.js";
export { toYaml, buildOpenApi } from "./openapi.js";
export { issuedTokens } from "./issued.js";

export const DEFAULT_ACCESS_TTL_SEC = 48 * 3600;
export const DEFAULT_REFRESH_TTL_SEC = 30 * 24 * 3600;
export const DEFAULT_RATE_LIMIT = { capacity: 1000, refillPerSec: 500 };

export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const host = options.host ?? "127.0.0.1";
  // The one loopback rule (src/util/loopback.ts), on the listen address as given.
  if (!isLoopbackHost(host) && options.allowRemoteControl !== true) {
    throw new Error(
      `door-access-sim refuses to listen on non-loopback host ${JSON.stringify(host)}: its /_sim control surface ` +
        "(faults, token expiry, request log) would be reachable from the network. Use 127.0.0.1, or pass " +
        "allowRemoteControl: true (--allow-remote-control) if you really mean it.",
    );
  }
  const accessTtl = options.accessTtlSec ?? DEFAULT_ACCESS_TTL_SEC;
  const refreshTtl = options.refreshTtlSec ?? DEFAULT_REFRESH_TTL_SEC;
  for (const [name, v] of [
    ["accessTtlSec", accessTtl],
    ["refreshTtlSec", refreshTtl],
  ] as const) {
    if (!Number.isInteger(v) || v < 1)
      throw new Error(`${name} must be a positive integer number of seconds, got ${v}`);
  }
  const seed = validateSeed(options.seed ?? demoSeed(), options.seed ? "seed" : "built-in demo seed");
  const now = options.now ?? Date.now;
  const state = new SimState(seed, now, accessTtl, refreshTtl, options.rateLimit ?? DEFAULT_RATE_LIMIT);
  const faults = new FaultStore();
  const secret = new TextEncoder().encode(options.jwtSecret ?? randomBytes(32).toString("hex"));

  let closed = false;
  let url = "";
  const timers = new Map<NodeJS.Timeout, (err: Error) => void>();
  const runtime: Runtime = {
    state,
    faults,
    secret,
    subClaim: options.subClaim !== false,
    baseUrl: () => url,
    isClosed: () => closed,
    descriptionOverride: null,
    sleep: (ms) =>
      new Promise<void>((resolve, reject) => {
        if (closed) {
          reject(new Closed("simulator closed"));
          return;
        }
        const timer = setTimeout(() => {
          timers.delete(timer);
          resolve();
        }, ms);
        timers.set(timer, reject);
      }),
  };

  const control: SimulatorControl = {
    inject: (fault) => faults.inject(fault),
    clearFaults: () => faults.clear(),
    setOnline: (deviceId, online) => {
      state.requireDoor(deviceId).online = online;
    },
    editDevice: (deviceId, change) => state.editDoor(deviceId, change),
    expireAccessToken: (accountId) => state.expireAccess(accountId),
    revokeAccessToken: (accountId) => state.revokeAccess(accountId),
    expireRefreshToken: (accountId) => state.expireRefresh(accountId),
    supersede: (accountId) => state.supersede(accountId),
    inFlight: () => [...state.open].map((e) => ({ ...e })),
    requests: (filter) =>
      state.log
        .filter(
          (e) =>
            (filter?.operation === undefined || e.operation === filter.operation) &&
            (filter?.accountId === undefined || e.accountId === filter.accountId) &&
            (filter?.deviceId === undefined || e.deviceId === filter.deviceId),
        )
        .map((e) => ({ ...e })),
    resetRequests: () => {
      state.log.length = 0;
    },
    device: (deviceId) => state.deviceState(deviceId),
    counts: () => ({ ...state.counters }),
    hasSession: (accountId) => state.hasSession(accountId),
    setRateLimit: (limit) => state.setRateLimit(limit),
    serveDescription: (change) => {
      runtime.descriptionOverride = change === null ? null : structuredClone(change);
    },
  };

  const handler = createHandler(runtime, control);
  const server: Server = createServer((req, res) => {
    handler(req, res).catch(() => res.socket?.destroy());
  });
  server.keepAliveTimeout = 5000;
  const sockets = new Set<Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("simulator: unexpected listen address");
  const urlHost = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  url = `http://${urlHost}:${address.port}`;

  let closing: Promise<void> | null = null;
  return {
    url,
    control,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        closed = true;
        for (const [timer, reject] of timers) {
          clearTimeout(timer);
          reject(new Closed("simulator closed"));
        }
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}
