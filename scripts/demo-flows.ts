/**
 * The demo's flows: the example flows (examples/*.json) read as Import > Examples shows them, each
 * put on a tab of its own with the demo's account, and the credentials file Node-RED would write.
 */
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "./node-red-process.js";

export const EXAMPLES_DIR = path.join(REPO_ROOT, "examples");
/** The flow node types of ours that name a `door-account` (property `account`). */
export const ACCOUNT_USERS = ["door-devices", "door-events", "door-pass", "door-status", "door-unlock"];
/** Where an example's booking calendar is the simulator's demo calendar (docs/simulator.md#demo-calendar). */
const EXAMPLE_SIM = "http://127.0.0.1:8787";

/** A new node id as Node-RED makes them (16 hex digits, random): never one a page elsewhere could know. */
export function newNodeId(): string {
  return randomBytes(8).toString("hex");
}
/** The id of the `mqtt-broker` config node in the MQTT examples. */
export const EXAMPLE_BROKER_ID = "d00ac0c0b40c0001";

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
      '"Demo account (simulator)" is logged in with the simulator\'s demo account (printed by `npm start`).',
  });
  flows.push({
    id: "d00ac0dec0000001", // not d00ac0de000000NN: those are the example tabs (this id was the tab of example 01)
    type: "comment",
    z: introTab,
    name: "Door access demo: one example per tab",
    info:
      `Simulator: ${o.simUrl} (control surface ${o.simUrl}/_sim/, e.g. GET /_sim/requests, GET /_sim/counts, ` +
      'POST /_sim/devices/101/online {"online":false}, POST /_sim/accounts/demo/supersede).\n\n' +
      'Start with the tab "01 Button unlocks a door": press the inject button and watch the debug sidebar.',
    // Left edge at 40, on the grid (the comment is 340 px wide here): test/editor/example-layout.browser.test.ts.
    x: 210,
    y: 40,
    wires: [],
  });
  o.examples.forEach((ex, i) => {
    const tabId = `d00ac0de${String(i + 1).padStart(8, "0")}`;
    const comment = ex.nodes.find((n) => n.type === "comment");
    flows.push({
      id: tabId,
      type: "tab",
      label: ex.title,
      disabled: false,
      info: typeof comment?.info === "string" ? comment.info : "",
    });
    for (const n of exampleOnTab(ex, tabId, o.accountId)) {
      // The demo's simulator runs on its own port: the calendar is read there.
      if (typeof n.calendarUrl === "string" && n.calendarUrl.startsWith(`${EXAMPLE_SIM}/`))
        n.calendarUrl = o.simUrl + n.calendarUrl.slice(EXAMPLE_SIM.length);
      flows.push(n);
    }
    for (const n of ex.nodes) if (isConfigNode(n) && !configs.has(n.id)) configs.set(n.id, { ...n });
  });
  configs.set(o.accountId, {
    id: o.accountId,
    type: "door-account",
    name: "Demo account (simulator)",
    loginMethod: "phone",
    auditLog: "",
  });
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
  return {
    $: iv.toString("hex") + cipher.update(JSON.stringify(credentials), "utf8", "base64") + cipher.final("base64"),
  };
}
