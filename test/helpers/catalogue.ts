/**
 * Node-RED's translation as a full runtime gives it. Under node-red-node-test-helper RED._ returns
 * the key itself; node modules wrapped by withEnglishText() get a RED._ that reads the package's
 * en-US message catalogues (as built: locales/en-US/<type>.json beside each node's entry point)
 * instead: the texts a user sees, with their values.
 */
import { readFileSync } from "node:fs";
import { nodeFile } from "./node-files.js";

const CATALOGUES = ["door-account", "door-devices", "door-events", "door-pass", "door-status", "door-unlock"].map(
  (n) => JSON.parse(readFileSync(nodeFile(n, "catalogue"), "utf8")) as Record<string, unknown>,
);

/** A __value__ as text: a missing one as nothing. */
function valueText(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  return JSON.stringify(v);
}

/** The English text of a catalogue key with its __values__ filled in; the key itself when no catalogue has it. */
export function englishText(key: string, values?: Record<string, unknown>): string {
  for (const c of CATALOGUES) {
    const v = key
      .split(".")
      .reduce<unknown>(
        (o, k) => (o !== null && typeof o === "object" ? (o as Record<string, unknown>)[k] : undefined),
        c,
      );
    if (typeof v === "string") return v.replace(/__(\w+)__/g, (_m, name: string) => valueText(values?.[name]));
  }
  return key;
}

/** Node modules given englishText() as RED._ when Node-RED loads them. */
export function withEnglishText(modules: unknown[]): unknown[] {
  return modules.map((mod) => (red: { _: unknown }) => {
    red._ = englishText;
    return (mod as (r: { _: unknown }) => unknown)(red);
  });
}
