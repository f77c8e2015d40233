/**
 * The service client against the simulator: every answer is checked against the service
 * description, and every failure is a typed error with the answer's status and problem text,
 * never a token, that says whether the request may have reached the service
 * (docs/outcomes.md#door-unlock-outcomes, docs/session.md#connection-errors). Requests are
 * counted at the simulator.
 */
import { strict as assert } from "node:assert";
import { DoorApiClient } from "../../src/client/client.js";
import { connectionProblem } from "../../src/client/connection-errors.js";
import { DoorApiError } from "../../src/client/errors.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { refusedPort } from "../helpers/refused-port.js";
import { DEMO_PHONE, waitUntil } from "../helpers/session.js";

function isApiError(pred: (e: DoorApiError) => boolean) {
  return (e: unknown) => e instanceof DoorApiError && pred(e);
}

describe("client: an answer that breaks the service description is a clear error, and every failure says whether it may have reached the service (docs/outcomes.md#door-unlock-outcomes)", function () {
  this.timeout(20_000);
  let sim: RunningSimulator;
  let client: DoorApiClient;
  let token: string;

  before(async () => {
    sim = await startSimulator({ rateLimit: false });
    client = new DoorApiClient({ baseUrl: sim.url, random: () => 0, headersTimeoutMs: 1500, bodyTimeoutMs: 1500 });
    token = (await client.login(DEMO_PHONE)).accessToken;
  });
  beforeEach(() => {
    sim.control.clearFaults();
    sim.control.resetRequests();
  });
  after(async () => {
    await client.close();
    await sim.close();
  });

  it("reads the capitalised TokenPair case-insensitively", async () => {
    const pair = await client.login(DEMO_PHONE);
    assert.equal(pair.accessToken.split(".").length, 3);
    assert.match(pair.refreshToken, /\S{10,}/);
    token = pair.accessToken;
  });

  it("validates the Device record and keeps fields the spec does not list", async () => {
    const d = await client.getDevice(token, 104);
    assert.equal(d.id, 104);
    assert.equal(d.name, "Loading Bay");
    assert.ok(Array.isArray((d as { locks?: unknown }).locks), "unknown fields are tolerated and kept");
    const list = await client.listDevices(token);
    assert.ok(list.length >= 5 && list.every((x) => Number.isInteger(x.id)));
    const locations = await client.listLocations(token);
    assert.ok(locations.length >= 2);
  });

  const bodyFaults: { kind: "non-json" | "truncated" | "huge" | "wrong-content-type"; pattern: RegExp }[] = [
    { kind: "non-json", pattern: /not JSON/ },
    { kind: "truncated", pattern: /cut off/ },
    { kind: "huge", pattern: /larger than/ },
    { kind: "wrong-content-type", pattern: /content type/ },
  ];
  for (const f of bodyFaults) {
    it(`a ${f.kind} body is a clear invalid-response error, not retried, no crash`, async () => {
      sim.control.inject({ kind: f.kind, endpoint: "getDevice" });
      await assert.rejects(
        client.getDevice(token, 101),
        isApiError((e) => e.kind === "invalid-response" && f.pattern.test(e.message)),
      );
      // The simulator logs a call when its answer ends; a body we stopped reading ends a moment later.
      await waitUntil(() => sim.control.requests({ operation: "getDevice" }).length >= 1);
      assert.equal(sim.control.requests({ operation: "getDevice" }).length, 1);
      assert.equal((await client.getDevice(token, 101)).id, 101, "the client still works afterwards");
    });
  }

  it("a TokenPair without its fields is a clear error", async () => {
    sim.control.inject({ kind: "empty-token-pair", endpoint: "loginByPhone" });
    await assert.rejects(
      client.login(DEMO_PHONE),
      isApiError((e) => e.kind === "invalid-response" && /AccessToken/.test(e.message)),
    );
  });

  it("a slow-loris answer times out (headers timeout) instead of hanging", async () => {
    // Headers 15 s late against a 1.5 s headers time-out: a margin no busy machine closes.
    sim.control.inject({ kind: "slow-headers", endpoint: "unlockDevice", latencyMs: 15_000 });
    await assert.rejects(
      client.unlock(token, 101, null),
      isApiError((e) => e.kind === "timeout" && e.mayHaveReached),
    );
    assert.equal(sim.control.requests({ operation: "unlockDevice" }).length <= 1, true);
  });

  it("an invalid request body is refused before sending: nothing reaches the service", async () => {
    await assert.rejects(
      client.login({ method: "phone", phoneNumber: "0701234567", password: "demo-password" }),
      isApiError((e) => !e.mayHaveReached && /phoneNumber/.test(e.message) && !e.message.includes("0701234567")),
    );
    await assert.rejects(client.login({ method: "email", email: "not-an-email", password: "x" }));
    await assert.rejects(
      client.unlock(token, -1, null),
      isApiError((e) => !e.mayHaveReached),
    );
    await assert.rejects(client.unlock(token, 2 ** 31, null));
    await assert.rejects(client.unlock(token, 101, 1.5));
    assert.equal(sim.control.requests().length, 0);
  });

  it("carries status, title and detail of an ErrorResponse, and never the token in its message", async () => {
    const e = await client.unlock(token, 106, null).then(
      () => null,
      (x: unknown) => x,
    );
    assert.ok(e instanceof DoorApiError);
    assert.equal(e.status, 403);
    assert.equal(e.kind, "http");
    assert.ok(e.title !== null);
    assert.ok(!e.message.includes(token) && !JSON.stringify(e).includes(token));
  });

  it("a refused connection is a network error that never left (mayHaveReached false)", async () => {
    const c = new DoorApiClient({ baseUrl: `http://127.0.0.1:${await refusedPort()}` });
    await assert.rejects(
      c.unlock(token, 101, null),
      isApiError((e) => e.kind === "network" && e.mayHaveReached === false),
    );
    await c.close();
  });

  it("a failed TLS handshake (https:// to a plain HTTP port) never left either: mayHaveReached false, and the service saw nothing (docs/session.md#connection-errors)", async () => {
    const c = new DoorApiClient({ baseUrl: sim.url.replace(/^http:/, "https:") });
    await assert.rejects(
      c.unlock(token, 101, null),
      isApiError(
        (e) =>
          e.kind === "network" &&
          e.mayHaveReached === false &&
          /\(TLS handshake failed, [A-Z_]+: the port does not answer TLS\): check the base URL's scheme and port$/.test(
            e.message,
          ),
      ),
    );
    await c.close();
    assert.equal(sim.control.requests().length, 0);
  });
});

describe("a connection error names the host cut at 80 characters and the base URL at 120, whatever was typed (docs/session.md#connection-errors)", function () {
  this.timeout(20_000);
  // Labels of 63 characters (the most DNS allows) under .invalid, which never resolves: 153 characters.
  const longHost = `${"a".repeat(63)}.${"b".repeat(63)}.door-access-test.invalid`;
  const named = (problem: string): string => {
    const m = /\(host name (\S+) (?:not found|could not be resolved: the name server did not answer)\)/.exec(problem);
    assert.ok(m, problem);
    return m[1];
  };

  it("a host name of 153 characters that does not resolve: the text names its first 79 characters and '…', 80 in all", async () => {
    const c = new DoorApiClient({ baseUrl: `https://${longHost}` });
    let caught: unknown = null;
    try {
      await c.unlock("not-a-token", 101, null);
    } catch (e) {
      caught = e;
    } finally {
      await c.close();
    }
    assert.ok(caught instanceof DoorApiError, String(caught));
    assert.equal(caught.kind, "network");
    const host = named(caught.problem);
    assert.equal(host.length, 80, host);
    assert.equal(host, `${longHost.slice(0, 79)}…`);
    const where = /^cannot connect to (\S+) \(/.exec(caught.problem);
    assert.ok(where, caught.problem);
    assert.equal(where[1].length, 120, where[1]);
    assert.equal(where[1], `${`https://${longHost}`.slice(0, 119)}…`);
  });

  it("the host name is cut for both texts that name it (not found, name server did not answer); a host of exactly 80 characters is named whole", () => {
    for (const code of ["ENOTFOUND", "EAI_AGAIN"]) {
      assert.equal(
        named(connectionProblem(new URL(`https://${longHost}`), code, 10_000, 20_000).problem),
        `${longHost.slice(0, 79)}…`,
        code,
      );
      const host80 = `${"c".repeat(63)}.${"d".repeat(16)}`;
      assert.equal(host80.length, 80);
      assert.equal(named(connectionProblem(new URL(`https://${host80}`), code, 10_000, 20_000).problem), host80, code);
      const host81 = `${"c".repeat(63)}.${"d".repeat(17)}`;
      assert.equal(
        named(connectionProblem(new URL(`https://${host81}`), code, 10_000, 20_000).problem),
        `${host81.slice(0, 79)}…`,
        code,
      );
    }
  });
});
