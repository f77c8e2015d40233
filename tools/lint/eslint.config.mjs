// ESLint for @door-access/node-red: typescript-eslint's type-aware recommended rules over the
// TypeScript sources, and eslint's recommended rules over the editor and entry-point JavaScript.
// Run from the repository root: `npm run lint` (installs this folder's tools on first use).
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "tools/**", ".ci/**", ".demo/**", "test-artifacts/**", "nodes/icons/**"] },
  {
    files: ["src/**/*.ts", "test/**/*.ts", "bench/**/*.ts", "scripts/**/*.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { project: path.join(root, "tsconfig.json"), tsconfigRootDir: root } },
  },
);
