/**
 * The door-unlock dialog flags exactly the access rules the runtime cannot read: its checks are
 * the runtime's reading (src/unlock/access-config.ts, bundled into the node's editor file), so a
 * node the editor shows as valid never fails at deploy, and the editor never refuses what the
 * runtime would run (docs/access-rules.md#configuration-errors). Proved on what the browser runs:
 * the validators of the built door-unlock.html, run as the editor runs them, agree with the
 * runtime's parseAccessRules over one table of values; and the built file carries the runtime's
 * checks once, with no copy of its own.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseAccessRules, type AccessRulesConfig } from "../../src/unlock/access-rules.js";
import { PACKAGE_ROOT, editorDefinition, editorScripts, nodeFile } from "../helpers/node-files.js";

type Check = (v: unknown) => string | null;
type Field = "allowActors" | "schedule" | "timeZone" | "cooldown" | "pin";

/** The dialog's check of each rule field: the node's validators in the built editor file (a problem = their message's catalogue key). */
function editorChecks(): Record<Field, Check> {
  const def = editorDefinition("door-unlock");
  const check =
    (validate: ((v: unknown) => boolean | string) | undefined): Check =>
    (v) => {
      assert.ok(validate, "the field has a validator");
      const r = validate.call({}, v);
      return r === true ? null : String(r);
    };
  return {
    allowActors: check(def.defaults.allowActors.validate),
    schedule: check(def.defaults.schedule.validate),
    timeZone: check(def.defaults.timeZone.validate),
    cooldown: check(def.defaults.cooldown.validate),
    pin: check(def.credentials?.pin.validate),
  };
}

const WINDOW = { days: [2], from: "07:00", to: "12:00" };

/** Each field with values either side of its limits; `with` is what the rest of the rules hold. */
const TABLE: {
  field: keyof AccessRulesConfig & Field;
  values: unknown[];
  with?: AccessRulesConfig;
}[] = [
  {
    field: "allowActors",
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
  let checks: Record<Field, Check>;
  before(() => {
    checks = editorChecks();
  });
  for (const row of TABLE) {
    it(`${row.field}: the editor's check and the runtime's reading agree on ${row.values.length} values`, () => {
      const disagree: string[] = [];
      for (const value of row.values) {
        const editorOk = checks[row.field](value) === null;
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
      const answers = new Set(row.values.map((v) => checks[row.field](v) === null));
      assert.deepEqual([...answers].sort(), [false, true], row.field);
    }
  });
});

describe("the door-unlock dialog's rule checks are the runtime's, not a copy (docs/access-rules.md#configuration-errors)", () => {
  it("the built editor file carries the runtime's reading of the rules once, and no pattern for a time, a PIN or a control character but the runtime's", () => {
    const script = editorScripts(fs.readFileSync(nodeFile("door-unlock", "editor"), "utf8")).join("\n");
    // esbuild names each module it bundles in a comment: the runtime's modules are in, once.
    // The schedule's reading is the engine's (src/util/week-schedule.ts), which guest passes share.
    const runtime = [
      "src/unlock/access-config.ts",
      "src/util/week-schedule.ts",
      "src/unlock/node-actor.ts",
      "src/util/text.ts",
    ];
    for (const module of runtime) assert.equal(script.split(`// ${module}\n`).length - 1, 1, `${module} bundled once`);
    assert.equal(script.split("function readAccessConfig(").length - 1, 1, "one reading of the rules");
    // Each pattern a rule is read with appears as often as in those modules: the editor has none of its own.
    const sources = runtime.map((f) => fs.readFileSync(path.join(PACKAGE_ROOT, f), "utf8")).join("\n");
    const count = (text: string, pattern: string): number => text.split(pattern).length - 1;
    for (const pattern of ["/^([01][0-9]|2[0-3]):([0-5][0-9])$/", "/^[0-9]{4,12}$/", "/[\\u0000-\\u001f\\u007f]/"]) {
      assert.ok(count(sources, pattern) > 0, `${pattern} is in the runtime's modules`);
      assert.equal(count(script, pattern), count(sources, pattern), `${pattern}: only the runtime's`);
    }
  });
});
