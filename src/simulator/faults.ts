/**
 * Injected faults. A fault applies to the next `count` calls that match it (by endpoint,
 * deviceId and/or accountId); each matching call consumes one, and only the oldest matching
 * fault applies to a call.
 *
 * What each kind does (see FaultKind in types.ts):
 * - "429", "500", "502", "503", "504": answer that status with an ErrorResponse
 *   (`Retry-After` on 429, default 1 s, and on 5xx when `retryAfter` is given). The call
 *   does not execute, except 504 with `executed: true` (executed, then 504).
 * - "drop": reads the whole request, then destroys the socket; with `executed: true` the
 *   call executes first.
 *   With `latencyMs`, a status or "drop" fault answers (or drops) only after that long; with
 *   `title`, a status fault's ErrorResponse carries that title (a service's own wording, or markup).
 * - "latency": waits `latencyMs` (default 1000), then handles the call normally.
 * - "non-json", "truncated", "huge", "empty-token-pair": a 200 with a broken body; the call
 *   does not execute.
 * - "jwt-without-exp": the call executes (a login/refresh really creates/rotates the
 *   session) but the AccessToken has no `exp` claim.
 * - "wrong-content-type" and "slow-headers": the call executes and its real, correct
 *   response is sent, with `Content-Type: text/html`, or with the status line and headers
 *   delayed by `latencyMs` (default 2000) and the body trickled in small pieces afterwards.
 *
 * When `endpoint` is absent, "empty-token-pair" and "jwt-without-exp" only match the
 * token-issuing operations (1-4); every other kind matches every /api operation.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { OPERATIONS, type OperationId } from "../spec/schemas.js";
import type { FaultKind, FaultSpec } from "./types.js";

export const FAULT_KINDS = [
  "429",
  "500",
  "502",
  "503",
  "504",
  "latency",
  "drop",
  "non-json",
  "truncated",
  "huge",
  "empty-token-pair",
  "jwt-without-exp",
  "wrong-content-type",
  "slow-headers",
] as const satisfies readonly FaultKind[];

const OperationIdSchema = z.enum(Object.keys(OPERATIONS) as [OperationId, ...OperationId[]]);

export const FaultSpecSchema = z.strictObject({
  kind: z.enum(FAULT_KINDS),
  endpoint: z.union([OperationIdSchema, z.array(OperationIdSchema).min(1)]).optional(),
  deviceId: z.number().int().optional(),
  accountId: z.string().min(1).optional(),
  count: z.number().int().min(1).max(1_000_000).optional(),
  retryAfter: z.union([z.number().int().min(0), z.string().min(1)]).optional(),
  latencyMs: z.number().int().min(0).max(600_000).optional(),
  sizeBytes: z
    .number()
    .int()
    .min(2)
    .max(256 * 1024 * 1024)
    .optional(),
  executed: z.boolean().optional(),
  title: z.string().max(1000).optional(),
});

export const TOKEN_OPERATIONS: readonly OperationId[] = ["login", "loginByPhone", "loginByEmail", "refreshToken"];

export interface ActiveFault {
  id: string;
  spec: FaultSpec;
  remaining: number;
}

export class FaultStore {
  private faults: ActiveFault[] = [];

  inject(spec: FaultSpec): string {
    const parsed = FaultSpecSchema.safeParse(spec);
    if (!parsed.success) throw new Error(`invalid fault: ${z.prettifyError(parsed.error)}`);
    const fault: ActiveFault = { id: randomUUID(), spec: parsed.data, remaining: parsed.data.count ?? 1 };
    this.faults.push(fault);
    if (this.faults.length > 10_000) this.faults.shift();
    return fault.id;
  }

  clear(): void {
    this.faults = [];
  }

  remove(id: string): boolean {
    const before = this.faults.length;
    this.faults = this.faults.filter((f) => f.id !== id);
    return this.faults.length !== before;
  }

  list(): ActiveFault[] {
    return this.faults.map((f) => ({ id: f.id, spec: { ...f.spec }, remaining: f.remaining }));
  }

  /** Finds the first fault matching the call, consumes one use of it and returns its spec. */
  take(call: { operation: OperationId; deviceId: number | null; accountId: string | null }): FaultSpec | null {
    for (const fault of this.faults) {
      if (!matches(fault.spec, call)) continue;
      fault.remaining--;
      if (fault.remaining <= 0) this.faults = this.faults.filter((f) => f !== fault);
      return fault.spec;
    }
    return null;
  }
}

function matches(
  spec: FaultSpec,
  call: { operation: OperationId; deviceId: number | null; accountId: string | null },
): boolean {
  if (spec.endpoint !== undefined) {
    const ops = Array.isArray(spec.endpoint) ? spec.endpoint : [spec.endpoint];
    if (!ops.includes(call.operation)) return false;
  } else if (
    (spec.kind === "empty-token-pair" || spec.kind === "jwt-without-exp") &&
    !TOKEN_OPERATIONS.includes(call.operation)
  ) {
    return false;
  }
  if (spec.deviceId !== undefined && spec.deviceId !== call.deviceId) return false;
  if (spec.accountId !== undefined && spec.accountId !== call.accountId) return false;
  return true;
}
