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
 * The door panel of example 07 runs on FlowFuse Dashboard 2 (`@flowfuse/node-red-dashboard`, a
 * devDependency: nothing is installed at run time), behind a login made at every start (printed;
 * settings.js holds only its hashes); its guest page runs on `http in` nodes, without one. Node-RED loads node modules from every
 * `node_modules` folder above its own (here the repository's), so the demo's Node-RED finds it
 * there; `startDemo` checks that it can be resolved and gives the panel's address.
 *
 * Every start wipes and rewrites the user directory: nothing stale (flows, session token
 * files, audit log) survives from a previous run. Ctrl-C stops everything it started; so do
 * SIGTERM and SIGHUP, and the end of the process that started it (npm): see main().
 *
 * This file is the command line (main, parseArgs, watchParent). The parts, which the tests import
 * too: scripts/start-demo.ts (startDemo), scripts/demo-flows.ts (the flows),
 * scripts/node-red-process.ts (Node-RED, ports, the package link), scripts/mqtt-broker.ts.
 */
import * as fs from "node:fs";
import { DEMO_ACCOUNT } from "../src/simulator/index.js";
import { argTokens } from "../src/util/args.js";
import { PACKAGE_NAME, processAlive, waitForAccountState } from "./node-red-process.js";
import { startDemo, type DemoOptions, type RunningDemo } from "./start-demo.js";

const OPTIONS = {
  dir: { type: "string" },
  "sim-port": { type: "string" },
  "editor-port": { type: "string" },
  "mqtt-port": { type: "string" },
  "no-examples": { type: "boolean" },
} as const;

/** `--dir <folder> --sim-port <n> --editor-port <n> --mqtt-port <n|off>` (all optional). */
export function parseArgs(argv: string[]): DemoOptions {
  const o: DemoOptions = {};
  const port = (flag: string, v: string | undefined): number => {
    if (v === undefined || !/^\d{1,5}$/.test(v) || Number(v) > 65535)
      throw new Error(`${flag} needs a port number (0 = any free port)`);
    return Number(v);
  };
  for (const t of argTokens(argv, OPTIONS)) {
    const a = t.kind === "option" ? `--${t.name}` : t.kind === "end" ? "--" : t.value;
    const v = t.kind === "option" ? t.value : undefined;
    if (a === "--dir" && v) o.dir = v;
    else if (a === "--sim-port") o.simPort = port(a, v);
    else if (a === "--editor-port") o.editorPort = port(a, v);
    else if (a === "--mqtt-port") o.mqttPort = v === "off" ? false : port(a, v);
    else if (a === "--no-examples") o.deployExamples = false;
    else
      throw new Error(
        `unknown option ${t.kind === "option" ? t.raw : a} (options: --dir, --sim-port, --editor-port, --mqtt-port <n|off>, --no-examples)`,
      );
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
      `Door panel:        ${demo.dashboardUrl ?? "not deployed"}${demo.dashboardUrl ? "   (example 07, Dashboard 2; open it on a phone or a narrow window)" : ""}`,
      ...(demo.dashboardUrl
        ? [
            `  panel login:     user ${demo.panelLogin.user}, password ${demo.panelLogin.password}   (new at every start; all of /dashboard asks for it)`,
          ]
        : []),
      ...(demo.guestUrl
        ? [
            `Guest page:        ${demo.guestUrl}   (example 07, no login: a guest types a pass's code; codes from examples 10 and 11)`,
          ]
        : []),
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
