/**
 * The `door-account` config node: the account's credentials and its one session, shared by
 * every flow node that names it. Thin Node-RED glue around src/account/account.ts.
 */
import * as path from "node:path";
import type { NodeAPI, Node, NodeDef } from "node-red";
import { Account, checkAccountSettings, checkStoreSettings } from "../account/account.js";
import { locksOf } from "../doors/select.js";
import type { SessionHaltedError } from "../session/errors.js";
import type { SessionSnapshot } from "../session/session.js";
import { fingerprint, park, reclaim } from "./account-registry.js";
import { type AccountUser, type NodeStatus, type DoorAccountNode, ADMIN_PREFIX, stateStatus } from "./shared.js";

interface AccountDef extends NodeDef {
  baseUrl: string;
  loginMethod: string;
  auditLog: string;
  /** "file" (default) or "redis": where the session's pair lives. */
  sessionStore?: string;
  redisUrl?: string;
  redisKeyPrefix?: string;
}
interface AccountCreds {
  phoneNumber?: string;
  email?: string;
  password?: string;
  redisPassword?: string;
}

export = function register(RED: NodeAPI): void {
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

  function DoorAccount(this: Node<AccountCreds> & DoorAccountNode, config: AccountDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    const users = new Set<AccountUser>();
    node.account = null;
    node.problem = null;
    node.users = users;

    const creds = node.credentials ?? {};
    const checked = checkAccountSettings({
      baseUrl: config.baseUrl,
      loginMethod: config.loginMethod,
      phoneNumber: creds.phoneNumber,
      email: creds.email,
      password: creds.password,
    });

    const translateState = (snap: SessionSnapshot): NodeStatus => stateStatus(snap, (k) => RED._(`door-account.state.${k}`));

    node.statusFor = (): NodeStatus => {
      if (node.problem) return { fill: "red", shape: "ring", text: `configuration: ${node.problem}` };
      if (!node.account) return { fill: "grey", shape: "ring", text: RED._("door-account.state.closed") };
      return translateState(node.account.snapshot());
    };
    node.register = (user: AccountUser) => {
      users.add(user);
      user.onAccountState(node.statusFor());
    };
    node.deregister = (user: AccountUser) => {
      users.delete(user);
    };

    const storeChecked = checkStoreSettings({ sessionStore: config.sessionStore, redisUrl: config.redisUrl, redisKeyPrefix: config.redisKeyPrefix, redisPassword: creds.redisPassword });

    let fp = "";
    if (!checked.ok || !storeChecked.ok) {
      node.problem = [...(checked.ok ? [] : checked.problems), ...(storeChecked.ok ? [] : storeChecked.problems)].join("; ");
      node.error(`door-account "${config.name || node.id}": ${node.problem}`);
    } else {
      const auditLog = config.auditLog?.trim() ? path.resolve(userDir(), config.auditLog.trim()) : path.join(userDir(), "door-access-audit.jsonl");
      const tokenFile = path.join(userDir(), "door-access", `session-${node.id.replace(/[^A-Za-z0-9_.-]/g, "_")}.json`);
      const secret = credentialSecret();
      fp = fingerprint([checked.baseUrl, checked.credentials, auditLog, tokenFile, secret, storeChecked.store]);
      const reused = reclaim(node.id, fp);
      node.account =
        reused ??
        new Account({
          baseUrl: checked.baseUrl,
          credentials: checked.credentials,
          tokenFile,
          secret,
          sessionStore: storeChecked.store,
          auditLogPath: auditLog,
          log: { info: (m) => node.log(m), warn: (m) => node.warn(m), error: (m) => node.error(m) },
        });
      const account = node.account;
      const onState = () => {
        const status = node.statusFor();
        for (const u of users) u.onAccountState(status);
      };
      // One error per flow tab that uses the account, so a Catch node on that tab sees it;
      // the session itself already wrote the halt to the log once.
      const onHalt = (e: SessionHaltedError) => {
        const seenTabs = new Set<string>();
        for (const u of users) {
          if (seenTabs.has(u.z)) continue;
          seenTabs.add(u.z);
          u.onAccountHalt(e);
        }
      };
      account.on("state", onState);
      account.on("halt", onHalt);
      node.on("close", (removed: boolean, done: () => void) => {
        account.off("state", onState);
        account.off("halt", onHalt);
        users.clear();
        const finish = removed ? account.destroy() : (park(node.id, fp, account), Promise.resolve());
        const guard = setTimeout(done, 2_000);
        void finish.finally(() => {
          clearTimeout(guard);
          done();
        });
      });
      if (!reused) {
        void account.start().then(() => {
          // Warm the device list once, so names resolve without a fetch on the unlock path.
          if (account.session.state === "ready") void account.devices().catch(() => undefined);
        });
      }
    }
  }

  RED.nodes.registerType("door-account", DoorAccount as never, {
    credentials: {
      phoneNumber: { type: "password" },
      email: { type: "text" },
      password: { type: "password" },
      redisPassword: { type: "password" },
    },
  } as never);

  // ---- admin endpoints used by the editor (relative URLs, permission-checked) ------------
  const accountNode = (id: string): DoorAccountNode | null => (RED.nodes.getNode(id) as unknown as DoorAccountNode | null) ?? null;

  RED.httpAdmin.get(`${ADMIN_PREFIX}/:id/state`, RED.auth.needsPermission("door-account.read"), (req, res) => {
    const n = accountNode(String(req.params.id));
    if (!n || n.type !== "door-account") {
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
      halted: snap ? snap.state.startsWith("halted") || snap.state === "unreachable" || snap.state === "store-unreachable" : false,
    });
  });

  RED.httpAdmin.post(`${ADMIN_PREFIX}/:id/reconnect`, RED.auth.needsPermission("door-account.write"), (req, res) => {
    const n = accountNode(String(req.params.id));
    if (!n || n.type !== "door-account") {
      res.status(404).json({ error: RED._("door-account.errors.not-deployed") });
      return;
    }
    if (!n.account) {
      res.status(409).json({ error: `configuration: ${n.problem ?? "invalid"}` });
      return;
    }
    // The outcome shows as the account state (the session logs a failed login itself); a
    // rejection must not go unhandled: it would crash Node-RED.
    n.account.session.reconnect().catch(() => undefined);
    res.status(202).json({ requested: true });
  });

  RED.httpAdmin.get(`${ADMIN_PREFIX}/:id/devices`, RED.auth.needsPermission("door-account.read"), (req, res) => {
    const n = accountNode(String(req.params.id));
    if (!n || n.type !== "door-account") {
      res.status(503).json({ error: RED._("door-account.errors.not-deployed") });
      return;
    }
    if (!n.account) {
      res.status(409).json({ error: `configuration: ${n.problem ?? "invalid"}` });
      return;
    }
    n.account.devices(req.query.refresh === "1" || req.query.refresh === "true").then(
      (devices) =>
        res.json({
          devices: devices.map((d) => {
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
          }),
        }),
      (e: Error) => res.status(502).json({ error: e.message }),
    );
  });
};
