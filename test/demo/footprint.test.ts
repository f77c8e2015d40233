/**
 * A light footprint (docs/performance.md#footprint): loading the four node files loads only what every account
 * needs. In a fresh Node.js process (this one has loaded everything already): require the
 * files Node-RED would (package.json `node-red.nodes`), then look at what was required.
 * `@redis/client` comes only when a Redis store is built, `proper-lockfile` only at the first
 * renewal lock of a file store, and undici's and jose's index modules never. The Pool we load
 * without undici's index must be undici's own class (a later undici that moves its files makes
 * this test fail; the package then falls back to the whole of undici, see src/client/pool.ts).
 *
 * The figures (time, MiB) are in `npm run bench`, not here: nothing below is timed.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

const REPO_ROOT = path.resolve(__dirname, "..", "..", "..");

/** Runs in a fresh `node`: prints one JSON line with what each stage had loaded. */
const CHILD = String.raw`
const Module = require("node:module");
const path = require("node:path");
const root = process.argv[1], dir = process.argv[2];
const asked = new Set();
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (!request.startsWith(".") && !request.startsWith("/") && !request.startsWith("node:")) asked.add(request);
  return resolve.call(this, request, ...rest);
};
const packages = () => {
  const seen = new Set();
  for (const k of Object.keys(require.cache)) {
    const m = /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(k);
    if (m) seen.add(m[1].replace(/\\/g, "/"));
  }
  return [...seen].sort();
};
const undiciIndex = () => Object.keys(require.cache).some((k) => /node_modules[\\/]undici[\\/]index\.js$/.test(k));
(async () => {
  const out = {};
  const pkg = JSON.parse(require("node:fs").readFileSync(path.join(root, "package.json"), "utf8"));
  for (const f of Object.values(pkg["node-red"].nodes)) require(path.join(root, f));
  const jose = Object.keys(require.cache).filter((k) => /node_modules[\\/]jose[\\/]/.test(k)).map((k) => k.slice(k.lastIndexOf("jose")));
  out.afterNodes = { packages: packages(), asked: [...asked].sort(), undiciIndex: undiciIndex(), jose };

  const { FileTokenStore } = require(path.join(root, "dist/src/session/token-store.js"));
  const file = new FileTokenStore({ filePath: path.join(dir, "pair.json"), accountKey: "k" });
  out.fileStoreBuilt = packages();
  out.lockResult = await file.withRenewalLock(async () => "held");
  out.afterFileLock = packages();

  const { RedisTokenStore } = require(path.join(root, "dist/src/session/redis-store.js"));
  out.redisModuleLoaded = packages();
  const redis = new RedisTokenStore({ url: "redis://127.0.0.1:1", accountKey: "k", commandTimeoutMs: 200 });
  out.afterRedisStore = packages();
  await redis.close();

  const pool = require(path.join(root, "dist/src/client/pool.js"));
  out.poolSource = pool.poolSource;
  out.undiciIndexBeforeCompare = undiciIndex();
  const Lean = pool.undiciPool();
  const Full = require("undici").Pool;
  out.samePool = Lean === Full;
  out.hasRequest = typeof Lean.prototype.request === "function";
  out.asked = [...asked].sort();
  process.stdout.write(JSON.stringify(out) + "\n");
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

interface ChildOut {
  afterNodes: { packages: string[]; asked: string[]; undiciIndex: boolean; jose: string[] };
  fileStoreBuilt: string[];
  lockResult: string;
  afterFileLock: string[];
  redisModuleLoaded: string[];
  afterRedisStore: string[];
  poolSource: string;
  undiciIndexBeforeCompare: boolean;
  samePool: boolean;
  hasRequest: boolean;
}

function runChild(dir: string): Promise<ChildOut> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", CHILD, REPO_ROOT, dir], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (err += c.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (code !== 0 || !line)
        return reject(new Error(`child exited ${code}:\n${err.slice(-3000)}\n${out.slice(-1000)}`));
      resolve(JSON.parse(line) as ChildOut);
    });
  });
}

describe("footprint: loading the nodes loads only what every account needs (docs/performance.md#footprint)", function () {
  this.timeout(90_000);
  let dir: string;
  let r: ChildOut;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "door-footprint-"));
    r = await runChild(dir);
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the four node files load zod, undici's Pool and jose's decodeJwt, and no other package", () => {
    assert.deepEqual(
      r.afterNodes.packages,
      ["jose", "undici", "zod"],
      "packages in require.cache after loading the nodes",
    );
    // jose is ES modules loaded through require(): only the entry point is listed in require.cache.
    assert.deepEqual(
      r.afterNodes.jose.map((k) => k.replace(/\\/g, "/")),
      ["jose/dist/webapi/util/decode_jwt.js"],
    );
    const bare = r.afterNodes.asked.filter((s) => !s.startsWith("zod") && !s.startsWith("undici/lib/"));
    assert.deepEqual(bare, ["jose/jwt/decode"], `bare specifiers required: ${r.afterNodes.asked.join(", ")}`);
    assert.equal(r.afterNodes.undiciIndex, false, "undici's index.js (fetch, WebSocket, mocks ...) is not loaded");
    assert.ok(!r.afterNodes.asked.includes("jose"), "jose's index (signing, JWE, JWK) is not loaded");
  });

  it("proper-lockfile is loaded at the first renewal lock of a file store, not before", () => {
    assert.ok(!r.fileStoreBuilt.includes("proper-lockfile"), "building a file store does not load it");
    assert.equal(r.lockResult, "held");
    assert.ok(r.afterFileLock.includes("proper-lockfile"), `loaded by the lock: ${r.afterFileLock.join(", ")}`);
  });

  it("@redis/client is loaded when a Redis store is built, not with its module", () => {
    assert.ok(!r.redisModuleLoaded.includes("@redis/client"), "requiring redis-store.js does not load it");
    assert.ok(
      r.afterRedisStore.includes("@redis/client"),
      `loaded by new RedisTokenStore: ${r.afterRedisStore.join(", ")}`,
    );
  });

  it("the Pool loaded without undici's index is undici's own Pool, with request()", () => {
    assert.equal(r.poolSource, "lean", "loaded from undici/lib (not the fallback to the whole of undici)");
    assert.equal(r.undiciIndexBeforeCompare, false);
    assert.equal(r.samePool, true, "undiciPool() === require('undici').Pool");
    assert.equal(r.hasRequest, true);
  });
});
