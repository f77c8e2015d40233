/**
 * One unlock, from a message's fields to its outcome, in named phases
 * (docs/architecture.md#a-message-from-input-to-put-to-outcome): check the message and the rules
 * that need no door (checkMessage), resolve the door (resolveDoor), decide the rules that need it
 * and reserve a pass's use (decide), send exactly one PUT (send; plus the session's single replay
 * after a 401), and write the closing record (Closing). Never repeats a command. Knows nothing of
 * Node-RED: door-unlock hands it plain values and sends what it returns.
 */
import type { Account } from "../account/account.js";
import { AuditRecordLost, CLOSING_TRIES, Closing } from "./closing-record.js";
import { nodeActorProblem } from "./node-actor.js";
import { checkMessage, decide, resolveDoor } from "./unlock-checks.js";
import {
  type UnlockInput,
  type UnlockNodeSettings,
  type UnlockResult,
  isRefusal,
  messageActor,
  newAttempt,
  nodeActor,
} from "./unlock-message.js";
import { send } from "./unlock-send.js";

export type { DeniedReason, NodeAccess, UnlockInput, UnlockNodeSettings, UnlockResult } from "./unlock-message.js";
export { AuditRecordLost, CLOSING_TRIES, messageActor, nodeActor };

/**
 * Why the node's configured actor cannot be used (null: it can): src/unlock/node-actor.ts, the
 * function the dialog validates with. A node deployed with another (a flow file edited by hand)
 * says so at deploy, and a message that would carry it is refused (docs/nodes.md#door-unlock).
 */
export { nodeActorProblem };

/**
 * Performs one unlock. `onResult` (optional) is called with the outcome as soon as it is known,
 * before its closing audit record (unlock-result / unlock-rejected) is made (in the next turn,
 * see afterDelivery) and flushed, so a flow can go on without waiting for that record; the
 * returned promise resolves once the record is on disk. The attempt record is always on disk
 * before the request leaves. `onSending` (optional) is called once, when the command has been
 * handed to the HTTP client (its attempt record on disk): never for a message that sends nothing.
 */
export function performUnlock(
  account: Account,
  input: UnlockInput,
  node: UnlockNodeSettings,
  onResult?: (result: UnlockResult) => void,
  onSending?: () => void,
): Promise<UnlockResult> {
  // Tracked by the account: closing it waits for this unlock's result record (docs/audit-log.md#records).
  return account.track(unlockOnce(account, input, node, onResult, onSending));
}

async function unlockOnce(
  account: Account,
  input: UnlockInput,
  node: UnlockNodeSettings,
  onResult?: (result: UnlockResult) => void,
  onSending?: () => void,
): Promise<UnlockResult> {
  const a = newAttempt(account, input, node);
  const closing = new Closing(a, onResult);

  // 1. Check the rules: the message's own fields, the door, then the rules that need it; a
  // pass's use is reserved in the same turn as the last check.
  const asked = await checkMessage(a);
  if (isRefusal(asked)) return closing.rejected(asked);
  const door = await resolveDoor(a, asked);
  if (isRefusal(door)) return closing.rejected(door);
  const go = await decide(a, asked, door);
  if (isRefusal(go)) return closing.rejected(go);

  // 2. Send, holding the door's cooldown slot and the pass's use until the command has left or
  // nothing was sent.
  try {
    const sent = await send(a, go, onSending);
    // 3. The closing record.
    if (sent.kind === "refused") return await closing.rejected(sent);
    if (sent.kind === "failed") {
      const { c } = sent;
      const result: UnlockResult = {
        ...a.base,
        outcome: c.outcome,
        status: c.status,
        at: closing.at(),
        message: c.message,
        mayHaveOpened: c.mayHaveOpened,
      };
      if (c.retryAfter !== null) result.retryAfter = c.retryAfter;
      return await closing.result(result, go.record);
    }
    // Fields written out rather than spread: this is on the door's path (bench: unlockP50Ratio).
    const accepted: UnlockResult = {
      deviceId: a.base.deviceId,
      lockId: a.base.lockId,
      door: a.base.door,
      actor: a.base.actor,
      outcome: "accepted",
      status: 200,
      at: closing.at(),
    };
    if (a.base.pass) accepted.pass = a.base.pass;
    return await closing.result(accepted, go.record);
  } finally {
    go.slot?.release();
    go.ticket?.release();
  }
}
