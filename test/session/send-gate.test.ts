/**
 * The send gate (src/session/send-gate.ts): when a login or refresh may be sent. The service's
 * Retry-After and nothing of ours on top, consecutive 429s doubling (docs/session.md#rate-limits);
 * logins that failed on 5xx or the network at most once a minute (docs/session.md#connection-errors);
 * one re-login an hour after a refused refresh token, renewals never closer than the spacing
 * (docs/session.md#renewal); every wait on the monotonic clock.
 */
import { strict as assert } from "node:assert";
import { DoorApiError } from "../../src/client/errors.js";
import { SendGate } from "../../src/session/send-gate.js";
import { DEFAULT_TIMINGS } from "../../src/session/types.js";
import { fakeClock, type FakeClock } from "../helpers/fake-clock.js";

function tooMany(retryAfter: number | null, held = false): DoorApiError {
  return new DoorApiError({
    operation: "login",
    kind: "http",
    status: 429,
    message: "login: 429",
    retryAfter,
    mayHaveReached: true,
    held,
  });
}

describe("session send gate: no login or refresh before the service's Retry-After, the spacings kept, on the monotonic clock (docs/session.md#rate-limits)", function () {
  let clock: FakeClock;
  let gate: SendGate;

  beforeEach(() => {
    clock = fakeClock();
    gate = new SendGate(clock, { ...DEFAULT_TIMINGS }, () => 0);
  });
  afterEach(() => clock.uninstall());

  it("a first 429 waits exactly its Retry-After; each one in a row doubles it; a new pair ends the run", async () => {
    assert.equal(gate.loginRateLimited(tooMany(1)), 1000);
    assert.equal(gate.mayRenew(), false);
    assert.equal(gate.rateLimitedNow(), true);
    await clock.tickAsync(999);
    assert.equal(gate.mayRenew(), false, "not a millisecond early");
    await clock.tickAsync(1);
    assert.equal(gate.mayRenew(), true, "and not a millisecond later");
    assert.equal(gate.refreshRateLimited(tooMany(1), false), 2000);
    assert.equal(gate.refreshRateLimited(tooMany(1), false), 4000);
    gate.renewed();
    assert.equal(gate.mayRenew(), true);
    assert.equal(gate.rateLimitedUntil, null);
    assert.equal(gate.loginRateLimited(tooMany(1)), 1000, "a new run starts at the Retry-After");
  });

  it("any other answer ends the run of 429s", () => {
    gate.loginRateLimited(tooMany(1));
    gate.failed("login failed with 503");
    assert.equal(gate.rateLimited, false);
    assert.equal(gate.loginRateLimited(tooMany(1)), 1000);
  });

  it("a hold handed over (nothing sent) waits what is left of it and does not grow the run", () => {
    assert.equal(gate.loginRateLimited(tooMany(3, true)), 3000);
    assert.equal(gate.loginRateLimited(tooMany(1)), 1000, "still the first 429 of this session's run");
  });

  it("setting the wall clock forward sends nothing before the Retry-After", () => {
    gate.loginRateLimited(tooMany(60));
    clock.jump(3600_000);
    assert.equal(gate.mayRenew(), false);
    assert.ok(gate.nextLoginAt() > clock.monotonic());
  });

  it("a refresh's 429 binds a login only when the access token has expired", () => {
    gate.refreshRateLimited(tooMany(30), false);
    assert.equal(gate.nextLoginAt(), Number.NEGATIVE_INFINITY, "the login is not held (the token is still good)");
    gate.renewed();
    gate.refreshRateLimited(tooMany(30), true);
    assert.equal(gate.nextLoginAt(), clock.monotonic() + 30_000);
    assert.equal(gate.rateLimitedUntil, clock.monotonic() + 30_000);
  });

  it("a login that failed on 5xx or the network is tried again at most once a minute; after a 429 only the Retry-After binds (docs/session.md#connection-errors)", () => {
    gate.loginStarted();
    gate.failed("login failed with 503");
    assert.equal(gate.nextLoginAt(), clock.monotonic() + DEFAULT_TIMINGS.loginRetryMs);
    gate.loginStarted();
    gate.loginRateLimited(tooMany(2));
    assert.equal(gate.nextLoginAt(), clock.monotonic() + 2000);
  });

  it("a refused refresh token leads to one login an hour; an operator's Reconnect lifts that, not a Retry-After (docs/session.md#renewal)", async () => {
    assert.equal(gate.reloginAfterReject(), true);
    await clock.tickAsync(DEFAULT_TIMINGS.reloginWindowMs - 1);
    assert.equal(gate.reloginAfterReject(), false, "a second refusal within the hour: a halt");
    assert.ok(gate.reconnectWait() <= 0);
    assert.equal(gate.reloginAfterReject(), true, "Reconnect lifted the once-an-hour rule");
    gate.refreshRateLimited(tooMany(20), false);
    assert.equal(gate.reconnectWait(), 20_000, "a refresh's Retry-After binds Reconnect's login");
    assert.equal(gate.mayRenew(), false);
  });

  it("a scheduled renewal is never closer than the spacing after the last refresh started, whatever is due", async () => {
    gate.refreshStarted();
    assert.equal(gate.renewalDelay(0), DEFAULT_TIMINGS.minRenewalIntervalMs);
    assert.equal(gate.renewalDelay(-5000), DEFAULT_TIMINGS.minRenewalIntervalMs, "an overdue renewal too");
    await clock.tickAsync(DEFAULT_TIMINGS.minRenewalIntervalMs);
    assert.equal(gate.renewalDelay(-5000), 0);
    assert.equal(gate.renewalDelay(7000), 7000);
  });

  it("a hold handed over from a replaced session binds logins and refreshes until it ends", async () => {
    gate.holdUntil(clock.monotonic() + 5000);
    assert.equal(gate.rateLimitedUntil, clock.monotonic() + 5000);
    assert.equal(gate.mayRenew(), false);
    assert.equal(gate.nextLoginAt(), clock.monotonic() + 5000);
    gate.holdUntil(clock.monotonic() - 1);
    assert.equal(gate.rateLimitedUntil, clock.monotonic() + 5000, "a hold already over changes nothing");
    await clock.tickAsync(5000);
    assert.equal(gate.rateLimitedUntil, null);
    assert.equal(gate.mayRenew(), true);
  });

  it("a call's error names the whole seconds left of the Retry-After", async () => {
    gate.refreshRateLimited(tooMany(10), false);
    await clock.tickAsync(2500);
    const e = gate.renewalFailedError("ready", "nothing was sent");
    assert.equal(e.retryAfter, 8);
    assert.match(e.message, /retry after 8 s; nothing was sent/);
  });
});
