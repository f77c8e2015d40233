/**
 * The processes the demo (`npm start`, scripts/start-demo.ts) and the tests start: Node-RED as a
 * child process with a user directory of our making, on a free port, checked to be the one
 * started; our package installed into that user directory as a link; and the account state poll
 * of our admin endpoint. The demo script and the tests both import this module; no test imports
 * the demo script.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";

export const REPO_ROOT = path.resolve(__dirname, "..", "..");
export const PACKAGE_NAME = "@door-access/node-red";
/** Not a secret: it only protects the demo's throw-away credentials file. */
export const DEMO_CREDENTIAL_SECRET = "door-access-demo (not a secret: demo only)";

// ---- user directory -----------------------------------------------------------------

/** Installs our package into a Node-RED user directory the way `npm install <repo>` would: a symlink. */
export function installPackageLink(userDir: string, repoRoot = REPO_ROOT): void {
  const pkgFile = path.join(userDir, "package.json");
  const rel = path.relative(userDir, repoRoot).split(path.sep).join("/") || ".";
  fs.writeFileSync(
    pkgFile,
    JSON.stringify(
      {
        name: "door-access-demo-userdir",
        description: "Node-RED user directory of the door-access demo",
        version: "0.0.0",
        private: true,
        dependencies: { [PACKAGE_NAME]: `file:${rel}` },
      },
      null,
      2,
    ) + "\n",
  );
  const scopeDir = path.join(userDir, "node_modules", "@door-access");
  fs.mkdirSync(scopeDir, { recursive: true });
  fs.symlinkSync(repoRoot, path.join(scopeDir, "node-red"), "junction");
}

export interface SettingsOptions {
  uiPort: number;
  credentialSecret?: string;
  /**
   * The login the door panel (Dashboard 2, `/dashboard`) asks for; the guest page (`/door-guest`,
   * `http in` nodes) asks for none. Only SHA-256 hashes are written into settings.js.
   */
  panelLogin?: { user: string; password: string };
}

/** The header the settings file's admin middleware sets to the value of INSTANCE_ENV. */
export const INSTANCE_HEADER = "x-door-access-demo-instance";
const INSTANCE_ENV = "DOOR_ACCESS_DEMO_INSTANCE";

export function settingsFile(o: SettingsOptions): string {
  return `// Written by scripts/node-red-process.ts at every start: edits here are lost.
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
    },${o.panelLogin ? panelLoginSettings(o.panelLogin) : ""}
};
`;
}

const sha256Hex = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/**
 * settings.js's `dashboard` section: Dashboard 2's pages (`middleware`) and its socket
 * (`ioMiddleware`) ask for the panel's login (HTTP Basic), docs/security.md#the-door-panel-behind-a-login.
 * Both are needed: the pages and the socket are served apart, and the socket takes a press for any
 * widget. (`httpNodeMiddleware` covers only `http in` nodes: neither Dashboard 2 nor its socket.)
 */
function panelLoginSettings(login: { user: string; password: string }): string {
  return `
    // The host's door panel (Dashboard 2 under /dashboard) asks for a login; the guest page
    // (/door-guest, served by http in nodes) does not, and shares nothing with the dashboard.
    dashboard: (function () {
        const crypto = require("crypto");
        const USER = Buffer.from(${JSON.stringify(sha256Hex(login.user))}, "hex");
        const PASSWORD = Buffer.from(${JSON.stringify(sha256Hex(login.password))}, "hex");
        const hash = (t) => crypto.createHash("sha256").update(t, "utf8").digest();
        function loggedIn(header) {
            const m = /^Basic ([A-Za-z0-9+/=]+)$/.exec(String(header || ""));
            if (!m) return false;
            const text = Buffer.from(m[1], "base64").toString("utf8");
            const i = text.indexOf(":");
            if (i < 0) return false;
            const user = crypto.timingSafeEqual(hash(text.slice(0, i)), USER);
            const password = crypto.timingSafeEqual(hash(text.slice(i + 1)), PASSWORD);
            return user && password;
        }
        return {
            // its pages, its scripts and /dashboard/_setup
            middleware: function (req, res, next) {
                if (loggedIn(req.headers.authorization)) return next();
                res.set("WWW-Authenticate", 'Basic realm="door panel", charset="UTF-8"');
                res.status(401).type("text/plain").send("The door panel needs a login.");
            },
            // its socket: a client that did not log in never connects, so it sends no widget-action.
            // (Dashboard 2's own checks kept: no socket opened as a websocket first, none cross-site.)
            ioMiddleware: function (socket, next) {
                if (String(socket.client.conn.request.url).indexOf("transport=websocket") !== -1) {
                    socket.client.conn.close();
                    return;
                }
                if (socket.handshake.xdomain !== false) {
                    socket.disconnect(true);
                    return;
                }
                if (!loggedIn(socket.handshake.headers.authorization)) return next(new Error("the door panel needs a login"));
                next();
            },
        };
    })(),`;
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
  if (!/^node-red(-\d+)?$/.test(name))
    throw new Error(`DOOR_ACCESS_NODE_RED must be node-red or an alias like node-red-5, got ${JSON.stringify(name)}`);
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
  /** Node-RED's output so far (an arrow function: may be passed on detached). */
  output: () => string;
  stop(): Promise<void>;
}

/**
 * Starts Node-RED 4 (`node node_modules/node-red/red.js`) with a settings file from
 * `settingsFile`, and waits until the editor answers, as this process: its `/settings` answer
 * carries the instance token given to this child only (a random value in its environment). Any
 * other program holding the port answers without it, and is never taken for the editor: Node-RED
 * then exits with "port in use", which the caller sees (and startNodeRedOnFreePort retries).
 */
export async function startNodeRed(o: {
  userDir: string;
  settings: string;
  port: number;
  onLog?: (line: string) => void;
  timeoutMs?: number;
}): Promise<NodeRedProcess> {
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
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  child.stdin.on("error", () => undefined); // never written to
  let exited = child.exitCode !== null;
  const exitP = new Promise<void>((resolve) =>
    child.once("exit", () => {
      exited = true;
      resolve();
    }),
  );

  const stop = async () => {
    if (exited) return;
    child.kill("SIGINT");
    const forced = setTimeout(() => {
      if (!exited) child.kill("SIGKILL");
    }, 10_000);
    await exitP;
    clearTimeout(forced);
  };

  const url = `http://127.0.0.1:${o.port}`;
  const deadline = Date.now() + (o.timeoutMs ?? 60_000);
  for (;;) {
    if (exited)
      throw new Error(`Node-RED exited before the editor answered (exit code ${child.exitCode}):\n${out.slice(-4000)}`);
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
 * `retry`, another port is picked, at most 5 times in all. With `retrySilent` too, a Node-RED that
 * never answers within `timeoutMs` is stopped, its output printed to stderr, and started once more:
 * the caller must allow for two starts (a test hook's limit above 2 x (timeoutMs + 15 s)), or a
 * second start that ends after the hook gave up is left running.
 */
export async function startNodeRedOnFreePort(o: {
  userDir: string;
  pick: () => Promise<number>;
  retry: boolean;
  /** Start once more a Node-RED that never answered (seen once on a loaded CI machine, cause unknown). */
  retrySilent?: boolean;
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
      const text = e instanceof Error ? e.message : String(e);
      const taken = /Error: port in use|EADDRINUSE/.test(text);
      const silent = o.retrySilent === true && text.startsWith("Node-RED did not answer");
      if (!o.retry || !(taken || silent) || attempt >= (taken ? 5 : 2)) throw e;
      if (taken) o.onLog?.(`port ${port} was taken before Node-RED could listen on it: trying another`);
      else process.stderr.write(`startNodeRedOnFreePort: ${text}\nstarting it once more\n`);
    }
  }
}

/** Is a process with this id alive (EPERM: alive, another user's)? */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Polls the account's admin state endpoint until it reports `state` (or the time is up). */
export async function waitForAccountState(
  editorUrl: string,
  accountId: string,
  state = "ready",
  timeoutMs = 20_000,
): Promise<{ state: string; reason: string | null }> {
  const deadline = Date.now() + timeoutMs;
  let last: { state: string; reason: string | null } = { state: "unknown", reason: null };
  while (Date.now() < deadline) {
    try {
      const res = await fetch(new URL(`door-access/accounts/${accountId}/state`, editorUrl), {
        signal: AbortSignal.timeout(2000),
      });
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
