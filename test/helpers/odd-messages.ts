/**
 * Shared by the tests of messages that cannot be read or cannot carry their outcome
 * (test/nodes/door-unlock-odd-messages, door-status-devices, door-unlock-status,
 * door-unlock-selection): the leak-scan hook taken out for one test, a settle step, a revoked
 * Proxy, and the node status shape.
 */
import { strict as assert } from "node:assert";
import { createRequire } from "node:module";
import { helper } from "./flow.js";
import { nodeRedDir } from "./runtime.js";

export interface Status { fill?: string; shape?: string; text?: string }

/**
 * The leak-scan hook adds an onSend hook, and Node-RED's hook runner catches what the router throws
 * after it (a failed clone) and reports it instead of throwing it back into node.send. A runtime
 * without onSend hooks (the default) throws it into the sender: take the hook out for one test
 * (the leak-scan hook puts it back before the next test).
 */
export function withoutOnSendHooks(): void {
  const util = createRequire(__filename)(require.resolve("@node-red/util", { paths: [nodeRedDir] })) as { hooks: { remove: (n: string) => void; has: (n: string) => boolean } };
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
