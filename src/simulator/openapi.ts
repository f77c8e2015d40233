/**
 * The OpenAPI 3.0 description the simulator serves at /openapi.json (live), /openapi.yaml
 * and /openapi.pinned.json (a fixed copy), plus /llms.txt and a small YAML emitter.
 */
import { createHash } from "node:crypto";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const TITLES: Record<number, string> = {
  200: "OK",
  400: "Bad request: malformed body, or a field breaks its constraints",
  401: "Unauthorized",
  403: "Forbidden: the account holds no key to the device (or lock)",
  404: "Not found",
  429: "Too many requests; honour Retry-After",
  502: "Device or its gateway unreachable",
  503: "Device offline or out of range",
  504: "Device did not answer in time; the command may still have arrived",
};

function errorResponse(status: number, description?: string): Json {
  const response: { [key: string]: Json } = {
    description: description ?? TITLES[status] ?? "Error",
    content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorResponse" } } },
  };
  if (status === 429) {
    response.headers = {
      "Retry-After": {
        description: "Seconds (or an HTTP date) to wait before the next call",
        schema: { type: "string" },
      },
    };
  }
  return response;
}

function responses(success: Json, errors: Array<number | [number, string]>): Json {
  const out: { [key: string]: Json } = { "200": success };
  for (const e of errors) {
    const [status, description] = Array.isArray(e) ? e : [e, undefined];
    out[String(status)] = errorResponse(status, description);
  }
  return out;
}

const tokenPairResponse: Json = {
  description: "A new token pair",
  content: { "application/json": { schema: { $ref: "#/components/schemas/TokenPair" } } },
};
const noBody: Json = { description: "OK, no body" };
const deviceIdParam: Json = {
  name: "deviceId",
  in: "path",
  required: true,
  schema: { type: "integer", format: "int32" },
  description: "The `id` of a device from GET /api/user/device",
};
const lockIdParam: Json = {
  name: "lockId",
  in: "path",
  required: true,
  schema: { type: "integer", format: "int32" },
  description: "The id of one lock on the device",
};
const bearer: Json = [{ bearerAuth: [] }];

function jsonBody(schema: string): Json {
  return { required: true, content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } } };
}

/** Builds the description; `serverUrl` is added as the only server when given. */
export function buildOpenApi(serverUrl?: string): Json {
  const doc: { [key: string]: Json } = {
    openapi: "3.0.3",
    info: {
      title: "Door Unlock Access Service",
      version: "v1",
      description:
        "Sends unlock commands to network-connected door devices. One active session per account; " +
        "rotating single-use refresh tokens; the access token's `exp` claim is authoritative.",
    },
  };
  if (serverUrl) doc.servers = [{ url: serverUrl }];
  doc.tags = [{ name: "auth" }, { name: "device" }, { name: "user" }];
  doc.paths = {
    "/api/auth/login": {
      post: {
        operationId: "login",
        tags: ["auth"],
        summary: "Log in with phone number and password (generic)",
        requestBody: jsonBody("LoginRequest"),
        responses: responses(tokenPairResponse, [
          [400, "Malformed body or phoneNumber not matching its pattern"],
          [401, "Wrong credentials"],
          429,
        ]),
      },
    },
    "/api/auth/login-by-phone": {
      post: {
        operationId: "loginByPhone",
        tags: ["auth"],
        summary: "Log in with phone number and password (recommended)",
        requestBody: jsonBody("LoginRequest"),
        responses: responses(tokenPairResponse, [
          [400, "Malformed body or phoneNumber not matching its pattern"],
          [401, "Wrong credentials"],
          429,
        ]),
      },
    },
    "/api/auth/login-by-email": {
      post: {
        operationId: "loginByEmail",
        tags: ["auth"],
        summary: "Log in with email and password",
        requestBody: jsonBody("LoginByEmailRequest"),
        responses: responses(tokenPairResponse, [[400, "Malformed body"], [401, "Wrong credentials"], 429]),
      },
    },
    "/api/auth/refresh": {
      post: {
        operationId: "refreshToken",
        tags: ["auth"],
        summary: "Exchange the refresh token for a new pair (both values new)",
        requestBody: jsonBody("RefreshSessionRequest"),
        responses: responses(tokenPairResponse, [
          [400, "Refresh token missing, malformed or already consumed"],
          [401, "Refresh token expired or revoked; a full login is needed"],
          429,
        ]),
      },
    },
    "/api/auth/logout": {
      post: {
        operationId: "logout",
        tags: ["auth"],
        summary: "End the account's single active session",
        security: bearer,
        responses: responses(noBody, [[401, "Access token missing, expired or invalid"]]),
      },
    },
    "/api/device/{deviceId}": {
      get: {
        operationId: "getDevice",
        tags: ["device"],
        summary: "The device's current state",
        security: bearer,
        parameters: [deviceIdParam],
        responses: responses(
          {
            description: "The device",
            content: { "application/json": { schema: { $ref: "#/components/schemas/Device" } } },
          },
          [
            [401, "Access token missing, expired or invalid"],
            403,
            [404, "Unknown deviceId or not belonging to the account"],
            429,
          ],
        ),
      },
    },
    "/api/device/{deviceId}/unlock": {
      put: {
        operationId: "unlockDevice",
        tags: ["device"],
        summary: "Send an unlock command (never repeat automatically)",
        security: bearer,
        parameters: [deviceIdParam],
        responses: responses(noBody, [
          [401, "Access token missing, expired or invalid"],
          403,
          [404, "Unknown deviceId"],
          429,
          502,
          503,
          504,
        ]),
      },
    },
    "/api/device/{deviceId}/unlock/{lockId}": {
      put: {
        operationId: "unlockDeviceLock",
        tags: ["device"],
        summary: "Unlock one lock of a multi-lock device",
        security: bearer,
        parameters: [deviceIdParam, lockIdParam],
        responses: responses(noBody, [
          [401, "Access token missing, expired or invalid"],
          [403, "The account holds no key to the device or lock"],
          [404, "Unknown deviceId or lockId"],
          429,
          502,
          503,
          504,
        ]),
      },
    },
    "/api/user/location": {
      get: {
        operationId: "listUserLocations",
        tags: ["user"],
        summary: "Locations visible to the account",
        security: bearer,
        responses: responses(
          {
            description: "Locations",
            content: {
              "application/json": { schema: { type: "array", items: { $ref: "#/components/schemas/Location" } } },
            },
          },
          [[401, "Access token missing, expired or invalid"], 429],
        ),
      },
    },
    "/api/user/device": {
      get: {
        operationId: "listUserDevices",
        tags: ["user"],
        summary: "Devices the account owns or holds a shared key to",
        security: bearer,
        responses: responses(
          {
            description: "Devices",
            content: {
              "application/json": { schema: { type: "array", items: { $ref: "#/components/schemas/Device" } } },
            },
          },
          [[401, "Access token missing, expired or invalid"], 429],
        ),
      },
    },
  };
  const nullableString: Json = { type: "string", nullable: true };
  const nullableInt: Json = { type: "integer", format: "int32", nullable: true };
  doc.components = {
    securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT" } },
    schemas: {
      LoginRequest: {
        type: "object",
        additionalProperties: false,
        required: ["phoneNumber", "password"],
        properties: {
          phoneNumber: { type: "string", format: "tel", minLength: 1, pattern: "^[+][0-9]{9,13}$" },
          password: { type: "string", minLength: 1 },
        },
      },
      LoginByEmailRequest: {
        type: "object",
        additionalProperties: false,
        required: ["email", "password"],
        properties: {
          email: { type: "string", format: "email", minLength: 1 },
          password: { type: "string", minLength: 1 },
        },
      },
      RefreshSessionRequest: {
        type: "object",
        additionalProperties: false,
        required: ["refreshToken"],
        properties: { refreshToken: { type: "string", minLength: 1 } },
      },
      TokenPair: {
        type: "object",
        required: ["AccessToken", "RefreshToken"],
        properties: {
          AccessToken: { type: "string", description: "JWT; its exp claim is the authoritative expiry" },
          RefreshToken: { type: "string", description: "Single use; consumed by the next refresh call" },
        },
      },
      Device: {
        type: "object",
        required: ["id"],
        properties: {
          id: { type: "integer", format: "int32" },
          name: nullableString,
          locationId: nullableInt,
          locationName: nullableString,
          companyName: nullableString,
          doorType: nullableString,
          online: { type: "boolean", nullable: true },
        },
      },
      Location: { type: "object", description: "Fields not specified; the simulator sends id, name, companyName" },
      ErrorResponse: {
        type: "object",
        required: ["status"],
        properties: { status: { type: "integer", format: "int32" }, title: nullableString, detail: nullableString },
      },
    },
  };
  return doc;
}

export function strongEtag(body: string): string {
  return `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
}

/** If-None-Match evaluation (weak comparison, as RFC 9110 requires for this header). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const strip = (t: string) => t.trim().replace(/^W\//, "");
  return ifNoneMatch.split(",").some((t) => t.trim() === "*" || strip(t) === strip(etag));
}

// ------------------------------------------------------------------ YAML emitter

const PLAIN = /^[A-Za-z_/$][A-Za-z0-9 _./$(){}-]*$/;
const RESERVED = /^(true|false|null|yes|no|on|off|y|n|~)$/i;

function scalar(value: string): string {
  if (value.length > 0 && PLAIN.test(value) && !RESERVED.test(value) && !value.endsWith(" ")) return value;
  // A JSON string literal is a valid YAML double-quoted scalar.
  return JSON.stringify(value);
}

function key(k: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$.-]*$/.test(k) && !RESERVED.test(k) ? k : JSON.stringify(k);
}

function isEmptyCollection(v: Json): boolean {
  return (
    (Array.isArray(v) && v.length === 0) ||
    (v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0)
  );
}

function inline(v: Json): string {
  if (v === null) return "null";
  if (typeof v === "boolean" || typeof v === "number") return String(v);
  if (typeof v === "string") return scalar(v);
  return Array.isArray(v) ? "[]" : "{}";
}

function emit(v: Json, indent: string, lines: string[]): void {
  if (Array.isArray(v)) {
    for (const item of v) {
      if (item !== null && typeof item === "object" && !isEmptyCollection(item)) {
        const sub: string[] = [];
        emit(item, indent + "  ", sub);
        // first line of the nested block goes after "- "
        lines.push(`${indent}- ${sub[0].slice(indent.length + 2)}`);
        lines.push(...sub.slice(1));
      } else {
        lines.push(`${indent}- ${inline(item)}`);
      }
    }
    return;
  }
  if (v !== null && typeof v === "object") {
    for (const [k, child] of Object.entries(v)) {
      if (child !== null && typeof child === "object" && !isEmptyCollection(child)) {
        lines.push(`${indent}${key(k)}:`);
        emit(child, Array.isArray(child) ? indent : indent + "  ", lines);
      } else {
        lines.push(`${indent}${key(k)}: ${inline(child)}`);
      }
    }
    return;
  }
  lines.push(indent + inline(v));
}

/** Emits JSON-compatible data as block-style YAML 1.2. */
export function toYaml(value: unknown): string {
  const data = JSON.parse(JSON.stringify(value)) as Json;
  if (data === null || typeof data !== "object" || isEmptyCollection(data)) return inline(data) + "\n";
  const lines: string[] = [];
  emit(data, "", lines);
  return lines.join("\n") + "\n";
}

export function llmsTxt(): string {
  return [
    "# Door Unlock Access Service (door-access-sim)",
    "",
    "> Local simulator of a REST service that sends unlock commands to connected door devices.",
    "> JSON over HTTP; bearer JWT access token; one active session per account; rotating single-use refresh tokens.",
    "",
    "## Machine-readable description",
    "",
    "- [OpenAPI 3 (JSON, live)](/openapi.json): header X-Spec-Source: live, ETag for conditional fetch",
    "- [OpenAPI 3 (YAML)](/openapi.yaml): the same description as YAML",
    "- [OpenAPI 3 (pinned copy)](/openapi.pinned.json): header X-Spec-Source: pinned",
    "",
    "## Operations",
    "",
    "- POST /api/auth/login, POST /api/auth/login-by-phone: {phoneNumber, password} -> {AccessToken, RefreshToken}",
    "- POST /api/auth/login-by-email: {email, password} -> {AccessToken, RefreshToken}",
    "- POST /api/auth/refresh: {refreshToken} -> {AccessToken, RefreshToken} (the sent token dies)",
    "- POST /api/auth/logout (Bearer): ends the session",
    "- GET /api/user/device, GET /api/user/location, GET /api/device/{deviceId} (Bearer)",
    "- PUT /api/device/{deviceId}/unlock, PUT /api/device/{deviceId}/unlock/{lockId} (Bearer): never repeat automatically",
    "",
    "## Simulator control (loopback only)",
    "",
    "- /_sim/faults, /_sim/devices/{id}, /_sim/accounts/{id}/..., /_sim/requests, /_sim/counts, /_sim/docs",
    "",
  ].join("\n");
}
