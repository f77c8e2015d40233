/**
 * `text` cut to at most `max` UTF-16 code units, never leaving half of a surrogate pair (an emoji
 * at the cut goes whole). `mark` (e.g. "…") ends a text that was cut and counts towards `max`.
 */
/** What a thrown value says, as bounded text; never throws itself (a value may refuse to become text). */
export function describeThrown(e: unknown): string {
  try {
    return clip(String(e instanceof Error ? e.message : e), 200);
  } catch {
    return "a value that cannot be shown as text";
  }
}

export function clip(text: string, max: number, mark = ""): string {
  if (text.length <= max) return text;
  let cut = Math.max(0, max - mark.length);
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return text.slice(0, cut) + mark;
}
