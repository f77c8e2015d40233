/**
 * `door-unlock`: exactly one unlock command per accepted message, never repeated by the
 * node. Output 1: accepted. Output 2: every failure, with the contract's outcome word.
 * The procedure itself is src/unlock/unlock.ts; this file is Node-RED glue.
 */
import type { NodeAPI, Node, NodeDef, NodeMessageInFlow } from "node-red";
import { AuditRecordLost, performUnlock, type UnlockInput, type UnlockResult } from "../unlock/unlock.js";
import { FlowNodeBinding, MessageFields, briefReason, clockTime, configuredDoor, describeThrown, endMessage } from "./shared.js";

interface UnlockDef extends NodeDef {
  account: string;
  deviceId: string | number;
  doorName: string;
  doorLocation: string;
  lockId: string | number;
  actor: string;
  rejectRetained: boolean;
}

export = function register(RED: NodeAPI): void {
  function DoorUnlock(this: Node, config: UnlockDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    const binding = new FlowNodeBinding(RED, node, config.account);
    const settings = {
      nodeId: node.id,
      door: configuredDoor(config),
      lockId: config.lockId ?? "",
      actor: typeof config.actor === "string" ? config.actor : "",
      rejectRetained: config.rejectRetained !== false,
    };

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
          // An input refused before anything was sent says why in a few words ('no door named "X"').
          const reason = outcome === "invalid-input" && typeof result.message === "string" ? briefReason(result.message) : null;
          let step = "set on the message";
          try {
            m.payload = result;
            step = "sent to every node wired to the output";
            send(result.outcome === "accepted" ? [m, null] : [null, m]);
          } catch (e) {
            // The message cannot carry the outcome (a read-only msg.payload, a frozen message), or
            // Node-RED could not copy it for a second wire (the first may have it): said on done()
            // once the audit record is written; the outcome stands and the status shows it.
            undelivered = new Error(
              `door-unlock: the outcome ${result.outcome}${result.outcome === "accepted" ? " (the door was unlocked)" : ""} could not be ${step}: ${describeThrown(e)}`,
            );
          }
          // The status once the next node has the message (Node-RED delivers it in a setImmediate
          // queued by send()).
          later(() => {
            const time = clockTime(Date.parse(at));
            if (outcome === "accepted") {
              binding.setResult({ fill: "green", shape: "dot", text: RED._("door-unlock.status.accepted", { time }) });
            } else if (status !== null) {
              binding.setResult({ fill: "red", shape: "ring", text: RED._("door-unlock.status.failed", { outcome, status, time }) });
            } else if (reason !== null) {
              binding.setResult({ fill: "red", shape: "ring", text: RED._("door-unlock.status.failed-reason", { outcome, reason, time }) });
            } else {
              binding.setResult({ fill: "red", shape: "ring", text: RED._("door-unlock.status.failed-nostatus", { outcome, time }) });
            }
          });
        };
        // The message's fields, read once (shared.ts MessageFields): one that cannot be read is
        // bad input, answered invalid-input by performUnlock, and nothing is sent.
        const fields = new MessageFields(m);
        const msgid = fields.read("_msgid");
        const input: UnlockInput = {
          msgDeviceId: fields.read("deviceId"), msgDoor: fields.read("door"), msgLockId: fields.read("lockId"), msgActor: fields.read("actor"), msgRetain: fields.read("retain"),
          msgid: typeof msgid === "string" ? msgid : null,
        };
        if (fields.unreadable !== undefined) input.unreadable = fields.unreadable;
        if ("problem" in got) {
          emit({
            outcome: "session-halted", status: null, deviceId: null, lockId: null, door: null,
            actor: settings.actor || `node-red:${node.id}`, at: new Date().toISOString(), message: got.problem, mayHaveOpened: false,
          });
        } else {
          try {
            emit(
              await performUnlock(got.account, input, settings, emit, () =>
                // "sending" once the command is on its way (its attempt record on disk), in a later
                // turn (off the door's path), and never over an outcome already known: a message that
                // sends nothing never shows it.
                later(() => {
                  if (!sent) binding.setResult({ fill: "blue", shape: "dot", text: RED._("door-unlock.status.sending") });
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
        else done(new Error(undelivered ? `${undelivered.message}; and ${recordLost}` : `door-unlock: ${recordLost}`));
      })();
      binding.track(work).catch((e: Error) => done(e));
    });
  }
  RED.nodes.registerType("door-unlock", DoorUnlock as never);
};
