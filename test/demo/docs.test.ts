/**
 * The users' reference (docs/, README.md) as a person reads it: a user page cites no source file
 * (the installed package ships none; internals are in docs/architecture.md, for contributors),
 * and every `docs/<page>.md#<section>` cited by the code, the tests, the help and the docs
 * themselves names a section that exists, so a section renamed cannot leave a citation pointing
 * nowhere (docs/README.md).
 */
import { strict as assert } from "node:assert";
import { readdirSync, readFileSync, statSync } from "node:fs";
import * as path from "node:path";
import { demoSeed } from "../../src/simulator/seed.js";
import { PACKAGE_ROOT, nodeFile } from "../helpers/node-files.js";

const DOCS = path.join(PACKAGE_ROOT, "docs");
/** Pages for contributors, which name source files by design. */
const CONTRIBUTOR_PAGES = new Set(["architecture.md", "testing.md"]);

function files(dir: string, exts: RegExp): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory())
      return e.name === "node_modules" || e.name === "dist" || e.name.startsWith(".") ? [] : files(p, exts);
    return exts.test(e.name) ? [p] : [];
  });
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a page, outside code blocks, with GitHub's -1, -2 for repeated headings. */
function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(path.join(DOCS, page), "utf8").split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const s = slug(m[1]);
    const n = seen.get(s) ?? 0;
    seen.set(s, n + 1);
    out.add(n === 0 ? s : `${s}-${n}`);
  }
  return out;
}

describe("the users' reference: user pages cite no source file, and every cited section exists (docs/README.md)", () => {
  const pages = readdirSync(DOCS).filter((f) => f.endsWith(".md"));

  it("no user page (docs/*.md but architecture.md and testing.md) names a source path: src/, or a node's folder nodes/<type>/ or nodes/common/", () => {
    const hits = pages
      .filter((p) => !CONTRIBUTOR_PAGES.has(p))
      .flatMap((p) =>
        readFileSync(path.join(DOCS, p), "utf8")
          .split("\n")
          .map((line, i) => ({ where: `docs/${p}:${i + 1}`, line }))
          .filter(({ line }) => line.includes("src/") || /(^|[^\w/.-])nodes\/(door-[a-z-]+|shared)\//.test(line)),
      );
    assert.deepEqual(
      hits.map((h) => `${h.where}: ${h.line.trim()}`),
      [],
    );
  });

  it("every docs/<page>.md#<section> cited in the code, tests, help, examples and docs exists", () => {
    const cache = new Map<string, Set<string>>();
    const known = (page: string) => {
      if (!cache.has(page)) cache.set(page, pages.includes(page) ? anchors(page) : new Set());
      return cache.get(page)!;
    };
    const missing: string[] = [];
    const sources = [
      ...["src", "nodes", "test", "scripts", "bench", "examples", "docs"].flatMap((d) =>
        files(path.join(PACKAGE_ROOT, d), /\.(ts|js|html|json|md)$/),
      ),
      path.join(PACKAGE_ROOT, "README.md"),
      path.join(PACKAGE_ROOT, ".mocharc.js"),
    ];
    let citations = 0;
    for (const file of sources) {
      const text = readFileSync(file, "utf8");
      const inDocs = path.dirname(file) === DOCS;
      // docs/<page>.md#x anywhere; inside docs/, also (<page>.md#x) and (#x) links.
      const re = inDocs
        ? /(?:docs\/|\(|\]\()([a-z0-9-]+\.md)?#([a-z0-9_-]+)/g
        : /docs\/([a-z0-9-]+\.md)#([a-z0-9_-]+)/g;
      for (const m of text.matchAll(re)) {
        const page = m[1] ?? path.basename(file);
        if (inDocs && m[1] === undefined && !m[0].startsWith("(") && !m[0].startsWith("](")) continue;
        citations++;
        if (!known(page).has(m[2])) missing.push(`${path.relative(PACKAGE_ROOT, file)}: ${page}#${m[2]}`);
      }
    }
    assert.ok(citations > 50, `only ${citations} citations found`);
    assert.deepEqual([...new Set(missing)], []);
  });
  it("the two first questions of a new user (an alert when the account stops working; one lock of a door with several) are linked from the README's reference and answered on the first screen of their page", () => {
    const readme = readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");
    const index = readFileSync(path.join(DOCS, "README.md"), "utf8").replace(/\s+/g, " ");
    const questions = [
      { anchor: "get-an-alert-when-the-account-stops-working", words: /alert when the account stops working/i },
      { anchor: "open-one-lock-of-a-door-with-several-locks", words: /one lock of a door with several locks/i },
    ];
    for (const q of questions) {
      assert.ok(readme.includes(`docs/recipes.md#${q.anchor}`), `README.md links docs/recipes.md#${q.anchor}`);
      assert.match(index, q.words, `docs/README.md names it`);
      const firstScreen = readFileSync(path.join(DOCS, "recipes.md"), "utf8").split("\n").slice(0, 50).join("\n");
      const heading = /^## (.*)$/gm;
      const headings = [...firstScreen.matchAll(heading)].map((m) => slug(m[1]));
      assert.ok(headings.includes(q.anchor), `docs/recipes.md answers ${q.anchor} within its first 50 lines`);
    }
  });
});

describe("docs/simulator.md's demo doors are the simulator's: the table lists every door the demo account sees in the built-in seed, by id and name, and the page names the others (docs/simulator.md#demo-accounts)", () => {
  it("the demo-door table's rows are exactly the doors of the demo account's company or keys, with their names; every other seed door is named on the page", () => {
    const seed = demoSeed();
    const account = seed.accounts.find((a) => a.id === "demo")!;
    const companyOf = new Map(seed.locations.map((l) => [l.id, l.companyId]));
    const keyed = new Set(seed.keys.filter((k) => k.accountId === account.id).map((k) => k.deviceId));
    const sees = (d: { id: number; locationId: number }) =>
      companyOf.get(d.locationId) === account.companyId || keyed.has(d.id);
    const page = readFileSync(path.join(DOCS, "simulator.md"), "utf8");
    const section = page.slice(page.indexOf("\n## Demo accounts"), page.indexOf("\n### Your own seed"));
    assert.ok(section.length > 0, "docs/simulator.md has its Demo accounts section");
    const rows = [...section.matchAll(/^\| (\d+) \| ([^|]+?) \|/gm)].map((m) => ({ id: Number(m[1]), name: m[2] }));
    assert.deepEqual(
      rows,
      seed.doors.filter(sees).map((d) => ({ id: d.id, name: d.name })),
      "one row per door the demo account sees, in the seed's order",
    );
    for (const d of seed.doors.filter((x) => !sees(x)))
      assert.ok(section.includes(`Door ${d.id} (*${d.name}*`), `door ${d.id} is named below the table`);
  });
});

describe("docs/architecture.md's sizes of the editor files are the built files' (docs/architecture.md#why-each-nodes-file-carries-its-own-bundle)", () => {
  it("each row of the table, and the total, is within 10 % or 1 kB of the built <type>.html; every built editor file has a row", () => {
    const page = readFileSync(path.join(DOCS, "architecture.md"), "utf8");
    const section = page.slice(page.indexOf("| editor file | kB |"));
    const rows = new Map(
      [...section.matchAll(/^\| ([a-z-]+) \| (\d+\.\d) \|$/gm)].map((m) => [m[1], Number(m[2])] as const),
    );
    const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")) as {
      "node-red": { nodes: Record<string, string>; plugins?: Record<string, string> };
    };
    const types = [...Object.keys(pkg["node-red"].nodes), ...Object.keys(pkg["node-red"].plugins ?? {})];
    const built = new Map(types.map((t) => [t, statSync(nodeFile(t, "editor")).size / 1000] as const));
    built.set(
      "all",
      [...built.values()].reduce((a, b) => a + b, 0),
    );
    const off: string[] = [];
    for (const [name, kB] of built) {
      const doc = rows.get(name);
      if (doc === undefined || Math.abs(doc - kB) > Math.max(1, kB * 0.1))
        off.push(`${name}: built ${kB.toFixed(1)} kB, the table says ${doc ?? "nothing"}`);
    }
    assert.deepEqual(off, [], `docs/architecture.md's table is out of date:\n  ${off.join("\n  ")}`);
    assert.deepEqual([...rows.keys()].sort(), [...built.keys()].sort(), "one row per editor file, and the total");
  });
});
