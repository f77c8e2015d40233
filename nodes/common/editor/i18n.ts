/**
 * The editor's message catalogues: Node-RED names each node's catalogue after the package and the
 * node type (`@door-access/node-red/door-unlock`), from `locales/<lang>/<type>.json` beside the
 * node. Every dialog and the sidebar take their `tr()` from here.
 */

/** The package name Node-RED puts in front of each catalogue's name. */
export const PACKAGE_NAMESPACE = "@door-access/node-red";

/** A dialog's or the sidebar's `tr(key, opts)`. */
export type Translate = (key: string, opts?: Record<string, unknown>) => string;

/** The name of a node's (or the sidebar plugin's) catalogue. */
export function catalogueOf(type: string): string {
  return `${PACKAGE_NAMESPACE}/${type}`;
}

/** A node's `tr()`: its keys sit under the node type in its catalogue (`door-unlock.errors.…`). */
export function nodeTranslator(type: string): Translate {
  const ns = catalogueOf(type);
  return (key, opts) => RED._(`${ns}:${type}.${key}`, opts);
}

/** A plugin's `tr()`: its keys sit at the top of its catalogue (`sidebar.…`). */
export function pluginTranslator(type: string): Translate {
  const ns = catalogueOf(type);
  return (key, opts) => RED._(`${ns}:${key}`, opts);
}
