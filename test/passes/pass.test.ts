/**
 * The checks of a door-pass issue request, without a runtime (src/passes/pass.ts;
 * docs/passes.md#issue): a date that does not exist is refused naming its field, and the dates
 * that do exist at the edges of the calendar and the clock are taken as the instants they name.
 * In a runtime: test/nodes/door-pass.test.ts.
 */
import { strict as assert } from "node:assert";
import { checkIssue, refusalText } from "../../src/passes/pass.js";
import { passRefused } from "../../src/unlock/guest-refusal.js";

const base = {
  guest: "Ada",
  doors: [101],
  from: "1999-01-01T00:00:00Z",
  until: "2199-01-01T00:00:00Z",
};

describe("issue: a date that does not exist is invalid input naming its field (docs/passes.md#issue)", () => {
  for (const [field, value] of [
    ["until", "2027-02-30T11:00:00+01:00"],
    ["until", "2027-02-29T11:00:00+01:00"],
    ["until", "2026-04-31T11:00:00+01:00"],
    ["until", "2027-01-01T24:00:00Z"],
    ["until", "2027-01-01T25:00:00Z"],
    ["until", "2027-01-01T10:60:00Z"],
    ["until", "2027-01-01T10:00:60Z"],
    ["until", "2027-01-01T10:00:00+25:00"],
    ["until", "2027-01-01T10:00:00+01:60"],
    ["until", "2027-13-01T10:00:00Z"],
    ["until", "2027-00-10T10:00:00Z"],
    ["from", "2026-12-00T08:00:00Z"],
    ["from", "2026-06-31T08:00:00Z"],
    ["from", "2100-02-29T08:00:00Z"],
  ] as const) {
    it(`${field} ${value}: refused, the problem names ${field} and says the date does not exist`, () => {
      const r = checkIssue({ ...base, [field]: value });
      assert.equal(r.ok, false, `accepted as ${r.ok ? r.request[field] : ""}`);
      if (r.ok) return;
      assert.equal(r.problems.length, 1, r.problems.join("; "));
      assert.match(r.problems[0], new RegExp(`^${field}: `));
      assert.match(r.problems[0], /does not exist/);
    });
  }

  for (const [value, instant] of [
    ["2028-02-29T11:00:00+01:00", "2028-02-29T10:00:00.000Z"],
    ["2000-02-29T00:00:00Z", "2000-02-29T00:00:00.000Z"],
    ["2027-12-31T23:59:59Z", "2027-12-31T23:59:59.000Z"],
    ["2027-06-30T23:59:59.999+02:00", "2027-06-30T21:59:59.999Z"],
    ["2027-06-30T12:00:00.5Z", "2027-06-30T12:00:00.500Z"],
    ["2027-06-30T12:00:00.123456789Z", "2027-06-30T12:00:00.123Z"],
    ["2027-06-30T12:00Z", "2027-06-30T12:00:00.000Z"],
    ["2027-06-30T12:00:00-00:00", "2027-06-30T12:00:00.000Z"],
    ["2027-06-30T12:00:00+14:00", "2027-06-29T22:00:00.000Z"],
    ["2027-06-30T12:00:00-12:00", "2027-07-01T00:00:00.000Z"],
    ["2027-06-30T00:00:00+05:45", "2027-06-29T18:15:00.000Z"],
  ] as const) {
    it(`until ${value} exists: taken as ${instant}`, () => {
      const r = checkIssue({ ...base, until: value });
      assert.ok(r.ok, r.ok ? "" : r.problems.join("; "));
      assert.equal(r.request.until, instant);
    });
  }
});

describe("what a guest is told of a refused pass: its times as local time in the pass's own zone, else the node's, never ISO UTC (docs/passes.md#at-a-door-unlock)", () => {
  const pass = {
    id: "pass-1",
    guest: "Ada",
    doors: [{ deviceId: 101, door: "Front Door" }],
    from: "2026-12-01T14:00:00.000Z",
    until: "2026-12-05T10:00:00.000Z",
    uses: null,
    used: 0,
    ref: null,
    revoked: null,
    firstUsed: null,
    issued: "2026-11-01T00:00:00.000Z",
    hash: "0",
  };

  it("the node's zone: 'expired on Saturday 5 December 11:00 (Europe/Oslo)', and passRefusal { why, at, timeZone }", () => {
    assert.equal(
      refusalText("expired", pass, "Europe/Oslo"),
      "this pass expired on Saturday 5 December 11:00 (Europe/Oslo)",
    );
    assert.equal(
      refusalText("upcoming", pass, "Europe/Oslo"),
      "this pass is not valid yet: it opens on Tuesday 1 December 15:00 (Europe/Oslo)",
    );
    assert.deepEqual(passRefused("expired", pass, "Europe/Oslo"), {
      why: "expired",
      at: pass.until,
      timeZone: "Europe/Oslo",
    });
    assert.deepEqual(passRefused("upcoming", pass, "Europe/Oslo"), {
      why: "not-yet",
      at: pass.from,
      timeZone: "Europe/Oslo",
    });
  });

  it("a pass with a zone of its own is read in it, in the words and in the data", () => {
    const own = { ...pass, timeZone: "Asia/Tokyo" };
    assert.equal(
      refusalText("expired", own, "Europe/Oslo"),
      "this pass expired on Saturday 5 December 19:00 (Asia/Tokyo)",
    );
    assert.equal(passRefused("expired", own, "Europe/Oslo").timeZone, "Asia/Tokyo");
  });
});
