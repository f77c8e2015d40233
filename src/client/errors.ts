import type { OperationId } from "../spec/schemas.js";

/**
 * What went wrong, in words a caller can branch on:
 * - `http`: the service answered with a non-2xx status (`status` is set);
 * - `network`: the connection failed or closed without an HTTP answer;
 * - `timeout`: no (complete) answer within the configured time;
 * - `invalid-response`: a 2xx answer whose body is not what the spec says (not JSON,
 *   wrong shape, wrong content type, too large);
 * - `aborted`: the caller gave up (node closing).
 */
export type FailureKind = "http" | "network" | "timeout" | "invalid-response" | "aborted";

/**
 * The one error type of the service client. Callers branch on `kind` and `status`, never on
 * the message text. `title`/`detail` come from the service's ErrorResponse and are meant for
 * logs only. No message ever contains a token, password or phone number: the client builds
 * them from the operation name, the status and the failure kind alone.
 */
export class DoorApiError extends Error {
  override readonly name = "DoorApiError";
  readonly operation: OperationId;
  readonly kind: FailureKind;
  /** HTTP status, or null when there was no HTTP answer. */
  readonly status: number | null;
  readonly title: string | null;
  readonly detail: string | null;
  /** Seconds to wait, from `Retry-After` (seconds or HTTP date), when the service sent one. */
  readonly retryAfter: number | null;
  /**
   * Whether the request may have reached the service (and, for an unlock, the device):
   * false only when we know it never left (connection refused, connect timeout).
   */
  readonly mayHaveReached: boolean;
  /** How many attempts were made (the retry policy may make several for idempotent calls). */
  readonly attempts: number;
  /**
   * What failed, without the operation's name: for a connection that failed, where and what to
   * fix ("cannot connect to http://127.0.0.1:18788 (connection refused): check the base URL").
   */
  readonly problem: string;
  /** A few words for a node status ("connection refused"), when the failure has them. */
  readonly brief: string | null;
  /** The system or undici error code of a failed connection (ECONNREFUSED ...), for logs. */
  readonly code: string | null;
  /**
   * Nothing was sent: the service had asked this account to wait (an earlier 429 with
   * Retry-After) and the wait was not over (docs/session.md#a-retry-after-holds-the-account).
   * Status 429, `retryAfter` the whole seconds left, `mayHaveReached` false.
   */
  readonly held: boolean;

  constructor(init: {
    operation: OperationId;
    kind: FailureKind;
    message: string;
    status?: number | null;
    title?: string | null;
    detail?: string | null;
    retryAfter?: number | null;
    mayHaveReached: boolean;
    attempts?: number;
    problem?: string;
    brief?: string | null;
    code?: string | null;
    held?: boolean;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.operation = init.operation;
    this.kind = init.kind;
    this.status = init.status ?? null;
    this.title = init.title ?? null;
    this.detail = init.detail ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.mayHaveReached = init.mayHaveReached;
    this.attempts = init.attempts ?? 1;
    this.problem =
      init.problem ??
      (init.message.startsWith(`${init.operation}: `) ? init.message.slice(init.operation.length + 2) : init.message);
    this.brief = init.brief ?? null;
    this.code = init.code ?? null;
    this.held = init.held === true;
  }

  withAttempts(attempts: number): DoorApiError {
    return new DoorApiError({ ...this, message: this.message, attempts, cause: this.cause });
  }
}
