/**
 * The file pass book (docs/passes.md#where-passes-are-kept): a use taken at the check is written
 * when the command would leave, as the pass is then (docs/passes.md#at-a-door-unlock).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import sinon from "sinon";
import { PassUseRefused, makePass, passKeySealer } from "../../src/passes/pass-book.js";
import { FilePassBook } from "../../src/passes/file-pass-book.js";
import { WRITE_SLICE } from "../../src/passes/pass-file.js";
import { COPY_SLICE } from "../../src/passes/pass-index.js";
import { applyBookings } from "../../src/passes/calendar-sync.js";
import { passCheck } from "../../src/passes/pass.js";
import { olderReadAfterNewer } from "../helpers/calendar-race.js";
import { filesThatVerify } from "../helpers/key-search.js";

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

  // docs/passes.md#between-guests-the-turnover-window: every calendar's stays on the cleaner's doors count
  it("a stay of another calendar moved onto the cleaner's door closes the turnover window at once (the book's door sets follow an update)", async () => {
    const b = book();
    await b.ready();
    const stayA = { guest: "A", doors: [{ deviceId: 101, door: "Front Door" }], uses: null, source: "cal-a" };
    await b.issueBooking({ ...stayA, from: iso(now - 48 * HOUR), until: iso(now - 2 * HOUR), ref: "a1" }, 8);
    const other = await b.issueBooking(
      {
        ...stayA,
        guest: "X",
        doors: [{ deviceId: 102, door: "Back Door" }],
        from: iso(now - HOUR),
        until: iso(now + 30 * HOUR),
        ref: "x1",
        source: "cal-b",
      },
      8,
    );
    const cleaner = (
      await b.issue(
        { ...newPass, guest: "Cleaner", ref: null, until: iso(now + 60 * HOUR), uses: null, turnover: "cal-a" },
        8,
      )
    ).pass;
    assert.equal(passCheck(cleaner, now, 101, b), null, "cal-b's guest is at another door");
    await b.update(other!.pass.id, {
      guest: "X",
      doors: [{ deviceId: 101, door: "Front Door" }],
      from: iso(now - HOUR),
      until: iso(now + 30 * HOUR),
    });
    assert.equal(passCheck(cleaner, now, 101, b), "closed", "cal-b's guest now stays behind the cleaner's door");
  });

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

  // docs/passes.md#from-a-booking-calendar: the newest read wins (one runtime: a redeploy's new node beside the old one's read)
  it("an older read of a calendar writes nothing once a newer read of it has begun: the newer read's cancellation and move stay, and the cancelled booking gets no code", async () => {
    const b = book();
    await olderReadAfterNewer(b, b);
  });

  // docs/passes.md#what-passes-cost: a calendar's thousands of passes never hold Node-RED for a whole write
  it("the book is written in slices: at most WRITE_SLICE passes turned into JSON in one turn of the event loop, and the file holds every pass", async () => {
    const b = book();
    await b.ready();
    const n = WRITE_SLICE * 6 + 7;
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const perTurn = new Map<number, number>();
    const passesIn = (v: unknown): number => {
      const list = Array.isArray(v) ? v : (v as { passes?: unknown } | null)?.passes;
      return Array.isArray(list) ? list.filter((p) => typeof (p as { id?: unknown })?.id === "string").length : 0;
    };
    const stringify = sinon.stub(JSON, "stringify").callsFake(function (
      this: unknown,
      ...args: Parameters<typeof JSON.stringify>
    ) {
      perTurn.set(turn, (perTurn.get(turn) ?? 0) + passesIn(args[0]));
      return stringify.wrappedMethod.apply(JSON, args);
    });
    let issued: { pass: { id: string } }[];
    try {
      issued = await Promise.all(
        Array.from({ length: n }, (_, i) => b.issue({ ...newPass, guest: `Guest ${i}`, ref: `b-${i}`, uses: null }, 8)),
      );
    } finally {
      stringify.restore();
      ticking = false;
    }
    const most = Math.max(...perTurn.values());
    assert.ok(most > 0, "the writes were seen");
    assert.ok(most <= WRITE_SLICE, `${most} passes turned into JSON in one turn (at most ${WRITE_SLICE})`);
    const file = JSON.parse(fs.readFileSync(path.join(dir, "passes.json"), "utf8")) as {
      v: number;
      passes: { id: string }[];
    };
    assert.equal(file.v, 1);
    assert.deepEqual(new Set(file.passes.map((p) => p.id)), new Set(issued.map((x) => x.pass.id)));
    assert.equal((await book().list()).length, n, "read back whole by the next start");
  });

  // docs/passes.md#where-passes-are-kept, docs/passes.md#a-new-code
  it("a use or a new code whose own write failed is not in the file after a restart, also when it was made while an earlier write was being turned into text in slices: the pass is read back as the flow was told", async () => {
    const b = book();
    await b.ready();
    const issued = await Promise.all(
      Array.from({ length: WRITE_SLICE * 4 }, (_, i) =>
        b.issue({ ...newPass, guest: `Guest ${i}`, ref: `b-${i}`, uses: 1 }, 8),
      ),
    );
    const moved = issued[WRITE_SLICE * 4 - 1];
    const used = issued[WRITE_SLICE * 4 - 2];
    // The write under way goes through; every later one fails as on a full disk.
    let full = false;
    const rename = sinon.stub(fs.promises, "rename").callsFake(async function (from, to) {
      if (full) throw Object.assign(new Error("ENOSPC: no space left on device, rename"), { code: "ENOSPC" });
      return rename.wrappedMethod.call(fs.promises, from, to);
    });
    try {
      const underWay = b.issue({ ...newPass, guest: "Bo", ref: "b-bo" }, 8).then(() => {
        full = true;
      });
      await new Promise<void>((resolve) => setImmediate(resolve)); // its first slice is text
      const failure = (p: Promise<unknown>) =>
        p.then(
          () => "written",
          (e: Error) => e.message,
        );
      const reissue = failure(b.reissue(moved.pass.id, 8));
      const ticket = b.reserve(used.pass, 101);
      assert.ok(ticket);
      const use = failure(ticket.commit());
      await underWay;
      assert.match(await reissue, /ENOSPC/);
      assert.match(await use, /ENOSPC/);
    } finally {
      rename.restore();
    }
    const again = book();
    await again.ready();
    assert.equal(again.find(moved.code)?.id, moved.pass.id, "the code the flow holds still opens");
    assert.equal(again.find(used.code)?.used, 0, "no use counted for a command never sent");
  });

  // docs/passes.md#what-passes-cost: a calendar read again compares its bookings with copies of its passes
  it("a calendar's passes are copied for its next read COPY_SLICE at a time, a turn of the event loop between, every one of them", async () => {
    const b = book();
    const doors = [{ deviceId: 101, door: "Front Door" }];
    const n = COPY_SLICE * 4 + 3;
    const bookings = Array.from({ length: n }, (_, i) => ({
      ref: `bk-${i}`,
      guest: `Guest ${i}`,
      from: iso(now + HOUR),
      until: iso(now + 24 * HOUR),
    }));
    await applyBookings(b, "cal-1", bookings, doors, 8, now);
    await b.issue({ ...newPass, ref: "by-hand" }, 8); // another source's: not copied
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const perTurn = new Map<number, number>();
    const clone = sinon.stub(globalThis, "structuredClone").callsFake((...args: Parameters<typeof structuredClone>) => {
      perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
      return clone.wrappedMethod(...args);
    });
    let mine: { ref: string | null }[];
    try {
      mine = await b.fromSource("cal-1");
    } finally {
      clone.restore();
      ticking = false;
    }
    assert.deepEqual(new Set(mine.map((p) => p.ref)), new Set(bookings.map((x) => x.ref)));
    const most = Math.max(...perTurn.values());
    assert.ok(most <= COPY_SLICE, `${most} passes copied in one turn (at most ${COPY_SLICE})`);
  });
});

describe("the file pass key: sealed under Node-RED's credential secret, so a copy of the files without it gives back no code (docs/passes.md#where-passes-are-kept)", function () {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "pass-key-"));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const ACCOUNT = "a".repeat(64);
  const keyFile = () => path.join(dir, "pass-key");
  const now = Date.now();
  const newPass = {
    guest: "Ada",
    doors: [{ deviceId: 101, door: "Front Door" }],
    from: iso(now - HOUR),
    until: iso(now + HOUR),
    uses: null,
    ref: null,
  };
  const open = (secret: string | null, problems: string[] = []) =>
    new FilePassBook(
      path.join(dir, "passes.json"),
      keyFile(),
      Date.now,
      (m) => problems.push(m),
      passKeySealer(secret, ACCOUNT),
    );

  it("with a secret, the key file holds no key that verifies a known code (its bytes, hex or base64 tried as the HMAC key); with the secret the code is found", async () => {
    const { pass, code } = await open("the secret").issue(newPass, 8);
    const text = fs.readFileSync(keyFile(), "utf8");
    assert.equal(JSON.parse(text).enc, "aes-256-gcm");
    assert.equal(fs.statSync(keyFile()).mode & 0o777, 0o600);
    assert.deepEqual(filesThatVerify(dir, code, pass.hash), [], "no file gives a key that makes the code's hash");
    // The same files with the secret: the code is found.
    const again = open("the secret");
    await again.ready();
    assert.equal(again.find(code)?.id, pass.id);
  });

  it("a plain key of the first version is sealed in place (atomically, 0600), the same key: its passes keep opening, also after the next start", async () => {
    const key = randomBytes(32);
    fs.writeFileSync(keyFile(), key.toString("hex") + "\n", { mode: 0o600 });
    const { pass, code } = makePass(newPass, key, 8, now, () => false);
    fs.writeFileSync(path.join(dir, "passes.json"), JSON.stringify({ v: 1, passes: [pass] }) + "\n", { mode: 0o600 });
    assert.deepEqual(
      filesThatVerify(dir, code, pass.hash),
      ["pass-key"],
      "the first version's key file verifies codes",
    );
    const problems: string[] = [];
    const b = open("the secret", problems);
    await b.ready();
    assert.deepEqual(problems, []);
    assert.equal(b.find(code)?.id, pass.id, "its pass opens");
    assert.ok(!fs.readFileSync(keyFile(), "utf8").includes(key.toString("hex")), "the key is no longer in plain");
    assert.equal(fs.statSync(keyFile()).mode & 0o777, 0o600);
    assert.deepEqual(fs.readdirSync(dir).sort(), ["pass-key", "passes.json"], "no temporary file left");
    assert.deepEqual(filesThatVerify(dir, code, pass.hash), []);
    const restarted = open("the secret");
    await restarted.ready();
    assert.equal(restarted.find(code)?.id, pass.id, "after the next start too");
  });

  it("a sealed key that cannot be opened (another secret, none, torn) is never written over: once the secret is back, the passes issued under it open again", async () => {
    const first = await open("the secret").issue(newPass, 8);
    const sealed = fs.readFileSync(keyFile(), "utf8");
    for (const secret of ["another secret", null]) {
      const problems: string[] = [];
      const b = open(secret, problems);
      const meanwhile = await b.issue({ ...newPass, guest: "Bo" }, 8);
      assert.equal(problems.length, 1, problems.join("; "));
      assert.match(problems[0], /not written over/);
      assert.equal(b.find(first.code), null, "the passes before cannot be checked without their key");
      assert.equal(b.find(meanwhile.code)?.guest, "Bo", "passes issued meanwhile work until a restart");
      assert.equal(fs.readFileSync(keyFile(), "utf8"), sealed, "the key file is left as it was");
    }
    fs.writeFileSync(keyFile(), sealed.slice(0, 40), { mode: 0o600 });
    const problems: string[] = [];
    await open("the secret", problems).ready();
    assert.equal(problems.length, 1);
    assert.equal(fs.readFileSync(keyFile(), "utf8"), sealed.slice(0, 40), "a torn key file is left as it was");
    fs.writeFileSync(keyFile(), sealed, { mode: 0o600 });
    const back = open("the secret");
    await back.ready();
    assert.equal(back.find(first.code)?.id, first.pass.id);
  });
});
