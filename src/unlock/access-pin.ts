/**
 * The PIN of a rule set, kept out of sight (docs/access-rules.md#pin-and-lockout): only masked,
 * with a random key made for the rule set (a one-time pad over a fixed 16-byte encoding), both in
 * a module-private WeakMap keyed by the rule set. No property, `toJSON`, `toString` or
 * `util.inspect` of a rule set shows the PIN or its masked form, and no text made here contains a
 * PIN. A message's PIN is masked the same way and compared with timingSafeEqual. The lockout that
 * wrong PINs lead to is the node's state: src/unlock/access-state.ts.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { PIN_MAX_DIGITS } from "./access-config.js";

interface Secret {
  /** Random, made for the rule set. */
  key: Buffer;
  /** The PIN's encoding masked with the key. */
  masked: Buffer;
  /** Where a message's PIN is encoded and masked (check() is synchronous: one at a time). */
  scratch: Buffer;
}

/** The PIN, masked, and its key, out of reach of any property, JSON or inspection of a rule set. */
const secrets = new WeakMap<object, Secret>();

/** A PIN's encoding: its length, then its digits, zeros after them. */
const PIN_BYTES = 16;
const DIGITS = /^[0-9]+$/;

/** What a PIN given in a message was, when it was not the right one. */
type PinKind = "missing" | "candidate" | "unusable";

/**
 * Encodes `text` into `out` and masks it with `key`. Text that is no PIN (not digits, too long,
 * none) becomes an encoding no PIN has (length 0xff). The same steps for every text, whatever
 * the stored PIN; what differs depends only on the text given.
 */
function maskPin(text: string | null, key: Buffer, out: Buffer): void {
  out.fill(0);
  if (text !== null && text.length <= PIN_MAX_DIGITS && DIGITS.test(text)) {
    out[0] = text.length;
    out.write(text, 1, "latin1");
  } else {
    out[0] = 0xff;
  }
  for (let i = 0; i < PIN_BYTES; i++) out[i] ^= key[i];
}

/** Keeps the PIN of `rules` (a rule set read by parseAccessRules), masked with a key made for it. */
export function keepPin(rules: object, pin: string): void {
  const key = randomBytes(PIN_BYTES);
  const masked = Buffer.alloc(PIN_BYTES);
  maskPin(pin, key, masked);
  secrets.set(rules, { key, masked, scratch: Buffer.alloc(PIN_BYTES) });
}

/**
 * true when `pin` (msg.pin as it came) is the PIN kept for `rules`; else why not. Constant time
 * over the stored PIN. Only for a rule set that has a PIN.
 */
export function comparePin(rules: object, pin: unknown): true | PinKind {
  let text: string | null;
  let kind: PinKind = "candidate";
  if (pin === undefined || pin === null || pin === "") {
    text = null;
    kind = "missing";
  } else if (typeof pin === "string") {
    text = pin.length <= PIN_MAX_DIGITS ? pin : null; // a longer text can never be the PIN
  } else if (typeof pin === "number" && Number.isSafeInteger(pin) && pin >= 0) {
    text = String(pin); // a number has no leading zeros: it never matches a PIN that starts with 0
  } else {
    text = null;
    kind = "unusable";
  }
  const secret = secrets.get(rules)!;
  // Masked and compared for every message that reaches the PIN, in the same 16 bytes, so the
  // time taken does not depend on the stored PIN nor on how many digits were right.
  maskPin(text, secret.key, secret.scratch);
  const same = timingSafeEqual(secret.scratch, secret.masked);
  return same && text !== null ? true : kind;
}
