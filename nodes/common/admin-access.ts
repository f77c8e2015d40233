/**
 * The checks in front of every admin route the package registers (door-account's under
 * /door-access/accounts, the sidebar's under /door-access/sidebar):
 *
 * - permission(): first, a request a browser sends for a page of another origin is refused
 *   (fromThisOrigin); then Node-RED's RED.auth.needsPermission: a signed-in user who lacks the
 *   permission gets 403 (Node-RED itself answers 401, which says "sign in"); no token or a bad
 *   one stays 401 (docs/security.md#who-can-do-what-the-admin-routes).
 * - fromEditor(): a request that may change something (every POST) is taken only as JSON with
 *   the X-Requested-With header the editor's $.ajax sends (docs/security.md#cross-site-requests).
 *
 * Why both: without adminAuth, Node-RED 4 answers every CORS preflight of its admin API with
 * Access-Control-Allow-Origin: * (its editor-api applies cors({ origin: "*" }) whatever
 * httpAdminCors says), so a page on any site may send JSON with X-Requested-With and read the
 * answer. What a page cannot change is what the browser adds: Sec-Fetch-Site, and Origin.
 */
import type { NextFunction, Request, Response } from "express";
import type { NodeAPI } from "node-red";

export const EDITOR_HEADER = "X-Requested-With";
export const EDITOR_HEADER_VALUE = "XMLHttpRequest";

export type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/**
 * Why a request comes from a page of another origin, or null: a browser's Sec-Fetch-Site other
 * than same-origin (or none: an address typed or bookmarked), else an Origin whose host is not
 * the one the request was sent to (X-Forwarded-Host behind a proxy, else Host). A request without
 * either (a script, curl, Node-RED's own tools) is not a browser's and passes.
 */
export function otherOrigin(req: Request): string | null {
  const site = String(req.headers["sec-fetch-site"] ?? "")
    .trim()
    .toLowerCase();
  if (site)
    return site === "same-origin" || site === "none"
      ? null
      : `the browser sent it for a page of another origin (Sec-Fetch-Site: ${site.slice(0, 20)})`;
  const origin = req.headers.origin;
  if (origin === undefined) return null;
  const host = String(req.headers["x-forwarded-host"] ?? req.headers.host ?? "")
    .split(",")[0]
    .trim()
    .toLowerCase();
  let from: string | null = null;
  try {
    from = new URL(String(origin)).host.toLowerCase();
  } catch {
    /* "null" (a sandboxed page, a file) or garbage: not this origin */
  }
  return from !== null && from !== "" && from === host
    ? null
    : "the browser sent it for a page of another origin (Origin)";
}

/** Refuses, with 403, a request a browser sends for a page of another origin (otherOrigin). */
export function fromThisOrigin(): Middleware {
  return (req, res, next) => {
    const why = otherOrigin(req);
    if (why === null) {
      next();
      return;
    }
    res
      .status(403)
      .json({ error: `refused: ${why}; the door-access routes answer only the Node-RED editor's own page` });
  };
}

export function permission(RED: NodeAPI, name: "door-account.read" | "door-account.write"): Middleware {
  const check = RED.auth.needsPermission(name) as unknown as Middleware;
  const sameOrigin = fromThisOrigin();
  return (req, res, next) => sameOrigin(req, res, () => checkPermission(req, res, next));
  function checkPermission(req: Request, res: Response, next: NextFunction): void {
    // Node-RED refuses a signed-in user with res.status(401); passport answers a missing or bad
    // token without res.status (statusCode and end): only the first becomes a 403.
    const status = res.status; // eslint-disable-line @typescript-eslint/unbound-method -- put back unbound, as it was; called with `this` below
    res.status = function (this: Response, code: number) {
      res.status = status;
      const user = (req as Request & { user?: { anonymous?: boolean } }).user;
      return status.call(this, code === 401 && user && !user.anonymous ? 403 : code);
    } as Response["status"];
    check(req, res, (err?: unknown) => {
      res.status = status;
      next(err as Error | undefined);
    });
  }
}

export function fromEditor(): Middleware {
  return (req, res, next) => {
    const type = String(req.headers["content-type"] ?? "")
      .split(";")[0]
      .trim()
      .toLowerCase();
    const marked =
      String(req.headers[EDITOR_HEADER.toLowerCase()] ?? "").toLowerCase() === EDITOR_HEADER_VALUE.toLowerCase();
    if (type === "application/json" && marked) {
      next();
      return;
    }
    res.status(403).json({
      error: `refused: this request may change something and is taken only from the Node-RED editor (Content-Type: application/json and ${EDITOR_HEADER}: ${EDITOR_HEADER_VALUE})`,
    });
  };
}

/**
 * Whether the request's user also has `name` (Node-RED's own check, asked without answering the
 * request): true without adminAuth. For a route that a user with less may call but that does
 * more for a user with that permission.
 */
export function hasPermission(
  RED: NodeAPI,
  name: "door-account.read" | "door-account.write",
): (req: Request) => Promise<boolean> {
  const check = RED.auth.needsPermission(name) as unknown as Middleware;
  return (req) =>
    new Promise<boolean>((resolve) => {
      const refused = () => resolve(false);
      // Node-RED refuses with res.status(401).end(); passport with statusCode, setHeader and end.
      const probe = {
        statusCode: 200,
        setHeader: () => undefined,
        end: refused,
        status: () => ({ end: refused, json: refused, send: refused }),
      };
      try {
        check(req, probe as unknown as Response, (err?: unknown) => resolve(!err));
      } catch {
        resolve(false);
      }
    });
}
