/**
 * The session's side of its token store (docs/session.md#token-storage,
 * docs/session.md#the-redis-session-store): the store's renewal lock (held while a login or
 * refresh runs), the pair a shared store missed (written again when it is back, and only over the
 * pair it replaced), the store's notices ("changed": another instance saved a pair;
 * "reconnected": the store is back, and may have lost the pair: restored from memory).
 * What the session does with a pair read from the store is decided in renewals.ts.
 */
import { StoreUnreachableError } from "./errors.js";
import type { LivePair } from "./token-pair.js";
import type { StoredPair, TokenStore } from "./token-store.js";
import type { SessionLog } from "./types.js";

export class StoreSync {
  /** True while this session runs work under the store's renewal lock. */
  private lockHeld = false;
  /** A shared store missed our last pair: written again when the store is back. */
  private unsaved = false;
  /** The refresh token of the pair the unsaved one replaced (what the store still holds, if nobody renewed since). */
  private unsavedBase: string | null = null;

  constructor(
    private readonly store: TokenStore,
    private readonly log: SessionLog,
  ) {}

  /** Whether this session runs work under the renewal lock now. */
  get holdsLock(): boolean {
    return this.lockHeld;
  }

  /**
   * Saves a new pair. `replaced`: the refresh token of the pair it replaces (what the store holds,
   * unless it missed an earlier pair of ours: then that one's base). A shared store that misses it
   * is written again when it is back (catchUp).
   */
  async save(pair: StoredPair, replaced: string | null): Promise<void> {
    const base = this.unsaved ? this.unsavedBase : replaced;
    this.unsaved = false;
    try {
      await this.store.save(pair);
    } catch (e) {
      if (this.store.shared) {
        this.unsaved = true;
        this.unsavedBase = base;
      }
      this.log.error(
        `session: could not persist the token pair to the ${this.store.description} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); a restart will have to log in again`,
      );
    }
  }

  /**
   * Runs `work` under the store's renewal lock. A shared store that cannot be reached (or whose
   * lock stays taken) calls `unreachable` instead of failing: no private login.
   */
  async underLock(work: () => Promise<void>, unreachable: (e: StoreUnreachableError) => void): Promise<void> {
    if (this.lockHeld) return work(); // already ours (a login that turned into a refresh)
    try {
      await this.store.withRenewalLock(async () => {
        this.lockHeld = true;
        try {
          await work();
        } finally {
          this.lockHeld = false;
        }
      });
    } catch (e) {
      if (!(e instanceof StoreUnreachableError)) throw e;
      unreachable(e);
    }
  }

  /** The stored pair, re-read under the lock; a shared store that cannot be read aborts the renewal. */
  async reread(): Promise<StoredPair | null> {
    try {
      return await this.store.load();
    } catch (e) {
      if (e instanceof StoreUnreachableError) throw e;
      return null;
    }
  }

  /**
   * The store is back after an outage, and the session holds a pair (`current()` reads it now):
   * the pair the store missed is written, under the renewal lock and only over the pair ours
   * replaced (or none): another instance may have stored a newer pair meanwhile, which must not
   * be overwritten (the session adopts it instead). Else a store that lost the pair gets it back.
   * Rejects when the store went away again.
   */
  async catchUp(current: () => LivePair | null): Promise<void> {
    const mine = current();
    if (!mine) return;
    if (this.unsaved) {
      await this.store.withRenewalLock(async () => {
        const stored = await this.store.load();
        if (current() !== mine || !this.unsaved) return;
        this.unsaved = false;
        if (stored === null || stored.refreshToken === this.unsavedBase || stored.refreshToken === mine.refreshToken) {
          await this.store.save(mine);
          this.log.info("session: wrote the pair the session store missed while it was away");
        }
      });
    } else if (await this.store.restore?.(mine)) {
      this.log.info("session: the session store had lost the pair; restored it from memory");
    }
  }
}

/** Whether `stored` is a pair the session should adopt: not the one it holds, not a dead one. */
export function isOtherPair(stored: StoredPair | null, held: string | undefined, dead: string | null): boolean {
  return stored !== null && stored.refreshToken !== held && stored.refreshToken !== dead;
}
