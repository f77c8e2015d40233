/**
 * The text of the file pass book (docs/passes.md#where-passes-are-kept): `{"v":1,"passes":[...]}`,
 * turned into JSON WRITE_SLICE passes at a time with a turn of the event loop between, so a
 * calendar's 10,000 passes never hold Node-RED for the whole book (docs/passes.md#what-passes-cost).
 */
import type { Pass } from "./pass.js";

/** Passes turned into JSON in one turn of the event loop. */
export const WRITE_SLICE = 500;

/** The file's text for `passes` (the same text as one JSON.stringify of the whole book). */
export async function passesFileText(passes: readonly Pass[]): Promise<string> {
  const parts: string[] = [];
  for (let i = 0; i < passes.length; i += WRITE_SLICE) {
    if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    parts.push(JSON.stringify(passes.slice(i, i + WRITE_SLICE)).slice(1, -1));
  }
  return `{"v":1,"passes":[${parts.join(",")}]}\n`;
}
