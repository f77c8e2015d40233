/**
 * Shared by the tests of messages that cannot be read or cannot carry their outcome
 * (test/nodes/door-unlock-odd-messages, door-status-devices, door-unlock-status,
 * door-unlock-selection): the leak-scan hook taken out for one test, a settle step, a revoked
 * Proxy, the node status shape, what a node shows and reports (its statuses, its errors, the
 * messages reaching a helper node), the unhandled rejections since a point, a lone surrogate.
 */
import { strict as assert } from "node:assert";
import { createRequire } from "node:module";
import { unhandledSeen } from "../hooks/no-unhandled.js";
import { helper } from "./flow.js";
import { nodeRedDir } from "./runtime.js";

export interface Status {
  fill?: string;
  shape?: string;
  text?: string;
}

/**
 * Records every status a node sets, on the node itself, then sets it as before. Returns `into`.
 * (Node.prototype.status is a spy of the test helper shared by every node; this list is the
 * node's own and stays with the node after the flows stop.)
 */
export function recordStatuses(node: any, into: Status[] = []): Status[] {
  const own = node.status;
  node.status = function (this: unknown, st: Status) {
    into.push(st);
    return own.call(this, st);
  };
  return into;
}

/** How an error a node reports is written down: `String(e)` ("Error: ..."), or `errorMessage`. */
export type ErrorText = (e: unknown) => string;
/** An Error's message, anything else as String() gives it. */
export const errorMessage: ErrorText = (e) => (e instanceof Error ? e.message : String(e));

/**
 * Records the text of every error a node reports (node.error, also what done(err) reports), then
 * reports it as before; a value that cannot become text is recorded as "(unprintable)". Returns
 * `into`.
 */
export function recordErrors(node: any, into: string[] = [], text: ErrorText = (e) => String(e)): string[] {
  const own = node.error;
  node.error = function (this: unknown, e: unknown, m: unknown) {
    let s: string;
    try {
      s = text(e);
    } catch {
      s = "(unprintable)";
    }
    into.push(s);
    return own.call(this, e, m);
  };
  return into;
}

/**
 * Every message that reaches a helper node from now on, through an input listener of its own:
 * unlike collect() (test/helpers/flow.ts), it takes no message away from unlock() or next().
 */
export function received(id: string): any[] {
  const got: any[] = [];
  helper.getNode(id).on("input", (m: any) => {
    got.push(m);
  });
  return got;
}

/** The first line of each unhandled rejection or uncaught exception since `from` (a count of unhandledSeen()). */
export function unhandledSince(from: number): string[] {
  return unhandledSeen()
    .slice(from)
    .map((x) => x.stack.split("\n")[0]);
}

/** A UTF-16 surrogate without its pair: a text cut inside a character. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The leak-scan hook adds an onSend hook, and Node-RED's hook runner catches what the router throws
 * after it (a failed clone) and reports it instead of throwing it back into node.send. A runtime
 * without onSend hooks (the default) throws it into the sender: take the hook out for one test
 * (the leak-scan hook puts it back before the next test).
 */
export function withoutOnSendHooks(): void {
  const util = createRequire(__filename)(require.resolve("@node-red/util", { paths: [nodeRedDir] })) as {
    hooks: { remove: (n: string) => void; has: (n: string) => boolean };
  };
  util.hooks.remove("onSend.leakScan");
  assert.equal(util.hooks.has("onSend"), false);
}

/**
 * Three turns of the event loop and 50 ms: what a node does after its output has happened; then
 * (at most 5 s) until the audit log of account acc1, when one is deployed, has written what is
 * queued: a closing record waits up to 20 ms for company, then for its write and fsync, which
 * on a busy machine (the suite runs its files in parallel) takes longer than the 50 ms.
 */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 50));
  const audit = (helper.getNode("acc1") as { account?: { audit?: { idle?: () => boolean } } } | null)?.account?.audit;
  const end = Date.now() + 5000;
  while (audit?.idle && !audit.idle() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
}

/** A Proxy that throws on every operation (Array.isArray included). */
export function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}
