/**
 * undici's Pool without the rest of undici.
 *
 * `require("undici")` loads about 110 modules (fetch, WebSocket, EventSource, caches, mocks,
 * proxies: about 19 MiB and a quarter of a second on a small machine) of which the client uses
 * one class, `Pool`, and its `request()`. Those live in `lib/dispatcher/pool.js`, and
 * `request()` is put on `Dispatcher.prototype` by undici's own `index.js`
 * (`Object.assign(Dispatcher.prototype, api)`); this module does the same with the same
 * files, so the class is the very one `require("undici").Pool` returns (the test
 * `test/demo/footprint.test.ts` checks that it is, for the installed undici).
 *
 * undici has no `exports` map, so the paths can be required, but they are not its public
 * API: should a later undici move them, this falls back to `require("undici")` (the same
 * Pool, only heavier to load).
 */
import { createRequire } from "node:module";
import type { Pool as UndiciPool } from "undici";

export type PoolClass = typeof UndiciPool;

/** This module's own `require`: the files are loaded on first use, synchronously (CommonJS). */
const requireOnUse = createRequire(__filename);

let loaded: PoolClass | undefined;
/** How the Pool was loaded: "lean" (the three files) or "full" (undici's index). */
export let poolSource: "lean" | "full" | "none" = "none";

export function undiciPool(): PoolClass {
  if (loaded) return loaded;
  try {
    const Pool = requireOnUse("undici/lib/dispatcher/pool.js") as PoolClass;
    const Dispatcher = requireOnUse("undici/lib/dispatcher/dispatcher.js") as abstract new (...args: never[]) => object;
    const api = requireOnUse("undici/lib/api/index.js") as Record<string, unknown>;
    if (typeof Pool === "function" && Pool.prototype instanceof Dispatcher && typeof api.request === "function") {
      Object.assign(Dispatcher.prototype, api);
      poolSource = "lean";
      return (loaded = Pool);
    }
  } catch {
    /* another layout of undici: load it whole */
  }
  poolSource = "full";
  return (loaded = (requireOnUse("undici") as typeof import("undici")).Pool);
}
