/**
 * The wrong PINs and the lockout of a door-unlock node outlive a deploy and a restart
 * (docs/access-rules.md#what-ends-a-lockout): kept as one record per node id in the account's
 * records (src/session/account-records.ts: a file beside the session file, or the Redis store).
 *
 * - Read before the node checks its first message; a message that comes meanwhile waits for it.
 * - Written after every wrong PIN, and the refusal goes out only once it is written, so that a
 *   restart right after an answer has not forgotten the guess it answered.
 * - A deploy that changes the node's PIN starts from none: the record is cleared. Whether the PIN
 *   changed is known from a keyed hash kept in this process's memory only (a random key made at
 *   start): a PIN, or anything a PIN could be guessed from, is never written anywhere.
 *
 * A store that cannot be read or written is reported (`onProblem`, no secret in it); the node then
 * goes on with what it has in memory.
 */
import { createHmac, randomBytes } from "node:crypto";
import type { AccountRecords } from "../session/account-records.js";
import type { AccessState } from "./access-state.js";

/** The record of a node's lockout, by node id. */
export function lockoutRecordName(nodeId: string): string {
  return `lockout:${nodeId}`;
}

const processKey = randomBytes(32);
/** Node id → keyed hash of the PIN its last instance in this process was deployed with. */
const pinTags = new Map<string, string>();

/**
 * Records `pin` as the PIN of node `nodeId`; true when an earlier instance of the node in this
 * process had another one (or none). The first instance after a start is not a change.
 */
export function pinChanged(nodeId: string, pin: string | null): boolean {
  const tag = createHmac("sha256", processKey)
    .update(pin === null ? "\u0000none" : `pin:${pin}`)
    .digest("base64");
  const before = pinTags.get(nodeId);
  pinTags.set(nodeId, tag);
  return before !== undefined && before !== tag;
}

export class LockoutKeeper {
  private loaded = false;
  private loading: Promise<void> | null = null;
  private savedCount = 0;

  constructor(
    private readonly state: AccessState,
    private readonly nodeId: string,
    /** The node's PIN changed in the deploy that made it: the kept record is cleared, not read. */
    private readonly fresh: boolean,
    private readonly now: () => number,
    private readonly onProblem: (message: string) => void,
  ) {}

  /** Whether the record has been read (a message may then be checked without waiting). */
  get ready(): boolean {
    return this.loaded;
  }

  /** Reads the node's record once (or clears it, for a changed PIN). Never rejects. */
  load(records: AccountRecords): Promise<void> {
    this.loading ??= (async () => {
      const name = lockoutRecordName(this.nodeId);
      try {
        if (this.fresh) await records.put(name, null, 0);
        else this.state.restoreLockout(await records.get(name), this.now());
      } catch (e) {
        this.onProblem(
          `the wrong PINs and lockout kept in the ${records.description} could not be read (${(e as Error).message}); this node counts from none`,
        );
      }
      this.loaded = true;
      this.savedCount = this.state.wrongPinCount;
    })();
    return this.loading;
  }

  /** Writes the record when a wrong PIN was counted since the last write. Never rejects. */
  async saveIfCounted(records: AccountRecords): Promise<void> {
    const count = this.state.wrongPinCount;
    if (count === this.savedCount) return;
    this.savedCount = count;
    const now = this.now();
    const kept = this.state.lockoutRecord(now);
    try {
      await records.put(lockoutRecordName(this.nodeId), kept ? { ...kept.record } : null, kept?.expiresAt ?? 0);
    } catch (e) {
      this.onProblem(
        `the wrong PINs and lockout could not be kept in the ${records.description} (${(e as Error).message}); a restart would forget them`,
      );
    }
  }
}
