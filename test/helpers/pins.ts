/**
 * The PINs the tests give door-unlock nodes and send as msg.pin. They are secrets by the rule of
 * docs/access-rules.md#pin-and-lockout (a PIN never reaches a log line, a message on an output,
 * the audit log, an error text or the status), so the suite's leak scan (test/hooks/leak-scan.ts)
 * searches every output, log and file for each of them. Long and unlike any id, port or time the
 * suite prints, so that a hit means a leak.
 */

/** The node's PIN in the tests. */
export const TEST_PIN = "5291736048";
/** The PIN a node is given anew (a changed PIN). */
export const OTHER_PIN = "8164205937";
/** A PIN that starts with 0: as a number (427183956) it never matches. */
export const ZERO_PIN = "0427183956";
/** Wrong guesses (a guess may be a mistyped PIN: it is kept as secret as the PIN). */
export const WRONG_PINS = ["5291736047", "8301957264", "6642019385", "7719304652", "9051836274", "3318562907"] as const;

/** Every PIN value above, and the digits of ZERO_PIN as a number, for the leak scan. */
export const ALL_TEST_PINS: readonly string[] = [
  TEST_PIN,
  OTHER_PIN,
  ZERO_PIN,
  ZERO_PIN.replace(/^0+/, ""),
  ...WRONG_PINS,
];
