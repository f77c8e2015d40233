/**
 * Flows with several door-account nodes for the tests of one session per account
 * (docs/session.md#one-session-per-account; not a test file itself): account nodes named after
 * their id, a door-unlock on a given tab and account, two tabs each with its own account node for
 * one login, a subflow holding an account, and the credentials of the simulator's demo login.
 */
import { DEMO_ACCOUNT } from "../../src/simulator/index.js";
import { helperNodes } from "./flow.js";

export type Flow = Record<string, unknown>[];

export const TAB_A = "tabA";
export const TAB_B = "tabB";

/** A tab (a flow) of the editor. */
export function tabNode(id: string, label: string): Record<string, unknown> {
  return { id, type: "tab", label };
}

/** A door-account node named "account <id>", logging in by phone; `extra` sets or overrides its properties. */
export function namedAccount(id: string, url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    type: "door-account",
    name: `account ${id}`,
    baseUrl: url,
    loginMethod: "phone",
    auditLog: "",
    ...extra,
  };
}

/** A door-unlock node on tab `z` using account `account`, for door `door`, wired to helper nodes "<id>-ok" and "<id>-fail". */
export function unlockOn(id: string, z: string, account: string, door = "101"): Flow {
  return [
    {
      id,
      type: "door-unlock",
      z,
      name: "",
      account,
      deviceId: door,
      doorName: "",
      doorLocation: "",
      lockId: "",
      actor: "",
      rejectRetained: true,
      wires: [[`${id}-ok`], [`${id}-fail`]],
    },
    { id: `${id}-ok`, type: "helper", z },
    { id: `${id}-fail`, type: "helper", z },
  ];
}

/** Two tabs, each with its own door-account node for the same login (a flow copied to another tab): door-unlock uA on tab A, uB on tab B. */
export function twoTabs(
  url: string,
  accountExtra: Record<string, unknown> = {},
  ids: [string, string] = ["accA", "accB"],
): Flow {
  return [
    tabNode(TAB_A, "A"),
    tabNode(TAB_B, "B"),
    namedAccount(ids[0], url, accountExtra),
    namedAccount(ids[1], url, accountExtra),
    ...unlockOn("uA", TAB_A, ids[0]),
    ...unlockOn("uB", TAB_B, ids[1]),
  ];
}

/**
 * A subflow "sf1" holding door-account "sacc" and a door-unlock, used by `instances` instances
 * ("inst1", ...) on tab A, each wired to helper nodes "inst<i>-ok" and "inst<i>-fail".
 */
export function subflowFlow(url: string, accountExtra: Record<string, unknown>, instances: number): Flow {
  const flow: Flow = [
    tabNode(TAB_A, "A"),
    {
      id: "sf1",
      type: "subflow",
      name: "door",
      info: "",
      in: [{ x: 50, y: 30, wires: [{ id: "sf-u" }] }],
      out: [
        { x: 300, y: 30, wires: [{ id: "sf-u", port: 0 }] },
        { x: 300, y: 80, wires: [{ id: "sf-u", port: 1 }] },
      ],
    },
    namedAccount("sacc", url, { z: "sf1", ...accountExtra }),
    {
      id: "sf-u",
      type: "door-unlock",
      z: "sf1",
      x: 150,
      y: 30,
      name: "",
      account: "sacc",
      deviceId: "101",
      doorName: "",
      doorLocation: "",
      lockId: "",
      actor: "",
      rejectRetained: true,
      wires: [[], []],
    },
  ];
  for (let i = 1; i <= instances; i++) {
    // x and y: Node-RED tells a flow node from a config node by its position.
    flow.push(
      { id: `inst${i}`, type: "subflow:sf1", z: TAB_A, x: 100, y: 40 * i, wires: [[`inst${i}-ok`], [`inst${i}-fail`]] },
      ...helperNodes(`inst${i}-ok`, `inst${i}-fail`).map((h) => ({ ...h, z: TAB_A })),
    );
  }
  return flow;
}

/** Credentials of the demo login (phone number and password) for each account node id; `password` and `extra` change them. */
export function demoCreds(
  ids: string[],
  password: string = DEMO_ACCOUNT.password,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return Object.fromEntries(ids.map((id) => [id, { phoneNumber: DEMO_ACCOUNT.phoneNumber, password, ...extra }]));
}
