/**
 * The sidebar's lockouts (docs/access-rules.md#ending-a-lockout): the door-unlock nodes of an
 * account that are locked now, per door, and the end of one by the editor user. Reading needs
 * `door-account.read`; ending one `door-account.write`, taken only as the editor's JSON from its
 * own page (docs/security.md#cross-site-requests), as revoking a pass is. Nothing is sent to the
 * service; the end is in the audit log and in `rule/lockout-ended` with `by: "editor:<user>"`.
 */
import type { NodeAPI } from "node-red";
import type { Request, Response } from "express";
import type { Middleware } from "../common/admin-access.js";
import { lockoutControl, lockoutControls } from "../common/lockout-control.js";

/** Who ended it, as the audit record and the event name them: the signed-in editor user. */
function editorUser(req: Request): string {
  const user = (req as Request & { user?: { username?: unknown; anonymous?: boolean } }).user;
  const name = typeof user?.username === "string" && !user.anonymous ? user.username : "";
  // eslint-disable-next-line no-control-regex
  return name ? `editor:${name.replace(/[\u0000-\u001f\u007f]/g, "").slice(0, 100)}` : "editor";
}

export function registerLockoutRoutes(
  RED: NodeAPI,
  prefix: string,
  guards: { read: Middleware; write: Middleware; editorOnly: Middleware },
  accountFor: (req: Request, res: Response) => unknown,
): void {
  RED.httpAdmin.get(`${prefix}/accounts/:id/lockouts`, guards.read, (req, res) => {
    if (!accountFor(req, res)) return;
    const id = String(req.params.id);
    const lockouts = lockoutControls(id).flatMap((c) => c.locks().map((l) => ({ node: c.nodeId, name: c.name, ...l })));
    res.setHeader("Cache-Control", "no-store");
    res.json({ lockouts });
  });

  RED.httpAdmin.post(`${prefix}/accounts/:id/lockouts/:nodeId/end`, guards.write, guards.editorOnly, (req, res) => {
    if (!accountFor(req, res)) return;
    const c = lockoutControl(String(req.params.nodeId));
    if (c === null || c.accountId !== String(req.params.id)) {
      res.status(404).json({ error: "no door-unlock node of this account with a lockout to end" });
      return;
    }
    const asked = (req.body as { deviceId?: unknown } | undefined)?.deviceId;
    if (asked !== undefined && asked !== null && !(typeof asked === "number" && Number.isInteger(asked))) {
      res.status(400).json({ error: "deviceId must be a whole number, or null for every lockout of the node" });
      return;
    }
    c.end(typeof asked === "number" ? asked : null, editorUser(req))
      .then((r) => res.json(r))
      .catch((e: unknown) => {
        if (!res.headersSent)
          res.status(500).json({ error: `cannot end the lockout: ${e instanceof Error ? e.message : String(e)}` });
      })
      .catch(() => undefined);
  });
}
