/**
 * The watcher of one test run (test/hooks/children.ts): `node reaper.js <run id>`, started by
 * mocha's main process with a pipe as stdin. When the pipe ends (the main process is gone), it
 * kills with SIGKILL every process whose environment (or, for redis-server, whose title) carries
 * the run's id in DOOR_TEST_RUN, until
 * none is left, prints one line naming what it stopped, and exits.
 */
import * as fs from "node:fs";

const RUN_MARK = "DOOR_TEST_RUN";
const id = process.argv[2] ?? "";

/** Pids of live processes (not zombies) of this run, this one excepted, with their command lines. */
function marked(): { pid: number; cmd: string }[] {
  const found: { pid: number; cmd: string }[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return found;
  }
  for (const name of entries) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0").join(" ").trim();
      const env = fs.readFileSync(`/proc/${pid}/environ`, "latin1").split("\0");
      // redis-server rewrites its environment's memory with its title: its mark is in the title.
      const mark =
        env.find((e) => e.startsWith(`${RUN_MARK}=`))?.slice(RUN_MARK.length + 1) ??
        new RegExp(`${RUN_MARK}=(\\S+)`).exec(cmd)?.[1];
      if (!mark || !mark.split("/").includes(id)) continue;
      if (/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "latin1"))) continue;
      found.push({ pid, cmd });
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

let reaping = false;
async function reap(): Promise<void> {
  if (reaping) return;
  reaping = true;
  const stopped = new Map<number, string>();
  for (let round = 0; round < 20; round++) {
    const left = marked();
    if (left.length === 0) break;
    for (const p of left) {
      try {
        process.kill(p.pid, "SIGKILL");
        stopped.set(p.pid, p.cmd);
      } catch {
        // already gone
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  // The watcher of a run started inside this one may still be at work: it is stopped, not reported.
  for (const [pid, cmd] of stopped) if (cmd.includes("/test/hooks/reaper.js")) stopped.delete(pid);
  if (stopped.size > 0) {
    const list = [...stopped].map(([pid, cmd]) => `${pid} ${cmd.slice(0, 120)}`).join("; ");
    process.stderr.write(`test run ${id}: stopped ${stopped.size} process(es) it left running: ${list}\n`);
  }
  process.exit(0);
}

const start = (): void => {
  reap().catch(() => process.exit(1));
};
process.stderr.on("error", () => undefined); // the run's output may be closed already
process.stdin.on("data", () => undefined);
process.stdin.on("end", start);
process.stdin.on("close", start);
process.stdin.on("error", start);
process.stdin.resume();
