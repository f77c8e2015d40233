/**
 * Adversarial review of issue 14 (a new user's first hour): each test is a defect found by
 * following the README, the demo and the example flows as a new user would, on a real
 * Node-RED 4 runtime against the simulator.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import {
  ACCOUNT_USERS, DEMO_CREDENTIAL_SECRET, REPO_ROOT, freePort, installPackageLink,
  isConfigNode, newNodeId, loadExamples, settingsFile, startBroker, startDemo, startNodeRedOnFreePort, waitForAccountState,
  type Broker, type ExampleFlow, type FlowNode, type NodeRedProcess, type RunningDemo,
} from "../scripts/demo.js";
import { DEMO_ACCOUNT, startSimulator, type RunningSimulator } from "../src/simulator/index.js";
import { packageCopy } from "./helpers/package-copy.js";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
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
function byTitle(prefix: string): ExampleFlow {
  const ex = loadExamples().find((e) => e.title.startsWith(prefix));
  assert.ok(ex, `example ${prefix}`);
  return ex;
}

describe("break-14: npm start stopped the way a process manager or an IDE stops it", function () {
  this.timeout(180_000);
  const dir = fs.mkdtempSync(path.join(tmpdir(), "door-b14-npmstart-"));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("SIGTERM to the `npm start` process stops Node-RED and the simulator (nothing keeps the ports)", async () => {
    // detached: its own process group, so that the test can clean up whatever survives.
    const child = spawn(npm, ["start", "--", "--dir", dir, "--sim-port", "0", "--editor-port", "0", "--mqtt-port", "0"], {
      cwd: packageCopy(), // npm start rebuilds dist/: in a copy, not under the files running beside this one
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr!.on("data", (c: Buffer) => (out += c.toString()));
    let nrPid = 0;
    try {
      const deadline = Date.now() + 120_000;
      while (!/Stop: .*Ctrl-C/.test(out)) {
        if (Date.now() > deadline || child.exitCode !== null) assert.fail(`demo did not come up:\n${out}`);
        await sleep(200);
      }
      const editor = /Node-RED editor:\s+(\S+)/.exec(out)?.[1];
      const sim = /Door simulator:\s+(\S+)/.exec(out)?.[1];
      nrPid = Number(/Node-RED pid (\d+)/.exec(out)?.[1]);
      assert.ok(editor && sim && nrPid > 0, out);
      child.kill("SIGTERM"); // only npm, as systemd, pm2, VS Code's npm-scripts "stop", `timeout` do
      const deadline2 = Date.now() + 20_000;
      while (alive(nrPid) && Date.now() < deadline2) await sleep(250);
      assert.equal(alive(nrPid), false, "Node-RED still runs after npm start was terminated (orphaned, holding the editor port)");
      assert.equal(await answers(editor), false, "the editor still answers");
      assert.equal(await answers(`${sim}/_sim/counts`), false, "the simulator still answers");
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* already gone */
      }
      if (nrPid > 0 && alive(nrPid)) process.kill(nrPid, "SIGKILL");
    }
  });
});

describe("break-14: npm start while an earlier npm start still runs (the usual reason 1880 is taken)", function () {
  this.timeout(120_000);
  const dir = fs.mkdtempSync(path.join(tmpdir(), "door-b14-twice-"));
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
    const button = (JSON.parse(flowsA) as FlowNode[]).find((n) => n.type === "inject" && n.name === "Unlock Front Door")!;
    await fetch(`${a.editorUrl}inject/${button.id}`, { method: "POST" });
    const audit = path.join(a.userDir, "door-access-audit.jsonl");
    const deadline = Date.now() + 10_000;
    while (!(fs.existsSync(audit) && /unlock-result/.test(fs.readFileSync(audit, "utf8"))) && Date.now() < deadline) await sleep(100);
    const auditA = fs.readFileSync(audit, "utf8");

    let second: string | null = null;
    try {
      running.push(await startDemo({ dir, simPort: 0, editorPort: 0, mqttPort: 0, onLog: () => undefined }));
    } catch (e) {
      second = (e as Error).message; // refusing, with a reason, is fine
    }
    assert.equal(fs.existsSync(flowsFile) && fs.readFileSync(flowsFile, "utf8") === flowsA, true,
      "the running demo's flows.json was replaced by the second start (it now points at another simulator)");
    assert.equal(fs.existsSync(audit) && fs.readFileSync(audit, "utf8").startsWith(auditA), true,
      "the running demo's audit log was deleted by the second start");
    if (second !== null) assert.match(second, new RegExp(a.editorUrl.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")), `the refusal names the running editor: ${second}`);
  });
});

describe("break-14: the door panel (example 08) does not tell other screens who pressed", function () {
  this.timeout(120_000);
  const dir = fs.mkdtempSync(path.join(tmpdir(), "door-b14-panel-"));
  let demo: RunningDemo | null = null;
  let context: import("playwright-core").BrowserContext | null = null;
  after(async () => {
    if (context) await context.close().catch(() => undefined);
    if (demo) await demo.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("after a press, a phone that opens the panel receives no msg._client (socket id, IP, user) of the person who pressed", async () => {
    demo = await startDemo({ dir, simPort: 0, editorPort: 0, mqttPort: 0, onLog: () => undefined });
    assert.equal((await waitForAccountState(demo.editorUrl, demo.accountId)).state, "ready");
    const { chromium } = await import("playwright-core");
    context = await chromium.launchPersistentContext(path.join(dir, "profile"), {
      executablePath: "/usr/bin/chromium",
      headless: true,
      viewport: { width: 390, height: 844 },
      args: ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--no-first-run", "--disable-component-update", "--disable-sync"],
      timeout: 60_000,
    });
    context.setDefaultTimeout(30_000);
    const presser = context.pages()[0] ?? (await context.newPage());
    await presser.goto(demo.dashboardUrl!);
    await presser.locator(".door-button", { hasText: "Front Door" }).first().click();
    await presser.locator(".door-confirm").click();
    const deadline = Date.now() + 10_000;
    while (demo.sim.control.requests({ operation: "unlockDevice", deviceId: 101 }).length < 1 && Date.now() < deadline) await sleep(100);
    assert.equal(demo.sim.control.requests({ operation: "unlockDevice", deviceId: 101 }).length, 1, "the press unlocked the Front Door once");
    await sleep(1000);

    // What Dashboard 2 sends to every screen that opens the page (widget-load) is the widget's
    // stored message: read it where the dashboard keeps it (its debug endpoint).
    const flows = JSON.parse(fs.readFileSync(path.join(demo.userDir, "flows.json"), "utf8")) as FlowNode[];
    const template = flows.find((n) => n.type === "ui-template")!;
    const stored = await (await fetch(new URL(`dashboard/_debug/datastore/${template.id}`, demo.editorUrl))).text();
    assert.doesNotMatch(stored, /_client|socketIp|socketId/, `the presser's msg._client reaches every screen that opens the panel: ${stored.match(/"_client":\{[^}]*\}/)?.[0]}`);
    // ... and a phone that opens the panel now still gets one button per door.
    const other = await context.newPage();
    await other.goto(demo.dashboardUrl!);
    await other.locator(".door-button", { hasText: "Front Door" }).first().waitFor({ state: "visible" });
    assert.equal(await other.locator(".door-button").count(), 8, "one button per door after a reload");
    assert.equal(demo.sim.control.requests({ operation: "unlockDevice" }).length, 1, "opening the panel unlocks nothing");
  });
});

describe("break-14: example 08 imported into a Node-RED that already has a Dashboard 2", function () {
  this.timeout(120_000);
  const dir = fs.mkdtempSync(path.join(tmpdir(), "door-b14-twobase-"));
  let demo: RunningDemo | null = null;
  let context: import("playwright-core").BrowserContext | null = null;
  after(async () => {
    if (context) await context.close().catch(() => undefined);
    if (demo) await demo.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a second ui-base breaks every dashboard page; the example's comment says what to do, naming each node to point at the existing ui-base, and doing that works", async () => {
    const ex = byTitle("08");
    const base = ex.nodes.find((n) => n.type === "ui-base")!;
    const users = ex.nodes.filter((n) => n.ui === base.id).map((n) => String(n.name));
    const info = String(ex.nodes.find((n) => n.type === "comment")!.info);

    demo = await startDemo({ dir, simPort: 0, editorPort: 0, mqttPort: 0, onLog: () => undefined });
    assert.equal((await waitForAccountState(demo.editorUrl, demo.accountId)).state, "ready");
    const flows = JSON.parse(fs.readFileSync(path.join(demo.userDir, "flows.json"), "utf8")) as FlowNode[];
    const tab = flows.find((n) => n.type === "tab")!.id;
    // The user's own dashboard, there before the import.
    const mine: FlowNode[] = [
      { id: "b14b000000000001", type: "ui-base", name: "My Dashboard", path: "/dashboard", includeClientData: true, acceptsClientConfig: ["ui-notification", "ui-control"], showPathInSidebar: false, navigationStyle: "default", titleBarStyle: "default" },
      { id: "b14b000000000002", type: "ui-page", name: "Home", ui: "b14b000000000001", path: "/home", layout: "grid", theme: "d00ac0c0da5b0003", order: 1, visible: "true", disabled: "false", breakpoints: [{ name: "Default", px: "0", cols: "3" }] },
      { id: "b14b000000000003", type: "ui-group", name: "Lights", page: "b14b000000000002", width: "6", height: "1", order: 1, showTitle: true, visible: "true", disabled: "false", groupType: "default" },
      { id: "b14b000000000004", type: "ui-button", z: tab, group: "b14b000000000003", name: "Light", label: "Light", order: 1, payload: "", payloadType: "str", topic: "", topicType: "str", x: 120, y: 600, wires: [[]] },
    ];
    const deploy = async (all: FlowNode[]) => {
      const res = await fetch(`${demo!.editorUrl}flows`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "Node-RED-API-Version": "v2", "Node-RED-Deployment-Type": "full" },
        body: JSON.stringify({ flows: all }),
      });
      assert.equal(res.status, 200);
      await sleep(4000);
    };
    const { chromium } = await import("playwright-core");
    context = await chromium.launchPersistentContext(path.join(dir, "profile"), {
      executablePath: "/usr/bin/chromium",
      headless: true,
      viewport: { width: 390, height: 844 },
      args: ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--no-first-run", "--disable-component-update", "--disable-sync"],
      timeout: 60_000,
    });
    context.setDefaultTimeout(30_000);
    const page = context.pages()[0] ?? (await context.newPage());

    // As imported: two ui-base nodes. Dashboard 2 then shows no page at all, the user's neither.
    await deploy([...mine, ...flows]);
    await page.goto(demo.dashboardUrl!);
    await page.getByText("do not support multiple").first().waitFor({ state: "visible" });

    // The comment must say so, and name every node of the example that uses its ui-base.
    assert.match(info, /ui-base/, "the comment says what to do when a Dashboard 2 (a ui-base) already exists");
    for (const name of users) assert.ok(info.includes(name), `the comment names "${name}", which must be pointed at the existing ui-base`);

    // Doing it: those nodes on the user's ui-base, the example's one deleted. The panel works.
    await deploy([...mine, ...flows.filter((n) => n.id !== base.id).map((n) => (n.ui === base.id ? { ...n, ui: "b14b000000000001" } : n))]);
    await page.goto(demo.dashboardUrl!);
    await page.locator(".door-button", { hasText: "Front Door" }).first().click();
    await page.locator(".door-confirm").click();
    await page.locator(".nrdb-ui-notification", { hasText: /unlock sent/ }).first().waitFor({ state: "visible" });
    assert.equal(demo.sim.control.requests({ operation: "unlockDevice", deviceId: 101 }).length, 1);
  });
});

describe("break-14: examples and editor endpoints on a real Node-RED 4", function () {
  this.timeout(60_000);
  let sim: RunningSimulator;
  let broker: Broker;
  let nr: NodeRedProcess;
  let userDir: string;

  before(async () => {
    sim = await startSimulator({ port: 0 });
    broker = await startBroker(0);
    userDir = fs.mkdtempSync(path.join(tmpdir(), "door-b14-"));
    installPackageLink(userDir, REPO_ROOT);
    const settings = path.join(userDir, "settings.js");
    fs.writeFileSync(path.join(userDir, "flows.json"), "[]\n");
    // A port free when picked may be taken before Node-RED listens: another is picked then.
    nr = await startNodeRedOnFreePort({
      userDir,
      pick: () => freePort(0),
      retry: true,
      writeSettings: (port) => {
        fs.writeFileSync(settings, settingsFile({ uiPort: port, credentialSecret: DEMO_CREDENTIAL_SECRET }));
        return settings;
      },
    });
  });

  after(async () => {
    await nr?.stop();
    await broker?.close();
    await sim?.close();
    if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
  });

  /** The account a user adds after the import (an example brings none). */
  const accountId = newNodeId();

  /** The example on a tab, its door nodes on an account pointed at the simulator; every debug node also logs to the console. */
  function deployable(ex: ExampleFlow): FlowNode[] {
    const tab = "d00a7e57b1400001";
    const out: FlowNode[] = [
      { id: tab, type: "tab", label: ex.title, disabled: false, info: "" },
      { id: accountId, type: "door-account", name: "Demo account (simulator)", baseUrl: sim.url, loginMethod: "phone", auditLog: "", credentials: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password } },
    ];
    for (const n of ex.nodes) {
      if (ACCOUNT_USERS.includes(n.type)) out.push({ ...n, z: tab, account: accountId });
      else if (n.type === "mqtt-broker") out.push({ ...n, port: String(broker.port) });
      else if (isConfigNode(n)) out.push({ ...n });
      else if (n.type === "debug") out.push({ ...n, z: tab, console: true });
      else out.push({ ...n, z: tab });
    }
    return out;
  }

  async function deploy(ex: ExampleFlow): Promise<number> {
    const mark = nr.output().length;
    const res = await fetch(`${nr.url}/flows`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Node-RED-API-Version": "v2", "Node-RED-Deployment-Type": "full" },
      body: JSON.stringify({ flows: deployable(ex) }),
    });
    assert.equal(res.status, 200, await res.text());
    const deadline = Date.now() + 20_000;
    while (!/\[info\] Started flows/.test(nr.output().slice(mark))) {
      assert.ok(Date.now() < deadline, `flows did not start:\n${nr.output().slice(mark)}`);
      await sleep(100);
    }
    const state = await waitForAccountState(`${nr.url}/`, accountId, "ready", 20_000);
    assert.equal(state.state, "ready", JSON.stringify(state));
    return mark;
  }

  async function inject(id: string): Promise<void> {
    const res = await fetch(`${nr.url}/inject/${id}`, { method: "POST" });
    assert.equal(res.status, 200, `inject ${id}`);
  }

  it("the sidebar's audit endpoint for an account that is not deployed answers in words, not with a raw message-catalogue key", async () => {
    const res = await fetch(`${nr.url}/door-access/sidebar/accounts/d00ac0c0ffff0000/records`, { headers: { Accept: "application/json" } });
    assert.equal(res.status, 404);
    const body = (await res.json()) as { error?: string };
    // The sidebar tab shows body.error as it is (errorText() in door-access-sidebar.html).
    assert.ok(typeof body.error === "string" && body.error.length > 0, JSON.stringify(body));
    assert.doesNotMatch(body.error, /^[a-z-]+(\.[a-z-]+)+$/, `the sidebar would show the untranslated key ${JSON.stringify(body.error)}`);
  });

  it("05: doing what its comment's \"Try it\" says (simulator supersede, press the button) raises the ALERT", async () => {
    const ex = byTitle("05");
    const comment = ex.nodes.find((n) => n.type === "comment")!;
    const info = String(comment.info);
    const tryIt = info.slice(info.indexOf("Try it"));
    assert.ok(tryIt.startsWith("Try it"), "the comment tells how to try it");
    const url = /curl -X POST (http:\/\/127\.0\.0\.1:8787\/_sim\/accounts\/[^\s`]+)/.exec(tryIt)?.[1];
    assert.ok(url, `a curl command in: ${tryIt}`);
    const rounds = /\btwice\b/.test(tryIt) ? 2 : 1;
    const button = ex.nodes.find((n) => n.type === "inject")!;

    const mark = await deploy(ex);
    for (let i = 0; i < rounds; i++) {
      const res: Response = await fetch(url.replace("http://127.0.0.1:8787", sim.url), { method: "POST" });
      assert.equal(res.status, 204, `${url}: ${res.status}`);
      await inject(button.id);
      await sleep(1500);
    }
    const deadline = Date.now() + 5000;
    while (!/\[debug:ALERT\]/.test(nr.output().slice(mark)) && Date.now() < deadline) await sleep(200);
    const log = nr.output().slice(mark);
    assert.match(log, /\[debug:ALERT\][\s\S]*session halted|\[debug:ALERT\][\s\S]*stopped working/,
      `no ALERT after the comment's steps (${rounds} round(s) of: ${url}, press). Unlocks answered 200: ` +
      `${sim.control.requests({ operation: "unlockDevice" }).filter((r) => r.status === 200).length}. Log:\n${log}`);
  });
});
