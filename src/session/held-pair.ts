/**
 * The token pair the session holds, and what it knows about tokens (docs/session.md#renewal,
 * docs/session.md#a-401-and-its-replay): the pair in use (its lifetime read by token-pair.ts), an
 * access token the service answered 401 to (never sent again), a refresh token known dead (never
 * adopted again), the `sub` of the last token that had one, and whether the service is known to
 * accept the credentials. Owned here and changed only through its methods.
 */
import type { Clock } from "../util/clock.js";
import { type LivePair, isExpired, readPair, renewalDue } from "./token-pair.js";
import type { StoredPair } from "./token-store.js";
import type { SessionLog, SessionTimings } from "./types.js";

export class HeldPair {
  private live: LivePair | null = null;
  private rejected: string | null = null;
  private dead: string | null = null;
  private subjectSeen: string | null = null;
  private credentialsProven = false;

  constructor(
    private readonly clock: Clock,
    private readonly timings: SessionTimings,
    private readonly log: SessionLog,
    /** A pair read from this store proves the credentials (docs/session.md#changed-credentials-are-checked). */
    private readonly storeProvesCredentials: boolean,
  ) {}

  /** The pair in use, or null. */
  get pair(): LivePair | null {
    return this.live;
  }

  /** An access token the service answered 401 to (not sent again while the store is away). */
  get rejectedAccess(): string | null {
    return this.rejected;
  }

  /** A refresh token known dead (rejected, or of a superseded session): never adopted again. */
  get deadRefresh(): string | null {
    return this.dead;
  }

  /** The `sub` claim of the last access token that had one (compared, never shown). */
  get subject(): string | null {
    return this.subjectSeen;
  }

  /** A login with the credentials succeeded (and none was refused since), or the store proves them. */
  get proven(): boolean {
    return this.credentialsProven;
  }

  /** A new pair in use (token-pair.ts reads its lifetime, and its `sub` when it has one). */
  adopt(pair: StoredPair): void {
    const { live, subject } = readPair(pair, this.timings.minRenewalIntervalMs);
    if (subject !== null) this.subjectSeen = subject;
    if (live.exp === null)
      this.log.warn("session: the access token carries no readable exp claim; renewing on the 36 h schedule only");
    this.live = live;
  }

  /** A pair read from the store (ours from an earlier run, or another instance's). */
  adoptStored(pair: StoredPair): void {
    this.adopt(pair);
    if (this.storeProvesCredentials) this.credentialsProven = true;
  }

  /** A login's answer: the credentials were accepted (true) or refused (false). */
  loginAnswered(accepted: boolean): void {
    this.credentialsProven = accepted;
  }

  /** No pair is held any more (its refresh token rejected, a login failed, the account deleted). */
  drop(): void {
    this.live = null;
  }

  /** The service answered 401 to `accessToken`. */
  rejectAccess(accessToken: string): void {
    this.rejected = accessToken;
  }

  /** `refreshToken` is dead: never adopted again. */
  markDead(refreshToken: string): void {
    this.dead = refreshToken;
  }

  isExpired(): boolean {
    return isExpired(this.live, this.clock.now(), this.timings.expirySkewMs);
  }

  /** Due for renewal (docs/session.md#renewal): 36 h, or 3 h before `exp`, whichever is first. */
  needsRenewal(): boolean {
    if (!this.live) return true;
    return this.clock.now() >= renewalDue(this.live, this.timings);
  }

  /** Whether the pair's access token is the one the service answered 401 to. */
  get accessRejected(): boolean {
    return this.live !== null && this.live.accessToken === this.rejected;
  }

  /** The access token a call could use without a renewal (held, not expired, not answered 401), or null. */
  usableToken(): string | null {
    if (!this.live || this.isExpired() || this.accessRejected) return null;
    return this.live.accessToken;
  }
}
