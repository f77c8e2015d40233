/**
 * One message at a door-unlock node, as the phases of its unlock (src/unlock/unlock.ts) share it:
 * what came in (UnlockInput), the node's settings, the outcome it ends with (UnlockResult), and
 * the attempt in between (what is known so far of its door, its actor and its pass). A phase that
 * ends the message returns a Refusal (nothing sent); the closing record is written from it.
 */
import type { GuestRefusal } from "./guest-refusal.js";
import type { Account } from "../account/account.js";
import type { DoorIdentity } from "../doors/directory.js";
import { describeValue } from "../doors/select.js";
import type { Pass } from "../passes/pass.js";
import type { AccessState, Denied, DenyReason } from "./access-rules.js";
import type { LockoutKeeper } from "./lockout-keeper.js";
import { MAX_ACTOR, nodeActorProblem } from "./node-actor.js";
import type { Outcome } from "./outcome.js";

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

/** One message's unlock while it goes through its phases. */
export interface Attempt {
  readonly account: Account;
  readonly input: UnlockInput;
  readonly node: UnlockNodeSettings;
  /** The actor the message names (msg.actor, else the node's): a pass replaces it in `base`. */
  readonly actor: string;
  /** What the outcome and the records say of the door and the actor, as far as known. */
  readonly base: Pick<UnlockResult, "deviceId" | "lockId" | "door" | "actor" | "pass">;
  /** The guest pass its code found, once looked up. */
  pass: Pass | null;
  /** The node's rule state (null: no rules), and the keeper of its wrong tries. */
  readonly access: AccessState | null;
  readonly keeper: LockoutKeeper | null;
}

export function newAttempt(account: Account, input: UnlockInput, node: UnlockNodeSettings): Attempt {
  const actor = messageActor(input.msgActor, node);
  const access = node.access?.ok ? node.access.state : null;
  return {
    account,
    input,
    node,
    actor,
    base: { deviceId: null, lockId: null, door: null, actor },
    pass: null,
    access,
    keeper: access ? (node.lockout ?? null) : null,
  };
}

/** A message ended before anything was sent: its outcome, its words, and the fields it adds. */
export interface Refusal {
  readonly kind: "refused";
  readonly outcome: Outcome;
  readonly message: string;
  readonly extra: Partial<UnlockResult>;
}

export function refuse(outcome: Outcome, message: string, extra: Partial<UnlockResult> = {}): Refusal {
  return { kind: "refused", outcome, message, extra };
}

/** An access rule refused the message: output 2, nothing sent (docs/access-rules.md#the-node-at-run-time). */
export function denial(d: Denied): Refusal {
  return refuse(
    "denied",
    d.message,
    d.retryAfter !== undefined ? { reason: d.reason, retryAfter: d.retryAfter } : { reason: d.reason },
  );
}

export function isRefusal<T>(x: T | Refusal): x is Refusal {
  return (x as Refusal | null)?.kind === "refused";
}

/** Writes the node's wrong tries when one was counted, before the message is answered. */
export async function keepTries(a: Attempt): Promise<void> {
  if (a.keeper !== null) await a.keeper.saveIfCounted(a.account.core.records);
}

/**
 * A message whose code found a pass, refused: it told the sender the code is real, so it costs a
 * try (docs/passes.md#how-hard-a-code-is-to-guess), kept before it is answered.
 */
export async function costTry(a: Attempt, d: Denied): Promise<Denied> {
  if (a.pass === null || a.access === null) return d;
  const counted = a.access.costTry(a.account.clock.now(), d, a.base.deviceId);
  await keepTries(a);
  return counted;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Why msg.actor cannot be used (null: it can). */
export function checkActor(value: unknown): string | null {
  if (typeof value !== "string" || value.trim() === "")
    return `msg.actor must be a non-empty string, got ${describeValue(value)}`;
  if (value.length > MAX_ACTOR) return `msg.actor is longer than ${MAX_ACTOR} characters`;
  if (CONTROL.test(value)) return "msg.actor contains control characters";
  return null;
}

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
