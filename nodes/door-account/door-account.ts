/**
 * The `door-account` config node: the account's credentials and its one session, shared by
 * every flow node that names it. Thin Node-RED glue around src/account/account.ts.
 */
import { accountLabel } from "../../src/account/label.js";
import * as fs from "node:fs";
import * as path from "node:path";
import type { NodeAPI, Node, NodeDef } from "node-red";
import { parseBaseUrl } from "../../src/client/base-url.js";
import {
  ACCOUNT_DRAIN_MS,
  Account,
  AccountCore,
  checkAccountSettings,
  checkStoreSettings,
  type SessionStoreChoice,
} from "../../src/account/account.js";
import { DEFAULT_KEEP, DEFAULT_MAX_BYTES, sameOptions } from "../../src/audit/audit-log.js";
import { checkAuditPath } from "../../src/audit/paths.js";
import { descriptionUrl } from "../../src/account/description-check.js";
import type { Credentials } from "../../src/client/client.js";
import type { SessionHaltedError } from "../../src/session/errors.js";
import { type SessionLog, type SessionSnapshot } from "../../src/session/session.js";
import { accountKey, tokenFileFor } from "../../src/session/token-store.js";
import { textOf } from "../../src/util/text.js";
import { type Member, deployStarted, join, settingsOf } from "../../src/account/registry.js";
import { type AccountCreds, registerAccountAdminRoutes } from "./door-account-admin.js";
import {
  type AccountUser,
  type NodeStatus,
  type DoorAccountNode,
  ACCOUNT_CLOSE_GUARD_MS,
  stateStatus,
} from "../common/node-runtime.js";

/** Runtimes whose "flows:started" already tells the registry (the module may be registered again). */
const deployHooked = new WeakSet<object>();

/** Tabs that already got an error for one halt (the same error reaches every node of the account). */
const haltTabs = new WeakMap<SessionHaltedError, Set<string>>();

interface AccountDef extends NodeDef {
  baseUrl: string;
  loginMethod: string;
  auditLog: string;
  /** Rotate the audit file above this size (bytes; 0 = never; default 10 MiB). */
  auditMaxBytes?: string | number;
  /** Rotated audit files kept (default 10). */
  auditKeep?: string | number;
  /** "file" (default) or "redis": where the session's pair lives. */
  sessionStore?: string;
  redisUrl?: string;
  redisKeyPrefix?: string;
  /** Where the service description is served (empty = the base URL); docs/service-description.md. */
  docsUrl?: string;
  /** The service description check, on unless false (flows from before it have no value: on). */
  specCheck?: boolean | string;
}

export = function register(RED: NodeAPI): void {
  // After a deploy has started every node, an account none of them uses any more logs out.
  const events = (RED as unknown as { events?: { on(e: string, f: () => void): void } }).events;
  if (events && typeof events.on === "function" && !deployHooked.has(events)) {
    deployHooked.add(events);
    events.on("flows:started", () => void deployStarted().catch(() => undefined));
  }
  const userDir = (): string => (RED.settings as unknown as { userDir?: string }).userDir ?? process.cwd();

  function credentialSecret(): string | null {
    const s = RED.settings as unknown as { credentialSecret?: unknown; get?: (k: string) => unknown };
    if (typeof s.credentialSecret === "string" && s.credentialSecret) return s.credentialSecret;
    try {
      const generated = s.get?.("_credentialSecret");
      if (typeof generated === "string" && generated) return generated;
    } catch {
      /* not available in this runtime */
    }
    return null;
  }

  /** The deployed node's credentials, for the admin endpoints (never sent back to the browser). */
  const deployedCreds = new WeakMap<object, AccountCreds>();
  /** Where the deployed node's stored secrets may be sent: its base URL (normalised) and Redis URL. */
  const deployedTarget = new WeakMap<object, { baseUrl: string | null; redisUrl: string }>();
  const normalisedBaseUrl = (v: unknown): string | null => {
    try {
      return parseBaseUrl(v).href.replace(/\/+$/, "");
    } catch {
      return null;
    }
  };

  /**
   * The account key, the settings hash and the core factory of one configuration. The token
   * file is named from the account key, so a restart resumes the pair whichever node names it;
   * a file of the 0.1 layout (named from this node id) is taken over once.
   */
  function accountSetup(
    baseUrl: string,
    credentials: Credentials,
    store: SessionStoreChoice,
    legacyNodeId: string | null,
  ) {
    const identity = credentials.method === "email" ? credentials.email : credentials.phoneNumber;
    const key = accountKey(baseUrl, credentials.method, identity);
    const tokenFile = tokenFileFor(userDir(), key);
    const settings = settingsOf(credentials.password, store);
    const make = (log: SessionLog, checkCredentials = false) => {
      if (legacyNodeId && store.kind === "file") adoptLegacyTokenFile(legacyNodeId, key, tokenFile);
      return new AccountCore({
        baseUrl,
        credentials,
        tokenFile,
        secret: credentialSecret(),
        sessionStore: store,
        log,
        checkCredentials,
      });
    };
    return { key, settings, make, tokenFile };
  }

  function adoptLegacyTokenFile(nodeId: string, key: string, tokenFile: string): void {
    const legacy = path.join(userDir(), "door-access", `session-${nodeId.replace(/[^A-Za-z0-9_.-]/g, "_")}.json`);
    try {
      if (fs.existsSync(tokenFile) || !fs.existsSync(legacy)) return;
      const file = JSON.parse(fs.readFileSync(legacy, "utf8")) as { account?: unknown };
      if (file.account === key) fs.renameSync(legacy, tokenFile);
    } catch {
      /* unreadable: the account logs in instead */
    }
  }

  function DoorAccount(this: Node<AccountCreds> & DoorAccountNode, config: AccountDef) {
    RED.nodes.createNode(this, config);
    // One label everywhere (the debug sidebar and the log read node.name): never the node's id.
    if (!(this as { name?: string }).name) (this as { name?: string }).name = accountLabel(config.name, config.baseUrl);
    const node = this;
    const users = new Set<AccountUser>();
    const inflight = new Set<Promise<unknown>>();
    node.account = null;
    node.problem = null;
    node.users = users;
    let configProblem: string | null = null;
    let member: Member | null = null;

    const creds = node.credentials ?? {};
    deployedCreds.set(node, { ...creds });
    deployedTarget.set(node, {
      baseUrl: normalisedBaseUrl(config.baseUrl),
      redisUrl: typeof config.redisUrl === "string" ? config.redisUrl.trim() : "",
    });
    const checked = checkAccountSettings({
      baseUrl: config.baseUrl,
      loginMethod: config.loginMethod,
      phoneNumber: creds.phoneNumber,
      email: creds.email,
      password: creds.password,
    });

    const translateState = (snap: SessionSnapshot): NodeStatus =>
      stateStatus(snap, (k) => RED._(`door-account.state.${k}`));

    node.statusFor = (): NodeStatus => {
      // A few words on the canvas; the whole problem is in the account's dialog, the sidebar and the log.
      if (node.problem) return { fill: "red", shape: "ring", text: RED._("door-account.state.configuration") };
      if (!node.account) return { fill: "grey", shape: "ring", text: RED._("door-account.state.closed") };
      return translateState(node.account.snapshot());
    };
    const fanOut = () => {
      const status = node.statusFor();
      for (const u of users) u.onAccountState(status);
    };
    node.register = (user: AccountUser) => {
      users.add(user);
      user.onAccountState(node.statusFor());
    };
    node.deregister = (user: AccountUser) => {
      users.delete(user);
    };
    node.track = (work: Promise<unknown>) => {
      inflight.add(work);
      void work.then(
        () => inflight.delete(work),
        () => inflight.delete(work),
      );
    };

    // One error per flow tab that uses the account, so a Catch node on that tab sees it; the
    // session itself already wrote the halt to the log once. Tabs are counted across every node
    // of the account: the halt is the account's, not this node's.
    const onHalt = (e: SessionHaltedError) => {
      let seenTabs = haltTabs.get(e);
      if (!seenTabs) haltTabs.set(e, (seenTabs = new Set()));
      for (const u of users) {
        if (seenTabs.has(u.z)) continue;
        seenTabs.add(u.z);
        u.onAccountHalt(e);
      }
    };

    const storeChecked = checkStoreSettings({
      sessionStore: config.sessionStore,
      redisUrl: config.redisUrl,
      redisKeyPrefix: config.redisKeyPrefix,
      redisPassword: creds.redisPassword,
    });
    const settings = RED.settings as unknown as { settingsFile?: string; flowFile?: string };
    const auditChecked = checkAuditPath(config.auditLog, {
      userDir: userDir(),
      settingsFile: settings.settingsFile ?? null,
      flowFile: settings.flowFile ?? null,
    });
    const auditLog = auditChecked.path;
    const auditOptions = auditSettings(config);
    // The one label of the account (docs/nodes.md#door-account), also in texts naming it to another node.
    const label = accountLabel(config.name, config.baseUrl);
    // The service description check (docs/service-description.md#when): informs, never stops a
    // door. A docs URL it cannot use turns the check off with a warning, not the account.
    let docs: URL | null = null;
    if (config.specCheck !== false && config.specCheck !== "false" && checked.ok) {
      try {
        docs = descriptionUrl(config.docsUrl, checked.baseUrl);
      } catch (e) {
        node.warn(`door-account "${label}": ${(e as Error).message}; the service description check is off`);
      }
    }
    const descriptionLog = {
      debug: (m: string) => node.debug(m),
      info: (m: string) => node.log(m),
      warn: (m: string) => node.warn(m),
    };

    /** Follows the account's shared core: a new one after a conflict is resolved, none during a conflict. */
    const attach = () => {
      const core = member?.core ?? null;
      node.problem = configProblem ?? member?.conflict ?? null;
      if (node.account && node.account.core !== core) {
        const old = node.account;
        old.off("state", fanOut);
        old.off("halt", onHalt);
        node.account = null;
        void old.close().catch(() => undefined);
      }
      if (core && !node.account && checked.ok && !("problems" in auditOptions)) {
        node.account = new Account({
          baseUrl: checked.baseUrl,
          credentials: checked.credentials,
          tokenFile: core.options.tokenFile,
          auditLogPath: auditLog,
          audit: auditOptions,
          core,
          descriptionCheck: docs ? { url: docs, log: descriptionLog } : null,
        });
        if (!sameOptions(node.account.audit, auditOptions)) {
          node.warn(
            `door-account "${label}": another account writes the same audit log ${auditLog} with other rotation settings; its settings apply (one writer per file)`,
          );
        }
        node.account.on("state", fanOut);
        node.account.on("halt", onHalt);
      }
      fanOut();
    };

    if (!checked.ok || !storeChecked.ok || !auditChecked.ok || "problems" in auditOptions) {
      // A refused audit path is a configuration error: no login, no unlock, nothing sent.
      configProblem = [
        ...(checked.ok ? [] : checked.problems),
        ...(storeChecked.ok ? [] : storeChecked.problems),
        ...(auditChecked.ok ? [] : [auditChecked.problem]),
        ...("problems" in auditOptions ? auditOptions.problems : []),
      ].join("; ");
      node.problem = configProblem;
      node.error(`door-account "${label}": ${configProblem}`);
    } else {
      const setup = accountSetup(
        checked.baseUrl,
        checked.credentials,
        storeChecked.store,
        (config as { _alias?: string })._alias ? null : node.id,
      );
      node.eventsKey = setup.key;
      member = join(setup.key, setup.settings, setup.make, {
        id: node.id,
        label,
        log: { info: (m) => node.log(m), warn: (m) => node.warn(m), error: (m) => node.error(m) },
        changed: attach,
      });
      attach();
    }

    node.on("close", (removed: boolean, done: () => void) => {
      const account = node.account;
      node.account = null;
      account?.off("state", fanOut);
      account?.off("halt", onHalt);
      users.clear();
      const m = member;
      member = null;
      // Never short a record (docs/audit-log.md#records): unlocks in flight finish (bounded) and
      // write their results before the session is stopped or logged out and before the log
      // closes; done() only then, so a shutdown does not exit in between.
      const deadline = Date.now() + ACCOUNT_DRAIN_MS;
      const work = (async () => {
        let t: NodeJS.Timeout | null = null;
        await Promise.race([
          Promise.allSettled([...inflight]),
          new Promise((r) => (t = setTimeout(r, ACCOUNT_DRAIN_MS))),
        ]);
        if (t) clearTimeout(t);
        if (account) await account.drain(Math.max(0, deadline - Date.now()));
        await Promise.allSettled([m ? m.leave(removed) : Promise.resolve(), account?.close(0)]);
      })();
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        clearTimeout(guard);
        done();
      };
      const guard = setTimeout(finish, ACCOUNT_CLOSE_GUARD_MS);
      void work.catch(() => undefined).finally(finish);
    });
  }

  /** auditMaxBytes and auditKeep from the node's configuration: whole numbers >= 0, empty = default. */
  function auditSettings(
    config: AccountDef,
  ): { maxBytes: number; keep: number; warn: (m: string) => void } | { problems: string[] } {
    const problems: string[] = [];
    const num = (v: unknown, dflt: number, what: string): number => {
      if (v === undefined || v === null || (typeof v === "string" && v.trim() === "")) return dflt;
      const n = typeof v === "number" ? v : /^\s*\d{1,15}\s*$/.test(textOf(v)) ? Number(v) : NaN;
      if (!Number.isSafeInteger(n) || n < 0) {
        problems.push(`${what} must be a whole number of 0 or more`);
        return dflt;
      }
      return n;
    };
    const maxBytes = num(config.auditMaxBytes, DEFAULT_MAX_BYTES, "the audit log's maximum size (auditMaxBytes)");
    const keep = num(config.auditKeep, DEFAULT_KEEP, "the number of rotated audit files kept (auditKeep)");
    // The writer outlives the node that opened it (one writer per file): its warnings go to the runtime's log.
    return problems.length ? { problems } : { maxBytes, keep, warn: (m: string) => RED.log.warn(`door-access: ${m}`) };
  }

  RED.nodes.registerType("door-account", DoorAccount as never, {
    credentials: {
      phoneNumber: { type: "password" },
      // A login, like the phone number: the editor (and any user who may read the flows) is
      // told only that one is stored (docs/security.md#secrets).
      email: { type: "password" },
      password: { type: "password" },
      redisPassword: { type: "password" },
    },
  });

  // ---- admin endpoints used by the editor (relative URLs, permission-checked) ------------
  // Who may do what: docs/security.md#who-can-do-what-the-admin-routes. Every POST is taken only
  // from the editor (JSON with its X-Requested-With header): docs/security.md#cross-site-requests.
  registerAccountAdminRoutes(RED, { deployedCreds, deployedTarget, normalisedBaseUrl, accountSetup });
};
