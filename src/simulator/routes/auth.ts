/**
 * The authentication routes (operations 1-5: the three logins, refresh, logout) and how the
 * simulator tells who is calling any /api operation: the bearer access token, the account
 * behind a call, and the key of its rate-limit bucket.
 * docs/simulator.md#sessions-and-tokens, docs/simulator.md#rate-limit
 */
import type { IncomingMessage } from "node:http";
import { jwtVerify, SignJWT } from "jose";
import { LoginByEmailRequest, LoginRequest, RefreshSessionRequest, type OperationId } from "../../spec/schemas.js";
import { rememberIssued } from "../issued.js";
import { SimState, type AuthFailure, type AuthSuccess } from "../state.js";
import {
  errorResult,
  parseJson,
  validationError,
  type Call,
  type Operation,
  type Result,
  type Runtime,
} from "./common.js";

type AuthOperation = "login" | "loginByPhone" | "loginByEmail" | "refreshToken" | "logout";

export function authOperations(rt: Runtime): Record<AuthOperation, Operation> {
  const { state } = rt;

  async function signAccess(sub: string, sid: string, jti: string, iat: number, exp: number | null): Promise<string> {
    const jwt = new SignJWT({ sid }).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setJti(jti).setIssuedAt(iat);
    if (rt.subClaim) jwt.setSubject(sub);
    if (exp !== null) jwt.setExpirationTime(exp);
    const token = await jwt.sign(rt.secret);
    rememberIssued(token);
    return token;
  }

  async function login(call: Call, opts: { withExp: boolean }): Promise<Result> {
    const json = parseJson(call);
    if (!json.ok) return json.result;
    const schema = call.route.operation === "loginByEmail" ? LoginByEmailRequest : LoginRequest;
    const parsed = schema.safeParse(json.value);
    if (!parsed.success) return validationError(parsed.error);
    const body = parsed.data as { phoneNumber?: string; email?: string; password: string };
    const account = state.accountByIdentity(body);
    if (!account || !SimState.passwordMatches(account, body.password)) {
      return errorResult(401, "wrong credentials");
    }
    const session = state.startSession(account.id);
    const issued = state.issueTokens(session, opts.withExp);
    const AccessToken = await signAccess(account.id, session.sid, issued.access.jti, issued.iat, issued.exp);
    call.issuedJti = issued.access.jti;
    return { status: 200, json: { AccessToken, RefreshToken: issued.refresh.token } };
  }

  async function refresh(call: Call, opts: { withExp: boolean }): Promise<Result> {
    const json = parseJson(call);
    if (!json.ok) return json.result;
    const parsed = RefreshSessionRequest.safeParse(json.value);
    if (!parsed.success) return validationError(parsed.error);
    const consumed = state.consumeRefreshToken(parsed.data.refreshToken);
    if (!consumed.ok) return errorResult(consumed.status, consumed.detail);
    const issued = state.issueTokens(consumed.session, opts.withExp);
    const AccessToken = await signAccess(
      consumed.session.accountId,
      consumed.session.sid,
      issued.access.jti,
      issued.iat,
      issued.exp,
    );
    call.issuedJti = issued.access.jti;
    return { status: 200, json: { AccessToken, RefreshToken: issued.refresh.token } };
  }

  return {
    login: { auth: "none", run: login },
    loginByPhone: { auth: "none", run: login },
    loginByEmail: { auth: "none", run: login },
    refreshToken: { auth: "none", run: refresh },
    logout: {
      auth: "bearer",
      run: (_call, accountId) => {
        state.endSession(accountId, "logged-out");
        return { status: 200 };
      },
    },
  };
}

/** The claims of the request's bearer token, or why there are none usable. */
export async function decodeBearer(
  rt: Runtime,
  req: IncomingMessage,
): Promise<{ claims: Call["claims"]; error: string | null }> {
  const header = req.headers.authorization;
  if (!header) return { claims: null, error: "Authorization header missing" };
  const m = /^Bearer ([A-Za-z0-9_.~+/=-]+)$/.exec(header.trim());
  if (!m) return { claims: null, error: "Authorization header is not 'Bearer <token>'" };
  // Tokens issued without `sub` (subClaim: false) name their account through their record.
  const withAccount = (claims: NonNullable<Call["claims"]>): Call["claims"] =>
    rt.subClaim || claims.sub !== undefined || typeof claims.jti !== "string"
      ? claims
      : { ...claims, sub: rt.state.accountOfAccessToken(claims.jti) ?? undefined };
  try {
    const { payload } = await jwtVerify(m[1], rt.secret, {
      algorithms: ["HS256"],
      currentDate: new Date(rt.state.now()),
    });
    return { claims: withAccount(payload), error: null };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ERR_JWT_EXPIRED") {
      // The signature was valid: keep the claims so the log and faults know the account.
      const payload = JSON.parse(Buffer.from(m[1].split(".")[1] ?? "", "base64url").toString("utf8")) as NonNullable<
        Call["claims"]
      >;
      return { claims: withAccount(payload), error: "access token has expired" };
    }
    return { claims: null, error: "access token is invalid" };
  }
}

/** Whether a bearer call's token belongs to a live session (and whose). */
export function authorize(rt: Runtime, call: Call): AuthSuccess | AuthFailure {
  if (call.authError !== null || call.claims === null)
    return { ok: false, reason: call.authError ?? "access token is invalid" };
  return rt.state.authorize(call.claims);
}

/** Resolves the account behind a call without changing any state (for faults, log, rate limit). */
export function resolveAccount(rt: Runtime, call: Call): string | null {
  const { state } = rt;
  const op = call.route.operation;
  if (call.bearer) return typeof call.claims?.sub === "string" ? call.claims.sub : null;
  let value: unknown;
  try {
    value = JSON.parse(call.body.toString("utf8"));
  } catch {
    return null;
  }
  if (value === null || typeof value !== "object") return null;
  const body = value as Record<string, unknown>;
  if (op === "refreshToken") {
    return typeof body.refreshToken === "string"
      ? (state.refreshTokens.get(body.refreshToken)?.accountId ?? null)
      : null;
  }
  if (op === "loginByEmail")
    return typeof body.email === "string" ? (state.accountByIdentity({ email: body.email })?.id ?? null) : null;
  return typeof body.phoneNumber === "string"
    ? (state.accountByIdentity({ phoneNumber: body.phoneNumber })?.id ?? null)
    : null;
}

/** The rate-limit bucket key: the account when known, else the login identity or the peer. */
export function rateKey(call: Call): string {
  if (call.accountId) return `account:${call.accountId}`;
  const op = call.route.operation;
  if (op === "login" || op === "loginByPhone" || op === "loginByEmail") {
    try {
      const body = JSON.parse(call.body.toString("utf8")) as Record<string, unknown>;
      const identity = op === "loginByEmail" ? body?.email : body?.phoneNumber;
      if (typeof identity === "string") return `login:${identity.toLowerCase()}`;
    } catch {
      // not JSON: falls back to the peer
    }
  }
  return `peer:${call.remote}`;
}

/** Counts a successful login or refresh (GET /_sim/counts). */
export function countSuccess(rt: Runtime, op: OperationId, result: Result): void {
  if (result.status !== 200) return;
  if (op === "login" || op === "loginByPhone" || op === "loginByEmail") rt.state.counters.logins++;
  if (op === "refreshToken") rt.state.counters.refreshes++;
}
