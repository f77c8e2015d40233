/**
 * The suite-wide leak scan (test/hooks/leak-scan.ts) must be able to fail: a child mocha runs
 * a deliberately leaky test with the same hook, and must fail for each kind of leak and pass
 * for a clean run; serially (`npm run test:file`), and in parallel mode as `npm test` runs the
 * suite, where the leaky file is the second file its worker runs (three files, two workers).
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as path from "node:path";

const PARALLEL = ["--parallel", "--jobs", "2", "test/fixtures/clean.fixture.js", "test/fixtures/unhandled.fixture.js"];

function runLeaky(kind: string, parallel = false): { status: number | null; out: string } {
  const mocha = path.resolve("node_modules/mocha/bin/mocha.js");
  const r = spawnSync(
    process.execPath,
    [
      mocha,
      "--no-config",
      "--require",
      "dist/test/hooks/leak-scan.js",
      "--timeout",
      "20000",
      "--exit",
      ...(parallel ? PARALLEL : []),
      "test/fixtures/leaky.fixture.js",
    ],
    {
      env: { ...process.env, LEAK_KIND: kind, UNHANDLED_KIND: "none" },
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
}

for (const parallel of [false, true]) {
  describe(`leak scan: it fails the run when a secret leaks${parallel ? " (mocha in parallel mode)" : ""}`, function () {
    this.timeout(120_000);
    for (const [kind, where] of [
      ["stdout-token", /a token in stdout/],
      ["file-refresh", /a token in file x-.*audit\.jsonl/],
      ["file-password", /"dem…" in file flows_cred\.json/],
      ["stdout-pin", /"529…" in stdout/],
    ] as const) {
      it(`catches ${kind}`, () => {
        const r = runLeaky(kind, parallel);
        assert.notEqual(r.status, 0, "the leaky run must fail");
        assert.match(r.out, /secrets leaked/);
        assert.match(r.out, where);
        assert.ok(!r.out.includes("demo-password"), "the report never prints the secret");
        if (parallel) assert.match(r.out, /3 passing/, "all three files ran");
      });
    }
    it("passes a clean run", () => {
      const r = runLeaky("none", parallel);
      assert.equal(r.status, 0, r.out);
      assert.match(r.out, /leak scan: \d+ issued tokens .* 0 hits/);
      if (parallel)
        assert.match(
          r.out,
          /leak scan: 4 issued tokens .*\(2 worker processes\): 0 hits/,
          "the tokens both workers' simulators issued were searched for",
        );
    });
  });
}
