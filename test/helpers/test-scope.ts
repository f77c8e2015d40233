/**
 * Which compiled test files `npm run test:unit` runs (docs/testing.md#the-fast-loop): those that
 * start no Node-RED, no browser and no child process (redis-server, the demo, a CLI), judged by
 * what each file imports. Read by .mocharc.js when DOOR_TEST_SCOPE=unit.
 */
import * as fs from "node:fs";

/** An import of one of these makes a test file need a runtime, a browser or a child process. */
const NEEDS_MORE = [
  /require\("[^"]*helpers\/flow\.js"\)/,
  /require\("[^"]*helpers\/browser\.js"\)/,
  /require\("[^"]*helpers\/node-red-process\.js"\)/,
  /require\("[^"]*helpers\/audit-runtime\.js"\)/,
  /require\("[^"]*helpers\/redis\.js"\)/,
  /require\("[^"]*helpers\/npm-pack\.js"\)/,
  /require\("[^"]*helpers\/package-copy\.js"\)/,
  /require\("[^"]*scripts\/start-demo\.js"\)/,
  /require\("[^"]*scripts\/node-red-process\.js"\)/,
  /require\("(node:)?child_process"\)/,
  /require\("node-red-node-test-helper"\)/,
  /import\("playwright-core"\)|require\("playwright-core"\)/,
];

/** Long fault matrices that need only Node.js but take a minute: `npm test` runs them, the fast loop not. */
const LONG = [/[\\/]audit[\\/]rotation\.test\.js$/, /[\\/]audit[\\/]closing-record-in-log\.test\.js$/];

/** Whether the compiled test file at `file` needs only Node.js (loopback sockets allowed) and is quick. */
export function isUnitTest(file: string): boolean {
  if (LONG.some((re) => re.test(file))) return false;
  const js = fs.readFileSync(file, "utf8");
  return !NEEDS_MORE.some((re) => re.test(js));
}
