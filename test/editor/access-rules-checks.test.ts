/**
 * The door-unlock dialog flags exactly the access rules the runtime cannot read: the editor's
 * checks (resources/access-rules-editor.js, run here as the browser would run them) and the
 * runtime's reading (src/unlock/access-rules.ts) agree over one table of values, so a node the
 * editor shows as valid never fails at deploy, and the editor never refuses what the runtime
 * would run (docs/access-rules.md#configuration-errors).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vm from "node:vm";
import { REPO_ROOT } from "../../scripts/node-red-process.js";
import { parseAccessRules, type AccessRulesConfig } from "../../src/unlock/access-rules.js";

type Check = (v: unknown) => string | null;
interface EditorChecks {
  actorsProblem: Check;
  scheduleProblem: Check;
  zoneProblem: Check;
  cooldownProblem: Check;
  pinProblem: Check;
}

/** The editor's checks, from the file Node-RED serves to the browser. */
function editorChecks(): EditorChecks {
  const source = fs.readFileSync(path.join(REPO_ROOT, "resources", "access-rules-editor.js"), "utf8");
  const sandbox: { window: { DoorAccessRules?: EditorChecks }; Intl: typeof Intl } = { window: {}, Intl };
  vm.runInNewContext(source, sandbox);
  assert.ok(sandbox.window.DoorAccessRules, "the script defines window.DoorAccessRules");
  return sandbox.window.DoorAccessRules;
}

const WINDOW = { days: [2], from: "07:00", to: "12:00" };

/** Each field with values either side of its limits; `with` is what the rest of the rules hold. */
const TABLE: {
  field: keyof AccessRulesConfig;
  check: keyof EditorChecks;
  values: unknown[];
  with?: AccessRulesConfig;
}[] = [
  {
    field: "allowActors",
    check: "actorsProblem",
    values: [
      undefined,
      null,
      "",
      [],
      ["alice"],
      ["cleaner-*", "alice"],
      [" alice"],
      ["alice "],
      [""],
      ["   "],
      ["a".repeat(200)],
      ["a".repeat(201)],
      ["a\u0000b"],
      ["a\u007fb"],
      ["a\nb"],
      [1],
      [null],
      "alice",
      {},
      7,
    ],
  },
  {
    field: "schedule",
    check: "scheduleProblem",
    values: [
      undefined,
      null,
      "",
      [],
      [WINDOW],
      [{ ...WINDOW, to: "24:00" }],
      [{ ...WINDOW, from: "00:00", to: "00:00" }],
      [{ ...WINDOW, from: "22:00", to: "06:00" }],
      [{ ...WINDOW, from: "23:59", to: "00:00" }],
      [{ ...WINDOW, from: "08:00", to: "08:00" }],
      [{ ...WINDOW, from: "24:00", to: "08:00" }],
      [{ ...WINDOW, from: "7:00" }],
      [{ ...WINDOW, to: "12:60" }],
      [{ ...WINDOW, days: [] }],
      [{ ...WINDOW, days: [0] }],
      [{ ...WINDOW, days: [8] }],
      [{ ...WINDOW, days: [1.5] }],
      [{ ...WINDOW, days: ["2"] }],
      [{ from: "07:00", to: "12:00" }],
      [{ ...WINDOW, days: [1, 2, 3, 4, 5, 6, 7] }],
      [null],
      ["07:00-12:00"],
      [[2, "07:00", "12:00"]],
      "mon 07:00-12:00",
      {},
      3,
    ],
  },
  {
    field: "timeZone",
    check: "zoneProblem",
    // A zone matters only with a schedule.
    with: { schedule: [WINDOW] },
    values: [
      undefined,
      null,
      "",
      "UTC",
      "Europe/Oslo",
      "America/Argentina/Buenos_Aires",
      "Etc/GMT+1",
      "Mars/Olympus_Mons",
      "Europe/",
      "europe/oslo",
      5,
      {},
    ],
  },
  {
    field: "cooldown",
    check: "cooldownProblem",
    values: [
      undefined,
      null,
      "",
      0,
      1,
      30,
      86400,
      86401,
      -1,
      1.5,
      "30",
      " 30 ",
      "1.5",
      "-1",
      "1e3",
      "abc",
      "86401",
      NaN,
      Infinity,
      true,
      {},
    ],
  },
  {
    field: "pin",
    check: "pinProblem",
    values: [
      undefined,
      null,
      "",
      "1234",
      "0042",
      "123456789012",
      "123",
      "1234567890123",
      "12a4",
      "12 34",
      " 1234",
      "١٢٣٤",
      1234,
    ],
  },
];

describe("the door-unlock dialog flags exactly what the runtime cannot read (docs/access-rules.md#configuration-errors)", () => {
  const checks = editorChecks();
  for (const row of TABLE) {
    it(`${row.field}: the editor's check and the runtime's reading agree on ${row.values.length} values`, () => {
      const disagree: string[] = [];
      for (const value of row.values) {
        const editorOk = checks[row.check](value) === null;
        const runtime = parseAccessRules({ ...row.with, [row.field]: value });
        if (editorOk !== runtime.ok) {
          const said = runtime.ok ? "runs it" : `refuses it (${runtime.message})`;
          disagree.push(
            `${JSON.stringify(value) ?? String(value)}: the editor ${editorOk ? "accepts it" : "flags it"}, the runtime ${said}`,
          );
        }
      }
      assert.deepEqual(disagree, []);
    });
  }

  it("the table reaches both answers for every field (a check that accepts or refuses everything fails here)", () => {
    for (const row of TABLE) {
      const answers = new Set(row.values.map((v) => checks[row.check](v) === null));
      assert.deepEqual([...answers].sort(), [false, true], row.field);
    }
  });
});
