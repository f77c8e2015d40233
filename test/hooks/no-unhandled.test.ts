/**
 * The suite-wide unhandled-rejection hook (test/hooks/no-unhandled.ts) must be able to fail a
 * run: a child mocha runs a test file with a planted unhandled rejection under the same hook,
 * serially (`npm run test:file`) and in parallel mode as `npm test` runs the suite; it must
 * fail, name the rejection, and pass when nothing is planted.
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as path from "node:path";

function runPlanted(kind: string, parallel: boolean): { status: number | null; out: string } {
  const mocha = path.resolve("node_modules/mocha/bin/mocha.js");
  // In parallel mode a second file keeps the other worker busy for 1.5 s, so that the run is
  // still going when a rejection planted after the first file's end surfaces in its worker.
  const files = parallel
    ? ["--parallel", "--jobs", "2", "test/fixtures/clean.fixture.js", "test/fixtures/unhandled.fixture.js"]
    : ["test/fixtures/unhandled.fixture.js"];
  const r = spawnSync(
    process.execPath,
    [
      mocha,
      "--no-config",
      "--require",
      "dist/test/hooks/no-unhandled.js",
      "--node-option",
      "unhandled-rejections=strict",
      "--timeout",
      "20000",
      "--exit",
      ...files,
    ],
    {
      env: { ...process.env, UNHANDLED_KIND: kind, FIXTURE_BUSY_MS: "1500" },
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
}

describe("no unhandled rejection: the root hook fails the run on one", function () {
  this.timeout(120_000);
  it("a rejection nobody handles during a test fails the run (serial mocha)", () => {
    const r = runPlanted("in-test", false);
    assert.notEqual(r.status, 0, "the run must fail");
    assert.match(r.out, /the run saw \d+ unhandled rejection\(s\)\/exception\(s\)/);
    assert.match(
      r.out,
      /unhandled rejection during "unhandled plants an unhandled rejection: in-test": Error: planted in a test/,
    );
  });
  it("a rejection nobody handles during a test fails the run (parallel mode)", () => {
    const r = runPlanted("in-test", true);
    assert.notEqual(r.status, 0, "the run must fail");
    assert.match(
      r.out,
      /unhandled rejection during "unhandled plants an unhandled rejection: in-test": Error: planted in a test/,
    );
  });
  it("a rejection that surfaces after a file's last test, while its worker waits, fails the run (parallel mode)", () => {
    const r = runPlanted("late", true);
    assert.match(r.out, /2 passing/, "both files' tests passed");
    assert.notEqual(r.status, 0, "the run must fail all the same");
    assert.match(r.out, /unhandled rejection during "\(between tests\)": Error: planted after the file/);
  });
  for (const parallel of [false, true]) {
    it(`passes a run with nothing planted (${parallel ? "parallel mode" : "serial mocha"})`, () => {
      const r = runPlanted("none", parallel);
      assert.equal(r.status, 0, r.out);
      assert.match(
        r.out,
        parallel
          ? /unhandled rejections and uncaught exceptions: 0 \(2 files in 2 worker processes\)/
          : /unhandled rejections and uncaught exceptions: 0/,
      );
    });
  }
});
