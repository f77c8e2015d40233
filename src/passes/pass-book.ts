/**
 * What an account's guest passes are kept in (docs/passes.md#where-passes-are-kept), wherever they
 * are kept: the PassBook interface, the shapes of a new pass and of a change, the errors, and the
 * making of a pass and its code that both books share. The books: a file in this runtime
 * (file-pass-book.ts) or the account's Redis store shared by every instance (redis-pass-book.ts).
 * A code is never stored: only its HMAC under the account's pass key.
 */
import {
  type BookingInfo,
  type Bookings,
  type Pass,
  type PassDoor,
  type PassRefusal,
  type PassView,
  codeHash,
  hoursOf,
  storedHoursReadable,
  newCode,
  newPassId,
} from "./pass.js";
import type { ScheduleWindow } from "../util/week-schedule.js";

/** Passes over (expired, used up or revoked) for this long are dropped from the file. */
export const KEEP_ENDED_MS = 30 * 24 * 3600_000;
/** At most this many passes per account (live or kept). */
export const MAX_PASSES = 20_000;
/** Tries of a change that met another instance's change of the same pass (Redis). */
export const CHANGE_TRIES = 5;

export interface NewPass {
  guest: string;
  doors: PassDoor[];
  from: string;
  until: string;
  uses: number | null;
  ref: string | null;
  /** The door-pass node whose calendar makes it. */
  source?: string;
  booking?: BookingInfo;
  /** The door-pass node a flow's issue went through. */
  node?: string;
  /** Weekly hours and their zone (docs/passes.md#issue); absent: at any hour. */
  schedule?: ScheduleWindow[];
  timeZone?: string;
  /** The door-pass node whose calendar's turnover windows bound it (docs/passes.md#between-guests-the-turnover-window). */
  turnover?: string;
}

/** A pass for a calendar's booking: the door-pass node that reads the calendar, and the booking's ref. */
export type BookingPass = NewPass & { source: string; ref: string };

/** What a calendar may change of a pass it made: its code stays. */
export interface PassChange {
  guest: string;
  doors: PassDoor[];
  from: string;
  until: string;
  booking?: BookingInfo;
}

/** A use taken from a pass at the check: committed when the command leaves, released when not. */
export interface PassTicket {
  readonly pass: Pass;
  /** Writes the use before the command leaves; rejects (nothing may be sent) when it cannot be written. */
  commit(): Promise<{ first: boolean }>;
  release(): void;
}

export { passKeySealer } from "./pass-key.js";

export class PassBookFull extends Error {}

/**
 * What a calendar read's writes carry (docs/passes.md#from-a-booking-calendar): the calendar (its
 * door-pass node id) and the stamp its read was given as it began (readStamp). Once a later read
 * of that calendar has begun, on any instance, the book refuses the write with LaterReadBegun: an
 * older answer never undoes a newer one.
 */
export interface ReadFence {
  source: string;
  stamp: number;
}

/** A calendar read's write refused: a later read of that calendar has begun. Nothing was written. */
export class LaterReadBegun extends Error {
  constructor(source: string) {
    super(`a later read of calendar ${source} has begun: this read's change was not written`);
  }
}

/** The store refused a use taken at the check (another instance took the last one, or the pass changed): nothing may be sent. */
export class PassUseRefused extends Error {
  /** Why, in passCheck's words (`gone`: the pass no longer exists), for the guest's answer (docs/passes.md#at-a-door-unlock). */
  constructor(
    message: string,
    readonly why: PassRefusal | "gone" = "gone",
  ) {
    super(message);
  }
}

/**
 * An account's passes, wherever they are kept: a file in this runtime (FilePassBook), or the
 * account's Redis store shared by every instance (src/passes/redis-pass-book.ts).
 */
export interface PassBook extends Bookings {
  /** Reads the book once; later calls wait for the same read. Never rejects. */
  ready(): Promise<void>;
  /** Before a check: the book as every instance sees it now (the file's: as read). Rejects when the store cannot be reached. */
  refresh(): Promise<void>;
  issue(n: NewPass, codeLength: number): Promise<{ pass: Pass; code: string }>;
  /**
   * Issues the pass of a calendar's booking (node id and ref) only if no pass of that booking is
   * kept unrevoked, in one step whatever the number of instances or reads; null: that booking has
   * its pass already (nothing issued, no code to send). docs/passes.md#from-a-booking-calendar
   */
  issueBooking(n: BookingPass, codeLength: number, fence?: ReadFence): Promise<{ pass: Pass; code: string } | null>;
  /** Runs a read of calendar `source` (a door-pass node id) once the earlier ones of this runtime have ended. */
  serially<T>(source: string, read: () => Promise<T>): Promise<T>;
  /** The order of calendar `source`'s reads on every instance: a read's stamp, and whether none is later. */
  readStamp(source: string): Promise<number>;
  latestRead(source: string, stamp: number): Promise<boolean>;
  /**
   * `byCalendar`: the calendar that made the pass revokes it (its booking is gone or cancelled).
   * `fence`, on issueBooking, revoke and update: the write of a calendar read, refused with
   * LaterReadBegun once a later read of that calendar has begun.
   */
  revoke(by: { id?: string; ref?: string; byCalendar?: boolean; fence?: ReadFence }): Promise<Pass[]>;
  update(id: string, change: PassChange, fence?: ReadFence): Promise<Pass | null>;
  /**
   * A new code for the live pass `id` (docs/passes.md#a-new-code): the old one stops opening at
   * once, the uses taken are kept; null when there is no such live pass.
   */
  reissue(id: string, codeLength: number): Promise<{ pass: Pass; code: string } | null>;
  fromSource(source: string): Promise<Pass[]>;
  /**
   * How many revocations to run at once when many are made together (a deleted calendar node's
   * passes, docs/passes.md#deleting-a-calendar-node): the file book writes them in one go, the
   * Redis book reads back the changes of the others at each one.
   */
  readonly revokeAtOnce: number;
  list(): Promise<PassView[]>;
  /** How many live passes door-pass node `node` made (its calendar's and a flow's through it), without copying the book: its status. */
  liveOf(node: string): Promise<number>;
  /** The pass with this code (a live one first), or null. Synchronous: after refresh(). */
  find(code: string): Pass | null;
  /** Takes one use of an active pass at door `deviceId`, or null when none is left. Synchronous. */
  reserve(p: Pass, deviceId?: number): PassTicket | null;
  inFlight(id: string): number;
}

/** A new pass with a fresh code, unique among the live passes (`taken`); its code returned once. */
export function makePass(
  n: NewPass,
  key: Buffer,
  codeLength: number,
  now: number,
  taken: (hash: string) => boolean,
): { pass: Pass; code: string } {
  const { code, hash } = freshCode(key, codeLength, taken);
  const pass: Pass = {
    id: newPassId(),
    guest: n.guest,
    doors: n.doors.map((d) => ({ ...d })),
    from: n.from,
    until: n.until,
    uses: n.uses,
    used: 0,
    ref: n.ref,
    revoked: null,
    firstUsed: null,
    issued: new Date(now).toISOString(),
    hash,
    ...(n.source !== undefined ? { source: n.source } : {}),
    ...(n.booking !== undefined ? { booking: { ...n.booking } } : {}),
    ...(n.node !== undefined ? { node: n.node } : {}),
    ...hoursOf(n),
  };
  return { pass, code };
}

/** A fresh code and its hash, unique among the live passes (`taken`). */
export function freshCode(
  key: Buffer,
  codeLength: number,
  taken: (hash: string) => boolean,
): { code: string; hash: string } {
  for (let i = 0; i <= 50; i++) {
    const code = newCode(codeLength);
    const hash = codeHash(key, code);
    if (!taken(hash)) return { code, hash };
  }
  throw new PassBookFull(`no unused ${codeLength}-digit code found: use a longer codeLength`);
}

/** A pass read from a store: its fields as a pass has them. */
export function wellFormed(p: unknown): p is Pass {
  if (!p || typeof p !== "object") return false;
  const x = p as Record<string, unknown>;
  return (
    typeof x.id === "string" &&
    typeof x.guest === "string" &&
    Array.isArray(x.doors) &&
    typeof x.from === "string" &&
    typeof x.until === "string" &&
    typeof x.hash === "string" &&
    typeof x.used === "number" &&
    (x.uses === null || typeof x.uses === "number") &&
    storedHoursReadable(x)
  );
}
