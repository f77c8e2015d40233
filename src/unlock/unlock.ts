/**
 * One unlock, from a message's fields to its outcome: validate, audit, send exactly one PUT
 * (plus the session's single replay after a 401), audit the result. Never repeats a command.
 * Knows nothing of Node-RED: door-unlock hands it plain values and sends what it returns.
 */
import type { Account } from "../account/account.js";
import { AuditWriteFailed } from "../audit/audit-log.js";
import type { DoorIdentity } from "../doors/directory.js";
import { checkLock, describeValue, doorInputProblem, parseLockId, selectDoor } from "../doors/select.js";
import { MAX_ACTOR, nodeActorProblem } from "./node-actor.js";
import type { AccessState, CooldownSlot, Denied, DenyReason } from "./access-rules.js";
import type { LockoutKeeper } from "./lockout-keeper.js";
import { type Classified, type Outcome, classifyFailure } from "./outcome.js";
import { lookUpPass, passRefusal } from "./pass-check.js";
import { type PassTicket, PassUseRefused } from "../passes/pass-book.js";
import type { Pass } from "../passes/pass.js";
import { type GuestRefusal, guestRefusal, refusedAtUse } from "./guest-refusal.js";
import { AuditRecordLost, CLOSING_TRIES, afterDelivery, doorKnownLocally, rateLimited } from "./unlock-parts.js";

export { AuditRecordLost, CLOSING_TRIES };

export interface UnlockInput {
  msgDeviceId: unknown;
  msgDoor: unknown;
  msgLockId: unknown;
  msgActor: unknown;
  msgRetain: unknown;
  msgid: string | null;
  /** msg.pin as it came (docs/access-rules.md#pin-and-lockout); only the access rules read it. */
  msgPin?: unknown;
  /** msg.pass as it came (docs/passes.md#at-a-door-unlock): read only when the node accepts passes. */
  msgPass?: unknown;
  /** Set when the message's fields could not be read (a getter that throws): why. Nothing is sent. */
  unreadable?: string;
}

export interface UnlockNodeSettings {
  nodeId: string;
  door: DoorIdentity | null;
  /** The node's lock (editor text or number); "" = whole device. */
  lockId: unknown;
  actor: string;
  rejectRetained: boolean;
  /**
   * The node's access rules (docs/access-rules.md): absent or null when it has none; the
   * node's rule state; or why its rules could not be read (every message is then denied).
   */
  access?: NodeAccess | null;
  /**
   * Keeps the wrong PINs and the lockout of a node with a PIN across deploys and restarts
   * (docs/access-rules.md#what-ends-a-lockout): read before the first check, written after a wrong PIN.
   */
  lockout?: LockoutKeeper | null;
  /** The node opens for guest passes (msg.pass; docs/passes.md#at-a-door-unlock). */
  acceptPasses?: boolean;
}

export type NodeAccess = { ok: true; state: AccessState } | { ok: false; message: string };

/** `reason` of a `denied` outcome: the rule that refused, or `configuration` (rules unreadable). */
export type DeniedReason = DenyReason | "configuration";

export interface UnlockResult {
  outcome: Outcome;
  status: number | null;
  deviceId: number | null;
  lockId: number | null;
  door: string | null;
  actor: string;
  at: string;
  message?: string;
  retryAfter?: number;
  /** On `denied`: the rule that refused the message (docs/access-rules.md#the-node-at-run-time). */
  reason?: DeniedReason;
  mayHaveOpened?: boolean;
  /** Candidates for an unknown or ambiguous door name. */
  candidates?: string[];
  /** The guest pass the message opened with (never its code): `first` on the pass's first use. */
  pass?: { id: string; ref: string | null; first: boolean };
  /** Accept passes: why a guest's code did not open, as data (docs/passes.md#at-a-door-unlock). */
  passRefusal?: GuestRefusal;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Why the node's configured actor cannot be used (null: it can): src/unlock/node-actor.ts, the
 * function the dialog validates with. A node deployed with another (a flow file edited by hand)
 * says so at deploy, and a message that would carry it is refused (docs/nodes.md#door-unlock).
 */
export { nodeActorProblem };

/** The actor of a message that names none: the node's, else `node-red:<node id>` (also when the node's cannot be used). */
export function nodeActor(node: Pick<UnlockNodeSettings, "actor" | "nodeId">): string {
  return (nodeActorProblem(node.actor) === null && node.actor.trim()) || `node-red:${node.nodeId}`;
}

/**
 * The actor a message's outcome and records name (docs/outcomes.md#door-unlock-outcomes):
 * `msg.actor` when it is one, else the node's (nodeActor). Also for a message refused before any
 * account is reached.
 */
export function messageActor(msgActor: unknown, node: Pick<UnlockNodeSettings, "actor" | "nodeId">): string {
  return msgActor !== undefined && checkActor(msgActor) === null ? (msgActor as string) : nodeActor(node);
}

function checkActor(value: unknown): string | null {
  if (typeof value !== "string" || value.trim() === "")
    return `msg.actor must be a non-empty string, got ${describeValue(value)}`;
  if (value.length > MAX_ACTOR) return `msg.actor is longer than ${MAX_ACTOR} characters`;
  if (CONTROL.test(value)) return "msg.actor contains control characters";
  return null;
}

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
  const at = () => new Date(account.clock.now()).toISOString();
  const actorProblem = input.msgActor === undefined ? null : checkActor(input.msgActor);
  const actor = messageActor(input.msgActor, node);
  const base: Pick<UnlockResult, "deviceId" | "lockId" | "door" | "actor" | "pass"> = {
    deviceId: null,
    lockId: null,
    door: null,
    actor,
  };
  let pass: Pass | null = null;

  // onResult is the caller's (a node sending a message); whatever it throws, the closing record is
  // written first (docs/audit-log.md#records: every message that reached the service gets its
  // unlock-result), then the error is passed on.
  let told: { error: unknown } | null = null;
  const tell = (r: UnlockResult): void => {
    try {
      onResult?.(r);
    } catch (error) {
      told = { error };
    }
  };
  // The closing record could not be written in CLOSING_TRIES tries: said once the outcome is
  // out, which it does not change (AuditRecordLost).
  let lost: AuditRecordLost | null = null;
  const passOn = (r: UnlockResult): UnlockResult => {
    if (told) throw told.error;
    if (lost) throw lost;
    return r;
  };
  /**
   * Writes the closing record in the turn after onResult (afterDelivery). The record is made from
   * this function's own values, taken before onResult: the result object goes out as the
   * message's payload, and the nodes after this one may change it in that turn. A record whose
   * batch failed (a write that fails once, or the next message's attempt write it rode with) is
   * appended again, in CLOSING_TRIES batches at most: the request was sent, its record is owed.
   */
  const closeWith = async (
    type: "unlock-result" | "unlock-rejected",
    outcome: Outcome,
    write: () => Promise<void>,
  ): Promise<void> => {
    await afterDelivery();
    for (let tries = 1; ; tries++) {
      try {
        await write();
        return;
      } catch (e) {
        // Its line stayed in the log (the failed batch could not be cut off again): writing it
        // again would give the message a second closing record.
        if (e instanceof AuditWriteFailed && e.inLog) return;
        if (tries >= CLOSING_TRIES) {
          lost = new AuditRecordLost(type, outcome, e);
          return;
        }
      }
    }
  };

  const reject = async (
    outcome: Outcome,
    message: string,
    extra: Partial<UnlockResult> = {},
  ): Promise<UnlockResult> => {
    // A denied message's record names the rule (its word), every other rejection says why in words.
    const rejected = {
      actor: base.actor,
      deviceId: base.deviceId,
      lockId: base.lockId,
      door: base.door,
      msgid: input.msgid,
      ...(pass ? { pass: pass.id } : {}),
      outcome,
      reason: extra.reason ?? message,
      // A denied record's reason is the rule's word; its message says which case (a missing PIN
      // or a wrong one, the seconds left). Denied messages never hold a PIN.
      ...(extra.reason !== undefined ? { message } : {}),
    };
    const r: UnlockResult = {
      ...base,
      ...extra,
      outcome,
      status: extra.status ?? null,
      at: at(),
      message,
      mayHaveOpened: false,
    };
    const guestWhy = guestRefusal(node, r, pass, account.clock.now()); // docs/passes.md#at-a-door-unlock
    if (guestWhy) r.passRefusal = guestWhy;
    tell(r);
    // The rejection is audited too.
    await closeWith("unlock-rejected", outcome, () => account.audit.rejected(rejected));
    return passOn(r);
  };

  /** An access rule refused the message: output 2, nothing sent (docs/access-rules.md#the-node-at-run-time). */
  const deny = (d: Denied): Promise<UnlockResult> =>
    reject(
      "denied",
      d.message,
      d.retryAfter !== undefined ? { reason: d.reason, retryAfter: d.retryAfter } : { reason: d.reason },
    );

  // Rules that cannot be read refuse every message, before anything else is looked at.
  if (node.access && !node.access.ok) return reject("denied", node.access.message, { reason: "configuration" });
  const access = node.access?.ok ? node.access.state : null;

  if (input.unreadable !== undefined) return reject("invalid-input", input.unreadable);
  if (actorProblem) return reject("invalid-input", actorProblem);
  if (input.msgActor === undefined) {
    const bad = nodeActorProblem(node.actor);
    if (bad) return reject("invalid-input", bad);
  }
  if (input.msgRetain === true && node.rejectRetained) {
    return reject(
      "retained-rejected",
      "retained message rejected: a retained MQTT message is replayed on every reconnect and must not open a door (turn off rejectRetained to allow it)",
    );
  }
  const lock = parseLockId(
    input.msgLockId !== undefined ? input.msgLockId : node.lockId,
    input.msgLockId === undefined,
  );
  if (!lock.ok) return reject("invalid-input", input.msgLockId !== undefined ? `msg.${lock.message}` : lock.message);
  base.lockId = lock.lockId;

  const keeper = access ? (node.lockout ?? null) : null;
  if (access && node.acceptPasses === true && input.msgPass !== undefined) {
    // docs/passes.md#at-a-door-unlock: the pass names the guest and replaces the actor rule and the PIN.
    const found = await lookUpPass(account.core.passes, input.msgPass);
    if (found.kind === "invalid") return reject("invalid-input", found.message);
    if (found.kind === "unavailable") return reject("error", found.message);
    if (found.kind === "unknown") {
      // Counted toward the node's lockout as a wrong PIN is, and kept before it is answered.
      if (keeper !== null && !keeper.ready) await keeper.load(account.core.records);
      const d = access.wrongCode(account.clock.now());
      if (keeper !== null) await keeper.saveIfCounted(account.core.records);
      return deny(d);
    }
    pass = found.pass;
    base.actor = `guest:${pass.guest}`;
  }
  const byPass = pass !== null;
  const choice = { msgDeviceId: input.msgDeviceId, msgDoor: input.msgDoor, configured: node.door };
  if (access) {
    // Bad input is answered as such, also when a rule would refuse the message too.
    const bad = doorInputProblem(choice);
    if (bad !== null) return reject("invalid-input", bad.message, bad.candidates ? { candidates: bad.candidates } : {});
    // Actor and schedule need no door: asked before the door is resolved, so that a message they
    // refuse never makes the account fetch its device list. The record names the door as far as
    // it is known without the service.
    const early = access.precheck({ actor: base.actor, now: account.clock.now(), byPass });
    if (early) {
      Object.assign(base, doorKnownLocally(account.directory, input, node.door));
      return deny(early);
    }
  }

  let selection;
  try {
    selection = await selectDoor(account.directory, choice);
  } catch (e) {
    // The device list could not be read (session halted, service down, rate-limited): nothing was sent.
    const c = classifyFailure(e, false);
    if (c.outcome === "rate-limited")
      return reject("rate-limited", `the door could not be resolved: ${c.message}`, rateLimited(c));
    return reject(
      c.outcome === "session-halted" || c.outcome === "service-unreachable" ? c.outcome : "error",
      `the door could not be resolved: ${c.message}`,
    );
  }
  if (!selection.ok)
    return reject("invalid-input", selection.message, selection.candidates ? { candidates: selection.candidates } : {});
  base.deviceId = selection.deviceId;
  base.door = selection.label;
  const lockProblem = checkLock(selection.device, selection.label, lock.lockId);
  if (lockProblem) return reject("invalid-input", lockProblem);

  // The cooldown is per door and lock, so the rules are decided here, once the door is known, and
  // before anything awaits on the way to the PUT: an allowed message holds its door's cooldown
  // slot from this synchronous check (five messages in one millisecond: one goes) until the
  // command leaves (sent) or nothing is sent (released in the finally below).
  // docs/session.md#a-retry-after-holds-the-account: the service asked this account to wait
  // (a 429 with Retry-After to any request): answered at once, nothing sent, before a rule takes
  // a cooldown slot or compares a PIN. Read from memory: no I/O on the unlock path.
  // docs/access-rules.md#what-ends-a-lockout: the wrong PINs and lockout kept from before a
  // deploy or restart are read before the first check (read once; later messages do not wait).
  if (keeper !== null && !keeper.ready) await keeper.load(account.core.records);
  const heldMs = account.client.heldForMs();
  if (heldMs > 0) {
    const left = Math.ceil(heldMs / 1000);
    return reject("rate-limited", `not sent: the service asked this account to wait (429); retry after ${left} s`, {
      status: 429,
      retryAfter: left,
    });
  }
  if (pass !== null) {
    const why = passRefusal(pass, selection.deviceId, account.clock.now(), access?.rules.timeZone);
    if (why !== null) return reject("denied", why, { reason: "pass" });
  }
  let slot: CooldownSlot | null = null;
  let ticket: PassTicket | null = null;
  if (access) {
    const d = access.check({
      actor: base.actor,
      deviceId: selection.deviceId,
      lockId: lock.lockId,
      pin: input.msgPin,
      now: account.clock.now(),
      byPass,
    });
    if (!d.allowed) {
      // A wrong PIN is kept before it is answered: a restart after the answer has not forgotten it.
      if (keeper !== null) await keeper.saveIfCounted(account.core.records);
      return deny(d);
    }
    slot = d.slot;
    if (pass !== null) {
      // The pass's use, taken in this same turn: two messages racing for its last use send one command.
      ticket = account.core.passes.reserve(pass, selection.deviceId);
      if (ticket === null) {
        slot.release();
        return reject(
          "denied",
          passRefusal(pass, selection.deviceId, account.clock.now(), access.rules.timeZone) ??
            "this pass has no use left",
          { reason: "pass" },
        );
      }
    }
  }
  try {
    const record = {
      actor: base.actor,
      deviceId: selection.deviceId,
      lockId: lock.lockId,
      door: selection.label,
      msgid: input.msgid,
      ...(pass ? { pass: pass.id } : {}),
    };
    let sends = 0;
    try {
      await account.session.call(async (token) => {
        // The pass's use: counted when the command is sent (a session that cannot give a token
        // takes none), once (not again for the replay), written before it leaves
        // (docs/passes.md#at-a-door-unlock).
        if (ticket !== null && sends === 0) {
          try {
            const { first } = await ticket.commit();
            base.pass = { id: pass!.id, ref: pass!.ref, first };
          } catch (e) {
            throw new PassUseError(e);
          }
        }
        // Every PUT, the 401 replay included, has its attempt record on disk before it leaves; the
        // replay's is marked `replay: true` (docs/audit-log.md#records). If the record cannot be
        // written, nothing is sent: an unaudited unlock is worse than none.
        try {
          await account.audit.attempt(sends > 0 ? { ...record, replay: true } : record);
        } catch (e) {
          throw new AuditWriteError((e as Error).message);
        }
        sends++;
        const put = account.client.unlock(token, selection.deviceId, lock.lockId);
        if (sends === 1) {
          // The command has left: the door's cooldown runs from now.
          slot?.sent(account.clock.now());
          try {
            onSending?.();
          } catch {
            /* a status display is not the command's business */
          }
        }
        await put;
      });
    } catch (e) {
      if (e instanceof PassUseError) {
        // Another instance took the pass's last use, or the pass changed: refused as at the check.
        if (e.why instanceof PassUseRefused) return reject("denied", ...refusedAtUse(e.why.why, pass!, access!));
        return reject("error", `not sent: the pass's use could not be written (${(e.why as Error).message})`);
      }
      let c: Classified;
      if (e instanceof AuditWriteError) {
        c = {
          outcome: "error",
          status: null,
          retryAfter: null,
          mayHaveOpened: false,
          sent: false,
          message: `not sent: the audit log could not be written (${e.message})`,
        };
      } else {
        c = classifyFailure(e, true);
      }
      if (sends > 0 && c.outcome === "session-halted") {
        // The PUT was sent and answered 401 (nothing executed), and the renewal after it halted
        // the account (refresh rejected twice within the hour): no replay. The contract's word for
        // a request answered 401 is unauthorized. A renewal that failed on 429/5xx/network instead
        // stays rate-limited / service-unreachable (docs/session.md#a-401-and-its-replay).
        c = {
          ...c,
          outcome: "unauthorized",
          status: 401,
          sent: true,
          message: `the service answered 401 and the session could not be renewed: ${c.message}`,
        };
      } else if (sends > 0 && (c.outcome === "service-unreachable" || (c.outcome === "rate-limited" && !c.sent))) {
        c = { ...c, sent: true, mayHaveOpened: false };
      }
      if (sends === 0) slot?.release(); // nothing left: the next message for the door need not wait
      if (sends === 0 && !c.sent) {
        return reject(c.outcome, c.message, c.outcome === "rate-limited" ? rateLimited(c) : {});
      }
      if (c.outcome === "not-found") {
        // Re-fetch the list so the door-name mapping follows the door; the command is not repeated.
        void account.directory.refreshAfterNotFound(selection.identity).catch(() => undefined);
      }
      const result: UnlockResult = {
        ...base,
        outcome: c.outcome,
        status: c.status,
        at: at(),
        message: c.message,
        mayHaveOpened: c.mayHaveOpened,
      };
      if (c.retryAfter !== null) result.retryAfter = c.retryAfter;
      const closing = { ...record, outcome: c.outcome, status: c.status };
      tell(result);
      await closeWith("unlock-result", c.outcome, () => account.audit.result(closing));
      return passOn(result);
    }
    // Fields written out rather than spread: this is on the door's path (bench: unlockP50Ratio).
    const accepted: UnlockResult = {
      deviceId: base.deviceId,
      lockId: base.lockId,
      door: base.door,
      actor: base.actor,
      outcome: "accepted",
      status: 200,
      at: at(),
    };
    if (base.pass) accepted.pass = base.pass;
    tell(accepted);
    await closeWith("unlock-result", "accepted", () =>
      account.audit.result({ ...record, outcome: "accepted", status: 200 }),
    );
    return passOn(accepted);
  } finally {
    slot?.release();
    ticket?.release();
  }
}

class AuditWriteError extends Error {}
class PassUseError extends Error {
  constructor(readonly why: unknown) {
    super("the pass's use was not taken");
  }
}
