/** The command line: bin/door-access-sim.js started as a child process. docs/simulator.md#running-it */
import { strict as assert } from "node:assert";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { request } from "undici";
import { demoSeed } from "../../src/simulator/index.js";
import { DEMO_ACCOUNT, claims } from "../helpers/simulator.js";

const BIN = resolve(__dirname, "..", "..", "..", "bin", "door-access-sim.js");

interface Started {
  child: ChildProcess;
  url: string;
  stdout: () => string;
}

/** Spawns the bin and waits for the "listening on <url>" line. */
function startBin(args: string[]): Promise<Started> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no URL within 10 s; stdout: ${out} stderr: ${err}`));
    }, 10_000);
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m && out.includes("\n")) {
        clearTimeout(timer);
        resolvePromise({ child, url: m[1], stdout: () => out });
      }
    });
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}; stderr: ${err}`));
    });
  });
}

function waitExit(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((r) => {
    if (child.exitCode !== null || child.signalCode !== null) r({ code: child.exitCode, signal: child.signalCode });
    else child.once("exit", (code, signal) => r({ code, signal }));
  });
}

async function loginDemo(url: string): Promise<{ status: number; json: any }> {
  const res = await request(`${url}/api/auth/login-by-phone`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ phoneNumber: DEMO_ACCOUNT.phoneNumber, password: DEMO_ACCOUNT.password }),
  });
  return { status: res.statusCode, json: await res.body.json() };
}

describe("simulator command line: door-access-sim serves on the port it is given, prints its address and the demo email (never a phone number or password), refuses a bad seed or a non-loopback host, stops on SIGINT or SIGTERM (docs/simulator.md#running-it)", function () {
  this.timeout(20_000);
  const children: ChildProcess[] = [];
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "door-sim-cli-"));
  });
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("--port 0 prints the URL and the demo account (never its phone number or password), serves it, stops on SIGTERM", async () => {
    const s = await startBin(["--port", "0"]);
    children.push(s.child);
    assert.match(s.url, /^http:\/\/127\.0\.0\.1:[0-9]+$/);
    assert.ok(s.stdout().includes(DEMO_ACCOUNT.email), "names the demo account");
    assert.ok(
      !s.stdout().includes(DEMO_ACCOUNT.phoneNumber) && !s.stdout().includes(DEMO_ACCOUNT.password),
      "never prints its phone number or password",
    );
    const r = await loginDemo(s.url);
    assert.equal(r.status, 200);
    assert.equal(typeof r.json.AccessToken, "string");
    const devices = await request(`${s.url}/api/user/device`, {
      headers: { authorization: `Bearer ${r.json.AccessToken}` },
    });
    assert.equal(devices.statusCode, 200);
    assert.ok(((await devices.body.json()) as unknown[]).length >= 5);
    s.child.kill("SIGTERM");
    const exit = await waitExit(s.child);
    assert.equal(exit.code, 0);
  });

  it("stops on SIGINT too", async () => {
    const s = await startBin(["--port", "0"]);
    children.push(s.child);
    s.child.kill("SIGINT");
    assert.equal((await waitExit(s.child)).code, 0);
  });

  it("--access-ttl sets the access token lifetime", async () => {
    const s = await startBin(["--port", "0", "--access-ttl", "60", "--refresh-ttl", "120"]);
    children.push(s.child);
    const r = await loginDemo(s.url);
    const c = claims(r.json.AccessToken);
    assert.equal(Number(c.exp) - Number(c.iat), 60);
    s.child.kill("SIGTERM");
    await waitExit(s.child);
  });

  it("--seed serves a custom seed and does not print its passwords", async () => {
    const seed = demoSeed();
    seed.accounts[0].password = "very-secret-pw";
    const file = join(dir, "seed.json");
    writeFileSync(file, JSON.stringify(seed));
    const s = await startBin(["--port=0", "--seed", file]);
    children.push(s.child);
    assert.ok(!s.stdout().includes("very-secret-pw"));
    assert.ok(!s.stdout().includes(DEMO_ACCOUNT.password));
    assert.ok(s.stdout().includes(file), "says where the credentials are");
    assert.equal((await loginDemo(s.url)).status, 401, "the built-in password no longer works");
    s.child.kill("SIGTERM");
    await waitExit(s.child);
  });

  it("a broken seed file fails with a clear message", () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ ...demoSeed(), keys: [{ accountId: "demo", deviceId: 4040 }] }));
    const r = spawnSync(process.execPath, [BIN, "--port", "0", "--seed", file], { encoding: "utf8", timeout: 10_000 });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /invalid seed file .*bad\.json/);
    assert.match(r.stderr, /unknown door 4040/);
    const notJson = join(dir, "not.json");
    writeFileSync(notJson, "{");
    const r2 = spawnSync(process.execPath, [BIN, "--port", "0", "--seed", notJson], {
      encoding: "utf8",
      timeout: 10_000,
    });
    assert.equal(r2.status, 1);
    assert.match(r2.stderr, /not valid JSON/);
  });

  it("refuses a non-loopback --host without --allow-remote-control", () => {
    const r = spawnSync(process.execPath, [BIN, "--host", "0.0.0.0", "--port", "0"], {
      encoding: "utf8",
      timeout: 10_000,
    });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /refuses to listen on non-loopback host/);
  });

  it("--help prints the usage; an unknown flag exits 2", () => {
    const help = spawnSync(process.execPath, [BIN, "--help"], { encoding: "utf8", timeout: 10_000 });
    assert.equal(help.status, 0);
    for (const flag of [
      "--host",
      "--port",
      "--seed",
      "--access-ttl",
      "--refresh-ttl",
      "--allow-remote-control",
      "--help",
    ]) {
      assert.ok(help.stdout.includes(flag), flag);
    }
    const bad = spawnSync(process.execPath, [BIN, "--frobnicate"], { encoding: "utf8", timeout: 10_000 });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /unknown option "--frobnicate"/);
    const badPort = spawnSync(process.execPath, [BIN, "--port", "http"], { encoding: "utf8", timeout: 10_000 });
    assert.equal(badPort.status, 2);
  });
});
