/**
 * Guest passes on the account's Redis store (docs/passes.md#where-passes-are-kept): two Node-RED
 * runtimes (real processes) with a door-account on one Redis store see the same passes and the
 * same use counts. Each runtime's flow: POST /pass → door-pass → answer (errors via Catch), and
 * POST /unlock → msg.pass, msg.deviceId → door-unlock (Accept passes) → answer. PUTs are counted
 * at the simulator; keys and values read from the real redis-server.
 */
import { strict as assert } from "node:assert";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { RedisTokenStore } from "../../src/session/redis-store.js";
import { startSimulator, type RunningSimulator } from "../../src/simulator/index.js";
import { NodeRedProcess as Runtime } from "../helpers/node-red-process.js";
import { RedisServer } from "../helpers/redis.js";
import { needProgram } from "../helpers/programs.js";
import { unlockPuts } from "../helpers/requests.js";
import { until } from "../helpers/until.js";

const HOUR = 3600_000;

async function ready(rt: Runtime, id: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if ((await rt.accountState(id)).state === "ready") return;
    if (Date.now() > deadline) throw new Error(`account ${id} not ready:\n${rt.log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const iso = (ms: number) => new Date(ms).toISOString();

/** POST /unlock<suffix> → msg.deviceId and msg.pass → a door-unlock with Accept passes → the answer. */
function unlockPath(suffix: string, accountId: string): unknown[] {
  const z = "tab1";
  return [
    {
      id: `inUnlock${suffix}`,
      type: "http in",
      z,
      url: `/unlock${suffix}`,
      method: "post",
      upload: false,
      wires: [[`set${suffix}`]],
    },
    {
      id: `set${suffix}`,
      type: "change",
      z,
      rules: [
        { t: "set", p: "deviceId", pt: "msg", to: "payload.deviceId", tot: "msg" },
        { t: "set", p: "pass", pt: "msg", to: "payload.pass", tot: "msg" },
      ],
      wires: [[`unlock${suffix}`]],
    },
    {
      id: `unlock${suffix}`,
      type: "door-unlock",
      z,
      account: accountId,
      deviceId: "",
      doorName: "",
      doorLocation: "",
      lockId: "",
      actor: "",
      rejectRetained: true,
      acceptPasses: true,
      wires: [["res2"], ["res2"]],
    },
  ];
}

function flow(accountId: string, simUrl: string, redisUrl: string): unknown[] {
  const z = "tab1";
  return [
    { id: z, type: "tab", label: "passes" },
    {
      id: accountId,
      type: "door-account",
      name: "shared account",
      baseUrl: simUrl,
      loginMethod: "phone",
      auditLog: "",
      sessionStore: "redis",
      redisUrl,
      redisKeyPrefix: "door-access:",
      credentials: { phoneNumber: "+15550000001", password: "demo-password" },
    },
    { id: "inPass", type: "http in", z, url: "/pass", method: "post", upload: false, wires: [["pass1"]] },
    { id: "pass1", type: "door-pass", z, name: "", account: accountId, wires: [["res1"]] },
    { id: "catch1", type: "catch", z, name: "", scope: ["pass1"], uncaught: false, wires: [["err1"]] },
    {
      id: "err1",
      type: "change",
      z,
      rules: [{ t: "set", p: "payload", pt: "msg", to: "error", tot: "msg" }],
      wires: [["res1"]],
    },
    { id: "res1", type: "http response", z, statusCode: "200", headers: {}, wires: [] },
    // Two ways to open, each with a door-unlock of its own (and so a lockout of its own: every
    // refusal of a real code costs a try, docs/passes.md#how-hard-a-code-is-to-guess): /unlock, and
    // /unlock-race for the races, whose many refusals would lock the first.
    ...unlockPath("", accountId),
    ...unlockPath("-race", accountId),
    { id: "res2", type: "http response", z, statusCode: "200", headers: {}, wires: [] },
  ];
}

describe("guest passes on the account's Redis store: every instance sees the same passes and the same use counts (docs/passes.md#where-passes-are-kept)", function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let sim: RunningSimulator;
  let a: Runtime;
  let b: Runtime;

  before(async function () {
    needProgram(this, "redis-server");
    redis = await RedisServer.start();
    sim = await startSimulator({ rateLimit: false });
    [a, b] = await Promise.all([Runtime.start("pa"), Runtime.start("pb")]);
    await a.deploy(flow("acctA", sim.url, redis.url));
    await ready(a, "acctA");
    await b.deploy(flow("acctB", sim.url, redis.url));
    await ready(b, "acctB");
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await sim?.close();
    await redis?.stop();
  });

  async function issue(rt: Runtime, extra: Record<string, unknown> = {}): Promise<any> {
    const now = Date.now();
    const r = await rt.post("/pass", {
      action: "issue",
      guest: "Ada",
      doors: [101],
      from: iso(now - HOUR),
      until: iso(now + HOUR),
      ...extra,
    });
    assert.equal(r.action, "issued", JSON.stringify(r));
    return r;
  }
  const open = (rt: Runtime, code: string, deviceId = 101, path = "/unlock"): Promise<any> =>
    rt.post(path, { deviceId, pass: code });
  const race = (rt: Runtime, code: string, deviceId = 101): Promise<any> => open(rt, code, deviceId, "/unlock-race");

  // docs/passes.md#a-new-code
  it("reissue on one instance: the old code stops opening on the other at once, the new one opens there, the uses taken are kept", async () => {
    const p = await issue(a, { uses: 3 });
    assert.equal((await open(b, p.code)).outcome, "accepted");
    const again = await a.post("/pass", { action: "reissue", id: p.id });
    assert.equal(again.action, "issued", JSON.stringify(again));
    assert.equal(again.id, p.id);
    assert.equal(again.reissued, true);
    assert.notEqual(again.code, p.code);
    sim.control.resetRequests();
    const old = await open(b, p.code);
    assert.equal(old.outcome, "denied", JSON.stringify(old));
    assert.match(old.message, /no pass has this code/);
    assert.equal(unlockPuts(sim).length, 0);
    const fresh = await open(b, String(again.code));
    assert.equal(fresh.outcome, "accepted", JSON.stringify(fresh));
    assert.equal(fresh.pass.first, false);
    const listed = await a.post("/pass", { action: "list" });
    assert.equal((listed.passes as any[]).find((x) => x.id === p.id).used, 2);
  });

  it("a pass issued on one instance opens on the other; its use is counted for both", async () => {
    const p = await issue(a, { uses: 2 });
    sim.control.resetRequests();
    const onB = await open(b, p.code);
    assert.equal(onB.outcome, "accepted", JSON.stringify(onB));
    assert.deepEqual(onB.pass, { id: p.id, ref: null, first: true });
    const onA = await open(a, p.code);
    assert.equal(onA.outcome, "accepted", JSON.stringify(onA));
    assert.equal(onA.pass.first, false, "the first use was counted on the other instance");
    const third = await open(b, p.code);
    assert.equal(third.outcome, "denied");
    assert.equal(third.reason, "pass");
    assert.equal(unlockPuts(sim).length, 2);
    const listed = await b.post("/pass", { action: "list" });
    assert.equal((listed.passes as any[]).find((x) => x.id === p.id).used, 2);
  });

  it("a pass revoked on one instance is refused on the other, also after the other has checked it", async () => {
    const p = await issue(a, { ref: "booking-r" });
    // b knows the pass (it checked it at another door), then a revokes it.
    assert.equal((await open(b, p.code, 102)).reason, "pass");
    const revoked = await a.post("/pass", { action: "revoke", ref: "booking-r" });
    assert.deepEqual(revoked, { action: "revoked", id: p.id });
    sim.control.resetRequests();
    const r = await open(b, p.code);
    assert.equal(r.outcome, "denied", JSON.stringify(r));
    assert.equal(r.reason, "pass");
    assert.match(r.message, /revoked/);
    assert.equal(unlockPuts(sim).length, 0);
  });

  it("two instances racing for a pass's last use send one command: both believe a use is left, one is counted", async () => {
    // Forced: b reads the pass (used 0 of 1) before a takes its use, so both pass their own check.
    const p = await issue(a, { uses: 1 });
    assert.match((await race(b, p.code, 102)).message, /not for this door/);
    sim.control.resetRequests();
    const first = await race(a, p.code);
    assert.equal(first.outcome, "accepted", JSON.stringify(first));
    const late = await race(b, p.code);
    assert.equal(late.outcome, "denied", JSON.stringify(late));
    assert.equal(late.reason, "pass");
    assert.match(late.message, /no use left/);
    assert.equal(unlockPuts(sim).length, 1);

    // And at once: ten messages spread over both instances for another pass's last use.
    const q = await issue(b, { uses: 1 });
    await Promise.all([race(a, q.code, 102), race(b, q.code, 102)]); // both know it, used 0 of 1
    sim.control.resetRequests();
    const all = await Promise.all(Array.from({ length: 10 }, (_, i) => race(i % 2 ? b : a, q.code)));
    assert.equal(all.filter((r) => r.outcome === "accepted").length, 1, JSON.stringify(all));
    // Refused for the pass, or, once refusals of the real code have cost an instance's node five
    // tries, as every message is while it is locked.
    const refused = all.filter((r) => r.outcome !== "accepted");
    assert.ok(refused.every((r) => r.outcome === "denied" && (r.reason === "pass" || r.reason === "locked-out")));
    assert.equal(unlockPuts(sim).length, 1);
  });

  it("use counts outlive a restart of an instance (kept in Redis)", async () => {
    const p = await issue(a, { uses: 2 });
    assert.equal((await open(a, p.code)).outcome, "accepted");
    await a.stop();
    a = await Runtime.start("pa", a.userDir);
    await ready(a, "acctA");
    const again = await open(a, p.code);
    assert.equal(again.outcome, "accepted", JSON.stringify(again));
    assert.equal(again.pass.first, false);
    const over = await open(a, p.code);
    assert.equal(over.outcome, "denied");
    assert.match(over.message, /no use left \(2 of 2 used\)/);
  });

  it("no code in Redis: only its HMAC, under a pass key that is sealed", async () => {
    const codes = [(await issue(a)).code as string, (await issue(b)).code as string];
    const store = new RedisTokenStore({ url: redis.url, accountKey: "scan" });
    try {
      const keys = await store.command<string[]>(["KEYS", "*"]);
      assert.ok(
        keys.some((k) => k.endsWith(":passes")),
        `the passes hash: ${keys.join(" ")}`,
      );
      let all = "";
      for (const k of keys) {
        const type = await store.command<string>(["TYPE", k]);
        const v =
          type === "hash"
            ? await store.command(["HGETALL", k])
            : type === "zset"
              ? await store.command(["ZRANGE", k, "0", "-1"])
              : type === "string"
                ? await store.command(["GET", k])
                : null;
        all += `${k} ${JSON.stringify(v)}\n`;
        if (k.endsWith(":pass-key")) assert.match(String(v), /^gcm:/, "the pass key is sealed");
      }
      for (const code of codes) assert.ok(!all.includes(code), "no code in any key or value");
    } finally {
      await store.close();
    }
  });

  // docs/passes.md#where-passes-are-kept: Redis unreachable: outcome error, nothing sent (last: it stops Redis)
  it("Redis unreachable: a message with a pass sends nothing and ends with outcome error, not as a wrong code", async () => {
    const p = await issue(a);
    await redis.stop();
    sim.control.resetRequests();
    const r = await open(b, p.code);
    assert.equal(r.outcome, "error", JSON.stringify(r));
    assert.notEqual(r.reason, "pass", "not answered as a code no pass has");
    assert.match(r.message, /^not sent: the passes cannot be read/);
    assert.ok(!String(r.message).includes(p.code));
    assert.equal(unlockPuts(sim).length, 0);
  });
});

const DAY = 24 * 3600_000;

/** An all-day booking `fromDays`..`toDays` from today (UTC), as iCalendar writes one. */
function booking(uid: string, fromDays: number, toDays: number): string {
  const date = (days: number) => new Date(Date.now() + days * DAY).toISOString().slice(0, 10).replace(/-/g, "");
  return [
    "BEGIN:VEVENT",
    `UID:${uid}`,
    `SUMMARY:Guest ${uid}`,
    `DTSTART;VALUE=DATE:${date(fromDays)}`,
    `DTEND;VALUE=DATE:${date(toDays)}`,
    "END:VEVENT",
  ].join("\r\n");
}

/**
 * On loopback: a booking calendar whose answers are held while `holding` (then all are answered
 * at once by `release()`: the instances' reads overlap), and the collector of the door-pass nodes'
 * calendar messages (POST /collect).
 */
class FeedAndCollector {
  body = "";
  holding = false;
  /** While holding: only the requests whose path starts with this (null: every request). */
  holdOnly: string | null = null;
  collected: Record<string, any>[] = [];
  private held: ServerResponse[] = [];
  private server!: Server;
  url = "";
  get waiting(): number {
    return this.held.length;
  }
  release(): void {
    this.holding = false;
    for (const r of this.held.splice(0)) this.answer(r);
  }
  private answer(res: ServerResponse): void {
    this.answerWith(res, this.body);
  }
  /** Answers a held request with `body` (the feed as it was when that request came). */
  answerWith(res: ServerResponse, body: string): void {
    res.writeHead(200, { "content-type": "text/calendar" }).end(body);
  }
  /** The requests held so far, no longer held by the feed (answered by the caller); new ones are answered. */
  takeHeld(): ServerResponse[] {
    this.holding = false;
    return this.held.splice(0);
  }
  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      // Each instance's door-pass posts its calendar messages to <its feed URL>/collect.
      if (req.method === "POST" && String(req.url).endsWith("/collect")) {
        let text = "";
        req.on("data", (d: Buffer) => (text += d.toString()));
        req.on("end", () => {
          this.collected.push(JSON.parse(text) as Record<string, any>);
          res.writeHead(200).end("ok");
        });
        return;
      }
      if (this.holding && (this.holdOnly === null || String(req.url).startsWith(this.holdOnly))) this.held.push(res);
      else this.answer(res);
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** A calendar door-pass on the shared Redis store; its calendar messages go to the collector, /sync and /list answer. */
function calendarFlow(simUrl: string, redisUrl: string, feedUrl: string): unknown[] {
  const z = "tab1";
  return [
    { id: z, type: "tab", label: "calendar" },
    {
      id: "acct",
      type: "door-account",
      name: "shared account",
      baseUrl: simUrl,
      loginMethod: "phone",
      auditLog: "",
      sessionStore: "redis",
      redisUrl,
      redisKeyPrefix: "door-access:",
      credentials: { phoneNumber: "+15550000001", password: "demo-password" },
    },
    { id: "inSync", type: "http in", z, url: "/pass", method: "post", upload: false, wires: [["cal"]] },
    {
      id: "cal",
      type: "door-pass",
      z,
      name: "listing",
      account: "acct",
      calendarUrl: `${feedUrl}/listing.ics`,
      calendarEvery: 60,
      doors: [101],
      checkIn: "00:00",
      checkOut: "23:59",
      timeZone: "UTC",
      wires: [["route"]],
    },
    { id: "catch", type: "catch", z, name: "", scope: ["cal"], uncaught: false, wires: [["res"]] },
    {
      id: "route",
      type: "switch",
      z,
      property: "topic",
      propertyType: "msg",
      rules: [{ t: "eq", v: "door-pass/calendar", vt: "str" }, { t: "else" }],
      checkall: "false",
      outputs: 2,
      wires: [["collect"], ["res"]],
    },
    {
      id: "collect",
      type: "http request",
      z,
      method: "POST",
      ret: "txt",
      paytoqs: "ignore",
      url: `${feedUrl}/collect`,
      persist: false,
      senderr: false,
      headers: [],
      wires: [[]],
    },
    { id: "res", type: "http response", z, statusCode: "200", headers: {}, wires: [] },
  ];
}

describe("a booking calendar read by two instances on one Redis store: one pass per booking (per node and ref), whatever the number of instances or reads (docs/passes.md#from-a-booking-calendar)", function () {
  this.timeout(180_000);
  const BOOKINGS = 200;
  let redis: RedisServer;
  let sim: RunningSimulator;
  let feed: FeedAndCollector;
  let a: Runtime;
  let b: Runtime;

  before(async function () {
    needProgram(this, "redis-server");
    redis = await RedisServer.start();
    sim = await startSimulator({ rateLimit: false });
    feed = new FeedAndCollector();
    await feed.start();
    [a, b] = await Promise.all([Runtime.start("ca"), Runtime.start("cb")]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await feed?.stop();
    await sim?.close();
    await redis?.stop();
  });

  const calendar = (shift: number) =>
    ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN"]
      .concat(Array.from({ length: BOOKINGS }, (_, i) => booking(`bk-${i}`, 1 + (i % 30), 3 + (i % 30) + shift)))
      .concat(["END:VCALENDAR", ""])
      .join("\r\n");
  const livePasses = async () =>
    ((await a.post("/pass", { action: "list" })).passes as any[]).filter(
      (p) => p.state === "active" || p.state === "upcoming",
    );
  const perRef = (list: Record<string, any>[]) => {
    const m = new Map<string, number>();
    for (const x of list) m.set(x.ref, (m.get(x.ref) ?? 0) + 1);
    return m;
  };

  it("both instances' first reads held until both have asked: each booking has one live pass and one issued message in all; a booking moved while both read leaves no pass with its old window", async () => {
    feed.body = calendar(0);
    feed.holding = true;
    // Each instance reads the calendar 1 s after its deploy; both answers wait until both accounts are ready.
    await a.deploy(calendarFlow(sim.url, redis.url, feed.url));
    await b.deploy(calendarFlow(sim.url, redis.url, feed.url));
    await Promise.all([ready(a, "acct"), ready(b, "acct")]);
    await until("both instances' reads", () => feed.waiting === 2, 30_000);
    feed.release();
    // A sync joins the read in progress: its answer comes once that read is applied.
    const first = await Promise.all([a.post("/pass", { action: "sync" }), b.post("/pass", { action: "sync" })]);
    assert.ok(
      first.every((r) => r.action === "synced"),
      JSON.stringify(first),
    );
    await until("the issued messages collected", () => feed.collected.length >= BOOKINGS, 30_000);
    await new Promise((r) => setTimeout(r, 500)); // any second code would come now
    const issued = feed.collected.filter((m) => m.action === "issued");
    assert.equal(issued.length, BOOKINGS, "one issued message per booking across both instances");
    assert.ok([...perRef(issued).values()].every((n) => n === 1));
    const live = await livePasses();
    assert.equal(live.length, BOOKINGS, "one live pass per booking");
    assert.ok([...perRef(live).values()].every((n) => n === 1));

    // Every booking moved a day later; both instances read it at once.
    const before = new Map(live.map((p) => [p.ref as string, p.until as string]));
    feed.body = calendar(1);
    feed.holding = true;
    const syncs = Promise.all([a.post("/pass", { action: "sync" }), b.post("/pass", { action: "sync" })]);
    await until("both instances' reads", () => feed.waiting === 2, 30_000);
    feed.release();
    const moved = await syncs;
    assert.ok(
      moved.every((r) => r.action === "synced" && r.issued === 0),
      JSON.stringify(moved),
    );
    const after = await livePasses();
    assert.equal(after.length, BOOKINGS, "still one live pass per booking");
    for (const p of after)
      assert.equal(Date.parse(p.until) - Date.parse(before.get(p.ref)!), DAY, `${p.ref}: the new window only`);
    assert.equal(feed.collected.filter((m) => m.action === "issued").length, BOOKINGS, "no new code");
  });

  it("an older answer applied after a newer one undoes nothing: B's read, begun first and answered with the feed before a cancellation and a move, comes after A's: the cancelled booking gets no new code, the moved one keeps its new window", async () => {
    const cal = (...ev: string[]) =>
      ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", ...ev, "END:VCALENDAR", ""].join("\r\n");
    const old = cal(booking("keep", 1, 3), booking("cancel", 1, 3), booking("move", 1, 3));
    const changed = cal(booking("keep", 1, 3), booking("move", 1, 5));
    feed.body = old;
    await a.deploy(calendarFlow(sim.url, redis.url, feed.url));
    // B reads the same feed at its own path, so that its requests alone can be held.
    await b.deploy(calendarFlow(sim.url, redis.url, `${feed.url}/b`));
    await Promise.all([ready(a, "acct"), ready(b, "acct")]);
    assert.equal((await a.post("/pass", { action: "sync" })).action, "synced");
    const codesOf = (ref: string) => feed.collected.filter((m) => m.action === "issued" && m.ref === ref).length;
    await until("the three bookings' codes", () => ["keep", "cancel", "move"].every((r) => codesOf(r) === 1), 30_000);
    // B's own first read (its poller's, a second after its deploy) is over before the held one.
    assert.equal((await b.post("/pass", { action: "sync" })).action, "synced");
    // B asks first: its answer (the feed as it was) is held.
    feed.holdOnly = "/b/";
    feed.holding = true;
    const bSync = b.post("/pass", { action: "sync" });
    await until("B's read asked", () => feed.waiting === 1, 30_000);
    const heldB = feed.takeHeld();
    feed.holdOnly = null;
    // Then the booking is cancelled and another moved; A reads that and applies it.
    feed.body = changed;
    const aSync = await a.post("/pass", { action: "sync" });
    assert.equal(aSync.action, "synced", JSON.stringify(aSync));
    const live = async () =>
      ((await a.post("/pass", { action: "list" })).passes as any[]).filter(
        (p) => p.state === "active" || p.state === "upcoming",
      );
    const moved = (await live()).find((p) => p.ref === "move");
    // Now B's older answer comes, after A's was applied.
    for (const r of heldB) feed.answerWith(r, old);
    assert.equal((await bSync).action, "synced");
    await new Promise((r) => setTimeout(r, 1000)); // any read again comes now
    const after = await live();
    assert.deepEqual(after.map((p) => p.ref).sort(), ["keep", "move"], "the cancelled booking has no live pass");
    assert.equal(after.find((p) => p.ref === "move").until, moved.until, "the moved booking keeps its new window");
    assert.equal(codesOf("cancel"), 1, "no new code for the cancelled booking");
  });

  it("a sync whose read is overtaken by a later read that then fails still applies the feed: A's sync (the booking cancelled) is answered after B's read began and failed, and the cancelled booking has no live pass (docs/passes.md#from-a-booking-calendar)", async () => {
    const cal = (...ev: string[]) =>
      ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", ...ev, "END:VCALENDAR", ""].join("\r\n");
    feed.body = cal(booking("stay", 1, 3), booking("gone", 1, 3));
    await a.deploy(calendarFlow(sim.url, redis.url, feed.url));
    await b.deploy(calendarFlow(sim.url, redis.url, `${feed.url}/b`));
    await Promise.all([ready(a, "acct"), ready(b, "acct")]);
    assert.equal((await a.post("/pass", { action: "sync" })).action, "synced");
    assert.equal((await b.post("/pass", { action: "sync" })).action, "synced");
    const live = async () =>
      ((await a.post("/pass", { action: "list" })).passes as any[]).filter(
        (p) => p.state === "active" || p.state === "upcoming",
      );
    assert.deepEqual((await live()).map((p) => p.ref).sort(), ["gone", "stay"]);
    // The host cancels "gone" and syncs on A: A's read is asked (its answer held) ...
    feed.body = cal(booking("stay", 1, 3));
    feed.holdOnly = "/listing";
    feed.holding = true;
    const aSync = a.post("/pass", { action: "sync" });
    await until("A's read asked", () => feed.waiting === 1, 30_000);
    const heldA = feed.takeHeld();
    // ... then B's read begins (its stamp is later) and its feed fails.
    feed.holdOnly = "/b/";
    feed.holding = true;
    void b.post("/pass", { action: "sync" }).catch(() => null);
    await until("B's read asked", () => feed.waiting === 1, 30_000);
    const heldB = feed.takeHeld();
    feed.holdOnly = null;
    for (const r of heldA) feed.answerWith(r, feed.body);
    for (const r of heldB) r.writeHead(503).end("down");
    // B's failed sync goes to its Catch node, whose answer this flow does not send: its log says it.
    await until("B's read failed", () => b.log.includes("sync: the calendar answered 503"), 30_000);
    const answerA = await aSync;
    assert.equal(answerA.action, "synced", JSON.stringify(answerA));
    assert.equal(answerA.revoked, 1, `A's sync applied the cancellation: ${JSON.stringify(answerA)}`);
    assert.deepEqual(
      (await live()).map((p) => p.ref),
      ["stay"],
      "the cancelled booking has no live pass once the sync is answered",
    );
  });

  it("a read whose number cannot be taken (the store refused the counter) is not applied: its older answer, coming after another instance applied a cancellation, gives the cancelled booking no new code (docs/passes.md#from-a-booking-calendar)", async () => {
    const cal = (...ev: string[]) =>
      ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", ...ev, "END:VCALENDAR", ""].join("\r\n");
    const old = cal(booking("held", 1, 3), booking("dropped", 1, 3));
    feed.body = old;
    await a.deploy(calendarFlow(sim.url, redis.url, feed.url));
    await b.deploy(calendarFlow(sim.url, redis.url, `${feed.url}/b`));
    await Promise.all([ready(a, "acct"), ready(b, "acct")]);
    assert.equal((await a.post("/pass", { action: "sync" })).action, "synced");
    assert.equal((await b.post("/pass", { action: "sync" })).action, "synced");
    const codesOf = (ref: string) => feed.collected.filter((m) => m.action === "issued" && m.ref === ref).length;
    await until("the two bookings' codes", () => codesOf("held") === 1 && codesOf("dropped") === 1, 30_000);
    const store = new RedisTokenStore({ url: redis.url, accountKey: "acl" });
    try {
      // The counter cannot be taken as A's read begins (as when Redis is away just then) ...
      await store.command(["ACL", "SETUSER", "default", "-incr"]);
      feed.holdOnly = "/listing";
      feed.holding = true;
      let answered: Record<string, unknown> | null = null;
      void a
        .post("/pass", { action: "sync" })
        .then((r) => (answered = r))
        .catch(() => null);
      const refused = () => a.log.includes("sync: the order of the calendar's reads");
      await until("A's read asked or refused", () => feed.waiting === 1 || refused(), 30_000);
      const heldA = feed.takeHeld();
      feed.holdOnly = null;
      await store.command(["ACL", "SETUSER", "default", "+incr"]);
      // ... then "dropped" is cancelled and B reads and applies that; A's older answer comes after.
      feed.body = cal(booking("held", 1, 3));
      const bSync = await b.post("/pass", { action: "sync" });
      assert.equal(bSync.revoked, 1, JSON.stringify(bSync));
      for (const r of heldA) feed.answerWith(r, old);
      await until("A's read over", () => answered !== null || refused(), 30_000);
      await new Promise((r) => setTimeout(r, 500)); // any code would be collected now
      const live = ((await a.post("/pass", { action: "list" })).passes as any[]).filter(
        (p) => p.state === "active" || p.state === "upcoming",
      );
      assert.deepEqual(
        live.map((p) => p.ref),
        ["held"],
        `the cancelled booking has no live pass (A's sync: ${JSON.stringify(answered)})`,
      );
      assert.equal(codesOf("dropped"), 1, "no new code for the cancelled booking");
    } finally {
      await store.command(["ACL", "SETUSER", "default", "+incr"]).catch(() => undefined);
      await store.close();
    }
  });
});
