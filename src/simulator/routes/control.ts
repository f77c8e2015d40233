/**
 * The control routes under /_sim/ (loopback only unless allowRemoteControl; never written to
 * the request log). docs/simulator.md#control-api
 *
 *   POST   /_sim/faults                          body: FaultSpec JSON        -> 201 {id}
 *   GET    /_sim/faults                                                      -> 200 [{id, spec, remaining}]
 *   DELETE /_sim/faults                          clear every fault           -> 204
 *   DELETE /_sim/faults/:faultId                 remove one fault            -> 204 | 404
 *   GET    /_sim/devices/:id                     DeviceState                 -> 200 | 404
 *   POST   /_sim/devices/:id/online              body: {"online": boolean}   -> 200 DeviceState | 404
 *   PATCH  /_sim/devices/:id                     body: {name?, locationId?, newId?, remove?} (rename, move,
 *                                                renumber or remove a door)  -> 204 | 400 | 404
 *   GET    /_sim/accounts/:id                    {id, hasSession}            -> 200 | 404
 *   POST   /_sim/accounts/:id/expire-access      current access token -> 401 "expired"   -> 204 | 404
 *   POST   /_sim/accounts/:id/revoke-access      current access token -> 401 "revoked"   -> 204 | 404
 *   POST   /_sim/accounts/:id/expire-refresh     current refresh token -> 401 on refresh -> 204 | 404
 *   POST   /_sim/accounts/:id/supersede          a login from elsewhere  -> 204 | 404
 *   GET    /_sim/requests?operation=&accountId=&deviceId=                    -> 200 RequestLogEntry[]
 *   DELETE /_sim/requests                        clear the request log       -> 204
 *   GET    /_sim/counts                          {logins, refreshes, unlocks} -> 200
 *   POST   /_sim/rate-limit                      body: {capacity, refillPerSec} or false -> 204
 *   POST   /_sim/docs                            what /openapi.json and /openapi.yaml serve instead of the
 *                                                simulator's own description, one of: {"description": {...}}
 *                                                (another description), {"body": "...", "contentType"?: "..."}
 *                                                (a body that is not one), {"status": 404} (an error status),
 *                                                {"drop": true} (the connection closes without an answer)
 *                                                                            -> 204 | 400
 *   DELETE /_sim/docs                            serve the simulator's own description again -> 204
 *
 * A bad body is 400, an unknown account, door, fault or route 404, a wrong method 405.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import type { FaultSpec, SimulatorControl } from "../types.js";
import { BodyTooLarge, errorResult, readBody, send, type Runtime } from "./common.js";

type ControlHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;

export function createControl(rt: Runtime, control: SimulatorControl): ControlHandler {
  const { state } = rt;
  return async function handleControl(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname.replace(/\/+$/, "");
    const method = req.method ?? "GET";
    const ok = (json: unknown, status = 200) => send(res, { status, json });
    const none = () => send(res, { status: 204 });
    let body: unknown;
    const readJson = async (): Promise<unknown> => {
      const raw = await readBody(req);
      if (raw.length === 0) return undefined;
      return JSON.parse(raw.toString("utf8"));
    };
    try {
      let m: RegExpExecArray | null;
      if (path === "/_sim/faults") {
        if (method === "POST") {
          body = await readJson();
          return ok({ id: control.inject(body as FaultSpec) }, 201);
        }
        if (method === "GET") return ok(rt.faults.list());
        if (method === "DELETE") {
          control.clearFaults();
          return none();
        }
      } else if ((m = /^\/_sim\/faults\/([^/]+)$/.exec(path))) {
        if (method === "DELETE") {
          return rt.faults.remove(decodeURIComponent(m[1])) ? none() : send(res, errorResult(404, "no such fault"));
        }
      } else if ((m = /^\/_sim\/devices\/([^/]+)$/.exec(path))) {
        if (method === "GET") return ok(control.device(Number(m[1])));
        if (method === "PATCH") {
          body = await readJson();
          const parsed = z
            .strictObject({
              name: z.string().min(1).optional(),
              locationId: z.int().optional(),
              newId: z.int().min(1).max(2147483647).optional(),
              remove: z.boolean().optional(),
            })
            .safeParse(body);
          if (!parsed.success) return send(res, errorResult(400, "body must be {name?, locationId?, newId?, remove?}"));
          control.editDevice(Number(m[1]), parsed.data);
          return none();
        }
      } else if ((m = /^\/_sim\/devices\/([^/]+)\/online$/.exec(path))) {
        if (method === "POST") {
          body = await readJson();
          const parsed = z.strictObject({ online: z.boolean() }).safeParse(body);
          if (!parsed.success) return send(res, errorResult(400, 'body must be {"online": true|false}'));
          control.setOnline(Number(m[1]), parsed.data.online);
          return ok(control.device(Number(m[1])));
        }
      } else if ((m = /^\/_sim\/accounts\/([^/]+)$/.exec(path))) {
        if (method === "GET") {
          const id = decodeURIComponent(m[1]);
          state.requireAccount(id);
          return ok({ id, hasSession: control.hasSession(id) });
        }
      } else if (
        (m = /^\/_sim\/accounts\/([^/]+)\/(expire-access|revoke-access|expire-refresh|supersede)$/.exec(path))
      ) {
        if (method === "POST") {
          const id = decodeURIComponent(m[1]);
          const action = m[2];
          if (action === "expire-access") control.expireAccessToken(id);
          else if (action === "revoke-access") control.revokeAccessToken(id);
          else if (action === "expire-refresh") control.expireRefreshToken(id);
          else control.supersede(id);
          return none();
        }
      } else if (path === "/_sim/requests") {
        if (method === "GET") {
          const filter: { operation?: string; accountId?: string; deviceId?: number } = {};
          const q = url.searchParams;
          if (q.has("operation")) filter.operation = q.get("operation")!;
          if (q.has("accountId")) filter.accountId = q.get("accountId")!;
          if (q.has("deviceId")) filter.deviceId = Number(q.get("deviceId"));
          return ok(control.requests(filter));
        }
        if (method === "DELETE") {
          control.resetRequests();
          return none();
        }
      } else if (path === "/_sim/counts") {
        if (method === "GET") return ok(control.counts());
      } else if (path === "/_sim/docs") {
        if (method === "POST") {
          body = await readJson();
          const parsed = z
            .union([
              z.strictObject({ description: z.record(z.string(), z.unknown()) }),
              z.strictObject({ body: z.string(), contentType: z.string().min(1).optional() }),
              z.strictObject({ status: z.int().min(400).max(599) }),
              z.strictObject({ drop: z.literal(true) }),
            ])
            .safeParse(body);
          if (!parsed.success) {
            return send(
              res,
              errorResult(
                400,
                'body must be {"description": {...}}, {"body": "...", "contentType"?: "..."}, {"status": 400-599} or {"drop": true}',
              ),
            );
          }
          control.serveDescription(parsed.data);
          return none();
        }
        if (method === "DELETE") {
          control.serveDescription(null);
          return none();
        }
      } else if (path === "/_sim/rate-limit") {
        if (method === "POST") {
          body = await readJson();
          const parsed = z
            .union([
              z.literal(false),
              z.strictObject({ capacity: z.number().positive(), refillPerSec: z.number().min(0) }),
            ])
            .safeParse(body);
          if (!parsed.success) return send(res, errorResult(400, "body must be {capacity, refillPerSec} or false"));
          control.setRateLimit(parsed.data);
          return none();
        }
      } else {
        return send(res, errorResult(404, `no control route ${path}`));
      }
      return send(res, errorResult(405, `${method} is not allowed on ${path}`));
    } catch (err) {
      if (err instanceof BodyTooLarge) return send(res, errorResult(413, "body too large", { Connection: "close" }));
      if (err instanceof SyntaxError) return send(res, errorResult(400, "body is not valid JSON"));
      const message = (err as Error).message;
      return send(res, errorResult(/^unknown /.test(message) ? 404 : 400, message));
    }
  };
}
