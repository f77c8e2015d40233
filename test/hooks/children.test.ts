/**
 * Nothing a run starts outlives it (docs/testing.md#nothing-outlives-a-run): a child mocha in
 * parallel mode, with the suite's hooks, runs test/fixtures/children.fixture.js, which starts
 * the simulator's command line, redis-server (when installed) and a shell with a child of its
 * own, and then fails (mocha --exit ends its worker without them) or hangs until the test kills
 * mocha's main process with SIGKILL. Either way, every one of them is gone soon after.
 */
import { strict as assert } from "node:assert";
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { until } from "../helpers/until.js";

/** A live process (a zombie waiting for its parent to read it counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "latin1"));
  } catch {
    return false;
  }
}

function childMocha(mode: "fail" | "hang", file: string): ChildProcess {
  const mocha = path.resolve("node_modules/mocha/bin/mocha.js");
  return spawn(
    process.execPath,
    [
      mocha,
      "--no-config",
      "--require",
      "dist/test/hooks/children.js",
      "--parallel",
      "--jobs",
      "1",
      "--timeout",
      "0",
      "--exit",
      "test/fixtures/children.fixture.js",
    ],
    { env: { ...process.env, CHILDREN_MODE: mode, CHILDREN_FILE: file }, stdio: "ignore" },
  );
}

describe("a test run stops every process it started, when it fails and when mocha is killed (docs/testing.md#nothing-outlives-a-run)", function () {
  this.timeout(90_000);
  let dir = "";
  before(() => {
    dir = fs.mkdtempSync(path.join(tmpdir(), "door-children-"));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const mode of ["fail", "hang"] as const) {
    it(
      mode === "fail"
        ? "a file fails with the simulator CLI, redis-server and a shell's child running: mocha exits 1, and they are all gone"
        : "mocha's main process killed with SIGKILL while they run: the worker, the simulator CLI, redis-server and the shell's child are all gone",
      async () => {
        const file = path.join(dir, `${mode}.json`);
        const child = childMocha(mode, file);
        const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
        await until("the fixture's processes", () => fs.existsSync(file), 60_000, 50);
        const pids = JSON.parse(fs.readFileSync(file, "utf8")) as number[];
        assert.ok(pids.length >= 4, `pids: ${pids.join(" ")}`);
        if (mode === "hang") child.kill("SIGKILL");
        const code = await exited;
        if (mode === "fail") assert.equal(code, 1);
        await until(`pids ${pids.join(" ")} to be gone`, () => pids.every((p) => !alive(p)), 15_000, 50);
      },
    );
  }
});
