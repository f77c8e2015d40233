/**
 * The booking calendars the bench reads (docs/passes.md#what-passes-cost), from one generator:
 *
 * - `plain`: n bookings named "Guest <i>", all-day, one to three hundred days ahead; with `filler`,
 *   each carries a 360-character description (the in-process feed of about 5 MB);
 * - `platforms`: n bookings in the shapes the platforms export (test/fixtures/airbnb.ics,
 *   booking-com.ics, channel-manager.ics), with blocked time and placeholder names mixed in
 *   (docs/passes.md#blocked-time-and-placeholder-names). Of every 10 bookings: 4 are Airbnb's
 *   "Reserved" with the reservation link and the phone's last 4 digits in a folded description,
 *   1 a channel manager's "Reservation" and 1 its "booked", 4 carry a guest's real name. After
 *   every second booking comes one event of blocked time, in turn Airbnb's "Airbnb (Not
 *   available)", Booking.com's "CLOSED - Not available", and a channel manager's "Blocked",
 *   "  not   AVAILABLE " and "Unavailable": n / 2 blocks, none of them a booking.
 *
 * The counts come with the text, so the bench can check what the node made of it.
 */

const DAY = 24 * 3600_000;

export interface BenchFeed {
  text: string;
  /** Events that are bookings, and events of blocked time. */
  bookings: number;
  blocks: number;
  /** Bookings whose summary is a placeholder ("Reserved", "Reservation", "booked"). */
  placeholders: number;
  /** The UIDs of the events of blocked time: no pass may carry one as its `ref`. */
  blockUids: Set<string>;
}

export interface FeedShape {
  /** Prefix of the plain feed's UIDs (`<uid>-<i>@example.com`). */
  uid?: string;
  /** A 360-character description on each plain booking. */
  filler?: boolean;
  /** The platforms' shapes, blocks and placeholders mixed in (above). */
  platforms?: boolean;
}

/** An all-day date `d` days from now (UTC), as iCalendar writes it. */
function day(now: number, d: number): string {
  return new Date(now + d * DAY).toISOString().slice(0, 10).replace(/-/g, "");
}

/** A content line folded as RFC 5545 (3.1) asks: at most 75 octets, continued after CRLF and a space (ASCII lines). */
function fold(line: string): string {
  if (line.length <= 75) return line;
  const parts = [line.slice(0, 75)];
  for (let i = 75; i < line.length; i += 74) parts.push(" " + line.slice(i, i + 74));
  return parts.join("\r\n");
}

const NAMES = [
  "Maria Rossi",
  "Jan Kowalski",
  "Aiko Tanaka",
  "Lars Nilsen",
  "Sofía García",
  "Ahmed Khan",
  "Émilie Dubois",
  "Chen Wei",
  "Olivia Smith",
  "Lukas Müller",
];
const BLOCKS = ["Airbnb (Not available)", "CLOSED - Not available", "Blocked", "  not   AVAILABLE ", "Unavailable"];

/** One booking of the platforms' feed: its lines, and whether its summary is a placeholder. */
function platformBooking(i: number, start: string, end: string): { lines: string[]; placeholder: boolean } {
  const k = i % 10;
  if (k < 4) {
    const code = `HM${(0x10000000 + i).toString(36).toUpperCase()}`;
    const last4 = String((i * 7919) % 10_000).padStart(4, "0");
    return {
      placeholder: true,
      lines: [
        `DTEND;VALUE=DATE:${end}`,
        `DTSTART;VALUE=DATE:${start}`,
        `UID:1418fb94e984-${(0x1000000 + i).toString(16)}b7c2d9e8a4b6c0d1e2f3a4b5c@airbnb.com`,
        fold(
          `DESCRIPTION:Reservation URL: https://www.airbnb.com/hosting/reservations/details/${code}\\nPhone Number (Last 4 Digits): ${last4}`,
        ),
        "SUMMARY:Reserved",
      ],
    };
  }
  const summary = k === 4 ? "Reservation" : k === 5 ? "booked" : NAMES[i % NAMES.length];
  return {
    placeholder: k < 6,
    lines: [`UID:cm-${i}@channel.test`, `DTSTART;VALUE=DATE:${start}`, `DTEND;VALUE=DATE:${end}`, `SUMMARY:${summary}`],
  };
}

/** A feed of `n` bookings (and, in the platforms' shape, n / 2 blocks), dated from `now`. */
export function bookingFeed(n: number, shape: FeedShape = {}, now = Date.now()): BenchFeed {
  const filler = "Booked through the demo channel manager; arrival after 15:00, key code sent by e-mail. ".repeat(4);
  const ev: string[] = [];
  const blockUids = new Set<string>();
  let placeholders = 0;
  const event = (lines: string[]) => ev.push(["BEGIN:VEVENT", ...lines, "END:VEVENT"].join("\r\n"));
  for (let i = 0; i < n; i++) {
    const start = day(now, 1 + (i % 300));
    const end = day(now, 3 + (i % 300));
    if (!shape.platforms) {
      event([
        `UID:${shape.uid ?? "bench"}-${i}@example.com`,
        `SUMMARY:Guest ${i}`,
        ...(shape.filler ? [`DESCRIPTION:${filler}`] : []),
        `DTSTART;VALUE=DATE:${start}`,
        `DTEND;VALUE=DATE:${end}`,
      ]);
      continue;
    }
    const b = platformBooking(i, start, end);
    if (b.placeholder) placeholders++;
    event(b.lines);
    if (i % 2 === 1) {
      const kind = ((i - 1) / 2) % BLOCKS.length;
      const uid = `block-${i}@${["airbnb.com", "booking.test"][kind] ?? "channel.test"}`;
      blockUids.add(uid);
      event([
        `UID:${uid}`,
        `DTSTART;VALUE=DATE:${day(now, 3 + (i % 300))}`,
        `DTEND;VALUE=DATE:${day(now, 5 + (i % 300))}`,
        `SUMMARY:${BLOCKS[kind]}`,
      ]);
    }
  }
  const head = shape.platforms
    ? [
        "BEGIN:VCALENDAR",
        "PRODID:-//door-access bench//platforms' feeds mixed//EN",
        "CALSCALE:GREGORIAN",
        "VERSION:2.0",
      ]
    : ["BEGIN:VCALENDAR", "VERSION:2.0"];
  return {
    text: [...head, ...ev, "END:VCALENDAR", ""].join("\r\n"),
    bookings: n,
    blocks: blockUids.size,
    placeholders,
    blockUids,
  };
}
