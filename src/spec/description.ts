/**
 * The service description check's comparison (docs/service-description.md#what-is-checked):
 * what the package relies on, taken from the description it ships (openapi.pinned.json, the
 * description it was built and tested against), and the differences a live description has
 * in exactly those things. Pure functions; the fetching and scheduling are in
 * src/account/description-check.ts.
 *
 * Relied on, per operation the client calls (OPERATIONS): the method and path; the fields of
 * the JSON request body it sends; the required fields of the success response and their
 * types; the status codes it branches on. Everything else (a new optional field, a new
 * operation, descriptions, examples, servers) cannot change what the package does and is
 * not reported.
 */
import pinnedDescription from "./openapi.pinned.json";
import { OPERATIONS, type OperationId } from "./schemas.js";

/** The description the package ships (its pinned copy). */
export const PINNED_DESCRIPTION: unknown = pinnedDescription;

/**
 * Error statuses the package branches on (src/session/renewals.ts: 400/401/429 on login and
 * refresh, 401 on every call; src/unlock/outcome.ts: 401, 403, 404, 429, 502, 503, 504; a 404
 * re-fetches the device list). A status the pinned copy lists for an operation and that is in
 * this set must stay listed. A 5xx the package treats as "any 5xx" is not in it.
 */
export const BRANCHED_STATUSES: ReadonlySet<number> = new Set([400, 401, 403, 404, 429, 502, 503, 504]);

/** Operations whose token pair fields are read case-insensitively (src/spec/schemas.ts TokenPair). */
const CASE_INSENSITIVE_RESPONSE: ReadonlySet<OperationId> = new Set([
  "login",
  "loginByPhone",
  "loginByEmail",
  "refreshToken",
]);

/** Header parameters the package sends itself or that HTTP sets (not reported when required). */
const OWN_HEADERS = new Set(["authorization", "accept", "content-type", "content-length", "host"]);

export interface FieldType {
  /** JSON types without "null", sorted (empty = not stated). */
  types: string[];
  nullable: boolean;
}

export interface ReliedOperation {
  id: OperationId;
  method: string;
  path: string;
  /** The JSON request body's fields the package sends, with their types; null = no body. */
  sends: Record<string, FieldType> | null;
  /** Query, header and cookie parameters the package sends (lower-case header names). */
  parameters: string[];
  /** The success response's JSON body: its top-level type and required fields; null = no body. */
  response: { type: FieldType; list: boolean; required: Record<string, FieldType> } | null;
  /** Error statuses listed for the operation that the package branches on. */
  statuses: number[];
}

/**
 * The comparison's work bound (docs/service-description.md#when): every pointer segment, path,
 * schema, allOf part and listed field counts one step, and a comparison that needs more than
 * STEP_BUDGET gives up as "too complex to check". The check runs it in a worker thread
 * (src/spec/description-read.ts), with a 10 s deadline; the bound keeps a hostile description
 * (reference chains, fan-out, cycles, huge lists) from using that thread for long: 100,000 steps
 * take about 10 ms here (docs/service-description.md#when has the figures).
 */
export const STEP_BUDGET = 100_000;
/** At most this many differences are listed; more are counted in one last line. */
export const MAX_DIFFERENCES = 50;
/** A `$ref` longer than this (characters) is not followed: no description needs one. */
const MAX_POINTER_LENGTH = 1024;
/** What the check reports, once, for a description that needs more than the bound. */
export const TOO_COMPLEX =
  "the description is too complex to check (it needs more than the check's work bound); nothing was compared";

/** Deeper nesting than this is refused before JSON.parse (which would hold the loop for 0.4 s on 4 MiB of it). */
export const MAX_NESTING = 64;

/**
 * Whether a JSON text nests objects and arrays deeper than `max` (brackets inside strings do not
 * count). One pass over the bytes, a few milliseconds for 4 MiB.
 */
export function nestsDeeperThan(body: Uint8Array, max = MAX_NESTING): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next byte is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

class TooComplex extends Error {}
let stepsLeft = Number.POSITIVE_INFINITY;
function step(n = 1): void {
  stepsLeft -= n;
  if (stepsLeft < 0) throw new TooComplex("too complex");
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

/** A schema with $ref and allOf resolved: what the comparison reads of it. */
interface Flat {
  type: FieldType;
  properties: Record<string, unknown> | null;
  required: Set<string>;
  items: unknown;
  /** oneOf/anyOf/not, or a reference that cannot be followed: nothing is concluded from it. */
  opaque: boolean;
}

/** Follows a local reference ("#/components/schemas/X"); undefined when it cannot be. */
function deref(doc: unknown, value: unknown, depth = 0): unknown {
  let v = value;
  for (let i = 0; i < 20 && isObj(v) && typeof v.$ref === "string"; i++) {
    const ref = v.$ref;
    if (!ref.startsWith("#/") || depth > 20 || ref.length > MAX_POINTER_LENGTH) return undefined;
    let cur: unknown = doc;
    for (const raw of ref.slice(2).split("/")) {
      step();
      const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
      cur = isObj(cur) && Object.prototype.hasOwnProperty.call(cur, key) ? cur[key] : undefined;
    }
    v = cur;
  }
  return isObj(v) && typeof v.$ref === "string" ? undefined : v;
}

function typeOf(schema: Obj): FieldType {
  const raw = schema.type;
  const list =
    typeof raw === "string" ? [raw] : Array.isArray(raw) ? raw.filter((t): t is string => typeof t === "string") : [];
  return {
    types: [...new Set(list.filter((t) => t !== "null"))].sort(),
    nullable: schema.nullable === true || list.includes("null"),
  };
}

/**
 * What flatten() made of each schema object of a description, and the schemas it is making now.
 * A schema is flattened once per description however often it is referred to, and one that
 * refers back to itself (through allOf) is opaque there: without this, `allOf` parts that refer
 * to the same schema multiply (four such parts, ten levels deep: a million calls, seconds of a
 * runtime that stands still on a description the service serves).
 */
const flattened = new WeakMap<object, { done: WeakMap<object, Flat>; making: WeakSet<object> }>();

function flatten(doc: unknown, value: unknown, depth = 0): Flat {
  const opaque: Flat = {
    type: { types: [], nullable: false },
    properties: null,
    required: new Set(),
    items: undefined,
    opaque: true,
  };
  const schema = deref(doc, value);
  if (!isObj(schema) || depth > 10) return opaque;
  let memo = isObj(doc) ? flattened.get(doc) : undefined;
  if (!memo && isObj(doc)) flattened.set(doc, (memo = { done: new WeakMap(), making: new WeakSet() }));
  const known = memo?.done.get(schema);
  if (known) return known;
  if (memo?.making.has(schema)) return opaque; // refers back to itself: cannot be read
  memo?.making.add(schema);
  try {
    const flat = flattenOnce(doc, schema, depth);
    memo?.done.set(schema, flat);
    return flat;
  } finally {
    memo?.making.delete(schema);
  }
}

function flattenOnce(doc: unknown, schema: Obj, depth: number): Flat {
  step(
    1 +
      (isObj(schema.properties) ? Object.keys(schema.properties).length : 0) +
      (Array.isArray(schema.required) ? schema.required.length : 0) +
      (Array.isArray(schema.allOf) ? schema.allOf.length : 0),
  );
  const flat: Flat = {
    type: typeOf(schema),
    properties: isObj(schema.properties) ? { ...schema.properties } : null,
    required: new Set(
      Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : [],
    ),
    items: schema.items,
    opaque: "oneOf" in schema || "anyOf" in schema || "not" in schema,
  };
  if (Array.isArray(schema.allOf)) {
    for (const part of schema.allOf) {
      const p = flatten(doc, part, depth + 1);
      if (p.opaque) flat.opaque = true;
      if (p.properties) flat.properties = { ...(flat.properties ?? {}), ...p.properties };
      for (const r of p.required) flat.required.add(r);
      if (flat.type.types.length === 0)
        flat.type = { types: p.type.types, nullable: flat.type.nullable || p.type.nullable };
      if (flat.items === undefined) flat.items = p.items;
    }
  }
  return flat;
}

/** The JSON schema of a request body or response, when it has JSON content. */
function jsonSchemaOf(doc: unknown, holder: unknown): { present: boolean; json: boolean; schema: unknown } {
  const h = deref(doc, holder);
  if (!isObj(h)) return { present: false, json: false, schema: undefined };
  if (!isObj(h.content)) return { present: true, json: false, schema: undefined };
  const key = Object.keys(h.content).find((k) => /^application\/([a-z0-9.+-]*\+)?json\b/i.test(k.trim()));
  if (key === undefined) return { present: true, json: false, schema: undefined };
  const media = h.content[key];
  return { present: true, json: true, schema: isObj(media) ? media.schema : undefined };
}

/** The operation object at a path and method, with the path item's own parameters. */
interface Found {
  method: string;
  path: string;
  op: Obj;
  parameters: unknown[];
}

/** `/api/device/{deviceId}` and `/api/device/{id}` are the same path. */
const normalPath = (p: string) => p.replace(/\{[^}]*\}/g, "{}").replace(/\/+$/, "");

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

/** `v` when it is an array, else none. */
const listOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The operations of a description, read once per description (find() asks for each relied one). */
const operationsRead = new WeakMap<object, Found[]>();

function operationsOf(doc: unknown): Found[] {
  const known = isObj(doc) ? operationsRead.get(doc) : undefined;
  if (known) return known;
  const out: Found[] = [];
  const paths = isObj(doc) && isObj(doc.paths) ? doc.paths : {};
  const keys = Object.keys(paths);
  step(keys.length);
  for (const path of keys) {
    const rawItem = paths[path];
    step();
    const item = deref(doc, rawItem);
    if (!isObj(item)) continue;
    const shared = listOf(item.parameters);
    for (const m of METHODS) {
      const op = item[m];
      if (isObj(op)) out.push({ method: m.toUpperCase(), path, op, parameters: [...shared, ...listOf(op.parameters)] });
    }
  }
  if (isObj(doc)) operationsRead.set(doc, out);
  return out;
}

function find(doc: unknown, method: string, path: string): Found | undefined {
  const want = normalPath(path);
  return operationsOf(doc).find((f) => f.method === method && normalPath(f.path) === want);
}

/** The success response: 200, else the first other 2xx, else 2XX. */
function successOf(op: Obj): unknown {
  const responses = isObj(op.responses) ? op.responses : {};
  const keys = Object.keys(responses);
  const key = keys.includes("200")
    ? "200"
    : (keys.find((k) => /^2\d\d$/.test(k)) ?? keys.find((k) => /^2XX$/i.test(k)));
  return key === undefined ? undefined : responses[key];
}

/** Non-path parameters: "query:name", "header:name" (lower case), "cookie:name". */
function parameterKeys(doc: unknown, params: unknown[], onlyRequired: boolean): string[] {
  const out: string[] = [];
  for (const raw of params) {
    step();
    const p = deref(doc, raw);
    if (!isObj(p) || typeof p.name !== "string" || typeof p.in !== "string" || p.in === "path") continue;
    if (onlyRequired && p.required !== true) continue;
    out.push(`${p.in}:${p.in === "header" ? p.name.toLowerCase() : p.name}`);
  }
  return out;
}

function fieldTypes(
  doc: unknown,
  properties: Record<string, unknown> | null,
  names: Iterable<string>,
): Record<string, FieldType> {
  const out: Record<string, FieldType> = {};
  for (const name of names) {
    const f = flatten(doc, properties?.[name]);
    out[name] = f.opaque ? { types: [], nullable: false } : f.type;
  }
  return out;
}

/** What the package relies on, read from a description (the pinned copy by default). */
export function reliedOn(pinned: unknown = PINNED_DESCRIPTION): ReliedOperation[] {
  const out: ReliedOperation[] = [];
  for (const [id, spec] of Object.entries(OPERATIONS) as [OperationId, (typeof OPERATIONS)[OperationId]][]) {
    const found = find(pinned, spec.method, spec.path);
    if (!found) throw new Error(`the pinned description has no ${spec.method} ${spec.path}`);
    const body = jsonSchemaOf(pinned, found.op.requestBody);
    let sends: ReliedOperation["sends"] = null;
    if (body.json) {
      const flat = flatten(pinned, body.schema);
      sends = fieldTypes(pinned, flat.properties, Object.keys(flat.properties ?? {}));
    }
    const success = jsonSchemaOf(pinned, successOf(found.op));
    let response: ReliedOperation["response"] = null;
    if (success.json) {
      const top = flatten(pinned, success.schema);
      const list = top.type.types.includes("array");
      const shape = list ? flatten(pinned, top.items) : top;
      response = { type: top.type, list, required: fieldTypes(pinned, shape.properties, shape.required) };
    }
    const responses = isObj(found.op.responses) ? Object.keys(found.op.responses) : [];
    const statuses = responses
      .filter((k) => /^\d{3}$/.test(k))
      .map(Number)
      .filter((s) => BRANCHED_STATUSES.has(s))
      .sort((a, b) => a - b);
    out.push({
      id,
      method: spec.method,
      path: spec.path,
      sends,
      parameters: parameterKeys(pinned, found.parameters, false),
      response,
      statuses,
    });
  }
  return out;
}

/** Whether a parsed body is an OpenAPI 3 description this check can read. */
export function isDescription(value: unknown): boolean {
  return isObj(value) && typeof value.openapi === "string" && /^3\./.test(value.openapi) && isObj(value.paths);
}

/** Text from the live description, made safe for a log line and short. */
function clean(text: string, max = 120): string {
  const t = text.replace(/[\p{Cc}\u2028\u2029]/gu, " "); // control characters (C0, DEL, C1), line and paragraph separators
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

const showType = (t: FieldType) => (t.types.length ? t.types.join(" or ") : "any");
const sameTypes = (a: FieldType, b: FieldType) => a.types.join() === b.types.join();

/** Compares the field types the package relies on; a live type that says nothing is no difference. */
function typeChange(label: string, pinned: FieldType, live: FieldType): string | null {
  if (live.types.length > 0 && pinned.types.length > 0 && !sameTypes(pinned, live)) {
    return `${label} changed type from ${showType(pinned)} to ${clean(showType(live), 60)}`;
  }
  return null;
}

/**
 * The differences of a live description in what the package relies on, one line each,
 * "METHOD /path: what changed", in the order of the operations. Empty: nothing relevant differs.
 */
export function compareDescription(live: unknown, relied: ReliedOperation[] = reliedOn()): string[] {
  stepsLeft = STEP_BUDGET;
  try {
    const all = compareWithin(live, relied);
    // Bounded, whatever the description holds: the warning, the sidebar and the thread's answer
    // stay small (docs/service-description.md#what-you-see).
    if (all.length <= MAX_DIFFERENCES) return all;
    return [...all.slice(0, MAX_DIFFERENCES), `and ${all.length - MAX_DIFFERENCES} more differences (not listed)`];
  } catch (e) {
    if (e instanceof TooComplex) return [TOO_COMPLEX];
    throw e;
  } finally {
    stepsLeft = Number.POSITIVE_INFINITY;
  }
}

function compareWithin(live: unknown, relied: ReliedOperation[]): string[] {
  const out: string[] = [];
  const all = operationsOf(live);
  for (const r of relied) {
    const name = `${r.method} ${r.path}`;
    const diff = (what: string) => out.push(`${name}: ${what}`);
    const found = find(live, r.method, r.path);
    if (!found) {
      const moved = all.find((f) => f.op.operationId === r.id);
      diff(
        moved ? `moved to ${clean(`${moved.method} ${moved.path}`)}` : "gone (the description has no such operation)",
      );
      continue;
    }
    const op = found.op;

    // The request: the body the package sends, the parameters it does not send.
    const body = jsonSchemaOf(live, op.requestBody);
    if (r.sends) {
      if (!body.json) {
        diff("no longer takes a JSON request body");
      } else {
        const flat = flatten(live, body.schema);
        if (!flat.opaque) {
          for (const [field, type] of Object.entries(r.sends)) {
            if (flat.properties && !Object.prototype.hasOwnProperty.call(flat.properties, field)) {
              diff(`request field "${field}" was removed`);
              continue;
            }
            const changed = typeChange(
              `request field "${field}"`,
              type,
              fieldTypes(live, flat.properties, [field])[field],
            );
            if (changed) diff(changed);
          }
          for (const req of [...flat.required].sort()) {
            if (!Object.prototype.hasOwnProperty.call(r.sends, req))
              diff(`request field "${clean(req, 60)}" is now required`);
          }
        }
      }
    } else if (body.present) {
      const rb = deref(live, op.requestBody);
      if (isObj(rb) && rb.required === true) diff("now requires a request body");
    }
    for (const p of parameterKeys(live, found.parameters, true)) {
      const [where, pname] = [p.slice(0, p.indexOf(":")), p.slice(p.indexOf(":") + 1)];
      if (r.parameters.includes(p) || (where === "header" && OWN_HEADERS.has(pname))) continue;
      diff(`${clean(where, 10)} parameter "${clean(pname, 60)}" is now required`);
    }

    // The success response.
    const responses = isObj(op.responses) ? op.responses : {};
    const success = successOf(op);
    if (success === undefined) {
      diff("no success (2xx) response is listed any more");
    } else if (r.response) {
      const json = jsonSchemaOf(live, success);
      if (!json.json) {
        diff("the success response is no longer JSON");
      } else {
        const top = flatten(live, json.schema);
        if (!top.opaque) {
          if (top.type.types.length > 0 && !sameTypes(top.type, r.response.type)) {
            diff(
              `the success response changed type from ${showType(r.response.type)} to ${clean(showType(top.type), 60)}`,
            );
          } else {
            if (top.type.nullable && !r.response.type.nullable) diff("the success response may now be null");
            const shape = r.response.list ? flatten(live, top.items) : top;
            if (!shape.opaque) {
              const where = r.response.list ? " of each list item" : "";
              const keys = Object.keys(shape.properties ?? {});
              const lookup = (field: string): string | undefined => {
                if (!CASE_INSENSITIVE_RESPONSE.has(r.id))
                  return keys.includes(field) || shape.required.has(field) ? field : undefined;
                const lower = field.toLowerCase();
                return [...keys, ...shape.required].find((k) => k.toLowerCase() === lower);
              };
              for (const [field, type] of Object.entries(r.response.required)) {
                const key = lookup(field);
                if (key === undefined) {
                  diff(`response field "${field}"${where} is gone`);
                  continue;
                }
                if (!shape.required.has(key)) diff(`response field "${field}"${where} is no longer required`);
                const liveType = fieldTypes(live, shape.properties, [key])[key];
                const changed = typeChange(`response field "${field}"${where}`, type, liveType);
                if (changed) diff(changed);
                else if (liveType.nullable && !type.nullable) diff(`response field "${field}"${where} may now be null`);
              }
            }
          }
        }
      }
    }

    // The error statuses the package branches on.
    const keys = Object.keys(responses);
    const missing = r.statuses.filter(
      (s) => !keys.includes(String(s)) && !keys.some((k) => k.toUpperCase() === `${String(s)[0]}XX`),
    );
    if (missing.length === 1) diff(`status ${missing[0]} is no longer listed`);
    else if (missing.length > 1) diff(`statuses ${missing.join(", ")} are no longer listed`);
  }
  return out;
}
