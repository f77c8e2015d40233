/**
 * What the door-pass node (door-pass.ts) shares between its messages, its booking calendar
 * (calendar-node.ts) and the sidebar: a pass as a flow is told of it, whether the node's output
 * reaches a node (docs/passes.md#no-code-goes-nowhere), whether a closing node was deleted
 * (docs/passes.md#deleting-a-calendar-node), and the node's own passes. The doors a calendar's
 * passes open are read in src/passes/calendar-settings.ts (the dialog reads them too). The doors of an issue are resolved in resolve-doors.ts.
 */
import type { Node, NodeAPI } from "node-red";
import { type Pass, type PassView, hoursOf } from "../../src/passes/pass.js";
import type { PassBook } from "../../src/passes/pass-book.js";
import { type FlowNodeBinding, describeThrown } from "../common/node-runtime.js";

/** What a deployed door-pass node offers the sidebar (node.doorPass): its New code, on its own output. */
export interface PassNodeHooks {
  readonly accountId: string;
  wired(): boolean;
  reissueFromEditor(passId: string): Promise<"reissued" | "not-found" | "not-wired">;
}

/**
 * The door-pass nodes running inside a subflow instance, by their run-time id (`<instance
 * id>-<id in the subflow>`), with their name: Node-RED's getNode does not find them, and no
 * flow lists that id, so the sidebar looks them up here (docs/passes.md#in-the-sidebar).
 */
export const subflowPassNodes = new Map<string, { hooks: PassNodeHooks; name: string }>();

/** What a flow is told of a pass (never its code but in `issued`). */
export function answerOf(action: string, p: Pass, code?: string): Record<string, unknown> {
  return {
    action,
    id: p.id,
    ...(code !== undefined ? { code } : {}),
    guest: p.guest,
    doors: p.doors,
    from: p.from,
    until: p.until,
    uses: p.uses,
    ref: p.ref,
    // A calendar's pass: what the feed told of the booking (docs/passes.md#blocked-time-and-placeholder-names).
    ...(p.booking !== undefined ? { booking: { ...p.booking } } : {}),
    // Weekly hours, when it has them (docs/passes.md#issue).
    ...hoursOf(p),
  };
}

/**
 * Whether the node's output is wired to a node that runs (a wire to a disabled node, or to none,
 * reaches nobody): a calendar's code must go somewhere (docs/passes.md#no-code-goes-nowhere).
 */
export function outputWired(RED: NodeAPI, node: Node): boolean {
  const wires = (node as unknown as { wires?: unknown }).wires;
  return (
    Array.isArray(wires) &&
    wires.some((w) => Array.isArray(w) && w.some((id) => typeof id === "string" && RED.nodes.getNode(id) !== null))
  );
}

/**
 * Whether a node whose close handler got `removed` was deleted: Node-RED passes `removed` also when
 * the node or its tab is disabled; by then its flows hold the new configuration, where a disabled
 * node is still listed and a deleted one is not (docs/passes.md#deleting-a-calendar-node).
 */
export function deletedFromFlows(RED: NodeAPI, id: string): boolean {
  let found = false;
  RED.nodes.eachNode((n: { id: string }) => {
    if (n.id === id) found = true;
  });
  return !found;
}

/** Whether node `id` of the deployed flows lies inside a subflow's definition (false: on a tab, or gone). */
function inSubflow(RED: NodeAPI, id: string): boolean {
  const subflows = new Set<string>();
  let z: unknown;
  RED.nodes.eachNode((n: { id: string; type?: unknown; z?: unknown }) => {
    if (n.type === "subflow") subflows.add(n.id);
    if (n.id === id) z = n.z;
  });
  return typeof z === "string" && subflows.has(z);
}

/**
 * Whether a closing node was deleted (docs/passes.md#deleting-a-calendar-node). A node on a flow
 * tab: `removed` from Node-RED and gone from the deployed flows, or moved into a subflow (the
 * editor's "Selection to Subflow" keeps its id; the instance's node is another, with passes of its
 * own). A node inside a subflow instance, which Node-RED closes without `removed` whether the
 * instance is redeployed or deleted: its node in the subflow (`_alias`) gone or moved out of it,
 * or every instance holding it gone (its id is `<instance id>-<its id in the subflow>`).
 */
export function nodeDeleted(RED: NodeAPI, node: Node, removed: unknown): boolean {
  const alias = (node as unknown as { _alias?: unknown })._alias;
  if (typeof alias !== "string" || alias === "")
    return (removed === true && deletedFromFlows(RED, node.id)) || inSubflow(RED, node.id);
  if (!inSubflow(RED, alias)) return true;
  let held = false;
  RED.nodes.eachNode((n: { id: string; type?: unknown }) => {
    if (typeof n.type === "string" && n.type.startsWith("subflow:") && node.id.startsWith(`${n.id}-`)) held = true;
  });
  return !held;
}

/** The passes this door-pass node made (its calendar's, and a flow's issues through it). */
export function isOwn(p: PassView, nodeId: string): boolean {
  return p.node === nodeId;
}

/**
 * Revokes the calendar passes node `source` made that are not revoked (docs/passes.md#deleting-a-calendar-node):
 * the book's `revokeAtOnce` at a time, so the file book writes its file once for many (one write
 * per revocation took 17 s for 2,000 passes, and the deploy's close waits 10 s at most) and the
 * Redis book is not asked to read back thousands of changes at once. `revoked`: those revoked,
 * each once; `failed`: the errors of those that were not.
 */
export async function revokeCalendarPasses(
  book: PassBook,
  source: string,
): Promise<{ revoked: Pass[]; failed: unknown[] }> {
  // Numbered as a read of its calendar first: a read of it under way (being applied) writes nothing
  // more, so it issues no pass after these are listed (docs/passes.md#deleting-a-calendar-node).
  await book.readStamp(source);
  const mine = (await book.fromSource(source)).filter((p) => p.revoked === null);
  const revoked: Pass[] = [];
  const failed: unknown[] = [];
  const atOnce = Math.max(1, book.revokeAtOnce);
  for (let i = 0; i < mine.length; i += atOnce) {
    const slice = mine.slice(i, i + atOnce).map((p) =>
      book.revoke({ id: p.id, byCalendar: true }).then(
        (ok) => ({ ok }),
        (error: unknown) => ({ error }),
      ),
    );
    for (const r of await Promise.all(slice)) {
      if ("ok" in r) revoked.push(...r.ok);
      else failed.push(r.error);
    }
  }
  return { revoked, failed };
}

/**
 * The id of the door-pass node a turnover pass names (docs/passes.md#between-guests-the-turnover-window):
 * `given` is its id or its name; it must be deployed, enabled, on account `accountId`, with a
 * booking calendar. Anything else is an input error naming the field; a name two such nodes have is
 * refused, never guessed.
 */
export function resolveTurnover(RED: NodeAPI, accountId: string, given: string): string | { problem: string } {
  const hits: string[] = [];
  let other = "";
  RED.nodes.eachNode((def) => {
    const n = def as unknown as Record<string, unknown>;
    if (n.type !== "door-pass" || (n.id !== given && n.name !== given)) return;
    const calendar = typeof n.calendarUrl === "string" && n.calendarUrl.trim() !== "";
    if (n.d === true) other = "is disabled";
    else if (n.account !== accountId) other = "is on another account";
    else if (!calendar) other = "has no booking calendar (calendarUrl)";
    else hits.push(String(n.id));
  });
  const named = JSON.stringify(given);
  if (hits.length === 1) return hits[0];
  if (hits.length > 1) return { problem: `turnover: ${named} names ${hits.length} door-pass nodes: give its id` };
  if (other !== "") return { problem: `turnover: the door-pass node ${named} ${other}` };
  return { problem: `turnover: no door-pass node with a booking calendar has the id or name ${named}` };
}

/** A node inside a subflow instance offers its hooks to the sidebar by its run-time id, until it closes. */
export function offerInSubflow(node: Node, hooks: PassNodeHooks): void {
  if (typeof (node as unknown as { _alias?: unknown })._alias !== "string") return;
  subflowPassNodes.set(node.id, { hooks, name: node.name ?? "" });
  node.on("close", () => {
    if (subflowPassNodes.get(node.id)?.hooks === hooks) subflowPassNodes.delete(node.id);
  });
}

/**
 * At the deploy that deletes the node (nodeDeleted), the calendar passes it made are revoked, each
 * told as `pass/revoked` (docs/passes.md#deleting-a-calendar-node); after a read of it under way
 * (book.serially), so a pass that read is issuing is revoked too. Node-RED waits at most 10 s.
 */
export function revokeWhenDeleted(RED: NodeAPI, node: Node, binding: FlowNodeBinding): void {
  node.on("close", (removed: boolean, closed: () => void) => {
    if (!nodeDeleted(RED, node, removed)) return closed();
    const got = binding.account();
    if ("problem" in got) return closed();
    const account = got.account;
    let done = false;
    const finish = () => {
      if (!done) closed();
      done = true;
    };
    const guard = setTimeout(finish, 10_000);
    account.core.passes
      .serially(node.id, () => revokeCalendarPasses(account.core.passes, node.id))
      .then(({ revoked, failed }) => {
        if (failed.length > 0)
          node.warn(
            `door-pass: ${failed.length} of the deleted node's passes could not be revoked: ${describeThrown(failed[0])}`,
          );
        for (const p of revoked)
          account.core.events.emit(
            "pass",
            "revoked",
            `the pass of ${p.guest} was revoked: its door-pass node was deleted`,
            {
              id: p.id,
              guest: p.guest,
              ref: p.ref,
            },
          );
      })
      .catch((e: unknown) =>
        node.warn(`door-pass: the deleted node's passes could not be revoked: ${describeThrown(e)}`),
      )
      .finally(() => {
        clearTimeout(guard);
        finish();
      });
  });
}
