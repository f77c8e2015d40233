/**
 * The simulator's built-in demo seed and the validation of seed files.
 *
 * Demo seed at a glance (ids that other tests rely on):
 *
 * | door id | name          | location (id)            | company               | locks                      | demo account's key       |
 * |---------|---------------|--------------------------|-----------------------|----------------------------|--------------------------|
 * | 101     | Front Door    | Main Street 1 (10)       | Demo Properties       | 1 "Main lock"              | yes                      |
 * | 102     | Back Door     | Main Street 1 (10)       | Demo Properties       | 1 "Main lock"              | yes                      |
 * | 103     | Back Door     | Harbour Warehouse (11)   | Demo Properties       | 1 "Main lock"              | yes                      |
 * | 104     | Loading Bay   | Harbour Warehouse (11)   | Demo Properties       | 1 "Upper lock", 2 "Lower lock" | yes (all locks)      |
 * | 105     | Server Room   | Main Street 1 (10)       | Demo Properties       | 1 "Main lock", OFFLINE     | yes                      |
 * | 106     | Boiler Room   | Harbour Warehouse (11)   | Demo Properties       | 1 "Main lock"              | NO key (visible, 403)    |
 * | 107     | Garage        | Harbour Warehouse (11)   | Demo Properties       | 1 "Gate", 2 "Side door"    | only lock 2 (7 → 403)    |
 * | 201     | Shared Lobby  | Neighbour HQ (20)        | Neighbour Offices Ltd | 1 "Main lock"              | yes (shared by "other")  |
 * | 202     | Neighbour Office | Neighbour HQ (20)     | Neighbour Offices Ltd | 1 "Main lock"              | no, not visible (404)    |
 *
 * Accounts: "demo" (+15550000001, demo@example.com, demo-password, company 1) and
 * "other" (+15550000002, other@example.com, other-password, company 2).
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { PHONE_PATTERN, PositiveInt32 } from "../spec/schemas.js";
import { textOf } from "../util/text.js";
import type { Seed } from "./types.js";

export const DEMO_ACCOUNT = {
  id: "demo",
  phoneNumber: "+15550000001",
  email: "demo@example.com",
  password: "demo-password",
} as const;

export const OTHER_ACCOUNT = {
  id: "other",
  phoneNumber: "+15550000002",
  email: "other@example.com",
  password: "other-password",
} as const;

/** Door ids of the demo seed, named after what they are for. */
export const DEMO_DOORS = {
  frontDoor: 101,
  backDoorMainStreet: 102,
  backDoorHarbour: 103,
  twoLocks: 104,
  offline: 105,
  noKey: 106,
  partialKey: 107,
  shared: 201,
  notVisible: 202,
} as const;

export function demoSeed(): Seed {
  return {
    companies: [
      { id: 1, name: "Demo Properties" },
      { id: 2, name: "Neighbour Offices Ltd" },
    ],
    locations: [
      { id: 10, companyId: 1, name: "Main Street 1" },
      { id: 11, companyId: 1, name: "Harbour Warehouse" },
      { id: 20, companyId: 2, name: "Neighbour HQ" },
    ],
    doors: [
      {
        id: 101,
        locationId: 10,
        name: "Front Door",
        doorType: "entrance",
        online: true,
        locks: [{ id: 1, name: "Main lock" }],
      },
      { id: 102, locationId: 10, name: "Back Door", doorType: "service", online: true },
      { id: 103, locationId: 11, name: "Back Door", doorType: "service", online: true },
      {
        id: 104,
        locationId: 11,
        name: "Loading Bay",
        doorType: "gate",
        online: true,
        locks: [
          { id: 1, name: "Upper lock" },
          { id: 2, name: "Lower lock" },
        ],
      },
      { id: 105, locationId: 10, name: "Server Room", doorType: "interior", online: false },
      { id: 106, locationId: 11, name: "Boiler Room", doorType: "interior", online: true },
      {
        id: 107,
        locationId: 11,
        name: "Garage",
        doorType: "garage",
        online: true,
        locks: [
          { id: 1, name: "Gate" },
          { id: 2, name: "Side door" },
        ],
      },
      { id: 201, locationId: 20, name: "Shared Lobby", doorType: "entrance", online: true },
      { id: 202, locationId: 20, name: "Neighbour Office", doorType: "interior", online: true },
    ],
    accounts: [
      { ...DEMO_ACCOUNT, companyId: 1 },
      { ...OTHER_ACCOUNT, companyId: 2 },
    ],
    keys: [
      { accountId: "demo", deviceId: 101 },
      { accountId: "demo", deviceId: 102 },
      { accountId: "demo", deviceId: 103 },
      { accountId: "demo", deviceId: 104 },
      { accountId: "demo", deviceId: 105 },
      { accountId: "demo", deviceId: 107, lockIds: [2] },
      { accountId: "demo", deviceId: 201 },
      { accountId: "other", deviceId: 201 },
      { accountId: "other", deviceId: 202 },
    ],
  };
}

const SeedSchema = z
  .strictObject({
    companies: z.array(z.strictObject({ id: PositiveInt32, name: z.string().min(1) })).min(1),
    locations: z.array(z.strictObject({ id: PositiveInt32, companyId: PositiveInt32, name: z.string().min(1) })),
    doors: z.array(
      z.strictObject({
        id: PositiveInt32,
        locationId: PositiveInt32,
        name: z.string().min(1),
        doorType: z.string().optional(),
        online: z.boolean().optional(),
        locks: z
          .array(z.strictObject({ id: PositiveInt32, name: z.string().optional() }))
          .min(1)
          .optional(),
      }),
    ),
    accounts: z
      .array(
        z.strictObject({
          id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "account id: 1-64 characters of A-Z a-z 0-9 _ . -"),
          companyId: PositiveInt32,
          phoneNumber: z.string().regex(PHONE_PATTERN, "phoneNumber must match ^[+][0-9]{9,13}$").optional(),
          email: z.email().optional(),
          password: z.string().min(1),
        }),
      )
      .min(1),
    keys: z.array(
      z.strictObject({
        accountId: z.string().min(1),
        deviceId: PositiveInt32,
        lockIds: z.array(PositiveInt32).min(1).optional(),
      }),
    ),
  })
  .superRefine((seed, ctx) => {
    const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: "custom", path, message });
    const dupes = <T>(items: T[], key: (t: T) => unknown, name: string, field: string) => {
      const seen = new Set<unknown>();
      items.forEach((item, i) => {
        const k = key(item);
        if (k === undefined) return;
        if (seen.has(k)) issue([name, i, field], `duplicate ${field} ${textOf(k)}`);
        seen.add(k);
      });
    };
    dupes(seed.companies, (c) => c.id, "companies", "id");
    dupes(seed.locations, (l) => l.id, "locations", "id");
    dupes(seed.doors, (d) => d.id, "doors", "id");
    dupes(seed.accounts, (a) => a.id, "accounts", "id");
    dupes(seed.accounts, (a) => a.phoneNumber, "accounts", "phoneNumber");
    dupes(seed.accounts, (a) => a.email?.toLowerCase(), "accounts", "email");
    dupes(seed.keys, (k) => `${k.accountId}/${k.deviceId}`, "keys", "deviceId");
    const companies = new Set(seed.companies.map((c) => c.id));
    const locations = new Set(seed.locations.map((l) => l.id));
    const accounts = new Set(seed.accounts.map((a) => a.id));
    const doors = new Map(seed.doors.map((d) => [d.id, d]));
    seed.locations.forEach((l, i) => {
      if (!companies.has(l.companyId)) issue(["locations", i, "companyId"], `unknown company ${l.companyId}`);
    });
    seed.doors.forEach((d, i) => {
      if (!locations.has(d.locationId)) issue(["doors", i, "locationId"], `unknown location ${d.locationId}`);
      if (d.locks) dupes(d.locks, (l) => l.id, `doors[${i}].locks`, "id");
    });
    seed.accounts.forEach((a, i) => {
      if (!companies.has(a.companyId)) issue(["accounts", i, "companyId"], `unknown company ${a.companyId}`);
      if (a.phoneNumber === undefined && a.email === undefined) {
        issue(["accounts", i], "an account needs a phoneNumber or an email to log in with");
      }
    });
    seed.keys.forEach((k, i) => {
      if (!accounts.has(k.accountId)) issue(["keys", i, "accountId"], `unknown account ${k.accountId}`);
      const door = doors.get(k.deviceId);
      if (!door) {
        issue(["keys", i, "deviceId"], `unknown door ${k.deviceId}`);
        return;
      }
      const lockIds = new Set((door.locks ?? [{ id: 1 }]).map((l) => l.id));
      k.lockIds?.forEach((id, j) => {
        if (!lockIds.has(id)) issue(["keys", i, "lockIds", j], `door ${k.deviceId} has no lock ${id}`);
      });
    });
  });

/** Validates a parsed seed; throws an Error whose message lists every problem. */
export function validateSeed(raw: unknown, source = "seed"): Seed {
  const parsed = SeedSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`invalid ${source}:\n${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/** Reads and validates a seed JSON file. */
export function loadSeedFile(file: string): Seed {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`cannot read seed file ${file}: ${(err as Error).message}`, { cause: err });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`seed file ${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  return validateSeed(raw, `seed file ${file}`);
}
