/**
 * `door-pass`: guest passes of an account (docs/passes.md), given and taken back from a flow.
 * msg.payload.action: `issue` (answers the code, once), `revoke` (by id or ref), `list` (never a
 * code). Bad input is an error for a Catch node naming the field, and nothing is stored. The
 * passes themselves are the account's (src/passes/pass-book.ts); door names are resolved against
 * the account's device list when a pass is issued and kept as ids.
 */
import type { NodeAPI, Node, NodeDef, NodeMessageInFlow } from "node-red";
import { type PassDoor, checkIssue, codeLengthOf, hoursOf, windowText } from "../../src/passes/pass.js";
import { calendarDoors, checkCalendarSettings } from "../../src/passes/calendar-settings.js";
import type { CalendarPoller } from "../../src/passes/calendar-poller.js";
import { calendarPoller } from "./calendar-node.js";
import { PassInputError, resolveDoors } from "./resolve-doors.js";
import {
  FlowNodeBinding,
  MessageError,
  clearOutcomeFields,
  clockTime,
  describeThrown,
  endMessage,
} from "../shared/node-runtime.js";

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
}

/** A zone the node names and this Node.js knows, else undefined (the runtime's). */
function zoneOf(v: unknown): string | undefined {
  if (typeof v !== "string" || v.trim() === "") return undefined;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: v.trim() }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
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
    // The node's zone for the texts a person reads (docs/nodes.md#door-pass): its timeZone, else the runtime's.
    const zone = cal.ok && cal.settings !== null ? cal.settings.timeZone : zoneOf(config.timeZone);
    if (!cal.ok) node.error(`door-pass: ${cal.problems.join("; ")}; the calendar is not read`);
    else if (cal.settings !== null) {
      const wanted = calendarDoors(config.doors);
      if (wanted.length === 0)
        node.error("door-pass: doors: the calendar's passes need at least one door; the calendar is not read");
      else {
        poller = calendarPoller(node, binding, cal.settings, wanted, digits, (c) => {
          lastCounts = c;
        });
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
        // A calendar's failure keeps the status its read set, with the reason (docs/events.md#catch-errors).
        if (outcome !== "calendar-failed")
          binding.setResult({ fill: "red", shape: "ring", text: `${outcome} ${clockTime(Date.now(), zone)}` });
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
          binding.setResult({ fill: "green", shape: "dot", text: `${text} ${clockTime(Date.now(), zone)}` });
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
            {
              guest: r.guest,
              doors,
              from: r.from,
              until: r.until,
              uses: r.uses,
              ref: r.ref,
              ...hoursOf({ schedule: r.schedule ?? undefined, timeZone: r.timeZone ?? undefined }),
            },
            typeof codeLength === "number" ? codeLength : 8,
          );
          account.core.events.emit(
            "pass",
            "issued",
            `a pass for ${pass.guest} was issued: ${windowText(pass, Date.now(), zone)}`,
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
              ...hoursOf(pass),
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
          if (r.kind === "failed") return fail("calendar-failed", `sync: ${r.problem}`);
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
