/**
 * The stored token pair (docs/session.md#token-storage): kept server-side outside the flow and
 * credentials files, written atomically as a pair with mode 0600, never logged, so a restart
 * resumes the session; deleting the account logs out and deletes the pair; a second process on
 * the same user directory refreshes under a lock.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { FileTokenStore, accountKey, accountStoreId } from "../../src/session/token-store.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { buildSession, ops, tempDir, waitUntil, type Built } from "../helpers/session.js";

describe("session: the token pair is stored atomically, privately and per account, and a restart resumes it (docs/session.md#token-storage)", function () {
  this.timeout(30_000);
  let sim: RunningSimulator;
  const open: Built[] = [];

  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: false });
  });
  afterEach(async () => {
    for (const b of open.splice(0)) {
      await b.session.close();
      await b.client.close();
    }
    await sim.close();
  });
  function build(opts: Parameters<typeof buildSession>[1] = {}): Built {
    const b = buildSession(sim, opts);
    open.push(b);
    return b;
  }

  it("a restart resumes the stored pair without logging in", async () => {
    const dir = tempDir();
    const tokenFile = path.join(dir, "session.json");
    const first = build({ tokenFile });
    await first.session.start();
    await first.session.close();
    const second = build({ tokenFile });
    await second.session.start();
    assert.equal(second.session.state, "ready");
    await second.session.call((t) => second.client.getDevice(t, 101));
    assert.deepEqual(ops(sim), ["loginByPhone 200", "getDevice 200"], "one login across two starts");
  });

  // Issue 12: the pair is stored under the account key "derived without storing the phone number or email in clear".
  it("the file names its account by the scrypt store id, not by a plain hash a phone number could be guessed from", async () => {
    const tokenFile = path.join(tempDir(), "session.json");
    const first = build({ tokenFile });
    await first.session.start();
    await first.session.close();
    const file = JSON.parse(readFileSync(tokenFile, "utf8")) as { account: string };
    const key = accountKey(sim.url, "phone", "+15550000001");
    assert.notEqual(file.account, key, "the plain SHA-256 of base URL, method and phone number");
    assert.equal(file.account, accountStoreId(key));
    // A file written by an earlier version (account = the key itself) still resumes, without a login.
    writeFileSync(tokenFile, JSON.stringify({ ...JSON.parse(readFileSync(tokenFile, "utf8")), account: key }), {
      mode: 0o600,
    });
    const second = build({ tokenFile });
    await second.session.start();
    await second.session.call((t) => second.client.getDevice(t, 101));
    assert.deepEqual(ops(sim), ["loginByPhone 200", "getDevice 200"]);
  });

  it("the rotated pair is persisted, so a restart after a refresh resumes with the new refresh token", async () => {
    const tokenFile = path.join(tempDir(), "session.json");
    const first = build({ tokenFile });
    await first.session.start();
    sim.control.expireAccessToken("demo");
    await first.session.call((t) => first.client.getDevice(t, 101));
    await first.session.close();
    const second = build({ tokenFile });
    await second.session.start();
    sim.control.expireAccessToken("demo");
    await second.session.call((t) => second.client.getDevice(t, 101));
    assert.deepEqual(ops(sim), [
      "loginByPhone 200",
      "getDevice 401",
      "refreshToken 200",
      "getDevice 200",
      "getDevice 401",
      "refreshToken 200",
      "getDevice 200",
    ]);
  });

  it("writes the file with mode 0600, atomically (no temp file left), both tokens in one record", async () => {
    const dir = tempDir();
    const tokenFile = path.join(dir, "session.json");
    const b = build({ tokenFile });
    await b.session.start();
    assert.equal(statSync(tokenFile).mode & 0o777, 0o600);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.endsWith(".tmp")),
      [],
    );
    const pair = await b.store.load();
    assert.ok(pair && pair.accessToken.split(".").length === 3 && pair.refreshToken.length > 10);
  });

  it("encrypts the pair when a credential secret is set: the file holds neither token", async () => {
    const tokenFile = path.join(tempDir(), "session.json");
    const b = build({ tokenFile, secret: "a-credential-secret" });
    await b.session.start();
    const pair = await b.store.load();
    assert.ok(pair);
    const raw = readFileSync(tokenFile, "utf8");
    assert.ok(!raw.includes(pair.accessToken) && !raw.includes(pair.refreshToken));
    assert.ok(!raw.includes(Buffer.from(pair.refreshToken).toString("base64")));
    assert.match(raw, /aes-256-gcm/);
    // With another secret the file cannot be read: treated as absent (login), reported, no crash.
    const other = build({ tokenFile, secret: "another-secret" });
    await other.session.start();
    assert.equal(other.session.state, "ready");
    assert.ok(
      other.log.lines.some((l) => l.includes("unreadable")),
      "the problem is reported",
    );
    assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 2);
  });

  it("a torn or garbage token file is treated as absent: one login, no crash", async () => {
    const tokenFile = path.join(tempDir(), "session.json");
    writeFileSync(tokenFile, '{"v":1,"account":"abc","enc":"none","da', { mode: 0o600 });
    const b = build({ tokenFile });
    await b.session.start();
    assert.equal(b.session.state, "ready");
    assert.deepEqual(ops(sim), ["loginByPhone 200"]);
    assert.ok(b.log.lines.some((l) => l.includes("unreadable")));
  });

  it("a pair stored for other credentials is never resumed", async () => {
    const tokenFile = path.join(tempDir(), "session.json");
    const demo = build({ tokenFile });
    await demo.session.start();
    await demo.session.close();
    const other = build({
      tokenFile,
      credentials: { method: "phone", phoneNumber: "+15550000002", password: "other-password" },
    });
    await other.session.start();
    assert.deepEqual(ops(sim), ["loginByPhone 200", "loginByPhone 200"]);
    assert.equal(sim.control.hasSession("demo"), true, "the demo session was not touched");
  });

  it("destroy() (account deleted) logs out and deletes the stored pair", async () => {
    const tokenFile = path.join(tempDir(), "session.json");
    const b = build({ tokenFile });
    await b.session.start();
    assert.ok(existsSync(tokenFile));
    await b.session.destroy();
    assert.equal(existsSync(tokenFile), false);
    assert.deepEqual(ops(sim), ["loginByPhone 200", "logout 200"]);
    assert.equal(sim.control.hasSession("demo"), false);
  });

  it("two processes on one token file: exactly one refresh between them when the token expires", async () => {
    const tokenFile = path.join(tempDir(), "session.json");
    const seed = build({ tokenFile });
    await seed.session.start();
    await seed.session.close();
    const child = path.resolve("test/fixtures/session-child.js");
    const procs = [0, 1].map(() =>
      spawn(process.execPath, [child, sim.url, tokenFile], { stdio: ["pipe", "pipe", "inherit"] }),
    );
    const outs = procs.map(() => ({ text: "" }));
    procs.forEach((p, i) => p.stdout.on("data", (d: Buffer) => (outs[i].text += d.toString())));
    await waitUntil(() => outs.every((o) => o.text.includes("ready ready")), 15_000, "both children ready");
    sim.control.resetRequests();
    sim.control.expireAccessToken("demo");
    procs.forEach((p) => p.stdin.write("go\n"));
    await waitUntil(() => outs.every((o) => /done \d+/.test(o.text)), 20_000, "both children done");
    for (const o of outs) assert.match(o.text, /done 50 ready/);
    assert.equal(sim.control.requests({ operation: "refreshToken" }).length, 1, "one refresh across two processes");
    assert.equal(sim.control.requests({ operation: "loginByPhone" }).length, 0, "no login");
    assert.equal(sim.control.requests({ operation: "getDevice" }).filter((r) => r.status === 200).length, 100);
  });
});

describe("session: the folder of the token file is created with mode 0700 (docs/session.md#token-storage)", function () {
  this.timeout(30_000);
  const mode = (p: string) => statSync(p).mode & 0o777;

  it("a session's first start in a user directory without door-access/: the folder it creates is 0700, the file 0600", async () => {
    const sim = await startSimulator({ rateLimit: false });
    const folder = path.join(tempDir(), "door-access");
    const b = buildSession(sim, { tokenFile: path.join(folder, "session.json") });
    try {
      await b.session.start();
      assert.equal(b.session.state, "ready");
      assert.equal(mode(folder).toString(8), "700");
      assert.equal(mode(path.join(folder, "session.json")).toString(8), "600");
    } finally {
      await b.session.close();
      await b.client.close();
      await sim.close();
    }
  });

  it("whichever comes first, the pair written or the renewal lock taken: the folder is 0700", async () => {
    const pair = { accessToken: "a.b.c", refreshToken: "r", obtainedAt: Date.now() };
    const saved = path.join(tempDir(), "door-access");
    await new FileTokenStore({ filePath: path.join(saved, "session.json"), accountKey: "k" }).save(pair);
    assert.equal(mode(saved).toString(8), "700", "created by the write");
    const locked = path.join(tempDir(), "door-access");
    await new FileTokenStore({ filePath: path.join(locked, "session.json"), accountKey: "k" }).withRenewalLock(() => {
      assert.equal(mode(locked).toString(8), "700", "created by the lock");
      return Promise.resolve();
    });
  });
});
