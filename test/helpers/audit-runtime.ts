/**
 * The set-up of a describe whose tests run door-unlock in a real Node-RED runtime against the
 * simulator, and may force audit write faults by patching FileHandle.prototype
 * (test/helpers/audit-faults.ts).
 */
import { type RunningSimulator, type SimulatorOptions } from "../../src/simulator/index.js";
import { fileHandlePrototype, type P } from "./audit-faults.js";
import { startSim, teardown } from "./flow.js";

/**
 * Mocha hooks of the describe it is called in: one simulator (no rate limit) for all its tests,
 * handed to `set` with FileHandle.prototype and its original methods; before each test the
 * simulator's faults cleared and its request log emptied; after each, the prototype's original
 * methods put back and the runtime torn down.
 */
export function useSimWithFileFaults(set: (t: { sim: RunningSimulator; proto: P; orig: P }) => void): void {
  let sim: RunningSimulator;
  let handle: { proto: P; orig: P };
  before(async () => {
    sim = await startSim({ rateLimit: false });
    handle = await fileHandlePrototype();
    set({ sim, ...handle });
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  afterEach(async () => {
    Object.assign(handle.proto, handle.orig);
    await teardown();
  });
}

/**
 * Mocha hooks of the describe it is called in: one simulator (started with `options`) for all its
 * tests, handed to `set`; after each test the runtime torn down and the simulator's faults cleared.
 */
export function useSim(set: (sim: RunningSimulator) => void, options: SimulatorOptions = {}): void {
  let sim: RunningSimulator;
  before(async () => {
    sim = await startSim(options);
    set(sim);
  });
  afterEach(async () => {
    await teardown();
    sim.control.clearFaults();
  });
  after(async () => {
    await sim.close();
  });
}
