/**
 * The records an account keeps beside its token pair (src/session/account-records.ts): written
 * whole and atomically, 0600, every change kept when many come at once, each record gone after its
 * end, a file that cannot be read taken as empty and said (docs/access-rules.md#what-ends-a-lockout
 * is what they hold today).
 */
import { strict as assert } from "node:assert";
import { readFileSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import * as path from "node:path";
import { fileRecords, memoryRecords } from "../../src/session/account-records.js";
import { tempDir } from "../helpers/session.js";

describe("account records beside the session: one file per account, every change kept (docs/access-rules.md#what-ends-a-lockout)", () => {
  it("fifty records put at once are all in the file, which is 0600 and read back by a new process's first read", async () => {
    const file = path.join(tempDir("records-"), "door-access", "records-a.json");
    const now = 1_000_000;
    const rec = fileRecords(file, { now: () => now });
    await Promise.all(Array.from({ length: 50 }, (_, i) => rec.put(`n${i}`, { i }, now + 60_000)));
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const onDisk = JSON.parse(readFileSync(file, "utf8")) as {
      v: number;
      records: Record<string, { value: { i: number } }>;
    };
    assert.equal(onDisk.v, 1);
    assert.equal(Object.keys(onDisk.records).length, 50);
    for (let i = 0; i < 50; i++) assert.deepEqual(onDisk.records[`n${i}`].value, { i });
    // Another path is another account; the same path in this process shares one copy in memory.
    assert.equal(fileRecords(file), rec);
    assert.deepEqual(await rec.get("n7"), { i: 7 });
  });

  it("a record is gone once its end has passed, and is dropped from the file at the next write; null deletes", async () => {
    const file = path.join(tempDir("records-"), "records-b.json");
    let now = 5_000;
    const rec = fileRecords(file, { now: () => now });
    await rec.put("short", { a: 1 }, now + 10);
    await rec.put("long", { b: 2 }, now + 10_000);
    await rec.put("gone", { c: 3 }, now + 10_000);
    await rec.put("gone", null, 0);
    now += 11;
    assert.equal(await rec.get("short"), null);
    assert.equal(await rec.get("gone"), null);
    await rec.put("other", { d: 4 }, now + 10_000);
    const onDisk = JSON.parse(readFileSync(file, "utf8")) as { records: Record<string, unknown> };
    assert.deepEqual(Object.keys(onDisk.records).sort(), ["long", "other"]);
  });

  it("a torn or foreign file is said once and taken as empty; the next write replaces it", async () => {
    const dir = tempDir("records-");
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, "records-c.json");
    writeFileSync(file, '{"v":1,"records":{"x"');
    const problems: string[] = [];
    const rec = fileRecords(file, { onProblem: (m) => problems.push(m) });
    assert.equal(await rec.get("x"), null);
    assert.equal(problems.length, 1);
    assert.match(problems[0], /unreadable/);
    await rec.put("y", { ok: true }, Date.now() + 60_000);
    assert.deepEqual(JSON.parse(readFileSync(file, "utf8")).records.y.value, { ok: true });
  });

  it("a value read is a copy: changing it changes nothing kept", async () => {
    const rec = memoryRecords(() => 0);
    await rec.put("k", { list: [1] }, 10);
    const v = (await rec.get("k")) as { list: number[] };
    v.list.push(2);
    assert.deepEqual(await rec.get("k"), { list: [1] });
  });
});
