/**
 * Scale, pure CPU with no runtime: validating and indexing a list of 10,000 doors, and one
 * "Location / Name" lookup in it. Parsing the HTTP body is not counted; the first round warms up.
 */
import { DeviceList } from "../src/spec/schemas.js";
import { DeviceDirectory } from "../src/doors/directory.js";
import { type Figures, log } from "./args.js";
import { median, msSince, now, round } from "./stats.js";

export async function measureScale(reps: number, lookups: number): Promise<Figures> {
  const devices = Array.from({ length: 10_000 }, (_, i) => ({
    id: 100_000 + i,
    name: `Door ${i % 5000}`, // every name twice, in two locations: "Location / Name" stays unique
    locationId: i < 5000 ? 1 : 2,
    locationName: i < 5000 ? "North Campus" : "South Campus",
    companyName: "Bench Properties",
    doorType: "door",
    online: true,
    locks: [{ id: 1, name: "Main lock" }],
  }));
  const text = JSON.stringify(devices);
  const names = Array.from(
    { length: lookups },
    (_, i) => `${i % 2 === 0 ? "North Campus" : "South Campus"} / Door ${(i * 7919) % 5000}`,
  );
  const validate: number[] = [];
  const index: number[] = [];
  const lookup: number[] = [];
  for (let r = 0; r < reps + 1; r++) {
    const body = JSON.parse(text) as unknown; // parsing the HTTP body is not counted
    const t0 = now();
    const list = DeviceList.parse(body);
    const tv = msSince(t0);
    const dir = new DeviceDirectory(() => Promise.resolve(list));
    const t1 = now();
    await dir.devices(true);
    const ti = msSince(t1);
    let found = 0;
    const t2 = now();
    for (const n of names) if ((await dir.resolveName(n)).ok) found++;
    const tl = (msSince(t2) * 1000) / lookups;
    if (found !== lookups) throw new Error(`scale: ${lookups - found} lookups failed`);
    if (r === 0) continue; // warm-up
    validate.push(tv);
    index.push(ti);
    lookup.push(tl);
  }
  const v = median(validate);
  const i = median(index);
  const f = {
    deviceValidate10kMs: round(v),
    deviceIndexOnly10kMs: round(i),
    deviceIndex10kMs: round(v + i),
    nameLookupUs: round(median(lookup)),
  };
  log(`scale: ${JSON.stringify(f)}`);
  return f;
}
