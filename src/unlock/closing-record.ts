/**
 * The last phase of one unlock (src/unlock/unlock.ts): the outcome goes to the caller (onResult),
 * then its closing audit record (unlock-result, or unlock-rejected when nothing was sent) is
 * written in the next turn and flushed (docs/audit-log.md#records). The record is made from the
 * unlock's own values, taken before onResult: the result object goes out as the message's payload,
 * and the nodes after this one may change it in that turn.
 */
import { guestRefusal } from "./guest-refusal.js";
import { AuditWriteFailed } from "../audit/audit-log.js";
import { describeThrown } from "../util/text.js";
import type { Outcome } from "./outcome.js";
import type { Attempt, Refusal, UnlockResult } from "./unlock-message.js";

/**
 * Batches an unlock's closing record is tried in before it is given up (AuditRecordLost). Each
 * try is a new append: it goes with the next attempt record's write or within the audit log's
 * DEFER_MS, so a log that keeps failing gives it up within about CLOSING_TRIES x DEFER_MS.
 */
export const CLOSING_TRIES = 3;

/**
 * An unlock's closing record (unlock-result or unlock-rejected) that the audit log could not
 * write in CLOSING_TRIES tries. The outcome went out before; this is passed on after it so that
 * the node can say so (door-unlock: on done()).
 */
export class AuditRecordLost extends Error {
  constructor(type: "unlock-result" | "unlock-rejected", outcome: Outcome, cause: unknown) {
    const what =
      outcome === "accepted"
        ? "the door was unlocked (accepted)"
        : type === "unlock-result"
          ? `the unlock's outcome was ${outcome}`
          : `nothing was sent (${outcome})`;
    super(`${what}, but its ${type} record could not be written to the audit log: ${describeThrown(cause)}`, { cause });
    this.name = "AuditRecordLost";
  }
}

/**
 * The next turn of the event loop: a closing record is made (its line and hashes) after what
 * onResult started in this one. Node-RED delivers a sent message in a setImmediate queued by
 * send(), so the next node has the outcome before this record's work is done.
 */
export function afterDelivery(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The attempt record of a command (and, with its outcome, its unlock-result). */
export interface AttemptRecord {
  actor: string;
  deviceId: number;
  lockId: number | null;
  door: string;
  msgid: string | null;
  pass?: string;
}

/** Tells the outcome and writes its closing record, for one message. */
export class Closing {
  // onResult is the caller's (a node sending a message); whatever it throws, the closing record is
  // written first (every message that reached the service gets its unlock-result), then the error
  // is passed on.
  private told: { error: unknown } | null = null;
  // The closing record could not be written in CLOSING_TRIES tries: said once the outcome is
  // out, which it does not change (AuditRecordLost).
  private lost: AuditRecordLost | null = null;

  constructor(
    private readonly a: Attempt,
    private readonly onResult?: (result: UnlockResult) => void,
  ) {}

  at(): string {
    return new Date(this.a.account.clock.now()).toISOString();
  }

  /** Nothing was sent: the outcome, then one unlock-rejected record. */
  async rejected(refusal: Refusal): Promise<UnlockResult> {
    const { a } = this;
    const { outcome, message, extra } = refusal;
    // A denied message's record names the rule (its word), every other rejection says why in words.
    const record = {
      actor: a.base.actor,
      deviceId: a.base.deviceId,
      lockId: a.base.lockId,
      door: a.base.door,
      msgid: a.input.msgid,
      ...(a.pass ? { pass: a.pass.id } : {}),
      outcome,
      reason: extra.reason ?? message,
      // A denied record's reason is the rule's word; its message says which case (a missing PIN
      // or a wrong one, the seconds left). Denied messages never hold a PIN.
      ...(extra.reason !== undefined ? { message } : {}),
    };
    const r: UnlockResult = {
      ...a.base,
      ...extra,
      outcome,
      status: extra.status ?? null,
      at: this.at(),
      message,
      mayHaveOpened: false,
    };
    const guestWhy = guestRefusal(a.node, r, a.pass, a.account.clock.now(), a.account.core.passes); // docs/passes.md#at-a-door-unlock
    if (guestWhy) r.passRefusal = guestWhy;
    this.tell(r);
    await this.close("unlock-rejected", outcome, () => a.account.audit.rejected(record));
    return this.passOn(r);
  }

  /** The command was sent: the outcome, then its unlock-result record. */
  async result(r: UnlockResult, record: AttemptRecord): Promise<UnlockResult> {
    const closing = { ...record, outcome: r.outcome, status: r.status };
    this.tell(r);
    await this.close("unlock-result", r.outcome, () => this.a.account.audit.result(closing));
    return this.passOn(r);
  }

  private tell(r: UnlockResult): void {
    try {
      this.onResult?.(r);
    } catch (error) {
      this.told = { error };
    }
  }

  private passOn(r: UnlockResult): UnlockResult {
    if (this.told) throw this.told.error;
    if (this.lost) throw this.lost;
    return r;
  }

  /**
   * Writes the closing record in the turn after onResult (afterDelivery). A record whose batch
   * failed (a write that fails once, or the next message's attempt write it rode with) is appended
   * again, in CLOSING_TRIES batches at most: the request was sent, its record is owed.
   */
  private async close(
    type: "unlock-result" | "unlock-rejected",
    outcome: Outcome,
    write: () => Promise<void>,
  ): Promise<void> {
    await afterDelivery();
    for (let tries = 1; ; tries++) {
      try {
        await write();
        return;
      } catch (e) {
        // Its line stayed in the log (the failed batch could not be cut off again): writing it
        // again would give the message a second closing record.
        if (e instanceof AuditWriteFailed && e.inLog) return;
        if (tries >= CLOSING_TRIES) {
          this.lost = new AuditRecordLost(type, outcome, e);
          return;
        }
      }
    }
  }
}
