/**
 * The fast loop's choice of files (docs/testing.md#the-fast-loop): a file that starts Node-RED, a
 * browser or a child process is left out, a pure one is in.
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import { isUnitTest } from "./test-scope.js";

const compiled = (rel: string) => path.join(__dirname, "..", rel);

describe("npm run test:unit runs the tests that need Node.js alone (docs/testing.md#the-fast-loop)", () => {
  it("pure files are in; files with a Node-RED runtime, a real Node-RED process, a browser or redis-server are out (also helpers/redis.test.js, which imports ./redis.js); the long rotation and inLog matrices are out", () => {
    for (const f of [
      "unlock/access-rules.test.js",
      "client/retry-after.test.js",
      "session/send-gate.test.js",
      "audit/closing-records.test.js",
      "audit/writer.test.js",
      "account/service-description-check.test.js",
    ])
      assert.equal(isUnitTest(compiled(f)), true, f);
    for (const f of [
      "nodes/door-account.test.js",
      "editor/first-hour.browser.test.js",
      "session/redis-flow.test.js",
      "session/redis-store.test.js",
      "helpers/redis.test.js",
      "demo/demo.test.js",
      "audit/rotation.test.js",
      "audit/closing-record-in-log.test.js",
      "nodes/door-unlock-closing-records.test.js",
      "nodes/door-account-service-description.test.js",
    ])
      assert.equal(isUnitTest(compiled(f)), false, f);
  });
});
