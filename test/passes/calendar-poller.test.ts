/**
 * The calendar's reads (docs/passes.md#from-a-booking-calendar): a feed that cannot be read in
 * time changes nothing and holds no later read back.
 */
import { strict as assert } from "node:assert";
import { type Server, createServer } from "node:http";
import { type AddressInfo, createServer as createTcpServer } from "node:net";
import { CalendarPoller } from "../../src/passes/calendar-poller.js";

describe("the calendar's reads: a feed that trickles in is given up, and the next read is made (docs/passes.md#from-a-booking-calendar)", function () {
  this.timeout(20_000);
  let server: Server;
  let url = "";
  const timers: NodeJS.Timeout[] = [];
  let requests = 0;

  before(async () => {
    // Headers at once, then one byte every 100 ms, never the end: no pause long enough for an idle time-out.
    server = createServer((_req, res) => {
      requests++;
      res.writeHead(200, { "content-type": "text/calendar" });
      res.write("BEGIN:VCALENDAR\r\n");
      timers.push(setInterval(() => res.write("X"), 100));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow.ics`;
  });
  after(async () => {
    for (const t of timers) clearInterval(t);
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it("a feed that never ends: the read fails after the deadline (nothing applied), and the next read is a new request", async () => {
    const settings = {
      url,
      everyMinutes: 15,
      checkIn: "15:00",
      checkOut: "11:00",
      timeZone: "UTC",
      bufferBeforeMin: 0,
      bufferAfterMin: 0,
    };
    const problems: (string | null)[] = [];
    let applied = 0;
    const poller = new CalendarPoller(
      settings,
      () => {
        applied++;
        return Promise.resolve();
      },
      (p) => problems.push(p),
      Date.now,
      1000,
    );
    try {
      const first = await poller.poll();
      assert.equal(first.kind, "failed");
      assert.match(problems[0] ?? "", /not read within 1 s/);
      await poller.poll();
      assert.equal(requests, 2, "the second read was made");
      assert.equal(applied, 0);
    } finally {
      poller.stop();
    }
  });

  it("a webcal:// feed is fetched as https:// (docs/passes.md#from-a-booking-calendar): the first bytes on the wire are a TLS handshake, not an HTTP request", async () => {
    const first: number[] = [];
    const tcp = createTcpServer((socket) => {
      socket.once("data", (d: Buffer) => {
        first.push(d[0]);
        socket.destroy();
      });
    });
    await new Promise<void>((r) => tcp.listen(0, "127.0.0.1", r));
    const port = (tcp.address() as AddressInfo).port;
    const poller = new CalendarPoller(
      {
        url: `webcal://127.0.0.1:${port}/listing.ics`,
        everyMinutes: 15,
        checkIn: "15:00",
        checkOut: "11:00",
        timeZone: "UTC",
        bufferBeforeMin: 0,
        bufferAfterMin: 0,
      },
      () => Promise.resolve(),
      () => undefined,
      Date.now,
      5000,
    );
    try {
      const r = await poller.poll();
      assert.equal(r.kind, "failed");
      assert.deepEqual(first, [0x16], "a TLS record (handshake), as https:// sends");
    } finally {
      poller.stop();
      await new Promise<void>((r) => tcp.close(() => r()));
    }
  });
});

describe("a sync reads the calendar as it is once the sync is asked (docs/passes.md#from-a-booking-calendar)", function () {
  this.timeout(20_000);

  it("a sync asked while a read is under way (begun before the feed changed) is answered by one more read after it, shared by every sync asked meanwhile: the change is applied", async () => {
    const day = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10).replace(/-/g, "");
    const feed = (...uids: string[]) =>
      [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//test//EN",
        ...uids.flatMap((uid) => [
          "BEGIN:VEVENT",
          `UID:${uid}`,
          `SUMMARY:Guest ${uid}`,
          `DTSTART;VALUE=DATE:${day(1)}`,
          `DTEND;VALUE=DATE:${day(3)}`,
          "END:VEVENT",
        ]),
        "END:VCALENDAR",
        "",
      ].join("\r\n");
    let body = feed("keep", "cancel");
    const held: (() => void)[] = [];
    let requests = 0;
    const server = createServer((_req, res) => {
      requests++;
      const answer = body; // the feed as it is when the request comes
      const send = () => res.writeHead(200, { "content-type": "text/calendar" }).end(answer);
      if (requests === 1) held.push(send);
      else send();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const applied: string[][] = [];
    const poller = new CalendarPoller(
      {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/listing.ics`,
        everyMinutes: 15,
        checkIn: "15:00",
        checkOut: "11:00",
        timeZone: "UTC",
        bufferBeforeMin: 0,
        bufferAfterMin: 0,
      },
      (bookings) => {
        applied.push(bookings.map((b) => b.ref).sort());
        return Promise.resolve();
      },
      () => undefined,
    );
    try {
      const timerRead = poller.poll(); // the timer's read: its request is held
      for (let i = 0; i < 200 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(held.length, 1, "the first read's request came");
      body = feed("keep"); // the booking is cancelled, then the host syncs (three times)
      const syncs = [poller.pollNow(), poller.pollNow(), poller.pollNow()];
      held[0]();
      assert.equal((await timerRead).kind, "read");
      const answers = await Promise.all(syncs);
      for (const a of answers) assert.deepEqual(a.kind === "read" ? a.bookings.map((b) => b.ref) : a, ["keep"]);
      assert.equal(requests, 2, "one more read for the three syncs");
      assert.deepEqual(applied, [["cancel", "keep"], ["keep"]], "the cancellation was applied");
    } finally {
      poller.stop();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
