/**
 * Packaging and installing, as a user installs the package into the Node-RED they run: in the
 * Node-RED user directory (`cd ~/.node-red`), `npm install ./door-access-node-red-<version>.tgz`
 * (a release tarball) or `npm install git+https://...` (the repository: npm runs the package's
 * `prepare`, which builds it); then Node-RED is started and loads the nodes. The npm registry
 * install is the tarball's install with the tarball fetched from the registry.
 *
 * `npm pack`: the tarball holds exactly what Node-RED needs (compiled code, editor files,
 * message catalogues and help, icons, examples, the simulator's bin, docs/*.md, README, LICENSE,
 * package.json) and nothing else; the real tarball installs into a user directory that Node-RED
 * made, where Node-RED loads our four node types and examples. A clone of the repository at HEAD
 * installs the same way from git and is built on install.
 *
 * No network: the installs run with --offline (npm's cache holds every dependency after the
 * suite's `npm ci`); if the cache lacks something the test says so and falls back to
 * --prefer-offline. The packing itself skips `prepare` (--ignore-scripts): that build would first
 * empty the dist/ this suite runs from, which `npm test` has just built.
 *
 * Source maps are not shipped: they point at src/*.ts, which is not in the package, so they
 * would only be dead weight (and stack traces already name the compiled files, which are
 * readable, unminified JavaScript).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import {
  PACKAGE_NAME,
  REPO_ROOT,
  freePort,
  settingsFile,
  startNodeRedOnFreePort,
  type NodeRedProcess,
} from "../../scripts/node-red-process.js";
import { builtAt, npm, packTarball, run } from "../helpers/npm-pack.js";

const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  "node-red": { nodes: Record<string, string>; plugins?: Record<string, string> };
};
const OUR_TYPES = ["door-account", "door-devices", "door-events", "door-pass", "door-status", "door-unlock"];

function walk(dir: string): string[] {
  const abs = path.join(REPO_ROOT, dir);
  if (!fs.existsSync(abs)) return [];
  return fs
    .readdirSync(abs, { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name).split(path.sep).join("/")],
    );
}

/** The editor's sources (a node's editor/ folder, nodes/common/editor/): bundled into its .html, not compiled on their own. */
const isEditorSource = (f: string): boolean => /^nodes\/[^/]+\/editor\//.test(f);

/** What the package must contain, derived from the repository. */
function expectedFiles(): Set<string> {
  const files = new Set<string>(["package.json", "README.md", "LICENSE"]);
  for (const ts of [...walk("src"), ...walk("nodes")].filter(
    (f) => f.endsWith(".ts") && !f.endsWith(".d.ts") && !isEditorSource(f),
  ))
    files.add(`dist/${ts.slice(0, -3)}.js`);
  for (const json of walk("src/spec").filter((f) => f.endsWith(".json"))) files.add(`dist/${json}`); // the pinned service description
  for (const json of walk("nodes/door-unlock/guest-words")) files.add(`dist/${json}`); // the guest page's words
  // Each node and the editor plugin: its entry point, its editor file, its catalogue and help
  // (from its folder nodes/<type>/locales/) and its icons (icons/<type>.svg of the package's
  // icons/ folder) beside them, where Node-RED looks for them.
  for (const [type, js] of Object.entries({ ...pkg["node-red"].nodes, ...pkg["node-red"].plugins })) {
    files.add(js);
    files.add(js.replace(/\.js$/, ".html"));
    for (const f of walk(`nodes/${type}/locales`))
      files.add(`${path.posix.dirname(js)}/${f.slice(`nodes/${type}/`.length)}`);
    for (const icon of walk("icons").filter((f) => f.startsWith(`icons/${type}.`) || f.startsWith(`icons/${type}-`)))
      files.add(`${path.posix.dirname(js)}/${icon}`);
  }
  for (const f of walk("examples").filter((x) => x.endsWith(".json"))) files.add(f);
  for (const f of walk("bin")) files.add(f);
  for (const f of walk("docs").filter((x) => x.endsWith(".md") && !x.slice("docs/".length).includes("/"))) files.add(f); // the reference, for the simulator's hint
  return files;
}

/** Node-RED on a free port with this user directory (its settings file written there). */
function startNodeRedIn(userDir: string): Promise<NodeRedProcess> {
  const settings = path.join(userDir, "settings.js");
  // A port free when picked may be taken before Node-RED listens: another is picked then.
  return startNodeRedOnFreePort({
    userDir,
    pick: () => freePort(0),
    retry: true,
    writeSettings: (port) => {
      fs.writeFileSync(settings, settingsFile({ uiPort: port }));
      return settings;
    },
  });
}

/**
 * A user directory as a user has it before installing anything: Node-RED started once on an
 * empty folder (it writes its own package.json there), then stopped.
 */
async function userDirNodeRedMade(dir: string): Promise<void> {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "flows.json"), "[]\n");
  const first = await startNodeRedIn(dir);
  await first.stop();
  assert.ok(fs.existsSync(path.join(dir, "package.json")), "Node-RED wrote the user directory's package.json");
}

/**
 * `npm install <spec>` in the user directory, as the README says; --offline first (npm's cache),
 * then --prefer-offline if the cache lacks something. Returns whether the offline install worked.
 */
async function npmInstallIn(userDir: string, spec: string, timeoutMs: number): Promise<boolean> {
  const o = { cwd: userDir, maxBuffer: 16 * 1024 * 1024, timeout: timeoutMs };
  try {
    await run(npm, ["install", "--offline", "--no-audit", "--no-fund", spec], o);
    return true;
  } catch {
    await run(npm, ["install", "--prefer-offline", "--no-audit", "--no-fund", spec], o);
    return false;
  }
}

type NodeSet = { module: string; types: string[]; err?: string; enabled: boolean; version?: string };

async function nodeSets(nr: NodeRedProcess): Promise<NodeSet[]> {
  return (await (await fetch(`${nr.url}/nodes`, { headers: { Accept: "application/json" } })).json()) as NodeSet[];
}

/** Node-RED's module info for our package: `local` (found in the user directory's node_modules), `user` (listed in its package.json). */
async function ourModuleInfo(nr: NodeRedProcess): Promise<{ version: string; local: boolean; user: boolean }> {
  const res = await fetch(`${nr.url}/nodes/${PACKAGE_NAME}`, { headers: { Accept: "application/json" } });
  assert.equal(res.status, 200, `GET /nodes/${PACKAGE_NAME}: ${res.status}`);
  return (await res.json()) as { version: string; local: boolean; user: boolean };
}

describe("npm pack: the package holds exactly what Node-RED needs", function () {
  this.timeout(60_000);
  let packed: string[];

  before(async () => {
    const built = builtAt();
    const { stdout } = await run(npm, ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: REPO_ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    assert.equal(builtAt(), built, "npm pack --ignore-scripts ran no build (dist/ untouched)");
    const info = JSON.parse(stdout) as Array<{ name: string; files: Array<{ path: string }> }>;
    assert.equal(info[0].name, PACKAGE_NAME);
    packed = info[0].files.map((f) => f.path).sort();
  });

  it("lists exactly what Node-RED needs", () => {
    const expected = expectedFiles();
    const missing = [...expected].filter((f) => !packed.includes(f)).sort();
    const extra = packed.filter((f) => !expected.has(f));
    assert.deepEqual(
      { missing, extra },
      { missing: [], extra: [] },
      `missing from the package: ${missing.join(", ") || "-"}; not wanted: ${extra.join(", ") || "-"}`,
    );
  });

  it("has every node's entry point, editor file, catalogue, help and icon, side by side as Node-RED looks for them", () => {
    for (const [type, js] of Object.entries(pkg["node-red"].nodes)) {
      const dir = path.posix.dirname(js);
      assert.ok(packed.includes(js), js);
      assert.ok(packed.includes(js.replace(/\.js$/, ".html")), `${type}.html`);
      assert.ok(packed.includes(`${dir}/locales/en-US/${type}.json`), `${type} messages`);
      assert.ok(packed.includes(`${dir}/locales/en-US/${type}.html`), `${type} help`);
      assert.ok(packed.includes(`${dir}/icons/${type}.svg`), `${type} icon`);
    }
    for (const [type, js] of Object.entries(pkg["node-red"].plugins ?? {})) {
      assert.ok(packed.includes(js.replace(/\.js$/, ".html")), `${type}.html`);
      assert.ok(packed.includes(`${path.posix.dirname(js)}/locales/en-US/${type}.json`), `${type} messages`);
    }
    assert.ok(
      packed.some((f) => f.startsWith("examples/")),
      "examples",
    );
  });

  it("ships no tests, TypeScript sources, source maps, demo files or compiled tests/scripts", () => {
    for (const f of packed) {
      assert.doesNotMatch(
        f,
        /^(test|src|scripts|bench|\.demo|\.ci|nodes|resources|icons)\/|^dist\/(test|scripts|bench)\/|\.ts$|\.map$|\.tgz$|^node_modules\//,
        f,
      );
    }
  });

  it("ships no stale built file (each dist/src/ and dist/nodes/ file has its source: a .js its .ts, an editor file its editor/index.ts, a catalogue or help its copy, an icon its file in icons/)", () => {
    for (const f of packed.filter((x) => x.startsWith("dist/src/") || x.startsWith("dist/nodes/"))) {
      const built = f.replace(/^dist\//, "");
      const source = built.endsWith(".js")
        ? built.replace(/\.js$/, ".ts")
        : /^nodes\/[^/]+\/icons\//.test(built)
          ? `icons/${path.posix.basename(built)}`
          : built.endsWith(".html") && !built.includes("/locales/")
            ? `${path.posix.dirname(built)}/editor/index.ts`
            : built;
      assert.ok(fs.existsSync(path.join(REPO_ROOT, source)), `${f} has no source file (${source})`);
    }
  });
});

describe("npm pack: the tarball installed as the README says (`npm install ./<tarball>` in the Node-RED user directory) is a real copy with its dependencies, and Node-RED loads it (docs/runtimes.md#tested-combinations)", function () {
  this.timeout(120_000);
  let work: string;
  let userDir: string;
  let tgzName: string;
  let nr: NodeRedProcess | undefined;
  let offline = true;

  before(async () => {
    work = fs.mkdtempSync(path.join(tmpdir(), "door-pack-"));
    userDir = path.join(work, "userdir");
    await userDirNodeRedMade(userDir);
    // The release tarball, where the README's command expects it: in the user directory.
    tgzName = await packTarball(userDir);
    assert.equal(tgzName, `door-access-node-red-${pkg.version}.tgz`, "the file name the README gives");
    assert.ok(fs.existsSync(path.join(userDir, tgzName)));
    offline = await npmInstallIn(userDir, `./${tgzName}`, 100_000);
  });

  after(async () => {
    await nr?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it("installs (from the npm cache, offline) as a real copy with its dependencies", () => {
    if (!offline) console.warn("      note: the offline install failed; installed with --prefer-offline");
    const installed = path.join(userDir, "node_modules", "@door-access", "node-red");
    assert.equal(fs.lstatSync(installed).isSymbolicLink(), false);
    assert.equal(
      (JSON.parse(fs.readFileSync(path.join(installed, "package.json"), "utf8")) as { version: string }).version,
      pkg.version,
    );
    assert.ok(fs.existsSync(path.join(installed, pkg["node-red"].nodes["door-unlock"])));
    for (const dep of ["undici", "zod"]) assert.ok(fs.existsSync(path.join(userDir, "node_modules", dep)), dep);
    const saved = JSON.parse(fs.readFileSync(path.join(userDir, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    assert.ok(
      saved.dependencies[PACKAGE_NAME],
      "recorded in the user directory's package.json, as the palette manager does",
    );
    assert.equal(
      saved.dependencies[PACKAGE_NAME],
      `file:${tgzName}`,
      "the tarball beside it, as `npm install ./<tarball>` records it",
    );
  });

  it("Node-RED 4 loads the four node types and the examples, without a load error", async () => {
    nr = await startNodeRedIn(userDir);
    const nodes = await nodeSets(nr);
    const ours = nodes.filter((n) => n.module === PACKAGE_NAME);
    assert.deepEqual(ours.flatMap((n) => n.types).sort(), OUR_TYPES);
    for (const n of ours) {
      assert.equal(n.err, undefined, `load error: ${n.err}`);
      assert.equal(n.enabled, true);
    }
    assert.deepEqual(
      nodes.filter((n) => n.err).map((n) => `${n.module}: ${n.err}`),
      [],
      "no node set failed to load",
    );
    const info = await ourModuleInfo(nr);
    assert.deepEqual(
      [info.version, info.local, info.user],
      [pkg.version, true, true],
      "loaded from the user directory's node_modules, listed in its package.json",
    );
    const examples = (await (await fetch(`${nr.url}/library/examples/flows/${PACKAGE_NAME}`)).json()) as Array<
      string | { fn?: string }
    >;
    assert.ok(examples.length >= 6, `examples listed: ${JSON.stringify(examples)}`);
    const editorFile = await fetch(`${nr.url}/nodes`, { headers: { Accept: "text/html" } });
    assert.match(
      await editorFile.text(),
      /RED\.nodes\.registerType\(["']door-unlock["'], \{/,
      "the editor definitions are served",
    );
    assert.doesNotMatch(nr.output(), /\[error\]/, nr.output());
  });

  it("Node-RED serves every icon of the package's icons/ folder from the installed copy, where it looks for a package's icons: an icons/ folder beside a node's .js (docs/architecture.md#the-build)", async () => {
    const running = nr;
    assert.ok(running, "Node-RED was started by the test before");
    const icons = walk("icons").map((f) => path.posix.basename(f));
    assert.ok(icons.length >= 6, `icons/: ${icons.join(", ")}`);
    const listed = (await (
      await fetch(`${running.url}/icons`, { headers: { Accept: "application/json" } })
    ).json()) as Record<string, string[]>;
    assert.deepEqual([...(listed[PACKAGE_NAME] ?? [])].sort(), [...icons].sort(), "GET /icons lists ours");
    for (const icon of icons) {
      const res: Response = await fetch(`${running.url}/icons/${PACKAGE_NAME}/${icon}`);
      assert.equal(res.status, 200, icon);
      // A missing icon is answered 200 too, with Node-RED's default icon: the bytes must be ours.
      assert.equal(await res.text(), fs.readFileSync(path.join(REPO_ROOT, "icons", icon), "utf8"), `${icon} served`);
    }
  });

  it("the simulator's bin runs from the installed copy", async () => {
    const { stdout } = await run(process.execPath, [
      path.join(userDir, "node_modules", "@door-access", "node-red", "bin", "door-access-sim.js"),
      "--help",
    ]);
    assert.match(stdout, /door-access-sim/);
  });
});

// The repository as `npm install git+https://...` gets it: a clone whose HEAD is this checkout's
// HEAD (what is committed; a change not committed is not in it). npm clones it, installs its
// devDependencies and runs its `prepare` (npm run build), then packs and installs the result as
// it would a tarball. Bounded: the install is given 4 minutes (under 1 here, from npm's cache).
// npm 11 runs that prepare and warns that it is "not yet covered by allowScripts"; npm 12 runs a
// git dependency's prepare only when the user directory allows it, and then this test fails as
// the README's command would.
describe("installed from the git repository as the README says (`npm install git+...` in the Node-RED user directory): npm builds it on install (prepare) and Node-RED loads it", function () {
  this.timeout(360_000);
  let work: string;
  let clone: string;
  let userDir: string;
  let nr: NodeRedProcess | undefined;
  let offline = true;

  before(async () => {
    work = fs.mkdtempSync(path.join(tmpdir(), "door-git-install-"));
    clone = path.join(work, "repo");
    userDir = path.join(work, "userdir");
    fs.mkdirSync(clone);
    await run("git", ["init", "-q"], { cwd: clone });
    await run("git", ["fetch", "-q", REPO_ROOT, "HEAD"], { cwd: clone, maxBuffer: 16 * 1024 * 1024 });
    await run("git", ["checkout", "-q", "-b", "main", "FETCH_HEAD"], { cwd: clone });
    await userDirNodeRedMade(userDir);
    offline = await npmInstallIn(userDir, `git+file://${clone}`, 240_000);
  });

  after(async () => {
    await nr?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it("npm ran the package's prepare: the installed copy holds the build (door-account's entry point and editor file) and the dependencies are installed", () => {
    if (!offline) console.warn("      note: the offline install failed; installed with --prefer-offline");
    const installed = path.join(userDir, "node_modules", "@door-access", "node-red");
    assert.equal(fs.lstatSync(installed).isSymbolicLink(), false);
    const entry = pkg["node-red"].nodes["door-account"];
    assert.ok(fs.existsSync(path.join(installed, entry)), "the build is in the installed copy");
    assert.ok(fs.existsSync(path.join(installed, entry.replace(/\.js$/, ".html"))), "with its editor file");
    assert.equal(
      fs.existsSync(path.join(installed, "src")),
      false,
      "an installed copy, as packed: no TypeScript sources",
    );
    for (const dep of ["undici", "zod"]) assert.ok(fs.existsSync(path.join(userDir, "node_modules", dep)), dep);
    const saved = JSON.parse(fs.readFileSync(path.join(userDir, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    assert.match(
      saved.dependencies[PACKAGE_NAME] ?? "",
      /^git\+file:/,
      "recorded in the user directory's package.json",
    );
  });

  it("Node-RED loads the four node types from it, without a load error", async () => {
    nr = await startNodeRedIn(userDir);
    const nodes = await nodeSets(nr);
    const ours = nodes.filter((n) => n.module === PACKAGE_NAME);
    assert.deepEqual(ours.flatMap((n) => n.types).sort(), OUR_TYPES);
    for (const n of ours) {
      assert.equal(n.err, undefined, `load error: ${n.err}`);
      assert.equal(n.enabled, true);
    }
    const info = await ourModuleInfo(nr);
    assert.deepEqual(
      [info.version, info.local, info.user],
      [pkg.version, true, true],
      "loaded from the user directory's node_modules, listed in its package.json",
    );
    assert.doesNotMatch(nr.output(), /\[error\]/, nr.output());
  });
});
