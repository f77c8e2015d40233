/**
 * What a failure without an HTTP answer means (docs/session.md#connection-errors): the texts of
 * a connection problem (where, why, what to fix), and the mapping of an undici/socket failure or
 * a cancellation to a DoorApiError (was the request sent, did it time out?). Used by client.ts.
 */
import type { OperationId } from "../spec/schemas.js";
import { clip } from "../util/text.js";
import { DoorApiError, type FailureKind } from "./errors.js";

const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** Certificate checks that fail the TLS handshake (Node's codes, from OpenSSL's verify results). */
const CERT_TEXT: Readonly<Record<string, string>> = {
  CERT_HAS_EXPIRED: "the service's certificate has expired",
  CERT_NOT_YET_VALID: "the service's certificate is not valid yet",
  DEPTH_ZERO_SELF_SIGNED_CERT: "the service's certificate is self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "the service's certificate chain ends in a self-signed certificate that is not trusted",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the service's certificate cannot be verified (its issuer is missing)",
  UNABLE_TO_GET_ISSUER_CERT: "the issuer of the service's certificate is unknown",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "the issuer of the service's certificate is not trusted here",
  CERT_REVOKED: "the service's certificate is revoked",
  ERR_TLS_CERT_ALTNAME_INVALID: "the service's certificate is for another host name",
};

const seconds = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`);

/** A TLS failure: a certificate check, or a handshake error (ERR_TLS_*, ERR_SSL_*, EPROTO). */
function isTlsCode(code: string): boolean {
  return code in CERT_TEXT || /^(ERR_TLS_|ERR_SSL_|CERT_)/.test(code) || code === "EPROTO";
}

/**
 * What a connection failure means for the user, where, and what to fix: the text of every
 * DoorApiError without an HTTP answer (docs/session.md#connection-errors). Built from the base
 * URL (which never holds a user name or password) and the error code alone.
 */
export function connectionProblem(
  baseUrl: URL,
  code: string,
  connectTimeoutMs: number,
  headersTimeoutMs: number,
  answeredBefore = false,
): { problem: string; brief: string; sent: boolean } {
  // Clipped: a base URL typed or imported may be of any length, and this text reaches a node's
  // status, a message and the editor.
  const where = clip(baseUrl.href.replace(/\/+$/, ""), 120, "…");
  const host = clip(baseUrl.hostname, 80, "…");
  const cannot = (why: string, fix: string, brief: string) => ({
    problem: `cannot connect to ${where} (${why}): ${fix}`,
    brief,
    sent: false,
  });
  // The service answered at this base URL before: it is right, and the service (or the way to
  // it) is what is down. Said so instead of sending the user to check a URL that works.
  if (answeredBefore && (code === "ECONNREFUSED" || code === "EHOSTUNREACH" || code === "UND_ERR_CONNECT_TIMEOUT")) {
    const why =
      code === "ECONNREFUSED"
        ? "connection refused"
        : code === "EHOSTUNREACH"
          ? "no route to the host"
          : `no connection within ${seconds(connectTimeoutMs)}`;
    return {
      problem: `the service at ${where} is not reachable (${why}); it answered before: check that the service and the network to it are up`,
      brief: "service not reachable",
      sent: false,
    };
  }
  switch (code) {
    case "ECONNREFUSED":
      return cannot("connection refused", "check the base URL", "connection refused");
    case "ENOTFOUND":
      return cannot(`host name ${host} not found`, "check the base URL", "host name not found");
    case "EAI_AGAIN":
      return cannot(
        `host name ${host} could not be resolved: the name server did not answer`,
        "check the base URL and this machine's DNS",
        "host name not resolved",
      );
    case "EHOSTUNREACH":
      return cannot("no route to the host", "check the base URL and the network", "host unreachable");
    case "ENETUNREACH":
      return cannot("the network is unreachable", "check this machine's network connection", "network unreachable");
    case "UND_ERR_CONNECT_TIMEOUT":
      return cannot(
        `no connection within ${seconds(connectTimeoutMs)}`,
        "check the base URL and the network (a firewall may drop the connection)",
        "connect timed out",
      );
    case "UND_ERR_HEADERS_TIMEOUT":
      return {
        problem: `no answer from ${where} within ${seconds(headersTimeoutMs)}`,
        brief: "no answer in time",
        sent: true,
      };
    case "UND_ERR_BODY_TIMEOUT":
      return { problem: `the answer from ${where} stalled`, brief: "the answer stalled", sent: true };
    case "UND_ERR_SOCKET":
    case "ECONNRESET":
      return { problem: `the connection to ${where} closed without an answer`, brief: "connection closed", sent: true };
  }
  if (isTlsCode(code)) {
    if (CERT_TEXT[code])
      return cannot(
        `TLS: ${CERT_TEXT[code]}, ${code}`,
        "check the base URL and the service's certificate",
        "TLS certificate refused",
      );
    if (code === "ERR_SSL_WRONG_VERSION_NUMBER" || code === "EPROTO") {
      return cannot(
        `TLS handshake failed, ${code}: the port does not answer TLS`,
        "check the base URL's scheme and port",
        "TLS handshake failed",
      );
    }
    return cannot(
      `TLS handshake failed, ${code}`,
      "check the base URL and the service's certificate",
      "TLS handshake failed",
    );
  }
  return {
    problem: `the connection to ${where} failed${code ? ` (${code})` : ""}`,
    brief: "connection failed",
    sent: true,
  };
}

export function abortedError(op: OperationId, cause: unknown): DoorApiError {
  return new DoorApiError({
    operation: op,
    kind: "aborted",
    mayHaveReached: false,
    message: `${op}: cancelled`,
    cause,
  });
}

function errorCode(e: unknown): string {
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur && typeof cur === "object"; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string") return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return "";
}

/** Maps an undici/socket failure to a DoorApiError: was it sent, did it time out? */
export function transportError(
  op: OperationId,
  e: unknown,
  signal: AbortSignal | undefined,
  baseUrl: URL,
  timeouts: { connectMs: number; headersMs: number },
  answeredBefore = false,
): DoorApiError {
  if (signal?.aborted || errorCode(e) === "UND_ERR_ABORTED" || (e as Error)?.name === "AbortError") {
    return new DoorApiError({
      operation: op,
      kind: "aborted",
      mayHaveReached: true,
      message: `${op}: cancelled`,
      cause: e,
    });
  }
  const code = errorCode(e);
  const { problem, brief, sent } = connectionProblem(
    baseUrl,
    code,
    timeouts.connectMs,
    timeouts.headersMs,
    answeredBefore,
  );
  const notSent = NOT_SENT_CODES.has(code) || isTlsCode(code) || !sent;
  const kind: FailureKind =
    code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT"
      ? "timeout"
      : "network";
  return new DoorApiError({
    operation: op,
    kind,
    mayHaveReached: !notSent,
    message: `${op}: ${problem}`,
    problem,
    brief,
    code: code || null,
    cause: e,
  });
}
