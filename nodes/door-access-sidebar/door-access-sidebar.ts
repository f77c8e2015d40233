/**
 * Runtime part of the editor plugin `door-access-sidebar` (the "Door access" sidebar tab, whose
 * editor half is editor/index.ts in this folder): admin endpoints that list the deployed accounts and
 * read their audit logs, and a live notice over Node-RED comms when a record is written.
 *
 * Reading needs `door-account.read`; the Reconnect button uses door-account's own
 * POST /door-access/accounts/:id/reconnect (`door-account.write`), and revoking a guest pass
 * `door-account.write` too. The browser gets records (which hold no token, password or phone
 * number), account states and guest passes as a flow's `list` sees them (never a code nor its
 * hash: docs/passes.md#in-the-sidebar), never a credential.
 * The comms notice carries only account ids: every editor connection receives comms messages,
 * so the records themselves go only through the permission-checked endpoints.
 */
import type { NodeAPI } from "node-red";
import type { Request, Response } from "express";
import { type AuditFilter, exportCsv, parseInstant, readPage } from "../../src/audit/reader.js";
import { onAnyAuditRecord, verifyAuditLog } from "../../src/audit/source.js";
import { fromEditor, permission } from "../common/admin-access.js";
import { registerLockoutRoutes } from "./lockouts.js";
import { accountEvents } from "../../src/account/events.js";
import type { DoorAccountNode } from "../common/node-runtime.js";
import { textOf } from "../../src/util/text.js";
import type { PassView } from "../../src/passes/pass.js";
import { type PassNodeHooks, subflowPassNodes } from "../door-pass/pass-node-parts.js";

const SIDEBAR_PREFIX = "/door-access/sidebar";
const COMMS_TOPIC = "door-access/audit";
/** Records written within this window reach the editor as one notice. */
const NOTICE_BATCH_MS = 100;

/** The live RED of the last load (the test helper loads the module again for each flow). */
let current: NodeAPI | null = null;
let unsubscribe: (() => void) | null = null;
let pendingFiles = new Set<string>();
let noticeTimer: NodeJS.Timeout | null = null;

function deployedAccounts(RED: NodeAPI): DoorAccountNode[] {
  const out: DoorAccountNode[] = [];
  const seen = new Set<string>();
  RED.nodes.eachNode((n: { id: string; type: string }) => {
    if (n.type !== "door-account" || seen.has(n.id)) return;
    seen.add(n.id);
    const live = RED.nodes.getNode(n.id) as unknown as DoorAccountNode | null;
    if (live && live.type === "door-account") out.push(live);
  });
  return out;
}

function publishNotice(): void {
  noticeTimer = null;
  const RED = current;
  const files = pendingFiles;
  pendingFiles = new Set();
  if (!RED) return;
  try {
    const accounts = deployedAccounts(RED)
      .filter((a) => a.account && files.has(a.account.audit.filePath))
      .map((a) => a.id);
    if (accounts.length > 0) RED.comms.publish(COMMS_TOPIC, { accounts }, false);
  } catch {
    /* the editor misses one live update; the runtime carries on */
  }
}

function onRecord(filePath: string): void {
  pendingFiles.add(filePath);
  if (!noticeTimer) {
    noticeTimer = setTimeout(publishNotice, NOTICE_BATCH_MS);
    noticeTimer.unref?.();
  }
}

/** What the editor is told about an account: no credential, no token. */
function describeAccount(n: DoorAccountNode & { name?: string }) {
  const snap = n.account?.snapshot() ?? null;
  return {
    id: n.id,
    name: n.name || null,
    state: snap?.state ?? "closed",
    reason: n.problem ?? snap?.reason ?? null,
    status: n.statusFor(),
    auditLog: n.account?.audit.filePath ?? null,
    // The service description check's findings (docs/service-description.md#what-you-see); null when off.
    serviceDescription: n.account?.descriptionCheck?.report() ?? null,
    // The account's last events, newest first (docs/events.md#in-the-sidebar): the package's own words.
    events: n.eventsKey
      ? accountEvents(n.eventsKey)
          .recent()
          .reverse()
          .map((e) => ({ topic: `${e.kind}/${e.event}`, at: e.at, message: e.message }))
      : [],
  };
}

/** Live passes first (active, then upcoming soonest first), then the ended ones, latest ended first. */
const STATE_RANK: Record<string, number> = { active: 0, upcoming: 1 };
function passOrder(a: PassView, b: PassView): number {
  const ra = STATE_RANK[a.state] ?? 2;
  const rb = STATE_RANK[b.state] ?? 2;
  if (ra !== rb) return ra - rb;
  if (ra === 1) return Date.parse(a.from) - Date.parse(b.from);
  return Date.parse(b.until) - Date.parse(a.until);
}

/** What the sidebar shows of the node that made a pass (docs/passes.md#in-the-sidebar). */
interface MadeBy {
  id: string;
  /** Its name (or null without one); null too when it is not in the flows any more. */
  name: string | null;
  /** deployed (running), disabled (in the flows, not running) or deleted. */
  state: "deployed" | "disabled" | "deleted";
  calendar: boolean;
}

/** A deployed door-pass node's hooks (door-pass.ts), or null. */
function passNode(RED: NodeAPI, id: string): PassNodeHooks | null {
  const n = RED.nodes.getNode(id) as unknown as { type?: string; doorPass?: PassNodeHooks } | null;
  if (n && n.type === "door-pass" && n.doorPass) return n.doorPass;
  return subflowPassNodes.get(id)?.hooks ?? null; // one inside a subflow instance
}

function madeBy(RED: NodeAPI, p: PassView, names: Map<string, string>): MadeBy | null {
  if (p.node === undefined) return null;
  const listed = names.get(p.node);
  const deployed = passNode(RED, p.node) !== null;
  return {
    id: p.node,
    name: listed !== undefined && listed !== "" ? listed : null,
    state: deployed ? "deployed" : listed !== undefined ? "disabled" : "deleted",
    calendar: p.calendar === true,
  };
}

/** The door-pass nodes of the flows (deployed or not), by id: their names. */
function passNodeNames(RED: NodeAPI): Map<string, string> {
  const out = new Map<string, string>();
  RED.nodes.eachNode((n: { id: string; type: string; name?: unknown }) => {
    if (n.type === "door-pass") out.set(n.id, typeof n.name === "string" ? n.name : "");
  });
  for (const [id, n] of subflowPassNodes) out.set(id, n.name);
  return out;
}

/**
 * What the sidebar shows of a pass: a PassView's fields, picked one by one (never a code nor a
 * hash), the node that made it, and whether *New code* may be offered: the pass is live and its
 * door-pass node is deployed for this account with its output wired, so the new code reaches the flow.
 */
function passRow(RED: NodeAPI, account: string, p: PassView, names: Map<string, string>) {
  const by = madeBy(RED, p, names);
  const hooks = by !== null && by.state === "deployed" ? passNode(RED, by.id) : null;
  const live = p.state === "active" || p.state === "upcoming";
  return {
    id: p.id,
    guest: p.guest,
    doors: p.doors.map((d) => ({ deviceId: d.deviceId, door: d.door })),
    from: p.from,
    until: p.until,
    uses: p.uses,
    used: p.used,
    ref: p.ref,
    state: p.state,
    madeBy: by,
    newCode: live && hooks !== null && hooks.accountId === account && hooks.wired(),
  };
}

function filterFrom(q: Request["query"]): AuditFilter | string {
  const str = (k: string): string | undefined =>
    typeof q[k] === "string" && q[k].trim() ? q[k].trim().slice(0, 200) : undefined;
  const f: AuditFilter = { door: str("door"), actor: str("actor"), outcome: str("outcome"), reason: str("reason") };
  for (const k of ["from", "to"] as const) {
    const v = str(k);
    if (v === undefined) continue;
    const d = parseInstant(v);
    if (!d) return `${k} must be an ISO-8601 date or time`;
    f[k] = d;
  }
  return f;
}

export = function register(RED: NodeAPI): void {
  current = RED;
  // The plugin's editor half (the .html) is what the editor shows; registering lets Node-RED list it.
  try {
    (RED as unknown as { plugins?: { registerPlugin(id: string, def: object): void } }).plugins?.registerPlugin(
      "door-access-sidebar",
      { type: "door-access-sidebar" },
    );
  } catch {
    /* already registered (a second load in one process) */
  }
  if (!unsubscribe) unsubscribe = onAnyAuditRecord(onRecord);

  // docs/security.md#who-can-do-what-the-admin-routes: reading needs door-account.read; a
  // signed-in user without it gets 403.
  const read = permission(RED, "door-account.read");
  // Revoking a pass changes something: door-account.write, and only as the editor's JSON from its own page
  // (docs/security.md#cross-site-requests), as Reconnect.
  const write = permission(RED, "door-account.write");
  const editorOnly = fromEditor();
  const accountFor = (req: Request, res: Response): DoorAccountNode | null => {
    const n = RED.nodes.getNode(String(req.params.id)) as unknown as DoorAccountNode | null;
    if (!n || n.type !== "door-account") {
      res.status(404).json({ error: RED._("door-account.errors.not-deployed") });
      return null;
    }
    if (!n.account) {
      res.status(409).json({ error: `configuration: ${n.problem ?? "invalid"}` });
      return null;
    }
    return n;
  };
  const failed = (res: Response) => (e: unknown) => {
    if (!res.headersSent)
      res.status(500).json({ error: `cannot read the audit log: ${e instanceof Error ? e.message : String(e)}` });
    else res.end();
  };

  RED.httpAdmin.get(`${SIDEBAR_PREFIX}/accounts`, read, (_req, res) => {
    res.json({ accounts: deployedAccounts(RED).map(describeAccount) });
  });

  RED.httpAdmin.get(`${SIDEBAR_PREFIX}/accounts/:id/records`, read, (req, res) => {
    const n = accountFor(req, res);
    if (!n) return;
    const f = filterFrom(req.query);
    if (typeof f === "string") {
      res.status(400).json({ error: f });
      return;
    }
    const limit = /^\d{1,4}$/.test(textOf(req.query.limit ?? "")) ? Number(req.query.limit) : 50;
    const beforeSeq = /^\d{1,15}$/.test(textOf(req.query.beforeSeq ?? "")) ? Number(req.query.beforeSeq) : undefined;
    readPage(n.account!.audit.filePath, f, { limit, beforeSeq })
      .then((page) => res.json({ account: describeAccount(n), ...page }), failed(res))
      .catch(() => undefined); // an answer that cannot be sent (the editor went away) is nobody's error
  });

  RED.httpAdmin.get(`${SIDEBAR_PREFIX}/accounts/:id/verify`, read, (req, res) => {
    const n = accountFor(req, res);
    if (!n) return;
    verifyAuditLog(n.account!.audit.filePath)
      .then((report) => res.json(report), failed(res))
      .catch(() => undefined);
  });

  // docs/passes.md#in-the-sidebar: an account's guest passes, never a code.
  RED.httpAdmin.get(`${SIDEBAR_PREFIX}/accounts/:id/passes`, read, (req, res) => {
    const n = accountFor(req, res);
    if (!n) return;
    n.account!.core.passes.list()
      .then((list) => {
        res.setHeader("Cache-Control", "no-store");
        const names = passNodeNames(RED);
        res.json({ passes: list.sort(passOrder).map((p) => passRow(RED, n.id, p, names)) });
      })
      .catch((e: unknown) => {
        if (!res.headersSent)
          res.status(500).json({ error: `cannot read the passes: ${e instanceof Error ? e.message : String(e)}` });
      })
      .catch(() => undefined);
  });

  RED.httpAdmin.post(`${SIDEBAR_PREFIX}/accounts/:id/passes/:passId/revoke`, write, editorOnly, (req, res) => {
    const n = accountFor(req, res);
    if (!n) return;
    const id = String(req.params.passId);
    const account = n.account!;
    account.core.passes
      .revoke({ id })
      .then((revoked) => {
        const p = revoked[0];
        if (!p) {
          res.status(404).json({ error: `no pass with id ${id.slice(0, 40)} that is not revoked already` });
          return;
        }
        // The account's events are told as the door-pass node tells them (docs/events.md#pass).
        account.core.events.emit("pass", "revoked", `the pass of ${p.guest} was revoked`, {
          id: p.id,
          guest: p.guest,
          ref: p.ref,
        });
        res.json({ revoked: p.id });
      })
      .catch((e: unknown) => {
        if (!res.headersSent)
          res.status(500).json({ error: `cannot revoke the pass: ${e instanceof Error ? e.message : String(e)}` });
      })
      .catch(() => undefined);
  });

  // docs/passes.md#a-new-code: a new code for a live pass, sent on its door-pass node's output, never in this answer.
  RED.httpAdmin.post(`${SIDEBAR_PREFIX}/accounts/:id/passes/:passId/reissue`, write, editorOnly, (req, res) => {
    const n = accountFor(req, res);
    if (!n) return;
    const id = String(req.params.passId);
    const account = n.account!;
    const refuse = (status: number, error: string) => res.status(status).json({ error });
    account.core.passes
      .list()
      .then(async (list) => {
        const p = list.find((x) => x.id === id && (x.state === "active" || x.state === "upcoming"));
        if (!p) return refuse(404, `no live pass with id ${id.slice(0, 40)}`);
        const hooks = p.node !== undefined ? passNode(RED, p.node) : null;
        if (hooks === null || hooks.accountId !== n.id)
          return refuse(
            409,
            "the door-pass node that made this pass is not deployed: its new code would reach no flow",
          );
        const r = await hooks.reissueFromEditor(id);
        if (r === "not-wired")
          return refuse(409, "the door-pass node's output is not wired: its new code would reach no flow");
        if (r === "not-found") return refuse(404, `no live pass with id ${id.slice(0, 40)}`);
        res.json({ reissued: id, node: p.node });
      })
      .catch((e: unknown) => {
        if (!res.headersSent)
          res.status(500).json({ error: `cannot issue a new code: ${e instanceof Error ? e.message : String(e)}` });
      })
      .catch(() => undefined);
  });
  // docs/access-rules.md#ending-a-lockout: the locked door-unlock nodes, and the host's end of one.
  registerLockoutRoutes(RED, SIDEBAR_PREFIX, { read, write, editorOnly }, accountFor);

  RED.httpAdmin.get(`${SIDEBAR_PREFIX}/accounts/:id/export.csv`, read, (req, res) => {
    const n = accountFor(req, res);
    if (!n) return;
    const f = filterFrom(req.query);
    if (typeof f === "string") {
      res.status(400).json({ error: f });
      return;
    }
    res.status(200);
    res.setHeader("Content-Type", "text/csv; charset=utf-8");
    res.setHeader("Content-Disposition", 'attachment; filename="door-access-audit.csv"');
    res.setHeader("Cache-Control", "no-store");
    void (async () => {
      for await (const chunk of exportCsv(n.account!.audit.filePath, f)) {
        if (!res.write(chunk))
          await new Promise<void>((resolve) => {
            res.once("drain", resolve);
            res.once("close", resolve);
          });
        if (res.destroyed) return;
      }
      res.end();
    })()
      .catch(failed(res))
      .catch(() => undefined);
  });
};
