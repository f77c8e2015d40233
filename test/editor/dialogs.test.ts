/**
 * The edit dialogs in Node-RED's own style (docs/nodes.md): at most one tip shown by default per
 * dialog, the explanations in the sidebar help (locales/en-US/<node>.html). A tip that
 * is hidden until a situation calls for it (the stored door is not in the list, "reject
 * retained" is off) is a warning, not a standing tip, and is not counted. Every text a dialog
 * names (data-i18n) exists in its message catalogue, so trimming a tip cannot leave a key
 * that shows as raw text.
 */
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { editorDefinition, nodeFile } from "../helpers/node-files.js";

const NODES = ["door-account", "door-devices", "door-events", "door-pass", "door-status", "door-unlock"];

/** The dialog of the built editor file Node-RED loads. */
function template(node: string): string {
  const html = readFileSync(nodeFile(node, "editor"), "utf8");
  const m = new RegExp(`<script type="text/html" data-template-name="${node}">([\\s\\S]*?)</script>`).exec(html);
  assert.ok(m, `${node}.html has its edit template`);
  return m[1];
}

function lookup(catalogue: unknown, key: string): unknown {
  return key
    .split(".")
    .reduce<unknown>((o, k) => (o && typeof o === "object" ? (o as Record<string, unknown>)[k] : undefined), catalogue);
}

describe("editor dialogs: at most one tip shown, the explanations in the node help, every dialog text in its catalogue (docs/nodes.md)", () => {
  for (const node of NODES) {
    it(`${node}: at most one tip shown by default`, () => {
      const tips = [...template(node).matchAll(/<div class="form-tips[^"]*"([^>]*)>/g)];
      const standing = tips.filter((t) => !/display:\s*none/.test(t[1]));
      assert.ok(
        standing.length <= 1,
        `${node}: ${standing.length} standing tips: ${standing.map((t) => t[0]).join(" ")}`,
      );
    });

    it(`${node}: every data-i18n key of the dialog is in the catalogue, and the help exists`, () => {
      const catalogue = JSON.parse(readFileSync(nodeFile(node, "catalogue"), "utf8")) as unknown;
      const keys = [...template(node).matchAll(/data-i18n="([^"]+)"/g)]
        .flatMap((m) => m[1].split(";"))
        .map((k) => k.replace(/^\[[^\]]+\]/, ""));
      assert.ok(keys.length > 0);
      for (const k of keys)
        assert.equal(typeof lookup(catalogue, k), "string", `${node}: ${k} is missing from ${node}.json`);
      const help = readFileSync(nodeFile(node, "help"), "utf8");
      assert.match(help, new RegExp(`data-help-name="${node}"`));
    });
  }
});

describe("editor validators say why a value is invalid: each takes (value, opt), the form whose returned message Node-RED reads as invalid (docs/nodes.md)", () => {
  // Node-RED 3+ reads a validator's string as "invalid, because ..." only from a validator declared
  // with two parameters; a one-parameter validator's string is coerced to true (valid).
  for (const node of NODES) {
    it(`${node}: every validate of its defaults and credentials has two parameters`, () => {
      const def = editorDefinition(node);
      const validators = Object.entries({ ...def.defaults, ...def.credentials }).filter(([, p]) => p.validate);
      assert.ok(validators.length > 0, `${node} validates something`);
      for (const [name, p] of validators) assert.equal(p.validate!.length, 2, `${node}.${name}: validate(value, opt)`);
    });
  }
});

/** The words of a help text as the Help sidebar shows it: tags stripped, entities as one character. */
function helpWords(html: string): number {
  const text = html
    .replace(/<[^>]*>/g, " ")
    .replace(/&[a-z#0-9]+;/gi, "x")
    .trim();
  return text === "" ? 0 : text.split(/\s+/).length;
}

describe("node help is short enough to read in the Help sidebar: at most 600 words, in Node-RED's help style, with a link to its docs page (docs/nodes.md)", () => {
  for (const node of NODES) {
    const help = () => readFileSync(nodeFile(node, "help"), "utf8");

    it(`${node}: at most 600 words (tags stripped)`, () => {
      const words = helpWords(help());
      assert.ok(words <= 600, `${node}'s help has ${words} words`);
    });

    it(`${node}: Node-RED's sections (Inputs or Outputs as it has them, References) and a link to the docs`, () => {
      const h = help();
      assert.match(h, /<h3>References<\/h3>/, `${node}: a References section`);
      assert.match(
        h,
        /<a href="https:\/\/github\.com\/[^"]+\/docs\/[a-z-]+\.md[^"]*"/,
        `${node}: a link to its docs page`,
      );
      if (node === "door-events") {
        // No input (docs/events.md#the-node): Outputs only.
        assert.doesNotMatch(h, /<h3>Inputs<\/h3>/, `${node}: no Inputs`);
        assert.match(h, /<h3>Outputs<\/h3>/, `${node}: Outputs`);
      } else if (node !== "door-account") {
        assert.match(h, /<h3>Inputs<\/h3>\s*<dl class="message-properties">/, `${node}: Inputs`);
        assert.match(h, /<h3>Outputs<\/h3>/, `${node}: Outputs`);
      }
    });
  }
});
