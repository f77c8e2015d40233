/**
 * startDemo(): what `npm start` runs (scripts/demo.ts), and what the tests start on ephemeral
 * ports: `startDemo({ dir, simPort: 0, editorPort: 0, mqttPort: 0 })`. See scripts/demo.ts for
 * what the demo is.
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { DEMO_ACCOUNT, startSimulator, type RunningSimulator } from "../src/simulator/index.js";
import {
  DASHBOARD_PACKAGE,
  buildDemoFlows,
  dashboardPath,
  encryptCredentials,
  loadExamples,
  newNodeId,
} from "./demo-flows.js";
import { startBroker, type Broker } from "./mqtt-broker.js";
import {
  DEMO_CREDENTIAL_SECRET,
  REPO_ROOT,
  freePort,
  installPackageLink,
  processAlive,
  settingsFile,
  startNodeRedOnFreePort,
} from "./node-red-process.js";

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
  /** The door panel (example 07, Dashboard 2), e.g. http://127.0.0.1:1880/dashboard/doors; null when not deployed. */
  dashboardUrl: string | null;
  /**
   * The login the door panel asks for (all of `/dashboard`, its socket included): made at random
   * at every start, never stored in the repository (docs/security.md#the-door-panel-behind-a-login).
   */
  panelLogin: { user: string; password: string };
  /** Example 07's guest page (`http in` nodes, no login), e.g. http://127.0.0.1:1880/door-guest; null when not deployed. */
  guestUrl: string | null;
  /** Process id of the Node-RED child. */
  pid: number;
  /** Settles when the Node-RED child has exited (for whatever reason). */
  exited: Promise<void>;
  /** Everything Node-RED printed so far. */
  output(): string;
  /** Stops Node-RED, the broker and the simulator; idempotent. */
  stop(): Promise<void>;
}

/**
 * `<dir>/demo.lock.json`: the demo running from that folder. Every start wipes `<dir>/userdir`, so
 * a second `npm start` while the first still runs (the usual reason why 1880 is taken) would
 * delete the running demo's flows, session and audit log under it: it refuses instead, naming
 * the running editor.
 */
interface DemoLock {
  pid: number;
  token: string;
  editorUrl: string | null;
}

function readDemoLock(file: string): DemoLock | null {
  try {
    const v = JSON.parse(fs.readFileSync(file, "utf8")) as Partial<DemoLock>;
    return typeof v.pid === "number" && typeof v.token === "string"
      ? { pid: v.pid, token: v.token, editorUrl: typeof v.editorUrl === "string" ? v.editorUrl : null }
      : null;
  } catch {
    return null;
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
  const cleanups: Array<() => void | Promise<void>> = [];
  const cleanup = async () => {
    for (const c of cleanups.splice(0).reverse()) {
      try {
        await c();
      } catch {
        /* the next clean-up still runs */
      }
    }
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
    cleanups.push(() => {
      if (readDemoLock(lockFile)?.token === lock.token) fs.rmSync(lockFile, { force: true });
    });
    for (const f of ["dist/nodes/door-account/door-account.js", "dist/nodes/door-account/door-account.html"]) {
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
      JSON.stringify(
        encryptCredentials(DEMO_CREDENTIAL_SECRET, {
          [accountId]: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password },
        }),
        null,
        4,
      ) + "\n",
    );

    // The host's panel login: new at every start, printed by `npm start`, in settings.js as hashes only.
    const panelLogin = { user: "host", password: randomBytes(12).toString("base64url") };
    const guestPage = flows.some((n) => n.type === "http in" && n.url === "/door-guest");
    const nr = await startNodeRedOnFreePort({
      userDir,
      pick: () =>
        options.editorPort === 0
          ? freePort(0)
          : freePort(options.editorPort ?? 1880, options.editorPort === undefined ? 20 : 1),
      // A port the user named (--editor-port N) is probed once (freePort falls back to a free one
      // if N is busy then) and not replaced after Node-RED was started on it; a port the demo
      // picked may be picked again when it was taken in between.
      retry: !options.editorPort,
      writeSettings: (uiPort) => {
        fs.writeFileSync(settingsPath, settingsFile({ uiPort, panelLogin }));
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
      panelLogin,
      guestUrl: guestPage ? `${nr.url}/door-guest` : null,
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
