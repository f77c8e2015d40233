/**
 * The Redis session store on a real redis-server: the pair as one value at a key derived
 * from the account (never the phone number or email), sealed like the file store, the
 * renewal lock with an owner token (release and extension only by the owner, expiry when
 * the owner is gone), and bounded failure when Redis is away (docs/session.md#the-redis-session-store).
 */
import { strict as assert } from "node:assert";
import * as net from "node:net";
import * as v8 from "node:v8";
import * as vm from "node:vm";
import { createClient } from "@redis/client";
import { checkStoreSettings } from "../../src/account/account.js";
import { StoreUnreachableError } from "../../src/session/errors.js";
import { RedisTokenStore, type RedisTokenStoreOptions } from "../../src/session/redis-store.js";
import { type StoreEvent, accountKey } from "../../src/session/token-store.js";
import { RedisServer } from "../helpers/redis.js";
import { needProgram } from "../helpers/programs.js";
import { waitUntil } from "../helpers/session.js";

const BASE = "https://test.example";
const PHONE = "+15550000001";
const EMAIL = "integration@example.com";
const PAIR = {
  accessToken: "aaa.bbb.ccc-access-token-value",
  refreshToken: "refresh-token-value-0123456789",
  obtainedAt: 1_700_000_000_000,
};

describe("Redis session store: one sealed value per account, a renewal lock only its owner holds, bounded failure without Redis (docs/session.md#the-redis-session-store)", function () {
  this.timeout(30_000);
  let redis: RedisServer;
  let raw: ReturnType<typeof createClient>;
  const stores: RedisTokenStore[] = [];

  before(async function () {
    needProgram(this, "redis-server");
    redis = await RedisServer.start();
  });
  after(async () => {
    await redis?.stop();
  });
  beforeEach(async () => {
    await redis.resume();
    raw = createClient({ url: redis.url });
    raw.on("error", () => undefined);
    await raw.connect();
    await raw.sendCommand(["FLUSHALL"]);
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    if (raw.isOpen) await raw.close().catch(() => raw.destroy());
  });

  function store(opts: Partial<RedisTokenStoreOptions> = {}): RedisTokenStore {
    const s = new RedisTokenStore({
      url: redis.url,
      accountKey: accountKey(BASE, "phone", PHONE),
      lockTtlMs: 1_000,
      lockWaitMs: 2_000,
      ...opts,
    });
    stores.push(s);
    return s;
  }
  const keys = async () => (await raw.sendCommand<string[]>(["KEYS", "*"])).sort();
  const get = async (k: string) => await raw.sendCommand<string | null>(["GET", k]);

  it("round trip: save, load, clear; the pair is one value, its generation bumped by each save", async () => {
    const a = store();
    assert.equal(await a.load(), null);
    await a.save(PAIR);
    assert.deepEqual(await a.load(), PAIR);
    assert.deepEqual(await keys(), [a.keys.pair]);
    const first = JSON.parse((await get(a.keys.pair))!);
    assert.equal(first.v, 1);
    assert.equal(first.g, 1);
    const next = { ...PAIR, accessToken: "x.y.z", refreshToken: "r2-refresh-token", obtainedAt: PAIR.obtainedAt + 1 };
    await a.save(next);
    assert.equal(JSON.parse((await get(a.keys.pair))!).g, 2);
    // Another instance of the same account (another process in real life) reads the same pair.
    assert.deepEqual(await store().load(), next);
    await a.clear();
    assert.equal(await a.load(), null);
    assert.deepEqual(await keys(), []);
  });

  it("encrypts the pair with a secret: Redis holds neither token; another secret reads it as absent and says so", async () => {
    const a = store({ secret: "the-account-password" });
    await a.save(PAIR);
    const value = (await get(a.keys.pair))!;
    assert.match(value, /aes-256-gcm/);
    for (const t of [PAIR.accessToken, PAIR.refreshToken, Buffer.from(PAIR.refreshToken).toString("base64")])
      assert.ok(!value.includes(t));
    assert.deepEqual(await store({ secret: "the-account-password" }).load(), PAIR);
    const problems: string[] = [];
    const other = store({ secret: "another-password", onProblem: (m) => problems.push(m) });
    assert.equal(await other.load(), null);
    assert.equal(problems.length, 1);
    assert.match(problems[0], /unreadable/);
    assert.ok(!problems[0].includes(PAIR.refreshToken));
  });

  it("a torn or foreign value is treated as absent (reported), never a crash", async () => {
    const problems: string[] = [];
    const a = store({ onProblem: (m) => problems.push(m) });
    await raw.sendCommand(["SET", a.keys.pair, '{"v":1,"enc":"none","da']);
    assert.equal(await a.load(), null);
    assert.equal(problems.length, 1);
  });

  it("the key identifies the account (base URL + identity), hashed: no phone number or email in any key", async () => {
    const phoneKey = accountKey(BASE, "phone", PHONE);
    const a = store({ keyPrefix: "door-access:" });
    const b = store({ accountKey: accountKey(`${BASE}/`, "phone", ` ${PHONE} `) });
    assert.equal(a.keys.pair, b.keys.pair, "same account, same key, whichever instance");
    const e = store({ accountKey: accountKey(BASE, "email", EMAIL) });
    const other = store({ accountKey: accountKey("https://prod.example", "phone", PHONE) });
    assert.notEqual(e.keys.pair, a.keys.pair);
    assert.notEqual(other.keys.pair, a.keys.pair);
    await a.save(PAIR);
    await e.save(PAIR);
    await a.withRenewalLock(async () => {
      const all = (await keys()).join(" ") + " " + a.keys.channel + " " + e.keys.channel;
      assert.match(all, /door-access:[0-9a-f]{32}:lock/);
      for (const secretish of [PHONE, PHONE.slice(1), EMAIL, "integration", "5550000001", phoneKey])
        assert.ok(!all.includes(secretish), `${secretish} in ${all}`);
    });
    assert.ok(store({ keyPrefix: "site-a:" }).keys.pair.startsWith("site-a:"));
  });

  it("lock: one owner at a time; another owner can neither take nor release it", async () => {
    const a = store();
    const b = store();
    const owner = await a.acquire();
    await assert.rejects(
      b.acquire(300),
      (e: Error) => e instanceof StoreUnreachableError && /held the session's renewal lock/.test(e.message),
    );
    assert.equal(await b.release("not-the-owner"), false);
    assert.equal(await get(a.keys.lock), owner, "still held by its owner");
    assert.equal(await a.release(owner), true);
    assert.equal(await get(a.keys.lock), null);
    const ownerB = await b.acquire(300);
    assert.notEqual(ownerB, owner);
    assert.equal(await a.release(owner), false, "a stale owner token releases nothing");
    assert.equal(await get(a.keys.lock), ownerB);
  });

  it("lock: expires when its owner is gone (never released), and the next owner gets it", async () => {
    const dying = store({ lockTtlMs: 500 });
    const t0 = Date.now();
    const owner = await dying.acquire();
    await dying.close(); // the owner's process is gone: no release, no extension
    // Measured from before the lock was taken, so the lower bound holds however long the steps in
    // between take; b may wait far longer than the TTL on a busy machine without being wrong: its
    // wait bound (10 s) only has to outlast the expiry, which the lower bound proves it waited for.
    const b = store({ lockTtlMs: 500, lockWaitMs: 10_000 });
    const next = await b.acquire();
    const waited = Date.now() - t0;
    assert.notEqual(next, owner);
    assert.ok(waited >= 500, `the lock was taken again ${waited} ms after it was set: before its 500 ms TTL ran out`);
  });

  it("lock: extended while its owner holds it longer than the TTL (a slow login), released at the end", async () => {
    // A 1.5 s TTL, extended every 0.5 s: a busy machine may run the extension up to a second late
    // (with 600 ms it had 400 ms, and a late one let the lock lapse under a live owner).
    const a = store({ lockTtlMs: 1_500 });
    const b = store({ lockTtlMs: 1_500 });
    let tookIt = false;
    await a.withRenewalLock(async () => {
      const end = Date.now() + 5_000; // more than three TTLs
      while (Date.now() < end) {
        await b.acquire(100).then(
          () => (tookIt = true),
          () => undefined,
        );
        const pttl = Number(await raw.sendCommand(["PTTL", a.keys.lock]));
        assert.ok(pttl > 0, `the lock is alive (pttl ${pttl})`);
      }
    });
    assert.equal(tookIt, false, "nobody took the lock from a live owner");
    assert.equal(await get(a.keys.lock), null, "released");
    assert.equal(await a.extend("not-the-owner"), false);
  });

  it("save is fenced: a holder whose lock was lost to another owner cannot overwrite the pair", async () => {
    const a = store();
    const b = store();
    await b.save(PAIR);
    await assert.rejects(
      a.withRenewalLock(async () => {
        // a stalls past its lock (e.g. a stopped process): the lock is gone and b holds it now.
        await raw.sendCommand(["DEL", a.keys.lock]);
        await b.acquire();
        await a.save({ ...PAIR, refreshToken: "stale-writer-refresh" });
      }),
      /taken over by another instance/,
    );
    assert.deepEqual(await b.load(), PAIR, "the pair is unchanged");
    // Outside any lock (single-writer use) and with the lock free, saves go through.
    await raw.sendCommand(["DEL", a.keys.lock]);
    await a.save({ ...PAIR, refreshToken: "next-refresh-token" });
    assert.equal((await b.load())!.refreshToken, "next-refresh-token");
  });

  it("restore writes the pair only when the store holds none", async () => {
    const a = store();
    assert.equal(await a.restore(PAIR), true);
    assert.deepEqual(await a.load(), PAIR);
    assert.equal(await a.restore({ ...PAIR, refreshToken: "older-one-xxxxxxxx" }), false);
    assert.deepEqual(await a.load(), PAIR);
  });

  it("watch: another instance's save is announced; a Redis restart is announced as reconnected", async () => {
    const a = store();
    const b = store();
    const seen: StoreEvent[] = [];
    a.watch((e) => seen.push(e));
    // Until a's subscription is up, b's saves may pass unseen: save until one is announced.
    for (let i = 0; i < 30 && !seen.includes("changed"); i++) {
      await b.save({ ...PAIR, refreshToken: `r${i}-refresh-token` });
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(seen.includes("changed"), "another instance's save is announced");
    seen.length = 0;
    await a.save(PAIR);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(seen.length, 0, "its own save is not announced to itself");
    await redis.stop();
    await redis.resume();
    await waitUntil(() => seen.includes("reconnected"), 8_000, "reconnected");
  });

  it("Redis away: load fails fast and clearly; the lock is waited for (bounded), then StoreUnreachableError", async () => {
    const down: (string | null)[] = [];
    // Commands time out after 2 s, not 300 ms: a busy machine made the connect or the save before
    // the outage take longer than 300 ms, and the instance then (rightly) reported an outage early.
    const a = store({ lockWaitMs: 800, commandTimeoutMs: 2_000, onUnreachable: (m) => down.push(m) });
    await a.save(PAIR);
    await redis.stop();
    await assert.rejects(a.load(), StoreUnreachableError);
    const t0 = Date.now();
    await assert.rejects(
      a.withRenewalLock(() => Promise.resolve("never")),
      StoreUnreachableError,
    );
    const took = Date.now() - t0;
    assert.ok(took >= 700 && took < 3_000, `bounded wait (${took} ms)`);
    assert.equal(down.length, 1, "reported once per outage");
    assert.match(down[0]!, /cannot be reached/);
    await redis.resume();
    await waitUntil(() => down.length === 2, 8_000, "back");
    assert.equal(down[1], null);
    assert.equal(await a.load(), null, "no persistence: the restarted server lost the pair");
  });

  it("Redis away while many commands wait (a calendar read's writes): they wait on one ready listener, not one each (no MaxListenersExceededWarning in the log), and all go through once it is back", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    try {
      const a = store({ commandTimeoutMs: 5_000 });
      await a.save(PAIR);
      await redis.stop();
      await assert.rejects(a.load(), StoreUnreachableError); // the client knows it is down
      const client = (a as unknown as { client: { listenerCount(e: string): number } }).client;
      const before = client.listenerCount("ready"); // the store's own, and the client's
      const waiting = Array.from({ length: 50 }, (_, i) =>
        a.command(["SET", a.keyOf(`w-${i}`), "1"]).then(
          () => true,
          () => false,
        ),
      );
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(
        client.listenerCount("ready") <= before + 1,
        `${client.listenerCount("ready") - before} ready listeners for 50 commands`,
      );
      await redis.resume();
      const done = await Promise.all(waiting);
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(
        warnings.filter((w) => w === "MaxListenersExceededWarning"),
        [],
      );
      assert.deepEqual(
        done.filter((ok) => !ok),
        [],
        "every waiting command went through once Redis was back",
      );
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("Redis away for long: a command that gave up waiting for it holds nothing until Redis is back (20,000 given up keep under 4 MB, not ~12 MB), and Redis back is seen again (docs/session.md#the-redis-session-store)", async function () {
    this.timeout(60_000);
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const a = store({ commandTimeoutMs: 50 });
    await a.save(PAIR);
    await redis.stop();
    await assert.rejects(a.load(), StoreUnreachableError); // the client knows it is down
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let round = 0; round < 2; round++) {
      const given = await Promise.all(
        Array.from({ length: 10_000 }, () =>
          a.command(["GET", a.keys.pair]).then(
            () => "answered",
            (e: Error) => e.name,
          ),
        ),
      );
      assert.deepEqual([...new Set(given)], ["StoreUnreachableError"], "each gave up while Redis was away");
    }
    gc();
    const held = process.memoryUsage().heapUsed - before;
    assert.ok(held < 4_000_000, `${(held / 1e6).toFixed(1)} MB held by 20,000 commands that gave up`);
    await redis.resume();
    await waitUntil(() => (a as unknown as { client: { isReady: boolean } }).client.isReady, 10_000, "Redis back");
  });

  it("the test Redis server: a program that took its port while it was stopped is not taken for it (resume fails clearly)", async () => {
    await redis.stop();
    // Answers like a Redis server would to a ping, then hangs up (clients of earlier tests may
    // still be reconnecting to this port: none is kept open, so the server closes at once).
    const foreign = net.createServer((sock) => sock.end("+PONG\r\n", () => sock.destroy()));
    await new Promise<void>((resolve, reject) => {
      foreign.once("error", reject);
      foreign.listen(redis.port, "127.0.0.1", () => resolve());
    });
    try {
      await assert.rejects(redis.resume(), /redis-server exited at start/);
      assert.equal(redis.running, false);
    } finally {
      await new Promise<void>((r) => foreign.close(() => r()));
    }
    await redis.resume();
    assert.equal(redis.running, true);
  });

  it("rejects a URL that is not redis:// or rediss://", () => {
    assert.throws(
      () => new RedisTokenStore({ url: "http://127.0.0.1:6379", accountKey: "k" }),
      /redis:\/\/ or rediss:\/\//,
    );
  });

  it("door-account settings: file is the default; redis needs a redis:// or rediss:// URL; the prefix defaults to door-access:", () => {
    assert.deepEqual(checkStoreSettings({}), { ok: true, store: { kind: "file" } });
    assert.deepEqual(checkStoreSettings({ sessionStore: "file", redisUrl: "nonsense" }), {
      ok: true,
      store: { kind: "file" },
    });
    assert.deepEqual(
      checkStoreSettings({ sessionStore: "redis", redisUrl: " rediss://cache.example:6380/2 ", redisPassword: "pw" }),
      {
        ok: true,
        store: { kind: "redis", url: "rediss://cache.example:6380/2", password: "pw", keyPrefix: "door-access:" },
      },
    );
    for (const url of ["", "http://cache.example", "cache.example:6379", "redis://", "unix:///tmp/redis.sock"]) {
      const r = checkStoreSettings({ sessionStore: "redis", redisUrl: url });
      assert.equal(r.ok, false, url);
    }
    assert.equal(checkStoreSettings({ sessionStore: "memcached" }).ok, false);
    assert.equal(
      checkStoreSettings({ sessionStore: "redis", redisUrl: "redis://h", redisKeyPrefix: "has space" }).ok,
      false,
    );
  });

  // docs/security.md#secrets: the Redis password is a credential; the Redis URL is a property,
  // kept in the flow file that every user who may read the flows (and every export) gets.
  it("door-account settings: a Redis URL that holds a password is refused, with where the password goes instead; an ACL user name alone is fine", () => {
    for (const url of [
      "redis://:s3cret-pw@cache.example:6379",
      "rediss://door-user:s3cret-pw@cache.example:6380/1",
      "redis://door-user:s3cret%40pw@cache.example",
    ]) {
      const r = checkStoreSettings({ sessionStore: "redis", redisUrl: url });
      assert.equal(r.ok, false, `${url} accepted: its password would stay in the flow file`);
      assert.match(r.ok ? "" : r.problems.join("; "), /password/i);
      assert.ok(!(r.ok ? "" : r.problems.join("; ")).includes("s3cret"), "the problem does not quote the password");
    }
    assert.equal(
      checkStoreSettings({
        sessionStore: "redis",
        redisUrl: "redis://door-user@cache.example:6379",
        redisPassword: "pw",
      }).ok,
      true,
    );
  });
});
