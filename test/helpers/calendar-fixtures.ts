/**
 * The platforms' feeds kept in test/fixtures/*.ics (docs/passes.md#blocked-time-and-placeholder-names):
 * each file is a template with a header comment naming its public sources. Reading one drops the
 * "#" lines, turns {{DATE+n}} into the date n days from `now` (UTC, as iCalendar writes a date) and
 * ends lines in CRLF, so a feed's bookings are always in the days around the test.
 */
import * as fs from "node:fs";
import * as path from "node:path";

const DAY = 24 * 3600_000;
const DIR = path.join(__dirname, "..", "..", "..", "test", "fixtures");

export function platformFeed(name: "airbnb" | "booking-com" | "channel-manager", now = Date.now()): string {
  const text = fs.readFileSync(path.join(DIR, `${name}.ics`), "utf8");
  return (
    text
      .split(/\r?\n/)
      .filter((l) => !l.startsWith("#") && l !== "")
      .map((l) =>
        l.replace(/\{\{DATE([+-]\d+)\}\}/g, (_m, n: string) =>
          new Date(now + Number(n) * DAY).toISOString().slice(0, 10).replace(/-/g, ""),
        ),
      )
      .join("\r\n") + "\r\n"
  );
}
