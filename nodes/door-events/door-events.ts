/**
 * `door-events`: what an operator is told, as messages (docs/events.md). No input, one output.
 * It listens to its account's events (src/account/events.ts: one hub per account, however many
 * config-node copies or cores) for the kinds it was given and sends one message per event:
 * msg.topic "<kind>/<event>", msg.payload { kind, event, at, account, message, ... }.
 * It sends nothing to the service and costs an account's unlock path nothing it does not ask for.
 */
import type { NodeAPI, Node, NodeDef } from "node-red";
import { type AccountEvent, type EventKind, accountEvents, eventKinds } from "../../src/account/events.js";
import { type DoorAccountNode, clockTime, fitStatus } from "../common/node-runtime.js";

interface EventsDef extends NodeDef {
  account: string;
  kinds?: unknown;
}

/** The account config node as door-events reads it: its key names the account's events. */
type EventsAccountNode = DoorAccountNode & { name?: string };

export = function register(RED: NodeAPI): void {
  function DoorEvents(this: Node, config: EventsDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    const kinds: EventKind[] = eventKinds(config.kinds);
    const found = config.account ? (RED.nodes.getNode(config.account) as unknown as EventsAccountNode | null) : null;
    const account = found && found.type === "door-account" ? found : null;
    const key = account?.eventsKey ?? null;
    if (!account || !key) {
      node.status({
        fill: "red",
        shape: "ring",
        text: RED._(account ? "door-events.status.account-problem" : "door-events.status.no-account"),
      });
      if (account) node.warn(`door-events: ${account.problem ?? "the door-account is not usable"}; no events come`);
      return;
    }
    // The account node's one label (its name, else "door account <host>": docs/nodes.md#door-account).
    const label = account.name ?? "door account";
    let closed = false;
    let count = 0;
    node.status({ fill: "grey", shape: "dot", text: RED._("door-events.status.listening") });
    const send = (e: AccountEvent): void => {
      if (closed) return;
      // A copy per node: what one flow does to its message is not another's.
      const payload: Record<string, unknown> = { ...e, account: label, message: `${label}: ${e.message}` };
      if (Array.isArray(e.differences)) payload.differences = [...(e.differences as string[])];
      node.send({ topic: `${e.kind}/${e.event}`, payload });
      count++;
      const bad =
        e.event === "halted" || e.event === "offline" || e.event === "unreachable" || e.event === "locked-out";
      node.status(
        fitStatus({
          fill: bad ? "red" : e.kind === "unlock" || e.event === "ready" || e.event === "online" ? "green" : "yellow",
          shape: "dot",
          text: RED._("door-events.status.last", {
            topic: `${e.kind}/${e.event}`,
            time: clockTime(Date.parse(e.at)),
            count,
          }),
        }),
      );
    };
    const unsubscribe = accountEvents(key).subscribe(kinds, send);
    node.on("close", () => {
      closed = true;
      unsubscribe();
    });
  }
  RED.nodes.registerType("door-events", DoorEvents as never);
};
