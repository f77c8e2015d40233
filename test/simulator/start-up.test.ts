/**
 * Starting the simulator: it listens on a loopback host only unless told otherwise, and it
 * checks a seed before it serves it. docs/simulator.md#loopback-only, docs/simulator.md#your-own-seed
 */
import { strict as assert } from "node:assert";
import { demoSeed, startSimulator, validateSeed, type Seed } from "../../src/simulator/index.js";
import { isLoopbackHost } from "../../src/util/loopback.js";
import { DEMO_ACCOUNT, call } from "../helpers/simulator.js";

describe("simulator start-up: it listens only on a loopback host unless allowRemoteControl (docs/simulator.md#loopback-only)", () => {
  it("refuses a non-loopback host unless allowRemoteControl", async () => {
    await assert.rejects(
      startSimulator({ host: "0.0.0.0", port: 0 }),
      /refuses to listen on non-loopback host "0.0.0.0"/,
    );
    await assert.rejects(startSimulator({ host: "192.168.1.10", port: 0 }), /allowRemoteControl/);
    assert.equal(isLoopbackHost("127.0.0.1"), true);
    assert.equal(isLoopbackHost("127.3.2.1"), true);
    assert.equal(isLoopbackHost("::1"), true);
    assert.equal(isLoopbackHost("[::1]"), true);
    assert.equal(isLoopbackHost("localhost"), true);
    assert.equal(isLoopbackHost("0.0.0.0"), false);
    assert.equal(isLoopbackHost("::"), false);
    assert.equal(isLoopbackHost("10.0.0.1"), false);
    assert.equal(isLoopbackHost("localhost.example.com"), false);
  });

  it("holds the listen host to the one loopback rule: an IPv4-mapped address, an octet over 255 or a FQDN localhost is refused", async () => {
    for (const host of ["::ffff:127.0.0.1", "[::ffff:127.0.0.1]", "127.0.0.256", "127.1", "localhost."]) {
      await assert.rejects(startSimulator({ host, port: 0 }), /refuses to listen on non-loopback host/, host);
    }
  });

  it("starts on other loopback forms (localhost, 127.0.0.2)", async () => {
    for (const host of ["localhost", "127.0.0.2"]) {
      const sim = await startSimulator({ host, port: 0 });
      try {
        assert.ok(sim.url.startsWith(`http://${host}:`), sim.url);
        const r = await call(sim, "POST", "/api/auth/login-by-phone", {
          json: { phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password },
        });
        assert.equal(r.status, 200);
      } finally {
        await sim.close();
      }
    }
  });
});

describe("simulator start-up: a seed is checked before it is served, every problem named (docs/simulator.md#your-own-seed)", () => {
  it("validates seeds with clear messages", () => {
    const broken = (change: (s: Seed) => void): Seed => {
      const s = demoSeed();
      change(s);
      return s;
    };
    assert.throws(
      () =>
        validateSeed(
          broken((s) => {
            s.doors[0].locationId = 999;
          }),
        ),
      /doors\[0\]\.locationId|unknown location 999/,
    );
    assert.throws(
      () =>
        validateSeed(
          broken((s) => {
            s.doors[1].id = 101;
          }),
        ),
      /duplicate id 101/,
    );
    assert.throws(
      () =>
        validateSeed(
          broken((s) => {
            s.accounts[0].phoneNumber = "555";
          }),
        ),
      /phoneNumber/,
    );
    assert.throws(
      () =>
        validateSeed(
          broken((s) => {
            s.keys.push({ accountId: "demo", deviceId: 106, lockIds: [7] });
          }),
        ),
      /door 106 has no lock 7/,
    );
    assert.throws(
      () =>
        validateSeed(
          broken((s) => {
            s.keys.push({ accountId: "ghost", deviceId: 106 });
          }),
        ),
      /unknown account ghost/,
    );
    assert.throws(() => validateSeed({ companies: [] }), /invalid seed/);
    assert.equal(validateSeed(demoSeed()).doors.length, 9);
  });

  it("runs a custom seed", async () => {
    const seed: Seed = {
      companies: [{ id: 5, name: "Acme" }],
      locations: [{ id: 50, companyId: 5, name: "Depot" }],
      doors: [{ id: 7, locationId: 50, name: "Gate" }],
      accounts: [{ id: "acme", companyId: 5, email: "ops@acme.test", password: "pw" }],
      keys: [{ accountId: "acme", deviceId: 7 }],
    };
    const sim = await startSimulator({ seed });
    try {
      const r = await call(sim, "POST", "/api/auth/login-by-email", {
        json: { email: "ops@acme.test", password: "pw" },
      });
      assert.equal(r.status, 200);
      const d = await call(sim, "GET", "/api/user/device", { token: r.json.AccessToken });
      assert.deepEqual(
        d.json.map((x: { id: number; name: string }) => [x.id, x.name]),
        [[7, "Gate"]],
      );
      assert.equal((await call(sim, "PUT", "/api/device/7/unlock/1", { token: r.json.AccessToken })).status, 200);
    } finally {
      await sim.close();
    }
    await assert.rejects(
      startSimulator({ seed: { ...seed, keys: [{ accountId: "acme", deviceId: 8 }] } }),
      /unknown door 8/,
    );
  });
});
