/**
 * Whether an ISO 8601 date or date-time names a time that exists (docs/passes.md#issue): a day
 * its month has (2027-02-29, 2026-04-31 do not), an hour 00 to 23 (not 24:00), minutes and seconds
 * 00 to 59, a zone offset of at most ±23:59 (RFC 3339). `Date.parse` alone would move 30 February
 * to 2 March and take 24:00 as the next midnight.
 *
 * It checks the fields only: the caller's own pattern decides which forms it accepts.
 */

const FIELDS =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:\.\d+)?)?)?)?(?:Z|z|[+-](\d{2}):?(\d{2}))?$/;

/** Days in `month` (1-12) of `year`, in the Gregorian calendar. */
function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** True when every field of `text` (a date, a date-time, with or without an offset) is in range. */
export function isoTimeExists(text: string): boolean {
  const f = FIELDS.exec(text);
  if (f === null) return false;
  const [, y, mo, d, h, mi, s, oh, om] = f;
  const n = (v: string | undefined) => (v === undefined ? 0 : Number(v));
  const month = n(mo);
  if (month < 1 || month > 12) return false;
  if (n(d) < 1 || n(d) > daysIn(n(y), month)) return false;
  if (n(h) > 23 || n(mi) > 59 || n(s) > 59) return false;
  return n(oh) <= 23 && n(om) <= 59;
}
