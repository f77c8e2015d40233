/**
 * The session's side of its store (src/session/store-sync.ts; docs/session.md#the-redis-session-store):
 * work under the renewal lock, a store that cannot be reached ending in a callback (no private
 * login), and a pair a shared store missed written again when it is back, only over the pair it
 * replaced; a store that lost its data gets the pair back from memory.
 */
import { strict as assert } from "node:assert";
import { StoreUnreachableError } from "../../src/session/errors.js";
import { StoreSync, isOtherPair } from "../../src/session/store-sync.js";
import type { LivePair } from "../../src/session/token-pair.js";
import type { StoredPair, TokenStore } from "../../src/session/token-store.js";
import { CapturingLog } from "../helpers/session.js";

/** A shared store in memory: `down` makes every operation fail as unreachable. */
class MemoryStore implements TokenStore {
  readonly description = "memory store";
  readonly shared = true;
  held: StoredPair | null = null;
  down = false;
  locks = 0;
  saves: StoredPair[] = [];
  private check(): void {
    if (this.down) throw new StoreUnreachableError("the session store is unreachable");
  }
  load(): Promise<StoredPair | null> {
    this.check();
    return Promise.resolve(this.held);
  }
  save(pair: StoredPair): Promise<void> {
    this.check();
    this.held = pair;
    this.saves.push(pair);
    return Promise.resolve();
  }
  clear(): Promise<void> {
    this.held = null;
    return Promise.resolve();
  }
  async withRenewalLock<T>(fn: () => Promise<T>): Promise<T> {
    this.check();
    this.locks++;
    return fn();
  }
  restore(pair: StoredPair): Promise<boolean> {
    this.check();
    if (this.held) return Promise.resolve(false);
    this.held = pair;
    return Promise.resolve(true);
  }
}

const pair = (n: number): LivePair => ({
  accessToken: `a${n}`,
  refreshToken: `r${n}`,
  obtainedAt: n,
  exp: null,
  lifetimeMs: null,
});

describe("session store sync: the renewal lock, and a pair the shared store missed written back only over the one it replaced (docs/session.md#the-redis-session-store)", function () {
  let store: MemoryStore;
  let log: CapturingLog;
  let sync: StoreSync;

  beforeEach(() => {
    store = new MemoryStore();
    log = new CapturingLog();
    sync = new StoreSync(store, log);
  });

  it("work runs under the lock once, a nested call without taking it again; an unreachable store calls back instead of failing", async () => {
    let inside = false;
    await sync.underLock(async () => {
      assert.equal(sync.holdsLock, true);
      await sync.underLock(() => {
        inside = true;
        return Promise.resolve();
      }, assert.fail);
    }, assert.fail);
    assert.ok(inside);
    assert.equal(store.locks, 1);
    assert.equal(sync.holdsLock, false);
    store.down = true;
    const seen: StoreUnreachableError[] = [];
    await sync.underLock(
      () => assert.fail("no work without the lock"),
      (e) => seen.push(e),
    );
    assert.equal(seen.length, 1);
    await assert.rejects(sync.reread(), StoreUnreachableError, "a shared store that cannot be read aborts the renewal");
  });

  it("a pair the store missed is written when it is back, over the pair it replaced", async () => {
    store.held = pair(1);
    store.down = true;
    const pair2 = pair(2);
    await sync.save(pair2, "r1");
    assert.ok(
      log.lines.some((l) => l.startsWith("error session: could not persist the token pair to the memory store")),
    );
    store.down = false;
    await sync.catchUp(() => pair2);
    assert.deepEqual(store.held, pair2);
    store.saves = [];
    await sync.catchUp(() => pair2);
    assert.deepEqual(store.saves, [], "written once");
  });

  it("a newer pair another instance stored meanwhile is not overwritten", async () => {
    store.held = pair(1);
    store.down = true;
    const mine = pair(2);
    await sync.save(mine, "r1");
    store.down = false;
    store.held = pair(3); // another instance renewed while ours was not saved
    await sync.catchUp(() => mine);
    assert.deepEqual(store.saves, [], "nothing written over it");
    assert.equal(store.held.refreshToken, "r3");
    assert.ok(isOtherPair(store.held, "r2", null), "the session adopts it instead");
    assert.equal(isOtherPair(store.held, "r2", "r3"), false, "unless it is dead");
  });

  it("a store that lost its data gets the pair in memory back; one that has a pair keeps it", async () => {
    await sync.catchUp(() => pair(4));
    assert.equal(store.held?.refreshToken, "r4");
    assert.ok(log.lines.includes("info session: the session store had lost the pair; restored it from memory"));
    await sync.catchUp(() => pair(5));
    assert.equal(store.held?.refreshToken, "r4");
  });
});
