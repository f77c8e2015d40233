/**
 * `door-status`: reads one device (GET /api/device/{id}, idempotent, retried with the
 * spec's back-off). Failures go to done(err) with msg.outcome and msg.statusCode set, so a
 * Catch node can branch on them.
 */
import type { NodeAPI, Node, NodeDef, NodeMessageInFlow } from "node-red";
import { selectDoor } from "../../src/doors/select.js";
import { classifyFailure } from "../../src/unlock/outcome.js";
import {
  FlowNodeBinding,
  MessageError,
  MessageFields,
  clockTime,
  configuredDoor,
  describeThrown,
  clearOutcomeFields,
  failMessage,
  endMessage,
} from "../common/node-runtime.js";

interface StatusDef extends NodeDef {
  account: string;
  deviceId: string | number;
  doorName: string;
  doorLocation: string;
}

export = function register(RED: NodeAPI): void {
  function DoorStatus(this: Node, config: StatusDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    const binding = new FlowNodeBinding(RED, node, config.account);
    const door = configuredDoor(config);

    node.on("input", (msg: NodeMessageInFlow, send, nodeRedDone) => {
      const done = (err?: Error) => endMessage(node, nodeRedDone, err);
      const m = msg as NodeMessageInFlow & Record<string, unknown>;
      const fail = (outcome: string, message: string, status: number | null, retryAfter: number | null = null) =>
        failMessage(RED, "door-status", binding, m, done, { outcome, status, message, retryAfter });
      const work = (async () => {
        const got = binding.account();
        if ("problem" in got) return fail("session-halted", got.problem, null);
        const account = got.account;
        const fields = new MessageFields(m);
        const msgDeviceId = fields.read("deviceId");
        const msgDoor = fields.read("door");
        if (fields.unreadable !== undefined) return fail("invalid-input", `door-status: ${fields.unreadable}`, null);
        let deviceId: number;
        try {
          const sel = await selectDoor(account.directory, { msgDeviceId, msgDoor, configured: door });
          if (!sel.ok) return fail("invalid-input", sel.message, null);
          deviceId = sel.deviceId;
        } catch (e) {
          const c = classifyFailure(e, false);
          return fail(c.outcome, `door-status: the door could not be resolved: ${c.message}`, c.status, c.retryAfter);
        }
        binding.setResult({ fill: "blue", shape: "dot", text: RED._("door-status.status.reading") });
        let device: Awaited<ReturnType<typeof account.getDevice>>;
        try {
          device = await account.getDevice(deviceId);
        } catch (e) {
          const c = classifyFailure(e, false);
          if (c.outcome === "not-found")
            void account.directory
              .refreshAfterNotFound({ id: deviceId, name: null, location: null })
              .catch(() => undefined);
          try {
            m.deviceId = deviceId;
          } catch {
            /* a message that cannot take it still gets its outcome and error (failMessage) */
          }
          return fail(c.outcome, `door-status: ${c.message}`, c.status, c.retryAfter);
        }
        const state =
          device.online === true
            ? RED._("door-status.status.online")
            : device.online === false
              ? RED._("door-status.status.offline")
              : RED._("door-status.status.unknown");
        binding.setResult({
          fill: device.online === false ? "yellow" : "green",
          shape: "dot",
          text: RED._("door-status.status.ok", { state, time: clockTime(Date.now()) }),
        });
        try {
          clearOutcomeFields(m);
          m.payload = device;
          m.deviceId = device.id;
          send(m);
        } catch (e) {
          // The door was read; the message cannot carry it (frozen, a setter that throws, a field
          // Node-RED cannot copy for a second wire).
          return done(
            new MessageError(
              `door-status: door #${device.id} was read (${state}) but the message could not carry it or be sent to every wire: ${describeThrown(e)}`,
            ),
          );
        }
        done();
      })();
      binding.track(work).catch((e: Error) => done(e));
    });
  }
  RED.nodes.registerType("door-status", DoorStatus as never);
};
