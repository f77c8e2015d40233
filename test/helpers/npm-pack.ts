/**
 * npm as the tests run it, and the package as `npm pack` makes it (test/demo/pack.test.ts,
 * test/demo/scorecard.test.ts): the release tarball, packed without running the build (dist/ is
 * the one the suite runs from) and, for reading its files, unpacked into a folder.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "../../scripts/node-red-process.js";

const execFileAsync = promisify(execFile);
/**
 * npm as the one running the suite (npm_execpath), else the one on PATH. Under `npm test` the
 * PATH starts with node_modules/.bin, where Node-RED 4's dependencies put npm 10, whose `npm pack`
 * runs `prepare` (a full build, rewriting dist/ under the tests running beside this one) even
 * with --ignore-scripts (npm/cli#7211; npm 11 obeys it).
 */
const npmCli = process.env.npm_execpath && /\.c?js$/.test(process.env.npm_execpath) ? process.env.npm_execpath : null;
export const npm = process.platform === "win32" ? "npm.cmd" : "npm";

export const run = (
  cmd: string,
  args: string[],
  opts: { cwd?: string; maxBuffer?: number; env?: NodeJS.ProcessEnv; timeout?: number } = {},
): Promise<{ stdout: string; stderr: string }> =>
  npmCli && cmd === npm
    ? execFileAsync(process.execPath, [npmCli, ...args], { ...opts, encoding: "utf8" })
    : execFileAsync(cmd, args, { ...opts, encoding: "utf8" });

/** A compiled file's modification time: packing must not rebuild dist/. */
export const builtAt = (): number =>
  fs.statSync(path.join(REPO_ROOT, "dist", "nodes", "door-unlock", "door-unlock.js")).mtimeMs;

/** `npm pack --ignore-scripts` into `dest`: the tarball's file name. Throws if packing rebuilt dist/. */
export async function packTarball(dest: string): Promise<string> {
  const built = builtAt();
  const { stdout } = await run(npm, ["pack", "--json", "--ignore-scripts", "--pack-destination", dest], {
    cwd: REPO_ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  if (builtAt() !== built) throw new Error("npm pack --ignore-scripts rebuilt dist/");
  return (JSON.parse(stdout) as Array<{ filename: string }>)[0].filename;
}

/** The package as the tarball holds it, unpacked into `dir`: the folder holding its package.json. */
export async function unpackTarball(tgz: string, dir: string): Promise<string> {
  fs.mkdirSync(dir, { recursive: true });
  await run("tar", ["-xzf", tgz, "-C", dir]);
  return path.join(dir, "package");
}
