/**
 * The account's token pair shared by several Node-RED instances through Redis.
 *
 * The service allows one session per account; instances configured for the same account
 * (same base URL and login identity) meet at the same key, derived from `accountKey` (a
 * hash, stretched with scrypt here, so neither the phone number nor the email appears in
 * Redis). The pair is one value written by one SET (a Lua script that also bumps a
 * generation number and publishes a "renewed" notice), sealed with AES-256-GCM when a
 * secret is set (pair-crypto.ts, as the file store does).
 *
 * Renewal lock: `SET lock owner NX PX ttl`, waited for (bounded, polling with back-off),
 * extended by its owner every third of its TTL while held (a slow login), released only by
 * its owner (compare-and-delete in Lua). A holder that dies lets the lock expire.
 *
 * Redis unreachable: load/save/lock reject with StoreUnreachableError after a bounded wait
 * (the session keeps the pair in memory and never logs in on its own). The client
 * reconnects by itself (back-off capped at 2 s); when it is back, watchers get
 * "reconnected" and may restore the pair Redis lost in a restart (`restore`, SET NX).
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, scrypt } from "node:crypto";
import { EventEmitter } from "node:events";
import { createRequire } from "node:module";
import type * as RedisClientModule from "@redis/client";
import { StoreUnreachableError } from "./errors.js";
import { type SealedPair, derivePairKey, openPair, sealPair } from "./pair-crypto.js";
import { accountStoreId } from "../util/store-id.js";
import type { StoreEvent, StoredPair, TokenStore } from "./token-store.js";

export interface RedisTokenStoreOptions {
  /** redis://[user[:password]@]host[:port][/db] or rediss:// (TLS). */
  url: string;
  /** Overrides a password in the URL (a Node-RED credential). */
  password?: string | null;
  /** Force TLS even for a redis:// URL (rediss:// always uses TLS). */
  tls?: boolean;
  /** Prefix of every key and channel (default "door-access:"). */
  keyPrefix?: string;
  /** accountKey(baseUrl, method, identity) from token-store.ts. */
  accountKey: string;
  /** When set, the pair is encrypted under a key derived from it; every instance needs the same one. */
  secret?: string | null;
  /** Lock expiry (default 15 s); the owner extends it while it holds it. */
  lockTtlMs?: number;
  /** How long a renewal waits for the lock, or for Redis to come back (default 20 s). */
  lockWaitMs?: number;
  /** Timeout of one Redis command (default 5 s). */
  commandTimeoutMs?: number;
  /** A stored value that cannot be read (treated as absent). */
  onProblem?: (message: string) => void;
  /** Redis went away (once per outage) and came back (`null`). */
  onUnreachable?: (message: string | null) => void;
}

export const DEFAULT_KEY_PREFIX = "door-access:";
const KEY_INFO = "door-access redis store v1";

interface StoredRecord extends SealedPair {
  v: 1;
  /** Generation: 1 for the first pair written, +1 at every save. */
  g?: number;
  /** How the sealing key was derived: "scrypt" (PAIR_SCRYPT); absent: HKDF (values written before scrypt). */
  kdf?: "scrypt";
}

/**
 * The work factor of the pair's sealing key: scrypt, memory-hard (128 MiB and about a quarter
 * of a second per guess on one core here; docs/session.md#the-redis-session-store). Computed once per
 * account per process, at the first load or save, never on the unlock path.
 */
export const PAIR_SCRYPT = { N: 1 << 17, r: 8, p: 1, maxmem: 256 * 1024 * 1024 } as const;

const scryptKeys = new Map<string, Promise<Buffer>>();

/** The 32-byte sealing key of the Redis pair: scrypt(secret, accountKey + info), cached per process. */
export function derivePairKeyScrypt(secret: string, accountKey: string): Promise<Buffer> {
  const id = createHash("sha256").update(`${accountKey}\n${secret}`).digest("hex");
  let key = scryptKeys.get(id);
  if (!key) {
    key = new Promise<Buffer>((resolve, reject) => {
      scrypt(secret, `${accountKey}\n${KEY_INFO}`, 32, PAIR_SCRYPT, (e, k) => (e ? reject(e) : resolve(k)));
    });
    scryptKeys.set(id, key);
    key.catch(() => scryptKeys.delete(id));
  }
  return key;
}

// KEYS[1] lock; ARGV[1] owner
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;
// KEYS[1] lock; ARGV[1] owner, ARGV[2] ttl ms
const EXTEND = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
// KEYS[1] pair, KEYS[2] lock; ARGV[1] record JSON, ARGV[2] lock owner or "", ARGV[3] channel, ARGV[4] instance id.
// Refuses (-1) when the lock is held by another owner; otherwise one SET, then the notice.
const SAVE = `
if ARGV[2] ~= '' then
  local holder = redis.call('GET', KEYS[2])
  if holder and holder ~= ARGV[2] then return -1 end
end
local g = 0
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, d = pcall(cjson.decode, cur)
  if ok and type(d) == 'table' and tonumber(d.g) then g = tonumber(d.g) end
end
g = g + 1
local rec = cjson.decode(ARGV[1])
rec.g = g
redis.call('SET', KEYS[1], cjson.encode(rec))
redis.call('PUBLISH', ARGV[3], ARGV[4] .. ':' .. g)
return g`;

type Client = ReturnType<typeof RedisClientModule.createClient>;

/**
 * `@redis/client` (about 480 modules) is loaded when the first Redis store is built, not when
 * the package loads: an account on the file store never pays for it.
 */
let redisModule: typeof RedisClientModule | undefined;
/** This module's own `require`, for that load on first use (synchronous: the package is CommonJS). */
const requireOnUse = createRequire(__filename);
function redisClient(): typeof RedisClientModule {
  return (redisModule ??= requireOnUse("@redis/client") as typeof RedisClientModule);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** The Redis key id of an account: scrypt of the account key (a hash of base URL and identity), cached per process. */
export function redisAccountId(accountKey: string): string {
  return accountStoreId(accountKey);
}

export class RedisTokenStore implements TokenStore {
  readonly shared = true;
  readonly description: string;
  /** Keys and channel of this account (exposed for tests and operators; no secret). */
  readonly keys: { pair: string; lock: string; channel: string };
  private readonly client: Client;
  private subscriber: Client | null = null;
  /** The scrypt sealing key (derived once, asynchronously, off the event loop). */
  private readonly cipherKey: Promise<Buffer> | null;
  /** The HKDF key of values written before scrypt (read only, then re-sealed by the next save). */
  private legacyKey: Buffer | null = null;
  private readonly instanceId = randomBytes(8).toString("hex");
  private readonly events = new EventEmitter();
  private readonly lockTtlMs: number;
  private readonly lockWaitMs: number;
  private readonly commandTimeoutMs: number;
  private connecting: Promise<void> | null = null;
  private closed = false;
  private wasReady = false;
  private down = false;
  /** The owner token of the lock this instance holds, if any (fences `save`). */
  private owner: string | null = null;

  constructor(private readonly options: RedisTokenStoreOptions) {
    const prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    const id = redisAccountId(options.accountKey);
    this.keys = { pair: `${prefix}${id}:pair`, lock: `${prefix}${id}:lock`, channel: `${prefix}${id}:renewed` };
    this.lockTtlMs = options.lockTtlMs ?? 15_000;
    this.lockWaitMs = options.lockWaitMs ?? 20_000;
    this.commandTimeoutMs = options.commandTimeoutMs ?? 5_000;
    this.cipherKey = options.secret ? derivePairKeyScrypt(options.secret, options.accountKey) : null;
    this.cipherKey?.catch(() => undefined); // reported by the load/save that awaits it
    const url = new URL(options.url);
    if (url.protocol !== "redis:" && url.protocol !== "rediss:")
      throw new Error("the Redis URL must start with redis:// or rediss://");
    this.description = `Redis session store ${url.protocol}//${url.host}`;
    const tls = url.protocol === "rediss:" || options.tls === true;
    this.client = redisClient().createClient({
      url: options.url,
      ...(options.password ? { password: options.password } : {}),
      disableOfflineQueue: true,
      socket: {
        ...(tls ? { tls: true as const, servername: url.hostname } : {}),
        connectTimeout: this.commandTimeoutMs,
        // Bounded back-off, never giving up: the instance must recover when Redis returns.
        reconnectStrategy: (retries: number) => Math.min(100 * 2 ** Math.min(retries, 5), 2_000),
      },
    });
    this.client.on("error", (e: Error) => this.wentDown(e));
    this.client.on("ready", () => this.cameBack());
  }

  // ---- TokenStore --------------------------------------------------------------------

  async load(): Promise<StoredPair | null> {
    const raw = await this.exec<string | null>(["GET", this.keys.pair]);
    if (raw === null || raw === undefined) return null;
    try {
      const rec = JSON.parse(String(raw)) as StoredRecord;
      if (rec.v !== 1) throw new Error("unknown format");
      return openPair(await this.keyFor(rec), rec);
    } catch (e) {
      this.options.onProblem?.(
        `the pair in the ${this.description} is unreadable (${(e as Error).message}); treated as absent`,
      );
      return null;
    }
  }

  async save(pair: StoredPair): Promise<void> {
    const rec: StoredRecord = await this.seal(pair);
    const g = await this.exec<number>([
      "EVAL",
      SAVE,
      "2",
      this.keys.pair,
      this.keys.lock,
      JSON.stringify(rec),
      this.owner ?? "",
      this.keys.channel,
      this.instanceId,
    ]);
    if (Number(g) === -1)
      throw new Error("the renewal lock was taken over by another instance; the pair was not written");
  }

  async restore(pair: StoredPair): Promise<boolean> {
    const rec: StoredRecord = { ...(await this.seal(pair)), g: 0 };
    const r = await this.exec<string | null>(["SET", this.keys.pair, JSON.stringify(rec), "NX"]);
    if (r !== "OK") return false;
    await this.exec(["PUBLISH", this.keys.channel, `${this.instanceId}:0`]).catch(() => undefined);
    return true;
  }

  async clear(): Promise<void> {
    await this.exec(["DEL", this.keys.pair]);
  }

  async withRenewalLock<T>(fn: () => Promise<T>): Promise<T> {
    const owner = await this.acquire();
    this.owner = owner;
    const every = Math.max(50, Math.floor(this.lockTtlMs / 3));
    const timer = setInterval(() => {
      void this.extend(owner).catch(() => undefined);
    }, every);
    timer.unref();
    try {
      return await fn();
    } finally {
      clearInterval(timer);
      if (this.owner === owner) this.owner = null;
      await this.release(owner).catch(() => undefined);
    }
  }

  // ---- records beside the pair (src/session/account-records.ts) ------------------------

  /** The value of the record `name` of this account, or null. */
  async getRecord(name: string): Promise<string | null> {
    return (await this.exec<string | null>(["GET", this.recordKey(name)])) ?? null;
  }

  /** Sets the record `name` for `ttlMs` (at least 1 ms); null deletes it. */
  async setRecord(name: string, value: string | null, ttlMs: number): Promise<void> {
    const key = this.recordKey(name);
    if (value === null) await this.exec(["DEL", key]);
    else await this.exec(["SET", key, value, "PX", String(Math.max(1, Math.ceil(ttlMs)))]);
  }

  private recordKey(name: string): string {
    return `${this.keyOf("rec")}:${name}`;
  }

  // ---- the account's guest passes (src/passes/redis-pass-book.ts) ----------------------

  /** The key `<prefix><id>:<name>` of this account. */
  keyOf(name: string): string {
    return `${this.keys.pair.slice(0, -":pair".length)}:${name}`;
  }

  /** One command (EVAL, HGET, ...) on this store's connection; StoreUnreachableError when Redis cannot be reached. */
  command<T = unknown>(args: string[]): Promise<T> {
    return this.exec<T>(args);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** `text` sealed (AES-256-GCM) under a key derived from the pair's sealing key, or as is when no secret is set. */
  async sealText(text: string, info: string): Promise<string> {
    const key = await this.textKey(info);
    if (!key) return `none:${text}`;
    const iv = randomBytes(12);
    const c = createCipheriv("aes-256-gcm", key, iv);
    const data = Buffer.concat([c.update(text, "utf8"), c.final()]);
    return `gcm:${iv.toString("base64")}:${c.getAuthTag().toString("base64")}:${data.toString("base64")}`;
  }

  /** What sealText sealed; throws (naming no secret) when it cannot be opened. */
  async openText(sealed: string, info: string): Promise<string> {
    if (sealed.startsWith("none:")) return sealed.slice(5);
    const [kind, iv, tag, data] = sealed.split(":");
    const key = await this.textKey(info);
    if (kind !== "gcm" || !key) throw new Error(key ? "unknown format" : "it is sealed but no secret is set");
    const d = createDecipheriv("aes-256-gcm", key, Buffer.from(iv ?? "", "base64"));
    d.setAuthTag(Buffer.from(tag ?? "", "base64"));
    return Buffer.concat([d.update(Buffer.from(data ?? "", "base64")), d.final()]).toString("utf8");
  }

  private async textKey(info: string): Promise<Buffer | null> {
    if (!this.cipherKey) return null;
    return Buffer.from(hkdfSync("sha256", await this.cipherKey, this.options.accountKey, info, 32));
  }

  private async seal(pair: StoredPair): Promise<StoredRecord> {
    const key = this.cipherKey ? await this.cipherKey : null;
    return { v: 1, ...(key ? { kdf: "scrypt" as const } : {}), ...sealPair(key, pair) };
  }

  private async keyFor(rec: StoredRecord): Promise<Buffer | null> {
    if (!this.options.secret) return null;
    if (rec.kdf === "scrypt") return this.cipherKey;
    this.legacyKey ??= derivePairKey(this.options.secret, this.options.accountKey, KEY_INFO);
    return this.legacyKey;
  }

  watch(listener: (event: StoreEvent) => void): () => void {
    this.events.on("event", listener);
    void this.subscribe();
    return () => this.events.off("event", listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.events.removeAllListeners();
    for (const c of [this.subscriber, this.client]) {
      if (!c) continue;
      if (c.isOpen) await c.close().catch(() => c.destroy());
    }
  }

  // ---- the lock (public for tests and tools) ------------------------------------------

  /** Takes the lock (waiting at most lockWaitMs); returns the owner token. */
  async acquire(waitMs = this.lockWaitMs): Promise<string> {
    const owner = randomBytes(16).toString("hex");
    const deadline = Date.now() + waitMs;
    let delay = 20;
    let lastError: StoreUnreachableError | null = null;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      try {
        const r = await this.exec<string | null>(
          ["SET", this.keys.lock, owner, "NX", "PX", String(this.lockTtlMs)],
          left,
        );
        if (r === "OK") return owner;
        lastError = null;
      } catch (e) {
        if (!(e instanceof StoreUnreachableError)) throw e;
        lastError = e;
      }
      await sleep(Math.min(delay, deadline - Date.now()));
      delay = Math.min(delay * 2, 250);
    }
    if (lastError) throw lastError;
    throw new StoreUnreachableError(
      `another instance has held the session's renewal lock in the ${this.description} for more than ${Math.round(waitMs / 1000)} s`,
    );
  }

  /** Extends the lock to a full TTL, only if `owner` still holds it. */
  async extend(owner: string): Promise<boolean> {
    return Number(await this.exec(["EVAL", EXTEND, "1", this.keys.lock, owner, String(this.lockTtlMs)])) === 1;
  }

  /** Releases the lock, only if `owner` holds it. */
  async release(owner: string): Promise<boolean> {
    return Number(await this.exec(["EVAL", RELEASE, "1", this.keys.lock, owner])) === 1;
  }

  // ---- connection ---------------------------------------------------------------------

  /** Runs one command, waiting up to `waitMs` for the connection; StoreUnreachableError otherwise. */
  private async exec<T = unknown>(args: string[], waitMs = this.commandTimeoutMs): Promise<T> {
    if (this.closed) throw new StoreUnreachableError(`the ${this.description} is closed`);
    this.connect();
    if (!this.client.isReady && !(await this.waitReady(waitMs))) {
      throw new StoreUnreachableError(`the ${this.description} cannot be reached`);
    }
    try {
      return await this.client.sendCommand(args, { timeout: this.commandTimeoutMs });
    } catch (e) {
      if (e instanceof redisClient().ErrorReply)
        throw new Error(`the ${this.description} refused ${args[0]}: ${e.message}`, { cause: e });
      throw new StoreUnreachableError(
        `the ${this.description} cannot be reached (${(e as Error).message || (e as Error).name})`,
      );
    }
  }

  private connect(): void {
    if (this.connecting || this.closed) return;
    this.connecting = this.client.connect().then(
      () => undefined,
      () => undefined, // only when closed while connecting; errors go to the 'error' listener
    );
  }

  /**
   * The commands waiting for the client's next "ready": one listener for all of them (a calendar
   * read's hundreds of writes during an outage; a listener each made Node.js warn of a leak), and
   * each leaves the set when it gives up, so a long outage holds nothing for the commands that
   * failed (docs/session.md#the-redis-session-store).
   */
  private readonly readyWaiters = new Set<() => void>();
  /** Whether the one "ready" listener is on the client (it stays there when every waiter gave up). */
  private readyListening = false;

  private waitReady(ms: number): Promise<boolean> {
    if (this.client.isReady) return Promise.resolve(true);
    if (!this.readyListening) {
      this.readyListening = true;
      this.client.once("ready", () => {
        this.readyListening = false;
        const waiting = [...this.readyWaiters];
        this.readyWaiters.clear();
        for (const w of waiting) w();
      });
    }
    return new Promise((resolve) => {
      const onReady = () => {
        clearTimeout(t);
        resolve(true);
      };
      const t = setTimeout(
        () => {
          this.readyWaiters.delete(onReady);
          resolve(this.client.isReady);
        },
        Math.max(0, ms),
      );
      this.readyWaiters.add(onReady);
    });
  }

  private async subscribe(): Promise<void> {
    if (this.subscriber || this.closed) return;
    const sub: Client = this.client.duplicate();
    this.subscriber = sub;
    sub.on("error", () => undefined); // the main client reports the outage
    try {
      await sub.connect();
      await sub.subscribe(this.keys.channel, (message: string) => {
        if (!String(message).startsWith(`${this.instanceId}:`))
          this.events.emit("event", "changed" satisfies StoreEvent);
      });
    } catch {
      /* closed while connecting */
    }
  }

  private wentDown(e: Error): void {
    if (this.down || this.closed) return;
    this.down = true;
    this.options.onUnreachable?.(
      `the ${this.description} cannot be reached (${e.message || e.name}); using the session in memory`,
    );
  }

  private cameBack(): void {
    const first = !this.wasReady;
    this.wasReady = true;
    if (this.down) {
      this.down = false;
      this.options.onUnreachable?.(null);
    }
    if (!first) this.events.emit("event", "reconnected" satisfies StoreEvent);
  }
}
