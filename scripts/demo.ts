/**
 * `npm start`: the one-command demo.
 *
 * Starts `door-access-sim` (demo seed) on loopback, an in-process MQTT broker (aedes) for the
 * MQTT examples, and the project's own Node-RED 4 (a devDependency) as a child process with a
 * user directory under `.demo/` (gitignored). Our package is installed into that user
 * directory without any network: `.demo/userdir/package.json` names it as a `file:`
 * dependency and `.demo/userdir/node_modules/@door-access/node-red` is a symlink to the
 * repository (what `npm install <folder>` would create), so Node-RED loads it as an installed
 * module, with its examples under Import > Examples. The flow file holds a `door-account`
 * preconfigured for the simulator (a new random id every start: the examples bring no account,
 * docs/security.md#cross-site-requests) and every example flow, one tab each, its door nodes
 * on that account; the account's credentials are written to `flows_cred.json` encrypted exactly as Node-RED does
 * (aes-256-ctr, key sha256(credentialSecret), hex IV prefix).
 *
 * The door panel of example 08 runs on FlowFuse Dashboard 2 (`@flowfuse/node-red-dashboard`, a
 * devDependency: nothing is installed at run time). Node-RED loads node modules from every
 * `node_modules` folder above its own (here the repository's), so the demo's Node-RED finds it
 * there; `startDemo` checks that it can be resolved and gives the panel's address.
 *
 * Every start wipes and rewrites the user directory: nothing stale (flows, session token
 * files, audit log) survives from a previous run. Ctrl-C stops everything it started; so do
 * SIGTERM and SIGHUP, and the end of the process that started it (npm): see main().
 *
 * Programmatic use (tests): `startDemo({ dir, simPort: 0, editorPort: 0, mqttPort: 0 })`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { DEMO_ACCOUNT, startSimulator, type RunningSimulator } from "../src/simulator/index.js";

export const REPO_ROOT = path.resolve(__dirname, "..", "..");
export const EXAMPLES_DIR = path.join(REPO_ROOT, "examples");
export const PACKAGE_NAME = "@door-access/node-red";
/** The flow node types of ours that name a `door-account` (property `account`). */
export const ACCOUNT_USERS = ["door-devices", "door-status", "door-unlock"];

/** A new node id as Node-RED makes them (16 hex digits, random): never one a page elsewhere could know. */
export function newNodeId(): string {
  return randomBytes(8).toString("hex");
}
/** The id of the `mqtt-broker` config node in the MQTT examples. */
export const EXAMPLE_BROKER_ID = "d00ac0c0b40c0001";
/** Not a secret: it only protects the demo's throw-away credentials file. */
export const DEMO_CREDENTIAL_SECRET = "door-access-demo (not a secret: demo only)";

export interface DemoOptions {
  /** Folder for the demo's files (default `<repo>/.demo`); `userdir/` inside it is wiped each start. */
  dir?: string;
  /** Simulator port: default 8787, falling back to an ephemeral port when busy; 0 = ephemeral. */
  simPort?: number;
  /** Editor port: default 1880 or the next free one up to 1899, else ephemeral; 0 = ephemeral. */
  editorPort?: number;
  /** MQTT broker port: default 1883, else ephemeral; 0 = ephemeral; false = no broker. */
  mqttPort?: number | false;
  /** Deploy the example flows (default true). The account is always deployed. */
  deployExamples?: boolean;
  /** Receives Node-RED's output, line by line (default: written to stdout with a prefix). */
  onLog?: (line: string) => void;
  /** How long to wait for the editor to answer (default 60 s). */
  startTimeoutMs?: number;
}

export interface RunningDemo {
  editorUrl: string;
  simUrl: string;
  sim: RunningSimulator;
  /** mqtt://127.0.0.1:<port>, or null without a broker. */
  mqttUrl: string | null;
  userDir: string;
  accountId: string;
  /** The door panel (example 08, Dashboard 2), e.g. http://127.0.0.1:1880/dashboard/doors; null when not deployed. */
  dashboardUrl: string | null;
  /** Process id of the Node-RED child. */
  pid: number;
  /** Settles when the Node-RED child has exited (for whatever reason). */
  exited: Promise<void>;
  /** Everything Node-RED printed so far. */
  output(): string;
  /** Stops Node-RED, the broker and the simulator; idempotent. */
  stop(): Promise<void>;
}

// ---- example flows ------------------------------------------------------------------

export interface ExampleFlow {
  /** File name without `.json`: the menu entry under Import > Examples. */
  title: string;
  file: string;
  nodes: FlowNode[];
}
export type FlowNode = Record<string, unknown> & { id: string; type: string };

export function loadExamples(dir = EXAMPLES_DIR): ExampleFlow[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => {
      const nodes = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as FlowNode[];
      if (!Array.isArray(nodes)) throw new Error(`${f}: an example must be a JSON array of nodes`);
      return { title: f.slice(0, -".json".length), file: path.join(dir, f), nodes };
    });
}

/** Config nodes: no wires and no position (mqtt-broker, door-account, ...). */
export function isConfigNode(n: FlowNode): boolean {
  return n.type !== "tab" && n.type !== "group" && !Array.isArray(n.wires) && n.x === undefined;
}

/**
 * The example on its own tab, as the demo deploys it: flow nodes get fresh ids (derived from
 * the tab, so importing the same example into the demo's editor does not clash) and `z`; the
 * door nodes use the account `accountId` (an example names none); config nodes keep their ids.
 */
export function exampleOnTab(example: ExampleFlow, tabId: string, accountId: string): FlowNode[] {
  const fresh = new Map<string, string>();
  for (const n of example.nodes) {
    if (!isConfigNode(n)) fresh.set(n.id, createHash("sha256").update(`${tabId}:${n.id}`).digest("hex").slice(0, 16));
  }
  const remap = (id: unknown) => (typeof id === "string" ? (fresh.get(id) ?? id) : id);
  const out: FlowNode[] = [];
  for (const n of example.nodes) {
    if (isConfigNode(n)) continue;
    const copy: FlowNode = { ...n, id: fresh.get(n.id)!, z: tabId };
    if (ACCOUNT_USERS.includes(n.type)) copy.account = accountId;
    if (Array.isArray(n.wires)) copy.wires = (n.wires as unknown[][]).map((port) => port.map(remap));
    if (Array.isArray(n.scope)) copy.scope = (n.scope as unknown[]).map(remap);
    if (Array.isArray(n.links)) copy.links = (n.links as unknown[]).map(remap);
    out.push(copy);
  }
  return out;
}

export interface DemoFlowsOptions {
  simUrl: string;
  /** The id of the demo's one door-account (random: newNodeId()). */
  accountId: string;
  mqttPort: number | null;
  examples: ExampleFlow[];
}

/** The demo's flow file: an intro tab, one tab per example, one account, one broker. */
export function buildDemoFlows(o: DemoFlowsOptions): FlowNode[] {
  const flows: FlowNode[] = [];
  const configs = new Map<string, FlowNode>();
  const introTab = "d00ac0de00000000";
  flows.push({
    id: introTab,
    type: "tab",
    label: "Door access demo",
    disabled: false,
    info:
      "Node-RED started by `npm start` with `@door-access/node-red` installed, a simulator of the door " +
      `service at ${o.simUrl} and ${o.mqttPort === null ? "no MQTT broker" : `an MQTT broker at 127.0.0.1:${o.mqttPort}`}.\n\n` +
      "Each example from Import > Examples is deployed on its own tab. The account " +
      "\"Demo account (simulator)\" is logged in with the simulator's demo account (printed by `npm start`).",
  });
  flows.push({
    id: "d00ac0dec0000001", // not d00ac0de000000NN: those are the example tabs (this id was the tab of example 01)
    type: "comment",
    z: introTab,
    name: "Door access demo: one example per tab",
    info:
      `Simulator: ${o.simUrl} (control surface ${o.simUrl}/_sim/, e.g. GET /_sim/requests, GET /_sim/counts, ` +
      "POST /_sim/devices/101/online {\"online\":false}, POST /_sim/accounts/demo/supersede).\n\n" +
      "Start with the tab \"01 Button unlocks a door\": press the inject button and watch the debug sidebar.",
    // Left edge at 40, on the grid (the comment is 340 px wide here): test/editor/example-layout.browser.test.ts.
    x: 210,
    y: 40,
    wires: [],
  });
  o.examples.forEach((ex, i) => {
    const tabId = `d00ac0de${String(i + 1).padStart(8, "0")}`;
    const comment = ex.nodes.find((n) => n.type === "comment");
    flows.push({ id: tabId, type: "tab", label: ex.title, disabled: false, info: typeof comment?.info === "string" ? comment.info : "" });
    flows.push(...exampleOnTab(ex, tabId, o.accountId));
    for (const n of ex.nodes) if (isConfigNode(n) && !configs.has(n.id)) configs.set(n.id, { ...n });
  });
  configs.set(o.accountId, { id: o.accountId, type: "door-account", name: "Demo account (simulator)", loginMethod: "phone", auditLog: "" });
  for (const c of configs.values()) {
    if (c.type === "door-account") {
      c.baseUrl = o.simUrl;
      c.loginMethod = "phone";
    }
    if (c.type === "mqtt-broker" && o.mqttPort !== null) {
      c.broker = "127.0.0.1";
      c.port = String(o.mqttPort);
    }
    flows.push(c);
  }
  return flows;
}

export const DASHBOARD_PACKAGE = "@flowfuse/node-red-dashboard";

/** The path of the first Dashboard 2 page in the flows (ui-base path + ui-page path), or null. */
export function dashboardPath(flows: FlowNode[]): string | null {
  const page = flows.find((n) => n.type === "ui-page" && typeof n.path === "string");
  if (!page) return null;
  const base = flows.find((n) => n.type === "ui-base" && n.id === page.ui);
  const root = typeof base?.path === "string" ? base.path : "/dashboard";
  return `${root.replace(/\/+$/, "")}/${String(page.path).replace(/^\/+/, "")}`;
}

/** Node-RED's own credentials-file encryption (runtime/lib/nodes/credentials.js). */
export function encryptCredentials(secret: string, credentials: Record<string, unknown>): { $: string } {
  const key = createHash("sha256").update(secret).digest();
  const iv = randomBytes(16);
  const cipher = createCipheriv("aes-256-ctr", key, iv);
  return { $: iv.toString("hex") + cipher.update(JSON.stringify(credentials), "utf8", "base64") + cipher.final("base64") };
}

// ---- user directory -----------------------------------------------------------------

/** Installs our package into a Node-RED user directory the way `npm install <repo>` would: a symlink. */
export function installPackageLink(userDir: string, repoRoot = REPO_ROOT): void {
  const pkgFile = path.join(userDir, "package.json");
  const rel = path.relative(userDir, repoRoot).split(path.sep).join("/") || ".";
  fs.writeFileSync(
    pkgFile,
    JSON.stringify({ name: "door-access-demo-userdir", description: "Node-RED user directory of the door-access demo", version: "0.0.0", private: true, dependencies: { [PACKAGE_NAME]: `file:${rel}` } }, null, 2) + "\n",
  );
  const scopeDir = path.join(userDir, "node_modules", "@door-access");
  fs.mkdirSync(scopeDir, { recursive: true });
  fs.symlinkSync(repoRoot, path.join(scopeDir, "node-red"), "junction");
}

export interface SettingsOptions {
  uiPort: number;
  credentialSecret?: string;
}

/** The header the settings file's admin middleware sets to the value of INSTANCE_ENV. */
export const INSTANCE_HEADER = "x-door-access-demo-instance";
const INSTANCE_ENV = "DOOR_ACCESS_DEMO_INSTANCE";

export function settingsFile(o: SettingsOptions): string {
  return `// Written by scripts/demo.ts at every start: edits here are lost.
// No adminAuth: the editor is open to anyone who can reach 127.0.0.1:${o.uiPort}. Demo only.
module.exports = {
    uiHost: "127.0.0.1",
    uiPort: ${o.uiPort},
    flowFile: "flows.json",
    flowFilePretty: true,
    credentialSecret: ${JSON.stringify(o.credentialSecret ?? DEMO_CREDENTIAL_SECRET)},
    logging: { console: { level: "info", metrics: false, audit: false } },
    telemetry: { enabled: false, updateNotification: false },
    diagnostics: { enabled: false, ui: false },
    externalModules: { autoInstall: false, palette: { allowInstall: false } },
    editorTheme: { tours: false, projects: { enabled: false } },
    exportGlobalContextKeys: false,
    // Names this Node-RED process in every admin answer, so that the start-up check knows the
    // editor answering on the port is the one it started, not another program holding the port.
    httpAdminMiddleware: function (req, res, next) {
        res.setHeader(${JSON.stringify(INSTANCE_HEADER)}, process.env.${INSTANCE_ENV} || "");
        next();
    },
};
`;
}

// ---- ports and processes ------------------------------------------------------------

function listenProbe(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(null));
    srv.listen(port, "127.0.0.1", () => {
      const a = srv.address();
      const got = a && typeof a === "object" ? a.port : null;
      srv.close(() => resolve(got));
    });
  });
}

/** `preferred`, else the next free port up to `preferred + span - 1`, else an ephemeral one. */
export async function freePort(preferred = 0, span = 1): Promise<number> {
  if (preferred > 0) {
    for (let p = preferred; p < preferred + span; p++) {
      const got = await listenProbe(p);
      if (got !== null) return got;
    }
  }
  const got = await listenProbe(0);
  if (got === null) throw new Error("no free TCP port on 127.0.0.1");
  return got;
}

/**
 * Which installed Node-RED to start: `node-red` (4.x, Node 20) by default; the environment
 * variable DOOR_ACCESS_NODE_RED=node-red-5 picks the 5.x alias (needs Node >= 22.9).
 */
export function nodeRedPackage(): string {
  const name = process.env.DOOR_ACCESS_NODE_RED?.trim() || "node-red";
  if (!/^node-red(-\d+)?$/.test(name)) throw new Error(`DOOR_ACCESS_NODE_RED must be node-red or an alias like node-red-5, got ${JSON.stringify(name)}`);
  return name;
}

export function nodeRedScript(): string {
  return require.resolve(`${nodeRedPackage()}/red.js`, { paths: [REPO_ROOT] });
}

/** Preloaded into Node-RED: it stops when its stdin (a pipe from this process) closes. */
const STOP_WITH_PARENT = path.join(__dirname, "stop-with-parent.js");

export interface NodeRedProcess {
  child: ChildProcess;
  exited: Promise<void>;
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts Node-RED 4 (`node node_modules/node-red/red.js`) with a settings file from
 * `settingsFile`, and waits until the editor answers, as this process: its `/settings` answer
 * carries the instance token given to this child only (a random value in its environment). Any
 * other program holding the port answers without it, and is never taken for the editor: Node-RED
 * then exits with "port in use", which the caller sees (and startNodeRedOnFreePort retries).
 */
export async function startNodeRed(o: { userDir: string; settings: string; port: number; onLog?: (line: string) => void; timeoutMs?: number }): Promise<NodeRedProcess> {
  const instance = randomBytes(16).toString("hex");
  // stdin is a pipe this process holds and never writes to: when this process is gone, however
  // it ended, the pipe closes and the preloaded stop-with-parent stops Node-RED (an orphaned
  // Node-RED would keep the editor port).
  const child = spawn(process.execPath, ["-r", STOP_WITH_PARENT, nodeRedScript(), "-u", o.userDir, "-s", o.settings], {
    cwd: o.userDir,
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, NODE_RED_ENABLE_PROJECTS: "false", NODE_OPTIONS: "", [INSTANCE_ENV]: instance },
  });
  let out = "";
  let partial = "";
  const onData = (chunk: Buffer) => {
    const text = chunk.toString("utf8");
    out += text;
    const lines = (partial + text).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) o.onLog?.(line);
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  child.stdin!.on("error", () => undefined); // never written to
  let exited = child.exitCode !== null;
  const exitP = new Promise<void>((resolve) => child.once("exit", () => { exited = true; resolve(); }));

  const stop = async () => {
    if (exited) return;
    child.kill("SIGINT");
    const forced = setTimeout(() => { if (!exited) child.kill("SIGKILL"); }, 10_000);
    await exitP;
    clearTimeout(forced);
  };

  const url = `http://127.0.0.1:${o.port}`;
  const deadline = Date.now() + (o.timeoutMs ?? 60_000);
  for (;;) {
    if (exited) throw new Error(`Node-RED exited before the editor answered (exit code ${child.exitCode}):\n${out.slice(-4000)}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Node-RED did not answer at ${url} within ${o.timeoutMs ?? 60_000} ms:\n${out.slice(-4000)}`);
    }
    try {
      const res = await fetch(`${url}/settings`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer().catch(() => undefined);
      if (res.ok && res.headers.get(INSTANCE_HEADER) === instance) break;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, url, exited: exitP, output: () => out, stop };
}

/**
 * Starts Node-RED on a port `pick` chooses. A port that was free when it was picked can be taken
 * by another process before Node-RED listens on it (Node-RED then exits with "port in use"): with
 * `retry`, another port is picked, at most 5 times in all.
 */
export async function startNodeRedOnFreePort(o: {
  userDir: string;
  pick: () => Promise<number>;
  retry: boolean;
  writeSettings: (port: number) => string;
  onLog?: (line: string) => void;
  timeoutMs?: number;
}): Promise<NodeRedProcess> {
  for (let attempt = 1; ; attempt++) {
    const port = await o.pick();
    const settings = o.writeSettings(port);
    try {
      return await startNodeRed({ userDir: o.userDir, settings, port, onLog: o.onLog, timeoutMs: o.timeoutMs });
    } catch (e) {
      const taken = /Error: port in use|EADDRINUSE/.test(e instanceof Error ? e.message : String(e));
      if (!o.retry || !taken || attempt >= 5) throw e;
      o.onLog?.(`port ${port} was taken before Node-RED could listen on it: trying another`);
    }
  }
}

export interface Broker {
  port: number;
  close(): Promise<void>;
}

/** An in-process MQTT broker (aedes) on 127.0.0.1: `preferred`, or an ephemeral port when busy. */
export async function startBroker(preferred: number): Promise<Broker> {
  // aedes 1.x is ESM only, with no default export.
  const { Aedes } = (await import("aedes")) as unknown as { Aedes: { createBroker(): Promise<{ handle: (s: net.Socket) => void; close(cb?: () => void): void }> } };
  const broker = await Aedes.createBroker();
  const server = net.createServer((socket) => broker.handle(socket));
  const sockets = new Set<net.Socket>();
  server.on("connection", (s) => { sockets.add(s); s.once("close", () => sockets.delete(s)); });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  let port: number;
  try {
    port = await listen(preferred);
  } catch (e) {
    if (preferred === 0 || (e as NodeJS.ErrnoException).code !== "EADDRINUSE") throw e;
    port = await listen(0);
  }
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => broker.close(() => resolve()));
      }),
  };
}

// ---- the demo -----------------------------------------------------------------------

/**
 * `<dir>/demo.lock.json`: the demo running from that folder. Every start wipes `<dir>/userdir`, so
 * a second `npm start` while the first still runs (the usual reason why 1880 is taken) would
 * delete the running demo's flows, session and audit log under it: it refuses instead, naming
 * the running editor.
 */
interface DemoLock { pid: number; token: string; editorUrl: string | null }

function readDemoLock(file: string): DemoLock | null {
  try {
    const v = JSON.parse(fs.readFileSync(file, "utf8")) as Partial<DemoLock>;
    return typeof v.pid === "number" && typeof v.token === "string" ? { pid: v.pid, token: v.token, editorUrl: typeof v.editorUrl === "string" ? v.editorUrl : null } : null;
  } catch {
    return null;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Is the demo named by the lock still running? (A process id may be reused: its editor must answer too.) */
async function demoRunning(lock: DemoLock): Promise<boolean> {
  if (!processAlive(lock.pid)) return false;
  if (lock.editorUrl === null) return true; // still starting
  try {
    await fetch(lock.editorUrl, { signal: AbortSignal.timeout(2000) });
    return true;
  } catch {
    return false;
  }
}

export async function startDemo(options: DemoOptions = {}): Promise<RunningDemo> {
  const dir = path.resolve(options.dir ?? path.join(REPO_ROOT, ".demo"));
  const userDir = path.join(dir, "userdir");
  const cleanups: Array<() => Promise<void>> = [];
  const cleanup = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  };
  try {
    fs.mkdirSync(dir, { recursive: true });
    const lockFile = path.join(dir, "demo.lock.json");
    const other = readDemoLock(lockFile);
    if (other && (await demoRunning(other))) {
      throw new Error(
        `another demo (pid ${other.pid}) is running from ${dir}${other.editorUrl ? `, editor at ${other.editorUrl}` : ""}; ` +
          "its user directory would be wiped: stop it first (Ctrl-C in its terminal), or start this one with --dir <another folder>",
      );
    }
    const lock: DemoLock = { pid: process.pid, token: randomBytes(8).toString("hex"), editorUrl: null };
    fs.writeFileSync(lockFile, JSON.stringify(lock) + "\n");
    cleanups.push(async () => {
      if (readDemoLock(lockFile)?.token === lock.token) fs.rmSync(lockFile, { force: true });
    });
    for (const f of ["nodes/door-account.js", "dist/src/nodes/door-account.js"]) {
      if (!fs.existsSync(path.join(REPO_ROOT, f))) throw new Error(`${f} is missing: run \`npm run build\` first`);
    }
    // Simulator: 8787 unless busy.
    const simPort = options.simPort ?? 8787;
    let sim: RunningSimulator;
    try {
      sim = await startSimulator({ port: simPort });
    } catch (e) {
      if (simPort === 0 || (e as NodeJS.ErrnoException).code !== "EADDRINUSE") throw e;
      sim = await startSimulator({ port: 0 });
    }
    cleanups.push(() => sim.close());

    let broker: Broker | null = null;
    if (options.mqttPort !== false) {
      broker = await startBroker(options.mqttPort ?? 1883);
      const b = broker;
      cleanups.push(() => b.close());
    }

    // A fresh user directory every start: no stale flows, session files or audit log.
    fs.rmSync(userDir, { recursive: true, force: true });
    fs.mkdirSync(userDir, { recursive: true });
    installPackageLink(userDir);

    const settingsPath = path.join(userDir, "settings.js");
    const examples = options.deployExamples === false ? [] : loadExamples();
    const accountId = newNodeId();
    const flows = buildDemoFlows({ simUrl: sim.url, accountId, mqttPort: broker?.port ?? null, examples });
    const panelPath = dashboardPath(flows);
    if (panelPath !== null) {
      try {
        require.resolve(`${DASHBOARD_PACKAGE}/package.json`, { paths: [REPO_ROOT] });
      } catch {
        throw new Error(`${DASHBOARD_PACKAGE} is missing (the door panel example needs it): run \`npm ci\``);
      }
    }
    fs.writeFileSync(path.join(userDir, "flows.json"), JSON.stringify(flows, null, 4) + "\n");
    fs.writeFileSync(
      path.join(userDir, "flows_cred.json"),
      JSON.stringify(encryptCredentials(DEMO_CREDENTIAL_SECRET, { [accountId]: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password } }), null, 4) + "\n",
    );

    const nr = await startNodeRedOnFreePort({
      userDir,
      pick: () => (options.editorPort === 0 ? freePort(0) : freePort(options.editorPort ?? 1880, options.editorPort === undefined ? 20 : 1)),
      // A port the user named (--editor-port N) is probed once (freePort falls back to a free one
      // if N is busy then) and not replaced after Node-RED was started on it; a port the demo
      // picked may be picked again when it was taken in between.
      retry: !options.editorPort,
      writeSettings: (uiPort) => {
        fs.writeFileSync(settingsPath, settingsFile({ uiPort }));
        return settingsPath;
      },
      onLog: options.onLog ?? ((line) => process.stdout.write(`[node-red] ${line}\n`)),
      timeoutMs: options.startTimeoutMs,
    });
    cleanups.push(() => nr.stop());
    fs.writeFileSync(lockFile, JSON.stringify({ ...lock, editorUrl: `${nr.url}/` }) + "\n");

    let stopping: Promise<void> | null = null;
    return {
      editorUrl: `${nr.url}/`,
      simUrl: sim.url,
      sim,
      mqttUrl: broker ? `mqtt://127.0.0.1:${broker.port}` : null,
      userDir,
      accountId,
      dashboardUrl: panelPath === null ? null : `${nr.url}${panelPath}`,
      pid: nr.child.pid ?? -1,
      exited: nr.exited,
      output: nr.output,
      stop: () => (stopping ??= cleanup()),
    };
  } catch (e) {
    await cleanup();
    throw e;
  }
}

/** Polls the account's admin state endpoint until it reports `state` (or the time is up). */
export async function waitForAccountState(editorUrl: string, accountId: string, state = "ready", timeoutMs = 20_000): Promise<{ state: string; reason: string | null }> {
  const deadline = Date.now() + timeoutMs;
  let last: { state: string; reason: string | null } = { state: "unknown", reason: null };
  while (Date.now() < deadline) {
    try {
      const res = await fetch(new URL(`door-access/accounts/${accountId}/state`, editorUrl), { signal: AbortSignal.timeout(2000) });
      if (res.ok) {
        last = (await res.json()) as { state: string; reason: string | null };
        if (last.state === state) return last;
      }
    } catch {
      /* retry */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return last;
}

/** `--dir <folder> --sim-port <n> --editor-port <n> --mqtt-port <n|off>` (all optional). */
export function parseArgs(argv: string[]): DemoOptions {
  const o: DemoOptions = {};
  const port = (flag: string, v: string | undefined): number => {
    if (v === undefined || !/^\d{1,5}$/.test(v) || Number(v) > 65535) throw new Error(`${flag} needs a port number (0 = any free port)`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = argv[i + 1];
    if (a === "--dir" && v) o.dir = v;
    else if (a === "--sim-port") o.simPort = port(a, v);
    else if (a === "--editor-port") o.editorPort = port(a, v);
    else if (a === "--mqtt-port") o.mqttPort = v === "off" ? false : port(a, v);
    else if (a === "--no-examples") { o.deployExamples = false; continue; }
    else throw new Error(`unknown option ${a} (options: --dir, --sim-port, --editor-port, --mqtt-port <n|off>, --no-examples)`);
    i++;
  }
  return o;
}

/** The current parent process id from /proc (Linux); null where there is no /proc. */
function currentParentPid(): number | null {
  try {
    const stat = fs.readFileSync("/proc/self/stat", "utf8");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return Number.isInteger(ppid) ? ppid : null;
  } catch {
    return null;
  }
}

/**
 * Calls `onGone` once the process that started this one has ended (polled every `intervalMs`).
 * `process.ppid` is read once at start-up; an orphan is given a new parent (init or a subreaper),
 * which /proc shows at once; elsewhere, the old parent no longer existing says the same (a parent
 * that has ended but was not reaped still exists for `kill(pid, 0)`, hence /proc first).
 * Started by init (pid 1) there is no parent to outlive: nothing is watched.
 */
export function watchParent(onGone: () => void, intervalMs = 500): () => void {
  const parent = process.ppid;
  if (parent <= 1) return () => undefined;
  const gone = (): boolean => {
    const now = currentParentPid();
    if (now !== null) return now !== parent;
    return !processAlive(parent);
  };
  const timer = setInterval(() => {
    if (!gone()) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

async function main(): Promise<void> {
  let demo: RunningDemo | null = null;
  let exiting = false;
  const shutdown = (code: number) => {
    if (exiting) return;
    exiting = true;
    process.stdout.write("\nStopping Node-RED, the MQTT broker and the simulator...\n");
    void (demo?.stop() ?? Promise.resolve()).finally(() => process.exit(code));
  };
  // Ctrl-C, `kill`, a closed terminal.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => shutdown(0));
  // Whoever reads our output may be gone (see below): a closed pipe must not end this process
  // before it has stopped Node-RED.
  process.stdout.on("error", () => undefined);
  process.stderr.on("error", () => undefined);
  // `npm start` runs `sh -c "npm run build && exec node dist/scripts/demo.js"`: the `exec` makes
  // this process npm's own child, so the SIGINT and SIGTERM npm passes on reach it (sh would
  // keep a SIGINT to itself and wait for us). npm dies of SIGHUP and SIGKILL without passing
  // anything on: so, whoever started this process, stop when it is gone.
  watchParent(() => shutdown(0));

  demo = await startDemo(parseArgs(process.argv.slice(2)));
  if (exiting) return;
  const acc = await waitForAccountState(demo.editorUrl, demo.accountId, "ready", 15_000);
  const line = "-".repeat(78);
  process.stdout.write(
    [
      "",
      line,
      `Node-RED editor:   ${demo.editorUrl}`,
      "                   (no adminAuth: anyone who can reach 127.0.0.1 can edit the flows; demo only)",
      `Door simulator:    ${demo.simUrl}   (demo seed: doors 101 Front Door ... 107 Garage, 201 Shared Lobby)`,
      `  control surface: ${demo.simUrl}/_sim/requests  /_sim/counts  /_sim/devices/101  (see door-access-sim --help)`,
      `MQTT broker:       ${demo.mqttUrl ?? "none"}`,
      `Demo account:      ${DEMO_ACCOUNT.email} (phone number and password: docs/simulator.md, "Demo accounts"; never printed)`,
      `                   preconfigured as "Demo account (simulator)": ${acc.state}${acc.reason ? ` (${acc.reason})` : ""}`,
      `Example flows:     deployed one per tab; also under Import > Examples > ${PACKAGE_NAME}`,
      `Door panel:        ${demo.dashboardUrl ?? "not deployed"}${demo.dashboardUrl ? "   (example 08, Dashboard 2; open it on a phone or a narrow window)" : ""}`,
      `User directory:    ${demo.userDir} (rewritten at every start; Node-RED pid ${demo.pid})`,
      "Stop:              Ctrl-C stops Node-RED, the broker and the simulator (so does stopping npm start).",
      line,
      "",
    ].join("\n"),
  );
  // If Node-RED dies on its own, take the rest down too.
  void demo.exited.then(() => {
    if (exiting) return;
    process.stderr.write("Node-RED exited; stopping the demo.\n");
    shutdown(1);
  });
}

if (require.main === module) {
  main().catch((e: Error) => {
    process.stderr.write(`demo: ${e.message}\n`);
    process.exit(1);
  });
}
