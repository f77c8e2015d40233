/**
 * The `door-account` admin routes the editor calls (the account's state, Reconnect, the door
 * picker's lists, Sign in), with who may call each: docs/security.md#who-can-do-what-the-admin-routes.
 * Registered once by door-account.ts with what they need of its deployed nodes.
 */
import type { NodeAPI } from "node-red";
import {
  AccountCore,
  checkAccountSettings,
  checkStoreSettings,
  type SessionStoreChoice,
} from "../../src/account/account.js";
import { type Settings, dropSignIn, runningCore, signIn } from "../../src/account/registry.js";
import type { Credentials } from "../../src/client/client.js";
import { locksOf } from "../../src/doors/select.js";
import { HALTED_STATES, type SessionLog } from "../../src/session/session.js";
import { accountKey } from "../../src/session/token-store.js";
import type { Device } from "../../src/spec/schemas.js";
import { fromEditor, hasPermission, permission } from "../common/admin-access.js";
import { type DoorAccountNode, ADMIN_PREFIX } from "../common/node-runtime.js";

/**
 * A forced list fetch from the editor happens at most once per this interval per account,
 * however many users, routes and requests ask (docs/security.md#who-can-do-what-the-admin-routes).
 */
const EDITOR_REFRESH_MS = 10_000;
/** Per account key (not per core: a redeploy or a new sign-in makes a new core of the same account), monotonic ms. */
const editorRefreshAt = new Map<string, number>();

/** The sign-in's answer when a session resumed from a stored pair runs with the password typed. */
const PASSWORD_NOT_CHECKED =
  "a session for this login already runs (resumed from its stored token pair) with the password typed: door pickers use it. The password was not checked: only a login can check it, and a login would end that session";

/** A door-account node's credentials, as Node-RED holds them. */
export interface AccountCreds {
  phoneNumber?: string;
  email?: string;
  password?: string;
  redisPassword?: string;
}

/** What the routes need of door-account.ts: the deployed nodes' credentials and targets. */
export interface AccountAdminContext {
  deployedCreds: WeakMap<object, AccountCreds>;
  deployedTarget: WeakMap<object, { baseUrl: string | null; redisUrl: string }>;
  normalisedBaseUrl: (v: unknown) => string | null;
  accountSetup: (
    baseUrl: string,
    credentials: Credentials,
    store: SessionStoreChoice,
    legacyNodeId: string | null,
  ) => {
    key: string;
    settings: Settings;
    make: (log: SessionLog, checkCredentials?: boolean) => AccountCore;
    tokenFile: string;
  };
}

export function registerAccountAdminRoutes(RED: NodeAPI, ctx: AccountAdminContext): void {
  const { deployedCreds, deployedTarget, normalisedBaseUrl, accountSetup } = ctx;
  const read = permission(RED, "door-account.read");
  const write = permission(RED, "door-account.write");
  const editorOnly = fromEditor();
  const mayWrite = hasPermission(RED, "door-account.write");
  const accountNode = (id: string): DoorAccountNode | null => {
    const n = (RED.nodes.getNode(id) as unknown as DoorAccountNode | null) ?? null;
    return n && n.type === "door-account" ? n : null;
  };

  RED.httpAdmin.get(`${ADMIN_PREFIX}/:id/state`, read, (req, res) => {
    const n = accountNode(String(req.params.id));
    if (!n) {
      res.status(404).json({ error: RED._("door-account.errors.not-deployed") });
      return;
    }
    const snap = n.account?.snapshot() ?? null;
    res.json({
      deployed: true,
      state: snap?.state ?? "closed",
      reason: n.problem ?? snap?.reason ?? null,
      since: snap ? new Date(snap.since).toISOString() : null,
      status: n.statusFor(),
      halted: snap
        ? snap.state.startsWith("halted") || snap.state === "unreachable" || snap.state === "store-unreachable"
        : false,
    });
  });

  RED.httpAdmin.post(`${ADMIN_PREFIX}/:id/reconnect`, write, editorOnly, (req, res) => {
    const n = accountNode(String(req.params.id));
    if (!n) {
      res.status(404).json({ error: RED._("door-account.errors.not-deployed") });
      return;
    }
    if (!n.account) {
      res.status(409).json({
        error: n.problem?.startsWith("configuration") ? n.problem : `configuration: ${n.problem ?? "invalid"}`,
      });
      return;
    }
    // The outcome shows as the account state (the session logs a failed login itself); a
    // rejection must not go unhandled: it would crash Node-RED.
    n.account.session.reconnect().catch(() => undefined);
    res.status(202).json({ requested: true });
  });

  /** What the editor sends about an account it edits (typed values; "__PWRD__" = the deployed node's). */
  interface EditedAccount {
    baseUrl?: unknown;
    loginMethod?: unknown;
    phoneNumber?: unknown;
    email?: unknown;
    password?: unknown;
    sessionStore?: unknown;
    redisUrl?: unknown;
    redisKeyPrefix?: unknown;
    redisPassword?: unknown;
    /** Sign in only: the operator confirmed a login while another login's session runs on the same service. */
    confirm?: unknown;
  }
  const typed = (v: unknown): string | undefined =>
    typeof v === "string" && v !== "" && v !== "__PWRD__" ? v : undefined;

  /** The edited account's settings checked, secrets not typed taken from the deployed node of that id. */
  function editedSettings(id: string, body: EditedAccount, needPassword: boolean) {
    const n = accountNode(id);
    // A stored secret (the editor sends "__PWRD__" for it) is used only towards where the
    // deployed node sends it: a sign-in to another base URL (or Redis URL) needs it typed.
    const target = n ? deployedTarget.get(n) : undefined;
    const sameService =
      !needPassword ||
      (target !== undefined && target.baseUrl !== null && normalisedBaseUrl(body.baseUrl) === target.baseUrl);
    const sameRedis =
      target !== undefined && typeof body.redisUrl === "string" && body.redisUrl.trim() === target.redisUrl;
    const all = n ? (deployedCreds.get(n) ?? {}) : {};
    const stored: AccountCreds = sameService
      ? { ...all, redisPassword: sameRedis ? all.redisPassword : undefined }
      : {};
    const checked = checkAccountSettings({
      baseUrl: body.baseUrl,
      loginMethod: body.loginMethod,
      phoneNumber: typed(body.phoneNumber) ?? stored.phoneNumber,
      email:
        typeof body.email === "string" && body.email.trim() && body.email !== "__PWRD__" ? body.email : stored.email,
      password: needPassword ? (typed(body.password) ?? stored.password) : "not needed to find a session",
    });
    if (
      !checked.ok &&
      !sameService &&
      n &&
      (body.password === "__PWRD__" || body.phoneNumber === "__PWRD__" || body.email === "__PWRD__")
    ) {
      checked.problems.push(
        "the stored credentials are used only with the deployed base URL: type them again to sign in at another one",
      );
    }
    const store = checkStoreSettings({
      sessionStore: body.sessionStore,
      redisUrl: body.redisUrl,
      redisKeyPrefix: body.redisKeyPrefix,
      redisPassword: typed(body.redisPassword) ?? stored.redisPassword,
    });
    return { checked, store };
  }

  function deviceList(devices: Device[]) {
    return devices.map((d) => {
      const locks = (locksOf(d) ?? []).map((l) => ({ id: l.id, name: typeof l.name === "string" ? l.name : null }));
      return {
        id: d.id,
        name: d.name ?? null,
        locationId: d.locationId ?? null,
        locationName: d.locationName ?? null,
        online: d.online ?? null,
        lockCount: locks.length || null,
        locks,
      };
    });
  }

  /** The editor's answer: the list (no credential in it) and its age. */
  function listAnswer(core: AccountCore, devices: Device[], extra: Record<string, unknown> = {}) {
    const cached = core.directory.cached();
    const ageSeconds = cached ? Math.max(0, Math.round((core.clock.now() - cached.fetchedAt) / 1000)) : 0;
    return { devices: deviceList(devices), ageSeconds, ...extra };
  }

  type Answer = { status(c: number): { json(b: unknown): void }; json(b: unknown): void };
  const failedList = (res: Answer) => (e: Error) => res.status(502).json({ error: e.message });

  /**
   * The list the running core holds (door-account.read): nothing is fetched for it, whoever
   * asks; a fetch already under way (the start-up fetch after a sign-in) is waited for.
   */
  function sendHeld(core: AccountCore, res: Answer): void {
    const cached = core.directory.cached();
    if (cached) {
      res.json(listAnswer(core, cached.devices));
      return;
    }
    const pending = core.directory.inFlight();
    if (!pending) {
      res
        .status(503)
        .json({ error: "the account has no device list yet: Refresh fetches it (door-account.write)", refresh: true });
      return;
    }
    pending.then((devices) => res.json(listAnswer(core, devices)), failedList(res));
  }

  /**
   * A forced fetch (door-account.write): at most once per EDITOR_REFRESH_MS per account, and
   * only with the token the session holds: never a login or a renewal (the editor never logs
   * in on its own, docs/security.md#who-can-do-what-the-admin-routes). Within the interval the
   * held list is served with its age.
   */
  function sendRefreshed(core: AccountCore, res: Answer): void {
    if (core.session.heldToken() === null) {
      res.status(503).json({
        error: `${core.session.noSessionError().message}; the editor never logs in: Reconnect (or Sign in) first`,
        state: core.session.state,
      });
      return;
    }
    const now = core.clock.monotonic();
    const last = editorRefreshAt.get(core.key);
    if (last !== undefined && now - last < EDITOR_REFRESH_MS) {
      const retryInSeconds = Math.max(1, Math.ceil((EDITOR_REFRESH_MS - (now - last)) / 1000));
      const cached = core.directory.cached();
      if (!cached) {
        res.status(429).json({
          error: `the device list could not be fetched; the next refresh is possible in ${retryInSeconds} s`,
          throttled: true,
          retryInSeconds,
        });
        return;
      }
      res.json(listAnswer(core, cached.devices, { throttled: true, retryInSeconds }));
      return;
    }
    editorRefreshAt.set(core.key, now);
    core.refreshDevicesWithHeldToken().then((devices) => res.json(listAnswer(core, devices)), failedList(res));
  }

  const refreshWanted = (v: unknown) => v === "1" || v === "true" || v === true;
  const TYPED_LOGIN_IS_A_WRITE =
    "a login typed in the dialog is looked up only for a user who may change the account (door-account.write); the door list of the deployed account is shown with its stored login";
  const REFRESH_IS_A_WRITE =
    "this route serves the list the runtime holds; a refresh from the service is POST .../devices/refresh (door-account.write)";

  RED.httpAdmin.get(`${ADMIN_PREFIX}/:id/devices`, read, (req, res) => {
    if (refreshWanted(req.query.refresh)) {
      res.status(400).json({ error: REFRESH_IS_A_WRITE });
      return;
    }
    const n = accountNode(String(req.params.id));
    if (!n) {
      res.status(503).json({ error: RED._("door-account.errors.not-deployed") });
      return;
    }
    if (!n.account) {
      res.status(409).json({
        error: n.problem?.startsWith("configuration") ? n.problem : `configuration: ${n.problem ?? "invalid"}`,
      });
      return;
    }
    sendHeld(n.account.core, res);
  });

  /** The running core of the account as edited (deployed or not), or null with the answer sent. */
  function editedCore(id: string, body: EditedAccount, res: Answer): AccountCore | null {
    const { checked } = editedSettings(id, body, false);
    if (!checked.ok) {
      res.status(400).json({ error: `configuration: ${checked.problems.join("; ")}` });
      return null;
    }
    const c = checked.credentials;
    const core = runningCore(accountKey(checked.baseUrl, c.method, c.method === "email" ? c.email : c.phoneNumber));
    if (!core) {
      res.status(503).json({ error: RED._("door-account.errors.no-session"), signIn: true });
      return null;
    }
    return core;
  }

  // The picker of an account being edited, deployed or not: the running session of the same
  // base URL and login, if this runtime has one. The login (typed in the editor) comes in the
  // POST body; nothing of it goes back.
  // A login typed in the dialog is looked up only for a user who may change the account
  // (door-account.write): the answer would tell a read-only user whether a guessed phone number
  // or email is the login of a running session. A read-only user's picker sends the stored
  // login ("__PWRD__"), which the runtime takes from the deployed node
  // (docs/security.md#who-can-do-what-the-admin-routes).
  RED.httpAdmin.post(`${ADMIN_PREFIX}/:id/devices`, read, editorOnly, (req, res) => {
    const body = (req.body ?? {}) as EditedAccount & { refresh?: unknown };
    if (refreshWanted(body.refresh)) {
      res.status(400).json({ error: REFRESH_IS_A_WRITE });
      return;
    }
    const typedLogin = typed(body.phoneNumber) !== undefined || typed(body.email) !== undefined;
    void (typedLogin ? mayWrite(req) : Promise.resolve(true))
      .then((allowed) => {
        if (!allowed) {
          res.status(403).json({ error: TYPED_LOGIN_IS_A_WRITE });
          return;
        }
        const core = editedCore(String(req.params.id), body, res);
        if (core) sendHeld(core, res);
      })
      .catch(() => undefined);
  });

  // The picker's Refresh: the same account as edited, the list fetched again from the service.
  RED.httpAdmin.post(`${ADMIN_PREFIX}/:id/devices/refresh`, write, editorOnly, (req, res) => {
    const core = editedCore(String(req.params.id), (req.body ?? {}) as EditedAccount, res);
    if (core) sendRefreshed(core, res);
  });

  // Sign in from the editor before the first deploy (door-account.write). The pair is stored
  // under the account key, so the deploy that follows resumes it: no second login. A sign-in
  // never reports success for a password that is not the account's, and never logs in while a
  // session of the account runs here (src/account/registry.ts signIn;
  // docs/session.md#signing-in-from-the-editor). The password typed is compared there as a hash,
  // in constant time, and never sent back.
  RED.httpAdmin.post(`${ADMIN_PREFIX}/:id/sign-in`, write, editorOnly, (req, res) => {
    const body = (req.body ?? {}) as EditedAccount;
    const { checked, store } = editedSettings(String(req.params.id), body, true);
    if (!checked.ok || !store.ok) {
      res.status(400).json({
        error: `configuration: ${[...(checked.ok ? [] : checked.problems), ...(store.ok ? [] : store.problems)].join("; ")}`,
      });
      return;
    }
    const setup = accountSetup(checked.baseUrl, checked.credentials, store.store, null);
    const log: SessionLog = {
      info: (m) => RED.log.info(`door-account (editor sign-in): ${m}`),
      warn: (m) => RED.log.warn(`door-account (editor sign-in): ${m}`),
      // A sign-in that fails is answered in the dialog; in the log it is a warning, not an account's error.
      error: (m) => RED.log.warn(`door-account (editor sign-in): ${m}`),
    };
    const got = signIn(setup.key, setup.settings, setup.make, log, {
      baseUrl: checked.baseUrl,
      confirm: body.confirm === true,
    });
    if (got.kind === "other-login") {
      // The runtime cannot know before a login whether two logins (a phone number, an email) are
      // one service account: the operator decides (docs/session.md#signing-in-from-the-editor).
      res.status(409).json({
        error:
          `another door-account of this Node-RED holds a session on this service: ${got.holder}. Nothing was sent. If the login typed is the same service account ` +
          "(a phone number and an email of one account are one account), signing in would end that session: then use that door-account node instead. " +
          "If it is another account, press Sign in anyway",
        confirm: true,
      });
      return;
    }
    if (got.kind === "conflict") {
      res.status(409).json({ error: got.message });
      return;
    }
    if (got.kind === "password-differs") {
      res.status(409).json({
        error: got.live
          ? `${got.holder} runs a session of this login with another password: the password typed cannot be checked without ending that session, so nothing was sent. Type the password it runs with, or deploy the new one (it is checked at the account's next login)`
          : `configuration conflict: ${got.holder} uses this login with another password: nothing was sent. Deploy the new password instead (a redeploy gives a halted account one fresh login)`,
        passwordChecked: false,
      });
      return;
    }
    const core = got.core;
    let answered = false;
    let note: string | null = null;
    const answer = () => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      const snap = core.session.snapshot();
      if (snap.state === "ready" && core.session.credentialsProven) {
        res.json({ signedIn: true, already: got.kind === "running", state: snap.state });
      } else if (snap.state === "ready") {
        // A session resumed from a stored pair runs with the password typed: the door pickers
        // use it, but only a login could check the password, and a login would end the session.
        res.json({
          signedIn: false,
          already: true,
          passwordChecked: false,
          state: snap.state,
          message: PASSWORD_NOT_CHECKED,
        });
      } else if (snap.state === "halted-login-failed") {
        if (got.kind === "started") dropSignIn(setup.key, core);
        res.status(422).json({ error: RED._("door-account.errors.sign-in-refused"), state: snap.state });
      } else if (HALTED_STATES.has(snap.state)) {
        if (got.kind === "started") dropSignIn(setup.key, core);
        res.status(409).json({ error: RED._("door-account.errors.sign-in-superseded"), state: snap.state });
      } else {
        res.status(502).json({
          error: note ?? `${RED._(`door-account.state.${snap.state}`)}${snap.reason ? ` (${snap.reason})` : ""}`,
          state: snap.state,
        });
      }
    };
    const timer = setTimeout(answer, 30_000);
    // A core left unreachable by an earlier attempt (5xx, network, 429) is asked for the session
    // as a message would: one login when the account's spacing (at most one a minute, never
    // before a Retry-After) allows it, else the answer says when the next try is possible.
    void core
      .startAndWarm()
      .then(() => {
        if (core.session.state !== "unreachable") return;
        return core.session.token().then(
          () => undefined,
          (e: Error) => {
            note = e.message;
          },
        );
      })
      .then(answer, answer);
  });
}
