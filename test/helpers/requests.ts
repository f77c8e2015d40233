/**
 * Requests counted where they arrive: in the simulator's request log (not a test file itself).
 * Free of Node-RED, so that the session and client tests can use it as well as the runtime tests
 * (test/helpers/flow.ts hands these on).
 */
import type { RequestLogEntry, RunningSimulator } from "../../src/simulator/index.js";

/** Requests the simulator received for one operation (optionally one device). */
export function count(sim: RunningSimulator, operation: string, deviceId?: number): number {
  return sim.control.requests(deviceId === undefined ? { operation } : { operation, deviceId }).length;
}

/** The unlock commands (PUTs of a whole device or of one lock), in the order they arrived. */
export function unlockPuts(sim: RunningSimulator): RequestLogEntry[] {
  return sim.control.requests().filter((r) => r.operation === "unlockDevice" || r.operation === "unlockDeviceLock");
}

/** How many unlock commands (PUTs) the simulator received. */
export function unlockRequests(sim: RunningSimulator): number {
  return count(sim, "unlockDevice") + count(sim, "unlockDeviceLock");
}

/** How many logins the simulator received, by any of the three login operations. */
export function logins(sim: RunningSimulator): number {
  return count(sim, "loginByPhone") + count(sim, "loginByEmail") + count(sim, "login");
}
