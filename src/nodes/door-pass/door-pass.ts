/**
 * `door-pass`: guest passes of an account (docs/passes.md), given and taken back from a flow.
 * msg.payload.action: `issue` (answers the code, once), `revoke` (by id or ref), `list` (never a
 * code). Bad input is an error for a Catch node naming the field, and nothing is stored. The
 * passes themselves are the account's (src/passes/pass-book.ts); door names are resolved against
 * the account's device list when a pass is issued and kept as ids.
 */
import type { NodeAPI, Node, NodeDef, NodeMessageInFlow } from "node-red";
import type { Account } from "../../account/account.js";
import { selectDoor } from "../../doors/select.js";
import { type Pass, type PassDoor, checkIssue, codeLengthOf } from "../../passes/pass.js";
import { checkCalendarSettings } from "../../passes/calendar-settings.js";
import { CalendarPoller } from "../../passes/calendar-poller.js";
import { applyBookings } from "../../passes/calendar-sync.js";
import { classifyFailure } from "../../unlock/outcome.js";
import {
  FlowNodeBinding,
  MessageError,
  clearOutcomeFields,
  clockTime,
  describeThrown,
  endMessage,
} from "../node-runtime.js";

interface PassDef extends NodeDef {
  account: string;
  codeLength?: unknown;
  /** The booking calendar (docs/passes.md#from-a-booking-calendar): its feed and the doors its passes open. */
  calendarUrl?: unknown;
  calendarEvery?: unknown;
  doors?: unknown;
  checkIn?: unknown;
  checkOut?: unknown;
  timeZone?: unknown;
  bufferBefore?: unknown;
  bufferAfter?: unknown;
  /** Summaries of blocked time, one a line; and the name of a guest the feed calls "Reserved". */
  blocked?: unknown;
  placeholderGuest?: unknown;
}

/** What a flow is told of a pass (never its code but in `issued`). */
function answerOf(action: string, p: Pass, code?: string): Record<string, unknown> {
  return {
    action,
    id: p.id,
    ...(code !== undefined ? { code } : {}),
    guest: p.guest,
    doors: p.doors,
    from: p.from,
    until: p.until,
    uses: p.uses,
    ref: p.ref,
    // A calendar's pass: what the feed told of the booking (docs/passes.md#blocked-time-and-placeholder-names).
    ...(p.booking !== undefined ? { booking: { ...p.booking } } : {}),
  };
}

/** The doors a calendar's passes open, as the node stores them: device ids or names. */
function calendarDoors(v: unknown): (number | string)[] {
  const list: unknown[] = Array.isArray(v) ? (v as unknown[]) : typeof v === "string" ? v.split(",") : [];
  return list
    .map((d) => (typeof d === "string" ? d.trim() : d))
    .filter(
      (d): d is number | string =>
        (typeof d === "number" && Number.isInteger(d)) || (typeof d === "string" && d !== ""),
    )
    .map((d) => (typeof d === "string" && /^\d{1,10}$/.test(d) ? Number(d) : d));
}

/** Bad input: the message's error names the field; nothing is stored. */
class PassInputError extends Error {}

/** Each door of an issue request resolved to its id and name, or why one cannot be. */
async function resolveDoors(account: Account, doors: (number | string)[]): Promise<PassDoor[]> {
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

export = function register(RED: NodeAPI): void {
  function DoorPass(this: Node, config: PassDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    const binding = new FlowNodeBinding(RED, node, config.account);
    const codeLength = codeLengthOf(config.codeLength);
    if (typeof codeLength === "string") node.error(`door-pass: ${codeLength}; passes are issued with 8 digits`);
    const digits = typeof codeLength === "number" ? codeLength : 8;

    // The booking calendar, when one is set (docs/passes.md#from-a-booking-calendar).
    const cal = checkCalendarSettings(config as unknown as Record<string, unknown>);
    let poller: CalendarPoller | null = null;
    let lastCounts = { issued: 0, updated: 0, revoked: 0 };
    if (!cal.ok) node.error(`door-pass: ${cal.problems.join("; ")}; the calendar is not read`);
    else if (cal.settings !== null) {
      const wanted = calendarDoors(config.doors);
      if (wanted.length === 0)
        node.error("door-pass: doors: the calendar's passes need at least one door; the calendar is not read");
      else {
        let told: string | null = null;
        poller = new CalendarPoller(
          cal.settings,
          async (bookings) => {
            const got = binding.account();
            if ("problem" in got) throw new Error(got.problem);
            const account = got.account;
            const doors = await resolveDoors(account, wanted);
            // One read of this node at a time in this runtime (a redeploy's new node beside the old one's read).
            const book = account.core.passes;
            const changes = await book.serially(node.id, () =>
              applyBookings(book, node.id, bookings, doors, digits, Date.now()),
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
            lastCounts = {
              issued: changes.issued.length,
              updated: changes.updated.length,
              revoked: changes.revoked.length,
            };
            binding.setResult({ fill: "green", shape: "dot", text: `calendar read ${clockTime(Date.now())}` });
          },
          (problem) => {
            // Once per kind of problem; a read that works again says so once.
            if (problem === told) return;
            told = problem;
            if (problem === null) node.log("door-pass: the calendar is read again");
            else {
              node.warn(`door-pass: calendar: ${problem}; nothing was changed, tried again at the next read`);
              binding.setResult({ fill: "yellow", shape: "ring", text: `calendar: not read ${clockTime(Date.now())}` });
            }
          },
        );
        // After the deploy step: the account's session starts first.
        const start = setTimeout(() => poller?.start(), 1000);
        node.on("close", () => {
          clearTimeout(start);
          poller?.stop();
        });
      }
    }

    node.on("input", (msg: NodeMessageInFlow, send, nodeRedDone) => {
      const done = (err?: Error) => endMessage(node, nodeRedDone, err);
      const m = msg as NodeMessageInFlow & Record<string, unknown>;
      const fail = (outcome: string, message: string) => {
        try {
          clearOutcomeFields(m);
          m.outcome = outcome;
        } catch {
          /* a frozen message still ends with its error */
        }
        binding.setResult({ fill: "red", shape: "ring", text: `${outcome} ${clockTime(Date.now())}` });
        done(Object.assign(new MessageError(`door-pass: ${message}`), { code: outcome }));
      };
      const work = (async () => {
        const got = binding.account();
        if ("problem" in got) return fail("session-halted", got.problem);
        const account = got.account;
        const book = account.core.passes;
        let payload: Record<string, unknown>;
        try {
          const p = m.payload;
          payload = p !== null && typeof p === "object" && !Array.isArray(p) ? (p as Record<string, unknown>) : {};
        } catch (e) {
          return fail("invalid-input", `msg.payload could not be read: ${describeThrown(e)}`);
        }
        const action = payload.action;
        const answer = (out: Record<string, unknown>, text: string) => {
          m.payload = out;
          send(m);
          binding.setResult({ fill: "green", shape: "dot", text: `${text} ${clockTime(Date.now())}` });
          done();
        };
        if (action === "issue") {
          const checked = checkIssue(payload);
          if (!checked.ok) return fail("invalid-input", checked.problems.join("; "));
          let doors: PassDoor[];
          try {
            doors = await resolveDoors(account, checked.request.doors);
          } catch (e) {
            return fail(e instanceof PassInputError ? "invalid-input" : "error", (e as Error).message);
          }
          const r = checked.request;
          const { pass, code } = await book.issue(
            { guest: r.guest, doors, from: r.from, until: r.until, uses: r.uses, ref: r.ref },
            typeof codeLength === "number" ? codeLength : 8,
          );
          account.core.events.emit(
            "pass",
            "issued",
            `a pass for ${pass.guest} was issued (${pass.from} to ${pass.until})`,
            {
              id: pass.id,
              guest: pass.guest,
              ref: pass.ref,
              doors: pass.doors,
              from: pass.from,
              until: pass.until,
            },
          );
          // The code goes out in this one message; the book keeps only its hash (docs/passes.md#issue).
          return answer(
            {
              action: "issued",
              id: pass.id,
              code,
              guest: pass.guest,
              doors: pass.doors,
              from: pass.from,
              until: pass.until,
              uses: pass.uses,
              ref: pass.ref,
            },
            "issued",
          );
        }
        if (action === "revoke") {
          const id = typeof payload.id === "string" && payload.id !== "" ? payload.id : undefined;
          const ref =
            typeof payload.ref === "string" || typeof payload.ref === "number" ? String(payload.ref) : undefined;
          if (id === undefined && ref === undefined) return fail("invalid-input", "revoke: give the pass's id or ref");
          const revoked = await book.revoke({ id, ref });
          if (revoked.length === 0)
            return fail(
              "not-found",
              `revoke: no pass ${id !== undefined ? `with id ${id}` : `with ref ${ref}`} that is not revoked already`,
            );
          for (const p of revoked)
            account.core.events.emit("pass", "revoked", `the pass of ${p.guest} was revoked`, {
              id: p.id,
              guest: p.guest,
              ref: p.ref,
            });
          // One answer per pass (a ref may name several): the first on this message, the others on copies.
          const [first, ...more] = revoked;
          for (const p of more) send({ ...RED.util.cloneMessage(m), payload: { action: "revoked", id: p.id } });
          return answer({ action: "revoked", id: first.id }, "revoked");
        }
        if (action === "sync") {
          if (poller === null) return fail("invalid-input", "sync: this node has no booking calendar (calendarUrl)");
          lastCounts = { issued: 0, updated: 0, revoked: 0 };
          const r = await poller.poll();
          if (r.kind === "failed") return fail("error", `sync: ${r.problem}`);
          return answer({ action: "synced", ...lastCounts }, "synced");
        }
        if (action === "list") {
          const passes = await book.list();
          const live = passes.filter((p) => p.state === "active" || p.state === "upcoming").length;
          return answer({ action: "list", passes }, `${live} live`);
        }
        return fail("invalid-input", `msg.payload.action must be "issue", "revoke", "list" or "sync"`);
      })();
      binding.track(work).catch((e: Error) => fail("error", describeThrown(e)));
    });
  }
  RED.nodes.registerType("door-pass", DoorPass as never);
};
