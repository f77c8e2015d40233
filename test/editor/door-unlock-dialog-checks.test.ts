/**
 * The door-unlock dialog's check of the node's actor (nodes/door-unlock.html, its `defaults`
 * validate, run here as the browser runs it) and the runtime's (src/unlock/unlock.ts): one line of
 * at most 200 characters (docs/nodes.md#door-unlock). Both read the same values the same way, so
 * a node the dialog shows as valid is never refused at run time, and the dialog flags every actor
 * the runtime would refuse.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vm from "node:vm";
import { REPO_ROOT } from "../../scripts/node-red-process.js";
import { nodeActorProblem } from "../../src/unlock/unlock.js";

type Validate = (this: unknown, v: unknown, opt?: unknown) => true | string;
interface NodeDefinition {
  defaults: Record<string, { value: unknown; validate?: Validate }>;
}

/** door-unlock's definition as the editor registers it: the node's own script, run with a stub RED. */
function doorUnlockDefinition(): NodeDefinition {
  const html = fs.readFileSync(path.join(REPO_ROOT, "nodes", "door-unlock.html"), "utf8");
  const script = /<script type="text\/javascript">([\s\S]*?)<\/script>/.exec(html);
  assert.ok(script, "door-unlock.html has its inline script");
  const registered: Record<string, NodeDefinition> = {};
  const sandbox = {
    window: { DoorAccessEditor: {}, DoorAccessRules: {} },
    RED: {
      _: (key: string) => key,
      nodes: { registerType: (type: string, def: NodeDefinition) => (registered[type] = def) },
    },
  };
  vm.runInNewContext(script[1], sandbox);
  assert.ok(registered["door-unlock"], "the script registers door-unlock");
  return registered["door-unlock"];
}

describe("door-unlock's actor is one line of at most 200 characters: the dialog flags exactly what the runtime refuses (docs/nodes.md#door-unlock)", () => {
  const validate = doorUnlockDefinition().defaults.actor.validate!;
  const dialogProblem = (v: string): string | null => {
    const r = validate.call({}, v);
    return r === true ? null : r;
  };

  it("empty, 1 and 200 characters are valid; 201 characters, a line break, a tab or another control character are not", () => {
    for (const ok of ["", "a", "reception desk", "é".repeat(200), `${"a".repeat(99)} ${"b".repeat(100)}`])
      assert.equal(dialogProblem(ok), null, `${ok.length} characters: ${JSON.stringify(ok.slice(0, 20))}`);
    for (const bad of ["a".repeat(201), "front desk\nback office", "a\r\nb", "a\tb", "a\u0000b", "a\u007fb", "\n"])
      assert.equal(
        dialogProblem(bad),
        "@door-access/node-red/door-unlock:door-unlock.errors.invalid-actor",
        `${bad.length} characters: ${JSON.stringify(bad.slice(0, 20))}`,
      );
  });

  it("the dialog's message says the rule", () => {
    const catalogue = JSON.parse(
      fs.readFileSync(path.join(REPO_ROOT, "nodes", "locales", "en-US", "door-unlock.json"), "utf8"),
    ) as { "door-unlock": { errors: Record<string, string> } };
    assert.equal(
      catalogue["door-unlock"].errors["invalid-actor"],
      "the actor must be one line of at most 200 characters",
    );
  });

  it("the runtime refuses exactly what the dialog flags", () => {
    const values = [
      "",
      "a",
      " alice ",
      "a".repeat(199),
      "a".repeat(200),
      "a".repeat(201),
      ` ${"a".repeat(200)}`,
      "é".repeat(200),
      "😀".repeat(100),
      "😀".repeat(101),
      "front desk\nback office",
      "alice\n",
      "a\tb",
      "a\u0000b",
      "a\u001fb",
      "a\u007fb",
      "a\u0080b",
    ];
    for (const v of values)
      assert.equal(
        nodeActorProblem(v) === null,
        dialogProblem(v) === null,
        `${v.length} characters: ${JSON.stringify(v.slice(0, 20))}: runtime ${nodeActorProblem(v)}, dialog ${dialogProblem(v)}`,
      );
  });
});
