/**
 * The service description check (docs/service-description.md): the account reads the
 * service's /openapi.json once after its start-up and every 24 hours, without a token, with
 * If-None-Match once it knows an ETag, and warns once, naming each difference, when the
 * description differs in what the package relies on; a 304, an unchanged description or a
 * change nothing relies on says nothing; a failed fetch is one debug line and the next try is
 * at the next 24-hour mark. None of it ever touches the session: the unlock is accepted in
 * every case. Requests are counted and their headers read in the simulator's request log.
 */
import { strict as assert } from "node:assert";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { writeFileSync } from "node:fs";
import * as path from "node:path";
import { Account } from "../../src/account/account.js";
import {
  DESCRIPTION_CHECK_INTERVAL_MS,
  DESCRIPTION_FIRST_CHECK_DELAY_MS,
  DESCRIPTION_FIRST_CHECK_LATEST_MS,
  DESCRIPTION_MAX_BYTES,
  DESCRIPTION_READ_DEADLINE_MS,
  ServiceDescriptionCheck,
  descriptionUrl,
} from "../../src/account/description-check.js";
import {
  PINNED_DESCRIPTION,
  TOO_COMPLEX,
  MAX_DIFFERENCES,
  compareDescription,
  isDescription,
  nestsDeeperThan,
  reliedOn,
} from "../../src/spec/description.js";
import {
  buildOpenApi,
  startSimulator,
  type RequestLogEntry,
  type RunningSimulator,
} from "../../src/simulator/index.js";
import { fakeClock, type FakeClock } from "../helpers/fake-clock.js";
import {
  DRIFT_DIFFERENCES,
  assertNoCredential,
  description,
  docsRequests,
  drifted,
  hostileDescriptions,
  irrelevantlyChanged,
} from "../helpers/service-description.js";
import { DEMO_PHONE, tempDir, waitUntil } from "../helpers/session.js";

describe("service description check: what the package relies on (docs/service-description.md#what-is-checked)", () => {
  it("the pinned copy the package ships is the description the simulator serves (without its server)", () => {
    assert.deepEqual(PINNED_DESCRIPTION, JSON.parse(JSON.stringify(buildOpenApi())));
    assert.ok(isDescription(PINNED_DESCRIPTION));
  });

  it("relies on each of the ten operations the client calls, its request fields, required response fields and branched statuses", () => {
    const relied = reliedOn();
    assert.equal(relied.length, 10);
    const unlockOp = relied.find((r) => r.id === "unlockDevice")!;
    assert.deepEqual(
      [unlockOp.method, unlockOp.path, unlockOp.sends, unlockOp.response],
      ["PUT", "/api/device/{deviceId}/unlock", null, null],
    );
    assert.deepEqual(unlockOp.statuses, [401, 403, 404, 429, 502, 503, 504]);
    const login = relied.find((r) => r.id === "loginByPhone")!;
    assert.deepEqual(Object.keys(login.sends!), ["phoneNumber", "password"]);
    assert.deepEqual(Object.keys(login.response!.required), ["AccessToken", "RefreshToken"]);
    const list = relied.find((r) => r.id === "listUserDevices")!;
    assert.equal(list.response!.list, true);
    assert.deepEqual(list.response!.required, { id: { types: ["integer"], nullable: false } });
  });

  it("the simulator's live description (with its server) has no difference", () => {
    assert.deepEqual(compareDescription(buildOpenApi("http://127.0.0.1:1")), []);
  });

  it("a new optional field, a new operation, a new status, new texts and a renamed path parameter are not reported", () => {
    const d = irrelevantlyChanged();
    const item = d.paths["/api/device/{deviceId}"];
    delete d.paths["/api/device/{deviceId}"];
    d.paths["/api/device/{id}"] = item;
    item.get.parameters[0].name = "id";
    assert.deepEqual(compareDescription(d), []);
  });

  it("an operation removed and a required request field added are each named", () => {
    assert.deepEqual(compareDescription(drifted()), DRIFT_DIFFERENCES);
  });

  // docs/service-description.md#what-you-see
  it("however many things differ, at most 50 are listed and the rest counted in one line: a description with 8,500 new required parameters per operation gives a short warning", () => {
    const d = description();
    for (const item of Object.values<Record<string, any>>(d.paths)) {
      for (const op of Object.values(item)) {
        if (typeof op !== "object" || op === null || !("responses" in op)) continue;
        op.parameters = [
          ...(op.parameters ?? []),
          ...Array.from({ length: 8500 }, (_, i) => ({
            in: "query",
            name: `x${i}`,
            required: true,
            schema: { type: "string" },
          })),
        ];
      }
    }
    const found = compareDescription(d);
    assert.equal(found.length, MAX_DIFFERENCES + 1, String(found.length));
    assert.equal(MAX_DIFFERENCES, 50);
    assert.match(found[found.length - 1], /^and \d+ more differences \(not listed\)$/);
    assert.ok(found.join("\n").length < 20_000, "the list stays small");
  });

  it("moved operations, removed or retyped fields, fields made optional or nullable, statuses no longer listed, a new required parameter", () => {
    const d = description();
    d.paths["/api/v2/device/{deviceId}/unlock/{lockId}"] = d.paths["/api/device/{deviceId}/unlock/{lockId}"];
    delete d.paths["/api/device/{deviceId}/unlock/{lockId}"];
    delete d.components.schemas.RefreshSessionRequest.properties.refreshToken;
    d.components.schemas.RefreshSessionRequest.properties.token = { type: "string" };
    d.components.schemas.LoginByEmailRequest.properties.password = { type: "object" };
    d.components.schemas.TokenPair.required = ["AccessToken"];
    d.components.schemas.Device.properties.id = { type: "string" };
    delete d.paths["/api/device/{deviceId}/unlock"].put.responses["503"];
    delete d.paths["/api/device/{deviceId}/unlock"].put.responses["504"];
    d.paths["/api/user/location"].get.parameters = [
      { name: "page", in: "query", required: true, schema: { type: "integer" } },
    ];
    d.paths["/api/auth/logout"].post.responses = {
      "204": { description: "no body" },
      "401": d.paths["/api/auth/logout"].post.responses["401"],
    };
    assert.deepEqual(compareDescription(d), [
      'POST /api/auth/login: response field "RefreshToken" is no longer required',
      'POST /api/auth/login-by-phone: response field "RefreshToken" is no longer required',
      'POST /api/auth/login-by-email: request field "password" changed type from string to object',
      'POST /api/auth/login-by-email: response field "RefreshToken" is no longer required',
      'POST /api/auth/refresh: request field "refreshToken" was removed',
      'POST /api/auth/refresh: response field "RefreshToken" is no longer required',
      'GET /api/device/{deviceId}: response field "id" changed type from integer to string',
      "PUT /api/device/{deviceId}/unlock: statuses 503, 504 are no longer listed",
      "PUT /api/device/{deviceId}/unlock/{lockId}: moved to PUT /api/v2/device/{deviceId}/unlock/{lockId}",
      'GET /api/user/location: query parameter "page" is now required',
      'GET /api/user/device: response field "id" of each list item changed type from integer to string',
    ]);
    const n = description();
    n.components.schemas.Device.properties.id = { type: "integer", nullable: true };
    n.components.schemas.TokenPair.properties.AccessToken = { type: "string", nullable: true };
    n.paths["/api/user/location"].get.responses["200"].content["application/json"].schema.nullable = true;
    assert.deepEqual(compareDescription(n), [
      'POST /api/auth/login: response field "AccessToken" may now be null',
      'POST /api/auth/login-by-phone: response field "AccessToken" may now be null',
      'POST /api/auth/login-by-email: response field "AccessToken" may now be null',
      'POST /api/auth/refresh: response field "AccessToken" may now be null',
      'GET /api/device/{deviceId}: response field "id" may now be null',
      "GET /api/user/location: the success response may now be null",
      'GET /api/user/device: response field "id" of each list item may now be null',
    ]);
  });

  it("a schema it cannot read (a reference that leads nowhere, oneOf) is not judged; malformed parts are no crash", () => {
    const d = description();
    d.paths["/api/auth/refresh"].post.requestBody.content["application/json"].schema = { oneOf: [{ type: "object" }] };
    d.components.schemas.Device = { $ref: "#/components/schemas/Missing" };
    d.components.schemas.TokenPair = { allOf: [{ $ref: "#/components/schemas/TokenPair" }] };
    d.components.schemas.LoginRequest.required = "phoneNumber";
    assert.deepEqual(compareDescription(d), []);
    const broken = description();
    broken.paths["/api/user/device"] = { get: { responses: null } };
    broken.paths["/api/user/location"] = { get: [] };
    assert.deepEqual(compareDescription(broken), [
      "GET /api/user/location: gone (the description has no such operation)",
      "GET /api/user/device: no success (2xx) response is listed any more",
      "GET /api/user/device: statuses 401, 429 are no longer listed",
    ]);
    for (const notOne of [
      null,
      [],
      "openapi",
      { openapi: "3.0.3" },
      { swagger: "2.0", paths: {} },
      { openapi: 3, paths: {} },
    ])
      assert.equal(isDescription(notOne), false);
  });

  // docs/service-description.md#when
  for (const [what, make] of hostileDescriptions()) {
    it(`a description built to be slow (${what}) is compared within the work bound: it ends at once, compared or given up as "too complex to check"`, () => {
      const d = make();
      const started = performance.now();
      const out = compareDescription(d);
      const took = performance.now() - started;
      assert.ok(out.length === 0 || out.every((line) => typeof line === "string"), JSON.stringify(out.slice(0, 3)));
      // The bound is in steps, not time: 1 s is far above it even on a busy machine, and far
      // below the minutes these took without it.
      assert.ok(took < 1000, `the comparison took ${Math.round(took)} ms`);
    });
  }

  // docs/service-description.md#when
  it("a body nested deeper than 64 levels is refused before JSON.parse (4 MiB of [[[[ would hold the loop for half a second); brackets inside strings do not count; the description itself is far shallower", () => {
    const deep = Buffer.from("[".repeat(2 * 1024 * 1024) + "]".repeat(2 * 1024 * 1024));
    assert.equal(nestsDeeperThan(deep), true);
    assert.equal(nestsDeeperThan(Buffer.from(JSON.stringify(description()))), false);
    assert.equal(
      nestsDeeperThan(Buffer.from(JSON.stringify({ a: "[".repeat(1000) + '\\"' + "{".repeat(1000) }))),
      false,
    );
    assert.equal(nestsDeeperThan(Buffer.from("[".repeat(64) + "]".repeat(64))), false, "64 levels are read");
    assert.equal(nestsDeeperThan(Buffer.from("[".repeat(65) + "]".repeat(65))), true, "65 are not");
  });

  it('a description that needs more work than the bound is reported as "too complex to check", and one that fits is still compared', () => {
    const [, chain] = hostileDescriptions()[1];
    assert.deepEqual(compareDescription(chain()), [TOO_COMPLEX]);
    assert.deepEqual(compareDescription(description()), [], "the simulator's own description fits the bound");
    assert.ok(compareDescription(drifted()).length > 0, "and a drift is still found");
  });

  it("the token pair's fields are read case-insensitively: a renamed case is no difference", () => {
    const d = description();
    d.components.schemas.TokenPair = {
      type: "object",
      required: ["accessToken", "refreshToken"],
      properties: { accessToken: { type: "string" }, refreshToken: { type: "string" } },
    };
    assert.deepEqual(compareDescription(d), []);
  });

  it("text from the description is cut short and loses control characters", () => {
    const d = description();
    d.paths[`/api/x\n${"y".repeat(300)}`] = d.paths["/api/user/device"];
    delete d.paths["/api/user/device"];
    const [line] = compareDescription(d);
    assert.match(line, /^GET \/api\/user\/device: moved to GET \/api\/x y+…$/);
    assert.ok(line.length < 200);
  });

  it("the docs URL: empty is the base URL; /openapi.json is appended unless a .json file is named; the base URL's rules apply", () => {
    assert.equal(descriptionUrl("", "https://svc.example").href, "https://svc.example/openapi.json");
    assert.equal(descriptionUrl(undefined, "https://svc.example/door/").href, "https://svc.example/door/openapi.json");
    assert.equal(
      descriptionUrl(" https://docs.example/v1 ", "https://svc.example").href,
      "https://docs.example/v1/openapi.json",
    );
    assert.equal(
      descriptionUrl("https://docs.example/spec/openapi.pinned.json", "https://svc.example").href,
      "https://docs.example/spec/openapi.pinned.json",
    );
    assert.throws(
      () => descriptionUrl("http://docs.example", "https://svc.example"),
      /^BaseUrlError: the docs URL must use https/,
    );
    assert.throws(
      () => descriptionUrl("https://user:pw@docs.example", "https://svc.example"),
      /the docs URL must not contain a user name or password/,
    );
  });
});

describe("service description check: every 24 hours, on the account's clock (docs/service-description.md#when)", function () {
  this.timeout(30_000);
  let clock: FakeClock;
  let sim: RunningSimulator;
  let account: Account;
  const lines: string[] = [];

  beforeEach(async () => {
    lines.length = 0;
    clock = fakeClock();
    sim = await startSimulator({ rateLimit: false, now: () => clock.now() });
    const dir = tempDir();
    account = new Account({
      baseUrl: sim.url,
      credentials: DEMO_PHONE,
      tokenFile: path.join(dir, "session.json"),
      auditLogPath: path.join(dir, "audit.jsonl"),
      clock,
      descriptionCheck: {
        url: descriptionUrl("", sim.url),
        log: {
          debug: (m) => lines.push(`debug ${m}`),
          info: (m) => lines.push(`info ${m}`),
          warn: (m) => lines.push(`warn ${m}`),
        },
      },
    });
  });
  afterEach(async () => {
    await account.close(0);
    await sim.close();
    clock.uninstall();
  });

  /** The check's description request under way, if any (null when none is). */
  const checkInFlight = (): unknown => (account.descriptionCheck as unknown as { inflight: unknown }).inflight;

  /** Advances the fake clock, then waits (real time) until `count` description requests were answered and handled. */
  async function tickTo(ms: number, count: number): Promise<RequestLogEntry> {
    await clock.tickAsync(ms);
    await waitUntil(
      () => docsRequests(sim).length === count && (account.descriptionCheck as any).inflight === null,
      5000,
      `${count} description requests`,
    );
    return docsRequests(sim)[count - 1];
  }

  it("the first check 1 s after the start-up, then every 24 h: the docs' numbers", () => {
    assert.equal(DESCRIPTION_FIRST_CHECK_DELAY_MS, 1000, "docs/service-description.md#when: one second after start-up");
    assert.equal(DESCRIPTION_CHECK_INTERVAL_MS, 86_400_000, "docs/service-description.md#when: every 24 hours");
  });

  it("once 1 s after the start-up, then at each 24-hour mark with If-None-Match; 304 silent; a drift warned once; a failure retried only at the next mark", async () => {
    const etag = (await fetch(`${sim.url}/openapi.json`)).headers.get("etag");
    assert.ok(etag);
    sim.control.resetRequests();
    await clock.tickAsync(10_000);
    assert.equal(docsRequests(sim).length, 0, "nothing before the start-up");
    await account.start();
    // docs/service-description.md#when: one second after the start-up, then every 24 hours.
    await clock.tickAsync(999);
    assert.equal(checkInFlight(), null, "no check started before one second");
    assert.equal(docsRequests(sim).length, 0, "not on the start-up's path");
    const first = await tickTo(1, 1);
    assertNoCredential(first);
    assert.equal(first.ifNoneMatch, null);

    // 24 h later: conditional, answered 304, silent.
    await clock.tickAsync(24 * 3600_000 - 1);
    assert.equal(checkInFlight(), null, "no check started before 24 h");
    assert.equal(
      docsRequests(sim).length,
      1,
      `not before the 24-hour mark: ${JSON.stringify(docsRequests(sim).map((e) => [e.startedAt - first.startedAt, e.status]))}`,
    );
    const second = await tickTo(1, 2);
    assert.equal(second.ifNoneMatch, etag);
    assert.equal(second.status, 304);
    assertNoCredential(second);
    assert.equal(lines.length, 0, lines.join("\n"));

    // The service drifts: one warning at the next mark, naming each difference; the same drift again is silent.
    sim.control.serveDescription({ description: drifted() });
    const third = await tickTo(24 * 3600_000, 3);
    assert.equal(third.ifNoneMatch, etag);
    assert.equal(third.status, 200);
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(
      lines[0],
      /^warn the service description at .*\/openapi\.json differs .* in 3 things the package relies on/,
    );
    for (const d of DRIFT_DIFFERENCES) assert.ok(lines[0].includes(`  - ${d}`), d);
    assert.deepEqual(account.descriptionCheck!.report().differences, DRIFT_DIFFERENCES);
    const fourth = await tickTo(24 * 3600_000, 4);
    assert.equal(fourth.status, 304);
    assert.notEqual(fourth.ifNoneMatch, etag, "the drifted description's ETag");
    assert.equal(lines.length, 1);

    // Unreachable: one debug line, then nothing until the next mark.
    sim.control.serveDescription({ drop: true });
    await tickTo(24 * 3600_000, 5);
    assert.equal(lines.length, 2);
    assert.match(lines[1], /^debug service description check: .* could not be read .*; next try in 24 h$/);
    await clock.tickAsync(24 * 3600_000 - 1);
    assert.equal(docsRequests(sim).length, 5, "no retry before the next mark");
    sim.control.serveDescription(null);
    await tickTo(1, 6);
    assert.equal(lines.length, 3);
    assert.match(lines[2], /^info the service description at .* matches what this package relies on again$/);
    assert.deepEqual(account.descriptionCheck!.report().differences, []);

    // The session was never touched by any of it (it renewed on its own 36 h schedule meanwhile).
    await waitUntil(() => account.session.state === "ready", 5000, "the session ready");
    assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 1);
  });

  it("close() clears the check's timers", async () => {
    await account.start();
    assert.ok(clock.pendingTimers() > 0);
    await account.close(0);
    assert.equal(clock.pendingTimers(), 0, "no timer of the account is left");
    await clock.tickAsync(2 * DESCRIPTION_CHECK_INTERVAL_MS);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(docsRequests(sim).length, 0, "no request after close");
  });
});

describe("service description check: a fetch that never answers is cut off by close() (docs/service-description.md#when)", () => {
  it("is cut off by close(): nothing rejects unhandled, nothing is logged", async () => {
    const sockets = new Set<Socket>();
    const server: Server = createServer((s) => sockets.add(s)); // accepts, never answers
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    const lines: string[] = [];
    const check = new ServiceDescriptionCheck({
      url: descriptionUrl("", `http://127.0.0.1:${port}`),
      log: { debug: (m) => lines.push(m), info: (m) => lines.push(m), warn: (m) => lines.push(m) },
    });
    try {
      const done = check.checkNow();
      await waitUntil(() => sockets.size === 1, 5000, "the connection");
      check.close();
      await done;
      assert.deepEqual(lines, []);
      assert.deepEqual(check.report().differences, []);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("service description check: reading a description is bounded in time and memory (docs/service-description.md#when)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  before(async () => {
    sim = await startSimulator({ rateLimit: false });
  });
  after(async () => {
    await sim.close();
  });

  /** A check whose worker thread runs `script` instead of the reader. */
  function checkWith(script: string, clock?: FakeClock): { check: ServiceDescriptionCheck; lines: string[] } {
    const file = path.join(tempDir("worker-"), "worker.js");
    writeFileSync(file, script);
    const lines: string[] = [];
    const check = new ServiceDescriptionCheck({
      url: descriptionUrl("", sim.url),
      ...(clock ? { clock } : {}),
      readWorker: file,
      log: {
        debug: (m) => lines.push(`debug ${m}`),
        info: (m) => lines.push(`info ${m}`),
        warn: (m) => lines.push(`warn ${m}`),
      },
    });
    return { check, lines };
  }
  const reading = (check: ServiceDescriptionCheck): boolean =>
    (check as unknown as { stopReading: unknown }).stopReading !== null;

  it('a read that has not finished after 10 s on the account\'s clock is given up: "too complex to check", warned once', async () => {
    assert.equal(DESCRIPTION_READ_DEADLINE_MS, 10_000);
    const clock = fakeClock();
    const { check, lines } = checkWith("setInterval(() => {}, 1000);", clock);
    try {
      const done = check.checkNow();
      await waitUntil(() => reading(check), 5000, "the read to start");
      await clock.tickAsync(DESCRIPTION_READ_DEADLINE_MS - 1);
      assert.ok(reading(check), "still reading 1 ms before the deadline");
      await clock.tickAsync(1);
      await done;
      assert.equal(lines.length, 1, JSON.stringify(lines));
      assert.match(lines[0], /^warn the service description at .* is too complex to check/);
      assert.equal(reading(check), false);
    } finally {
      check.close();
      clock.uninstall();
    }
  });

  it('a read that runs out of its thread\'s memory is given up: "too complex to check", and Node-RED goes on', async () => {
    const { check, lines } = checkWith("const keep = []; for (;;) keep.push(new Array(1e5).fill({ a: 1 }));");
    try {
      await check.checkNow();
      assert.equal(lines.length, 1, JSON.stringify(lines));
      assert.match(lines[0], /too complex to check/);
    } finally {
      check.close();
    }
  });

  it("close() ends a read in progress: nothing is said, nothing rejects", async () => {
    const { check, lines } = checkWith("setInterval(() => {}, 1000);");
    const done = check.checkNow();
    await waitUntil(() => reading(check), 5000, "the read to start");
    check.close();
    await done;
    assert.deepEqual(lines, []);
  });
});

describe("service description check: a description that trickles in without end (docs/service-description.md#when)", () => {
  it("is cut off after a minute on the account's clock, logged once at debug level, and read again at the next 24-hour mark", async () => {
    const clock = fakeClock();
    const sockets = new Set<Socket>();
    let requests = 0;
    // Answers 200 with a chunked body that gains one byte every 100 ms (real time), for ever.
    const server: Server = createServer((sock) => {
      sockets.add(sock);
      sock.once("data", () => {
        requests++;
        sock.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n");
        const drip = setInterval(() => (sock.destroyed ? clearInterval(drip) : sock.write("1\r\n \r\n")), 100);
        sock.on("close", () => clearInterval(drip));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const lines: string[] = [];
    const check = new ServiceDescriptionCheck({
      url: descriptionUrl("", `http://127.0.0.1:${(server.address() as { port: number }).port}`),
      clock,
      log: {
        debug: (m) => lines.push(`debug ${m}`),
        info: (m) => lines.push(`info ${m}`),
        warn: (m) => lines.push(`warn ${m}`),
      },
    });
    try {
      check.startAfter({ state: "ready", on: () => undefined, off: () => undefined });
      await clock.tickAsync(DESCRIPTION_FIRST_CHECK_DELAY_MS);
      await waitUntil(() => requests === 1, 5000, "the description request");
      await new Promise((r) => setTimeout(r, 300)); // a few bytes arrive
      await clock.tickAsync(60_000);
      await waitUntil(
        () => lines.length === 1,
        5000,
        () => `the fetch to be cut off: ${JSON.stringify(lines)}`,
      );
      assert.match(lines[0], /^debug service description check: .* could not be read \(.+\); next try in 24 h$/);
      await clock.tickAsync(DESCRIPTION_CHECK_INTERVAL_MS - 60_000);
      await waitUntil(() => requests === 2, 5000, "the description read again at the next mark");
    } finally {
      check.close();
      clock.uninstall();
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("service description check: a body over 4 MiB and a redirect are failed fetches; a start-up that has not settled within 60 s gets its check then (docs/service-description.md#when)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  const lines: string[] = [];
  const log = {
    debug: (m: string) => lines.push(`debug ${m}`),
    info: (m: string) => lines.push(`info ${m}`),
    warn: (m: string) => lines.push(`warn ${m}`),
  };
  const checks: ServiceDescriptionCheck[] = [];
  const track = (c: ServiceDescriptionCheck): ServiceDescriptionCheck => (checks.push(c), c);

  beforeEach(async () => {
    lines.length = 0;
    sim = await startSimulator({ rateLimit: false });
  });
  afterEach(async () => {
    for (const c of checks.splice(0)) c.close();
    await sim.close();
  });

  /** The simulator's own description as JSON, padded with spaces (still JSON) to `bytes`. */
  function paddedTo(bytes: number): string {
    const json = JSON.stringify(description());
    assert.ok(Buffer.byteLength(json) < bytes);
    return json + " ".repeat(bytes - Buffer.byteLength(json));
  }

  it("a description of exactly 4 MiB is read; one of 4 MiB and 1 byte is not: one debug line naming the size, nothing compared, next try in 24 h", async () => {
    assert.equal(DESCRIPTION_MAX_BYTES, 4 * 1024 * 1024, "docs: 4 MiB");
    sim.control.serveDescription({ body: paddedTo(DESCRIPTION_MAX_BYTES), contentType: "application/json" });
    const atLimit = track(new ServiceDescriptionCheck({ url: descriptionUrl("", sim.url), log }));
    await atLimit.checkNow();
    assert.deepEqual(lines, []);
    assert.notEqual(atLimit.report().checkedAt, null, "read and compared");

    sim.control.serveDescription({ body: paddedTo(DESCRIPTION_MAX_BYTES + 1), contentType: "application/json" });
    const over = track(new ServiceDescriptionCheck({ url: descriptionUrl("", sim.url), log }));
    await over.checkNow();
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(
      lines[0],
      /^debug service description check: .*\/openapi\.json could not be read \(the answer is larger than 4194304 bytes\); next try in 24 h$/,
    );
    assert.equal(over.report().checkedAt, null);
    await waitUntil(() => docsRequests(sim).length === 2, 5000, "the cut-off request in the simulator's log");
  });

  it("a redirect (301, 302, 307, 308) to the simulator's description, even one carrying a description as its body: not followed, one debug line 'answered <status>', nothing compared", async () => {
    const target = `${sim.url}/openapi.pinned.json`;
    const body = JSON.stringify(description());
    let status = 0;
    const server = createHttpServer((_req, res) => {
      res.writeHead(status, {
        Location: target,
        "Content-Type": "application/json",
        "Content-Length": Buffer.byteLength(body),
      });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const docsUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/openapi.json`;
      for (const code of [301, 302, 307, 308]) {
        status = code;
        lines.length = 0;
        const check = track(new ServiceDescriptionCheck({ url: descriptionUrl(docsUrl, sim.url), log }));
        await check.checkNow();
        assert.equal(lines.length, 1, `${code}: ${lines.join("\n")}`);
        assert.match(
          lines[0],
          new RegExp(
            `^debug service description check: .* could not be read \\(answered ${code}\\); next try in 24 h$`,
          ),
        );
        assert.equal(check.report().checkedAt, null, `${code}: nothing read`);
      }
      assert.equal(sim.control.requests({ operation: "docs" }).length, 0, "the redirect's target was never asked");
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  describe("the first check after a start-up (fake clock)", function () {
    let clock: FakeClock;
    let state = "logging-in";
    const listeners = new Set<(snap: { state: string }) => void>();
    const session = {
      get state() {
        return state;
      },
      on: (_e: "state", l: (snap: { state: string }) => void) => listeners.add(l),
      off: (_e: "state", l: (snap: { state: string }) => void) => listeners.delete(l),
    };
    const settle = (to: string) => {
      state = to;
      for (const l of [...listeners]) l({ state });
    };
    const idle = (c: ServiceDescriptionCheck) => (c as unknown as { inflight: unknown }).inflight === null;

    beforeEach(async () => {
      await sim.close();
      clock = fakeClock();
      sim = await startSimulator({ rateLimit: false, now: () => clock.now() });
      state = "logging-in";
      listeners.clear();
    });
    afterEach(() => {
      clock.uninstall();
    });

    it("a start-up still logging in: no request for 60 s, the check at 60 s, none more when it settles later; the next at the 24-hour mark from it", async () => {
      assert.equal(DESCRIPTION_FIRST_CHECK_LATEST_MS, 60_000, "docs: 60 s");
      const check = track(new ServiceDescriptionCheck({ url: descriptionUrl("", sim.url), clock, log }));
      check.startAfter(session);
      await clock.tickAsync(DESCRIPTION_FIRST_CHECK_LATEST_MS - 1);
      assert.ok(idle(check), "no fetch started before 60 s");
      assert.equal(docsRequests(sim).length, 0);
      await clock.tickAsync(1);
      await waitUntil(() => docsRequests(sim).length === 1 && idle(check), 5000, "the check at 60 s");
      settle("ready");
      await clock.tickAsync(10 * DESCRIPTION_FIRST_CHECK_DELAY_MS);
      assert.ok(idle(check), "the start-up settling later adds no check");
      assert.equal(docsRequests(sim).length, 1);
      await clock.tickAsync(DESCRIPTION_CHECK_INTERVAL_MS - 10 * DESCRIPTION_FIRST_CHECK_DELAY_MS - 1);
      assert.ok(idle(check));
      await clock.tickAsync(1);
      await waitUntil(() => docsRequests(sim).length === 2 && idle(check), 5000, "the check 24 h after the first");
      assert.deepEqual(lines, []);
    });

    it("a start-up that settles at 30 s: the check one second later, none at 60 s", async () => {
      const check = track(new ServiceDescriptionCheck({ url: descriptionUrl("", sim.url), clock, log }));
      check.startAfter(session);
      await clock.tickAsync(30_000);
      settle("unreachable");
      await clock.tickAsync(999);
      assert.ok(idle(check), "not before one second");
      await clock.tickAsync(1);
      await waitUntil(() => docsRequests(sim).length === 1 && idle(check), 5000, "the check 1 s after the start-up");
      await clock.tickAsync(DESCRIPTION_FIRST_CHECK_LATEST_MS);
      assert.ok(idle(check));
      assert.equal(docsRequests(sim).length, 1, "no second check at 60 s");
    });
  });
});
