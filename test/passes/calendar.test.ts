/**
 * A booking calendar read into bookings, without a runtime (src/passes/calendar.ts;
 * docs/passes.md#from-a-booking-calendar): the window from the start date at check-in to the end
 * date at check-out in the node's zone, buffers, all-day dates across a daylight-saving night,
 * recurrence with its exceptions, cancelled events, folded lines, and the settings' checks.
 */
import { strict as assert } from "node:assert";
import { type CalendarSettings, checkCalendarSettings, localInstant, readFeed } from "../../src/passes/calendar.js";
import { DEFAULT_BLOCKED, matchKey } from "../../src/passes/calendar-settings.js";
import { platformFeed } from "../helpers/calendar-fixtures.js";

const NOW = Date.parse("2026-10-20T12:00:00Z");

function settings(extra: Partial<CalendarSettings> = {}): CalendarSettings {
  return {
    url: "http://127.0.0.1/cal.ics",
    everyMinutes: 15,
    checkIn: "15:00",
    checkOut: "11:00",
    timeZone: "Europe/Oslo",
    bufferBeforeMin: 0,
    bufferAfterMin: 0,
    blocked: DEFAULT_BLOCKED.map(matchKey),
    placeholderGuest: "Apartment A guest",
    ...extra,
  };
}

function feed(...events: string[]): string {
  return ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", ...events, "END:VCALENDAR", ""].join("\r\n");
}

function vevent(lines: string[]): string {
  return ["BEGIN:VEVENT", ...lines, "END:VEVENT"].join("\r\n");
}

describe("booking calendar: a feed read into bookings (docs/passes.md#from-a-booking-calendar)", () => {
  it("an all-day booking opens on its start date at check-in and closes on its end date at check-out, in the node's zone, across the night the clocks go back", () => {
    // Oslo leaves summer time in the night to 25 October 2026.
    const r = readFeed(
      feed(
        vevent(["UID:b1@airbnb", "SUMMARY:Reserved - Ada", "DTSTART;VALUE=DATE:20261023", "DTEND;VALUE=DATE:20261027"]),
      ),
      settings(),
      NOW,
    );
    assert.ok(r.ok);
    assert.deepEqual(r.bookings, [
      {
        ref: "b1@airbnb",
        guest: "Reserved - Ada",
        from: "2026-10-23T13:00:00.000Z",
        until: "2026-10-27T10:00:00.000Z",
        booking: { summary: "Reserved - Ada", phoneLast4: null, url: null },
      },
    ]);
  });

  it("buffers widen the window; a booking already over is left out", () => {
    const r = readFeed(
      feed(
        vevent(["UID:b1", "SUMMARY:Ada", "DTSTART;VALUE=DATE:20261101", "DTEND;VALUE=DATE:20261103"]),
        vevent(["UID:old", "SUMMARY:Bo", "DTSTART;VALUE=DATE:20261001", "DTEND;VALUE=DATE:20261003"]),
      ),
      settings({ bufferBeforeMin: 60, bufferAfterMin: 30 }),
      NOW,
    );
    assert.ok(r.ok);
    assert.deepEqual(
      r.bookings.map((b) => [b.ref, b.from, b.until]),
      [["b1", "2026-11-01T13:00:00.000Z", "2026-11-03T10:30:00.000Z"]],
    );
  });

  it("a cancelled booking is none; a recurring one is one booking per occurrence, its exceptions moved or cancelled", () => {
    const r = readFeed(
      feed(
        vevent([
          "UID:gone",
          "SUMMARY:Cy",
          "STATUS:CANCELLED",
          "DTSTART;VALUE=DATE:20261101",
          "DTEND;VALUE=DATE:20261102",
        ]),
        vevent([
          "UID:clean",
          "SUMMARY:Cleaner",
          "DTSTART;TZID=Europe/Oslo:20261103T090000",
          "DTEND;TZID=Europe/Oslo:20261103T120000",
          "RRULE:FREQ=WEEKLY;COUNT=3",
        ]),
        vevent([
          "UID:clean",
          "RECURRENCE-ID;TZID=Europe/Oslo:20261110T090000",
          "SUMMARY:Cleaner",
          "DTSTART;TZID=Europe/Oslo:20261111T100000",
          "DTEND;TZID=Europe/Oslo:20261111T130000",
        ]),
        vevent([
          "UID:clean",
          "RECURRENCE-ID;TZID=Europe/Oslo:20261117T090000",
          "STATUS:CANCELLED",
          "SUMMARY:Cleaner",
          "DTSTART;TZID=Europe/Oslo:20261117T090000",
          "DTEND;TZID=Europe/Oslo:20261117T120000",
        ]),
      ),
      settings(),
      NOW,
    );
    assert.ok(r.ok);
    // One day each: a visit of a few hours opens from its own start to its own end.
    assert.deepEqual(
      r.bookings.map((b) => [b.ref, b.from, b.until]),
      [
        ["clean@2026-11-03T09:00:00", "2026-11-03T08:00:00.000Z", "2026-11-03T11:00:00.000Z"],
        ["clean@2026-11-10T09:00:00", "2026-11-11T09:00:00.000Z", "2026-11-11T12:00:00.000Z"],
      ],
    );
  });

  it("a recurring booking whose series began long ago still gives its coming occurrences (past ones are not counted toward the limit)", () => {
    // A cleaner every weekday since 2024-09-02 (about 550 visits before NOW), without an end.
    const r = readFeed(
      feed(
        vevent([
          "UID:weekdays",
          "SUMMARY:Cleaner",
          "DTSTART;TZID=Europe/Oslo:20240902T090000",
          "DTEND;TZID=Europe/Oslo:20240902T120000",
          "RRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
        ]),
      ),
      settings(),
      NOW,
    );
    assert.ok(r.ok);
    assert.equal(
      r.bookings[0]?.ref,
      "weekdays@2026-10-21T09:00:00",
      "the next visit after NOW (Tue 2026-10-20 14:00 Oslo)",
    );
    assert.ok(r.bookings.length > 250, `a year of visits ahead: ${r.bookings.length}`);
  });

  // docs/passes.md#from-a-booking-calendar: an event whose date does not exist is no booking
  it("an event on a date or time that does not exist (30 February, 31 April, 25:00) is skipped, not moved to another day; a moved occurrence on such a date too; 29 February 2028 is read", () => {
    const r = readFeed(
      feed(
        vevent(["UID:feb30", "SUMMARY:A", "DTSTART;VALUE=DATE:20270227", "DTEND;VALUE=DATE:20270230"]),
        vevent(["UID:apr31", "SUMMARY:B", "DTSTART;VALUE=DATE:20270431", "DTEND;VALUE=DATE:20270503"]),
        vevent(["UID:h25", "SUMMARY:C", "DTSTART:20270301T250000Z", "DTEND:20270302T100000Z"]),
        vevent(["UID:leap", "SUMMARY:D", "DTSTART;VALUE=DATE:20280228", "DTEND;VALUE=DATE:20280229"]),
        vevent([
          "UID:weekly",
          "SUMMARY:E",
          "DTSTART:20270201T090000Z",
          "DTEND:20270201T120000Z",
          "RRULE:FREQ=WEEKLY;COUNT=2",
        ]),
        vevent([
          "UID:weekly",
          "RECURRENCE-ID:20270208T090000Z",
          "SUMMARY:E",
          "DTSTART:20270230T090000Z",
          "DTEND:20270230T120000Z",
        ]),
      ),
      settings({ timeZone: "UTC" }),
      NOW,
    );
    assert.ok(r.ok);
    assert.deepEqual(
      r.bookings.map((b) => [b.ref, b.from, b.until]),
      [
        ["leap", "2028-02-28T15:00:00.000Z", "2028-02-29T11:00:00.000Z"],
        ["weekly@2027-02-01T09:00:00Z", "2027-02-01T09:00:00.000Z", "2027-02-01T12:00:00.000Z"],
      ],
    );
    assert.equal(r.skipped, 4);
  });

  // docs/passes.md#from-a-booking-calendar: an event whose date does not exist is no booking
  it("an event whose extra dates, excluded dates or repeat end do not exist (RDATE, EXDATE, RRULE UNTIL on 30 February) is skipped, not read on 2 March; an event ical.js cannot expand (RDATE as a PERIOD) is skipped and the rest of the feed is read", () => {
    const series = (uid: string, extra: string) =>
      vevent([`UID:${uid}`, "SUMMARY:A", "DTSTART:20270225T090000Z", "DTEND:20270225T120000Z", extra]);
    const r = readFeed(
      feed(
        series("rdate", "RDATE:20270305T090000Z,20270230T090000Z"),
        series("rdate-day", "RDATE;VALUE=DATE:20270230"),
        series("period", "RDATE;VALUE=PERIOD:20270230T090000Z/PT3H"),
        series("until", "RRULE:FREQ=DAILY;UNTIL=20270230T000000Z"),
        vevent([
          "UID:exdate",
          "SUMMARY:B",
          "DTSTART:20270225T090000Z",
          "DTEND:20270225T120000Z",
          "RRULE:FREQ=DAILY;COUNT=6",
          "EXDATE:20270230T090000Z",
        ]),
        // A period (valid, but ical.js cannot expand it) costs that event only, not the whole feed.
        series("period-ok", "RDATE;VALUE=PERIOD:20270305T090000Z/PT3H"),
        series("fine", "RDATE:20270305T090000Z"),
      ),
      settings({ timeZone: "UTC" }),
      NOW,
    );
    assert.ok(r.ok);
    assert.deepEqual([...new Set(r.bookings.map((b) => b.ref.split("@")[0]))], ["fine"]);
    assert.ok(
      r.bookings.every((b) => !b.from.startsWith("2027-03-02")),
      "no booking on the day 30 February would move to",
    );
    assert.equal(r.skipped, 6);
  });

  it("folded lines and a UTC time are read as the feed means them", () => {
    const r = readFeed(
      feed(
        [
          "BEGIN:VEVENT",
          "UID:long",
          "SUMMARY:A guest whose name is written on more than one line of the feed beca",
          " use it is long",
          "DTSTART:20261105T230000Z",
          "DTEND:20261107T090000Z",
          "END:VEVENT",
        ].join("\r\n"),
      ),
      settings(),
      NOW,
    );
    assert.ok(r.ok);
    assert.equal(
      r.bookings[0].guest,
      "A guest whose name is written on more than one line of the feed because it is long",
    );
    // 23:00 UTC on 5 November is the 6th in Oslo: check-in on the 6th.
    assert.equal(r.bookings[0].from, "2026-11-06T14:00:00.000Z");
  });

  it("text that is not a calendar is refused, not read as empty", () => {
    const r = readFeed("<html>maintenance</html>", settings(), NOW);
    assert.equal(r.ok, false);
  });

  it("a wall-clock time in a zone, also on the nights the clocks change", () => {
    assert.equal(new Date(localInstant(2026, 3, 29, "15:00", "Europe/Oslo")).toISOString(), "2026-03-29T13:00:00.000Z");
    assert.equal(new Date(localInstant(2026, 3, 28, "15:00", "Europe/Oslo")).toISOString(), "2026-03-28T14:00:00.000Z");
    assert.equal(
      new Date(localInstant(2026, 11, 1, "11:00", "America/New_York")).toISOString(),
      "2026-11-01T16:00:00.000Z",
    );
  });

  // docs/passes.md#from-a-booking-calendar: a skipped time lands after the gap, a repeated one is the first
  it("a time the clocks skip is read with the offset before the change, a time that happens twice is the first, east and west of UTC and on a half-hour change", () => {
    const at = (y: number, m: number, d: number, t: string, zone: string) =>
      new Date(localInstant(y, m, d, t, zone)).toISOString();
    assert.equal(at(2027, 3, 14, "02:30", "America/New_York"), "2027-03-14T07:30:00.000Z"); // 03:30 EDT
    assert.equal(at(2027, 11, 7, "01:30", "America/New_York"), "2027-11-07T05:30:00.000Z"); // 01:30 EDT
    assert.equal(at(2027, 3, 28, "02:30", "Europe/Oslo"), "2027-03-28T01:30:00.000Z"); // 03:30 CEST
    assert.equal(at(2027, 10, 31, "02:30", "Europe/Oslo"), "2027-10-31T00:30:00.000Z"); // 02:30 CEST
    assert.equal(at(2027, 10, 3, "02:15", "Australia/Lord_Howe"), "2027-10-02T15:45:00.000Z"); // 02:45 +11:00
    assert.equal(at(2027, 4, 4, "01:45", "Australia/Lord_Howe"), "2027-04-03T14:45:00.000Z"); // 01:45 +11:00
  });

  it("settings: none without calendarUrl; each wrong field named", () => {
    assert.deepEqual(checkCalendarSettings({}), { ok: true, settings: null });
    const bad = checkCalendarSettings({
      calendarUrl: "http://calendar.example.com/x.ics",
      calendarEvery: 2,
      checkIn: "3pm",
      timeZone: "Mars/Olympus",
      bufferBefore: -5,
    });
    assert.equal(bad.ok, false);
    const text = bad.ok ? "" : bad.problems.join("\n");
    for (const f of ["calendarUrl", "calendarEvery", "checkIn", "timeZone", "bufferBefore"])
      assert.match(text, new RegExp(`^${f}:`, "m"));
    const good = checkCalendarSettings({
      calendarUrl: "https://www.airbnb.com/calendar/ical/1.ics?s=x",
      timeZone: "Europe/Oslo",
    });
    assert.ok(
      good.ok && good.settings !== null && good.settings.everyMinutes === 15 && good.settings.checkIn === "15:00",
    );
  });

  it("settings: a webcal:// feed is read as https:// (docs/passes.md#from-a-booking-calendar)", () => {
    const web = checkCalendarSettings({ calendarUrl: " webcal://calendar.example.com/listing/1.ics?t=x " });
    assert.ok(web.ok && web.settings !== null, JSON.stringify(web));
    assert.equal(web.settings.url, "https://calendar.example.com/listing/1.ics?t=x");
    const upper = checkCalendarSettings({ calendarUrl: "WEBCAL://calendar.example.com/2.ics" });
    assert.equal(upper.ok && upper.settings?.url, "https://calendar.example.com/2.ics");
    const bad = checkCalendarSettings({ calendarUrl: "webcal://user:pw@calendar.example.com/3.ics" });
    assert.equal(bad.ok, false, "no user or password, as for https://");
  });

  // docs/passes.md#blocked-time-and-placeholder-names
  it("blocked time is no booking: the platforms' markers (whole summary, case and spaces ignored) are skipped and counted apart, on the fixtures of Airbnb, Booking.com and a channel manager", () => {
    const now = Date.now();
    const airbnb = readFeed(platformFeed("airbnb", now), settings(), now);
    assert.ok(airbnb.ok);
    assert.equal(airbnb.blocked, 2);
    assert.deepEqual(
      airbnb.bookings.map((b) => b.booking?.summary),
      ["Reserved", "Reserved"],
      "only the reservations",
    );
    const booking = readFeed(platformFeed("booking-com", now), settings(), now);
    assert.ok(booking.ok);
    assert.equal(booking.bookings.length, 0, "Booking.com's closed dates are no booking");
    assert.equal(booking.blocked, 2);
    const cm = readFeed(platformFeed("channel-manager", now), settings(), now);
    assert.ok(cm.ok);
    assert.deepEqual(
      cm.bookings.map((b) => b.ref),
      ["cm-1@channel.test", "cm-2@channel.test", "cm-3@channel.test"],
    );
    assert.equal(cm.blocked, 3, '"Blocked", "  not   AVAILABLE ", "Unavailable"');
    // The host's own list: an empty one skips nothing; a word of their own skips that.
    const none = readFeed(platformFeed("channel-manager", now), settings({ blocked: [] }), now);
    assert.ok(none.ok && none.bookings.length === 6 && none.blocked === 0);
    const own = checkCalendarSettings({
      calendarUrl: "https://x.example/c.ics",
      blocked: "Owner stay\n\n  maria ROSSI ",
    });
    assert.ok(own.ok && own.settings !== null);
    assert.deepEqual(own.settings.blocked, ["owner stay", "maria rossi"]);
    const mine = readFeed(platformFeed("channel-manager", now), own.settings, now);
    assert.ok(mine.ok && !mine.bookings.some((b) => b.ref === "cm-1@channel.test"));
  });

  // docs/passes.md#blocked-time-and-placeholder-names
  it('a placeholder summary ("Reserved", "Reservation", "Booked") never names the guest: the host\'s name for a guest, then the phone\'s last 4 digits; a real name stays; booking carries the summary, the digits and the link', () => {
    const now = Date.now();
    const airbnb = readFeed(platformFeed("airbnb", now), settings(), now);
    assert.ok(airbnb.ok);
    assert.deepEqual(
      airbnb.bookings.map((b) => [b.guest, b.booking]),
      [
        [
          "Apartment A guest 4821",
          {
            summary: "Reserved",
            phoneLast4: "4821",
            url: "https://www.airbnb.com/hosting/reservations/details/HMTEST4821A",
          },
        ],
        [
          "Apartment A guest 0007",
          {
            summary: "Reserved",
            phoneLast4: "0007",
            url: "https://www.airbnb.com/hosting/reservations/details/HMTEST0007B",
          },
        ],
      ],
    );
    const cm = readFeed(platformFeed("channel-manager", now), settings(), now);
    assert.ok(cm.ok);
    assert.deepEqual(
      cm.bookings.map((b) => b.guest),
      ["Maria Rossi", "Apartment A guest", "Apartment A guest"],
    );
    // The default name: the node's name and "guest"; without a name, "Guest".
    const named = checkCalendarSettings({ calendarUrl: "https://x.example/c.ics", name: " Sea  view " });
    assert.ok(named.ok && named.settings?.placeholderGuest === "Sea view guest");
    const plain = checkCalendarSettings({ calendarUrl: "https://x.example/c.ics" });
    assert.ok(plain.ok && plain.settings?.placeholderGuest === "Guest");
    const chosen = checkCalendarSettings({
      calendarUrl: "https://x.example/c.ics",
      name: "A",
      placeholderGuest: "Airbnb guest",
    });
    assert.ok(chosen.ok && chosen.settings?.placeholderGuest === "Airbnb guest");
  });
});
