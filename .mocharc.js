/**
 * Mocha's settings for `npm test` and a plain `npx mocha`: every compiled test file, in parallel
 * worker processes (docs/testing.md#how-the-suite-runs), with the suite's root hooks.
 *
 * - jobs: one worker per core, plus one (3 on 2 cores; at most 8); the fast loop two per core,
 *   plus one (5). Most of the suite waits on timers, sockets and child processes, but those
 *   children (Node-RED, chromium, redis-server) are CPU-heavy: 5 workers on 2 cores kept the
 *   load near 10 on a fresh machine, timers ran seconds late, timing-sensitive tests failed and a
 *   pass took 10-12 min. On a busy 2-core machine 3 were as fast as 5 and steadier
 *   (docs/testing.md#how-the-suite-runs). DOOR_TEST_JOBS overrides it.
 * - order: the longest files first, by the durations the last parallel run recorded
 *   (node_modules/.cache/door-access-node-red/test-times.json, written by test/hooks/file-times.ts;
 *   a build empties dist/ but leaves it), else those committed in test/file-times.json (a fresh
 *   clone: CI); files not timed yet first of all.
 * - `npm run test:file -- <files>` runs files serially without this file (--no-config).
 */
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const DIR = path.join(__dirname, "dist", "test");

function testFiles(dir) {
  let entries = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? testFiles(p) : e.name.endsWith(".test.js") ? [path.relative(__dirname, p)] : [];
  });
}

function read(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return {};
  }
}

// This machine's last run; else the durations committed with the tests (a fresh clone: CI).
const known = {
  ...read(path.join(__dirname, "test", "file-times.json")),
  ...read(path.join(__dirname, "node_modules", ".cache", "door-access-node-red", "test-times.json")),
};
const weight = (f) => (typeof known[f] === "number" ? known[f] : Number.POSITIVE_INFINITY);
// DOOR_TEST_SCOPE=unit (npm run test:unit): only the files that start no Node-RED, browser or
// child process (test/helpers/test-scope.ts), the fast loop of docs/testing.md.
function inScope(list) {
  if (process.env.DOOR_TEST_SCOPE !== "unit") return list;
  const { isUnitTest } = require("./dist/test/helpers/test-scope.js");
  return list.filter((f) => isUnitTest(path.join(__dirname, f)));
}
/**
 * The whole suite: one worker per core the process may use, plus one (its files start Node-RED,
 * chromium, redis-server: CPU-heavy children). The fast loop (DOOR_TEST_SCOPE=unit): two per core,
 * plus one (its files mostly wait on timers and loopback sockets). At most 8
 * (docs/testing.md#writing-a-test-that-runs-beside-others).
 */
function defaultJobs() {
  const os = require("node:os");
  const cores = typeof os.availableParallelism === "function" ? os.availableParallelism() : os.cpus().length;
  const perCore = process.env.DOOR_TEST_SCOPE === "unit" ? 2 : 1;
  return Math.min(8, Math.max(2, perCore * cores + 1));
}

const files = inScope(testFiles(DIR)).sort((a, b) => weight(b) - weight(a) || a.localeCompare(b));

module.exports = {
  // Before the first build there is nothing to order: the glob then says what is missing.
  spec: files.length > 0 ? files : ["dist/test/**/*.test.js"],
  parallel: true,
  jobs: Number(process.env.DOOR_TEST_JOBS) || defaultJobs(),
  timeout: 20000,
  exit: true,
  reporter: "spec",
  require: [
    "dist/test/hooks/children.js",
    "dist/test/hooks/programs.js",
    "dist/test/hooks/no-unhandled.js",
    "dist/test/hooks/leak-scan.js",
    "dist/test/hooks/file-times.js",
  ],
  "node-option": ["unhandled-rejections=strict"],
};
