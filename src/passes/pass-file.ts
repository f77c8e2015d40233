/**
 * The text of the file pass book (docs/passes.md#where-passes-are-kept): `{"v":1,"passes":[...]}`,
 * turned into JSON WRITE_SLICE passes at a time with a turn of the event loop between, so a
 * calendar's 10,000 passes never hold Node-RED for the whole book (docs/passes.md#what-passes-cost).
 */
import type { Pass } from "./pass.js";

/** Passes turned into JSON in one turn of the event loop. */
export const WRITE_SLICE = 500;

/**
 * The file's text for `passes` (the same text as one JSON.stringify of the whole book), as they
 * were when it began: a pass changed between two slices is written as `before` holds it (its JSON
 * from just before the change, put there by the book), since that change is written by the next
 * write, or not at all when that one fails (and the book takes the change back).
 */
export async function passesFileText(
  passes: readonly Pass[],
  before: ReadonlyMap<string, string> = new Map(),
): Promise<string> {
  const parts: string[] = [];
  for (let i = 0; i < passes.length; i += WRITE_SLICE) {
    if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const slice = passes.slice(i, i + WRITE_SLICE);
    const then = before.size === 0 ? slice : slice.map((p) => asBefore(p, before));
    parts.push(JSON.stringify(then).slice(1, -1));
  }
  return `{"v":1,"passes":[${parts.join(",")}]}\n`;
}

function asBefore(p: Pass, before: ReadonlyMap<string, string>): Pass {
  const json = before.get(p.id);
  return json === undefined ? p : (JSON.parse(json) as Pass);
}
