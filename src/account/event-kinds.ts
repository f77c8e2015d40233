/**
 * The kinds of the account's events (docs/events.md#kinds): shared by the runtime
 * (src/account/events.ts) and the door-events dialog, which bundles this file.
 */
export const EVENT_KINDS = ["session", "device", "unlock", "rule", "pass", "service"] as const;
export type EventKind = (typeof EVENT_KINDS)[number];
/** A node with no kinds chosen gets all but `unlock` (docs/events.md#kinds). */
export const DEFAULT_KINDS: readonly EventKind[] = EVENT_KINDS.filter((k) => k !== "unlock");

/** The kinds a `door-events` node asked for: an array of known names; absent, empty or unreadable: the default. */
export function eventKinds(value: unknown): EventKind[] {
  if (!Array.isArray(value)) return [...DEFAULT_KINDS];
  const known = value.filter(
    (v): v is EventKind => typeof v === "string" && (EVENT_KINDS as readonly string[]).includes(v),
  );
  return known.length > 0 ? [...new Set(known)] : [...DEFAULT_KINDS];
}

/** Whether a dialog's value is one the runtime reads as given (not fallen back to the default). */
export function kindsValid(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((v) => typeof v === "string" && (EVENT_KINDS as readonly string[]).includes(v))
  );
}
