/**
 * The one label of a door-account node, wherever it shows (the canvas and config list, the Door
 * access tab, the debug sidebar and the log; docs/nodes.md#door-account): its name, else "door
 * account" and the host of its base URL (which holds no user or password), never its id.
 * Shared by the runtime and the editor (bundled into the dialog's script).
 */
export function accountLabel(name: unknown, baseUrl: unknown, word = "door account"): string {
  const n = typeof name === "string" ? name.trim() : "";
  if (n !== "") return n;
  const host = hostOf(baseUrl);
  return host !== "" ? `${word} ${host}` : word;
}

function hostOf(baseUrl: unknown): string {
  try {
    return typeof baseUrl === "string" && baseUrl.trim() !== "" ? new URL(baseUrl.trim()).host : "";
  } catch {
    return "";
  }
}
