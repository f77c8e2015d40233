/**
 * Public types of the door-access simulator (`door-access-sim`). Tests, the demo and the
 * benchmark program against these; the implementation lives beside this file.
 */
import type { OperationId } from "../spec/schemas.js";

export interface SeedCompany {
  id: number;
  name: string;
}
export interface SeedLocation {
  id: number;
  companyId: number;
  name: string;
}
export interface SeedLock {
  id: number;
  name?: string;
}
export interface SeedDoor {
  id: number;
  locationId: number;
  name: string;
  doorType?: string;
  online?: boolean;
  /** Locks on the device; a single-lock door may omit this (it then has one lock, id 1). */
  locks?: SeedLock[];
}
export interface SeedAccount {
  /** Opaque account id used in the request log and the control surface (never a secret). */
  id: string;
  companyId: number;
  phoneNumber?: string;
  email?: string;
  password: string;
}
export interface SeedKey {
  accountId: string;
  deviceId: number;
  /** Locks this key opens; absent = every lock of the device (and endpoint 7). */
  lockIds?: number[];
}
export interface Seed {
  companies: SeedCompany[];
  locations: SeedLocation[];
  doors: SeedDoor[];
  accounts: SeedAccount[];
  keys: SeedKey[];
}

export type FaultKind =
  | "429"
  | "500"
  | "502"
  | "503"
  | "504"
  /** Adds `latencyMs` before the call is handled normally. */
  | "latency"
  /** Reads the whole request, then destroys the socket without answering. */
  | "drop"
  /** 200 with a body that is not JSON. */
  | "non-json"
  /** 200 whose body stops half-way (Content-Length larger than what is sent, then close). */
  | "truncated"
  /** 200 with a JSON body of `sizeBytes` (default 8 MiB). */
  | "huge"
  /** 200 with a TokenPair body without its fields ({}), for login/refresh. */
  | "empty-token-pair"
  /** 200 TokenPair whose AccessToken is a JWT without `exp` (session really created). */
  | "jwt-without-exp"
  /** 200 with a correct body but `Content-Type: text/html`. */
  | "wrong-content-type"
  /** Sends the status line and headers only after `latencyMs`, body trickled afterwards. */
  | "slow-headers";

export interface FaultSpec {
  kind: FaultKind;
  /** Which operations it matches; absent = every /api operation. */
  endpoint?: OperationId | OperationId[];
  /** Only calls whose path names this device id. */
  deviceId?: number;
  /** Only calls made by this account (resolved from the bearer token or login identity). */
  accountId?: string;
  /** How many matching calls it affects (default 1). */
  count?: number;
  /** For 429 (and optionally 5xx): value of the Retry-After header (seconds or HTTP date). */
  retryAfter?: number | string;
  latencyMs?: number;
  sizeBytes?: number;
  /** For 504 and drop on unlock: whether the command is executed anyway (default false). */
  executed?: boolean;
  /** For a status fault (429, 5xx): the ErrorResponse's `title` instead of the status's usual one (any text, e.g. markup). */
  title?: string;
}

export interface RequestLogEntry {
  seq: number;
  method: string;
  /** URL path without query string; never contains a secret. */
  path: string;
  /** The spec's operationId, or "docs" / "control" / "unknown". */
  operation: OperationId | "docs" | "unknown";
  /** HTTP status answered; 0 when the connection was dropped without an answer. */
  status: number;
  /** Account id (from the token or the login identity) when known; never a phone or email. */
  accountId: string | null;
  deviceId: number | null;
  lockId: number | null;
  /** The fault applied to this call, if any. */
  fault: FaultKind | null;
  /** Simulator clock (ms since epoch) when the request arrived and when it was answered. */
  startedAt: number;
  endedAt: number;
  /** The id (`jti`) of the bearer access token the request carried, when it was one of ours. */
  tokenId: string | null;
  /** For a login or refresh answered 200: the id (`jti`) of the access token it issued. */
  issuedTokenId: string | null;
  /** Names (lower case) of the request headers received; never their values. */
  headers: string[];
  /** The `If-None-Match` header's value, when sent (an ETag, not a secret). */
  ifNoneMatch: string | null;
}

/**
 * What the simulator serves at /openapi.json and /openapi.yaml instead of its own description
 * (the pinned copy at /openapi.pinned.json never changes): another description, a body that is
 * not one, an error status, or no answer at all (the connection is closed).
 */
export type DescriptionOverride =
  | { description: Record<string, unknown> }
  | { body: string; contentType?: string }
  | { status: number }
  | { drop: true };

export interface UnlockRecord {
  at: number;
  accountId: string;
  lockId: number | null;
}

export interface DeviceState {
  id: number;
  name: string;
  online: boolean;
  lastUnlock: UnlockRecord | null;
  /** Every unlock the device executed, oldest first. */
  unlocks: UnlockRecord[];
}

export interface SimulatorOptions {
  host?: string; // default 127.0.0.1
  port?: number; // default 0 for startSimulator (the bin defaults to 8787)
  seed?: Seed; // default: the built-in demo seed
  accessTtlSec?: number; // default 48 h
  refreshTtlSec?: number; // default 30 days
  /** Token bucket per account; default generous (capacity 1000, 500 per second). */
  rateLimit?: { capacity: number; refillPerSec: number } | false;
  /** The control surface refuses a non-loopback host unless this is true. */
  allowRemoteControl?: boolean;
  /** Clock in ms since epoch (default Date.now); tests pass a fake clock's `now`. */
  now?: () => number;
  /** HS256 secret for access tokens (default: random per start). */
  jwtSecret?: string;
  /**
   * Whether access tokens name the account in a `sub` claim (default true). The spec does not
   * promise one: false serves tokens a client cannot tell accounts apart by.
   */
  subClaim?: boolean;
}

export interface SimulatorControl {
  inject(fault: FaultSpec): string;
  clearFaults(): void;
  setOnline(deviceId: number, online: boolean): void;
  /** Renames, moves (locationId), renumbers (newId) or removes a door between two messages. */
  editDevice(deviceId: number, change: { name?: string; locationId?: number; newId?: number; remove?: boolean }): void;
  /** Makes the account's current access token answer 401 as expired. */
  expireAccessToken(accountId: string): void;
  /** Makes the account's current access token answer 401 as revoked. */
  revokeAccessToken(accountId: string): void;
  /** Makes the account's current refresh token answer 401 as expired. */
  expireRefreshToken(accountId: string): void;
  /** Logs the account in from elsewhere: its current session is superseded. */
  supersede(accountId: string): void;
  requests(filter?: { operation?: string; accountId?: string; deviceId?: number }): RequestLogEntry[];
  /** Requests received and still being handled (status and endedAt not final yet). */
  inFlight(): RequestLogEntry[];
  resetRequests(): void;
  device(deviceId: number): DeviceState;
  /** Number of logins (endpoints 1-3, status 200) and refreshes (endpoint 4, status 200) so far. */
  counts(): { logins: number; refreshes: number; unlocks: number };
  /** Whether the account currently has an active session. */
  hasSession(accountId: string): boolean;
  setRateLimit(limit: { capacity: number; refillPerSec: number } | false): void;
  /** Serves a changed (or failing) live description; null = its own description again. */
  serveDescription(change: DescriptionOverride | null): void;
}

export interface RunningSimulator {
  /** e.g. http://127.0.0.1:40123 (no trailing slash) */
  url: string;
  control: SimulatorControl;
  close(): Promise<void>;
}
