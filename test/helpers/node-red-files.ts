/**
 * The files Node-RED itself writes in its user directory, found two ways for an installed
 * Node-RED package (node_modules/node-red, node_modules/node-red-5):
 *
 * - `filesNodeRedWrites`: its own storage code (`@node-red/runtime/lib/storage/localfilesystem`,
 *   the file context store) run in a fresh user directory, in a child process (so that its
 *   `@node-red/util` log is not the one of the runtime the tests use): settings, flows,
 *   credentials, sessions and a library entry saved twice (the second save makes the backups),
 *   a context value stored; every file and folder it left is listed.
 * - `namesInNodeRedSource`: the names its source joins to `settings.userDir` (storage, registry,
 *   context store), with the `.config.<section>.json` sections, the hostname flows file, and
 *   the backup and temporary names its write code derives from a file name.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";

export interface WrittenFiles {
  userDir: string;
  /** Node-RED's `flowFile` setting for that run (undefined: its default, flows_<hostname>.json). */
  flowFile: string | undefined;
  /** Every file and folder left in the user directory, relative, with `/`. */
  paths: string[];
}

function packageDir(pkg: string, from: string): string {
  return path.dirname(require.resolve(`${pkg}/package.json`, { paths: [from] }));
}

/** Runs the storage code of the Node-RED package at `nodeRedDir` in a fresh user directory (child process). */
export function filesNodeRedWrites(nodeRedDir: string, flowFile: string | undefined): WrittenFiles {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), "door-nr-files-"));
  const r = spawnSync(process.execPath, [__filename, nodeRedDir, userDir, flowFile ?? ""], {
    encoding: "utf8",
    timeout: 30_000,
  });
  if (r.status !== 0) throw new Error(`Node-RED storage run failed (${r.status}): ${r.stderr}`);
  const paths: string[] = [];
  const walk = (dir: string, rel: string): void => {
    for (const n of fs.readdirSync(dir)) {
      const relPath = rel ? `${rel}/${n}` : n;
      paths.push(relPath);
      if (fs.lstatSync(path.join(dir, n)).isDirectory()) walk(path.join(dir, n), relPath);
    }
  };
  walk(userDir, "");
  return { userDir, flowFile, paths };
}

/** Node-RED's internals are CommonJS, found by path at run time. */
const requireCjs = createRequire(__filename);

async function child(nodeRedDir: string, userDir: string, flowFile: string): Promise<void> {
  const runtimeDir = packageDir("@node-red/runtime", nodeRedDir);
  const util = requireCjs(packageDir("@node-red/util", nodeRedDir));
  util.init({});
  const storage = requireCjs(path.join(runtimeDir, "lib", "storage", "localfilesystem"));
  const settings: Record<string, unknown> = { userDir, editorTheme: {}, getUserSettings: () => ({}) };
  if (flowFile) settings.flowFile = flowFile;
  await storage.init(settings, { log: util.log, events: util.events, nodes: {}, settings: {} });
  for (let i = 0; i < 2; i++) {
    await storage.saveSettings({
      _credentialSecret: `s${i}`,
      nodes: { n: i },
      users: { u: i },
      projects: { p: i },
      modules: { m: i },
    });
    await storage.saveFlows([{ id: `t${i}`, type: "tab" }]);
    await storage.saveCredentials({ n1: { c: i } });
    await storage.saveSessions({ s: { user: `u${i}` } });
    await storage.saveLibraryEntry("flows", `entry${i}.json`, {}, "[]");
  }
  const context = requireCjs(path.join(runtimeDir, "lib", "nodes", "context", "localfilesystem.js"))({
    settings: { userDir },
  });
  await context.open();
  await new Promise<void>((resolve, reject) =>
    context.set("node1:flow1", "k", 1, (err?: Error | null) => (err ? reject(err) : resolve())),
  );
  await context.close();
}

if (require.main === module) {
  const [nodeRedDir, userDir, flowFile] = process.argv.slice(2);
  child(nodeRedDir, userDir, flowFile ?? "").then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(String((err as Error)?.stack ?? err));
      process.exit(1);
    },
  );
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.name.endsWith(".js")) out.push(fs.readFileSync(p, "utf8"));
  }
  return out;
}

/**
 * The names (relative to the user directory) the source of the Node-RED package at
 * `nodeRedDir` writes or reads there, with the backup and temporary names it derives. Throws
 * when a pattern it expects is gone (a new Node-RED changed its storage: look again).
 */
export function namesInNodeRedSource(nodeRedDir: string): { files: string[]; folders: string[] } {
  const runtimeDir = packageDir("@node-red/runtime", nodeRedDir);
  const registryDir = packageDir("@node-red/registry", nodeRedDir);
  const storage = sources(path.join(runtimeDir, "lib", "storage", "localfilesystem")).join("\n");
  const registry = sources(path.join(registryDir, "lib")).join("\n");
  const context = fs.readFileSync(path.join(runtimeDir, "lib", "nodes", "context", "localfilesystem.js"), "utf8");
  const all = [storage, registry, context].join("\n");
  const expect = (cond: boolean, what: string): void => {
    if (!cond) throw new Error(`Node-RED at ${nodeRedDir}: ${what} not found in its source`);
  };

  // join(settings.userDir, "name"[, "more"]) and join(path.resolve(settings.userDir || …), "name")
  const literal = /join\(\s*(?:path\.resolve\()?\s*(?:config\.)?settings\.userDir[^,]*?,\s*(["'])([^"']+)\1(\s*,)?/g;
  const joined = new Map<string, boolean>();
  for (const m of all.matchAll(literal)) joined.set(m[2], (joined.get(m[2]) ?? false) || m[3] !== undefined);
  expect(joined.size >= 8, "names joined to settings.userDir");
  const files = new Set<string>();
  const folders = new Set<string>();
  for (const [name, hasMore] of joined) {
    // A folder: joined with more parts after it, or a name without an extension.
    if (hasMore || !/\.[a-z]+$/i.test(name)) folders.add(name);
    else files.add(name);
  }
  // The context store's folder: join(config.settings.userDir, base) with base = config.base || "context".
  const base = /config\.base\s*\|\|\s*["']([^"']+)["']/.exec(context);
  expect(base !== null && /join\(config\.settings\.userDir,\s*base\)/.test(context), "the context store's folder");
  folders.add(base![1]);
  // The settings sections: .config.<section>.json for each section and "runtime".
  const sections = /configSections\s*=\s*\[([^\]]*)\]/.exec(storage);
  expect(sections !== null && storage.includes("`.config.${section}.json`"), ".config.<section>.json");
  const names = [...sections![1].matchAll(/["'](\w+)["']/g)].map((m) => m[1]);
  for (const m of storage.matchAll(/getSettingsFilename\(\s*["'](\w+)["']\s*\)/g)) names.push(m[1]);
  expect(names.includes("runtime"), "the runtime settings section");
  for (const s of names) files.add(`.config.${s}.json`);
  // The default flows file, flows_<hostname>.json, and its credentials file <base>_cred<ext>.
  expect(/'flows_'\s*\+\s*require\('os'\)\.hostname\(\)\s*\+\s*'\.json'/.test(storage), "flows_<hostname>.json");
  expect(/ffBase\s*\+\s*"_cred"\s*\+\s*ffExt/.test(storage), "<flows>_cred<ext>");
  for (const flows of [`flows_${os.hostname()}.json`, "flows.json"]) {
    files.add(flows);
    files.add(flows.replace(/\.json$/, "_cred.json"));
  }
  // Backups: "." + name + ".backup" (flows, credentials), name + ".backup" (settings); the
  // temporary file of every write: name + ".$$$".
  expect(/"\."\s*\+\s*ffName\s*\+\s*"\.backup"/.test(storage), "the flows backup name");
  expect(/sectionFilename\s*\+\s*"\.backup"/.test(storage), "the settings backup name");
  expect(storage.includes("`${path}.$$$`"), "the temporary file name");
  for (const f of [...files]) {
    if (/^flows/.test(f)) files.add(`.${f}.backup`);
    if (/^\.config\..*\.json$/.test(f)) files.add(`${f}.backup`);
  }
  for (const f of [...files]) if (!f.endsWith(".backup")) files.add(`${f}.$$$`);
  return { files: [...files].sort(), folders: [...folders].sort() };
}
