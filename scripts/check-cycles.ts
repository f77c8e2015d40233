/**
 * Fails (exit 1) when modules of the package import each other in a cycle. Two graphs are
 * walked, each over the core and the nodes together: the compiled `dist/src/**.js` and
 * `dist/nodes/**.js` (their relative `require`s: the cycles that run) and the sources `src/**.ts`
 * and `nodes/**.ts` (every relative import, `import type` included: a cycle the compiler erases
 * is still two files that cannot be read one without the other).
 * Run after a build: `npm run check:cycles`.
 */
import * as fs from "node:fs";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..", "..");

function files(dir: string, ext: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p, ext) : p.endsWith(ext) && !p.endsWith(".d.ts") ? [p] : [];
  });
}

/** A compiled file whose source is gone (a moved or deleted module) is stale output: not walked. */
const live = (f: string): boolean =>
  !f.endsWith(".js") ||
  fs.existsSync(path.join(ROOT, path.relative(path.join(ROOT, "dist"), f)).replace(/\.js$/, ".ts"));

/** The graph of relative imports: file → files it imports (resolved, same extension as the file). */
function graph(dirs: string[], ext: ".js" | ".ts", pattern: RegExp): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of dirs.flatMap((dir) => files(dir, ext)).filter(live)) {
    const deps = [...fs.readFileSync(f, "utf8").matchAll(pattern)]
      .map((m) => path.resolve(path.dirname(f), m[1].replace(/\.js$/, ext)))
      .filter((d) => fs.existsSync(d));
    g.set(f, [...new Set(deps)]);
  }
  return g;
}

/** Every cycle found by a depth-first walk, each once (as the path from its first file back to it). */
function cycles(g: Map<string, string[]>): string[][] {
  const found = new Map<string, string[]>();
  const done = new Set<string>();
  const walk = (f: string, stack: string[]): void => {
    const at = stack.indexOf(f);
    if (at >= 0) {
      const cycle = stack.slice(at);
      found.set([...cycle].sort().join("|"), [...cycle, f]);
      return;
    }
    if (done.has(f)) return;
    for (const d of g.get(f) ?? []) walk(d, [...stack, f]);
    done.add(f);
  };
  for (const f of [...g.keys()].sort()) walk(f, []);
  return [...found.values()];
}

const checks: [string, string[], ".js" | ".ts", RegExp][] = [
  [
    "compiled requires",
    [path.join(ROOT, "dist", "src"), path.join(ROOT, "dist", "nodes")],
    ".js",
    /\brequire\("(\.{1,2}\/[^"]+)"\)/g,
  ],
  [
    "source imports (import type included)",
    [path.join(ROOT, "src"), path.join(ROOT, "nodes")],
    ".ts",
    /\b(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g,
  ],
];
let failed = false;
for (const [name, dirs, ext, pattern] of checks) {
  for (const dir of dirs.filter((d) => !fs.existsSync(d))) {
    console.error(`${path.relative(ROOT, dir)} is missing (build first: npm run build)`);
    process.exit(2);
  }
  const g = graph(dirs, ext, pattern);
  const found = cycles(g);
  console.log(`${name}: ${g.size} modules, ${found.length} cycle${found.length === 1 ? "" : "s"}`);
  for (const c of found) console.log(`  ${c.map((f) => path.relative(ROOT, f)).join(" -> ")}`);
  failed ||= found.length > 0;
}
process.exit(failed ? 1 : 0);
