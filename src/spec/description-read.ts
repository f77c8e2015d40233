/**
 * Reads a service description's bytes as the check needs them (docs/service-description.md#when):
 * nesting looked at before JSON.parse, the OpenAPI shape, then the comparison with its work bound
 * (src/spec/description.ts). Synchronous and pure: the check runs it in a worker thread
 * (src/spec/description-worker.ts), so that neither JSON.parse of a 4 MiB body nor the comparison
 * ever holds Node-RED's event loop.
 */
import { TOO_COMPLEX, compareDescription, isDescription, nestsDeeperThan } from "./description.js";

export type DescriptionRead =
  /** Compared: the differences (none, some, or [TOO_COMPLEX] when the work bound was reached). */
  | { kind: "compared"; differences: string[] }
  /** Nested deeper than MAX_NESTING: not parsed, reported as too complex. */
  | { kind: "too-deep"; differences: string[] }
  | { kind: "not-json" }
  | { kind: "not-openapi" };

export function readDescription(body: Uint8Array): DescriptionRead {
  if (nestsDeeperThan(body)) return { kind: "too-deep", differences: [TOO_COMPLEX] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8"));
  } catch {
    return { kind: "not-json" };
  }
  if (!isDescription(parsed)) return { kind: "not-openapi" };
  return { kind: "compared", differences: compareDescription(parsed) };
}
