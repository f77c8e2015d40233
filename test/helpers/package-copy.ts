/**
 * A copy of the package to run `npm start` in.
 *
 * `npm start` builds first (`npm run build && exec node dist/scripts/demo.js`), and the build
 * rewrites every file of dist/ in place. The suite runs its files in parallel (docs/testing.md),
 * so another test file, a Node-RED or a child process loading a module from dist/ at that moment
 * could read it half written. A test that runs `npm start` runs it here instead: the package's
 * own files (package.json, the tsconfigs and every folder the build or the demo reads) copied
 * from the repository, its node_modules a symlink to the repository's. `npm start` there builds
 * the same sources into the copy's dist/ and runs the same demo, exactly as a user's would.
 *
 * Made once per process, under dist/ (not the suite's temp folder: the leak scan would find the
 * simulator's seed passwords in the copied sources), and removed when the process ends.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "../../scripts/node-red-process.js";

/** What `npm start` builds and runs (the tests and the benchmark are not needed: a third of the build). */
const COPIED = [
  "package.json",
  "tsconfig.json",
  "tsconfig.editor.json",
  "src",
  "nodes",
  "icons",
  "scripts",
  "examples",
  "bin",
];
let made: string | null = null;

export function packageCopy(): string {
  if (made) return made;
  fs.mkdirSync(path.join(REPO_ROOT, "dist"), { recursive: true });
  const dir = fs.mkdtempSync(path.join(REPO_ROOT, "dist", ".npm-start-"));
  process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  for (const name of COPIED) {
    const from = path.join(REPO_ROOT, name);
    if (!fs.existsSync(from)) continue;
    fs.cpSync(from, path.join(dir, name), { recursive: true });
  }
  fs.symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
  made = dir;
  return dir;
}
