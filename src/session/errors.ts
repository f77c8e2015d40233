/**
 * Why the session could not give a caller a token. Both carry the unlock outcome word of
 * the contract, so the flow nodes map them without looking at the text.
 */
export class SessionHaltedError extends Error {
  override readonly name = "SessionHaltedError";
  readonly outcome = "session-halted" as const;
  constructor(
    readonly state: string,
    message: string,
  ) {
    super(message);
  }
}

export class SessionUnavailableError extends Error {
  override readonly name: string = "SessionUnavailableError";
  readonly outcome = "service-unreachable" as const;
  /** Seconds until the session will try to log in again, when known. */
  constructor(
    message: string,
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

/**
 * The shared session store (Redis) could not be reached when a renewal needed its lock:
 * nothing was sent, and this instance did not log in on its own (that would end the
 * session of every other instance on the account).
 */
export class StoreUnreachableError extends SessionUnavailableError {
  override readonly name: string = "StoreUnreachableError";
  constructor(message: string) {
    super(message, null);
  }
}

/**
 * A call was answered 401 (or its token was known rejected) and the renewal that had to
 * follow did not give a new token (429, 5xx, network): nothing was executed, the call was not
 * replayed, and the account is not halted (docs/session.md#a-401-and-its-replay).
 * `rateLimited` with `retryAfter` when the service answered 429.
 */
export class RenewalFailedError extends SessionUnavailableError {
  override readonly name: string = "RenewalFailedError";
  /**
   * For a rate limit: what was limited, in words without the wait ("the session could not be
   * renewed: the refresh was rate-limited by the service (429)"), so a text that names another
   * wait (a device list's) can say it without naming two.
   */
  readonly limited: string | null;
  constructor(
    message: string,
    readonly rateLimited: boolean,
    retryAfter: number | null,
    limited: string | null = null,
  ) {
    super(message, retryAfter);
    this.limited = limited;
  }
}
