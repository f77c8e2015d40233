/**
 * Fails (exit 1) when a folder of the core imports from a folder of its own layer or of a higher
 * one: the table of docs/architecture.md#the-layers. Every relative import of the sources counts,
 * `import type` included (a type taken sideways is still a dependency a reader has to follow).
 * The simulator stands apart: it imports only `spec` and `util`. The nodes (`src/nodes/`, or a
 * top-level `nodes/`) are the top layer. Run: `npm run check:layers` (after a build).
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** Each folder's layer: a folder imports only from folders of a lower number (and from itself). */
export const LAYERS: Readonly<Record<string, number>> = {
  nodes: 6,
  unlock: 5,
  account: 4,
  session: 3,
  doors: 3,
  audit: 3,
  passes: 3,
  client: 2,
  spec: 1,
  util: 1,
};

/** The simulator is no layer: it may import these and nothing else of the core. */
export const SIMULATOR_MAY_IMPORT: readonly string[] = ["spec", "util"];

export interface LayerViolation {
  /** The importing file and the imported one, relative to the root. */
  file: string;
  imports: string;
  /** Why it is refused, in one line. */
  rule: string;
}

const IMPORT = /\b(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g;

function sources(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.(ts|mts|cts)$/.test(p) && !p.endsWith(".d.ts") ? [p] : [];
  });
}

/** The folder of the core a file belongs to (`src/<folder>/...`, or `nodes` for a top-level `nodes/`), or null. */
function folderOf(root: string, file: string): string | null {
  const parts = path.relative(root, file).split(path.sep);
  if (parts[0] === "nodes" && parts.length > 1) return "nodes";
  if (parts[0] === "src" && parts.length > 2) return parts[1];
  return null;
}

function ruleBroken(from: string, to: string): string | null {
  if (from === to) return null;
  if (from === "simulator") {
    return SIMULATOR_MAY_IMPORT.includes(to)
      ? null
      : `the simulator imports only ${SIMULATOR_MAY_IMPORT.join(" and ")}`;
  }
  if (to === "simulator") return "nothing of the core imports the simulator";
  const a = LAYERS[from];
  const b = LAYERS[to];
  if (a === undefined) return `${from} is in no layer (add it to the table of docs/architecture.md#the-layers)`;
  if (b === undefined) return `${to} is in no layer (add it to the table of docs/architecture.md#the-layers)`;
  if (b === a) return `${from} and ${to} are both layer ${a}: a folder never imports from a sibling`;
  if (b > a) return `${from} (layer ${a}) imports from ${to} (layer ${b}), a higher layer`;
  return null;
}

/** Every import of the core (`src/`, and `nodes/` when there is one) under `root` that breaks the layer rule. */
export function layerViolations(root: string): LayerViolation[] {
  const found: LayerViolation[] = [];
  for (const file of [...sources(path.join(root, "src")), ...sources(path.join(root, "nodes"))]) {
    const from = folderOf(root, file);
    if (from === null) continue;
    for (const m of fs.readFileSync(file, "utf8").matchAll(IMPORT)) {
      const target = path.resolve(path.dirname(file), m[1]);
      const to = folderOf(root, target);
      if (to === null) continue;
      const rule = ruleBroken(from, to);
      if (rule !== null) {
        found.push({ file: path.relative(root, file), imports: path.relative(root, target), rule });
      }
    }
  }
  return found.sort((x, y) => x.file.localeCompare(y.file) || x.imports.localeCompare(y.imports));
}

if (require.main === module) {
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, "..", ".."));
  const found = layerViolations(root);
  console.log(`layer rule: ${found.length} import${found.length === 1 ? "" : "s"} against it`);
  for (const v of found) console.log(`  ${v.file} -> ${v.imports}: ${v.rule}`);
  process.exit(found.length > 0 ? 1 : 0);
}
