/**
 * Shared by the tests of messages that cannot be read or cannot carry their outcome
 * (test/nodes/door-unlock-odd-messages, door-status-devices, door-unlock-status,
 * door-unlock-selection): the leak-scan hook taken out for one test, a settle step, a revoked
 * Proxy, and the node status shape.
 */
import { strict as assert } from "node:assert";
import { nodeRedDir } from "./runtime.js";

export interface Status { fill?: string; shape?: string; text?: string }

/**
 * The leak-scan hook adds an onSend hook, and Node-RED's hook runner catches what the router throws
 * after it (a failed clone) and reports it instead of throwing it back into node.send. A runtime
 * without onSend hooks (the default) throws it into the sender: take the hook out for one test
 * (the leak-scan hook puts it back before the next test).
 */
export function withoutOnSendHooks(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const util = require(require.resolve("@node-red/util", { paths: [nodeRedDir] })) as { hooks: { remove: (n: string) => void; has: (n: string) => boolean } };
  util.hooks.remove("onSend.leakScan");
  assert.equal(util.hooks.has("onSend"), false);
}

/** Three turns of the event loop and 50 ms: what a node does after its output has happened. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 50));
}

/** A Proxy that throws on every operation (Array.isArray included). */
export function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}
