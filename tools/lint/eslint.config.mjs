// ESLint for @door-access/node-red: typescript-eslint's type-aware recommended rules over every
// TypeScript file (the editor's too, with the browser's globals and its own tsconfig), and
// eslint's recommended rules over the bin scripts and test fixtures in JavaScript.
// Run from the repository root: `npm run lint` (it installs this folder's tools on first use).
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "tools/**", ".ci/**", ".demo/**", "test-artifacts/**"] },
  {
    files: ["**/*.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    // A file is typed by the first project that holds it: the editor's code is only in tsconfig.editor.json.
    languageOptions: {
      parserOptions: {
        project: [path.join(root, "tsconfig.json"), path.join(root, "tsconfig.editor.json")],
        tsconfigRootDir: root,
      },
    },
    rules: {
      // `_`-prefixed parameters and caught errors are the project's way of saying "unused on purpose".
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      // A rejection that passes on a reason it was handed (an abort signal's reason, the rejection
      // of a promise it waits on: typed any or unknown) forwards it unchanged, as `throw e` in a
      // catch does; only-throw-error allows that by default, and so does this. A rejection with a
      // value known not to be an Error is still reported.
      "@typescript-eslint/prefer-promise-reject-errors": [
        "error",
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
    },
  },
  {
    // Node-RED's node constructors name their node `node` (`const node = this`, as Node-RED's own
    // nodes and its documentation do): the input, close and status handlers close over it.
    files: ["nodes/**/*.ts"],
    rules: { "@typescript-eslint/no-this-alias": ["error", { allowedNames: ["node"] }] },
  },
  {
    // Files a reader can hold: at most 500 lines in the package, its scripts and the bench, every
    // line counted (comments and blank lines too). Tests are not held to it.
    files: ["src/**/*.ts", "nodes/**/*.ts", "scripts/**/*.ts", "bench/**/*.ts"],
    rules: { "max-lines": ["error", { max: 500, skipBlankLines: false, skipComments: false }] },
  },
  {
    // Tests read what the runtime hands them: Node-RED messages, admin answers and JSON bodies,
    // which are `any` by nature (msg.payload). Typing each read would add casts, not safety, so
    // the rules about flowing `any` values are off for tests only; every other rule holds there.
    files: ["test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
  {
    // The editor's code runs in the browser: its globals are the browser's, with Node-RED's RED and
    // jQuery's $ (typed by nodes/common/editor/red.d.ts and @types/jquery), never Node's.
    files: ["nodes/*/editor/**/*.ts"],
    languageOptions: { globals: { ...globals.browser, RED: "readonly", $: "readonly" } },
  },
  {
    files: ["bin/**/*.js", "test/fixtures/**/*.js"],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: "commonjs", globals: globals.node },
    rules: {
      // As for TypeScript above: a caught error may go unused.
      "no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
    },
  },
  {
    // The hook tests' fixtures are mocha test files (each run by a child mocha).
    files: ["test/fixtures/**/*.fixture.js"],
    languageOptions: { globals: globals.mocha },
  },
);
