/**
 * A session signed in from the editor with no deployed node stays open for 10 minutes, then
 * stops; its stored pair is still resumed by the deploy (docs/session.md#signing-in-from-the-editor).
 * The registry's wait (SIGN_IN_PARK_MS) runs on Node's timers: sinon fakes setTimeout and
 * clearTimeout only, while the session itself keeps a clock of real timers, and the simulator
 * answers over loopback.
 */
import { strict as assert } from "node:assert";
import { existsSync, rmSync } from "node:fs";
import * as path from "node:path";
import sinon from "sinon";
import { AccountCore } from "../../src/account/account-core.js";
import {
  SIGN_IN_PARK_MS,
  closeAllParked,
  registrySnapshot,
  runningCore,
  settingsOf,
  signIn,
} from "../../src/account/registry.js";
import type { SessionLog } from "../../src/session/session.js";
import { accountKey } from "../../src/session/token-store.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import type { Clock } from "../../src/util/clock.js";
import { CapturingLog, DEMO_PHONE, tempDir } from "../helpers/session.js";

/** Node's own timers, taken before sinon replaces them: the session's clock and the test's polling. */
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;
const realClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout(fn, ms) {
    const t = realSetTimeout(fn, Math.min(Math.max(0, ms), 2_147_483_647));
    t.unref();
    return t;
  },
  clearTimeout: (h) => realClearTimeout(h as NodeJS.Timeout),
};

async function realWait(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => realSetTimeout(r, 5));
  }
}

describe("a session signed in from the editor with no deployed node stays open 10 minutes, then closes; the deploy still resumes its pair (docs/session.md#signing-in-from-the-editor)", function () {
  this.timeout(20_000);
  let sim: RunningSimulator;
  let dir: string;
  let timers: sinon.SinonFakeTimers | null = null;
  const cores: AccountCore[] = [];

  beforeEach(async () => {
    sim = await startSimulator({ rateLimit: false });
    dir = tempDir("door-sign-in-");
  });
  afterEach(async () => {
    timers?.restore();
    timers = null;
    await closeAllParked();
    for (const c of cores.splice(0)) await c.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("signed in, no node deployed: open (the same core, running) until SIGN_IN_PARK_MS (10 min) has passed, closed after; a core started next resumes the stored pair without a login", async () => {
    assert.equal(SIGN_IN_PARK_MS, 10 * 60_000, "docs: 10 minutes");
    const key = accountKey(
      sim.url,
      DEMO_PHONE.method,
      DEMO_PHONE.method === "email" ? DEMO_PHONE.email : DEMO_PHONE.phoneNumber,
    );
    const settings = settingsOf(DEMO_PHONE.password, { kind: "file" });
    const tokenFile = path.join(dir, "session.json");
    const make = (log: SessionLog, checkCredentials = false): AccountCore => {
      const core = new AccountCore({
        baseUrl: sim.url,
        credentials: DEMO_PHONE,
        tokenFile,
        clock: realClock,
        log,
        checkCredentials,
      });
      cores.push(core);
      return core;
    };
    timers = sinon.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldClearNativeTimers: true } as never);
    const r = signIn(key, settings, make, new CapturingLog(), { baseUrl: sim.url, confirm: false });
    assert.equal(r.kind, "started");
    const core = (r as { core: AccountCore }).core;
    await realWait("the sign-in's login", () => core.session.state === "ready" && existsSync(tokenFile));
    assert.equal(sim.control.counts().logins, 1);

    timers.tick(SIGN_IN_PARK_MS - 1);
    assert.equal(runningCore(key), core, "still open just before 10 minutes");
    assert.equal(core.isClosed, false);
    assert.deepEqual(
      registrySnapshot().map((e) => [e.key, e.members, e.running]),
      [[key, 0, true]],
    );

    timers.tick(1);
    assert.equal(runningCore(key), null, "closed once 10 minutes have passed");
    assert.equal(core.isClosed, true);
    assert.deepEqual(registrySnapshot(), []);
    timers.restore();
    timers = null;

    // The pair stays stored: the deploy's core resumes it (no login).
    const next = make(new CapturingLog());
    await next.start();
    assert.equal(next.session.state, "ready");
    assert.equal(sim.control.counts().logins, 1, "no second login");
  });
});
