/**
 * The Node-RED runtime the bench measures in: our nodes run in a real Node-RED 4 runtime through
 * node-red-node-test-helper, as in the test suite (test/helpers/flow.ts); the helper's sinon spies
 * on Node.prototype are removed after the flow is loaded so they neither add per-message cost nor
 * retain every call.
 *
 * `startRig` deploys ourFlow and the hand-built flow into one runtime and hands every
 * measurement the same set of operations (`Rig.ops`): the node's unlock, the floors beside it,
 * the status read, the hand-built flow.
 */
import { createRequire } from "node:module";
import * as path from "node:path";
import type { NodeAPI, Node, NodeDef } from "node-red";
import type { Account } from "../src/account/account.js";
import { OTHER_ACCOUNT } from "../src/simulator/seed.js";
import { type Counts, REPO_ROOT } from "./args.js";
import { flowCredentials, handBuiltFlow, ourFlow } from "./flows.js";
import { Raw } from "./floors.js";
import { resetLog } from "./sim-process.js";
import type { Op } from "./stats.js";

/** A message as the bench's sink nodes see it. */
type Msg = Record<string, unknown> & { _msgid: string };

/** A function of Node.prototype, which the test helper may have wrapped in a sinon spy. */
type MaybeSpied = ((...args: never[]) => unknown) & { getCalls?: unknown };

/** What the bench uses of a node in the runtime. */
interface RuntimeNode {
  on(event: "input", listener: (msg: Msg) => void): void;
  receive(msg: Record<string, unknown>): void;
  send?: MaybeSpied;
  /** door-account's account (null while it has none). */
  account?: Account | null;
}

/** What the bench uses of node-red-node-test-helper (which has no type declarations). */
interface TestHelper {
  init(nodeRedPath: string): void;
  settings(settings: Record<string, unknown>): void;
  load(nodes: unknown[], flow: Record<string, unknown>[], credentials: Record<string, unknown>): Promise<void>;
  unload(): Promise<void>;
  getNode(id: string): RuntimeNode | null;
  /** The sinon sandbox of the helper's spies. */
  _sandbox: { restore(): void };
  /** Node-RED's Node.prototype. */
  _NodePrototype: { send: MaybeSpied; status: MaybeSpied };
}

// The test helper and Node-RED's own node files are CommonJS, some found by path at run time.
const requireCjs = createRequire(__filename);
const helper = requireCjs("node-red-node-test-helper") as TestHelper;
helper.init(require.resolve("node-red", { paths: [REPO_ROOT] }));
const nrNodes = path.dirname(
  require.resolve("@node-red/nodes/package.json", {
    paths: [path.dirname(require.resolve("node-red", { paths: [REPO_ROOT] }))],
  }),
);
const load = (p: string): unknown => requireCjs(p);
/** Our nodes' entry points, as Node-RED finds them: package.json's node-red.nodes. */
const ENTRIES = (load(path.join(REPO_ROOT, "package.json")) as { "node-red": { nodes: Record<string, string> } })[
  "node-red"
].nodes;
const OUR_NODES = ["door-account", "door-devices", "door-events", "door-pass", "door-status", "door-unlock"].map((n) =>
  load(path.join(REPO_ROOT, ENTRIES[n])),
);

/**
 * The Node-RED floor: a node that does the floor's work (Raw.auditedPut: one audit line, fsync,
 * the PUT) in its input handler and sends the message on. What Node-RED's own delivery adds.
 */
let floorForNode: Raw | null = null;
function benchFloorNode(RED: NodeAPI): void {
  RED.nodes.registerType("bench-floor", function (this: Node, config: NodeDef) {
    RED.nodes.createNode(this, config);
    this.on("input", (msg, send, done) => {
      if (!floorForNode) return done(new Error("bench: no floor"));
      floorForNode.auditedPut().then(
        () => {
          send(msg);
          done();
        },
        (e: Error) => done(e),
      );
    });
  });
}
const CORE_NODES = [
  benchFloorNode,
  load(path.join(nrNodes, "core", "network", "21-httprequest.js")),
  load(path.join(nrNodes, "core", "function", "15-change.js")),
  load(path.join(nrNodes, "core", "function", "10-switch.js")),
  load(path.join(nrNodes, "core", "function", "10-function.js")),
];

export async function loadRuntime(flow: Record<string, unknown>[], userDir: string): Promise<void> {
  helper.settings({ userDir, logging: { console: { level: "off" } } });
  await helper.load([...OUR_NODES, ...CORE_NODES], flow, flowCredentials());
  // The helper spies on Node.prototype.{send,status,log,...} (recording every call, with an
  // Error for its call stack, and emitting an event per call on the next tick): test
  // instrumentation, not Node-RED. Remove it. Node-RED also copied the spied `send` onto every
  // wired node at creation (Node.updateWires: this.send = Node.prototype.send), so put the
  // real one back there too; otherwise each message leaks a call record (~1.4 KB).
  helper._sandbox.restore();
  const proto = helper._NodePrototype;
  for (const n of flow) {
    const node = typeof n.id === "string" ? helper.getNode(n.id) : null;
    if (node && Object.prototype.hasOwnProperty.call(node, "send") && typeof node.send?.getCalls === "function")
      node.send = proto.send;
  }
  if (typeof proto.send.getCalls === "function" || typeof proto.status.getCalls === "function")
    throw new Error("the test helper's spies are still in place");
}

export async function unloadRuntime(): Promise<void> {
  await helper.unload();
  const registry = load(path.join(REPO_ROOT, "dist", "src", "account", "registry.js")) as {
    closeAllParked(): Promise<void>;
  };
  await registry.closeAllParked();
}

/** A node of the loaded flow. */
export function nodeOf(id: string): RuntimeNode {
  const n = helper.getNode(id);
  if (!n) throw new Error(`bench: no node ${id} in the flow`);
  return n;
}

/** The door-account node's account (session, directory, audit log), if it has one. */
function currentAccount(): Account | null | undefined {
  return helper.getNode("acc1")?.account;
}

/** The door-account node's account (session, directory, audit log). */
export function accountOf(): Account {
  const a = currentAccount();
  if (!a) throw new Error("bench: the door-account node acc1 has no account");
  return a;
}

export async function waitReady(timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const a = currentAccount();
    if (a?.session.state === "ready" && a.directory.cached() !== null) return;
    if (Date.now() > end) throw new Error(`the account did not become ready (state ${a?.session.state})`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A node of the loaded flow (it must be there). */
function flowNode(id: string): RuntimeNode {
  const n = helper.getNode(id);
  if (!n) throw new Error(`bench: no node ${id} in the flow`);
  return n;
}

/**
 * Sends messages into a node and resolves when the same message (by _msgid) reaches one of the
 * sink helper nodes. One permanent input handler per sink (Node-RED keeps input handlers in its
 * own list).
 */
export class Driver {
  private readonly pending = new Map<string, (port: number, msg: Msg) => void>();
  private seq = 0;
  constructor(
    private readonly entry: string,
    sinks: string[],
    private readonly prefix: string,
  ) {
    sinks.forEach((id, port) => {
      flowNode(id).on("input", (m) => {
        const r = this.pending.get(m._msgid);
        if (r) {
          this.pending.delete(m._msgid);
          r(port, m);
        }
      });
    });
  }
  send(msg: Record<string, unknown> = {}): Promise<{ port: number; msg: Msg }> {
    const id = `${this.prefix}${++this.seq}`;
    msg._msgid = id;
    return new Promise((resolve) => {
      this.pending.set(id, (port, m) => resolve({ port, msg: m }));
      flowNode(this.entry).receive(msg);
    });
  }
}

/**
 * A door-unlock node built by flows.unlockNode(id): its driver, and the op that sends it a
 * message made by `msg` (an empty one by default) and succeeds when it leaves by output 1 (accepted).
 */
export function unlockDriver(
  id: string,
  prefix: string,
  msg: () => Record<string, unknown> = () => ({}),
): { driver: Driver; op: Op } {
  const driver = new Driver(id, [`${id}-ok`, `${id}-fail`], prefix);
  return { driver, op: async () => (await driver.send(msg())).port === 0 };
}

/** Everything a measurement in the runtime needs. */
export interface Rig {
  simUrl: string;
  C: Counts;
  reps: number;
  userDir: string;
  /** The account behind acc1 (session, directory, audit). */
  account: Account;
  /** door-unlock u1 (no rule): to send messages that are not plain unlocks. */
  unlock: Driver;
  ops: {
    /** door-unlock u1 (no rule), message in → accepted out. */
    node: Op;
    /** The floors (bench/floors.ts). */
    floor: Op;
    put: Op;
    both: Op;
    same: Op;
    /** The floor's work done by a trivial node: what Node-RED's delivery adds. */
    nodeRedFloor: Op;
    /** door-status, and its floor (GET + JSON parse). */
    status: Op;
    rawGet: Op;
    /** The hand-built flow of core nodes (logs in per message, the other account). */
    handBuilt: Op;
  };
  raw: Raw;
  /** Takes the session's current access token for the raw floors (call before each repetition). */
  refreshToken(): Promise<void>;
  /** Closes the floors' pool and file, and unloads the runtime. */
  close(): Promise<void>;
  /** After a failure: closes the floors' pool and file if close() did not run. */
  abort(): Promise<void>;
}

/** Deploys our nodes and the hand-built flow into one Node-RED 4 runtime, ready to measure. */
export async function startRig(simUrl: string, userDir: string, C: Counts, reps: number): Promise<Rig> {
  await resetLog(simUrl);
  await loadRuntime([...ourFlow(simUrl), ...handBuiltFlow(simUrl)], userDir);
  await waitReady();
  const account = accountOf();
  const u1 = unlockDriver("u1", "u");
  const status = new Driver("st", ["st-out", "st-err"], "s");
  const hand = new Driver("hb-login", ["hb-out"], "h");
  let token = "";
  const refreshToken = async () => {
    token = await account.session.token();
  };
  await refreshToken();
  const raw = new Raw(simUrl, path.join(userDir, "raw-floor-audit.jsonl"), () => token);
  await raw.open();
  floorForNode = raw;
  const nodeRedFloor = new Driver("nrf", ["nrf-out"], "f");
  let closed = false;
  return {
    simUrl,
    C,
    reps,
    userDir,
    account,
    raw,
    refreshToken,
    unlock: u1.driver,
    ops: {
      node: u1.op,
      floor: () => raw.auditedPut(),
      put: () => raw.put(),
      both: () => raw.auditedPut(true),
      same: () => raw.sameBytesPut(),
      nodeRedFloor: async () => (await nodeRedFloor.send({})).port === 0,
      status: async () => (await status.send({})).port === 0,
      rawGet: () => raw.get(),
      // The hand-built flow's input: the login body, as an inject or change node would set it.
      handBuilt: async () =>
        (await hand.send({ payload: { phoneNumber: OTHER_ACCOUNT.phoneNumber, password: OTHER_ACCOUNT.password } })).msg
          .statusCode === 200,
    },
    close: async () => {
      if (closed) return;
      closed = true;
      floorForNode = null;
      await raw.close();
      await unloadRuntime();
    },
    abort: async () => {
      if (closed) return;
      closed = true;
      await raw.close().catch(() => undefined);
    },
  };
}
