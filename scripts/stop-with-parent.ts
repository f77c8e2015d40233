/**
 * Preloaded into the demo's Node-RED (`node -r dist/scripts/stop-with-parent.js red.js ...`, see
 * startNodeRed in scripts/node-red-process.ts): Node-RED stops when the process that started it is gone,
 * however that one ended (SIGKILL, a crash, an IDE's hard stop), instead of holding the editor
 * port as an orphan.
 *
 * The parent holds the write end of this process's stdin and never writes to it; when the parent
 * exits for any reason, the kernel closes that end and stdin reports its end here at once. Node-RED
 * is then stopped as Ctrl-C stops it (SIGINT: it stops the flows, the door-account nodes close
 * their sessions, and it exits), and forced out if that takes longer than 10 s.
 *
 * Nothing is written anywhere: the parent was the reader of Node-RED's output.
 */
import { fstatSync } from "node:fs";
import { isMainThread } from "node:worker_threads";

const FORCE_EXIT_MS = 10_000;

/** Only a pipe from the parent says anything about it (a terminal or /dev/null says nothing). */
function stdinIsPipe(): boolean {
  try {
    const st = fstatSync(0);
    return st.isFIFO() || st.isSocket();
  } catch {
    return false;
  }
}

// A worker thread that inherits this preload shares fd 0 but has a stdin of its own, which ends at
// once: only Node-RED's main thread watches the parent.
if (isMainThread && stdinIsPipe()) {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // The parent read our output through pipes that are now closed: a write there must not
    // end this process by accident before its flows have stopped.
    process.stdout.on("error", () => undefined);
    process.stderr.on("error", () => undefined);
    setTimeout(() => process.exit(1), FORCE_EXIT_MS).unref();
    process.kill(process.pid, "SIGINT");
  };
  process.stdin.on("end", stop);
  process.stdin.on("close", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
  // Reading stdin must not keep Node-RED alive by itself (its own servers do).
  (process.stdin as { unref?: () => void }).unref?.();
}
