/**
 * Who holds an account's session, in words, and other logins that may hold the same service
 * account (docs/session.md#one-session-per-account, docs/session.md#signing-in-from-the-editor).
 * The texts name door-account nodes (quoted) and their login method, never a login or a
 * password. Works on the registry's entries (registry.ts) through the `Holding` view, so it
 * does not import the registry.
 */
import type { AccountCore } from "./account-core.js";
import type { SessionLog } from "../session/session.js";
import { quoted } from "../util/text.js";

/** An account's entry in the registry, as far as these texts need it. */
export interface Holding {
  readonly key: string;
  readonly core: AccountCore | null;
  readonly conflict: string | null;
  readonly members: ReadonlySet<{ readonly hooks: { readonly label: string } }>;
}

/** Who holds an entry's session, for a sign-in's answer: its nodes' names, never a secret. */
export function holderOf(entry: Holding): string {
  const names = [...new Set([...entry.members].map((m) => quoted(m.hooks.label, 60)))];
  if (names.length === 0) return "an earlier sign-in from the editor";
  return names.length === 1 ? `door-account ${names[0]}` : `door-account nodes ${names.join(", ")}`;
}

// ---- two logins, one service account ----------------------------------------------------
//
// Two door-account nodes with different logins (a phone number and an email) may name the same
// service account: their account keys differ, so they get two cores, and each login ends the
// other's session until one halts as superseded. When the service's access tokens name the
// account (a `sub` claim; the spec does not promise one), a core that becomes ready compares its
// subject with every other core on the same base URL and warns, naming both nodes; a halt as
// superseded names the other nodes of this runtime that hold, or may hold, the same account.
// The subject is compared only: it is never shown (it may be an email address).

const METHOD_TEXT: Readonly<Record<string, string>> = {
  phone: "phone number login",
  email: "email login",
  login: "phone number login, generic endpoint",
};

/** Pairs of cores already warned about (once per pair; a redeploy's new cores are told again). */
const toldSameAccount = new WeakMap<AccountCore, WeakSet<AccountCore>>();

function describeHolder(entry: Holding, core: AccountCore): string {
  return `${holderOf(entry)} (${METHOD_TEXT[core.options.credentials.method] ?? core.options.credentials.method})`;
}

function sameServiceCores<H extends Holding>(
  all: Iterable<H>,
  entry: H,
  core: AccountCore,
): { entry: H; core: AccountCore }[] {
  const out: { entry: H; core: AccountCore }[] = [];
  for (const e of all) {
    if (e === entry || !e.core || e.core === core || e.core.isClosed || e.conflict) continue;
    if (e.core.options.baseUrl === core.options.baseUrl) out.push({ entry: e, core: e.core });
  }
  return out;
}

/** A core became ready: warn (once per pair) when another core's tokens name the same service account. */
export function recogniseSameAccount<H extends Holding>(
  all: Iterable<H>,
  entry: H,
  core: AccountCore,
  logOf: (entry: H) => SessionLog,
): void {
  const subject = core.session.subject;
  if (subject === null || core.isClosed || entry.core !== core) return;
  for (const other of sameServiceCores(all, entry, core)) {
    if (other.core.session.subject !== subject) continue;
    const told = toldSameAccount.get(core)?.has(other.core) || toldSameAccount.get(other.core)?.has(core);
    if (told) continue;
    if (!toldSameAccount.has(core)) toldSameAccount.set(core, new WeakSet());
    toldSameAccount.get(core)!.add(other.core);
    const text =
      `${describeHolder(entry, core)} and ${describeHolder(other.entry, other.core)} log in to the same service account at ${core.options.baseUrl} ` +
      "(the service's tokens name the same account): the service keeps one session per account, so each login ends the other's " +
      "session until one of them halts as superseded. Use one door-account node for this account: every node that names it shares its session";
    logOf(entry).warn(text);
    logOf(other.entry).warn(text);
  }
}

/** For a halt as superseded: the other nodes of this runtime that hold (or may hold) the account. */
export function otherHolders(all: Iterable<Holding>, entry: Holding, core: AccountCore): string | null {
  const others = sameServiceCores(all, entry, core);
  if (others.length === 0) return null;
  const subject = core.session.subject;
  const names = (list: { entry: Holding; core: AccountCore }[]) =>
    list.map((o) => describeHolder(o.entry, o.core)).join(", ");
  const same = subject === null ? [] : others.filter((o) => o.core.session.subject === subject);
  if (same.length > 0) {
    return `${names(same)} of this Node-RED logs in to the same service account with another login (the service's tokens name the same account): use one door-account node for it`;
  }
  const maybe = others.filter((o) => subject === null || o.core.session.subject === null);
  if (maybe.length > 0)
    return `another door-account node of this Node-RED on the same base URL may hold this account with another login: ${names(maybe)}`;
  return null;
}

/** The holders of a live session of another login on `baseUrl` in this runtime, named (never a login), or null. */
export function otherLiveLogin(all: Iterable<Holding>, key: string, baseUrl: string): string | null {
  const holders: string[] = [];
  for (const e of all) {
    if (e.key === key || !e.core || e.core.isClosed || e.conflict) continue;
    if (e.core.options.baseUrl !== baseUrl || !e.core.session.live) continue;
    holders.push(describeHolder(e, e.core));
  }
  return holders.length === 0 ? null : [...new Set(holders)].join(", ");
}
