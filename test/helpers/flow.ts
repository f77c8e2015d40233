/**
 * Shared setup of the Node-RED runtime tests (not a test file itself): a real Node-RED 4
 * runtime through node-red-node-test-helper, the four door nodes loaded from their compiled
 * entry points (package.json's node-red.nodes: dist/nodes/<type>/<type>.js), a fresh user
 * directory per flow, the simulator as the service.
 *
 * Requests are always counted at the simulator (its request log), never in our own code.
 */
import { strict as assert } from "node:assert";
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { startSimulator, DEMO_ACCOUNT } from "../../src/simulator/index.js";
import type { RunningSimulator, SimulatorOptions } from "../../src/simulator/index.js";
import { closeAllParked } from "../../src/account/registry.js";
import { entryPoint } from "./node-files.js";
import { nodeRedPath, resolveFromNodeRed } from "./runtime.js";
import { freshUserDir } from "./temp-dir.js";
import { until } from "./until.js";

// node-red-node-test-helper (no type declarations), our nodes' entry points and Node-RED's own
// nodes are CommonJS, found by path at run time.
const requireCjs = createRequire(__filename);
export const helper: any = requireCjs("node-red-node-test-helper");
helper.init(nodeRedPath); // Node-RED 4, or 5 with DOOR_ACCESS_NODE_RED=node-red-5 (test/helpers/runtime.ts)

export { DEMO_ACCOUNT };

const load = (type: string): unknown => requireCjs(entryPoint(type));
export const accountModule = load("door-account") as (red: any) => void;
export const devicesModule = load("door-devices") as (red: any) => void;
export const statusModule = load("door-status") as (red: any) => void;
export const unlockModule = load("door-unlock") as (red: any) => void;
export const eventsModule = load("door-events") as (red: any) => void;
export const passModule = load("door-pass") as (red: any) => void;
/** The editor sidebar plugin (it registers the sidebar's admin routes). */
export const pluginModule = load("door-access-sidebar") as (red: any) => void;
const core = (file: string): unknown => requireCjs(resolveFromNodeRed(`@node-red/nodes/core/common/${file}.js`));
export const catchModule: unknown = core("25-catch");
/** Node-RED's Complete node. */
export const completeModule: unknown = core("24-complete");
/** Node-RED's Status node (not door-status: that is statusModule). */
export const nodeRedStatusModule: unknown = core("25-status");
/** Node-RED's Change node (changeNode() builds one). */
export const changeModule: unknown = requireCjs(resolveFromNodeRed("@node-red/nodes/core/function/15-change.js"));
export const ALL_NODES = [accountModule, devicesModule, statusModule, unlockModule];

export const TAB = "tab1";
export const CREDS = { acc1: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password } };

// Re-exported: test files that start no Node-RED import them from their own files, so that the
// fast loop keeps them (test/helpers/test-scope.ts).
export { freshUserDir, until };

export async function startSim(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  return startSimulator({ host: "127.0.0.1", port: 0, ...options });
}

// The request counters over the simulator's request log (test/helpers/requests.ts).
export { count, logins, unlockPuts, unlockRequests } from "./requests.js";

export function accountNode(baseUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: "acc1", type: "door-account", name: "demo", baseUrl, loginMethod: "phone", auditLog: "", ...extra };
}

/**
 * The headers the editor's $.ajax sends with a POST to our admin routes; a POST without them is
 * refused (docs/security.md#cross-site-requests).
 */
export const EDITOR_HEADERS = { "Content-Type": "application/json", "X-Requested-With": "XMLHttpRequest" };

/** A POST to an admin route as the editor sends it (send a JSON string or an object). */
export function editorPost(url: string): any {
  return helper.request().post(url).set(EDITOR_HEADERS);
}

export function tab(): Record<string, unknown> {
  return { id: TAB, type: "tab", label: "doors" };
}

/** A door-unlock node wired to helper nodes "ok" (output 1) and "fail" (output 2). */
export function unlockNode(extra: Record<string, unknown> = {}, id = "u1"): Record<string, unknown> {
  return {
    id,
    type: "door-unlock",
    z: TAB,
    name: "",
    account: "acc1",
    deviceId: "",
    doorName: "",
    doorLocation: "",
    lockId: "",
    actor: "",
    rejectRetained: true,
    wires: [[`${id}-ok`], [`${id}-fail`]],
    ...extra,
  };
}

/** A door-status node of account acc1 wired to helper node "<id>-out"; no door unless `extra` picks one. */
export function doorStatusNode(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    type: "door-status",
    z: TAB,
    name: "",
    account: "acc1",
    deviceId: "",
    doorName: "",
    doorLocation: "",
    wires: [[`${id}-out`]],
    ...extra,
  };
}

/** A door-devices node of account acc1 wired to helper node "<id>-out" (the device list unless `extra` sets `list`). */
export function doorDevicesNode(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, type: "door-devices", z: TAB, name: "", account: "acc1", wires: [[`${id}-out`]], ...extra };
}

/** Node-RED's Complete node for the nodes in `scope`, wired to helper node "done-out" (load completeModule with it). */
export function completeNode(scope: string[] = ["u1"]): Record<string, unknown> {
  return { id: "cmp", type: "complete", z: TAB, name: "", scope, uncaught: false, wires: [["done-out"]] };
}

/** Node-RED's Status node for the nodes in `scope`, wired to helper node "status-out" (load nodeRedStatusModule with it). */
export function nodeRedStatusNode(scope: string[] = ["u1"]): Record<string, unknown> {
  return { id: "sts", type: "status", z: TAB, name: "", scope, wires: [["status-out"]] };
}

/** A door-events node (docs/events.md) wired to helper node `<id>-out` (load eventsModule with it). */
export function doorEventsNode(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, type: "door-events", z: TAB, name: "", account: "acc1", wires: [[`${id}-out`]], ...extra };
}

/** A door-pass node (docs/passes.md) wired to helper node `<id>-out` (load passModule with it). */
export function doorPassNode(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, type: "door-pass", z: TAB, name: "", account: "acc1", wires: [[`${id}-out`]], ...extra };
}

export function helperNodes(...ids: string[]): Record<string, unknown>[] {
  return ids.map((id) => ({ id, type: "helper", z: TAB }));
}

/** A Node-RED change node (changeModule): rules on msg properties, each a "set" to a string or a "delete". */
export function changeNode(
  id: string,
  rules: { t: "set" | "delete"; p: string; to?: string }[],
  wires: string[],
): Record<string, unknown> {
  return {
    id,
    type: "change",
    z: TAB,
    name: "",
    rules: rules.map((r) =>
      r.t === "set" ? { t: "set", p: r.p, pt: "msg", to: r.to, tot: "str" } : { t: "delete", p: r.p, pt: "msg" },
    ),
    wires: [wires],
  };
}

/** A Catch node on the tab, wired to helper node "caught". */
export function catchNode(): Record<string, unknown>[] {
  return [
    { id: "catch1", type: "catch", z: TAB, name: "", scope: null, uncaught: false, wires: [["caught"]] },
    { id: "caught", type: "helper", z: TAB },
  ];
}

/** The standard one-unlock-node flow. */
export function unlockFlow(
  baseUrl: string,
  unlockExtra: Record<string, unknown> = {},
  accountExtra: Record<string, unknown> = {},
): Record<string, unknown>[] {
  return [tab(), accountNode(baseUrl, accountExtra), unlockNode(unlockExtra), ...helperNodes("u1-ok", "u1-fail")];
}

export interface Loaded {
  userDir: string;
}

/** Loads a flow into a fresh user directory (the token file and the audit log land there). */
export async function loadFlow(
  flow: Record<string, unknown>[],
  opts: {
    userDir?: string;
    creds?: Record<string, unknown>;
    nodes?: unknown[];
    /** More runtime settings (e.g. `credentialSecret`). */
    settings?: Record<string, unknown>;
  } = {},
): Promise<Loaded> {
  const userDir = opts.userDir ?? freshUserDir();
  helper.settings({ ...opts.settings, userDir });
  const needsCatch = flow.some((n) => n.type === "catch");
  const nodes = [...(opts.nodes ?? ALL_NODES), ...(needsCatch ? [catchModule] : [])];
  // A copy: the runtime keeps the object it is given as its credential store, and a later deploy
  // (helper.setFlows) rewrites it; the shared CREDS must stay as they are for the next test file.
  await helper.load(nodes, flow, structuredClone(opts.creds ?? CREDS));
  return { userDir };
}

export function accountOf(id = "acc1"): any {
  return helper.getNode(id);
}

/** Waits until the account is ready and its warm-up device list fetch has landed. */
export async function waitReady(id = "acc1"): Promise<void> {
  await until("the account to be ready with its device list", () => {
    const a = accountOf(id)?.account;
    return a?.session.state === "ready" && a.directory.cached() !== null;
  });
}

export async function waitState(state: string, id = "acc1"): Promise<void> {
  await until(`the account state ${state}`, () => accountOf(id)?.account?.session.state === state);
}

export interface Output {
  port: 0 | 1;
  msg: any;
}

/**
 * Node-RED's Node keeps "input" handlers in its own list, so removeListener/once do not
 * work for them: each helper node gets one permanent handler that hands messages to waiters.
 */
const waiters = new WeakMap<object, ((m: any) => boolean)[]>();
function waitOn(node: any, take: (m: any) => boolean): () => void {
  let list = waiters.get(node);
  if (!list) {
    const l: ((m: any) => boolean)[] = [];
    list = l;
    waiters.set(node, l);
    node.on("input", (m: any) => {
      // A waiter may remove waiters itself (unlock() cancels its other output): remove the
      // consumer by identity, not by position.
      for (const w of [...l]) {
        if (!l.includes(w)) continue;
        if (w(m)) {
          const i = l.indexOf(w);
          if (i >= 0) l.splice(i, 1);
          break;
        }
      }
    });
  }
  list.push(take);
  const mine = list;
  return () => {
    const i = mine.indexOf(take);
    if (i >= 0) mine.splice(i, 1);
  };
}

/**
 * Sends one message into a door-unlock node and resolves with the message that comes out on
 * either output (helper nodes `<id>-ok` and `<id>-fail`), matched by _msgid.
 */
export function unlock(msg: Record<string, unknown>, id = "u1", timeoutMs = 15000): Promise<Output> {
  const msgid = (msg._msgid as string | undefined) ?? `t-${Math.random().toString(16).slice(2)}`;
  msg._msgid = msgid;
  return new Promise((resolve, reject) => {
    const cancel: (() => void)[] = [];
    const settle =
      (port: 0 | 1) =>
      (m: any): boolean => {
        if (m._msgid !== msgid) return false;
        clearTimeout(timer);
        cancel.forEach((c) => c());
        resolve({ port, msg: m });
        return true;
      };
    const timer = setTimeout(() => {
      cancel.forEach((c) => c());
      reject(new Error(`no output from ${id} within ${timeoutMs} ms`));
    }, timeoutMs);
    cancel.push(waitOn(helper.getNode(`${id}-ok`), settle(0)), waitOn(helper.getNode(`${id}-fail`), settle(1)));
    helper.getNode(id).receive(msg);
  });
}

/** Resolves with the next message that reaches a helper node. */
export function next(id: string, timeoutMs = 15000): Promise<any> {
  return new Promise((resolve, reject) => {
    let cancel = (): void => undefined;
    const timer = setTimeout(() => {
      cancel();
      reject(new Error(`no message at ${id} within ${timeoutMs} ms`));
    }, timeoutMs);
    cancel = waitOn(helper.getNode(id), (m) => {
      clearTimeout(timer);
      resolve(m);
      return true;
    });
  });
}

/** Collects every message reaching a helper node from now on. */
export function collect(id: string): any[] {
  const got: any[] = [];
  const take = (m: any): boolean => {
    got.push(m);
    waitOn(helper.getNode(id), take);
    return true;
  };
  waitOn(helper.getNode(id), take);
  return got;
}

/** Asserts a failed unlock: output 2, the outcome and status, the common payload fields. */
export function assertFailed(out: Output, outcome: string, status: number | null): any {
  assert.equal(out.port, 1, `expected output 2, got output ${out.port + 1}: ${JSON.stringify(out.msg.payload)}`);
  const p = out.msg.payload;
  assert.equal(p.outcome, outcome, `outcome: ${JSON.stringify(p)}`);
  assert.equal(p.status, status);
  assert.equal(typeof p.message, "string");
  assert.ok(p.message.length > 0);
  assert.ok(!Number.isNaN(Date.parse(p.at)), "at is a timestamp");
  assert.equal(typeof p.mayHaveOpened, "boolean");
  return p;
}

export function assertAccepted(out: Output): any {
  assert.equal(out.port, 0, `expected output 1, got output ${out.port + 1}: ${JSON.stringify(out.msg.payload)}`);
  const p = out.msg.payload;
  assert.equal(p.outcome, "accepted");
  assert.equal(p.status, 200);
  assert.match(p.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
  return p;
}

export function readAudit(userDir: string, file = "door-access-audit.jsonl"): any[] {
  const p = path.join(userDir, file);
  if (!existsSync(p)) return [];
  return readFileSync(p, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

/** The last status a node set (Node.prototype.status is a sinon spy under the test helper). */
export function lastStatus(node: any): { fill?: string; shape?: string; text?: string } | null {
  const spy = node.status;
  if (!spy || !spy.getCalls) return null;
  const calls = spy.getCalls().filter((c: any) => c.thisValue === node);
  return calls.length ? calls[calls.length - 1].args[0] : null;
}

/**
 * Node-RED's translation of a catalogue key. Under the test helper RED._ returns the key
 * itself (no message catalogue is loaded), in a full runtime the en-US text: accept both.
 */
export function textMatches(text: string | undefined, key: string, english: RegExp): boolean {
  if (typeof text !== "string") return false;
  return text.includes(key) || english.test(text);
}

/**
 * A deploy to the loaded runtime (what the editor's Deploy does): `type` "full", "flows" or
 * "nodes". Resolves once the new flows have started. node-red-node-test-helper's own setFlows
 * starts listening for "flows:started" only after the deploy call returns, and gives up 300 ms
 * later: a deploy that waits on a node's close (an account draining its unlocks) or a busy
 * machine made it fail now and then. Here the listener is in place before the deploy.
 */
export async function deployFlows(
  flow: Record<string, unknown>[],
  type: "full" | "flows" | "nodes" = "full",
  creds: Record<string, unknown> = {},
  timeoutMs = 60_000,
): Promise<void> {
  const h = helper as unknown as {
    _events: { on(e: string, f: () => void): void; off(e: string, f: () => void): void };
    _redNodes: { setFlows(f: unknown, c: unknown, t: string): Promise<unknown> };
  };
  let onStarted: () => void = () => undefined;
  let timer: NodeJS.Timeout | undefined;
  const started = new Promise<void>((resolve, reject) => {
    onStarted = () => resolve();
    timer = setTimeout(
      () => reject(new Error(`the flows did not start within ${timeoutMs} ms of the deploy`)),
      timeoutMs,
    );
    h._events.on("flows:started", onStarted);
  });
  try {
    await h._redNodes.setFlows(flow, structuredClone(creds), type);
    await started;
  } finally {
    clearTimeout(timer);
    h._events.off("flows:started", onStarted);
  }
}

/** Stops the flows as a redeploy does: each door-account is parked, ready to be reclaimed. */
export async function stopFlows(): Promise<void> {
  await helper.unload();
}

/** Stops the flows and closes the parked accounts too (a Node-RED restart): nothing is left running. */
export async function teardown(): Promise<void> {
  await stopFlows();
  await closeAllParked();
}
