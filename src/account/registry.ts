/**
 * One session per account in this runtime, whatever the flows look like
 * (docs/session.md#one-session-per-account): every `door-account` node whose base URL and login (method and phone
 * number or email) give the same `accountKey` shares one AccountCore (client, session,
 * device directory): one login, one refresh in flight, one stored pair. Nodes are members of
 * the account's entry; the entry is keyed by the account key, never by a node id, so copied
 * config nodes, imported examples and config nodes cloned for subflow instances meet here.
 *
 * - Members whose settings differ (another password, another session store) are a
 *   configuration conflict: the core is closed (its pair stays stored), every member shows the
 *   conflict, nothing logs in until the settings agree again.
 * - A member leaving (removed or not) leaves the others alone. With no member left, the core
 *   is parked and the next node of the same account takes it back (no login): a node replaced
 *   by a copy with another id in the same deploy, a redeploy, a cloned subflow config node.
 *   When the deploy has started every node (`deployStarted`, Node-RED's "flows:started") and
 *   no node of the account came back, the account is no longer used: it logs out and deletes
 *   the stored pair. Node-RED's `removed` flag cannot decide this: a node removed in a deploy
 *   may be replaced by another of the same login, and the config node of a deleted subflow
 *   instance is never told it was removed. Without a deploy (the runtime stops), the parked
 *   core just closes after PARK_MS and its pair stays for the next start.
 * - Redeploy clears a halt (docs/session.md#halts-and-reconnect): a member joining after a member left gives a halted
 *   core one fresh start (one login); a healthy core is taken back as it is (no login).
 * - The editor may sign in before the first deploy (`signIn`): the entry then has no member
 *   and waits SIGN_IN_PARK_MS for the deploy; its pair is stored under the account key, so
 *   even after that the deploy resumes it without a login. A sign-in checks the password typed
 *   with a login, never by resuming a stored pair, and never logs in over a session that runs.
 *
 * Knows nothing of Node-RED: members are described by the hooks they pass.
 * The texts that name who holds a session, and the check for two logins of one service
 * account, are in holders.ts.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { AccountCore } from "./account-core.js";
import { accountEvents, forgetIdleEventHubs } from "./events.js";
import { holderOf, otherHolders, otherLiveLogin, recogniseSameAccount } from "./holders.js";
import { HALTED_STATES, type SessionLog } from "../session/session.js";
import { quoted } from "../util/text.js";

/** How long a core with no member waits for the node a redeploy starts next. */
export const PARK_MS = 15_000;
/** How long a core signed in from the editor waits for the deploy (its pair stays stored after). */
export const SIGN_IN_PARK_MS = 10 * 60_000;

/** What makes two nodes of one account the same session: hashes, never a secret in clear. */
export interface Settings {
  /** Hash of the password. */
  password: string;
  /** Hash of the session store choice (kind, URL, prefix, Redis password). */
  store: string;
}

export function settingsOf(password: string, store: unknown): Settings {
  const h = (v: unknown) => createHash("sha256").update(JSON.stringify(v)).digest("hex");
  return { password: h(["door-access password", password]), store: h(store) };
}

/** Whether two settings name the same password: their hashes compared in constant time. */
export function samePassword(a: Settings, b: Settings): boolean {
  const x = Buffer.from(a.password, "hex");
  const y = Buffer.from(b.password, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}

const same = (a: Settings, b: Settings) => samePassword(a, b) && a.store === b.store;

export interface MemberHooks {
  /** The node's id: a later instance of the same node id compares its login and password with this one's. */
  readonly id: string;
  /** The node's name (or id), for the conflict text. */
  readonly label: string;
  readonly log: SessionLog;
  /** The member's core or conflict changed: show it (status fan-out). */
  changed(): void;
}

interface Entry {
  key: string;
  settings: Settings;
  core: AccountCore | null;
  members: Set<Member>;
  /** Its last member left in a deploy: if none is back when that deploy has started, log out. */
  leftByDeploy: boolean;
  parkTimer: NodeJS.Timeout | null;
  conflict: string | null;
  /** A member left since the last join: the next join gives a halted core a fresh start. */
  freshStartDue: boolean;
}

/**
 * Every account of this runtime: its entries by account key, what each door-account node was
 * last deployed with, and the service's waits that outlive a core. One object, so that a test
 * or a shutdown forgets it in one place (`closeAllParked`).
 */
class Registry {
  readonly entries = new Map<string, Entry>();

  /**
   * What each door-account node (by id) was last deployed with: its account key (base URL and
   * login) and password hash. A deploy in which a node's login or password changed checks the
   * new values with one login instead of resuming a stored pair
   * (docs/session.md#changed-credentials-are-checked). In memory: a restart resumes the pair that
   * was obtained with the credentials Node-RED had when it stopped.
   */
  readonly lastDeployed = new Map<string, { key: string; settings: Settings }>();

  /**
   * The service's Retry-After on a login or refresh is the account's (its login's), not a session
   * core's: a core that replaces another of the same account (a password typed anew at Sign in, a
   * deploy with other settings, a node deleted and added again) sends nothing before the wait the
   * service gave the one it replaces (docs/session.md#rate-limits). Account key → monotonic ms.
   */
  readonly heldUntil = new Map<string, number>();

  /** The one way an entry is made: registered under its account key, with no core and no member yet. */
  newEntry(key: string, settings: Settings): Entry {
    const entry: Entry = {
      key,
      settings,
      core: null,
      members: new Set(),
      leftByDeploy: false,
      parkTimer: null,
      conflict: null,
      freshStartDue: false,
    };
    this.entries.set(key, entry);
    return entry;
  }

  /** An entry with no member goes: forgotten, its core closed (its pair stays stored), the service's wait kept. */
  drop(entry: Entry): void {
    clearPark(entry);
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    this.retire(entry.key, entry.core);
    void entry.core?.close().catch(() => undefined);
  }

  /** Records `id`'s login and password; true when an earlier instance of it had others. */
  credentialsChanged(id: string, key: string, settings: Settings): boolean {
    const before = this.lastDeployed.get(id);
    this.lastDeployed.set(id, { key, settings });
    return before !== undefined && (before.key !== key || !samePassword(before.settings, settings));
  }

  /**
   * A core of `key` is closed: keep the service's wait it was under, for the next core of the
   * account: the session's login wait and the client's hold of the account after any 429 with
   * Retry-After (docs/session.md#a-retry-after-holds-the-account).
   */
  retire(key: string, core: AccountCore | null | undefined): void {
    if (!core) return;
    const at = Math.max(core.session.rateLimitedUntil ?? 0, core.client.heldUntilMonotonic ?? 0);
    if (at > 0) this.heldUntil.set(key, Math.max(at, this.heldUntil.get(key) ?? 0));
  }

  /** A new core of `key`: it waits what the service asked a core it replaces to wait, and sends nothing before. */
  holdNew(key: string, core: AccountCore): void {
    const at = this.heldUntil.get(key);
    if (at === undefined) return;
    if (at > core.clock.monotonic()) {
      core.session.holdUntil(at);
      core.client.holdUntil(at);
    } else this.heldUntil.delete(key);
  }
}

const registry = new Registry();

export class Member {
  private left = false;
  constructor(
    private readonly entry: Entry,
    readonly settings: Settings,
    readonly make: (log: SessionLog, checkCredentials: boolean) => AccountCore,
    readonly hooks: MemberHooks,
    /** This node's login or password changed in the deploy that started it: a core it starts logs in first. */
    readonly checkCredentials = false,
  ) {}

  /** The shared core, or null while the account is in conflict (or closed). */
  get core(): AccountCore | null {
    return this.entry.conflict || this.left ? null : this.entry.core;
  }

  get conflict(): string | null {
    return this.left ? null : this.entry.conflict;
  }

  /** The node stops: `removed` when it was deleted. Resolves when a logout (if any) is done. */
  leave(removed: boolean): Promise<void> {
    if (this.left) return Promise.resolve();
    this.left = true;
    // Leaves now; a throw (from a member's status hook) rejects the promise instead of escaping.
    return new Promise((resolve) => {
      leave(this.entry, this, removed);
      resolve();
    });
  }
}

/**
 * The log of an entry's core: its first member's, so messages name a live node; `orElse` (a
 * sign-in's) while it has none, so that a core signed in from the editor and then deployed speaks
 * with the deployed node's name.
 */
function entryLog(entry: Entry, orElse: SessionLog | null = null): SessionLog {
  const first = (): SessionLog | null => entry.members.values().next().value?.hooks.log ?? orElse;
  return {
    info: (m) => first()?.info(m),
    warn: (m) => first()?.warn(m),
    error: (m) => first()?.error(m),
  };
}

function clearPark(entry: Entry): void {
  if (entry.parkTimer) clearTimeout(entry.parkTimer);
  entry.parkTimer = null;
}

function park(entry: Entry, ms: number): void {
  clearPark(entry);
  entry.parkTimer = setTimeout(() => {
    entry.parkTimer = null;
    if (entry.members.size > 0 || registry.entries.get(entry.key) !== entry) return;
    registry.drop(entry);
  }, ms);
  entry.parkTimer.unref();
}

/** Lets a new core recognise another login to its service account, and name it in a halt. */
function watchCore(entry: Entry, core: AccountCore): void {
  core.session.otherHolders = () => otherHolders(registry.entries.values(), entry, core);
  core.session.on("state", (snap: { state: string }) => {
    if (snap.state === "ready") recogniseSameAccount(registry.entries.values(), entry, core, entryLog);
  });
}

function startCore(entry: Entry, first: Member): void {
  const core = first.make(
    entryLog(entry),
    [...entry.members].some((m) => m.checkCredentials),
  );
  registry.holdNew(entry.key, core);
  entry.core = core;
  watchCore(entry, core);
  // After the current deploy step has created its nodes (all of one flow are created without
  // yielding to timers): a conflicting copy created in the same deploy then stops it before
  // anything was sent.
  setImmediate(() => {
    if (entry.core === core && !entry.conflict && !core.isClosed) void core.startAndWarm();
  });
}

/** Re-evaluates an entry with members: conflict, or one core for the settings they share. */
function reconcile(entry: Entry): void {
  const members = [...entry.members];
  if (members.length === 0) return;
  const first = members[0];
  const differing = members.filter((m) => !same(m.settings, first.settings));
  if (differing.length > 0) {
    const what = members.some((m) => !samePassword(m.settings, first.settings))
      ? "a different password"
      : "a different session store";
    const names = [...new Set(members.map((m) => quoted(m.hooks.label, 60)))].join(", ");
    const text = `configuration conflict: door-account nodes ${names} use the same login on the same base URL with ${what}; one account has one session, so none of them logs in until their settings agree`;
    if (entry.conflict !== text) {
      entry.conflict = text;
      if (entry.core) {
        // Keep the stored pair: the account resumes it once the settings agree.
        registry.retire(entry.key, entry.core);
        void entry.core.close().catch(() => undefined);
        entry.core = null;
      }
      for (const m of members) m.hooks.log.error(text);
    }
    // After the deploy step has created its nodes, so a door-events node of this deploy hears it.
    setImmediate(() => {
      if (entry.conflict === text) accountEvents(entry.key).configurationConflict(text);
    });
  } else {
    const wasConflict = entry.conflict !== null;
    entry.conflict = null;
    if (entry.core && !same(entry.settings, first.settings)) {
      registry.retire(entry.key, entry.core);
      void entry.core.close().catch(() => undefined);
      entry.core = null;
    }
    entry.settings = first.settings;
    if (!entry.core || entry.core.isClosed) startCore(entry, first);
    if (wasConflict) first.hooks.log.info("the configuration conflict is resolved; the account's session starts again");
  }
  for (const m of members) m.hooks.changed();
}

/** A door-account node of this account starts. */
export function join(
  key: string,
  settings: Settings,
  make: (log: SessionLog, checkCredentials: boolean) => AccountCore,
  hooks: MemberHooks,
): Member {
  const changed = registry.credentialsChanged(hooks.id, key, settings);
  let entry = registry.entries.get(key);
  if (entry && entry.members.size === 0 && !same(entry.settings, settings)) {
    // A parked (or signed-in) core with other settings: the account was changed, not copied.
    registry.drop(entry);
    entry = undefined;
  }
  entry ??= registry.newEntry(key, settings);
  clearPark(entry);
  entry.leftByDeploy = false;
  const member = new Member(entry, settings, make, hooks, changed);
  entry.members.add(member);
  const core = entry.core;
  if (
    entry.freshStartDue &&
    core &&
    !core.isClosed &&
    same(entry.settings, settings) &&
    HALTED_STATES.has(core.session.state)
  ) {
    // docs/session.md#halts-and-reconnect: a redeploy clears a halt with one fresh start, one login.
    hooks.log.info("redeployed while halted: one fresh login");
    void core.session.reconnect().catch(() => undefined);
  }
  entry.freshStartDue = false;
  reconcile(entry);
  return member;
}

function leave(entry: Entry, member: Member, removed: boolean): void {
  void removed; // see the header: whether the account is still used is known once the deploy has started
  entry.members.delete(member);
  entry.freshStartDue = true;
  if (entry.members.size > 0) {
    reconcile(entry); // the one that left may have been the conflicting one
    return;
  }
  if (registry.entries.get(entry.key) !== entry) return;
  if (entry.conflict) {
    registry.entries.delete(entry.key);
    return;
  }
  entry.leftByDeploy = true;
  park(entry, PARK_MS);
}

/**
 * A deploy has started every node (Node-RED's "flows:started"): an account whose last node
 * left in it and none came back is no longer used: log out and delete the stored pair
 * (docs/session.md#one-session-per-account: deleting the last node of an account logs out and
 * deletes the stored pair). Resolves when
 * the logouts are done.
 */
export async function deployStarted(): Promise<void> {
  const unused = [...registry.entries.values()].filter((e) => e.members.size === 0 && e.leftByDeploy);
  for (const e of unused) {
    clearPark(e);
    registry.entries.delete(e.key);
  }
  await Promise.all(
    unused.map((e) => {
      const core = e.core;
      e.core = null;
      registry.retire(e.key, core);
      return core ? core.destroy().catch(() => undefined) : Promise.resolve();
    }),
  );
}

/** The running core of an account (not in conflict), if this runtime has one. */
export function runningCore(key: string): AccountCore | null {
  const e = registry.entries.get(key);
  if (!e || e.conflict || !e.core || e.core.isClosed) return null;
  return e.core;
}

export type SignInResult =
  /** A core of this account runs here with the password typed: no login; its state answers. */
  | { kind: "running"; core: AccountCore }
  /** No session of this account ran here: a new core, started with a login that checks the password. */
  | { kind: "started"; core: AccountCore }
  | { kind: "conflict"; message: string }
  /**
   * A core of this account runs here with another password. `live`: it holds a session, which a
   * login to check the password typed would end (a successful one supersedes it): nothing is sent.
   */
  | { kind: "password-differs"; holder: string; live: boolean }
  /**
   * No session of this login runs here, but one of another login (a deployed account, an earlier
   * sign-in) runs on the same base URL: it may be the same service account, which a login would
   * take from it. Nothing is sent; the operator may confirm (`confirm: true`). `holder` names it.
   */
  | { kind: "other-login"; holder: string };

/**
 * The editor signs in (docs/session.md#signing-in-from-the-editor). A sign-in never reports
 * success for a password that is not the account's, and never logs in while a session of the
 * account runs here (a login would end it):
 * - a core of the account runs (deployed, or parked, or signed in earlier) and holds a session:
 *   with the same password (compared as hashes in constant time) it is used as it is, and its
 *   state answers; with another password nothing is sent (`password-differs`);
 * - a deployed core without a session (halted, unreachable) with the same password is used as
 *   it is (its own rules say when it may log in again); with another, `password-differs`;
 * - a parked core without a session, not halted, with the same settings: used as it is (it keeps
 *   its spacing of logins and the service's Retry-After);
 * - otherwise, while a session of another login (another method, phone number or email) runs
 *   here on the same base URL, nothing is sent unless `confirm` (`other-login`): the runtime
 *   cannot know before a login whether two logins are one service account, and a login to the
 *   same account would end that session;
 * - otherwise a new core starts with a login (`make(log, true)`), even when a pair is stored: a
 *   resumed pair checks no password. It waits SIGN_IN_PARK_MS for the deploy.
 */
export function signIn(
  key: string,
  settings: Settings,
  make: (log: SessionLog, checkCredentials: boolean) => AccountCore,
  log: SessionLog,
  target: { baseUrl: string; confirm: boolean },
): SignInResult {
  let entry = registry.entries.get(key);
  const open = entry?.core && !entry.core.isClosed ? entry.core : null;
  if (entry && entry.members.size > 0) {
    if (entry.conflict) return { kind: "conflict", message: entry.conflict };
    if (entry.settings.store !== settings.store) {
      return {
        kind: "conflict",
        message: `configuration conflict: ${holderOf(entry)} uses this login with another session store; nothing was sent`,
      };
    }
    if (!samePassword(entry.settings, settings))
      return { kind: "password-differs", holder: holderOf(entry), live: open?.session.live ?? false };
    if (open) return { kind: "running", core: open };
    return {
      kind: "conflict",
      message: `${holderOf(entry)} of this login is not running (a deploy is under way): nothing was sent; try again in a moment`,
    };
  }
  if (entry && entry.members.size === 0 && open && !HALTED_STATES.has(open.session.state)) {
    if (open.session.live && !samePassword(entry.settings, settings))
      return { kind: "password-differs", holder: holderOf(entry), live: true };
    if (same(entry.settings, settings)) {
      entry.leftByDeploy = false;
      park(entry, SIGN_IN_PARK_MS);
      return { kind: "running", core: open };
    }
  }
  if (!target.confirm) {
    const other = otherLiveLogin(registry.entries.values(), key, target.baseUrl);
    if (other) return { kind: "other-login", holder: other };
  }
  if (entry && entry.members.size === 0) registry.drop(entry);
  entry = registry.newEntry(key, settings);
  const core = make(entryLog(entry, log), true);
  registry.holdNew(key, core);
  entry.core = core;
  watchCore(entry, core);
  void core.startAndWarm();
  park(entry, SIGN_IN_PARK_MS);
  return { kind: "started", core };
}

/** Forgets a signed-in core with no member (its login was refused): the next sign-in starts afresh. */
export function dropSignIn(key: string, core: AccountCore): void {
  const e = registry.entries.get(key);
  if (!e || e.core !== core || e.members.size > 0) return;
  registry.drop(e);
}

/**
 * For shutdown and tests: close every core that has no member (parked or signed in), and forget
 * what only this process's memory held, as a restart does: what the nodes were deployed with and
 * the service's waits (docs/session.md#a-retry-after-holds-the-account: a restart forgets a hold)
 * and what the account's events learnt (docs/events.md#session: a start says session/ready).
 */
export async function closeAllParked(): Promise<void> {
  registry.lastDeployed.clear();
  const idle = [...registry.entries.values()].filter((e) => e.members.size === 0);
  for (const e of idle) {
    clearPark(e);
    registry.entries.delete(e.key);
  }
  await Promise.all(idle.map((e) => (e.core ? e.core.close().catch(() => undefined) : Promise.resolve())));
  registry.heldUntil.clear();
  forgetIdleEventHubs();
}

/** For tests: how many accounts have an entry, and their members. */
export function registrySnapshot(): { key: string; members: number; conflict: boolean; running: boolean }[] {
  return [...registry.entries.values()].map((e) => ({
    key: e.key,
    members: e.members.size,
    conflict: e.conflict !== null,
    running: !!e.core && !e.core.isClosed,
  }));
}
