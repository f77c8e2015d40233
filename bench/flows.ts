/**
 * The flows the bench deploys: our nodes (door-unlock, door-status, and the Node-RED floor) and
 * the hand-built flow of core nodes an ordinary user wires without this package.
 */
import { DEMO_ACCOUNT } from "../src/simulator/seed.js";
import { rulesBenchCredentials, rulesBenchNodes } from "./access-rules-node.js";

export const TAB = "tab1";
export const DOOR = 101; // Front Door, Main Street 1 (demo account)
export const HB_DOOR = 201; // the door the "other" account has a key to (hand-built flow)

type FlowNode = Record<string, unknown>;

function accountNode(baseUrl: string): FlowNode {
  // auditLog "" = the default, door-access-audit.jsonl in the user directory: the audit log is on.
  return { id: "acc1", type: "door-account", name: "demo", baseUrl, loginMethod: "phone", auditLog: "" };
}

/** The credentials of the flow: the account's login (a node's own credentials would go here too). */
export function flowCredentials(): Record<string, Record<string, string>> {
  return {
    acc1: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password },
    ...rulesBenchCredentials(),
  };
}

/**
 * A door-unlock node for DOOR, wired to the sinks `<id>-ok` and `<id>-fail`. `extra` is merged
 * into its config (the place for settings a variant of the node carries, such as access rules).
 */
export function unlockNode(id: string, extra: FlowNode = {}): FlowNode[] {
  return [
    {
      id,
      type: "door-unlock",
      z: TAB,
      name: "",
      account: "acc1",
      deviceId: String(DOOR),
      doorName: "Front Door",
      doorLocation: "Main Street 1",
      lockId: "",
      actor: "",
      rejectRetained: true,
      wires: [[`${id}-ok`], [`${id}-fail`]],
      ...extra,
    },
    { id: `${id}-ok`, type: "helper", z: TAB },
    { id: `${id}-fail`, type: "helper", z: TAB },
  ];
}

/**
 * door-unlock (u1, no rule), door-status (st, with a catch), the Node-RED floor (nrf), a
 * door-unlock with all four access rules on the same door (bench/access-rules-node.ts), and a
 * door-events node that asks for every kind, unlock events included (docs/events.md#what-it-costs):
 * the unlock p50's goal holds with it listening.
 */
export function ourFlow(simUrl: string): FlowNode[] {
  return [
    { id: TAB, type: "tab", label: "bench" },
    accountNode(simUrl),
    ...unlockNode("u1"),
    {
      id: "st",
      type: "door-status",
      z: TAB,
      name: "",
      account: "acc1",
      deviceId: String(DOOR),
      doorName: "Front Door",
      doorLocation: "Main Street 1",
      wires: [["st-out"]],
    },
    { id: "catch1", type: "catch", z: TAB, name: "", scope: ["st"], uncaught: false, wires: [["st-err"]] },
    { id: "nrf", type: "bench-floor", z: TAB, wires: [["nrf-out"]] },
    {
      id: "ev",
      type: "door-events",
      z: TAB,
      name: "",
      account: "acc1",
      kinds: ["session", "device", "unlock", "rule", "pass", "service"],
      wires: [["ev-out"]],
    },
    ...["st-out", "st-err", "nrf-out", "ev-out"].map((id) => ({ id, type: "helper", z: TAB })),
    ...rulesBenchNodes(TAB, { deviceId: DOOR, doorName: "Front Door", doorLocation: "Main Street 1" }),
  ];
}

/** What the memory child deploys: ourFlow without door-status. */
export function unlockOnlyFlow(simUrl: string): FlowNode[] {
  const drop = new Set(["st", "catch1", "st-out", "st-err"]);
  return ourFlow(simUrl).filter((n) => !drop.has(n.id as string));
}

/**
 * What an ordinary user wires with core nodes: http request (login, JSON) → change (a fresh
 * headers object with Authorization: "Bearer " & payload.AccessToken (the service's field name), payload removed) →
 * http request (PUT unlock). Editor defaults otherwise (no keep-alive). It logs in per message.
 * Uses the simulator's second account, so its logins do not supersede our node's session.
 */
export function handBuiltFlow(simUrl: string): FlowNode[] {
  const req = {
    z: TAB,
    tls: "",
    persist: false,
    proxy: "",
    insecureHTTPParser: false,
    authType: "",
    senderr: false,
    headers: [],
    paytoqs: "ignore",
  };
  return [
    {
      id: "hb-login",
      type: "http request",
      name: "login",
      method: "POST",
      ret: "obj",
      url: `${simUrl}/api/auth/login-by-phone`,
      ...req,
      wires: [["hb-auth"]],
    },
    {
      id: "hb-auth",
      type: "change",
      z: TAB,
      name: "Authorization header",
      action: "",
      property: "",
      from: "",
      to: "",
      reg: false,
      rules: [
        { t: "set", p: "headers", pt: "msg", to: "{}", tot: "json" },
        { t: "set", p: "headers.Authorization", pt: "msg", to: '"Bearer " & payload.AccessToken', tot: "jsonata" },
        { t: "delete", p: "payload", pt: "msg" },
      ],
      wires: [["hb-unlock"]],
    },
    {
      id: "hb-unlock",
      type: "http request",
      name: "unlock",
      method: "PUT",
      ret: "txt",
      url: `${simUrl}/api/device/${HB_DOOR}/unlock`,
      ...req,
      wires: [["hb-out"]],
    },
    { id: "hb-out", type: "helper", z: TAB },
  ];
}
