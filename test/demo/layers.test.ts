/**
 * The layer rule of the core, as CI checks it (`npm run check:layers`, scripts/check-layers.ts):
 * a folder imports only from lower layers, never from a sibling of its own layer, and the
 * simulator only from spec and util (docs/architecture.md#the-layers).
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { layerViolations } from "../../scripts/check-layers.js";
import { PACKAGE_ROOT } from "../helpers/node-files.js";
import { freshUserDir } from "../helpers/temp-dir.js";

const CHECKER = path.join(PACKAGE_ROOT, "dist", "scripts", "check-layers.js");

/** A tree of sources under a temp root: path (relative to it) → text. */
function tree(files: Record<string, string>): string {
  const root = freshUserDir();
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

/** The checker run as CI runs it, on `root`. */
function runChecker(root: string): { status: number | null; stdout: string } {
  const r = spawnSync(process.execPath, [CHECKER, root], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout };
}

const LOWER_ONLY = {
  "src/util/text.ts": "export const a = 1;\n",
  "src/client/client.ts": 'import { a } from "../util/text.js";\nexport const b = a;\n',
  "src/session/session.ts": 'import { b } from "../client/client.js";\nexport const c = b;\n',
  "src/passes/pass-book.ts": 'import { b } from "../client/client.js";\nimport { a } from "../util/text.js";\n',
  "src/simulator/cli.ts": 'import { a } from "../util/text.js";\n',
  "nodes/door-unlock/door-unlock.ts": 'import { c } from "../../src/session/session.js";\n',
};

describe("A folder of the core imports only from lower layers, never from a sibling; the simulator only from spec and util; CI fails otherwise (docs/architecture.md#the-layers)", () => {
  const roots: string[] = [];
  after(() => {
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });

  it("the package's own sources keep the rule", () => {
    assert.deepEqual(layerViolations(PACKAGE_ROOT), []);
    assert.equal(runChecker(PACKAGE_ROOT).status, 0);
  });

  it("a tree that imports only downwards passes (exit 0), a top-level nodes/ folder counting as the top layer", () => {
    const root = tree(LOWER_ONLY);
    roots.push(root);
    assert.deepEqual(layerViolations(root), []);
    const r = runChecker(root);
    assert.equal(r.status, 0, r.stdout);
    assert.match(r.stdout, /layer rule: 0 imports against it/);
  });

  it("a planted sideways import (passes → session, both layer 3) fails the check (exit 1) and names the file and the rule", () => {
    const root = tree({
      ...LOWER_ONLY,
      "src/passes/pass-book.ts": 'import { writeFileAtomic } from "../session/token-store.js";\n',
      "src/session/token-store.ts": "export async function writeFileAtomic(): Promise<void> {}\n",
    });
    roots.push(root);
    const found = layerViolations(root);
    assert.deepEqual(
      found.map((v) => [v.file, v.imports]),
      [[path.join("src", "passes", "pass-book.ts"), path.join("src", "session", "token-store.js")]],
    );
    assert.match(found[0].rule, /both layer 3/);
    const r = runChecker(root);
    assert.equal(r.status, 1, r.stdout);
    assert.match(r.stdout, /src\/passes\/pass-book\.ts -> src\/session\/token-store\.js/);
  });

  it("an import upwards, a type-only import and the simulator reaching past spec and util each fail the check", () => {
    const root = tree({
      ...LOWER_ONLY,
      "src/util/clock.ts": 'import type { c } from "../session/session.js";\n',
      "src/simulator/routes.ts": 'import { b } from "../client/client.js";\n',
      "src/client/pool.ts": 'const m = import("../account/registry.js");\n',
    });
    roots.push(root);
    const rules = layerViolations(root).map((v) => `${v.file}: ${v.rule}`);
    assert.equal(rules.length, 3, rules.join("\n"));
    assert.ok(rules.some((r) => r.startsWith(path.join("src", "util", "clock.ts")) && /a higher layer/.test(r)));
    assert.ok(
      rules.some((r) => r.startsWith(path.join("src", "simulator", "routes.ts")) && /only spec and util/.test(r)),
    );
    assert.ok(rules.some((r) => r.startsWith(path.join("src", "client", "pool.ts")) && /a higher layer/.test(r)));
    assert.equal(runChecker(root).status, 1);
  });
});
