/**
 * A door-pass node's booking calendar at run time (docs/passes.md#from-a-booking-calendar): the
 * poller that reads the feed, each read applied to the account's passes and told on the node's
 * output and the account's events. A node whose output reaches no node issues no calendar pass
 * (docs/passes.md#no-code-goes-nowhere): it still updates and revokes, says why in its status, and
 * reads the feed in full again next time, so the passes are issued once it is wired.
 */
import type { Node, NodeAPI } from "node-red";
import type { CalendarSettings } from "../../passes/calendar-settings.js";
import { CalendarPoller } from "../../passes/calendar-poller.js";
import { applyBookings } from "../../passes/calendar-sync.js";
import { type FlowNodeBinding, clockTime } from "../node-runtime.js";
import { answerOf, calendarDoors, outputWired, resolveDoors } from "./pass-node-parts.js";

export interface CalendarRun {
  readonly poller: CalendarPoller;
  /** The counts of the last read applied (a `sync`'s answer), changed in place. */
  readonly counts: { issued: number; updated: number; revoked: number };
}

export const NOT_WIRED = "output not wired: no calendar pass is issued (a code would go nowhere); wire it and deploy";

export function startCalendar(
  RED: NodeAPI,
  node: Node,
  binding: FlowNodeBinding,
  settings: CalendarSettings,
  doorsProperty: unknown,
  digits: number,
): CalendarRun | null {
  const wanted = calendarDoors(doorsProperty);
  if (wanted.length === 0) {
    node.error("door-pass: doors: the calendar's passes need at least one door; the calendar is not read");
    return null;
  }
  let told: string | null = null;
  let toldUnwired = false;
  const counts = { issued: 0, updated: 0, revoked: 0 };
  const apply = async (bookings: Parameters<typeof applyBookings>[2]): Promise<boolean> => {
    const got = binding.account();
    if ("problem" in got) throw new Error(got.problem);
    const account = got.account;
    const doors = await resolveDoors(account, wanted);
    const wired = outputWired(RED, node);
    // One read of this node at a time in this runtime (a redeploy's new node beside the old one's read).
    const book = account.core.passes;
    const changes = await book.serially(node.id, () =>
      applyBookings(book, node.id, bookings, doors, digits, Date.now(), { issue: wired }),
    );
    const events = account.core.events;
    for (const { pass, code } of changes.issued) {
      node.send({ topic: "door-pass/calendar", payload: answerOf("issued", pass, code) });
      events.emit(
        "pass",
        "issued",
        `a pass for ${pass.guest} was issued from the calendar (${pass.from} to ${pass.until})`,
        { id: pass.id, guest: pass.guest, ref: pass.ref, from: pass.from, until: pass.until },
      );
    }
    for (const pass of changes.updated) {
      node.send({ topic: "door-pass/calendar", payload: answerOf("updated", pass) });
      events.emit("pass", "updated", `the pass of ${pass.guest} now runs ${pass.from} to ${pass.until}`, {
        id: pass.id,
        guest: pass.guest,
        ref: pass.ref,
        from: pass.from,
        until: pass.until,
      });
    }
    for (const pass of changes.revoked) {
      node.send({ topic: "door-pass/calendar", payload: { action: "revoked", id: pass.id } });
      events.emit("pass", "revoked", `the pass of ${pass.guest} was revoked: its booking is gone`, {
        id: pass.id,
        guest: pass.guest,
        ref: pass.ref,
      });
    }
    Object.assign(counts, {
      issued: changes.issued.length,
      updated: changes.updated.length,
      revoked: changes.revoked.length,
    });
    if (!wired) {
      if (!toldUnwired) node.warn(`door-pass: calendar: ${NOT_WIRED}`);
      toldUnwired = true;
      binding.setResult({ fill: "yellow", shape: "ring", text: "not wired: no calendar pass issued" });
      return false; // read in full next time: the bookings it did not issue are issued once it is wired
    }
    toldUnwired = false;
    // Its own passes, not the account's (docs/passes.md#deleting-a-calendar-node).
    const live = await book.liveOf(node.id);
    binding.setResult({ fill: "green", shape: "dot", text: `calendar read ${clockTime(Date.now())}: ${live} live` });
    return true;
  };
  const poller = new CalendarPoller(settings, apply, (problem) => {
    // Once per kind of problem; a read that works again says so once.
    if (problem === told) return;
    told = problem;
    if (problem === null) node.log("door-pass: the calendar is read again");
    else {
      node.warn(`door-pass: calendar: ${problem}; nothing was changed, tried again at the next read`);
      binding.setResult({ fill: "yellow", shape: "ring", text: `calendar: not read ${clockTime(Date.now())}` });
    }
  });
  // After the deploy step: the account's session starts first.
  const start = setTimeout(() => poller.start(), 1000);
  node.on("close", () => {
    clearTimeout(start);
    poller.stop();
  });
  return { poller, counts };
}
