/**
 * The door-unlock dialog's check of the node's actor (the `defaults` validate of the built
 * door-unlock.html, run here as the browser runs it) and the runtime's (src/unlock/node-actor.ts,
 * which the dialog's bundles): one line of at most 200 characters (docs/nodes.md#door-unlock).
 * Both read the same values the same way, so a node the dialog shows as valid is never refused at
 * run time, and the dialog flags every actor the runtime would refuse.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { parseLockId } from "../../src/doors/select.js";
import { configuredDoor } from "../../nodes/common/node-runtime.js";
import { nodeActorProblem } from "../../src/unlock/unlock.js";
import { editorDefinition, nodeFile } from "../helpers/node-files.js";

describe("door-unlock's actor is one line of at most 200 characters: the dialog flags exactly what the runtime refuses (docs/nodes.md#door-unlock)", () => {
  let validate: ((this: unknown, v: unknown) => boolean | string) | undefined;
  const dialogProblem = (v: string): string | null => {
    validate ??= editorDefinition("door-unlock").defaults.actor.validate!;
    const r = validate.call({}, v);
    return r === true ? null : String(r);
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
    const catalogue = JSON.parse(fs.readFileSync(nodeFile("door-unlock", "catalogue"), "utf8")) as {
      "door-unlock": { errors: Record<string, string> };
    };
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

describe("A door node's stored device id and door-unlock's lock id: the dialog flags exactly what the runtime would not use (docs/doors.md#picking-a-door-in-the-editor, docs/nodes.md#door-unlock)", () => {
  const validator =
    (type: "door-status" | "door-unlock", field: "deviceId" | "lockId") =>
    (v: unknown): boolean =>
      editorDefinition(type).defaults[field].validate!.call({}, v) === true;
  const values: unknown[] = [
    "",
    "101",
    101,
    " 101",
    "101 ",
    " 101 ",
    "0",
    0,
    "-1",
    "1.5",
    1.5,
    "1e3",
    "0101",
    "2147483647",
    "2147483648",
    "12345678901",
    "   ",
  ];

  it("door-status and door-unlock take a stored device id exactly when the runtime reads one from it (empty: a door known by name)", () => {
    for (const type of ["door-status", "door-unlock"] as const) {
      const dialogTakes = validator(type, "deviceId");
      for (const v of values) {
        const runtimeTakes = v === "" || configuredDoor({ deviceId: v, doorName: "" })?.id != null;
        assert.equal(dialogTakes(v), runtimeTakes, `${type} deviceId ${JSON.stringify(v)}`);
      }
    }
  });

  it("door-unlock takes a lock id exactly when the runtime does (empty: the whole device)", () => {
    const dialogTakes = validator("door-unlock", "lockId");
    for (const v of values) assert.equal(dialogTakes(v), parseLockId(v, true).ok, `lockId ${JSON.stringify(v)}`);
  });
});
