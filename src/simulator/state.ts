/**
 * The simulator's state: accounts, sessions, tokens, devices, rate-limit buckets, the
 * request log and the counters. Every mutation here is synchronous, so two concurrent
 * requests can never both consume the same refresh token.
 */
import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { rememberIssued } from "./issued.js";
import type { DeviceState, RequestLogEntry, Seed, SeedAccount, SeedDoor, SeedKey, UnlockRecord } from "./types.js";

export const REFRESH_TOKEN_PATTERN = /^rt_[A-Za-z0-9_-]{43}$/;
export const MAX_LOG_ENTRIES = 100_000;
const MAX_TOKEN_RECORDS = 200_000;
const MAX_UNLOCKS_PER_DEVICE = 10_000;

export interface Session {
  sid: string;
  accountId: string;
  active: boolean;
  /** Why the session ended: "superseded" or "logged-out". */
  endReason: string | null;
  createdAt: number;
  /** The session's one usable refresh token (rotating), if any. */
  refreshToken: string | null;
  /** jti of the access tokens issued in this session (newest last, bounded). */
  accessJtis: string[];
}

export interface AccessTokenRecord {
  jti: string;
  sid: string;
  accountId: string;
  /** Expiry in ms since epoch, or null for a token issued without `exp`. */
  expiresAt: number | null;
  revoked: boolean;
  forcedExpired: boolean;
}

export interface RefreshTokenRecord {
  token: string;
  sid: string;
  accountId: string;
  expiresAt: number;
  state: "active" | "consumed" | "revoked";
  forcedExpired: boolean;
}

export interface LockView {
  id: number;
  name: string;
}

export interface DoorRecord {
  seed: SeedDoor;
  locks: LockView[];
  online: boolean;
  unlocks: UnlockRecord[];
}

export type AuthFailure = { ok: false; reason: string };
export type AuthSuccess = { ok: true; accountId: string; sid: string; jti: string };

export interface RateLimit {
  capacity: number;
  refillPerSec: number;
}

/** Bounded insertion-ordered map: the oldest entries go first when it is full. */
function boundedSet<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.set(key, value);
  while (map.size > max) {
    const oldest = map.keys().next().value as K;
    map.delete(oldest);
  }
}

/** A change to a door (control surface): see SimState.editDoor. */
export interface DoorChange {
  name?: string;
  locationId?: number;
  newId?: number;
  remove?: boolean;
}

/** A control request that names something impossible (answered 400 on the HTTP surface). */
export class SimInputError extends Error {}

export class SimState {
  readonly accounts = new Map<string, SeedAccount>();
  readonly byPhone = new Map<string, SeedAccount>();
  readonly byEmail = new Map<string, SeedAccount>();
  readonly doors = new Map<number, DoorRecord>();
  readonly companyName = new Map<number, string>();
  readonly locationById = new Map<number, { id: number; companyId: number; name: string }>();
  readonly keys = new Map<string, SeedKey>(); // `${accountId}/${deviceId}`

  readonly sessions = new Map<string, Session>(); // sid -> session
  readonly currentSession = new Map<string, string>(); // accountId -> sid
  readonly accessTokens = new Map<string, AccessTokenRecord>(); // jti -> record
  readonly refreshTokens = new Map<string, RefreshTokenRecord>(); // token -> record

  readonly log: RequestLogEntry[] = [];
  private seq = 0;
  readonly counters = { logins: 0, refreshes: 0, unlocks: 0 };

  private rateLimit: RateLimit | false;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    seed: Seed,
    readonly now: () => number,
    readonly accessTtlSec: number,
    readonly refreshTtlSec: number,
    rateLimit: RateLimit | false,
  ) {
    this.rateLimit = rateLimit;
    for (const c of seed.companies) this.companyName.set(c.id, c.name);
    for (const l of seed.locations) this.locationById.set(l.id, { ...l });
    for (const a of seed.accounts) {
      this.accounts.set(a.id, { ...a });
      if (a.phoneNumber) this.byPhone.set(a.phoneNumber, a);
      if (a.email) this.byEmail.set(a.email.toLowerCase(), a);
    }
    for (const d of seed.doors) {
      const locks = (d.locks ?? [{ id: 1 }]).map((l, i) => ({
        id: l.id,
        name: l.name ?? (i === 0 ? "Main lock" : `Lock ${l.id}`),
      }));
      this.doors.set(d.id, { seed: { ...d }, locks, online: d.online ?? true, unlocks: [] });
    }
    for (const k of seed.keys) this.keys.set(`${k.accountId}/${k.deviceId}`, { ...k });
  }

  // ---------------------------------------------------------------- accounts and login

  /** Finds the account a login identity names (phone exactly, email case-insensitively). */
  accountByIdentity(identity: { phoneNumber?: string; email?: string }): SeedAccount | undefined {
    if (identity.phoneNumber !== undefined) return this.byPhone.get(identity.phoneNumber);
    if (identity.email !== undefined) return this.byEmail.get(identity.email.toLowerCase());
    return undefined;
  }

  static passwordMatches(account: SeedAccount, password: string): boolean {
    const a = Buffer.from(account.password, "utf8");
    const b = Buffer.from(password, "utf8");
    return a.length === b.length && timingSafeEqual(a, b);
  }

  requireAccount(accountId: string): SeedAccount {
    const account = this.accounts.get(accountId);
    if (!account) throw new Error(`unknown account ${JSON.stringify(accountId)}`);
    return account;
  }

  /**
   * Starts a new session for the account. Any previous session is superseded: its access
   * tokens answer 401 and its refresh token is revoked (refresh answers 401).
   */
  startSession(accountId: string): Session {
    this.endSession(accountId, "superseded");
    const session: Session = {
      sid: randomUUID(),
      accountId,
      active: true,
      endReason: null,
      createdAt: this.now(),
      refreshToken: null,
      accessJtis: [],
    };
    boundedSet(this.sessions, session.sid, session, MAX_TOKEN_RECORDS);
    this.currentSession.set(accountId, session.sid);
    return session;
  }

  /** Ends the account's current session, if any, revoking its refresh tokens. */
  endSession(accountId: string, reason: string): void {
    const sid = this.currentSession.get(accountId);
    if (sid === undefined) return;
    this.currentSession.delete(accountId);
    const session = this.sessions.get(sid);
    if (session) {
      session.active = false;
      session.endReason = reason;
    }
    const rt = session?.refreshToken ? this.refreshTokens.get(session.refreshToken) : undefined;
    if (rt && rt.state === "active") rt.state = "revoked";
  }

  hasSession(accountId: string): boolean {
    const sid = this.currentSession.get(accountId);
    return sid !== undefined && this.sessions.get(sid)?.active === true;
  }

  /** Registers a new access token (the JWT is signed by the caller) and a new refresh token. */
  issueTokens(
    session: Session,
    withExp: boolean,
  ): { access: AccessTokenRecord; refresh: RefreshTokenRecord; iat: number; exp: number | null } {
    const iat = Math.floor(this.now() / 1000);
    const exp = withExp ? iat + this.accessTtlSec : null;
    const access: AccessTokenRecord = {
      jti: randomUUID(),
      sid: session.sid,
      accountId: session.accountId,
      expiresAt: exp === null ? null : exp * 1000,
      revoked: false,
      forcedExpired: false,
    };
    boundedSet(this.accessTokens, access.jti, access, MAX_TOKEN_RECORDS);
    const refresh: RefreshTokenRecord = {
      token: "rt_" + randomBytes(32).toString("base64url"),
      sid: session.sid,
      accountId: session.accountId,
      expiresAt: this.now() + this.refreshTtlSec * 1000,
      state: "active",
      forcedExpired: false,
    };
    boundedSet(this.refreshTokens, refresh.token, refresh, MAX_TOKEN_RECORDS);
    rememberIssued(refresh.token);
    session.refreshToken = refresh.token;
    session.accessJtis.push(access.jti);
    if (session.accessJtis.length > 1000) session.accessJtis.splice(0, session.accessJtis.length - 1000);
    return { access, refresh, iat, exp };
  }

  /**
   * Checks a refresh token and, when valid, consumes it at once (synchronously, so a second
   * concurrent refresh with the same token sees it consumed).
   * 400: malformed, unknown or already consumed. 401: expired or revoked.
   */
  consumeRefreshToken(
    token: string,
  ): { ok: true; session: Session } | { ok: false; status: 400 | 401; detail: string } {
    if (!REFRESH_TOKEN_PATTERN.test(token)) return { ok: false, status: 400, detail: "refresh token is malformed" };
    const rt = this.refreshTokens.get(token);
    if (!rt) return { ok: false, status: 400, detail: "refresh token is unknown" };
    if (rt.state === "consumed") return { ok: false, status: 400, detail: "refresh token was already used" };
    const session = this.sessions.get(rt.sid);
    if (rt.state === "revoked" || !session || !session.active) {
      return { ok: false, status: 401, detail: "refresh token was revoked; log in again" };
    }
    if (rt.forcedExpired || rt.expiresAt <= this.now()) {
      return { ok: false, status: 401, detail: "refresh token has expired; log in again" };
    }
    rt.state = "consumed";
    return { ok: true, session };
  }

  /**
   * Decides whether a signature-checked access token (by its jti/sid/sub) is usable now.
   * Note: after a refresh, the previous access token stays valid until its own `exp` as
   * long as the session lives; only a new login, logout or a control action ends it.
   */
  authorize(claims: { sub?: unknown; sid?: unknown; jti?: unknown }): AuthSuccess | AuthFailure {
    if (typeof claims.jti !== "string" || typeof claims.sub !== "string" || typeof claims.sid !== "string") {
      return { ok: false, reason: "access token lacks sub, sid or jti" };
    }
    const rec = this.accessTokens.get(claims.jti);
    if (!rec || rec.accountId !== claims.sub || rec.sid !== claims.sid)
      return { ok: false, reason: "access token is unknown" };
    const session = this.sessions.get(rec.sid);
    if (!session || !session.active) {
      return {
        ok: false,
        reason:
          session?.endReason === "logged-out"
            ? "session has ended (logged out)"
            : "session was superseded by a newer login",
      };
    }
    if (rec.revoked) return { ok: false, reason: "access token was revoked" };
    if (rec.forcedExpired || (rec.expiresAt !== null && rec.expiresAt <= this.now())) {
      return { ok: false, reason: "access token has expired" };
    }
    return { ok: true, accountId: rec.accountId, sid: rec.sid, jti: rec.jti };
  }

  /** The account an access token (by its jti) was issued to, or null when it is unknown. */
  accountOfAccessToken(jti: string): string | null {
    return this.accessTokens.get(jti)?.accountId ?? null;
  }

  private current(accountId: string): Session | undefined {
    const sid = this.currentSession.get(accountId);
    return sid === undefined ? undefined : this.sessions.get(sid);
  }

  private currentAccessTokens(accountId: string): AccessTokenRecord[] {
    const session = this.current(accountId);
    if (!session) return [];
    return session.accessJtis
      .map((jti) => this.accessTokens.get(jti))
      .filter((t): t is AccessTokenRecord => t !== undefined);
  }

  expireAccess(accountId: string): void {
    this.requireAccount(accountId);
    for (const t of this.currentAccessTokens(accountId)) t.forcedExpired = true;
  }

  revokeAccess(accountId: string): void {
    this.requireAccount(accountId);
    for (const t of this.currentAccessTokens(accountId)) t.revoked = true;
  }

  expireRefresh(accountId: string): void {
    this.requireAccount(accountId);
    const session = this.current(accountId);
    const rt = session?.refreshToken ? this.refreshTokens.get(session.refreshToken) : undefined;
    if (rt && rt.state === "active") rt.forcedExpired = true;
  }

  /** Someone else logs in with the account: the current session is superseded. */
  supersede(accountId: string): void {
    this.requireAccount(accountId);
    const session = this.startSession(accountId);
    this.issueTokens(session, true); // tokens nobody here holds
  }

  // ---------------------------------------------------------------- devices

  doorCompany(door: DoorRecord): number | undefined {
    return this.locationById.get(door.seed.locationId)?.companyId;
  }

  keyFor(accountId: string, deviceId: number): SeedKey | undefined {
    return this.keys.get(`${accountId}/${deviceId}`);
  }

  /** An account sees its own company's doors and doors with a key shared to it. */
  isVisible(accountId: string, door: DoorRecord): boolean {
    const account = this.accounts.get(accountId);
    if (!account) return false;
    return this.doorCompany(door) === account.companyId || this.keyFor(accountId, door.seed.id) !== undefined;
  }

  visibleDoors(accountId: string): DoorRecord[] {
    return [...this.doors.values()].filter((d) => this.isVisible(accountId, d)).sort((a, b) => a.seed.id - b.seed.id);
  }

  /** The Device record as the API answers it, with extra fields the spec does not list. */
  deviceView(door: DoorRecord): Record<string, unknown> {
    const location = this.locationById.get(door.seed.locationId);
    const last = door.unlocks.at(-1);
    return {
      id: door.seed.id,
      name: door.seed.name,
      locationId: door.seed.locationId,
      locationName: location?.name ?? null,
      companyName: location ? (this.companyName.get(location.companyId) ?? null) : null,
      doorType: door.seed.doorType ?? null,
      online: door.online,
      // Fields the spec does not list, so clients are tested for tolerance:
      locks: door.locks.map((l) => ({ id: l.id, name: l.name })),
      firmware: "sim-2.4.1",
      lastUnlockAt: last ? new Date(last.at).toISOString() : null,
    };
  }

  locationsView(accountId: string): Record<string, unknown>[] {
    const ids = new Set<number>();
    const account = this.accounts.get(accountId);
    for (const l of this.locationById.values()) if (account && l.companyId === account.companyId) ids.add(l.id);
    const doors = this.visibleDoors(accountId);
    for (const d of doors) ids.add(d.seed.locationId);
    return [...ids]
      .sort((a, b) => a - b)
      .map((id) => {
        const l = this.locationById.get(id)!;
        return {
          id: l.id,
          name: l.name,
          companyName: this.companyName.get(l.companyId) ?? null,
          deviceCount: doors.filter((d) => d.seed.locationId === id).length,
        };
      });
  }

  /**
   * Changes a door in place, the way an operator's back office would between two messages:
   * rename it, move it to another location, give it a new id (keys follow the door), or remove
   * it from the service. Unlocks already recorded stay with the door.
   */
  editDoor(deviceId: number, change: DoorChange): void {
    const door = this.requireDoor(deviceId);
    if (change.remove) {
      this.doors.delete(deviceId);
      for (const k of [...this.keys.keys()]) if (k.endsWith(`/${deviceId}`)) this.keys.delete(k);
      return;
    }
    if (change.name !== undefined) door.seed.name = change.name;
    if (change.locationId !== undefined) {
      if (!this.locationById.has(change.locationId)) throw new SimInputError(`no location ${change.locationId}`);
      door.seed.locationId = change.locationId;
    }
    if (change.newId !== undefined && change.newId !== deviceId) {
      if (this.doors.has(change.newId)) throw new SimInputError(`device ${change.newId} exists already`);
      this.doors.delete(deviceId);
      door.seed.id = change.newId;
      this.doors.set(change.newId, door);
      for (const [k, key] of [...this.keys.entries()]) {
        if (key.deviceId !== deviceId) continue;
        this.keys.delete(k);
        this.keys.set(`${key.accountId}/${change.newId}`, { ...key, deviceId: change.newId });
      }
    }
  }

  requireDoor(deviceId: number): DoorRecord {
    const door = this.doors.get(deviceId);
    if (!door) throw new Error(`unknown device ${deviceId}`);
    return door;
  }

  recordUnlock(door: DoorRecord, accountId: string, lockId: number | null): void {
    door.unlocks.push({ at: this.now(), accountId, lockId });
    if (door.unlocks.length > MAX_UNLOCKS_PER_DEVICE)
      door.unlocks.splice(0, door.unlocks.length - MAX_UNLOCKS_PER_DEVICE);
    this.counters.unlocks++;
  }

  deviceState(deviceId: number): DeviceState {
    const door = this.requireDoor(deviceId);
    const unlocks = door.unlocks.map((u) => ({ ...u }));
    return {
      id: door.seed.id,
      name: door.seed.name,
      online: door.online,
      lastUnlock: unlocks.at(-1) ?? null,
      unlocks,
    };
  }

  // ---------------------------------------------------------------- rate limit

  setRateLimit(limit: RateLimit | false): void {
    this.rateLimit = limit;
    this.buckets.clear();
  }

  /** Takes one token from the key's bucket; returns the Retry-After seconds when empty. */
  takeRateToken(key: string): { ok: true } | { ok: false; retryAfterSec: number } {
    const limit = this.rateLimit;
    if (limit === false) return { ok: true };
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { tokens: limit.capacity, at: now };
      boundedSet(this.buckets, key, bucket, 100_000);
    } else {
      const elapsed = Math.max(0, now - bucket.at) / 1000;
      bucket.tokens = Math.min(limit.capacity, bucket.tokens + elapsed * limit.refillPerSec);
      bucket.at = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    const retryAfterSec =
      limit.refillPerSec > 0 ? Math.max(1, Math.ceil((1 - bucket.tokens) / limit.refillPerSec)) : 3600;
    return { ok: false, retryAfterSec };
  }

  // ---------------------------------------------------------------- request log

  nextSeq(): number {
    return ++this.seq;
  }

  /** Requests received and not answered yet (their entries are logged when they end). */
  readonly open = new Set<RequestLogEntry>();

  pushLog(entry: RequestLogEntry): void {
    this.open.delete(entry);
    this.log.push(entry);
    if (this.log.length > MAX_LOG_ENTRIES) this.log.splice(0, this.log.length - MAX_LOG_ENTRIES);
  }
}
