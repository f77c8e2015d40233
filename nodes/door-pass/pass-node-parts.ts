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

/** What a deployed door-pass node offers the sidebar (node.doorPass): its New code, on its own output. */
export interface PassNodeHooks {
  readonly accountId: string;
  wired(): boolean;
  reissueFromEditor(passId: string): Promise<"reissued" | "not-found" | "not-wired">;
}

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
