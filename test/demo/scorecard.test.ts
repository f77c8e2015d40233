/**
 * The flow library's scorecard (`node-red-dev validate`), checked by hand because the tool
 * needs catalogue.nodered.org, which the test machines cannot reach. No network: "the latest" versions are the newest ones installed from package-lock.json
 * (Node-RED 5.x as the alias node-red-5, Node-RED 4.x, each runtime dependency).
 *
 * P01 license, P03 repository/bugs, P04 scoped name, P05 `node-red` keyword, P06
 * node-red.version satisfied by the latest Node-RED, P07 engines.node satisfied by it, N01
 * unique type names, N02 every non-config node in an example, D01 at most 6 runtime
 * dependencies, D03 dependency ranges include the (installed) latest versions.
 *
 * Like the tool, the checks read the package as published: the tarball `npm pack` makes,
 * unpacked (its package.json, LICENSE, examples and the built editor files; the build makes them,
 * scripts/editor-build.ts). N01/N02 read the `.html` beside each `.js` listed in `node-red.nodes`
 * and look only at `<script type="text/javascript">` blocks (with the tool's own pattern) for
 * `RED.nodes.registerType('literal-name', { inline object })` with literal `category`,
 * `defaults`, `credentials`, `inputs`, `outputs`.
 */
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { REPO_ROOT } from "../../scripts/node-red-process.js";
import { packTarball, unpackTarball } from "../helpers/npm-pack.js";

interface Pkg {
  name: string;
  license?: string;
  keywords?: string[];
  repository?: string | { type?: string; url?: string };
  bugs?: string | { url?: string };
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  "node-red": { version?: string; nodes: Record<string, string> };
}

const nodeRedDir = path.dirname(require.resolve("node-red/package.json", { paths: [REPO_ROOT] }));
// semver and acorn come with Node-RED (a devDependency): the same tools the scorecard uses.
interface SemVer {
  validRange(range: string): string | null;
  satisfies(version: string | object, range: string): boolean;
  minVersion(range: string): { version: string } | null;
  rcompare(a: string, b: string): number;
}
const requireCjs = createRequire(__filename);
const semver = requireCjs(require.resolve("semver", { paths: [nodeRedDir, REPO_ROOT] })) as SemVer;
const acorn = requireCjs(
  require.resolve("acorn", {
    paths: [path.dirname(require.resolve("@node-red/nodes/package.json", { paths: [nodeRedDir] }))],
  }),
) as {
  parse(code: string, opts: { ecmaVersion: "latest" }): AcornNode;
};
type AcornNode = { type: string; [k: string]: any };

function installedVersion(name: string): string {
  return (
    JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "node_modules", name, "package.json"), "utf8")) as {
      version: string;
    }
  ).version;
}

/** The newest Node-RED installed here: node-red (4.x) and node-red-5 (alias of node-red 5.x). */
function latestNodeRed(): { version: string; engines: string } {
  const found = ["node-red", "node-red-5"]
    .filter((d) => fs.existsSync(path.join(REPO_ROOT, "node_modules", d, "package.json")))
    .map(
      (d) =>
        JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "node_modules", d, "package.json"), "utf8")) as {
          name: string;
          version: string;
          engines: { node: string };
        },
    )
    .filter((p) => p.name === "node-red");
  assert.ok(found.length > 0, "a Node-RED is installed");
  found.sort((a, b) => semver.rcompare(a.version, b.version));
  return { version: found[0].version, engines: found[0].engines.node };
}

interface Registration {
  type: string;
  category: string | null;
  literalProps: Set<string>;
  computedProps: Set<string>;
}

/** What the scorecard reads from an editor file: its <script type="text/javascript"> blocks, found as the tool finds them. */
function registrations(htmlFile: string): Registration[] {
  const html = fs.readFileSync(htmlFile, "utf8");
  const blocks = [...html.matchAll(/<script.+?type=['"]text\/javascript['"].*?>([\S\s]*?)<\/script>/gi)].map(
    (m) => m[1],
  );
  assert.ok(blocks.length > 0, `${path.basename(htmlFile)}: a <script type="text/javascript"> block`);
  const out: Registration[] = [];
  const visit = (n: unknown): void => {
    if (!n || typeof n !== "object") return;
    if (Array.isArray(n)) return n.forEach(visit);
    const node = n as AcornNode;
    if (
      node.type === "CallExpression" &&
      node.callee.type === "MemberExpression" &&
      node.callee.property.name === "registerType" &&
      node.callee.object.type === "MemberExpression" &&
      node.callee.object.property.name === "nodes" &&
      node.callee.object.object.name === "RED"
    ) {
      const [name, def] = node.arguments as AcornNode[];
      assert.equal(name?.type, "Literal", `${path.basename(htmlFile)}: registerType with a literal type name`);
      assert.equal(def?.type, "ObjectExpression", `${path.basename(htmlFile)}: registerType with an inline object`);
      const literalProps = new Set<string>();
      const computedProps = new Set<string>();
      let category: string | null = null;
      for (const p of def.properties as AcornNode[]) {
        const key = p.key?.name ?? p.key?.value;
        const v = p.value as AcornNode;
        const literal =
          v.type === "Literal" ||
          v.type === "ObjectExpression" ||
          (v.type === "UnaryExpression" && v.argument.type === "Literal");
        (literal ? literalProps : computedProps).add(key);
        if (key === "category" && v.type === "Literal") category = String(v.value);
      }
      out.push({ type: String(name.value), category, literalProps, computedProps });
    }
    for (const [k, v] of Object.entries(node)) if (k !== "type" && typeof v === "object") visit(v);
  };
  for (const b of blocks) visit(acorn.parse(b, { ecmaVersion: "latest" }));
  return out;
}

describe("flow-library scorecard (checked offline, on the package npm pack makes)", () => {
  let work: string;
  /** The unpacked tarball: what the flow library reads. */
  let packageDir: string;
  let pkg: Pkg;
  let registered: (Registration & { key: string; js: string })[];

  before(async function () {
    this.timeout(60_000);
    work = fs.mkdtempSync(path.join(tmpdir(), "door-scorecard-"));
    const tgz = await packTarball(work);
    packageDir = await unpackTarball(path.join(work, tgz), path.join(work, "unpacked"));
    pkg = JSON.parse(fs.readFileSync(path.join(packageDir, "package.json"), "utf8")) as Pkg;
    registered = Object.entries(pkg["node-red"].nodes).flatMap(([key, js]) => {
      const html = path.join(packageDir, js.replace(/\.js$/, ".html"));
      assert.ok(fs.existsSync(html), `${key}: ${js.replace(/\.js$/, ".html")} beside ${js} in the package`);
      return registrations(html).map((r) => ({ ...r, key, js }));
    });
  });

  after(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it("P01: a license, with its LICENSE file", () => {
    assert.equal(pkg.license, "Apache-2.0");
    const text = fs.readFileSync(path.join(packageDir, "LICENSE"), "utf8");
    assert.match(text, /Apache License\s+Version 2\.0/);
  });

  it("P03: repository and bugs URLs", () => {
    const repo = typeof pkg.repository === "string" ? pkg.repository : pkg.repository?.url;
    const bugs = typeof pkg.bugs === "string" ? pkg.bugs : pkg.bugs?.url;
    assert.match(repo ?? "", /^(git\+)?https:\/\/\S+\.git$/);
    assert.match(bugs ?? "", /^https:\/\/\S+\/issues$/);
  });

  it("P04: a scoped package name", () => {
    assert.match(pkg.name, /^@[a-z0-9][a-z0-9._~-]*\/[a-z0-9][a-z0-9._~-]*$/);
  });

  it("P05: the node-red keyword", () => {
    assert.ok(pkg.keywords?.includes("node-red"));
  });

  it("P06: node-red.version is satisfied by the latest Node-RED (and by 4.x, which we test on Node 20)", () => {
    const range = pkg["node-red"].version;
    assert.ok(range && semver.validRange(range), `node-red.version ${range}`);
    const latest = latestNodeRed();
    assert.ok(semver.satisfies(latest.version, range), `${latest.version} satisfies ${range}`);
    assert.ok(semver.satisfies(installedVersion("node-red"), range));
  });

  it("P07: engines.node is satisfied by the latest Node-RED's minimum Node.js, and by the Node.js running this", () => {
    const range = pkg.engines?.node;
    assert.ok(range && semver.validRange(range), `engines.node ${range}`);
    const latest = latestNodeRed();
    const min = semver.minVersion(latest.engines)!;
    assert.ok(
      semver.satisfies(min, range),
      `Node-RED ${latest.version} runs on Node ${latest.engines}; its minimum ${min.version} satisfies ${range}`,
    );
    assert.ok(semver.satisfies(process.versions.node, range));
    // The note's calibration: >= 20 passes, >= 24 fails.
    assert.ok(semver.satisfies(min, ">=20") && !semver.satisfies(min, ">=24"));
  });

  it("N01: every node type is registered once, literally, with the name its entry point has, and clashes with no core node", () => {
    const types = registered.map((r) => r.type);
    assert.deepEqual([...new Set(types)].sort(), types.slice().sort(), "unique");
    assert.deepEqual(
      types.slice().sort(),
      Object.keys(pkg["node-red"].nodes).sort(),
      "one registration per node-red.nodes entry",
    );
    for (const r of registered) {
      assert.equal(r.type, r.key);
      assert.ok(r.category, `${r.type}: literal category`);
      assert.ok(r.literalProps.has("defaults"), `${r.type}: literal defaults`);
      for (const p of ["category", "defaults", "credentials", "inputs", "outputs"])
        assert.ok(!r.computedProps.has(p), `${r.type}: ${p} must be literal`);
      if (r.category !== "config")
        for (const p of ["inputs", "outputs"]) assert.ok(r.literalProps.has(p), `${r.type}: literal ${p}`);
    }
    const coreDir = path.join(
      path.dirname(require.resolve("@node-red/nodes/package.json", { paths: [nodeRedDir] })),
      "core",
    );
    const walk = (d: string): string[] =>
      fs
        .readdirSync(d, { withFileTypes: true })
        .flatMap((e) =>
          e.isDirectory() ? walk(path.join(d, e.name)) : e.name.endsWith(".html") ? [path.join(d, e.name)] : [],
        );
    const core = new Set(
      walk(coreDir).flatMap((f) =>
        [...fs.readFileSync(f, "utf8").matchAll(/registerType\(\s*['"]([^'"]+)['"]/g)].map((m) => m[1]),
      ),
    );
    assert.ok(core.has("inject") && core.has("mqtt in"), "core types read");
    for (const t of types) assert.ok(!core.has(t), `${t} clashes with a core node`);
    for (const t of types) assert.match(t, /^door-/, "prefixed, so it is unlikely to clash with other packages");
  });

  it("N02: every non-config node type appears in an example flow", () => {
    const exampleTypes = new Set(
      fs
        .readdirSync(path.join(packageDir, "examples"))
        .filter((f) => f.endsWith(".json"))
        .flatMap((f) =>
          (JSON.parse(fs.readFileSync(path.join(packageDir, "examples", f), "utf8")) as Array<{ type: string }>).map(
            (n) => n.type,
          ),
        ),
    );
    const flowNodes = registered.filter((r) => r.category !== "config").map((r) => r.type);
    assert.deepEqual(flowNodes.sort(), ["door-devices", "door-events", "door-pass", "door-status", "door-unlock"]);
    for (const t of flowNodes) assert.ok(exampleTypes.has(t), `${t} in an example`);
  });

  it("D01: at most 6 runtime dependencies", () => {
    const deps = Object.keys(pkg.dependencies ?? {});
    assert.ok(deps.length <= 6, `${deps.length}: ${deps.join(", ")}`);
  });

  it("D03: each dependency range includes the latest version (npm cache, offline), else the installed one", function () {
    this.timeout(120_000);
    /** Accepted exceptions, each with its reason. */
    const accepted: Record<string, string> = {
      undici: "undici 8.x needs Node >= 22.19; we support Node 20 (engines.node >= 20.18.1), so ^7",
    };
    for (const [name, range] of Object.entries(pkg.dependencies ?? {})) {
      assert.ok(semver.validRange(range), `${name}: ${range}`);
      assert.match(range.trim(), /^(\^|~|>=)/, `${name}: ${range} is open to updates (caret, tilde or >=), not a pin`);
      const installed = installedVersion(name);
      assert.ok(semver.satisfies(installed, range), `${name}@${installed} satisfies ${range}`);
      let latest: string | null;
      try {
        latest =
          execFileSync(
            process.platform === "win32" ? "npm.cmd" : "npm",
            ["view", name, "dist-tags.latest", "--offline"],
            { cwd: REPO_ROOT, timeout: 20_000, stdio: ["ignore", "pipe", "ignore"] },
          )
            .toString()
            .trim() || null;
      } catch {
        latest = null; // not in the npm cache: the installed version stands for the latest
      }
      if (latest === null || semver.satisfies(latest, range)) continue;
      assert.ok(accepted[name], `${name}: ${range} excludes the latest ${latest}`);
    }
  });
});
