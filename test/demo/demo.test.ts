/**
 * `npm start` (scripts/demo.ts, scripts/start-demo.ts): the editor answers, our four node types
 * and our examples are loaded from the package installed in the demo's user directory, the
 * preconfigured account logs in at the simulator, stop() leaves nothing running, a second start
 * works, and a second start while the first runs leaves the first alone. Stopping it from
 * outside: test/demo/stopping.test.ts.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import * as http from "node:http";
import * as net from "node:net";
import * as vm from "node:vm";
import { loadExamples } from "../../scripts/demo-flows.js";
import {
  INSTANCE_HEADER,
  PACKAGE_NAME,
  REPO_ROOT,
  freePort,
  settingsFile,
  startNodeRedOnFreePort,
  waitForAccountState,
} from "../../scripts/node-red-process.js";
import { startDemo, type RunningDemo } from "../../scripts/start-demo.js";
import type { FlowNode } from "../../scripts/demo-flows.js";

const TYPES = ["door-account", "door-devices", "door-events", "door-pass", "door-status", "door-unlock"];

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

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url, { headers: { Accept: "application/json" }, signal: AbortSignal.timeout(30_000) });
  assert.equal(res.status, 200, `GET ${url}: ${res.status}`);
  return res.json();
}

describe("demo (npm start): the editor with our nodes, the examples and a ready account from the installed package; stop() leaves nothing running; a second start finds nothing stale (docs/runtimes.md#stopping-the-demo)", function () {
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
    const editor = await fetch(demo.editorUrl, { signal: AbortSignal.timeout(30_000) });
    assert.equal(editor.status, 200);
    assert.match(await editor.text(), /Node-RED/);

    const nodes = (await getJson(new URL("nodes", demo.editorUrl).href)) as Array<{
      module: string;
      types: string[];
      enabled: boolean;
      err?: string;
    }>;
    const ours = nodes.filter((n) => n.module === PACKAGE_NAME);
    assert.deepEqual(ours.flatMap((n) => n.types).sort(), TYPES);
    for (const n of ours) {
      assert.equal(n.err, undefined, `load error: ${n.err}`);
      assert.equal(n.enabled, true);
    }

    const modules = (await getJson(new URL("library/examples/flows/", demo.editorUrl).href)) as string[];
    assert.ok(modules.includes(PACKAGE_NAME), `examples of ${PACKAGE_NAME} listed: ${JSON.stringify(modules)}`);
    const listing = (await getJson(new URL(`library/examples/flows/${PACKAGE_NAME}`, demo.editorUrl).href)) as Array<
      string | { fn?: string }
    >;
    const titles = listing
      .map((e) => (typeof e === "string" ? e : e.fn))
      .filter(Boolean)
      .sort();
    assert.deepEqual(
      titles,
      loadExamples()
        .map((e) => e.title)
        .sort(),
    );
    const first = (await getJson(
      new URL(`library/examples/flows/${PACKAGE_NAME}/${encodeURIComponent(titles[0])}`, demo.editorUrl).href,
    )) as unknown[];
    assert.ok(Array.isArray(first) && first.length > 0, "an example can be fetched like Import > Examples does");

    const state = await waitForAccountState(demo.editorUrl, demo.accountId, "ready", 20_000);
    assert.equal(state.state, "ready", `account state: ${JSON.stringify(state)}`);

    const flows = (await getJson(new URL("flows", demo.editorUrl).href)) as Array<{
      type: string;
      label?: string;
      id: string;
    }>;
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
    assert.equal(
      fs.realpathSync(link),
      fs.realpathSync(REPO_ROOT),
      "the package is installed into the user dir as a link to the repository",
    );
    const pkg = JSON.parse(fs.readFileSync(path.join(demo.userDir, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    assert.match(pkg.dependencies[PACKAGE_NAME], /^file:/);
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
describe("demo (npm start): a picked port taken before Node-RED listens on it is replaced, and only the Node-RED it started counts as up", function () {
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
        assert.ok(
          logs.some((l) => l.includes(`port ${held.port} was taken`)),
          logs.slice(-5).join("\n"),
        );
      } finally {
        await nr.stop();
      }
    } finally {
      await held.close();
    }
  });

  it("a port another HTTP server holds that answers /settings with 200: not taken for the editor; the demo picks another port and its own Node-RED answers there", async () => {
    // Fixed in 511ac43: the start-up check took any 200 on /settings for Node-RED.
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
        assert.match(
          res.headers.get("x-door-access-demo-instance") ?? "",
          /^[0-9a-f]{32}$/,
          "the editor answering is the one started",
        );
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
        startNodeRedOnFreePort({
          userDir: dir,
          pick: () => {
            picks++;
            return Promise.resolve(held.port);
          },
          retry: false,
          writeSettings,
        }),
        /port in use/,
      );
      assert.equal(picks, 1);
    } finally {
      await held.close();
    }
  });

  it("the generated settings file loads with the instance variable absent: the middleware sets the header to '' and calls next(); it carries nothing but that variable", () => {
    const src = settingsFile({ uiPort: 1880 });
    const mod: { exports: Record<string, unknown> } = { exports: {} };
    const env: Record<string, string | undefined> = {}; // no DOOR_ACCESS_DEMO_INSTANCE
    vm.runInNewContext(src, { module: mod, exports: mod.exports, require, process: { env }, __dirname: "/tmp" });
    const mw = mod.exports.httpAdminMiddleware as (req: unknown, res: unknown, next: () => void) => void;
    const set: [string, string][] = [];
    let nexted = 0;
    mw({}, { setHeader: (k: string, v: string) => set.push([k, v]) }, () => nexted++);
    assert.deepEqual(set, [[INSTANCE_HEADER, ""]]);
    assert.equal(nexted, 1);
    env.DOOR_ACCESS_DEMO_INSTANCE = "abc";
    set.length = 0;
    mw({}, { setHeader: (k: string, v: string) => set.push([k, v]) }, () => nexted++);
    assert.deepEqual(set, [[INSTANCE_HEADER, "abc"]]);
  });

  it("with the panel's login, the settings file asks for it at Dashboard 2's pages and at its socket, and holds its hashes only, never the password (docs/security.md#the-door-panel-behind-a-login)", () => {
    const login = { user: "host", password: "pw-Zq81xK3mR0" };
    const src = settingsFile({ uiPort: 1880, panelLogin: login });
    assert.ok(!src.includes(login.password), "no password in settings.js");
    const mod: { exports: Record<string, unknown> } = { exports: {} };
    vm.runInNewContext(src, {
      module: mod,
      exports: mod.exports,
      require,
      Buffer,
      process: { env: {} },
      __dirname: "/tmp",
    });
    const dashboard = mod.exports.dashboard as {
      middleware: (req: unknown, res: unknown, next: () => void) => void;
      ioMiddleware: (socket: unknown, next: (e?: Error) => void) => void;
    };
    const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString("base64")}`;
    const page = (authorization?: string) => {
      const got = { status: 0, next: 0 };
      const res = {
        set: () => res,
        type: () => res,
        status: (n: number) => ((got.status = n), res),
        send: () => res,
      };
      dashboard.middleware({ headers: authorization ? { authorization } : {} }, res, () => got.next++);
      return got;
    };
    assert.deepEqual(page(), { status: 401, next: 0 });
    assert.deepEqual(page(basic("host", "wrong")), { status: 401, next: 0 });
    assert.deepEqual(page(basic("guest", login.password)), { status: 401, next: 0 });
    assert.deepEqual(page(basic("host", login.password)), { status: 0, next: 1 });
    const socket = (authorization?: string) => {
      let result: string = "none";
      dashboard.ioMiddleware(
        {
          client: {
            conn: { request: { url: "/dashboard/socket.io/?EIO=4&transport=polling" }, close: () => undefined },
          },
          handshake: { xdomain: false, headers: authorization ? { authorization } : {} },
          disconnect: () => (result = "disconnected"),
        },
        (e?: Error) => (result = e ? `refused: ${e.message}` : "connected"),
      );
      return result;
    };
    assert.match(socket(), /^refused/);
    assert.match(socket(basic("host", "wrong")), /^refused/);
    assert.equal(socket(basic("host", login.password)), "connected");
  });
});

describe("demo (npm start): the command line prints the addresses and never a credential; SIGINT or SIGTERM stops everything (docs/runtimes.md#stopping-the-demo)", function () {
  this.timeout(90_000);
  const dir = fs.mkdtempSync(path.join(tmpdir(), "door-demo-cli-"));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    it(`prints the URLs and the demo account (no phone number or password), and ${signal} stops Node-RED, the broker and the simulator`, async () => {
      const child = spawn(
        process.execPath,
        [
          path.join(REPO_ROOT, "dist", "scripts", "demo.js"),
          "--dir",
          dir,
          "--sim-port",
          "0",
          "--editor-port",
          "0",
          "--mqtt-port",
          "0",
        ],
        {
          cwd: REPO_ROOT,
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
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
        // The door panel behind the login printed with it; the guest page without one
        // (docs/security.md#the-door-panel-behind-a-login).
        const panel = /Door panel:\s+(\S+)/.exec(out)?.[1];
        const login = /panel login:\s+user (\S+), password (\S+)/.exec(out);
        const guest = /Guest page:\s+(\S+)/.exec(out)?.[1];
        assert.ok(panel && login && guest, out);
        const auth = { Authorization: `Basic ${Buffer.from(`${login[1]}:${login[2]}`).toString("base64")}` };
        assert.equal((await fetch(panel)).status, 401, "the panel without the login");
        assert.equal((await fetch(panel, { headers: auth })).status, 200, "the panel with the printed login");
        assert.equal((await fetch(guest)).status, 200, "the guest page without a login");
        child.kill(signal);
        const code = await Promise.race([
          exited,
          new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 20_000)),
        ]);
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

// Fixed in 1163e14: the second start wiped the running demo's user directory.
describe("demo (npm start): a second start from the same folder while the first still runs (the usual reason 1880 is taken) leaves the running demo's user directory alone", function () {
  this.timeout(120_000);
  const dir = fs.mkdtempSync(path.join(tmpdir(), "door-demo-twice-"));
  const running: RunningDemo[] = [];
  after(async () => {
    for (const d of running) await d.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("the second start leaves the running demo's user directory alone (flows, audit log)", async () => {
    const a = await startDemo({ dir, simPort: 0, editorPort: 0, mqttPort: 0, onLog: () => undefined });
    running.push(a);
    assert.equal((await waitForAccountState(a.editorUrl, a.accountId)).state, "ready");
    const flowsFile = path.join(a.userDir, "flows.json");
    const flowsA = fs.readFileSync(flowsFile, "utf8");
    const button = (JSON.parse(flowsA) as FlowNode[]).find(
      (n) => n.type === "inject" && n.name === "Unlock Front Door",
    )!;
    await fetch(`${a.editorUrl}inject/${button.id}`, { method: "POST" });
    const audit = path.join(a.userDir, "door-access-audit.jsonl");
    const deadline = Date.now() + 10_000;
    while (!(fs.existsSync(audit) && /unlock-result/.test(fs.readFileSync(audit, "utf8"))) && Date.now() < deadline)
      await sleep(100);
    const auditA = fs.readFileSync(audit, "utf8");

    let second: string | null = null;
    try {
      running.push(await startDemo({ dir, simPort: 0, editorPort: 0, mqttPort: 0, onLog: () => undefined }));
    } catch (e) {
      second = (e as Error).message; // refusing, with a reason, is fine
    }
    assert.equal(
      fs.existsSync(flowsFile) && fs.readFileSync(flowsFile, "utf8") === flowsA,
      true,
      "the running demo's flows.json was replaced by the second start (it now points at another simulator)",
    );
    assert.equal(
      fs.existsSync(audit) && fs.readFileSync(audit, "utf8").startsWith(auditA),
      true,
      "the running demo's audit log was deleted by the second start",
    );
    if (second !== null)
      assert.match(
        second,
        new RegExp(a.editorUrl.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")),
        `the refusal names the running editor: ${second}`,
      );
  });
});
