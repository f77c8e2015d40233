/**
 * `door-unlock`: exactly one unlock command per accepted message, never repeated by the
 * node. Output 1: accepted. Output 2: every failure, with the contract's outcome word.
 * The procedure itself is src/unlock/unlock.ts; this file is Node-RED glue.
 */
import type { NodeAPI, Node, NodeDef, NodeMessageInFlow } from "node-red";
import { performUnlock, type UnlockResult } from "../unlock/unlock.js";
import { FlowNodeBinding, clockTime, configuredDoor } from "./shared.js";

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

    node.on("input", (msg: NodeMessageInFlow, send, done) => {
      const m = msg as NodeMessageInFlow & Record<string, unknown>;
      const work = (async () => {
        const got = binding.account();
        let sent = false;
        // Output as soon as the outcome is known; done() once its audit record is on disk.
        const emit = (result: UnlockResult) => {
          if (sent) return;
          sent = true;
          const time = clockTime(Date.parse(result.at));
          if (result.outcome === "accepted") {
            binding.setResult({ fill: "green", shape: "dot", text: RED._("door-unlock.status.accepted", { time }) });
          } else if (result.status !== null) {
            binding.setResult({ fill: "red", shape: "ring", text: RED._("door-unlock.status.failed", { outcome: result.outcome, status: result.status, time }) });
          } else {
            binding.setResult({ fill: "red", shape: "ring", text: RED._("door-unlock.status.failed-nostatus", { outcome: result.outcome, time }) });
          }
          m.payload = result;
          send(result.outcome === "accepted" ? [m, null] : [null, m]);
        };
        if ("problem" in got) {
          emit({
            outcome: "session-halted", status: null, deviceId: null, lockId: null, door: null,
            actor: settings.actor || `node-red:${node.id}`, at: new Date().toISOString(), message: got.problem, mayHaveOpened: false,
          });
        } else {
          // "sending" is shown once the unlock is under way (its audit record being written), not
          // before, and never over an outcome already known (a message that sends nothing never
          // shows it). Meant to take the status round trip off the door's path; the bench could
          // not tell the difference (README, Performance).
          setImmediate(() => {
            if (!sent) binding.setResult({ fill: "blue", shape: "dot", text: RED._("door-unlock.status.sending") });
          });
          emit(
            await performUnlock(
              got.account,
              { msgDeviceId: m.deviceId, msgDoor: m.door, msgLockId: m.lockId, msgActor: m.actor, msgRetain: m.retain, msgid: typeof m._msgid === "string" ? m._msgid : null },
              settings,
              emit,
            ),
          );
        }
        done();
      })();
      binding.track(work).catch((e: Error) => done(e));
    });
  }
  RED.nodes.registerType("door-unlock", DoorUnlock as never);
};
