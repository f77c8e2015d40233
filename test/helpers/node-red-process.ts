/**
 * A real Node-RED process (red.js of the selected runtime, test/helpers/runtime.ts) with our
 * package linked into its user directory: for what only a process shows (a restart, several
 * instances on one Redis store). Deploys over the admin API; stops with SIGTERM (SIGKILL after 5 s).
 */
import { strict as assert } from "node:assert";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { nodeRedScript } from "./runtime.js";
import { freePort } from "./redis.js";
import { tempDir } from "./session.js";

const REPO = path.resolve(".");
const RED_JS = nodeRedScript; // node-red/red.js (4.x), or node-red-5 with DOOR_ACCESS_NODE_RED (test/helpers/runtime.ts)

export class NodeRedProcess {
  proc: ChildProcess | null = null;
  log = "";
  constructor(
    readonly name: string,
    readonly port: number,
    readonly userDir: string,
  ) {}

  /**
   * Starts Node-RED on a new user directory with our package linked into it, or again on
   * `userDir` (a restart: the flows, credentials and files it holds are read back).
   */
  static async start(name: string, userDirAgain?: string): Promise<NodeRedProcess> {
    const userDir = userDirAgain ?? tempDir(`door-nr-${name}-`);
    if (userDirAgain === undefined) {
      mkdirSync(path.join(userDir, "node_modules", "@door-access"), { recursive: true });
      symlinkSync(REPO, path.join(userDir, "node_modules", "@door-access", "node-red"), "dir");
    }
    const port = await freePort();
    const settings = path.join(userDir, "settings.js");
    writeFileSync(
      settings,
      `module.exports = ${JSON.stringify({
        uiHost: "127.0.0.1",
        uiPort: port,
        userDir,
        flowFile: "flows.json",
        // Each instance has its own credential secret, as real ones do.
        credentialSecret: `secret-of-${name}`,
        httpNodeRoot: "/",
        // info: the session's "adopted the pair renewed by another instance" line is what the test waits on.
        logging: { console: { level: "info", metrics: false, audit: false } },
        externalModules: { autoInstall: false, palette: { allowInstall: false } },
        diagnostics: { enabled: false },
        telemetry: { enabled: false },
        editorTheme: { tours: false },
      })};\n`,
    );
    const rt = new NodeRedProcess(name, port, userDir);
    const proc = spawn(process.execPath, [RED_JS, "-u", userDir, "-p", String(port), "-s", settings], {
      cwd: userDir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    rt.proc = proc;
    proc.stdout.on("data", (d: Buffer) => (rt.log += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (rt.log += d.toString()));
    proc.once("exit", () => (rt.proc = null));
    const end = Date.now() + 60_000;
    for (;;) {
      if (!rt.proc) throw new Error(`Node-RED ${name} exited:\n${rt.log}`);
      const types = await fetch(`${rt.base}/nodes`, { headers: { Accept: "application/json" } })
        .then((r) => (r.ok ? (r.json() as Promise<{ types: string[] }[]>) : null))
        .catch(() => null);
      if (types && types.some((m) => m.types.includes("door-unlock"))) return rt;
      if (types && Date.now() > end - 50_000 && !types.some((m) => m.types.includes("door-account"))) {
        throw new Error(`Node-RED ${name} did not load the door nodes:\n${rt.log}`);
      }
      if (Date.now() > end) throw new Error(`Node-RED ${name} did not start:\n${rt.log}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async deploy(flow: unknown[]): Promise<void> {
    const r = await fetch(`${this.base}/flows`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Node-RED-Deployment-Type": "full", "Node-RED-API-Version": "v1" },
      body: JSON.stringify(flow),
    });
    assert.equal(r.status, 204, `deploy on ${this.name}: ${r.status} ${await r.text()}`);
  }

  async accountState(id: string): Promise<{ state: string; reason: string | null }> {
    const r = await fetch(`${this.base}/door-access/accounts/${id}/state`);
    return (await r.json()) as never;
  }

  /** POSTs `body` as JSON to an http-in route of the flow; the answer's JSON. */
  async post(route: string, body: unknown): Promise<Record<string, unknown>> {
    const r = await fetch(`${this.base}${route}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(r.status, 200, `POST ${route} on ${this.name}`);
    return (await r.json()) as never;
  }

  async unlock(
    deviceId: number,
  ): Promise<{ outcome: string; status: number | null; deviceId: number; message?: string }> {
    const r = await fetch(`${this.base}/unlock`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ deviceId }),
    });
    assert.equal(r.status, 200, `POST /unlock on ${this.name}`);
    return (await r.json()) as never;
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => proc.kill("SIGKILL"), 5_000);
      proc.once("exit", () => {
        clearTimeout(t);
        resolve();
      });
      proc.kill("SIGTERM");
    });
  }
}
