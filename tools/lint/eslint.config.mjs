// ESLint for @door-access/node-red: typescript-eslint's type-aware recommended rules over every
// TypeScript file, and eslint's recommended rules over the editor and entry-point JavaScript.
// Run from the repository root: `npm run lint` (it installs this folder's tools on first use).
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "tools/**", ".ci/**", ".demo/**", "test-artifacts/**", "nodes/icons/**"] },
  {
    files: ["**/*.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { project: path.join(root, "tsconfig.json"), tsconfigRootDir: root } },
    rules: {
      // `_`-prefixed parameters and caught errors are the project's way of saying "unused on purpose".
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
    },
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
    files: ["nodes/**/*.js", "resources/**/*.js", "bin/**/*.js", "test/fixtures/**/*.js"],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: "commonjs", globals: { ...globals.node, ...globals.browser, RED: "readonly", $: "readonly", jQuery: "readonly" } },
  },
);
