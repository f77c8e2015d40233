/**
 * Where the session's token pair lives between restarts.
 *
 * The pair is written as one unit, atomically (temp file, fsync, rename, fsync of the
 * folder), with file mode 0600, outside the flow and credentials files: Node-RED writes
 * credentials only on the next deploy, so a rotated refresh token kept there would be lost
 * by a restart before it. When Node-RED has a credential secret the pair is encrypted with
 * AES-256-GCM under a key derived from it. A torn, foreign or undecryptable file is treated
 * as absent (and reported through `onProblem`), never as a crash.
 *
 * A second process on the same user directory is kept from refreshing at the same time by
 * a lock file around renewal (`withRenewalLock`); the session re-reads the pair after
 * taking it.
 */
import { createHash, scrypt } from "node:crypto";
import { promises as fs } from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import type * as ProperLockfile from "proper-lockfile";
import { writeFileAtomic } from "../util/atomic-file.js";
import { accountStoreId } from "../util/store-id.js";
import { type PairRecord, derivePairKey, openPair, sealPair } from "./pair-crypto.js";

// The name of the account's stored pair, as the token store's tests read it (its one definition is in util).
export { accountStoreId } from "../util/store-id.js";

export type StoredPair = PairRecord;

/** What a shared store tells the sessions using it. */
export type StoreEvent =
  /** Another instance saved a new pair: re-read it. */
  | "changed"
  /** The store is reachable again after an outage (it may have lost its data). */
  | "reconnected";

export interface TokenStore {
  load(): Promise<StoredPair | null>;
  save(pair: StoredPair): Promise<void>;
  clear(): Promise<void>;
  /** Runs `fn` while holding the cross-process renewal lock of this account. */
  withRenewalLock<T>(fn: () => Promise<T>): Promise<T>;
  /** Human-readable place, for logs (never contains a secret). */
  readonly description: string;
  /**
   * Several instances (processes, hosts) share this store and the account's one session:
   * logins, not only refreshes, then run under the renewal lock after re-reading the
   * store, and a store that cannot be reached fails the renewal (StoreUnreachableError)
   * instead of letting this instance log in on its own. The file store is not shared.
   */
  readonly shared?: boolean;
  /** Subscribes to the store's events; returns the unsubscribe function. */
  watch?(listener: (event: StoreEvent) => void): () => void;
  /** Writes `pair` only if the store holds none (it lost its data); true if written. */
  restore?(pair: StoredPair): Promise<boolean>;
  /** Releases connections; the stored pair stays. */
  close?(): Promise<void>;
}

/**
 * Identifies the account, not the config node: a hash of the base URL and the login
 * identity, so a pair stored for other credentials is never resumed. Never the identity
 * in clear.
 */
export function accountKey(baseUrl: string, method: string, identity: string): string {
  return createHash("sha256")
    .update(`${new URL(baseUrl).origin}\n${method === "email" ? "email" : "phone"}\n${identity.trim().toLowerCase()}`)
    .digest("hex");
}

/** The token file of an account in a Node-RED user directory: named from the account key, not a node id. */
export function tokenFileFor(userDir: string, accountKey: string): string {
  return path.join(userDir, "door-access", `session-${accountStoreId(accountKey)}.json`);
}

interface FileFormat {
  v: 1;
  account: string;
  /**
   * Which password the pair was obtained with: scrypt of it under the account (never the password).
   * A pair written for another password is not resumed (docs/session.md#changed-credentials-are-checked).
   */
  pw?: string;
  enc: "aes-256-gcm" | "none";
  iv?: string;
  tag?: string;
  data: string;
}

/** This module's own `require`: proper-lockfile is loaded at the first renewal lock, synchronously (CommonJS). */
const requireOnUse = createRequire(__filename);

/** HKDF info of the file store's key (changing it would make existing files unreadable). */
const FILE_KEY_INFO = "door-access token store v1";

export interface FileTokenStoreOptions {
  filePath: string;
  accountKey: string;
  /** Node-RED's credential secret, when one is set: the pair is then encrypted. */
  secret?: string | null;
  /**
   * The account's password as deployed: the file records which password its pair was obtained
   * with, and a pair of another password is not resumed. Absent: not checked (tests of the store).
   */
  password?: string;
  onProblem?: (message: string) => void;
  /** How long to wait for another process's renewal lock (default 15 s). */
  lockWaitMs?: number;
  /**
   * A lock left by a process that died is taken over after this long (default 10 s; the
   * lock library's minimum is 5 s). A live holder keeps it fresh every 2 s.
   */
  lockStaleMs?: number;
}

export class FileTokenStore implements TokenStore {
  readonly description: string;
  private readonly key: Buffer | null;

  constructor(private readonly options: FileTokenStoreOptions) {
    this.description = `token file ${options.filePath}`;
    this.key = options.secret ? derivePairKey(options.secret, options.accountKey, FILE_KEY_INFO) : null;
  }

  async load(): Promise<StoredPair | null> {
    let text: string;
    try {
      text = await fs.readFile(this.options.filePath, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
      this.problem(
        `cannot read the ${this.description} (${(e as NodeJS.ErrnoException).code ?? "error"}); logging in instead`,
      );
      return null;
    }
    try {
      const file = JSON.parse(text) as FileFormat;
      if (file.v !== 1 || typeof file.data !== "string") throw new Error("unknown format");
      // Another account's pair is not ours to use. The file names its account by the scrypt store
      // id (a plain hash of a phone number could be reversed by trying every number); a file
      // written before carries the account key itself, and is accepted once (rewritten at the next save).
      const id = accountStoreId(this.options.accountKey);
      if (file.account !== id && file.account !== this.options.accountKey) return null;
      // A pair obtained with another password than the one deployed now is not this
      // configuration's: the account logs in (and a wrong password is refused, never "ready").
      if (typeof file.pw === "string" && this.options.password !== undefined) {
        if (file.pw !== (await this.passwordTag())) return null;
      }
      return openPair(this.key, file);
    } catch (e) {
      this.problem(`the ${this.description} is unreadable (${(e as Error).message}); logging in instead`);
      return null;
    }
  }

  async save(pair: StoredPair): Promise<void> {
    const file: FileFormat = {
      v: 1,
      account: accountStoreId(this.options.accountKey),
      ...(this.options.password !== undefined ? { pw: await this.passwordTag() } : {}),
      ...sealPair(this.key, pair),
    };
    await writeFileAtomic(this.options.filePath, JSON.stringify(file) + "\n");
  }

  async clear(): Promise<void> {
    await fs.rm(this.options.filePath, { force: true });
    await fs.rm(`${this.options.filePath}.lock`, { force: true, recursive: true }).catch(() => undefined);
  }

  async withRenewalLock<T>(fn: () => Promise<T>): Promise<T> {
    await fs.mkdir(path.dirname(this.options.filePath), { recursive: true, mode: 0o700 });
    const wait = this.options.lockWaitMs ?? 15_000;
    // Loaded at the first renewal lock, not with the package (an account on Redis never needs it).
    const lockfile = requireOnUse("proper-lockfile") as typeof ProperLockfile;
    const release = await lockfile.lock(this.options.filePath, {
      realpath: false,
      lockfilePath: `${this.options.filePath}.lock`,
      stale: this.options.lockStaleMs ?? 10_000,
      update: 2_000,
      // The library's default throws from a timer (an uncaught exception that would stop
      // Node-RED) when the lock is found compromised; report it instead. The pair itself is
      // still written atomically, and the session re-reads it under the next lock.
      onCompromised: (err: Error) => this.problem(`session store: the renewal lock was compromised (${err.message})`),
      retries: { retries: Math.ceil(wait / 100), minTimeout: 100, maxTimeout: 100, factor: 1 },
    });
    try {
      return await fn();
    } finally {
      await release().catch(() => undefined);
    }
  }

  private problem(message: string): void {
    this.options.onProblem?.(message);
  }

  /** The file's `pw`: scrypt of the password under the account, off the event loop, once per process. */
  private passwordTag(): Promise<string> {
    return passwordTagOf(this.options.accountKey, this.options.password ?? "");
  }
}

const passwordTags = new Map<string, Promise<string>>();

/** scrypt(password, account) as hex, cached per account and password for this process (memory only). */
function passwordTagOf(accountKey: string, password: string): Promise<string> {
  const cacheKey = createHash("sha256").update(`${accountKey}\n${password}`).digest("hex");
  let tag = passwordTags.get(cacheKey);
  if (tag === undefined) {
    tag = new Promise<string>((resolve, reject) => {
      scrypt(password, `door-access pair password v1\n${accountKey}`, 16, { N: 1 << 14, r: 8, p: 1 }, (err, key) =>
        err ? reject(err) : resolve(key.toString("hex")),
      );
    });
    passwordTags.set(cacheKey, tag);
    tag.catch(() => passwordTags.delete(cacheKey));
  }
  return tag;
}
