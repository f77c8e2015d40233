/**
 * The suite-wide leak scan (test/hooks/leak-scan.ts) must be able to fail: a child mocha runs
 * a deliberately leaky test with the same hook, and must fail for each kind of leak and pass
 * for a clean run.
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as path from "node:path";

function runLeaky(kind: string): { status: number | null; out: string } {
  const mocha = path.resolve("node_modules/mocha/bin/mocha.js");
  const r = spawnSync(process.execPath, [mocha, "--no-config", "--require", "dist/test/hooks/leak-scan.js", "--timeout", "20000", "--exit", "test/fixtures/leaky.fixture.js"], {
    env: { ...process.env, LEAK_KIND: kind },
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
}

describe("leak scan: it fails the run when a secret leaks", function () {
  this.timeout(120_000);
  for (const [kind, where] of [["stdout-token", /a token in stdout/], ["file-refresh", /a token in file x-.*audit\.jsonl/], ["file-password", /"dem…" in file flows_cred\.json/], ["stdout-pin", /"529…" in stdout/]] as const) {
    it(`catches ${kind}`, () => {
      const r = runLeaky(kind);
      assert.notEqual(r.status, 0, "the leaky run must fail");
      assert.match(r.out, /secrets leaked/);
      assert.match(r.out, where);
      assert.ok(!r.out.includes("demo-password"), "the report never prints the secret");
    });
  }
  it("passes a clean run", () => {
    const r = runLeaky("none");
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /leak scan: \d+ issued tokens .* 0 hits/);
  });
});
