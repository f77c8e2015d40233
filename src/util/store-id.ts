/**
 * The name of an account's stored things (its token file, its records and pass files, its Redis
 * keys): scrypt of the account key, so neither a file name nor a Redis key gives away the phone
 * number or email by a dictionary of hashes. Used by the session's stores and the pass books.
 */
import { scryptSync } from "node:crypto";

const storeIds = new Map<string, string>();

/**
 * The name of an account's stored things: scrypt of the account key (a hash of the base URL and the
 * login identity). Computed once per account per process.
 */
export function accountStoreId(accountKey: string): string {
  let id = storeIds.get(accountKey);
  if (id === undefined) {
    id = scryptSync(accountKey, "door-access redis key v1", 16, { N: 1 << 14, r: 8, p: 1 }).toString("hex");
    storeIds.set(accountKey, id);
  }
  return id;
}
