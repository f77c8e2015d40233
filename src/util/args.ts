/**
 * A command line read by Node.js's own `util.parseArgs` (long and short names, `--name=value`,
 * `--` ending the options), handed back as tokens in order so that each command keeps its own
 * checks and its own messages (door-access-sim, door-access-audit, the demo).
 */
import { parseArgs } from "node:util";

export interface ArgOption {
  type: "string" | "boolean";
  short?: string;
}

export type ArgToken =
  /** An option: `name` is its long name when it has one; `raw` is the word as typed (with its `=value`). */
  | { kind: "option"; name: string; raw: string; value: string | undefined; inline: boolean }
  | { kind: "positional"; value: string }
  /** `--`: what follows is positional. */
  | { kind: "end" };

/**
 * `argv` as tokens. Nothing is refused here: an unknown option is a token with the name typed, a
 * string option without its value has `value` undefined, and a value that looks like another
 * option (`--host --port`) is kept as the value (`inline` false) for the command to refuse.
 */
export function argTokens(argv: string[], options: Record<string, ArgOption>): ArgToken[] {
  const { tokens } = parseArgs({ args: argv, options, strict: false, allowPositionals: true, tokens: true });
  return tokens.map((t): ArgToken => {
    if (t.kind === "positional") return { kind: "positional", value: t.value };
    if (t.kind === "option-terminator") return { kind: "end" };
    const inline = t.inlineValue === true;
    return {
      kind: "option",
      name: t.name,
      raw: inline ? `${t.rawName}=${t.value ?? ""}` : t.rawName,
      value: typeof t.value === "string" ? t.value : undefined,
      inline,
    };
  });
}
