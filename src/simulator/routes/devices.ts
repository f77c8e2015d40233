/**
 * The device and location routes (operations 6, 9, 10): what an account sees. An account sees
 * its own company's doors and the doors it holds a key to; reading one door needs a key.
 * docs/simulator.md#doors and docs/simulator.md#demo-accounts
 */
import type { DoorRecord } from "../state.js";
import { errorResult, type Call, type Operation, type Result, type Runtime } from "./common.js";

/**
 * The door a device call names, as the account may know it: 400 for a deviceId that is not an
 * int32, 404 for an unknown door or one the account cannot see (for all three device operations).
 */
export function visibleDoor(rt: Runtime, call: Call, accountId: string): { door: DoorRecord } | { result: Result } {
  if (call.deviceId === null) return { result: errorResult(400, "deviceId must be an int32 integer") };
  if (call.route.operation === "unlockDeviceLock" && call.lockId === null) {
    return { result: errorResult(400, "lockId must be an int32 integer") };
  }
  const door = rt.state.doors.get(call.deviceId);
  if (!door || !rt.state.isVisible(accountId, door))
    return { result: errorResult(404, `device ${call.deviceId} not found`) };
  return { door };
}

export function deviceOperations(
  rt: Runtime,
): Record<"getDevice" | "listUserLocations" | "listUserDevices", Operation> {
  const { state } = rt;
  return {
    listUserDevices: {
      auth: "bearer",
      run: (_call, accountId) => ({ status: 200, json: state.visibleDoors(accountId).map((d) => state.deviceView(d)) }),
    },
    listUserLocations: {
      auth: "bearer",
      run: (_call, accountId) => ({ status: 200, json: state.locationsView(accountId) }),
    },
    getDevice: {
      auth: "bearer",
      run: (call, accountId) => {
        const found = visibleDoor(rt, call, accountId);
        if ("result" in found) return found.result;
        if (!state.keyFor(accountId, found.door.seed.id))
          return errorResult(403, "the account holds no key to this device");
        return { status: 200, json: state.deviceView(found.door) };
      },
    },
  };
}
