/**
 * The description documents: OpenAPI JSON/YAML with X-Spec-Source and ETag/304, the pinned copy,
 * llms.txt, the YAML emitter, and changing what the live paths serve.
 * docs/simulator.md#description-documents, docs/simulator.md#control-api (POST /_sim/docs)
 */
import { strict as assert } from "node:assert";
import * as yaml from "js-yaml"; // a dev dependency, only to check the emitter's output
import { OPERATIONS } from "../../src/spec/schemas.js";
import { toYaml, type RunningSimulator } from "../../src/simulator/index.js";
import { assertError, call, withSim } from "../helpers/simulator.js";

/** Responses per operation, from the spec's error table (and operation 5: only 200 and 401). */
const EXPECTED_STATUSES: Record<string, string[]> = {
  login: ["200", "400", "401", "429"],
  loginByPhone: ["200", "400", "401", "429"],
  loginByEmail: ["200", "400", "401", "429"],
  refreshToken: ["200", "400", "401", "429"],
  logout: ["200", "401"],
  getDevice: ["200", "401", "403", "404", "429"],
  unlockDevice: ["200", "401", "403", "404", "429", "502", "503", "504"],
  unlockDeviceLock: ["200", "401", "403", "404", "429", "502", "503", "504"],
  listUserLocations: ["200", "401", "429"],
  listUserDevices: ["200", "401", "429"],
};

describe("simulator description documents: /openapi.json, /openapi.yaml, /openapi.pinned.json and /llms.txt answer GET and HEAD with a strong ETag and 304 on a match (docs/simulator.md#description-documents)", () => {
  let sim: RunningSimulator;
  before(async () => {
    sim = await withSim();
  });
  after(async () => {
    await sim.close();
  });

  it("/openapi.json is an OpenAPI 3.0 description of exactly the ten operations", async () => {
    const r = await call(sim, "GET", "/openapi.json");
    assert.equal(r.status, 200);
    assert.match(String(r.headers["content-type"]), /^application\/json/);
    assert.equal(r.headers["x-spec-source"], "live");
    const doc = r.json;
    assert.match(doc.openapi, /^3\.0\./);
    assert.equal(doc.info.version, "v1");
    const found: Record<string, { method: string; path: string; op: any }> = {};
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item))
        found[op.operationId] = { method: method.toUpperCase(), path, op };
    }
    assert.deepEqual(Object.keys(found).sort(), Object.keys(OPERATIONS).sort());
    for (const [id, spec] of Object.entries(OPERATIONS)) {
      const f = found[id];
      assert.equal(f.method, spec.method, id);
      assert.equal(f.path, spec.path, id);
      assert.deepEqual(Object.keys(f.op.responses).sort(), EXPECTED_STATUSES[id], `responses of ${id}`);
      const bearer = spec.n >= 5;
      assert.equal(
        Array.isArray(f.op.security) && f.op.security.some((s: object) => "bearerAuth" in s),
        bearer,
        `security of ${id}`,
      );
      if (f.op.responses["429"]) assert.ok(f.op.responses["429"].headers["Retry-After"], `Retry-After on ${id}`);
    }
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
    });
    const s = doc.components.schemas;
    for (const name of ["LoginRequest", "LoginByEmailRequest", "RefreshSessionRequest"])
      assert.equal(s[name].additionalProperties, false, name);
    assert.equal(s.LoginRequest.properties.phoneNumber.pattern, "^[+][0-9]{9,13}$");
    assert.deepEqual(s.TokenPair.required, ["AccessToken", "RefreshToken"]);
    assert.deepEqual(s.Device.required, ["id"]);
    assert.deepEqual(s.ErrorResponse.required, ["status"]);
    assert.deepEqual(doc.servers, [{ url: sim.url }]);
  });

  it("/openapi.json has a strong ETag; If-None-Match answers 304 with an empty body", async () => {
    const first = await call(sim, "GET", "/openapi.json");
    const etag = String(first.headers.etag);
    assert.match(etag, /^"[^"]+"$/, "strong ETag (no W/ prefix)");
    const again = await call(sim, "GET", "/openapi.json");
    assert.equal(again.headers.etag, etag, "stable");
    const notModified = await call(sim, "GET", "/openapi.json", { headers: { "if-none-match": etag } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.text, "");
    assert.equal(notModified.headers.etag, etag);
    assert.equal(notModified.headers["x-spec-source"], "live");
    const list = await call(sim, "GET", "/openapi.json", { headers: { "if-none-match": `"other", ${etag}` } });
    assert.equal(list.status, 304);
    const changed = await call(sim, "GET", "/openapi.json", { headers: { "if-none-match": '"something-else"' } });
    assert.equal(changed.status, 200);
    assert.ok(changed.text.length > 1000);
  });

  it("/openapi.yaml is the same description as YAML", async () => {
    const j = await call(sim, "GET", "/openapi.json");
    const y = await call(sim, "GET", "/openapi.yaml");
    assert.equal(y.status, 200);
    assert.match(String(y.headers["content-type"]), /yaml/);
    assert.equal(y.headers["x-spec-source"], "live");
    assert.ok(y.headers.etag);
    assert.deepEqual(yaml.load(y.text), j.json);
  });

  it("/openapi.pinned.json is a fixed copy marked pinned, with its own ETag and 304", async () => {
    const live = await call(sim, "GET", "/openapi.json");
    const p = await call(sim, "GET", "/openapi.pinned.json");
    assert.equal(p.status, 200);
    assert.equal(p.headers["x-spec-source"], "pinned");
    assert.deepEqual(p.json.paths, live.json.paths);
    assert.deepEqual(p.json.components, live.json.components);
    const etag = String(p.headers.etag);
    const other = await withSim();
    try {
      const p2 = await call(other, "GET", "/openapi.pinned.json");
      assert.equal(p2.headers.etag, etag, "the pinned copy does not depend on the listener");
      assert.equal(p2.text, p.text);
    } finally {
      await other.close();
    }
    assert.equal((await call(sim, "GET", "/openapi.pinned.json", { headers: { "if-none-match": etag } })).status, 304);
  });

  it("/llms.txt is a short index pointing at the descriptions", async () => {
    const r = await call(sim, "GET", "/llms.txt");
    assert.equal(r.status, 200);
    assert.match(String(r.headers["content-type"]), /^text\/plain/);
    assert.match(r.text, /^# /);
    for (const p of [
      "/openapi.json",
      "/openapi.yaml",
      "/openapi.pinned.json",
      "/api/auth/login-by-phone",
      "/api/user/device",
    ]) {
      assert.ok(r.text.includes(p), p);
    }
    assert.ok(r.text.length < 4000);
  });

  it("docs answer only GET/HEAD, and are logged as operation docs", async () => {
    assertError(await call(sim, "POST", "/openapi.json", { json: {} }), 405);
    const head = await call(sim, "HEAD", "/openapi.json");
    assert.equal(head.status, 200);
    assert.equal(head.text, "");
    const docs = sim.control.requests({ operation: "docs" });
    assert.ok(docs.length >= 3);
    assert.ok(docs.every((e) => e.accountId === null));
  });
});

describe("simulator description documents: POST /_sim/docs changes what /openapi.json and /openapi.yaml serve, the pinned copy stays, DELETE restores (docs/simulator.md#control-api)", () => {
  let sim: RunningSimulator;
  before(async () => {
    sim = await withSim();
  });
  after(async () => {
    await sim.close();
  });
  afterEach(async () => {
    assert.equal((await call(sim, "DELETE", "/_sim/docs")).status, 204);
  });

  it("serves another description at /openapi.json and /openapi.yaml with a new ETag; the pinned copy stays; DELETE restores", async () => {
    const own = await call(sim, "GET", "/openapi.json");
    const pinned = await call(sim, "GET", "/openapi.pinned.json");
    const changed = JSON.parse(own.text);
    delete changed.paths["/api/device/{deviceId}/unlock"];
    assert.equal((await call(sim, "POST", "/_sim/docs", { json: { description: changed } })).status, 204);
    const live = await call(sim, "GET", "/openapi.json", { headers: { "if-none-match": String(own.headers.etag) } });
    assert.equal(live.status, 200, "the old ETag no longer matches");
    assert.equal(live.headers["x-spec-source"], "live");
    assert.notEqual(live.headers.etag, own.headers.etag);
    assert.deepEqual(live.json, changed);
    assert.deepEqual(yaml.load((await call(sim, "GET", "/openapi.yaml")).text), changed);
    assert.equal(
      (await call(sim, "GET", "/openapi.json", { headers: { "if-none-match": String(live.headers.etag) } })).status,
      304,
    );
    assert.equal((await call(sim, "GET", "/openapi.pinned.json")).text, pinned.text);
    await call(sim, "DELETE", "/_sim/docs");
    const back = await call(sim, "GET", "/openapi.json");
    assert.equal(back.headers.etag, own.headers.etag);
    assert.equal(back.text, own.text);
  });

  it("answers an error status, a body that is not a description, or closes the connection without an answer", async () => {
    await call(sim, "POST", "/_sim/docs", { json: { status: 404 } });
    assertError(await call(sim, "GET", "/openapi.json"), 404);
    await call(sim, "POST", "/_sim/docs", { json: { body: "<html>down</html>", contentType: "text/html" } });
    const html = await call(sim, "GET", "/openapi.json");
    assert.equal(html.status, 200);
    assert.equal(html.text, "<html>down</html>");
    assert.match(String(html.headers["content-type"]), /^text\/html/);
    sim.control.resetRequests();
    await call(sim, "POST", "/_sim/docs", { json: { drop: true } });
    await assert.rejects(call(sim, "GET", "/openapi.json"));
    assert.equal(sim.control.requests({ operation: "docs" })[0]?.status, 0);
    assert.equal((await call(sim, "GET", "/openapi.pinned.json")).status, 200, "the pinned copy is still served");
  });

  it("refuses a body it does not know", async () => {
    for (const body of [
      {},
      { status: 200 },
      { drop: false },
      { description: "x" },
      { body: 1 },
      { status: 404, drop: true },
    ]) {
      assertError(await call(sim, "POST", "/_sim/docs", { json: body }), 400);
    }
    assertError(await call(sim, "GET", "/_sim/docs"), 405);
  });
});

describe("simulator description documents: /openapi.yaml is YAML a YAML parser reads back as the same values (docs/simulator.md#description-documents)", () => {
  it("round-trips awkward values through a YAML parser", () => {
    const data = {
      plain: "hello world",
      reserved: ["true", "no", "null", "~", "yes", "On"],
      numeric: ["200", "1.5", "0x10", "1e3", "-1"],
      punctuation: [
        "a: b",
        "#hash",
        "x #y",
        "- dash",
        "{braces}",
        "[list]",
        'quote"s',
        "it's",
        "*star",
        "&amp",
        "!bang",
        "%pct",
        "@at",
        "`tick`",
        "|pipe",
        ">gt",
        "?q",
      ],
      spaces: [" leading", "trailing ", ""],
      multiline: "line1\nline2\ttab",
      unicode: "Tür öffnen ✓",
      numbers: [0, -3, 2.5, 1e21],
      booleans: [true, false],
      nothing: null,
      emptyObject: {},
      emptyArray: [],
      nested: [
        [1, [2, []]],
        [{ a: { b: [{ c: "d" }] } }],
        { "key with space": 1, "200": "ok", "/path/{id}": { x: 1 } },
      ],
    };
    assert.deepEqual(yaml.load(toYaml(data)), JSON.parse(JSON.stringify(data)));
  });
  it("emits scalars and empty documents", () => {
    assert.equal(yaml.load(toYaml("x: y")), "x: y");
    assert.deepEqual(yaml.load(toYaml({})), {});
    assert.deepEqual(yaml.load(toYaml([])), []);
    assert.equal(yaml.load(toYaml(null)), null);
  });
});
