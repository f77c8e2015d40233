/**
 * The sending phase of one unlock (src/unlock/unlock.ts): the one PUT, inside session.call
 * (docs/session.md#a-401-and-its-replay: renewed once and replayed once after a 401, nothing else
 * repeats it). Before it leaves, the pass's use is written (once, not again for the replay) and
 * the attempt record is on disk; the door's cooldown runs from the moment it leaves. What went
 * wrong becomes one outcome (src/unlock/outcome.ts), or a Refusal when nothing left.
 */
import { PassUseRefused } from "../passes/pass-book.js";
import { type Classified, classifyFailure, rateLimited } from "./outcome.js";
import { refusedBy } from "./pass-check.js";
import type { Go } from "./unlock-checks.js";
import { type Attempt, type Refusal, costTry, denial, refuse } from "./unlock-message.js";

/** The command was accepted, or it was sent and failed (classified), or nothing was sent. */
export type Sent = { kind: "accepted" } | { kind: "failed"; c: Classified } | Refusal;

export async function send(a: Attempt, go: Go, onSending?: () => void): Promise<Sent> {
  const { account } = a;
  let sends = 0;
  try {
    await account.session.call(async (token) => {
      // The pass's use: counted when the command is sent (a session that cannot give a token
      // takes none), once (not again for the replay), written before it leaves
      // (docs/passes.md#at-a-door-unlock).
      if (go.ticket !== null && sends === 0) {
        try {
          const { first } = await go.ticket.commit();
          a.base.pass = { id: a.pass!.id, ref: a.pass!.ref, first };
        } catch (e) {
          throw new PassUseError(e);
        }
      }
      // Every PUT, the 401 replay included, has its attempt record on disk before it leaves; the
      // replay's is marked `replay: true` (docs/audit-log.md#records). If the record cannot be
      // written, nothing is sent: an unaudited unlock is worse than none.
      try {
        await account.audit.attempt(sends > 0 ? { ...go.record, replay: true } : go.record);
      } catch (e) {
        throw new AuditWriteError((e as Error).message);
      }
      sends++;
      const put = account.client.unlock(token, go.door.deviceId, go.lockId);
      if (sends === 1) {
        // The command has left: the door's cooldown runs from now.
        go.slot?.sent(account.clock.now());
        try {
          onSending?.();
        } catch {
          /* a status display is not the command's business */
        }
      }
      await put;
    });
    return { kind: "accepted" };
  } catch (e) {
    return failed(a, go, e, sends);
  }
}

/** What a failure of the call means: sent and failed, or nothing sent (a Refusal). */
async function failed(a: Attempt, go: Go, e: unknown, sends: number): Promise<Sent> {
  if (e instanceof PassUseError) {
    // Another instance took the pass's last use, or the pass changed: refused as at the check.
    if (e.why instanceof PassUseRefused) return denial(await costTry(a, refusedBy("pass", e.why.message)));
    await costTry(a, refusedBy("pass", "not sent"));
    return refuse("error", `not sent: the pass's use could not be written (${(e.why as Error).message})`);
  }
  let c: Classified;
  if (e instanceof AuditWriteError) {
    c = {
      outcome: "error",
      status: null,
      retryAfter: null,
      mayHaveOpened: false,
      sent: false,
      message: `not sent: the audit log could not be written (${e.message})`,
    };
  } else {
    c = classifyFailure(e, true);
  }
  if (sends > 0 && c.outcome === "session-halted") {
    // The PUT was sent and answered 401 (nothing executed), and the renewal after it halted
    // the account (refresh rejected twice within the hour): no replay. The contract's word for
    // a request answered 401 is unauthorized. A renewal that failed on 429/5xx/network instead
    // stays rate-limited / service-unreachable (docs/session.md#a-401-and-its-replay).
    c = {
      ...c,
      outcome: "unauthorized",
      status: 401,
      sent: true,
      message: `the service answered 401 and the session could not be renewed: ${c.message}`,
    };
  } else if (sends > 0 && (c.outcome === "service-unreachable" || (c.outcome === "rate-limited" && !c.sent))) {
    c = { ...c, sent: true, mayHaveOpened: false };
  }
  if (sends === 0) go.slot?.release(); // nothing left: the next message for the door need not wait
  if (sends === 0 && !c.sent) {
    // A pass's code that sent nothing told the sender it is real: a try (docs/passes.md#how-hard-a-code-is-to-guess).
    await costTry(a, refusedBy("pass", "not sent"));
    return refuse(c.outcome, c.message, c.outcome === "rate-limited" ? rateLimited(c) : {});
  }
  if (c.outcome === "not-found") {
    // Re-fetch the list so the door-name mapping follows the door; the command is not repeated.
    void a.account.directory.refreshAfterNotFound(go.door.identity).catch(() => undefined);
  }
  return { kind: "failed", c };
}

class AuditWriteError extends Error {}
class PassUseError extends Error {
  constructor(readonly why: unknown) {
    super("the pass's use was not taken");
  }
}
