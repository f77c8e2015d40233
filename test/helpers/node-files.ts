/**
 * What the build makes of each node and of the sidebar plugin, where Node-RED finds it: the entry
 * point package.json's `node-red.nodes` (or `plugins`) names, with its editor file `<type>.html`,
 * its catalogue and help `locales/en-US/<type>.{json,html}` and its `icons/` beside it
 * (scripts/editor-build.ts; docs/architecture.md#the-editor-where-a-node-lives-and-how-it-is-built).
 * Also the editor's definition of a node, as the browser registers it: its built script run with
 * a stub RED.
 */
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import * as vm from "node:vm";

export const PACKAGE_ROOT = path.resolve(__dirname, "..", "..", "..");

const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")) as {
  "node-red": { nodes: Record<string, string>; plugins?: Record<string, string> };
};

/** The entry point of a node type or of the plugin, as an absolute path. */
export function entryPoint(type: string): string {
  const entry = pkg["node-red"].nodes[type] ?? pkg["node-red"].plugins?.[type];
  assert.ok(entry, `${type} is in package.json's node-red.nodes or node-red.plugins`);
  return path.join(PACKAGE_ROOT, entry);
}

/** A built file beside the entry point of `type`: its editor file, catalogue, help or an icon. */
export function nodeFile(type: string, file: "editor" | "catalogue" | "help" | `icons/${string}`): string {
  const dir = path.dirname(entryPoint(type));
  if (file === "editor") return path.join(dir, `${type}.html`);
  if (file === "catalogue") return path.join(dir, "locales", "en-US", `${type}.json`);
  if (file === "help") return path.join(dir, "locales", "en-US", `${type}.html`);
  return path.join(dir, ...file.split("/"));
}

/** The <script type="text/javascript"> blocks of an editor file. */
export function editorScripts(html: string): string[] {
  return [...html.matchAll(/<script\s+type=["']text\/javascript["'][^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
}

type Validate = (this: unknown, v: unknown, opt?: unknown) => boolean | string;
export interface EditorDefinition {
  category: string;
  defaults: Record<string, { value: unknown; validate?: Validate }>;
  credentials?: Record<string, { type: string; validate?: Validate }>;
}

/**
 * `type`'s definition as the editor registers it: the node's built editor script, run with a stub
 * RED whose RED._ returns the key (so a validator's message is its catalogue key).
 */
export function editorDefinition(type: string): EditorDefinition {
  const registered: Record<string, EditorDefinition> = {};
  const sandbox = {
    URL,
    RED: {
      _: (key: string) => key,
      nodes: { registerType: (t: string, def: EditorDefinition) => (registered[t] = def) },
    },
  };
  for (const script of editorScripts(readFileSync(nodeFile(type, "editor"), "utf8"))) {
    vm.runInNewContext(script, sandbox);
  }
  assert.ok(registered[type], `the editor script of ${type} registers it`);
  return registered[type];
}
