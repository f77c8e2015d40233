/**
 * The unlock routes (operations 7 and 8). A key to the whole door opens it; a key to some locks
 * opens only those; an offline door answers 503. Each executed unlock is recorded on the door
 * (GET /_sim/devices/<id>). docs/simulator.md#doors
 */
import { errorResult, type Operation, type Runtime } from "./common.js";
import { visibleDoor } from "./devices.js";

export function unlockOperations(rt: Runtime): Record<"unlockDevice" | "unlockDeviceLock", Operation> {
  const { state } = rt;
  return {
    unlockDevice: {
      auth: "bearer",
      run: (call, accountId) => {
        const found = visibleDoor(rt, call, accountId);
        if ("result" in found) return found.result;
        const { door } = found;
        const key = state.keyFor(accountId, door.seed.id);
        if (!key || key.lockIds !== undefined) return errorResult(403, "the account holds no key to this whole device");
        if (!door.online) return errorResult(503, "device is offline or out of range");
        state.recordUnlock(door, accountId, null);
        return { status: 200 };
      },
    },
    unlockDeviceLock: {
      auth: "bearer",
      run: (call, accountId) => {
        const found = visibleDoor(rt, call, accountId);
        if ("result" in found) return found.result;
        const { door } = found;
        const key = state.keyFor(accountId, door.seed.id);
        const lockId = call.lockId!;
        if (!door.locks.some((l) => l.id === lockId))
          return errorResult(404, `device ${door.seed.id} has no lock ${lockId}`);
        if (!key || (key.lockIds !== undefined && !key.lockIds.includes(lockId))) {
          return errorResult(403, "the account holds no key to this lock");
        }
        if (!door.online) return errorResult(503, "device is offline or out of range");
        state.recordUnlock(door, accountId, lockId);
        return { status: 200 };
      },
    },
  };
}
