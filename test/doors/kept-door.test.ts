/**
 * The directory keeps the door it resolved for a door identity, and its label, from one list to
 * the next (docs/doors.md#resolution-rules): over 3,000 rounds of new lists (renames, renumberings,
 * removals, the same name at other locations), an identity object changed in place, and a list
 * arriving while a message resolves, what it keeps is always what the rules give for the list
 * now, as a fresh directory finds it.
 */
import { strict as assert } from "node:assert";
import { DeviceDirectory } from "../../src/doors/directory.js";
import { type Device } from "../../src/spec/schemas.js";

describe("The kept door and label are what the resolution rules give for the current list (docs/doors.md#resolution-rules)", function () {
  this.timeout(60000);
  it("the directory's kept door and label against a fresh answer: 3,000 rounds of new lists (renames, renumbers, removals, the same name at other locations), the identity object changed in place, a list arriving while a message resolves: always the door the rules give for that list", async () => {
    let seed = 24;
    const rnd = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const names = ["Back Door", "back  door", "Front Door", "Gate", "Gate / East"];
    const locs = ["Main Street 1", "Harbour Warehouse", null];
    const makeList = (): Device[] => {
      const n = 2 + rnd(5);
      const ids = new Set<number>();
      const list: Device[] = [];
      for (let i = 0; i < n; i++) {
        let id = 1 + rnd(8);
        while (ids.has(id)) id = 1 + rnd(8);
        ids.add(id);
        list.push({ id, name: names[rnd(names.length)], locationName: locs[rnd(locs.length)] });
      }
      return list;
    };
    let source = makeList();
    let gate: Promise<void> | null = null;
    const dir = new DeviceDirectory(async () => {
      if (gate) await gate;
      return source.map((d) => ({ ...d }));
    });
    await dir.devices(true);
    const identity = {
      id: 1 as number | null,
      name: "Back Door" as string | null,
      location: "Main Street 1" as string | null,
    };
    for (let round = 0; round < 3000; round++) {
      const what = rnd(6);
      if (what === 0) {
        source = makeList();
        await dir.devices(true);
      } else if (what === 1) {
        identity.id = rnd(3) === 0 ? null : 1 + rnd(8);
        identity.name = rnd(4) === 0 ? null : names[rnd(names.length)];
        identity.location = locs[rnd(locs.length)] ?? null;
        if (identity.id === null && identity.name === null) identity.id = 1;
      } else if (what === 2) {
        // A new list lands while a message resolves (the fetch answers between the two calls).
        let release!: () => void;
        gate = new Promise<void>((r) => (release = r));
        source = makeList();
        const fetching = dir.devices(true);
        const during = dir.resolveIdentity(identity);
        release();
        gate = null;
        await fetching;
        await during;
      }
      const kept = await dir.resolveIdentity(identity);
      const fresh = new DeviceDirectory(() => Promise.resolve(dir.cached()!.devices.map((d) => ({ ...d }))));
      await fresh.devices(true);
      const want = await fresh.resolveIdentity({ ...identity });
      assert.equal(
        kept.ok,
        want.ok,
        `round ${round}: ${JSON.stringify({ identity, list: dir.cached()!.devices, kept, want })}`,
      );
      if (kept.ok && want.ok) {
        assert.equal(kept.device.id, want.device.id, `round ${round}`);
        assert.equal(dir.label(kept.device), fresh.label(want.device), `round ${round}: label`);
        assert.ok(
          dir.cached()!.devices.includes(kept.device),
          `round ${round}: the kept device is from the current list`,
        );
      }
    }
  });
});
