/**
 * `npm run dev` (docs/architecture.md#the-build): after one full build, keeps dist/ up to date while
 * you edit, without a dependency of its own:
 *
 * - the runtime, the tests, the scripts: `tsc -p tsconfig.json --watch` (incremental, into dist/);
 * - the editor files: on any change under the sources (fs.watch, recursive; an editor imports rule
 *   checks from the core too), the editor's type-check (`tsc -p tsconfig.editor.json`) and the
 *   bundling of scripts/editor-build.ts run again, once for a burst of changes.
 *
 * Ctrl-C stops it and the tsc it started. Reload the editor page (or restart Node-RED, for runtime
 * code) to see a change.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { buildEditor } from "./editor-build.js";

const ROOT = path.resolve(__dirname, "..", "..");
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");
/** Folders whose files the build reads (nodes/ when the nodes live at the top level). */
const WATCHED = ["src", "nodes"].map((d) => path.join(ROOT, d)).filter((d) => fs.existsSync(d));
const QUIET_MS = 200;

const stamp = () => new Date().toTimeString().slice(0, 8);

/** The editor's type-check, then its bundles; a failure is printed and waits for the next change. */
function editorStep(): void {
  const started = Date.now();
  const check = spawnSync(process.execPath, [TSC, "-p", "tsconfig.editor.json"], { cwd: ROOT, encoding: "utf8" });
  if (check.status !== 0) {
    process.stdout.write(`${stamp()} editor type-check failed:\n${check.stdout}${check.stderr}`);
    return;
  }
  try {
    buildEditor(ROOT);
    console.log(`${stamp()} editor files rebuilt (${Date.now() - started} ms)`);
  } catch (e) {
    console.log(`${stamp()} editor bundle failed: ${(e as Error).message}`);
  }
}

function main(): void {
  const tsc: ChildProcess = spawn(process.execPath, [TSC, "-p", "tsconfig.json", "--watch", "--preserveWatchOutput"], {
    cwd: ROOT,
    stdio: "inherit",
    // Its own process group: the npm package's `tsc` is a Node.js shim that runs the native
    // compiler as its child, and stopping the group stops both.
    detached: true,
  });
  let timer: NodeJS.Timeout | null = null;
  const changed = (_event: string, file: string | Buffer | null) => {
    if (file !== null && /(^|[\\/])\./.test(String(file))) return; // editors' swap and lock files
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      editorStep();
    }, QUIET_MS);
  };
  const watchers = WATCHED.map((dir) => fs.watch(dir, { recursive: true }, changed));
  const stop = () => {
    for (const w of watchers) w.close();
    if (timer) clearTimeout(timer);
    try {
      if (tsc.pid !== undefined) process.kill(-tsc.pid, "SIGTERM");
    } catch {
      // already gone
    }
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  process.once("exit", stop);
  tsc.once("exit", (code) => {
    stop();
    process.exitCode = code ?? 0;
  });
  console.log(`${stamp()} watching ${WATCHED.map((d) => path.relative(ROOT, d)).join(", ")}: Ctrl-C to stop`);
}

main();
