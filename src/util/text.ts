/**
 * The control characters refused in a name, an actor, a guest or a reference someone typed or
 * sent: C0 (U+0000 to U+001F) and DEL. The one definition; test with `hasControlChars`.
 */
// eslint-disable-next-line no-control-regex -- control characters (C0, DEL) are what it finds
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;
const CONTROL_CHARS_ALL = new RegExp(CONTROL_CHARS.source, "g");

/** Whether `text` holds a control character (C0 or DEL). */
export function hasControlChars(text: string): boolean {
  return CONTROL_CHARS.test(text);
}

/** `text` with each control character (C0 or DEL) made a space: for a service's or a feed's text kept on one line. */
export function controlCharsAsSpaces(text: string): string {
  return text.replace(CONTROL_CHARS_ALL, " ");
}

/** What a thrown value says, as bounded text; never throws itself (a value may refuse to become text). */
export function describeThrown(e: unknown): string {
  try {
    return clip(String(e instanceof Error ? e.message : e), 200);
  } catch {
    return "a value that cannot be shown as text";
  }
}

/**
 * `text` cut to at most `max` UTF-16 code units, never leaving half of a surrogate pair (an emoji
 * at the cut goes whole). `mark` (e.g. "…") ends a text that was cut and counts towards `max`.
 */
export function clip(text: string, max: number, mark = ""): string {
  if (text.length <= max) return text;
  let cut = Math.max(0, max - mark.length);
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return text.slice(0, cut) + mark;
}

/**
 * A value someone typed or imported, for an error text: clipped to `max` characters and quoted as
 * a JSON string, so that its end, its quotes and any control character are plain to see
 * (docs/security.md#text-in-the-editor-and-the-dashboard).
 */
export function quoted(value: string, max = 80): string {
  return JSON.stringify(clip(value, max, "…"));
}

/**
 * `String(value)` for a value of any type, on purpose: a value a flow, a file or a request gave
 * where text is kept or checked (a number as its digits, an array as its items joined by commas,
 * an object as "[object Object]"). Callers have ruled out null and undefined where those differ.
 */
export function textOf(value: unknown): string {
  return String(value);
}
