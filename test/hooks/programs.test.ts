/**
 * A machine without redis-server or chromium (docs/testing.md#programs-the-suite-needs): a child
 * mocha with the suite's hooks runs a Redis test file and a browser test file with PATH holding no
 * redis-server and DOOR_TEST_CHROMIUM naming a file that is not there. Without CI their tests are
 * pending and the run prints one line per program with its install command; with CI=true they fail.
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

const FILES = ["dist/test/passes/redis-pass-book.test.js", "dist/test/editor/sidebar.browser.test.js"];

function runWithout(ci: boolean, emptyDir: string): { status: number | null; out: string } {
  const env: Record<string, string | undefined> = {
    ...process.env,
    PATH: emptyDir,
    DOOR_TEST_CHROMIUM: path.join(emptyDir, "chromium"),
  };
  delete env.CI;
  if (ci) env.CI = "true";
  const r = spawnSync(
    process.execPath,
    [
      path.resolve("node_modules/mocha/bin/mocha.js"),
      "--no-config",
      "--require",
      "dist/test/hooks/programs.js",
      "--require",
      "dist/test/hooks/no-unhandled.js",
      "--timeout",
      "20000",
      "--exit",
      ...FILES,
    ],
    { env, encoding: "utf8", timeout: 60_000 },
  );
  return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
}

describe("without redis-server or chromium, their tests are pending with one line each naming the install command; under CI=true they fail (docs/testing.md#programs-the-suite-needs)", function () {
  this.timeout(120_000);
  let dir = "";
  before(() => {
    dir = fs.mkdtempSync(path.join(tmpdir(), "door-no-programs-"));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("without CI: the run passes, every test of both files is pending, one line for each program with its apt-get command", () => {
    const { status, out } = runWithout(false, dir);
    assert.equal(status, 0, out);
    assert.match(out, /\b0 passing/, out);
    assert.doesNotMatch(out, /failing/, out);
    assert.match(out, /\d+ pending/, out);
    const redis = out.split("\n").filter((l) => l.includes("redis-server is not on PATH"));
    const chromium = out.split("\n").filter((l) => l.includes(`${dir}/chromium is missing`));
    assert.equal(redis.length, 1, out);
    assert.equal(chromium.length, 1, out);
    assert.match(redis[0], /they are pending \(apt-get update && apt-get install -y redis-server\)/);
    assert.match(chromium[0], /they are pending \(apt-get update && apt-get install -y chromium\)/);
  });

  it("with CI=true: the run fails, naming each missing program as required", () => {
    const { status, out } = runWithout(true, dir);
    assert.notEqual(status, 0, out);
    assert.match(out, /2 failing/, out);
    assert.match(out, /redis-server is not on PATH: the Redis store tests need it, they are required under CI=true/);
    assert.match(out, /chromium is missing: the browser tests need it, they are required under CI=true/);
  });
});
