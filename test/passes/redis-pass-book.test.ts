/**
 * The pass book on a real redis-server, two books standing for two instances (each its own
 * connection): what a booking calendar's changes (update, revoke, fromSource) do across instances
 * (docs/passes.md#where-passes-are-kept).
 */
import { strict as assert } from "node:assert";
import { RedisPassBook } from "../../src/passes/redis-pass-book.js";
import { RedisTokenStore } from "../../src/session/redis-store.js";
import { RedisServer } from "../helpers/redis.js";
import { needProgram } from "../helpers/programs.js";

const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe("the pass book on the account's Redis store: changes on one instance are those every instance checks (docs/passes.md#where-passes-are-kept)", function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let stores: RedisTokenStore[] = [];

  before(async function () {
    needProgram(this, "redis-server");
    redis = await RedisServer.start();
  });
  after(async () => {
    await redis?.stop();
  });
  afterEach(async () => {
    await Promise.all(stores.map((s) => s.close()));
    stores = [];
    await redis.stop(); // no persistence: the next test starts empty
    await redis.resume();
  });

  /** An instance; `beforeFirstWrite` runs before its first change is written (after it has read the pass). */
  function instance(beforeFirstWrite?: () => Promise<unknown>): RedisPassBook {
    const store = new RedisTokenStore({ url: redis.url, accountKey: "acct-1", secret: "pw" });
    stores.push(store);
    let held = beforeFirstWrite;
    const commands = Object.assign(Object.create(store) as RedisTokenStore, {
      async command<T>(args: string[]): Promise<T> {
        if (held && args[0] === "EVAL" && args[2] === "4") {
          const h = held;
          held = undefined;
          await h();
        }
        return store.command<T>(args);
      },
    });
    return new RedisPassBook(commands, Date.now, (m) => assert.fail(m));
  }
  const now = Date.now();
  const newPass = (source?: string) => ({
    guest: "Ada",
    doors: [{ deviceId: 101, door: "Front Door" }],
    from: iso(now - HOUR),
    until: iso(now + HOUR),
    uses: null,
    ref: "b-1",
    ...(source ? { source } : {}),
  });

  it("a pass moved to another door on one instance: the other, which checked it before, no longer opens the old door", async () => {
    const [x, y] = [instance(), instance()];
    const { pass, code } = await x.issue(newPass(), 8);
    await y.refresh();
    const seen = y.find(code)!;
    const ticket = y.reserve(seen, 101)!; // y's check passed with the pass as it was
    await x.update(pass.id, { ...newPass(), doors: [{ deviceId: 102, door: "Back Door" }] });
    await assert.rejects(ticket.commit(), /not for this door/);
    await y.refresh();
    assert.deepEqual(
      y.find(code)!.doors.map((d) => d.deviceId),
      [102],
    );
    const t2 = y.reserve(y.find(code)!, 102)!;
    assert.deepEqual(await t2.commit(), { first: true });
  });

  it("a revoke and an update of one pass at once on two instances: neither is lost, the code stays", async () => {
    // Forced: y has read the pass when x revokes it; only then does y write its update.
    let revoked: Awaited<ReturnType<RedisPassBook["revoke"]>> = [];
    const x = instance();
    const y = instance(async () => (revoked = await x.revoke({ ref: "b-1" })));
    const { pass, code } = await x.issue(newPass("cal-1"), 8);
    const updated = await y.update(pass.id, { ...newPass(), guest: "Ada Lovelace" });
    assert.equal(revoked.length, 1);
    assert.ok(updated);
    const [onX] = await x.fromSource("cal-1");
    const [onY] = await y.fromSource("cal-1");
    for (const p of [onX, onY]) {
      assert.equal(p.guest, "Ada Lovelace");
      assert.notEqual(p.revoked, null);
      assert.equal(p.hash, pass.hash);
    }
    await y.refresh();
    assert.equal(y.find(code)!.id, pass.id);
  });
});
