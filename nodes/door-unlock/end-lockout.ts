/**
 * `msg.endLockout = true` at a door-unlock node: the host's flow ends a lockout
 * (docs/access-rules.md#ending-a-lockout); the sidebar's button ends one through the same
 * function (nodes/common/lockout-control.ts). Nothing is sent to the service; the answer goes
 * out on output 2 (`outcome: "lockout-ended"`; output 1 is only for a command sent), as when it was refused.
 */
import type { Account } from "../../src/account/account.js";
import type { AccessState } from "../../src/unlock/access-rules.js";
import { type EndLockoutAsk, endLockout } from "../../src/unlock/lockout-end.js";
import { messageActor } from "../../src/unlock/unlock.js";
import type { LockoutKeeper } from "../../src/unlock/lockout-keeper.js";
import type { LockoutEvents } from "./unlock-events.js";
import { offerLockouts } from "../common/lockout-control.js";

export interface EndLockoutNode {
  state: AccessState | null;
  keeper: LockoutKeeper | null;
  settings: { actor: string; nodeId: string };
  events: LockoutEvents | null;
  account(): { account: Account } | { problem: string };
  /** The status again, once a lockout was ended. */
  refresh(): void;
}

/** The answer a flow gets (msg.payload). */
export interface EndLockoutAnswer {
  outcome: "lockout-ended" | "invalid-input" | "denied" | "error" | "session-halted";
  reason?: "actor";
  /** Always null: nothing is sent to the service. */
  status: null;
  /** Who ended it (the flow's actor, or the editor user). */
  by: string;
  /** The door asked for (null: every lockout of the node). */
  deviceId: number | null;
  door: string | null;
  /** What was ended: the node's lockout (deviceId null) and the doors'; empty when nothing was locked. */
  ended: { deviceId: number | null; door: string | null }[];
  at: string;
  message: string;
  mayHaveOpened: false;
}

/**
 * Ends what `ask` names at node `n`; never throws for a refusal (an audit record that cannot be
 * written does: said on done()). `secret`: the message also carried msg.pass or msg.pin.
 */
export async function endNodeLockout(n: EndLockoutNode, ask: EndLockoutAsk, secret = false): Promise<EndLockoutAnswer> {
  const at = () => new Date().toISOString();
  const got = n.account();
  const none = { status: null, deviceId: null, door: null, ended: [], mayHaveOpened: false as const };
  if ("problem" in got) return { outcome: "session-halted", by: ask.by ?? "", message: got.problem, at: at(), ...none };
  const r = secret
    ? {
        ok: false as const,
        outcome: "invalid-input" as const,
        reason: undefined,
        message: "a message that ends a lockout carries no msg.pass or msg.pin: a guest's message never ends one",
        by: ask.by ?? messageActor(ask.msgActor, n.settings),
      }
    : await endLockout(got.account, n.state, n.keeper, n.settings, {
        ...ask,
        onEnded: (keys, by) => n.events?.ended(keys, by),
      });
  if (!r.ok) {
    // docs/audit-log.md#records: a message refused before anything was sent has its unlock-rejected record.
    await got.account.audit.rejected({
      actor: r.by,
      deviceId: null,
      lockId: null,
      door: null,
      msgid: ask.msgid,
      outcome: r.outcome,
      reason: r.reason ?? "end-lockout",
      message: r.message,
    });
    return {
      outcome: r.outcome,
      ...(r.reason ? { reason: r.reason } : {}),
      by: r.by,
      message: r.message,
      at: at(),
      ...none,
    };
  }
  n.refresh();
  const what =
    r.ended.length === 0
      ? "nothing was locked"
      : r.ended.map((e) => (e.deviceId === null ? "the node's lockout" : `${e.door}'s lockout`)).join(", ") + " ended";
  return {
    outcome: "lockout-ended",
    status: null,
    by: r.by,
    deviceId: r.deviceId,
    door: r.door,
    ended: r.ended,
    at: at(),
    message: `${what} (by ${r.by})`,
    mayHaveOpened: false,
  };
}

/**
 * Offers the node's lockouts to the sidebar (nodes/common/lockout-control.ts): what is locked, and
 * the end of one as the editor user. Returns the function that takes the offer back (on close).
 */
export function offerNodeLockouts(
  n: EndLockoutNode,
  rules: AccessState,
  who: { nodeId: string; name: string; accountId: string },
  labelOf: (deviceId: number) => string | null,
): () => void {
  return offerLockouts({
    ...who,
    locks: () => {
      const now = Date.now();
      const l = rules.lockout(now);
      const whole = l.locked
        ? [{ deviceId: null, door: null, wrongPins: l.wrongPins, until: new Date(l.until!).toISOString() }]
        : [];
      const doors = rules.doorLockouts(now).map((d) => ({
        deviceId: d.deviceId,
        door: labelOf(d.deviceId) ?? `#${d.deviceId}`,
        wrongPins: d.wrongPins,
        until: new Date(d.until).toISOString(),
      }));
      return [...whole, ...doors];
    },
    end: async (deviceId, by) => {
      const r = await endNodeLockout(n, { msgDeviceId: deviceId ?? undefined, msgDoor: undefined, by, msgid: null });
      if (r.outcome !== "lockout-ended") throw new Error(r.message);
      return { ended: r.ended };
    },
  });
}
