/**
 * The unlock outcome table of the contract, in one place: which failure becomes which
 * `outcome` word, which status it reports, and whether the door may have opened.
 *
 * | outcome             | status | when                                                     | request sent |
 * |---------------------|--------|----------------------------------------------------------|--------------|
 * | accepted            | 200    | command accepted and forwarded                           | yes          |
 * | invalid-input       | null   | bad deviceId, lockId, door name, actor                   | no           |
 * | denied              | null   | an access rule of the node refused it (`reason`)         | no           |
 * | retained-rejected   | null   | msg.retain === true while rejectRetained is on           | no           |
 * | session-halted      | null   | the account is halted                                    | no           |
 * | service-unreachable | null   | no session: login fails on 5xx/network, none possible now| no           |
 * | unauthorized        | 401    | 401 again after one refresh and one replay               | yes          |
 * | forbidden           | 403    | no key to the door or lock                               | yes          |
 * | not-found           | 404    | unknown device or lock (the device list is re-fetched)   | yes          |
 * | rate-limited        | 429    | retryAfter: seconds until the package sends again        | yes          |
 * | unreachable         | 502    | device or gateway unreachable                            | yes          |
 * | offline             | 503    | device offline or out of range                           | yes          |
 * | timeout             | 504    | device did not answer in time; mayHaveOpened             | yes          |
 * | network-error       | null   | no HTTP answer after the request left; mayHaveOpened     | maybe        |
 * | error               | other  | anything else                                            | yes          |
 *
 * door-devices and door-status use the same words for their `msg.outcome`.
 *
 * Every rate-limited outcome carries `retryAfter`, the whole seconds until the package sends
 * again, and its message names that number once, as "retry after N s" (docs/session.md#rate-limits):
 * - a request answered 429 (a PUT, a device read): the service's Retry-After; without one, the
 *   spec's next back-off step (500 ms doubling per attempt made), in whole seconds;
 * - a login or refresh answered 429: what is left of the session's wait (RenewalFailedError);
 * - a device or location list fetch answered 429: when a message may make the list be fetched
 *   again (the list's back-off, never before the Retry-After).
 */
import { DoorApiError } from "../client/errors.js";
import { BACKOFF } from "../client/retry-policy.js";
import { DeviceListUnavailableError, isRateLimit } from "../doors/list-policy.js";
import { RenewalFailedError, SessionHaltedError, SessionUnavailableError } from "../session/errors.js";

export type Outcome =
  | "accepted"
  | "invalid-input"
  | "denied"
  | "retained-rejected"
  | "session-halted"
  | "service-unreachable"
  | "unauthorized"
  | "forbidden"
  | "not-found"
  | "rate-limited"
  | "unreachable"
  | "offline"
  | "timeout"
  | "network-error"
  | "error";

const BY_STATUS: Readonly<Record<number, Outcome>> = {
  401: "unauthorized",
  403: "forbidden",
  404: "not-found",
  429: "rate-limited",
  502: "unreachable",
  503: "offline",
  504: "timeout",
};

export interface Classified {
  outcome: Outcome;
  status: number | null;
  retryAfter: number | null;
  /** The command may have reached the device although no success was seen. */
  mayHaveOpened: boolean;
  /** Whether a request left for the service. */
  sent: boolean;
  message: string;
}

/** Maps any failure of a service call (or of getting a session for it) to an outcome. */
export function classifyFailure(error: unknown, isUnlock: boolean): Classified {
  if (error instanceof SessionHaltedError) {
    return {
      outcome: "session-halted",
      status: null,
      retryAfter: null,
      mayHaveOpened: false,
      sent: false,
      message: error.message,
    };
  }
  if (error instanceof DeviceListUnavailableError) {
    // Still in the back-off after a failed list fetch, or this message's fetch was rate-limited:
    // nothing was sent for the door.
    const c = { ...classifyFailure(error.cause, false), sent: false, mayHaveOpened: false, message: error.message };
    if (c.outcome !== "rate-limited") return c;
    const left = Math.ceil(error.retryInMs / 1000);
    return {
      ...c,
      retryAfter: left,
      message: `the ${error.list} is unavailable (${limitedText(error.cause)}); ${retryAfterText(left)}`,
    };
  }
  if (error instanceof RenewalFailedError && error.rateLimited) {
    return {
      outcome: "rate-limited",
      status: 429,
      retryAfter: error.retryAfter,
      mayHaveOpened: false,
      sent: false,
      message: error.message,
    };
  }
  if (error instanceof SessionUnavailableError) {
    return {
      outcome: "service-unreachable",
      status: null,
      retryAfter: error.retryAfter,
      mayHaveOpened: false,
      sent: false,
      message: error.message,
    };
  }
  if (error instanceof DoorApiError) {
    if (error.kind === "http" && error.status === 429) {
      const left = error.retryAfter ?? Math.ceil((BACKOFF.baseMs * 2 ** (error.attempts - 1)) / 1000);
      return {
        outcome: "rate-limited",
        status: 429,
        retryAfter: left,
        mayHaveOpened: false,
        sent: true,
        message: `${limitedText(error)}; ${retryAfterText(left)}`,
      };
    }
    if (error.kind === "http" && error.status !== null) {
      const outcome = BY_STATUS[error.status] ?? "error";
      return {
        outcome,
        status: error.status,
        retryAfter: error.retryAfter,
        mayHaveOpened: isUnlock && error.status === 504,
        sent: true,
        message: error.message,
      };
    }
    if (error.kind === "network" || error.kind === "timeout" || error.kind === "aborted") {
      return {
        outcome: "network-error",
        status: null,
        retryAfter: null,
        mayHaveOpened: isUnlock && error.mayHaveReached,
        sent: error.mayHaveReached,
        message: error.message,
      };
    }
    // invalid-response: the service answered 2xx with a body we could not use.
    return {
      outcome: "error",
      status: error.status,
      retryAfter: null,
      mayHaveOpened: false,
      sent: error.mayHaveReached,
      message: error.message,
    };
  }
  return {
    outcome: "error",
    status: null,
    retryAfter: null,
    mayHaveOpened: false,
    sent: false,
    message: (error as Error)?.message ?? String(error),
  };
}

/** How every rate-limited text names its wait: once, in whole seconds. */
export function retryAfterText(seconds: number): string {
  return `retry after ${seconds} s`;
}

/** What the service limited, in words that name no wait (the caller adds the one wait). */
function limitedText(error: unknown): string {
  if (error instanceof RenewalFailedError && error.limited !== null) return error.limited;
  // The service's title is left out: it is its text, and may name a wait of its own.
  if (error instanceof DoorApiError) return `${error.operation}: the service answered 429 (rate-limited)`;
  return isRateLimit(error) ? "rate-limited by the service (429)" : ((error as Error)?.message ?? String(error));
}

/**
 * A rate-limited message that sent nothing (its renewal or its device list was limited): status
 * 429 as the outcome table pairs them, and retryAfter, which its text names
 * (docs/session.md#rate-limits).
 */
export function rateLimited(c: Classified): { status: 429; retryAfter?: number } {
  return c.retryAfter !== null ? { status: 429, retryAfter: c.retryAfter } : { status: 429 };
}
