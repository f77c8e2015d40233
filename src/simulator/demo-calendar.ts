/**
 * The simulator's demo booking calendar (docs/simulator.md#demo-calendar), served at
 * /calendar/demo.ics: what a holiday-rental listing exports, around the simulator's today, so
 * that the demo's door-pass node makes passes from it. All-day bookings (a stay now, the next one
 * in a week) and a weekly cleaner's visit of three hours.
 */
const DAY = 24 * 3600_000;

function date(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replace(/-/g, "");
}

function stamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}

export const DEMO_CALENDAR_PATH = "/calendar/demo.ics";

/** The feed for the day of `now` (it changes once a day). */
export function demoCalendar(now: number): string {
  const today = Math.floor(now / DAY) * DAY;
  const lines = [
    "BEGIN:VCALENDAR",
    "VERSION:2.0",
    "PRODID:-//door-access-sim//demo listing//EN",
    "X-WR-CALNAME:Main Street 1 (demo listing)",
    "BEGIN:VEVENT",
    "UID:demo-stay-1@door-access-sim",
    `DTSTAMP:${stamp(today)}`,
    "SUMMARY:Demo guest (booking HM-1001)",
    `DTSTART;VALUE=DATE:${date(today - DAY)}`,
    `DTEND;VALUE=DATE:${date(today + 2 * DAY)}`,
    "END:VEVENT",
    "BEGIN:VEVENT",
    "UID:demo-stay-2@door-access-sim",
    `DTSTAMP:${stamp(today)}`,
    "SUMMARY:Next guest (booking HM-1002)",
    `DTSTART;VALUE=DATE:${date(today + 7 * DAY)}`,
    `DTEND;VALUE=DATE:${date(today + 10 * DAY)}`,
    "END:VEVENT",
    "BEGIN:VEVENT",
    "UID:demo-cleaner@door-access-sim",
    `DTSTAMP:${stamp(today)}`,
    "SUMMARY:Cleaner",
    `DTSTART:${stamp(today + 9 * 3600_000)}`,
    `DTEND:${stamp(today + 12 * 3600_000)}`,
    "RRULE:FREQ=WEEKLY;COUNT=8",
    "END:VEVENT",
    "END:VCALENDAR",
    "",
  ];
  return lines.join("\r\n");
}
