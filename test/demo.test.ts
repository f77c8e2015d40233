/**
 * `npm start` (scripts/demo.ts): the editor answers, our four node types and our examples are
 * loaded from the package installed in the demo's user directory, the preconfigured account
 * logs in at the simulator, stop() leaves nothing running, and a second start works.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import * as http from "node:http";
import * as net from "node:net";
import { PACKAGE_NAME, REPO_ROOT, freePort, loadExamples, settingsFile, startDemo, startNodeRedOnFreePort, waitForAccountState, type RunningDemo } from "../scripts/demo.js";
import { packageCopy } from "./helpers/package-copy.js";

const TYPES = ["door-account", "door-devices", "door-status", "door-unlock"];

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(2000) });
    return true;
  } catch {
    return false;
  }
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url, { headers: { Accept: "application/json" }, signal: AbortSignal.timeout(5000) });
  assert.equal(res.status, 200, `GET ${url}: ${res.status}`);
  return res.json();
}

describe("demo (npm start): startDemo", function () {
  this.timeout(90_000);
  const dir = fs.mkdtempSync(path.join(tmpdir(), "door-demo-test-"));
  const running: RunningDemo[] = [];
  const log: string[] = [];

  after(async () => {
    for (const d of running) await d.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function start(): Promise<RunningDemo> {
    const demo = await startDemo({ dir, simPort: 0, editorPort: 0, mqttPort: 0, onLog: (l) => log.push(l) });
    running.push(demo);
    return demo;
  }

  async function checkRunning(demo: RunningDemo): Promise<void> {
    const editor = await fetch(demo.editorUrl, { signal: AbortSignal.timeout(5000) });
    assert.equal(editor.status, 200);
    assert.match(await editor.text(), /Node-RED/);

    const nodes = (await getJson(new URL("nodes", demo.editorUrl).href)) as Array<{ module: string; types: string[]; enabled: boolean; err?: string }>;
    const ours = nodes.filter((n) => n.module === PACKAGE_NAME);
    assert.deepEqual(ours.flatMap((n) => n.types).sort(), TYPES);
    for (const n of ours) {
      assert.equal(n.err, undefined, `load error: ${n.err}`);
      assert.equal(n.enabled, true);
    }

    const modules = (await getJson(new URL("library/examples/flows/", demo.editorUrl).href)) as string[];
    assert.ok(modules.includes(PACKAGE_NAME), `examples of ${PACKAGE_NAME} listed: ${JSON.stringify(modules)}`);
    const listing = (await getJson(new URL(`library/examples/flows/${PACKAGE_NAME}`, demo.editorUrl).href)) as Array<string | { fn?: string }>;
    const titles = listing.map((e) => (typeof e === "string" ? e : e.fn)).filter(Boolean).sort();
    assert.deepEqual(titles, loadExamples().map((e) => e.title).sort());
    const first = (await getJson(new URL(`library/examples/flows/${PACKAGE_NAME}/${encodeURIComponent(titles[0]!)}`, demo.editorUrl).href)) as unknown[];
    assert.ok(Array.isArray(first) && first.length > 0, "an example can be fetched like Import > Examples does");

    const state = await waitForAccountState(demo.editorUrl, demo.accountId, "ready", 20_000);
    assert.equal(state.state, "ready", `account state: ${JSON.stringify(state)}`);

    const flows = (await getJson(new URL("flows", demo.editorUrl).href)) as Array<{ type: string; label?: string; id: string }>;
    const tabs = flows.filter((n) => n.type === "tab").map((n) => n.label);
    for (const ex of loadExamples()) assert.ok(tabs.includes(ex.title), `tab for ${ex.title}`);
    assert.equal(flows.filter((n) => n.type === "door-account").length, 1, "one account shared by every example");
    const sentToSim = demo.sim.control.requests({ operation: "loginByPhone" });
    assert.equal(sentToSim.length, 1, "the account logged in once at the simulator");
    assert.equal(demo.sim.control.counts().unlocks, 0, "nothing unlocks a door by itself at start-up");
    assert.doesNotMatch(demo.output(), /\[error\]/, "no error in Node-RED's log");
  }

  async function checkStopped(demo: RunningDemo): Promise<void> {
    await demo.stop();
    await demo.exited;
    assert.equal(alive(demo.pid), false, "the Node-RED process has exited");
    assert.equal(await answers(demo.editorUrl), false, "the editor no longer answers");
    assert.equal(await answers(`${demo.simUrl}/_sim/counts`), false, "the simulator no longer answers");
  }

  it("starts the editor with our nodes, examples and a ready account, and stops everything", async () => {
    const demo = await start();
    assert.match(demo.editorUrl, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const link = path.join(demo.userDir, "node_modules", "@door-access", "node-red");
    assert.equal(fs.realpathSync(link), fs.realpathSync(REPO_ROOT), "the package is installed into the user dir as a link to the repository");
    const pkg = JSON.parse(fs.readFileSync(path.join(demo.userDir, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    assert.match(pkg.dependencies[PACKAGE_NAME]!, /^file:/);
    const flowText = fs.readFileSync(path.join(demo.userDir, "flows.json"), "utf8");
    assert.doesNotMatch(flowText, /demo-password|15550000001/, "no credential in the flow file");
    await checkRunning(demo);
    fs.writeFileSync(path.join(demo.userDir, "stale-marker"), "from the first run");
    await checkStopped(demo);
  });

  it("starts again in the same folder with nothing stale left", async () => {
    const demo = await start();
    assert.equal(fs.existsSync(path.join(demo.userDir, "stale-marker")), false);
    await checkRunning(demo);
    await checkStopped(demo);
    await demo.stop(); // idempotent
  });
});

// A CI run failed here: the editor port was free when the demo picked it and taken by another
// process before Node-RED listened on it ("Error: port in use"). The race is forced: the first
// port picked is held by a server of the test.
describe("demo (npm start): a picked port taken before Node-RED listens on it", function () {
  this.timeout(90_000);
  const dir = fs.mkdtempSync(path.join(tmpdir(), "door-demo-port-"));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function holdPort(): Promise<{ port: number; close: () => Promise<void> }> {
    const srv = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(0, "127.0.0.1", () => resolve());
    });
    const port = (srv.address() as net.AddressInfo).port;
    return { port, close: () => new Promise<void>((r) => srv.close(() => r())) };
  }
  const writeSettings = (port: number): string => {
    const file = path.join(dir, "settings.js");
    fs.writeFileSync(file, settingsFile({ uiPort: port }));
    return file;
  };

  it("a port the demo picked: it picks another and the editor comes up there", async () => {
    const held = await holdPort();
    const picks: number[] = [];
    const logs: string[] = [];
    try {
      const nr = await startNodeRedOnFreePort({
        userDir: dir,
        pick: async () => {
          const p = picks.length === 0 ? held.port : await freePort(0);
          picks.push(p);
          return p;
        },
        retry: true,
        writeSettings,
        onLog: (l) => logs.push(l),
      });
      try {
        assert.equal(picks.length, 2, `picked ${JSON.stringify(picks)}`);
        assert.equal(nr.url, `http://127.0.0.1:${picks[1]}`);
        assert.ok(await answers(`${nr.url}/settings`), "the editor answers on the second port");
        assert.ok(logs.some((l) => l.includes(`port ${held.port} was taken`)), logs.slice(-5).join("\n"));
      } finally {
        await nr.stop();
      }
    } finally {
      await held.close();
    }
  });

  it("a port another HTTP server holds that answers /settings with 200: not taken for the editor; the demo picks another port and its own Node-RED answers there", async () => {
    // helper-17's review of 499f01d: the start-up check took any 200 on /settings for Node-RED.
    const srv = http.createServer((req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"httpNodeRoot":"/","version":"4.1.15"}');
    });
    await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", () => resolve()));
    const held = (srv.address() as net.AddressInfo).port;
    const picks: number[] = [];
    try {
      const nr = await startNodeRedOnFreePort({
        userDir: dir,
        pick: async () => {
          const p = picks.length === 0 ? held : await freePort(0);
          picks.push(p);
          return p;
        },
        retry: true,
        writeSettings,
      });
      try {
        assert.equal(picks.length, 2, `picked ${JSON.stringify(picks)}: the foreign server was taken for Node-RED`);
        assert.equal(nr.url, `http://127.0.0.1:${picks[1]}`);
        assert.equal(nr.child.exitCode, null, "the Node-RED it returns is running");
        const res = await fetch(`${nr.url}/settings`);
        assert.equal(res.status, 200);
        assert.match(res.headers.get("x-door-access-demo-instance") ?? "", /^[0-9a-f]{32}$/, "the editor answering is the one started");
      } finally {
        await nr.stop();
      }
    } finally {
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });

  it("without retry (a port the user named with --editor-port N): a port taken before Node-RED listens is not replaced, the start fails with 'port in use'", async () => {
    const held = await holdPort();
    let picks = 0;
    try {
      await assert.rejects(
        startNodeRedOnFreePort({ userDir: dir, pick: async () => (picks++, held.port), retry: false, writeSettings }),
        /port in use/,
      );
      assert.equal(picks, 1);
    } finally {
      await held.close();
    }
  });
});

describe("demo (npm start): the command line", function () {
  this.timeout(90_000);
  const dir = fs.mkdtempSync(path.join(tmpdir(), "door-demo-cli-"));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    it(`prints the URLs and the demo account (no phone number or password), and ${signal} stops Node-RED, the broker and the simulator`, async () => {
      const child = spawn(process.execPath, [path.join(REPO_ROOT, "dist", "scripts", "demo.js"), "--dir", dir, "--sim-port", "0", "--editor-port", "0", "--mqtt-port", "0"], {
        cwd: REPO_ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      child.stderr.on("data", (c: Buffer) => (out += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      try {
        const deadline = Date.now() + 60_000;
        while (!/Stop: .*Ctrl-C/.test(out)) {
          if (Date.now() > deadline || child.exitCode !== null) assert.fail(`demo did not come up:\n${out}`);
          await new Promise((r) => setTimeout(r, 200));
        }
        const editor = /Node-RED editor:\s+(\S+)/.exec(out)?.[1];
        const sim = /Door simulator:\s+(\S+)/.exec(out)?.[1];
        const pid = Number(/Node-RED pid (\d+)/.exec(out)?.[1]);
        assert.ok(editor && sim && pid > 0, out);
        assert.match(out, /demo@example\.com/);
        assert.doesNotMatch(out, /15550000001|demo-password/, "no phone number or password on the console");
        assert.match(out, /no adminAuth/);
        assert.match(out, /"Demo account \(simulator\)": ready/);
        assert.equal(await answers(editor), true);
        child.kill(signal);
        const code = await Promise.race([exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 20_000))]);
        assert.equal(code, 0, `exit code after ${signal}:\n${out.slice(-2000)}`);
        assert.equal(alive(pid), false, "Node-RED was stopped too");
        assert.equal(await answers(editor), false);
        assert.equal(await answers(`${sim}/_sim/counts`), false);
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL");
        const pid = Number(/Node-RED pid (\d+)/.exec(out)?.[1]);
        if (pid > 0 && alive(pid)) process.kill(pid, "SIGKILL");
      }
    });
  }
});

// ---- stopping `npm start` from outside -------------------------------------------------

/** Live (not zombie) processes of a process group, from /proc: pid and command. */
function liveInGroup(pgid: number): Array<{ pid: number; cmd: string }> {
  const out: Array<{ pid: number; cmd: string }> = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pgrp) !== pgid || state === "Z" || state === "X") continue;
    let cmd = "";
    try {
      cmd = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ").trim();
    } catch {
      /* exited meanwhile */
    }
    out.push({ pid: Number(entry), cmd });
  }
  return out;
}

/** Can this process listen on 127.0.0.1:port? */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

interface StartedTree {
  child: import("node:child_process").ChildProcess;
  /** The process group: the spawned process and everything it started. */
  pgid: number;
  ports: number[];
  out: () => string;
}

/** Spawns `command` in its own process group and waits for the demo's banner; returns its ports. */
async function startTree(command: string, args: string[], cwd = REPO_ROOT): Promise<StartedTree> {
  const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const deadline = Date.now() + 120_000;
  while (!/Stop: .*Ctrl-C/.test(out)) {
    if (Date.now() > deadline || child.exitCode !== null) {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
      assert.fail(`demo did not come up:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const ports = [/Node-RED editor:\s+http:\/\/127\.0\.0\.1:(\d+)/, /Door simulator:\s+http:\/\/127\.0\.0\.1:(\d+)/, /MQTT broker:\s+mqtt:\/\/127\.0\.0\.1:(\d+)/].map((re) => Number(re.exec(out)?.[1] ?? 0));
  assert.ok(ports[0]! > 0 && ports[1]! > 0, out);
  return { child, pgid: child.pid!, ports: ports.filter((p) => p > 0), out: () => out };
}

/**
 * Waits (at most `ms`) until no live process of the tree remains and every port can be listened
 * on again; returns how long that took, or fails naming what is left.
 */
async function assertAllGone(tree: StartedTree, ms: number, what: string): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const left = liveInGroup(tree.pgid);
    const busy: number[] = [];
    for (const p of tree.ports) if (!(await portFree(p))) busy.push(p);
    if (left.length === 0 && busy.length === 0) return Date.now() - t0;
    if (Date.now() - t0 > ms) {
      assert.fail(`${ms / 1000} s after ${what}: still running: ${left.map((p) => `${p.pid} ${p.cmd}`).join("; ") || "nothing"}; ports still held: ${busy.join(", ") || "none"}\n${tree.out().slice(-1500)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

function killGroup(tree: StartedTree | null): void {
  if (!tree) return;
  try {
    process.kill(-tree.pgid, "SIGKILL");
  } catch {
    /* nothing left */
  }
}

// What an IDE's stop button, a process manager or `timeout` does: signal the `npm start` process
// alone. npm passes SIGINT and SIGTERM to its own child only and dies of SIGHUP or SIGKILL without
// passing anything on; the demo, Node-RED, the broker and the simulator must stop all the same
// (docs/runtimes.md#stopping-the-demo).
describe("demo (npm start): stopped from outside (a signal to npm alone, a parent that dies), it leaves no process and no port behind", function () {
  this.timeout(240_000);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const STOP_WITHIN_MS = 15_000;

  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"] as const) {
    const how = signal === "SIGKILL" ? "SIGKILL to npm (the parent dies without a word)" : `${signal} to npm`;
    it(`${how}: within ${STOP_WITHIN_MS / 1000} s no process of the tree is left and the editor, simulator and MQTT ports are free`, async () => {
      const dir = fs.mkdtempSync(path.join(tmpdir(), "door-demo-signal-"));
      let tree: StartedTree | null = null;
      try {
        // npm start rebuilds dist/: in a copy, not under the files running beside this one.
        tree = await startTree(npm, ["start", "--", "--dir", dir, "--sim-port", "0", "--editor-port", "0", "--mqtt-port", "0"], packageCopy());
        const before = liveInGroup(tree.pgid);
        assert.ok(before.some((p) => /node-red/.test(p.cmd)) && before.length >= 3, `npm, the demo and Node-RED run: ${JSON.stringify(before)}`);
        process.kill(tree.child.pid!, signal); // npm's pid only, not its group
        await assertAllGone(tree, STOP_WITHIN_MS, how);
      } finally {
        killGroup(tree);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  // Without the broker and the example flows: an MQTT client that loses its broker logs, and a
  // write to the closed pipe of a dead demo ends Node-RED by accident (EPIPE). Here nothing logs.
  it("SIGKILL to the demo: its Node-RED stops too (it watches its parent) and the editor and simulator ports are free", async () => {
    const dir = fs.mkdtempSync(path.join(tmpdir(), "door-demo-signal-"));
    let tree: StartedTree | null = null;
    try {
      tree = await startTree(process.execPath, [path.join(REPO_ROOT, "dist", "scripts", "demo.js"), "--dir", dir, "--sim-port", "0", "--editor-port", "0", "--mqtt-port", "off", "--no-examples"]);
      assert.ok(liveInGroup(tree.pgid).some((p) => /node-red/.test(p.cmd)), "Node-RED runs");
      process.kill(tree.child.pid!, "SIGKILL");
      await assertAllGone(tree, STOP_WITHIN_MS, "SIGKILL to the demo");
    } finally {
      killGroup(tree);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
