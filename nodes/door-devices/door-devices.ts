/**
 * `door-devices`: the account's device list (default) or location list, from the 24 h
 * cache unless msg.refresh === true. Failures go to done(err) with msg.outcome and
 * msg.statusCode set.
 */
import type { NodeAPI, Node, NodeDef, NodeMessageInFlow } from "node-red";
import { classifyFailure } from "../../src/unlock/outcome.js";
import {
  FlowNodeBinding,
  MessageFields,
  clearOutcomeFields,
  clockTime,
  endMessage,
  failMessage,
} from "../common/node-runtime.js";

interface DevicesDef extends NodeDef {
  account: string;
  list: string;
}

export = function register(RED: NodeAPI): void {
  function DoorDevices(this: Node, config: DevicesDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    const binding = new FlowNodeBinding(RED, node, config.account);
    const kind = config.list === "locations" ? "locations" : "devices";

    node.on("input", (msg: NodeMessageInFlow, send, nodeRedDone) => {
      const done = (err?: Error) => endMessage(node, nodeRedDone, err);
      const m = msg as NodeMessageInFlow & Record<string, unknown>;
      const work = (async () => {
        const got = binding.account();
        if ("problem" in got) {
          failMessage(RED, "door-devices", binding, m, done, {
            outcome: "session-halted",
            status: null,
            message: `door-devices: ${got.problem}`,
          });
          return;
        }
        const fields = new MessageFields(m);
        const force = fields.read("refresh") === true;
        if (fields.unreadable !== undefined) {
          failMessage(RED, "door-devices", binding, m, done, {
            outcome: "invalid-input",
            status: null,
            message: `door-devices: ${fields.unreadable}`,
          });
          return;
        }
        try {
          const list = kind === "locations" ? await got.account.locations(force) : await got.account.devices(force);
          // Each message gets its own copy (docs/doors.md#resolution-rules): a flow that sorts or
          // edits msg.payload changes nothing else — not the account's cache, not the picker,
          // not how door names resolve.
          clearOutcomeFields(m);
          m.payload = structuredClone(list);
          binding.setResult({
            fill: "green",
            shape: "dot",
            text: RED._("door-devices.status.ok", {
              count: list.length,
              kind: RED._(`door-devices.status.${kind}`),
              time: clockTime(Date.now()),
            }),
          });
          send(m);
          done();
        } catch (e) {
          const c = classifyFailure(e, false);
          failMessage(RED, "door-devices", binding, m, done, {
            ...c,
            message: `door-devices: reading the ${kind} failed: ${c.message}`,
          });
        }
      })();
      binding.track(work).catch((e: Error) => done(e));
    });
  }
  RED.nodes.registerType("door-devices", DoorDevices as never);
};
