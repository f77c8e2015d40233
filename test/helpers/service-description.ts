/**
 * Shared helpers of the service description check's tests (docs/service-description.md): the
 * simulator's description and changed copies of it, and the check's requests in the simulator's
 * request log. Used by test/account/service-description-check.test.ts (the account alone) and
 * test/nodes/door-account-service-description.test.ts (in a Node-RED runtime).
 */
import { strict as assert } from "node:assert";
import { buildOpenApi, type RequestLogEntry, type RunningSimulator } from "../../src/simulator/index.js";

export type Doc = any;

/** The simulator's own description, as a fresh object to change. */
export function description(): Doc {
  return buildOpenApi() as Doc;
}

/**
 * Descriptions built to be slow to compare (docs/service-description.md#when): each is under the
 * 4 MiB cap. Before the comparison had its work bound, the first kept the runtime busy for
 * minutes.
 */
export function hostileDescriptions(): [string, () => Doc][] {
  const withPaths = (n: number, item: (i: number) => unknown, extra: Record<string, unknown> = {}): Doc => {
    const d = description();
    for (let i = 0; i < n; i++) d.paths[`/x/${i}`] = item(i);
    Object.assign(d, extra);
    return d;
  };
  const nest = (depth: number): unknown => {
    let v: unknown = { $ref: "#/x-end" };
    for (let i = 0; i < depth; i++) v = { a: v };
    return v;
  };
  return [
    [
      "1,000 path items referring to a $ref with a pointer of a million segments",
      () => withPaths(1000, () => ({ $ref: "#/x-c" }), { "x-c": { $ref: "#/" + "a/".repeat(1_000_000) + "b" } }),
    ],
    [
      "1,000 path items, each a chain of $refs through 500-segment pointers",
      () =>
        withPaths(1000, () => ({ $ref: "#/x-c" }), {
          "x-c": { $ref: "#/x-n/" + "a/".repeat(499) + "$ref" },
          "x-n": nest(500),
          "x-end": { $ref: "#/x-c" },
        }),
    ],
    ["a $ref cycle of two path items", () => withPaths(2, (i) => ({ $ref: `#/paths/~1x~1${1 - i}` }))],
    ["100,000 path items", () => withPaths(100_000, () => ({}))],
    [
      "a request body schema with allOf fan-out twenty levels deep",
      () => {
        const d = description();
        for (let i = 0; i < 20; i++)
          d.components.schemas[`F${i}`] = {
            allOf: [1, 2, 3, 4, 5, 6, 7, 8].map(() => ({ $ref: `#/components/schemas/F${i + 1}` })),
          };
        d.components.schemas.F20 = d.components.schemas.LoginRequest;
        d.components.schemas.LoginRequest = { $ref: "#/components/schemas/F0" };
        return d;
      },
    ],
    [
      "a schema with 300,000 required fields",
      () => {
        const d = description();
        d.components.schemas.Device = {
          ...d.components.schemas.Device,
          required: [...Array(300_000).keys()].map(String),
        };
        return d;
      },
    ],
  ];
}

/** The drift of the brief: an operation removed, a required request field added. */
export function drifted(): Doc {
  const d = description();
  delete d.paths["/api/device/{deviceId}/unlock"];
  d.components.schemas.LoginRequest.required.push("deviceName");
  d.components.schemas.LoginRequest.properties.deviceName = { type: "string" };
  return d;
}

export const DRIFT_DIFFERENCES = [
  'POST /api/auth/login: request field "deviceName" is now required',
  'POST /api/auth/login-by-phone: request field "deviceName" is now required',
  "PUT /api/device/{deviceId}/unlock: gone (the description has no such operation)",
];

/** Changes nothing the package relies on: a new optional field, a new operation, new texts. */
export function irrelevantlyChanged(): Doc {
  const d = description();
  d.info.description = "A new text about the service.";
  d.info.version = "v1.1";
  d.paths["/api/device/{deviceId}/unlock"].put.summary = "Unlock (reworded)";
  d.paths["/api/device/{deviceId}/unlock"].put.responses["409"] = {
    description: "A new status the package does not branch on",
  };
  d.paths["/api/user/key"] = { get: { operationId: "listKeys", responses: { "200": { description: "keys" } } } };
  d.components.schemas.Device.properties.batteryLevel = { type: "integer", nullable: true };
  d.components.schemas.TokenPair.properties.ExpiresIn = { type: "integer" };
  d.components.schemas.LoginRequest.properties.deviceName = { type: "string" };
  d.components.schemas.LoginRequest.additionalProperties = true;
  return d;
}

export function docsRequests(sim: RunningSimulator): RequestLogEntry[] {
  return sim.control.requests({ operation: "docs" }).filter((e) => e.path === "/openapi.json");
}

export function assertNoCredential(entry: RequestLogEntry): void {
  assert.ok(!entry.headers.includes("authorization"), `no Authorization header: ${entry.headers.join(", ")}`);
  assert.ok(!entry.headers.includes("cookie"), `no Cookie header: ${entry.headers.join(", ")}`);
  assert.equal(entry.tokenId, null);
  assert.equal(entry.accountId, null);
}
