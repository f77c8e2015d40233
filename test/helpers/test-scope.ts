/**
 * Which compiled test files `npm run test:unit` runs (docs/testing.md#the-fast-loop): those that
 * start no Node-RED, no browser and no child process (redis-server, the demo, a CLI), judged by
 * what each file imports. Read by .mocharc.js when DOOR_TEST_SCOPE=unit.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** dist/, where this file runs from (dist/test/helpers/test-scope.js). */
const DIST = path.resolve(__dirname, "..", "..");

/**
 * Our modules (compiled, under dist/) whose import makes a test file need a runtime, a browser or
 * a child process. A file's relative imports are resolved against its own folder, so that
 * `require("./redis.js")` in test/helpers/ counts as well as `require("../helpers/redis.js")`.
 */
const NEEDS_MORE_MODULES = [
  "test/helpers/flow.js",
  "test/helpers/browser.js",
  "test/helpers/node-red-process.js",
  "test/helpers/audit-runtime.js",
  "test/helpers/redis.js",
  "test/helpers/npm-pack.js",
  "test/helpers/package-copy.js",
  "scripts/start-demo.js",
  "scripts/node-red-process.js",
].map((m) => path.join(DIST, m));

/** Packages whose import does the same. */
const NEEDS_MORE_PACKAGES = [
  /require\("(node:)?child_process"\)/,
  /require\("node-red-node-test-helper"\)/,
  /import\("playwright-core"\)|require\("playwright-core"\)/,
];

/** Long fault matrices that need only Node.js but take a minute: `npm test` runs them, the fast loop not. */
const LONG = [/[\\/]audit[\\/]rotation\.test\.js$/, /[\\/]audit[\\/]closing-record-in-log\.test\.js$/];

/** The files the compiled file at `file` requires by a relative path, resolved. */
function relativeImports(file: string, js: string): string[] {
  return [...js.matchAll(/require\("(\.{1,2}\/[^"]+)"\)/g)].map((m) => path.resolve(path.dirname(file), m[1]));
}

/** Whether the compiled test file at `file` needs only Node.js (loopback sockets allowed) and is quick. */
export function isUnitTest(file: string): boolean {
  if (LONG.some((re) => re.test(file))) return false;
  const js = fs.readFileSync(file, "utf8");
  if (NEEDS_MORE_PACKAGES.some((re) => re.test(js))) return false;
  return !relativeImports(file, js).some((m) => NEEDS_MORE_MODULES.includes(m));
}
