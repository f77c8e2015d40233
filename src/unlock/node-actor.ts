/**
 * The door-unlock node's own actor (its `actor` property, docs/nodes.md#door-unlock): one line of
 * at most 200 characters, the same limit as for `msg.actor` (MAX_ACTOR). The runtime refuses another at deploy and for every message that would
 * carry it (src/unlock/unlock.ts); the dialog validates the property with this same function
 * (nodes/door-unlock/editor/), so it flags exactly what the runtime refuses. Free of Node.js:
 * it runs in the browser too.
 */
import { hasControlChars } from "../util/text.js";

/** Longest actor, a node's or a message's (docs/nodes.md#door-unlock); the audit log keeps it whole. */
export const MAX_ACTOR = 200;

/** Why the node's configured actor cannot be used (null: it can). */
export function nodeActorProblem(value: string): string | null {
  if (value.length > MAX_ACTOR || hasControlChars(value))
    return `the node's actor must be one line of at most ${MAX_ACTOR} characters`;
  return null;
}
