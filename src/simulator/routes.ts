/**
 * HTTP routing of the simulator: one listener for the ten /api operations, the description
 * documents and the /_sim control routes. Each group lives in routes/ and is registered here:
 *
 *   routes/auth.ts      login, login-by-phone, login-by-email, refresh, logout; who is calling
 *   routes/devices.ts   the device list, the location list, one device
 *   routes/unlock.ts    unlock a device, unlock one of its locks
 *   routes/api.ts       the pipeline of every /api call (body, caller, fault, rate limit, answer)
 *   routes/docs.ts      /openapi.json, /openapi.yaml, /openapi.pinned.json, /llms.txt
 *   routes/control.ts   /_sim/* (docs/simulator.md#control-api)
 *
 * Every /api and docs request is written to the request log (docs/simulator.md#request-log); it
 * keeps the names of the request's headers and the value of If-None-Match, never another
 * header's value (an Authorization header shows as its name only). /_sim requests are not logged.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createApi } from "./routes/api.js";
import { authOperations } from "./routes/auth.js";
import { Closed, errorResult, headerNames, send, type Runtime } from "./routes/common.js";
import { createControl } from "./routes/control.js";
import { deviceOperations } from "./routes/devices.js";
import { createDocs, isDocsPath } from "./routes/docs.js";
import { unlockOperations } from "./routes/unlock.js";
import type { RequestLogEntry, SimulatorControl } from "./types.js";

export { Closed, MAX_BODY_BYTES, type Result, type Runtime } from "./routes/common.js";

/** The request handler for one simulator. */
export function createHandler(rt: Runtime, control: SimulatorControl) {
  const { state } = rt;
  const api = createApi(rt, { ...authOperations(rt), ...deviceOperations(rt), ...unlockOperations(rt) });
  const handleDocs = createDocs(rt);
  const handleControl = createControl(rt, control);

  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://sim.invalid");
    const path = url.pathname;
    const method = req.method ?? "GET";
    try {
      if (path === "/_sim" || path.startsWith("/_sim/")) {
        await handleControl(req, res, url);
        return;
      }
      const entry: RequestLogEntry = {
        seq: state.nextSeq(),
        method,
        path,
        operation: "unknown",
        status: 0,
        accountId: null,
        deviceId: null,
        lockId: null,
        fault: null,
        startedAt: state.now(),
        endedAt: 0,
        tokenId: null,
        issuedTokenId: null,
        headers: headerNames(req),
        ifNoneMatch:
          typeof req.headers["if-none-match"] === "string" ? req.headers["if-none-match"].slice(0, 200) : null,
      };
      let logged = false;
      state.open.add(entry);
      const log = () => {
        if (logged) return;
        logged = true;
        entry.status = res.headersSent ? res.statusCode : 0;
        entry.endedAt = state.now();
        state.pushLog(entry);
      };
      // Logged as soon as the response is complete (or the connection is gone).
      res.once("finish", log);
      res.once("close", log);
      if (isDocsPath(path)) {
        entry.operation = "docs";
        handleDocs(req, res, path);
        return;
      }
      const match = api.match(method, path);
      if (match === null) {
        send(res, errorResult(404, `no operation at ${path}`));
        return;
      }
      if ("notAllowed" in match) {
        send(res, errorResult(405, `${method} is not allowed on ${path}`, { Allow: match.notAllowed.join(", ") }));
        return;
      }
      await api.handle(req, res, entry, match.route);
    } catch (err) {
      if (err instanceof Closed || rt.isClosed()) {
        res.socket?.destroy();
        return;
      }
      send(res, errorResult(500, `simulator error: ${(err as Error).message}`));
    }
  };
}
