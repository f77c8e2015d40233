/**
 * How an injected fault answers an /api call (the faults themselves are kept in ../faults.ts):
 * a status, a dropped connection, a broken body, or the real answer sent slowly.
 * docs/simulator.md#faults
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { TOKEN_OPERATIONS } from "../faults.js";
import type { FaultSpec } from "../types.js";
import { STATUS_TITLES, errorResult, send, type Call, type Result, type Runtime } from "./common.js";

type Execute = (call: Call, opts: { withExp: boolean }) => Promise<Result>;

/**
 * Answers the call as the fault says and returns true, or returns false for the kinds that are
 * handled in the normal flow (latency, jwt-without-exp, wrong-content-type, slow-headers).
 */
export async function applyFault(
  rt: Runtime,
  fault: FaultSpec,
  call: Call,
  req: IncomingMessage,
  res: ServerResponse,
  execute: Execute,
): Promise<boolean> {
  const op = call.route.operation;
  // A status or drop fault with latencyMs answers only after that long (a slow failure: a
  // renewal that hangs, then fails).
  if (fault.latencyMs !== undefined && ["429", "500", "502", "503", "504", "drop"].includes(fault.kind))
    await rt.sleep(fault.latencyMs);
  switch (fault.kind) {
    case "429":
      send(
        res,
        errorResult(
          429,
          "injected fault: too many requests",
          { "Retry-After": String(fault.retryAfter ?? 1) },
          fault.title,
        ),
      );
      return true;
    case "500":
    case "502":
    case "503":
    case "504": {
      const status = Number(fault.kind);
      if (status === 504 && fault.executed) await execute(call, { withExp: true });
      const headers = fault.retryAfter !== undefined ? { "Retry-After": String(fault.retryAfter) } : undefined;
      send(res, errorResult(status, `injected fault: ${STATUS_TITLES[status]}`, headers, fault.title));
      return true;
    }
    case "drop":
      if (fault.executed) await execute(call, { withExp: true });
      req.socket.destroy();
      return true;
    case "non-json": {
      const body = "<html><body>upstream error: this is not JSON</body></html>";
      res.writeHead(200, {
        "Content-Type": "application/json; charset=utf-8",
        "Content-Length": Buffer.byteLength(body),
      });
      res.end(body);
      return true;
    }
    case "truncated": {
      const body = JSON.stringify(
        TOKEN_OPERATIONS.includes(op)
          ? { AccessToken: "x".repeat(200), RefreshToken: "rt_" + "y".repeat(43) }
          : { id: call.deviceId ?? 0, name: "truncated".repeat(20), online: true },
      );
      res.writeHead(200, {
        "Content-Type": "application/json; charset=utf-8",
        "Content-Length": Buffer.byteLength(body),
      });
      res.write(body.slice(0, Math.floor(body.length / 2)), () => {
        setImmediate(() => res.socket?.destroy());
      });
      return true;
    }
    case "huge": {
      const size = fault.sizeBytes ?? 8 * 1024 * 1024;
      await sendHuge(rt, res, size);
      return true;
    }
    case "empty-token-pair":
      send(res, { status: 200, json: {} });
      return true;
    default:
      return false; // latency, jwt-without-exp, wrong-content-type, slow-headers: handled in the normal flow
  }
}

/** Streams `{"padding":"aaa..."}` of exactly `size` bytes, honouring back-pressure. */
async function sendHuge(rt: Runtime, res: ServerResponse, size: number): Promise<void> {
  const prefix = '{"padding":"';
  const suffix = '"}';
  let remaining = Math.max(0, size - prefix.length - suffix.length);
  res.writeHead(200, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": prefix.length + remaining + suffix.length,
  });
  res.write(prefix);
  const chunk = Buffer.alloc(64 * 1024, "a");
  while (remaining > 0 && !res.destroyed && !rt.isClosed()) {
    const n = Math.min(chunk.length, remaining);
    remaining -= n;
    const ok = res.write(n === chunk.length ? chunk : chunk.subarray(0, n));
    if (!ok) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
  if (!res.destroyed) res.end(suffix);
}

/** The real answer, its status line after `delayMs`, its body in eight pieces 25 ms apart. */
export async function sendSlow(rt: Runtime, res: ServerResponse, result: Result, delayMs: number): Promise<void> {
  await rt.sleep(delayMs);
  if (res.destroyed) return;
  const headers: Record<string, string | number> = { ...(result.headers ?? {}) };
  const body = result.json === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(result.json));
  if (result.json !== undefined) headers["Content-Type"] = "application/json; charset=utf-8";
  headers["Content-Length"] = body.length;
  res.writeHead(result.status, headers);
  res.flushHeaders();
  const pieces = 8;
  const step = Math.ceil(body.length / pieces) || 1;
  for (let i = 0; i < body.length; i += step) {
    if (res.destroyed) return;
    res.write(body.subarray(i, i + step));
    await rt.sleep(25);
  }
  res.end();
}
