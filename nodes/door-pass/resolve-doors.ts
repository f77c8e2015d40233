/**
 * The doors a door-pass request names (device ids or door names), resolved against the account's
 * device list (docs/passes.md#issue) and kept as ids.
 */
import type { Account } from "../../src/account/account.js";
import { selectDoor } from "../../src/doors/select.js";
import type { PassDoor } from "../../src/passes/pass.js";
import { classifyFailure } from "../../src/unlock/outcome.js";

/** Bad input: the message's error names the field; nothing is stored. */
export class PassInputError extends Error {}

/** Each door resolved to its id and name, or why one cannot be. */
export async function resolveDoors(account: Account, doors: (number | string)[]): Promise<PassDoor[]> {
  const out: PassDoor[] = [];
  for (const d of doors) {
    let got;
    try {
      got = await selectDoor(account.directory, {
        msgDeviceId: typeof d === "number" ? d : undefined,
        msgDoor: typeof d === "string" ? d : undefined,
        configured: null,
      });
    } catch (e) {
      throw new Error(`the doors could not be looked up: ${classifyFailure(e, false).message}`, { cause: e });
    }
    if (!got.ok) throw new PassInputError(`doors: ${got.message}`);
    if (!out.some((x) => x.deviceId === got.deviceId)) out.push({ deviceId: got.deviceId, door: got.label });
  }
  return out;
}
