/**
 * A door-pass node's booking calendar (docs/passes.md#from-a-booking-calendar): each read applied
 * to the account's passes, its changes sent (the issued code once) and told as `pass/...` events,
 * and a read that cannot be applied told once, as a warning, a `pass/calendar-failed` event with
 * its `reason` and the node status (docs/events.md#pass).
 *
 * The messages of a read go out in slices with a turn of the event loop between them, in order:
 * with a flow after the node, 10,000 new passes never hold Node-RED for long
 * (docs/passes.md#what-passes-cost).
 *
 * A node whose output reaches no node issues no calendar pass (docs/passes.md#no-code-goes-nowhere):
 * it still updates and revokes, says why in its status, and reads the feed in full again next
 * time, so the passes are issued once it is wired.
 */
import type { Node } from "node-red";
import type { Account } from "../../src/account/account.js";
import { type PassDoor, windowText } from "../../src/passes/pass.js";
import type { CalendarSettings } from "../../src/passes/calendar.js";
import { CalendarPoller } from "../../src/passes/calendar-poller.js";
import {
  ApplyIncomplete,
  CalendarRefused,
  ReadSuperseded,
  type SyncChanges,
  applyBookings,
} from "../../src/passes/calendar-sync.js";
import { type FlowNodeBinding, clockTime } from "../common/node-runtime.js";
import { answerOf } from "./pass-node-parts.js";
import { resolveDoors } from "./resolve-doors.js";

/** Messages and events sent in one turn of the event loop at most, and the time one slice may take. */
export const SEND_SLICE = 50;
const SEND_SLICE_MS = 10;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export type Counts = { issued: number; updated: number; revoked: number };

export const NOT_WIRED = "output not wired: no calendar pass is issued (a code would go nowhere); wire it and deploy";

/** What the node status says of a read that was not applied, by its reason. */
const STATUS: Record<string, string> = {
  doors: "doors not found, only cancellations applied",
  capacity: "too many passes, not applied",
  store: "passes not all stored, retried",
};

/** Sends a read's changes and their events, in order, in slices that give the event loop back. */
async function announce(node: Node, account: Account, changes: SyncChanges, zone: string): Promise<void> {
  const events = account.core.events;
  const now = Date.now();
  const steps: (() => void)[] = [];
  for (const { pass, code } of changes.issued)
    steps.push(() => {
      node.send({ topic: "door-pass/calendar", payload: answerOf("issued", pass, code) });
      events.emit(
        "pass",
        "issued",
        `a pass for ${pass.guest} was issued from the calendar: ${windowText(pass, now, zone)}`,
        {
          id: pass.id,
          guest: pass.guest,
          ref: pass.ref,
          from: pass.from,
          until: pass.until,
        },
      );
    });
  for (const pass of changes.updated)
    steps.push(() => {
      node.send({ topic: "door-pass/calendar", payload: answerOf("updated", pass) });
      events.emit("pass", "updated", `the pass of ${pass.guest} now runs ${windowText(pass, now, zone)}`, {
        id: pass.id,
        guest: pass.guest,
        ref: pass.ref,
        from: pass.from,
        until: pass.until,
      });
    });
  for (const pass of changes.revoked)
    steps.push(() => {
      node.send({ topic: "door-pass/calendar", payload: { action: "revoked", id: pass.id } });
      events.emit("pass", "revoked", `the pass of ${pass.guest} was revoked: its booking is gone`, {
        id: pass.id,
        guest: pass.guest,
        ref: pass.ref,
      });
    });
  let start = performance.now();
  let n = 0;
  for (const step of steps) {
    step();
    if (++n >= SEND_SLICE || performance.now() - start > SEND_SLICE_MS) {
      await nextTurn();
      n = 0;
      start = performance.now();
    }
  }
}

/**
 * The calendar's poller of a door-pass node; `onCounts` gets each applied read's counts (for
 * `sync`); `wired` tells whether the node's output reaches a running node at the time of a read.
 */
export function calendarPoller(
  node: Node,
  binding: FlowNodeBinding,
  settings: CalendarSettings,
  wanted: (number | string)[],
  digits: number,
  onCounts: (c: Counts) => void,
  wired: () => boolean,
): CalendarPoller {
  let toldUnwired = false;
  let toldSkipped = 0;
  // The counts of a read overtaken by a later one, added to the next read's (its read again: a sync's answer).
  let carried: Counts = { issued: 0, updated: 0, revoked: 0 };
  const report = (c: Counts, superseded: boolean) => {
    const sum = {
      issued: carried.issued + c.issued,
      updated: carried.updated + c.updated,
      revoked: carried.revoked + c.revoked,
    };
    carried = superseded ? sum : { issued: 0, updated: 0, revoked: 0 };
    onCounts(sum);
  };
  const apply = async (
    bookings: Parameters<typeof applyBookings>[2],
    skipped: number,
    stamp: number | null,
    blocked: number,
  ): Promise<boolean | "superseded"> => {
    const got = binding.account();
    if ("problem" in got) throw new Error(got.problem);
    const account = got.account;
    let doors: PassDoor[] | null = null;
    let doorProblem: string | null = null;
    try {
      doors = await resolveDoors(account, wanted);
    } catch (e) {
      // Still applied: cancellations and shorter stays need no door; nothing new, nothing longer.
      doorProblem = (e as Error).message;
    }
    const issue = wired();
    const book = account.core.passes;
    let changes: SyncChanges;
    let failure: ApplyIncomplete | null = null;
    let superseded = false;
    try {
      // One read of this node at a time in this runtime (a redeploy's new node beside the old one's read).
      const applied = await book.serially(node.id, async () =>
        // An answer older than a read begun since (another instance's) would undo it: not applied;
        // that later read applies the feed. Each write of the read is refused, too, once a later
        // read has begun (the book checks the stamp with the write: docs/passes.md#from-a-booking-calendar).
        stamp !== null && !(await book.latestRead(node.id, stamp))
          ? null
          : applyBookings(book, node.id, bookings, doors, digits, Date.now(), {
              issue,
              blocked,
              ...(stamp !== null ? { stamp } : {}),
            }),
      );
      if (applied === null) {
        report({ issued: 0, updated: 0, revoked: 0 }, true);
        return "superseded";
      }
      changes = applied;
    } catch (e) {
      if (e instanceof ReadSuperseded) {
        changes = e.changes; // what it wrote before the later read began goes out (its codes once)
        superseded = true;
      } else {
        if (!(e instanceof ApplyIncomplete)) throw e;
        changes = e.changes; // what was stored goes out (its codes once); the rest is retried
        failure = e;
      }
    }
    report(
      { issued: changes.issued.length, updated: changes.updated.length, revoked: changes.revoked.length },
      superseded,
    );
    // Events that get no pass without anyone choosing it (no UID, a date that does not exist): the
    // host hears it once, and again when their number changes (docs/passes.md#from-a-booking-calendar).
    if (skipped !== toldSkipped && skipped > 0)
      node.warn(
        `door-pass: calendar: ${skipped === 1 ? "1 event of the feed cannot be a booking" : `${skipped} events of the feed cannot be bookings`} (no UID, or a date that does not exist): no pass for ${skipped === 1 ? "it" : "them"}`,
      );
    toldSkipped = skipped;
    await announce(node, account, changes, settings.timeZone);
    if (superseded) return "superseded";
    if (failure !== null) throw failure;
    if (doorProblem !== null)
      throw new CalendarRefused(
        `the doors could not be resolved (${doorProblem}): cancelled and shortened bookings were applied, no pass was issued or lengthened`,
        "doors",
      );
    if (!issue) {
      if (!toldUnwired) node.warn(`door-pass: calendar: ${NOT_WIRED}`);
      toldUnwired = true;
      binding.setResult({ fill: "yellow", shape: "ring", text: "not wired: no calendar pass issued" });
      return false; // read in full next time: the bookings it did not issue are issued once it is wired
    }
    toldUnwired = false;
    // Its own passes, not the account's (docs/passes.md#deleting-a-calendar-node), counted in the book's index.
    const live = await book.liveOf(node.id);
    binding.setResult({
      fill: "green",
      shape: "dot",
      text: `calendar read ${clockTime(Date.now(), settings.timeZone)}: ${live} live`,
    });
    return true;
  };
  const onProblem = calendarTeller(node, binding, settings, wired);
  return new CalendarPoller(settings, apply, onProblem, Date.now, undefined, () => readStampOf(binding, node.id));
}

/**
 * How a door-pass node tells its calendar's reads (the poller's `onProblem`): a problem once per
 * reason (a warning, `pass/calendar-failed`, a yellow status), the read that works again once
 * (`pass/calendar-ok`), and the status of a read that leaves the passes as they are.
 */
function calendarTeller(
  node: Node,
  binding: FlowNodeBinding,
  settings: CalendarSettings,
  wired: () => boolean,
): (problem: string | null, reason?: string) => void {
  let told: string | null = null;
  /** The status of a read that leaves the passes as they are: "calendar read <time>: N live" (not while unwired). */
  const readStatus = () => {
    const got = binding.account();
    if (!("account" in got) || !wired()) return;
    void got.account.core.passes
      .liveOf(node.id)
      .then((live) =>
        binding.setResult({
          fill: "green",
          shape: "dot",
          text: `calendar read ${clockTime(Date.now(), settings.timeZone)}: ${live} live`,
        }),
      )
      .catch(() => undefined);
  };
  const onProblem = (problem: string | null, reason?: string) => {
    // A feed answered 304 is read as it was: the status says when (docs/nodes.md#door-pass).
    if (problem === null && reason === "unchanged" && told === null) return readStatus();
    // Once per kind of problem (its reason: a count in its words may change between reads); a read
    // that works again says so once.
    const kind = problem === null ? null : (reason ?? "apply");
    if (kind === told) return;
    const was = told;
    told = kind;
    const got = binding.account();
    const events = "account" in got ? got.account.core.events : null;
    const name = node.name || node.id;
    if (problem === null) {
      node.log("door-pass: the calendar is read again");
      if (was !== null)
        events?.emit("pass", "calendar-ok", `the booking calendar of ${name} is read and applied again`, {
          node: name,
        });
      // A feed back unchanged (304) applies nothing: the status is said here, not by a read's apply.
      if (was !== null) readStatus();
      return;
    }
    const partly = reason === "doors" || reason === "store";
    node.warn(
      `door-pass: calendar: ${problem}; ${partly ? "the rest is" : "nothing was changed,"} tried again at the next read`,
    );
    events?.emit("pass", "calendar-failed", `the booking calendar of ${name}: ${problem}`, {
      reason: reason ?? "apply",
      node: name,
    });
    binding.setResult({
      fill: "yellow",
      shape: "ring",
      text: `calendar: ${STATUS[reason ?? ""] ?? "not read"} ${clockTime(Date.now(), settings.timeZone)}`,
    });
  };
  return onProblem;
}

/** The stamp of a read of this node's calendar (src/passes/pass-book.ts readStamp); null without an account. */
async function readStampOf(binding: FlowNodeBinding, source: string): Promise<number | null> {
  const got = binding.account();
  if ("problem" in got) return null;
  return got.account.core.passes.readStamp(source);
}
