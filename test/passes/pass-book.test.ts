/**
 * The file pass book (docs/passes.md#where-passes-are-kept): a use taken at the check is written
 * when the command would leave, as the pass is then (docs/passes.md#at-a-door-unlock).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FilePassBook, PassUseRefused } from "../../src/passes/pass-book.js";
import { applyBookings } from "../../src/passes/calendar-sync.js";

const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe("the file pass book: a use is written as the pass is when the command would leave (docs/passes.md#at-a-door-unlock)", function () {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "pass-book-"));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const book = () =>
    new FilePassBook(path.join(dir, "passes.json"), path.join(dir, "pass-key"), Date.now, (m) => assert.fail(m));
  const now = Date.now();
  const newPass = {
    guest: "Ada",
    doors: [{ deviceId: 101, door: "Front Door" }],
    from: iso(now - HOUR),
    until: iso(now + HOUR),
    uses: 2,
    ref: "b-1",
  };

  it("a pass revoked after its use was taken at the check: the use is refused when it would be written, and not counted", async () => {
    const b = book();
    const { pass } = await b.issue(newPass, 8);
    const ticket = b.reserve(pass, 101);
    assert.ok(ticket);
    await b.revoke({ id: pass.id });
    await assert.rejects(ticket.commit(), (e: Error) => e instanceof PassUseRefused && /revoked/.test(e.message));
    assert.equal((await b.list())[0].used, 0);
    assert.equal(b.inFlight(pass.id), 0);
  });

  // docs/passes.md#where-passes-are-kept: the key of the codes' hashes, in its own file
  it("a pass key file that cannot be read is never replaced: the passes issued under it can be checked once it is readable again", async () => {
    const keyFile = path.join(dir, "pass-key");
    fs.writeFileSync(keyFile, "not a key\n", { mode: 0o600 });
    const problems: string[] = [];
    const b = new FilePassBook(path.join(dir, "passes.json"), keyFile, Date.now, (m) => problems.push(m));
    await b.ready();
    assert.equal(problems.length, 1, "said once");
    assert.equal(fs.readFileSync(keyFile, "utf8"), "not a key\n", "the key file is left as it was");
  });

  it("a pass moved to another door after the check: the use at the old door is refused, not counted", async () => {
    const b = book();
    const { pass } = await b.issue(newPass, 8);
    const ticket = b.reserve(pass, 101);
    assert.ok(ticket);
    await b.update(pass.id, { ...newPass, doors: [{ deviceId: 102, door: "Back Door" }] });
    await assert.rejects(ticket.commit(), /not for this door/);
    assert.equal((await b.list())[0].used, 0);
    const other = b.reserve(pass, 102);
    assert.ok(other);
    assert.deepEqual(await other.commit(), { first: true });
  });

  // docs/passes.md#from-a-booking-calendar: one pass per booking, whatever the number of reads
  it("two reads of one calendar applied at once on one book: one pass per booking and one code sent, not one per read", async () => {
    const b = book();
    const doors = [{ deviceId: 101, door: "Front Door" }];
    const bookings = Array.from({ length: 50 }, (_, i) => ({
      ref: `bk-${i}`,
      guest: `Guest ${i}`,
      from: iso(now + i * HOUR),
      until: iso(now + (i + 24) * HOUR),
    }));
    const reads = await Promise.all([
      applyBookings(b, "cal-1", bookings, doors, 8, now),
      applyBookings(b, "cal-1", bookings, doors, 8, now),
    ]);
    const sent = reads.flatMap((r) => r.issued.map((x) => x.pass.ref));
    assert.equal(sent.length, 50, "one code sent per booking across both reads");
    assert.equal(new Set(sent).size, 50);
    const live = (await b.list()).filter((p) => p.state === "active" || p.state === "upcoming");
    assert.equal(live.length, 50, "one live pass per booking");
    assert.equal(new Set(live.map((p) => p.ref)).size, 50);
  });
});
