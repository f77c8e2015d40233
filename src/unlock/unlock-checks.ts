/**
 * The first phases of one unlock (src/unlock/unlock.ts), in the order of
 * docs/access-rules.md#the-node-at-run-time: the message's own fields and the rules that need no
 * door (checkMessage), the door (resolveDoor), then, in one synchronous turn, the service's hold,
 * the guest's code, the rules that need the door, and the pass's use (decide). Each returns what
 * the next needs, or a Refusal: nothing is sent for it.
 */
import type { DeviceDirectory, DoorIdentity } from "../doors/directory.js";
import { checkLock, doorInputProblem, isDeviceId, parseLockId, selectDoor } from "../doors/select.js";
import type { PassTicket } from "../passes/pass-book.js";
import { readCode } from "../passes/pass.js";
import type { CooldownSlot, Denied } from "./access-rules.js";
import { nodeActorProblem } from "./node-actor.js";
import { classifyFailure, rateLimited } from "./outcome.js";
import { checkCode, passRefusal, refusedBy } from "./pass-check.js";
import type { AttemptRecord } from "./closing-record.js";
import { type Attempt, type Refusal, checkActor, costTry, denial, keepTries, refuse } from "./unlock-message.js";

/** What the message asks for, read from its own fields. */
export interface Asked {
  lockId: number | null;
  /** msg.pass read as a code (a node that accepts passes), else null. */
  code: string | null;
  choice: { msgDeviceId: unknown; msgDoor: unknown; configured: DoorIdentity | null };
}

/** The door the message resolved to. */
export interface Door {
  deviceId: number;
  label: string;
  identity: DoorIdentity;
}

/** Everything allowed: the command may be sent, holding the door's cooldown slot and the pass's use. */
export interface Go {
  door: Door;
  lockId: number | null;
  slot: CooldownSlot | null;
  ticket: PassTicket | null;
  record: AttemptRecord;
}

/**
 * docs/passes.md#how-hard-a-code-is-to-guess: while a node that accepts passes is locked out,
 * every message gets this one answer, whatever it holds; no code is looked up, no PIN compared.
 */
function lockedOutAlike(a: Attempt, d: Denied): Refusal {
  Object.assign(a.base, { deviceId: null, lockId: null, door: null, actor: a.actor });
  a.pass = null;
  return denial(d);
}

/** The node's state and the message's own fields, and the rules that need no door. */
export async function checkMessage(a: Attempt): Promise<Asked | Refusal> {
  const { account, input, node, access } = a;
  // Rules that cannot be read refuse every message, before anything else is looked at.
  if (node.access && !node.access.ok) return refuse("denied", node.access.message, { reason: "configuration" });
  const takesPasses = access !== null && node.acceptPasses === true;
  if (takesPasses) {
    // The wrong tries kept from before a deploy or restart are read first (docs/access-rules.md#what-ends-a-lockout).
    if (a.keeper !== null && !a.keeper.ready) await a.keeper.load(account.core.records);
    const locked = access.lockedOut(account.clock.now());
    if (locked) return lockedOutAlike(a, locked);
  }
  if (input.unreadable !== undefined) return refuse("invalid-input", input.unreadable);
  const actorProblem = input.msgActor === undefined ? nodeActorProblem(node.actor) : checkActor(input.msgActor);
  if (actorProblem) return refuse("invalid-input", actorProblem);
  if (input.msgRetain === true && node.rejectRetained) {
    return refuse(
      "retained-rejected",
      "retained message rejected: a retained MQTT message is replayed on every reconnect and must not open a door (turn off rejectRetained to allow it)",
    );
  }
  const lock = parseLockId(
    input.msgLockId !== undefined ? input.msgLockId : node.lockId,
    input.msgLockId === undefined,
  );
  if (!lock.ok) return refuse("invalid-input", input.msgLockId !== undefined ? `msg.${lock.message}` : lock.message);
  a.base.lockId = lock.lockId;

  // docs/passes.md#at-a-door-unlock: a code is read here, and looked up only once the message could
  // open a door with it (docs/passes.md#how-hard-a-code-is-to-guess).
  let code: string | null = null;
  if (takesPasses && input.msgPass !== undefined) {
    code = readCode(input.msgPass);
    if (code === null)
      return refuse("invalid-input", "msg.pass must be a pass code: its digits, as text or a whole number");
  }
  const choice = { msgDeviceId: input.msgDeviceId, msgDoor: input.msgDoor, configured: node.door };
  if (access) {
    // Bad input is answered as such, also when a rule would refuse the message too.
    const bad = doorInputProblem(choice);
    if (bad !== null) return refuse("invalid-input", bad.message, bad.candidates ? { candidates: bad.candidates } : {});
    // Actor and schedule need no door: asked before the door is resolved, so that a message they
    // refuse never makes the account fetch its device list. The record names the door as far as
    // it is known without the service.
    const early = access.precheck({ actor: a.base.actor, now: account.clock.now(), byPass: code !== null });
    if (early) {
      Object.assign(a.base, doorKnownLocally(account.directory, input, node.door));
      return denial(early);
    }
  }
  return { lockId: lock.lockId, code, choice };
}

/** The door the message names, against the account's device list, and its lock. */
export async function resolveDoor(a: Attempt, asked: Asked): Promise<Door | Refusal> {
  let selection;
  try {
    selection = await selectDoor(a.account.directory, asked.choice);
  } catch (e) {
    // The device list could not be read (session halted, service down, rate-limited): nothing was sent.
    const c = classifyFailure(e, false);
    if (c.outcome === "rate-limited")
      return refuse("rate-limited", `the door could not be resolved: ${c.message}`, rateLimited(c));
    return refuse(
      c.outcome === "session-halted" || c.outcome === "service-unreachable" ? c.outcome : "error",
      `the door could not be resolved: ${c.message}`,
    );
  }
  if (!selection.ok)
    return refuse("invalid-input", selection.message, selection.candidates ? { candidates: selection.candidates } : {});
  // docs/passes.md#how-hard-a-code-is-to-guess: a node with Accept passes keeps its lockout per
  // door; the door is what the message resolved to, and a locked door answers every message alike.
  if (a.access !== null && a.node.acceptPasses === true) {
    const locked = a.access.lockedOut(a.account.clock.now(), selection.deviceId);
    if (locked) return lockedOutAlike(a, locked);
  }
  a.base.deviceId = selection.deviceId;
  a.base.door = selection.label;
  const lockProblem = checkLock(selection.device, selection.label, asked.lockId);
  if (lockProblem) return refuse("invalid-input", lockProblem);
  return { deviceId: selection.deviceId, label: selection.label, identity: selection.identity };
}

/**
 * The rules decided once the door is known, and the pass's use reserved. Everything after the
 * awaits at its start runs in one turn: an allowed message holds its door's cooldown slot (five
 * messages in one millisecond: one goes) and its pass's use (two messages racing for the last
 * use: one goes) from this check until the command leaves or nothing is sent (the caller releases
 * both); a guest's code is looked up and its miss counted in the same turn.
 */
export async function decide(a: Attempt, asked: Asked, door: Door): Promise<Go | Refusal> {
  const { account, access, input } = a;
  // docs/access-rules.md#what-ends-a-lockout: the wrong PINs and lockout kept from before a
  // deploy or restart are read before the first check (read once; later messages do not wait).
  if (a.keeper !== null && !a.keeper.ready) await a.keeper.load(account.core.records);
  if (asked.code !== null) {
    try {
      await account.core.passes.refresh();
    } catch (e) {
      // The passes cannot be read (the Redis store is unreachable): no code is known or unknown.
      return refuse("error", `not sent: the passes cannot be read (${(e as Error).message})`);
    }
  }
  // docs/session.md#a-retry-after-holds-the-account: the service asked this account to wait (a
  // 429 with Retry-After to any request): answered at once, nothing sent, before a rule takes a
  // cooldown slot or a code is looked up. Read from memory: no I/O on the unlock path.
  const heldMs = account.client.heldForMs();
  if (heldMs > 0) {
    const left = Math.ceil(heldMs / 1000);
    return refuse("rate-limited", `not sent: the service asked this account to wait (429); retry after ${left} s`, {
      status: 429,
      retryAfter: left,
    });
  }
  if (asked.code !== null) {
    // Looked at again: another message may have locked the node while this one waited.
    const checked = checkCode(access!, account.core.passes, asked.code, door.deviceId, account.clock.now());
    if (checked.kind === "locked") return lockedOutAlike(a, checked.denied);
    a.pass = checked.pass;
    // The pass names the guest and replaces the actor rule and the PIN.
    if (a.pass !== null) a.base.actor = `guest:${a.pass.guest}`;
    if (checked.kind === "refused") {
      await keepTries(a);
      return denial(checked.denied);
    }
  }
  let slot: CooldownSlot | null = null;
  let ticket: PassTicket | null = null;
  if (access) {
    const d = access.check({
      actor: a.base.actor,
      deviceId: door.deviceId,
      lockId: asked.lockId,
      pin: input.msgPin,
      now: account.clock.now(),
      byPass: a.pass !== null,
    });
    if (!d.allowed) {
      if (a.pass !== null) return denial(await costTry(a, d));
      // A wrong PIN is kept before it is answered: a restart after the answer has not forgotten it.
      await keepTries(a);
      return denial(d);
    }
    slot = d.slot;
    if (a.pass !== null) {
      ticket = account.core.passes.reserve(a.pass, door.deviceId);
      if (ticket === null) {
        slot.release();
        const why =
          passRefusal(a.pass, door.deviceId, account.clock.now(), a.access?.rules.timeZone, account.core.passes) ??
          "this pass has no use left";
        return denial(await costTry(a, refusedBy("pass", why)));
      }
    }
  }
  const record: AttemptRecord = {
    actor: a.base.actor,
    deviceId: door.deviceId,
    lockId: asked.lockId,
    door: door.label,
    msgid: input.msgid,
    ...(a.pass ? { pass: a.pass.id } : {}),
  };
  return { door, lockId: asked.lockId, slot, ticket, record };
}

/**
 * The door of a message as far as it is known without the service (for a message refused before
 * its door is resolved): a valid msg.deviceId (labelled from the cached list when it is there),
 * else, without msg.door, the node's stored door; a door name is not looked up.
 */
function doorKnownLocally(
  directory: DeviceDirectory,
  input: { msgDeviceId: unknown; msgDoor: unknown },
  configured: DoorIdentity | null,
): { deviceId: number | null; door: string | null } {
  if (input.msgDeviceId !== undefined) {
    if (!isDeviceId(input.msgDeviceId)) return { deviceId: null, door: null };
    const id = input.msgDeviceId;
    const device = directory.cached()?.devices.find((d) => d.id === id);
    return { deviceId: id, door: device ? directory.label(device) : `#${id}` };
  }
  if (input.msgDoor !== undefined || configured === null) return { deviceId: null, door: null };
  // The listed door when the stored id still has the stored name; else the door as it was stored.
  const device =
    configured.id === null
      ? undefined
      : directory
          .cached()
          ?.devices.find((d) => d.id === configured.id && (configured.name === null || d.name === configured.name));
  if (device) return { deviceId: device.id, door: directory.label(device) };
  const label = configured.name
    ? configured.location
      ? `${configured.location} / ${configured.name}`
      : configured.name
    : configured.id !== null
      ? `#${configured.id}`
      : null;
  return { deviceId: configured.id, door: label };
}
