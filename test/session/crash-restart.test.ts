/**
 * Crashes and restarts: a process that unlocks and refreshes continuously is killed with
 * SIGKILL at random moments (with latency injected on refresh and unlock, so many kills land
 * inside one), then restarted on the same directory. After every kill:
 * - the stored token pair is never torn: absent, or one whole pair the service issued
 *   together (old pair or new pair, never a mix);
 * - a restart resumes or logs in once (logins ≤ restarts + 1 over the whole run);
 * - the audit file has an attempt record for every unlock that reached the simulator, and
 *   is valid JSON Lines (a torn last line is tolerated and reported).
 * See docs/session.md#token-storage and docs/audit-log.md#records.
 */
import { strict as assert } from "node:assert";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { readAuditFile } from "../../src/audit/audit-log.js";
import { FileTokenStore, accountKey } from "../../src/session/token-store.js";
import { issuedTokens, startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { tempDir, waitUntil } from "../helpers/session.js";

const KILLS = Number(process.env.CRASH_KILLS ?? 25);

describe("a process killed during a refresh or an unlock leaves a whole token pair and an attempt record for every unlock sent (docs/session.md#token-storage, docs/audit-log.md#records)", function () {
  this.timeout(KILLS * 8_000 + 30_000);
  let sim: RunningSimulator;
  let child: ChildProcess | null = null;

  before(async () => {
    sim = await startSimulator({ rateLimit: false });
  });
  after(async () => {
    child?.kill("SIGKILL");
    await sim.close();
  });

  it(`survives ${KILLS} kills with the token pair and the audit log intact`, async () => {
    const dir = tempDir("door-crash-");
    const tokenFile = path.join(dir, "session.json");
    const store = new FileTokenStore({ filePath: tokenFile, accountKey: accountKey(sim.url, "phone", "+15550000001") });
    const script = path.resolve("test/fixtures/crash-child.js");
    let tornAuditTails = 0;
    let killsDuringRefresh = 0;
    let killsDuringUnlock = 0;
    for (let i = 0; i < KILLS; i++) {
      // Widen the windows: refreshes and unlocks take 20-60 ms at the service.
      sim.control.clearFaults();
      if (i % 4 === 0) {
        // Kill inside a refresh, forced rather than timed: the service holds this child's next
        // refresh for a minute (so the kill always lands inside it). Every other such round the
        // refresh is executed first (slow-headers: the token is consumed and the new pair never
        // arrives), else not executed at all (latency: the token is still good).
        sim.control.inject({
          kind: i % 8 === 0 ? "slow-headers" : "latency",
          endpoint: "refreshToken",
          latencyMs: 60_000,
          count: 1,
        });
      } else {
        sim.control.inject({ kind: "latency", endpoint: "refreshToken", latencyMs: 40 + (i % 3) * 10, count: 1000 });
      }
      sim.control.inject({ kind: "latency", endpoint: "unlockDevice", latencyMs: 20, count: 1000 });
      const out = { text: "" };
      child = spawn(process.execPath, [script, sim.url, dir], { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout!.on("data", (d: Buffer) => (out.text += d.toString()));
      await waitUntil(() => out.text.includes("ready"), 30_000, `child ${i} ready`); // may first wait out a dead holder's lock (5 s)
      if (i % 4 === 0) {
        await waitUntil(
          () => sim.control.inFlight().some((e) => e.operation === "refreshToken"),
          20_000,
          `child ${i} refreshing`,
        );
        killsDuringRefresh++;
      } else if (i % 4 === 1) {
        // Kill inside an unlock.
        await waitUntil(
          () => sim.control.inFlight().some((e) => e.operation === "unlockDevice"),
          20_000,
          `child ${i} unlocking`,
        );
        killsDuringUnlock++;
      } else {
        await new Promise((r) => setTimeout(r, 30 + Math.floor(Math.random() * 250)));
      }
      const exited = new Promise((r) => child!.once("exit", r));
      child.kill("SIGKILL");
      await exited;
      child = null;

      // The stored pair: absent, or one whole pair issued together.
      if (existsSync(tokenFile)) {
        const pair = await store.load();
        assert.ok(
          pair,
          `kill ${i}: the token file exists but is unreadable: ${readFileSync(tokenFile, "utf8").slice(0, 40)}…`,
        );
        const issued = issuedTokens();
        const r = issued.indexOf(pair.refreshToken);
        const a = issued.indexOf(pair.accessToken);
        assert.ok(r >= 0 && a >= 0, `kill ${i}: the stored tokens were issued by the service`);
        assert.equal(
          a,
          r + 1,
          `kill ${i}: the stored access and refresh tokens come from the same issue (never a mix)`,
        );
      }
      const audit = await readAuditFile(path.join(dir, "audit.jsonl"));
      assert.deepEqual(audit.badLines, [], `kill ${i}: only the last line may be torn`);
      if (audit.tornLastLine) tornAuditTails++;
    }
    const restarts = KILLS;
    const logins = sim.control.requests({ operation: "loginByPhone" }).length;
    assert.ok(logins <= restarts + 1, `${logins} logins for ${restarts} restarts`);
    const puts = sim.control.requests({ operation: "unlockDevice" }).length;
    const audit = await readAuditFile(path.join(dir, "audit.jsonl"));
    const attempts = audit.records.filter((r) => r.type === "unlock-attempt").length;
    assert.ok(puts > 0 && puts <= attempts, `${puts} PUTs reached the service, ${attempts} attempt records`);
    const refreshes = sim.control.requests({ operation: "refreshToken" }).length;
    // The dead children's held refreshes are logged once their connections close.
    await waitUntil(() => sim.control.inFlight().length === 0, 10_000, "the killed children's requests to close");
    const cutRefreshes = sim.control.requests({ operation: "refreshToken" }).filter((r) => r.status === 0).length;
    assert.ok(
      cutRefreshes >= killsDuringRefresh,
      `every kill inside a refresh cut one (${cutRefreshes} of ${killsDuringRefresh})`,
    );
    console.log(
      `    kills: ${KILLS} (${killsDuringRefresh} inside a refresh, ${killsDuringUnlock} inside an unlock), logins: ${logins}, refreshes: ${refreshes}, PUTs: ${puts}, attempt records: ${attempts}, torn audit tails seen: ${tornAuditTails}`,
    );
  });
});
