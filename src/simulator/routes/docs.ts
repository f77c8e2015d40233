/**
 * The description documents (no /api prefix, GET and HEAD): /openapi.json and /openapi.yaml (the
 * live description, or what POST /_sim/docs put in its place), /openapi.pinned.json and
 * /llms.txt, each with a strong ETag and 304 on a matching If-None-Match.
 * docs/simulator.md#description-documents
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { buildOpenApi, etagMatches, llmsTxt, strongEtag, toYaml } from "../openapi.js";
import type { DescriptionOverride } from "../types.js";
import { errorResult, send, type Runtime } from "./common.js";
import { DEMO_CALENDAR_PATH, demoCalendar } from "../demo-calendar.js";

const DOCS_PATHS: readonly string[] = [
  "/openapi.json",
  "/openapi.yaml",
  "/openapi.pinned.json",
  "/llms.txt",
  DEMO_CALENDAR_PATH,
];

export function isDocsPath(path: string): boolean {
  return DOCS_PATHS.includes(path);
}

/** The handler of the docs paths of one simulator (it caches what it serves). */
export function createDocs(rt: Runtime): (req: IncomingMessage, res: ServerResponse, path: string) => void {
  const liveCache = new Map<string, { body: string; etag: string }>();
  const pinnedJson = JSON.stringify(buildOpenApi(), null, 2);
  const pinned = { body: pinnedJson, etag: strongEtag(pinnedJson) };
  /** The override the cache was built for (a new one empties it). */
  let cachedFor: DescriptionOverride | null = null;

  function doc(kind: "json" | "yaml"): { body: string; etag: string } {
    const override = rt.descriptionOverride;
    if (override !== cachedFor) {
      liveCache.clear();
      cachedFor = override;
    }
    let cached = liveCache.get(kind);
    if (!cached) {
      const description = override && "description" in override ? override.description : buildOpenApi(rt.baseUrl());
      const body = kind === "json" ? JSON.stringify(description, null, 2) : toYaml(description);
      cached = { body, etag: strongEtag(body) };
      liveCache.set(kind, cached);
    }
    return cached;
  }

  return function handleDocs(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(res, errorResult(405, `${req.method} is not allowed on ${path}`, { Allow: "GET, HEAD" }));
      return;
    }
    const override = rt.descriptionOverride;
    if (override && (path === "/openapi.json" || path === "/openapi.yaml")) {
      if ("drop" in override) {
        req.socket.destroy();
        return;
      }
      if ("status" in override) {
        send(res, errorResult(override.status, `injected: ${path} answers ${override.status}`));
        return;
      }
      if ("body" in override) {
        const raw = Buffer.from(override.body);
        res.writeHead(200, {
          "Content-Type": override.contentType ?? "application/json; charset=utf-8",
          "Content-Length": raw.length,
          "X-Spec-Source": "live",
        });
        res.end(req.method === "HEAD" ? undefined : raw);
        return;
      }
    }
    let content: { body: string; etag: string };
    let type: string;
    let source: string | null = "live";
    if (path === "/openapi.json") {
      content = doc("json");
      type = "application/json; charset=utf-8";
    } else if (path === "/openapi.yaml") {
      content = doc("yaml");
      type = "application/yaml; charset=utf-8";
    } else if (path === "/openapi.pinned.json") {
      content = pinned;
      type = "application/json; charset=utf-8";
      source = "pinned";
    } else if (path === DEMO_CALENDAR_PATH) {
      const body = demoCalendar(rt.state.now());
      content = { body, etag: strongEtag(body) };
      type = "text/calendar; charset=utf-8";
      source = null;
    } else {
      const body = llmsTxt();
      content = { body, etag: strongEtag(body) };
      type = "text/plain; charset=utf-8";
      source = null;
    }
    const headers: Record<string, string | number> = { ETag: content.etag, "Cache-Control": "no-cache" };
    if (source) headers["X-Spec-Source"] = source;
    if (etagMatches(req.headers["if-none-match"], content.etag)) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    const body = Buffer.from(content.body);
    headers["Content-Type"] = type;
    headers["Content-Length"] = body.length;
    res.writeHead(200, headers);
    res.end(req.method === "HEAD" ? undefined : body);
  };
}
