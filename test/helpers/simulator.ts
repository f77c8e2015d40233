/** Shared helpers of the simulator tests (not a test file itself). */
import { strict as assert } from "node:assert";
import { request } from "undici";
import { startSimulator, DEMO_ACCOUNT, OTHER_ACCOUNT } from "../../src/simulator/index.js";
import type { RunningSimulator, SimulatorOptions } from "../../src/simulator/index.js";

export { DEMO_ACCOUNT, OTHER_ACCOUNT };

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

export interface CallOptions {
  token?: string;
  json?: unknown;
  /** Raw body sent as is (with Content-Type application/json unless `contentType` says otherwise). */
  raw?: string | Buffer;
  contentType?: string | null;
  headers?: Record<string, string>;
}

export async function call(
  sim: RunningSimulator,
  method: string,
  path: string,
  opts: CallOptions = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Buffer | undefined;
  if (opts.json !== undefined) body = JSON.stringify(opts.json);
  if (opts.raw !== undefined) body = opts.raw;
  if (body !== undefined && opts.contentType !== null) headers["content-type"] = opts.contentType ?? "application/json";
  const res = await request(sim.url + path, { method: method as "GET", headers, body });
  const text = await res.body.text();
  let json: any;
  try {
    json = text.length ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

export type LoginVia = "login" | "loginByPhone" | "loginByEmail";
export const LOGIN_PATHS: Record<LoginVia, string> = {
  login: "/api/auth/login",
  loginByPhone: "/api/auth/login-by-phone",
  loginByEmail: "/api/auth/login-by-email",
};

export interface Pair {
  access: string;
  refresh: string;
}

export async function login(
  sim: RunningSimulator,
  via: LoginVia = "loginByPhone",
  account: { phoneNumber: string; email: string; password: string } = DEMO_ACCOUNT,
): Promise<Pair> {
  const body =
    via === "loginByEmail"
      ? { email: account.email, password: account.password }
      : { phoneNumber: account.phoneNumber, password: account.password };
  const r = await call(sim, "POST", LOGIN_PATHS[via], { json: body });
  assert.equal(r.status, 200, `login via ${via}: ${r.text}`);
  assert.equal(typeof r.json.AccessToken, "string");
  assert.equal(typeof r.json.RefreshToken, "string");
  return { access: r.json.AccessToken, refresh: r.json.RefreshToken };
}

export async function refresh(sim: RunningSimulator, refreshToken: unknown): Promise<Reply> {
  return call(sim, "POST", "/api/auth/refresh", { json: { refreshToken } });
}

/** The JWT payload, decoded without checking the signature. */
export function claims(jwt: string): Record<string, unknown> {
  const part = jwt.split(".")[1];
  assert.ok(part, "not a JWT");
  return JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
}

/** Asserts an ErrorResponse body with the given status. */
export function assertError(r: Reply, status: number, message?: string): void {
  assert.equal(r.status, status, `${message ?? ""} expected ${status}, got ${r.status}: ${r.text}`);
  assert.match(String(r.headers["content-type"]), /^application\/json/);
  assert.equal(r.json?.status, status, `ErrorResponse.status in ${r.text}`);
  assert.equal(typeof r.json?.title, "string");
  assert.equal(typeof r.json?.detail, "string");
}

/** A controllable clock for the simulator's `now` option. */
export class FakeClock {
  t = Date.parse("2030-01-01T00:00:00Z");
  now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

export async function withSim(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  return startSimulator({ host: "127.0.0.1", port: 0, ...options });
}
