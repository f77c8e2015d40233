/**
 * The host ends a door-unlock node's lockout before its time (docs/access-rules.md#ending-a-lockout):
 * from a flow (`msg.endLockout`) or from the sidebar. A door's lockout (a node with *Accept
 * passes*), or every lockout of the node. The tries counted toward it are forgotten, the record
 * kept across restarts is written again, and one `lockout-ended` audit record names who ended it.
 * Nothing is sent to the service.
 */
import type { Account } from "../account/account.js";
import type { DeviceDirectory } from "../doors/directory.js";
import { selectDoor } from "../doors/select.js";
import type { AccessState } from "./access-state.js";
import type { LockoutKeeper } from "./lockout-keeper.js";
import { nodeActorProblem } from "./node-actor.js";
import { type UnlockNodeSettings, checkActor, messageActor } from "./unlock-message.js";

/** A lock that was ended: the node's (the whole node, or the ceiling across its doors), or a door's. */
export interface EndedLock {
  deviceId: number | null;
  door: string | null;
}

export type EndLockoutResult =
  | {
      ok: true;
      by: string;
      ended: EndedLock[];
      deviceId: number | null;
      door: string | null;
      keys: (number | "node")[];
    }
  | { ok: false; outcome: "invalid-input" | "denied" | "error"; reason?: "actor"; message: string; by: string };

/** What the host asked: which door (none: every lockout of the node), and who asks. */
export interface EndLockoutAsk {
  msgDeviceId: unknown;
  msgDoor: unknown;
  /** The flow's msg.actor (undefined: the node's actor); ignored when `by` is given. */
  msgActor?: unknown;
  /** Who ends it when it is not a flow (the sidebar: `editor:<user>`). */
  by?: string;
  msgid: string | null;
  /**
   * Told in the same turn as the lockouts end, before anything is awaited (the node's events:
   * no other check may see the lockout gone and take it for one that ran out).
   */
  onEnded?: (keys: (number | "node")[], by: string) => void;
}

/** A door's label from the cached device list, else `#<id>`. */
export function doorLabel(directory: DeviceDirectory, deviceId: number): string {
  const device = directory.cached()?.devices.find((d) => d.id === deviceId);
  return device ? directory.label(device) : `#${deviceId}`;
}

/** Ends what `ask` names; never sends anything to the service. */
export async function endLockout(
  account: Account,
  state: AccessState | null,
  keeper: LockoutKeeper | null,
  node: Pick<UnlockNodeSettings, "actor" | "nodeId">,
  ask: EndLockoutAsk,
): Promise<EndLockoutResult> {
  let by = ask.by ?? messageActor(ask.msgActor, node);
  if (ask.by === undefined) {
    const problem = ask.msgActor === undefined ? nodeActorProblem(node.actor) : checkActor(ask.msgActor);
    if (problem) return { ok: false, outcome: "invalid-input", message: problem, by };
  }
  if (state === null)
    return {
      ok: false,
      outcome: "invalid-input",
      message: "this node has no lockout to end: it has no PIN and does not accept passes",
      by,
    };
  // A flow's actor must be one the node lets open doors (a host's flow, not a guest's keypad).
  if (ask.by === undefined && !state.rules.actorAllowed(by))
    return {
      ok: false,
      outcome: "denied",
      reason: "actor",
      message: `"${by.slice(0, 100)}" is not among the actors allowed to open doors through this node, so it cannot end its lockout`,
      by,
    };
  let deviceId: number | null = null;
  let door: string | null = null;
  if (ask.msgDeviceId !== undefined || ask.msgDoor !== undefined) {
    if (!state.perDoor)
      return {
        ok: false,
        outcome: "invalid-input",
        message:
          "this node keeps one lockout for the whole node (it does not accept passes): leave out msg.deviceId and msg.door",
        by,
      };
    try {
      const s = await selectDoor(account.directory, {
        msgDeviceId: ask.msgDeviceId,
        msgDoor: ask.msgDoor,
        configured: null,
      });
      if (!s.ok) return { ok: false, outcome: "invalid-input", message: s.message, by };
      deviceId = s.deviceId;
      door = s.label;
    } catch (e) {
      return { ok: false, outcome: "error", message: `the door could not be resolved: ${(e as Error).message}`, by };
    }
  }
  if (keeper !== null && !keeper.ready) await keeper.load(account.core.records);
  by = by.slice(0, 200);
  const keys = state.endLockout(account.clock.now(), deviceId);
  ask.onEnded?.(keys, by);
  if (keeper !== null) await keeper.saveIfCounted(account.core.records);
  const ended = keys.map((k) =>
    k === "node" ? { deviceId: null, door: null } : { deviceId: k, door: doorLabel(account.directory, k) },
  );
  await account.audit.lockoutEnded({
    actor: by,
    deviceId,
    lockId: null,
    door,
    msgid: ask.msgid,
    ended: keys.map((k) => (k === "node" ? "node" : `door ${k}`)),
  });
  return { ok: true, by, ended, deviceId, door, keys };
}
