/**
 * `door-unlock`: exactly one unlock command per accepted message, never repeated by the
 * node. Output 1: accepted. Output 2: every failure, with the contract's outcome word.
 * The procedure itself is src/unlock/unlock.ts; this file is Node-RED glue.
 *
 * Access rules (docs/access-rules.md#the-node-at-run-time): read once at deploy into one rule
 * state for this node instance (a redeploy starts a new one with no cooldowns; the wrong PINs and
 * the lockout are read back from the account's records: docs/access-rules.md#what-ends-a-lockout);
 * performUnlock applies them. msg.pin is read once and deleted from the message before
 * anything else happens to it, whatever the node's rules, so that no output, Catch node, log or
 * status ever carries it.
 */
import type { NodeAPI, Node, NodeDef, NodeMessageInFlow } from "node-red";
import { type AccessRulesConfig, type AccessState, parseAccessRules } from "../../src/unlock/access-rules.js";
import { LockoutKeeper, pinChanged } from "../../src/unlock/lockout-keeper.js";
import {
  AuditRecordLost,
  messageActor,
  nodeActorProblem,
  performUnlock,
  type NodeAccess,
  type UnlockInput,
  type UnlockResult,
} from "../../src/unlock/unlock.js";
import {
  FlowNodeBinding,
  MessageError,
  MessageFields,
  type NodeStatus,
  briefReason,
  clockTime,
  configuredDoor,
  describeThrown,
  endMessage,
} from "../common/node-runtime.js";
import { LockoutEvents, tellUnlock } from "./unlock-events.js";
import { serveGuestWords } from "./guest-words.js";
import { type EndLockoutNode, endNodeLockout, offerNodeLockouts } from "./end-lockout.js";
import { doorLabel } from "../../src/unlock/lockout-end.js";

interface UnlockDef extends NodeDef {
  account: string;
  deviceId: string | number;
  doorName: string;
  doorLocation: string;
  lockId: string | number;
  actor: string;
  rejectRetained: boolean;
  allowActors?: unknown;
  schedule?: unknown;
  timeZone?: unknown;
  cooldown?: unknown;
  /** The dialog's mark that a PIN was set: the flow file keeps it, never the PIN (docs/access-rules.md#a-copied-node-and-its-pin). */
  pinSet?: unknown;
  /** Opens for guest passes given as msg.pass (docs/passes.md#at-a-door-unlock). */
  acceptPasses?: unknown;
}

/** What the node's status and its refusals say when the mark is there and the PIN is not. */
const PIN_NOT_SET = "PIN not set: enter it again";

/** The credentials a rule needs and the mark that says so: true when a marked one is missing. */
function markedSecretMissing(config: UnlockDef, pin: unknown): boolean {
  return config.pinSet === true && (pin === undefined || pin === null || pin === "");
}

/** Reads the node's rules (the `pin` credential included); null when it has none and takes no pass. */
function readRules(config: UnlockDef, pin: unknown, acceptPasses: boolean): NodeAccess | null {
  if (markedSecretMissing(config, pin)) {
    // A copy, an import or an export: Node-RED carried the mark but not the PIN. Never open
    // without the rule the node was given.
    return {
      ok: false,
      message: `${PIN_NOT_SET}: this node had a PIN, which Node-RED does not copy, export or import; it refuses every message until a PIN is entered in its dialog and deployed`,
    };
  }
  const cfg: AccessRulesConfig = {
    allowActors: config.allowActors,
    schedule: config.schedule,
    timeZone: config.timeZone,
    cooldown: config.cooldown,
    pin,
  };
  const parsed = parseAccessRules(cfg);
  if (!parsed.ok) {
    return {
      ok: false,
      message: `${parsed.message}. This node refuses every message until its rules are corrected and deployed`,
    };
  }
  // A node that takes passes keeps a rule state without other rules: unknown codes lead to its lockout.
  if (!parsed.rules.active && !acceptPasses) return null;
  const state = parsed.rules.newState();
  // docs/passes.md#how-hard-a-code-is-to-guess: a guest's wrong codes at one door never lock another.
  if (acceptPasses) state.keepPerDoor();
  return { ok: true, state };
}

/**
 * Deletes a secret field (msg.pin, msg.pass) from the message; one it cannot delete (inherited,
 * or not configurable) is hidden behind an own `undefined`. false when it can still be read (a
 * frozen message, a property that cannot be deleted or overwritten): the message must then go
 * nowhere.
 */
function removeSecret(m: Record<string, unknown>, key: "pin" | "pass"): boolean {
  try {
    if (Object.prototype.hasOwnProperty.call(m, key)) delete m[key];
  } catch {
    /* not deletable: overwritten below if it can be */
  }
  try {
    if (m[key] === undefined) return true;
    m[key] = undefined;
    return m[key] === undefined;
  } catch {
    return false;
  }
}

export = function register(RED: NodeAPI): void {
  // docs/passes.md#the-guest-pages-languages: the guest page's words, in the guest's language.
  serveGuestWords(RED);
  function DoorUnlock(this: Node, config: UnlockDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    const acceptPasses = config.acceptPasses === true || config.acceptPasses === "true";
    const access = readRules(config, (node.credentials as { pin?: unknown } | undefined)?.pin, acceptPasses);
    const rules: AccessState | null = access?.ok ? access.state : null;
    if (access && !access.ok) node.error(`door-unlock: ${access.message}`); // never names the PIN
    /** The node's own state over whatever the binding shows: rules unreadable, a lockout, or "· rules". */
    const pinMissing = markedSecretMissing(config, (node.credentials as { pin?: unknown } | undefined)?.pin);
    const rulesWord =
      access === null
        ? ""
        : RED._(
            access.ok
              ? "door-unlock.status.rules"
              : pinMissing
                ? "door-unlock.status.pin-missing"
                : "door-unlock.status.rules-error",
          );
    // Whether a message needs msg.pin here: every status says so (docs/nodes.md#node-status), for a
    // panel that asks for the PIN from the first press.
    const pinRequired = config.pinSet === true || (access?.ok === true && access.state.rules.hasPin);
    const decorate = (status: NodeStatus): NodeStatus => {
      if (access === null) return { ...status, pinRequired };
      if (!access.ok) return { fill: "red", shape: "ring", text: rulesWord, pinRequired };
      // On the runtime's clock, as every other status time (docs/nodes.md#node-status); the
      // refusal's message names the rules' zone.
      const l = access.state.lockout(Date.now());
      if (l.locked) {
        const until = clockTime(l.until!).slice(0, 5);
        const what = access.state.perDoor ? "wrong tries at its doors" : "wrong PINs";
        return { fill: "red", shape: "dot", text: `locked: ${l.wrongPins} ${what}, until ${until}`, pinRequired };
      }
      // docs/passes.md#how-hard-a-code-is-to-guess: a door locked at a node kept per door.
      const doors = access.state.doorLockouts(Date.now());
      if (doors.length > 0) {
        const first = doors[0];
        const until = clockTime(first.until).slice(0, 5);
        const which = doors.length === 1 ? (labelOf(first.deviceId) ?? `#${first.deviceId}`) : `${doors.length} doors`;
        return { fill: "red", shape: "ring", text: `locked: ${which}, until ${until}`, pinRequired };
      }
      return { ...status, text: `${status.text ?? ""} · ${rulesWord}`, pinRequired };
    };
    const binding = new FlowNodeBinding(RED, node, config.account, decorate);
    // Said again once every node of the deploy exists: a Status node that watches this one and was
    // created after it hears pinRequired too (docs/nodes.md#node-status).
    setImmediate(() => {
      try {
        binding.refresh();
      } catch {
        /* closed meanwhile */
      }
    });
    // docs/access-rules.md#what-ends-a-lockout: wrong PINs and a lockout outlive a deploy and a
    // restart; a deploy that changes the PIN starts from none.
    // The PIN as deployed (the credential), whether or not the rest of the rules could be read: a
    // deploy with an unreadable rule and the same PIN is no change of PIN.
    const pinText = (node.credentials as { pin?: unknown } | undefined)?.pin;
    // A lockout follows wrong PINs, and unknown pass codes (docs/passes.md#at-a-door-unlock).
    const guarded = rules !== null && (rules.rules.hasPin || acceptPasses);
    const changed = pinChanged(node.id, typeof pinText === "string" && pinText !== "" ? pinText : null);
    const lockout = guarded
      ? new LockoutKeeper(rules, node.id, changed, Date.now, (m) => node.warn(`door-unlock: ${m}`))
      : null;
    const settings = {
      nodeId: node.id,
      door: configuredDoor(config),
      lockId: config.lockId ?? "",
      actor: typeof config.actor === "string" ? config.actor : "",
      rejectRetained: config.rejectRetained !== false,
      access,
      lockout,
      acceptPasses,
    };
    // Said at deploy; a message that would carry it is refused (docs/nodes.md#door-unlock).
    const actorProblem = nodeActorProblem(settings.actor);
    if (actorProblem) node.error(`door-unlock: ${actorProblem}`);
    /** The account's events, when the node has an account (docs/events.md). */
    const hub = () => {
      const got = binding.account();
      return "problem" in got ? null : got.account.core.events;
    };
    const nodeName = (typeof config.name === "string" && config.name.trim()) || `door-unlock ${node.id}`;
    /** A door's name from the account's cached device list (events, the sidebar). */
    const labelOf = (deviceId: number): string | null => {
      const got = binding.account();
      return "problem" in got ? null : doorLabel(got.account.directory, deviceId);
    };
    const lockoutEvents = guarded ? new LockoutEvents(rules, nodeName, hub, labelOf) : null;
    /** The status again when a lockout ends (off by itself otherwise until the next message). */
    let lockoutTimer: NodeJS.Timeout | null = null;
    /** Closed (a redeploy, a stop): no more timers nor events from this instance; the next one takes over. */
    let closed = false;
    const watchLockout = (): void => {
      if (closed) return;
      lockoutEvents?.check(Date.now());
      if (rules === null || lockoutTimer !== null) return;
      const now = Date.now();
      const l = rules.lockout(now);
      // The first lockout to end: the node's, or a door's (a node kept per door).
      const ends = [...(l.locked ? [l.until!] : []), ...rules.doorLockouts(now).map((d) => d.until)];
      if (ends.length === 0) return;
      lockoutTimer = setTimeout(
        () => {
          lockoutTimer = null;
          try {
            binding.refresh();
            watchLockout();
          } catch {
            /* closed meanwhile */
          }
        },
        Math.max(1000, Math.min(...ends) - now),
      );
      lockoutTimer.unref();
    };
    // Read at once, so that a lockout kept from before a restart is on the status before any message.
    if (lockout !== null) {
      const got = binding.account();
      if (!("problem" in got)) {
        void lockout.load(got.account.core.records).then(() => {
          if (closed) return; // redeployed while the records were read: the new instance tells it
          try {
            lockoutEvents?.known(Date.now());
            binding.refresh();
            watchLockout();
          } catch {
            /* the node closed meanwhile */
          }
        });
      }
    }
    // docs/access-rules.md#ending-a-lockout: the host ends a lockout from a flow or the sidebar.
    const ender: EndLockoutNode = {
      state: rules,
      keeper: lockout,
      settings,
      events: lockoutEvents,
      account: () => binding.account(),
      refresh: () => {
        if (lockoutTimer !== null) clearTimeout(lockoutTimer);
        lockoutTimer = null;
        binding.refresh();
        watchLockout();
      },
    };
    const withdraw =
      rules !== null && guarded
        ? offerNodeLockouts(ender, rules, { nodeId: node.id, name: nodeName, accountId: config.account }, labelOf)
        : () => undefined;
    node.on("close", () => {
      withdraw();
      closed = true;
      if (lockoutTimer !== null) clearTimeout(lockoutTimer);
      lockoutTimer = null;
    });

    /** A status shown in a later turn, off the door's path; one that cannot be shown is dropped (never thrown from a timer). */
    const later = (show: () => void): void => {
      setImmediate(() => {
        try {
          show();
        } catch {
          /* a status display is not the command's business */
        }
      });
    };

    node.on("input", (msg: NodeMessageInFlow, send, nodeRedDone) => {
      const done = (err?: Error) => endMessage(node, nodeRedDone, err);
      const m = msg as NodeMessageInFlow & Record<string, unknown>;
      // msg.pin: read once, then gone from the message before anything else happens to it.
      const fields = new MessageFields(m);
      const pin = fields.read("pin", false); // what a getter throws may hold the PIN: never quoted
      const passCode = fields.read("pass", false); // a guest's code, as secret as a PIN
      const stuck = !removeSecret(m, "pin") ? "pin" : !removeSecret(m, "pass") ? "pass" : null;
      if (stuck !== null) {
        // It would leave the node on an output, or to a Catch node with the message: the message
        // goes nowhere, and nothing is sent for it.
        try {
          node.error(
            `door-unlock: msg.${stuck} could not be removed from the message (a frozen message?): nothing was sent, and the message is not passed on so that the ${stuck === "pin" ? "PIN" : "pass code"} goes no further`,
          );
        } catch {
          /* nothing left to tell it with */
        }
        done();
        return;
      }
      const msgid = fields.read("_msgid");
      if (fields.read("endLockout") === true) {
        // docs/access-rules.md#ending-a-lockout: the host's flow; a guest's message (with a code or a PIN) never ends one.
        const ending = (async () => {
          const ask = {
            msgDeviceId: fields.read("deviceId"),
            msgDoor: fields.read("door"),
            msgActor: fields.read("actor"),
            msgid: typeof msgid === "string" ? msgid : null,
          };
          const answer =
            fields.unreadable !== undefined
              ? null
              : await endNodeLockout(ender, ask, pin !== undefined || passCode !== undefined);
          m.payload = answer ?? {
            outcome: "invalid-input",
            status: null,
            by: "",
            deviceId: null,
            door: null,
            ended: [],
            at: new Date().toISOString(),
            message: fields.unreadable,
            mayHaveOpened: false,
          };
          send([null, m]);
          done();
        })();
        binding.track(ending).catch((e: Error) => done(e));
        return;
      }
      const work = (async () => {
        const got = binding.account();
        let sent = false;
        let undelivered: Error | undefined;
        let recordLost: string | undefined;
        // Output as soon as the outcome is known; done() once its audit record is on disk.
        const emit = (result: UnlockResult) => {
          if (sent) return;
          sent = true;
          // Read before the message goes: the next node may change msg.payload (this object).
          const { outcome, status, at } = result;
          // denied: the rule word; an input refused before anything was sent: why, in a few words
          // ('no door named "X"').
          const reason =
            outcome === "denied"
              ? (result.reason ?? null)
              : outcome === "invalid-input" && typeof result.message === "string"
                ? briefReason(result.message)
                : null;
          let step = "set on the message";
          try {
            m.payload = result;
            step = "sent to every node wired to the output";
            send(result.outcome === "accepted" ? [m, null] : [null, m]);
          } catch (e) {
            // The message cannot carry the outcome (a read-only msg.payload, a frozen message), or
            // Node-RED could not copy it for a second wire (the first may have it): said on done()
            // once the audit record is written; the outcome stands and the status shows it.
            undelivered = new MessageError(
              `door-unlock: the outcome ${result.outcome}${result.outcome === "accepted" ? " (the door was unlocked)" : ""} could not be ${step}: ${describeThrown(e)}`,
            );
          }
          // The status once the next node has the message (Node-RED delivers it in a setImmediate
          // queued by send()).
          later(() => {
            if (!("problem" in got))
              tellUnlock(got.account.core.events, result, typeof msgid === "string" ? msgid : null);
            const time = clockTime(Date.parse(at));
            if (outcome === "accepted") {
              binding.setResult({ fill: "green", shape: "dot", text: RED._("door-unlock.status.accepted", { time }) });
            } else if (outcome === "denied") {
              // The rule word only: the message's own text may name an actor.
              binding.setResult({
                fill: "red",
                shape: "ring",
                text: RED._("door-unlock.status.denied", { reason: String(reason), time }),
              });
              watchLockout();
            } else if (status !== null) {
              binding.setResult({
                fill: "red",
                shape: "ring",
                text: RED._("door-unlock.status.failed", { outcome, status, time }),
              });
            } else if (reason !== null) {
              binding.setResult({
                fill: "red",
                shape: "ring",
                text: RED._("door-unlock.status.failed-reason", { outcome, reason, time }),
              });
            } else {
              binding.setResult({
                fill: "red",
                shape: "ring",
                text: RED._("door-unlock.status.failed-nostatus", { outcome, time }),
              });
            }
          });
        };
        // The message's fields, read once (node-runtime.ts MessageFields): one that cannot be read is
        // bad input, answered invalid-input by performUnlock, and nothing is sent.
        const input: UnlockInput = {
          msgDeviceId: fields.read("deviceId"),
          msgDoor: fields.read("door"),
          msgLockId: fields.read("lockId"),
          msgActor: fields.read("actor"),
          msgRetain: fields.read("retain"),
          msgid: typeof msgid === "string" ? msgid : null,
          msgPin: pin,
          msgPass: passCode,
        };
        if (fields.unreadable !== undefined) input.unreadable = fields.unreadable;
        if ("problem" in got && access !== null && !access.ok) {
          // Rules that cannot be read refuse every message, also without an account (nor its audit log).
          emit({
            outcome: "denied",
            status: null,
            reason: "configuration",
            deviceId: null,
            lockId: null,
            door: null,
            actor: messageActor(input.msgActor, settings),
            at: new Date().toISOString(),
            message: access.message,
            mayHaveOpened: false,
          });
        } else if ("problem" in got) {
          emit({
            outcome: "session-halted",
            status: null,
            deviceId: null,
            lockId: null,
            door: null,
            actor: messageActor(input.msgActor, settings),
            at: new Date().toISOString(),
            message: got.problem,
            mayHaveOpened: false,
          });
        } else {
          try {
            emit(
              await performUnlock(got.account, input, settings, emit, () =>
                // "sending" once the command is on its way (its attempt record on disk), in a later
                // turn (off the door's path), and never over an outcome already known: a message that
                // sends nothing never shows it.
                later(() => {
                  if (!sent)
                    binding.setResult({ fill: "blue", shape: "dot", text: RED._("door-unlock.status.sending") });
                }),
              ),
            );
          } catch (e) {
            if (!(e instanceof AuditRecordLost)) throw e;
            // The outcome went out; its audit record did not make it to disk: said on done().
            recordLost = e.message;
          }
        }
        // Both can happen to one message (a frozen message whose record is lost too): both are said.
        if (recordLost === undefined) done(undelivered);
        else
          done(
            new MessageError(undelivered ? `${undelivered.message}; and ${recordLost}` : `door-unlock: ${recordLost}`),
          );
      })();
      binding.track(work).catch((e: Error) => done(e));
    });
  }
  // The PIN is a password credential: kept in the credentials file, never in the flow or an export,
  // and never sent back to the editor (docs/access-rules.md#pin-and-lockout).
  RED.nodes.registerType("door-unlock", DoorUnlock as never, { credentials: { pin: { type: "password" } } });
};
