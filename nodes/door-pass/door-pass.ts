/**
 * `door-pass`: guest passes of an account (docs/passes.md), given and taken back from a flow.
 * msg.payload.action: `issue` (answers the code, once), `reissue` (a new code for a live pass),
 * `revoke` (by id or ref), `list` (never a code), `sync` (reads the booking calendar now). Bad input
 * is an error for a Catch node naming the field, and nothing is stored. The passes themselves are
 * the account's (src/passes/pass-book.ts); door names are resolved against the account's device
 * list when a pass is issued and kept as ids. The calendar is calendar-node.ts; a deleted node's
 * calendar passes are revoked (docs/passes.md#deleting-a-calendar-node).
 */
import type { NodeAPI, Node, NodeDef, NodeMessageInFlow } from "node-red";
import type { Account } from "../../src/account/account.js";
import { type PassDoor, checkIssue, codeLengthOf, hoursOf, windowText } from "../../src/passes/pass.js";
import { calendarDoors, checkCalendarSettings } from "../../src/passes/calendar-settings.js";
import type { CalendarPoller } from "../../src/passes/calendar-poller.js";
import {
  FlowNodeBinding,
  MessageError,
  clearOutcomeFields,
  clockTime,
  describeThrown,
  endMessage,
} from "../common/node-runtime.js";
import { type Counts, calendarPoller } from "./calendar-node.js";
import {
  type PassNodeHooks,
  answerOf,
  deletedFromFlows,
  isOwn,
  outputWired,
  resolveTurnover,
  revokeCalendarPasses,
} from "./pass-node-parts.js";
import { PassInputError, resolveDoors } from "./resolve-doors.js";

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

/** A node's booking calendar at run time: its poller, and the counts of the last read applied (a `sync`'s answer). */
interface CalendarRun {
  readonly poller: CalendarPoller;
  counts: Counts;
}

/** What one message asks of the node, and how it ends. */
interface Ask {
  account: Account;
  payload: Record<string, unknown>;
  /** Sends the answer on this message (then copies for more), sets the status, ends the message. */
  answer: (out: Record<string, unknown>, text: string, more?: Record<string, unknown>[]) => void;
  fail: (outcome: string, message: string) => void;
  /** The node's zone for the texts a person reads (undefined: the runtime's). */
  zone: string | undefined;
  /** The id of the node's account (a turnover pass names a calendar node of the same account). */
  accountId: string;
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

/** Issues new codes for the live passes `ids`: the answers (each with its code, once) and the events told. */
async function reissueAll(account: Account, ids: string[], digits: number): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const id of ids) {
    const r = await account.core.passes.reissue(id, digits);
    if (r === null) continue;
    account.core.events.emit("pass", "issued", `a new code was issued for the pass of ${r.pass.guest}`, {
      id: r.pass.id,
      guest: r.pass.guest,
      ref: r.pass.ref,
      from: r.pass.from,
      until: r.pass.until,
      reissued: true,
    });
    out.push({ ...answerOf("issued", r.pass, r.code), reissued: true });
  }
  return out;
}

export = function register(RED: NodeAPI): void {
  /** One message's action (docs/passes.md): issue, reissue, revoke, sync or list. */
  async function act(node: Node, ask: Ask, digits: number, calendar: CalendarRun | null): Promise<void> {
    const { account, payload, answer, fail, zone } = ask;
    const book = account.core.passes;
    const action = payload.action;
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
      // A turnover pass names a calendar node of this account (docs/passes.md#between-guests-the-turnover-window).
      const turnover = r.turnover === null ? undefined : resolveTurnover(RED, ask.accountId, r.turnover);
      if (typeof turnover === "object") return fail("invalid-input", turnover.problem);
      const { pass, code } = await book.issue(
        {
          guest: r.guest,
          doors,
          from: r.from,
          until: r.until,
          uses: r.uses,
          ref: r.ref,
          node: node.id,
          ...hoursOf({ schedule: r.schedule ?? undefined, timeZone: r.timeZone ?? undefined, turnover }),
        },
        digits,
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
      return answer(answerOf("issued", pass, code), "issued");
    }
    if (action === "revoke" || action === "reissue") {
      const id = typeof payload.id === "string" && payload.id !== "" ? payload.id : undefined;
      const ref = typeof payload.ref === "string" || typeof payload.ref === "number" ? String(payload.ref) : undefined;
      if (id === undefined && ref === undefined) return fail("invalid-input", `${action}: give the pass's id or ref`);
      const which = id !== undefined ? `with id ${id}` : `with ref ${ref}`;
      if (action === "reissue") {
        // docs/passes.md#a-new-code: a live pass only; one answer per pass a ref names.
        const live = (await book.list()).filter(
          (p) => (id !== undefined ? p.id === id : p.ref === ref) && (p.state === "active" || p.state === "upcoming"),
        );
        const answers = await reissueAll(
          account,
          live.map((p) => p.id),
          digits,
        );
        if (answers.length === 0) return fail("not-found", `reissue: no live pass ${which}`);
        return answer(answers[0], "new code", answers.slice(1));
      }
      const revoked = await book.revoke({ id, ref });
      if (revoked.length === 0) return fail("not-found", `revoke: no pass ${which} that is not revoked already`);
      for (const p of revoked)
        account.core.events.emit("pass", "revoked", `the pass of ${p.guest} was revoked`, {
          id: p.id,
          guest: p.guest,
          ref: p.ref,
        });
      const [first, ...more] = revoked.map((p) => ({ action: "revoked", id: p.id }));
      return answer(first, "revoked", more);
    }
    if (action === "sync") {
      if (calendar === null) return fail("invalid-input", "sync: this node has no booking calendar (calendarUrl)");
      calendar.counts = { issued: 0, updated: 0, revoked: 0 };
      const r = await calendar.poller.pollNow();
      if (r.kind === "failed") return fail("calendar-failed", `sync: ${r.problem}`);
      return answer({ action: "synced", ...calendar.counts }, "synced");
    }
    if (action === "list") {
      const passes = await book.list();
      // Its own passes, not the account's (docs/passes.md#deleting-a-calendar-node).
      const live = passes.filter((p) => isOwn(p, node.id) && (p.state === "active" || p.state === "upcoming")).length;
      return answer({ action: "list", passes }, `${live} live`);
    }
    return fail("invalid-input", `msg.payload.action must be "issue", "reissue", "revoke", "list" or "sync"`);
  }

  function DoorPass(this: Node, config: PassDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    const binding = new FlowNodeBinding(RED, node, config.account);
    const codeLength = codeLengthOf(config.codeLength);
    if (typeof codeLength === "string") node.error(`door-pass: ${codeLength}; passes are issued with 8 digits`);
    const digits = typeof codeLength === "number" ? codeLength : 8;

    // The booking calendar, when one is set (docs/passes.md#from-a-booking-calendar).
    const cal = checkCalendarSettings(config as unknown as Record<string, unknown>);
    let calendar: CalendarRun | null = null;
    // The node's zone for the texts a person reads (docs/nodes.md#door-pass): its timeZone, else the runtime's.
    const zone = cal.ok && cal.settings !== null ? cal.settings.timeZone : zoneOf(config.timeZone);
    if (!cal.ok) node.error(`door-pass: ${cal.problems.join("; ")}; the calendar is not read`);
    else if (cal.settings !== null) {
      const wanted = calendarDoors(config.doors);
      if (wanted.length === 0)
        node.error("door-pass: doors: the calendar's passes need at least one door; the calendar is not read");
      else {
        const run: CalendarRun = {
          poller: calendarPoller(
            node,
            binding,
            cal.settings,
            wanted,
            digits,
            (c) => {
              run.counts = c;
            },
            () => outputWired(RED, node),
          ),
          counts: { issued: 0, updated: 0, revoked: 0 },
        };
        calendar = run;
        // After the deploy step: the account's session starts first.
        const start = setTimeout(() => run.poller.start(), 1000);
        node.on("close", () => {
          clearTimeout(start);
          run.poller.stop();
        });
      }
    }

    // The sidebar's New code (docs/passes.md#a-new-code): the code goes out on this node's output only.
    const hooks: PassNodeHooks = {
      accountId: config.account,
      wired: () => outputWired(RED, node),
      reissueFromEditor: async (passId) => {
        const got = binding.account();
        if ("problem" in got) throw new Error(got.problem);
        if (!outputWired(RED, node)) return "not-wired";
        const answers = await reissueAll(got.account, [passId], digits);
        if (answers.length === 0) return "not-found";
        node.send({ topic: "door-pass/reissued", payload: answers[0] });
        binding.setResult({ fill: "green", shape: "dot", text: `new code ${clockTime(Date.now(), zone)}` });
        return "reissued";
      },
    };
    (node as unknown as { doorPass: PassNodeHooks }).doorPass = hooks;

    // Deleted (not disabled, not redeployed): the calendar passes it made end with it.
    node.on("close", (removed: boolean, closed: () => void) => {
      if (removed !== true || !deletedFromFlows(RED, node.id)) return closed();
      const got = binding.account();
      if ("problem" in got) return closed();
      const account = got.account;
      const guard = setTimeout(closed, 10_000);
      revokeCalendarPasses(account.core.passes, node.id)
        .then(({ revoked, failed }) => {
          if (failed.length > 0)
            node.warn(
              `door-pass: ${failed.length} of the deleted node's passes could not be revoked: ${describeThrown(failed[0])}`,
            );
          for (const p of revoked)
            account.core.events.emit(
              "pass",
              "revoked",
              `the pass of ${p.guest} was revoked: its door-pass node was deleted`,
              {
                id: p.id,
                guest: p.guest,
                ref: p.ref,
              },
            );
        })
        .catch((e: unknown) =>
          node.warn(`door-pass: the deleted node's passes could not be revoked: ${describeThrown(e)}`),
        )
        .finally(() => {
          clearTimeout(guard);
          closed();
        });
    });

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
        let payload: Record<string, unknown>;
        try {
          const p = m.payload;
          payload = p !== null && typeof p === "object" && !Array.isArray(p) ? (p as Record<string, unknown>) : {};
        } catch (e) {
          return fail("invalid-input", `msg.payload could not be read: ${describeThrown(e)}`);
        }
        const answer = (out: Record<string, unknown>, text: string, more: Record<string, unknown>[] = []) => {
          // One answer per pass (a ref may name several): the first on this message, the others on copies.
          for (const o of more) send({ ...RED.util.cloneMessage(m), payload: o });
          m.payload = out;
          send(m);
          binding.setResult({ fill: "green", shape: "dot", text: `${text} ${clockTime(Date.now(), zone)}` });
          done();
        };
        await act(
          node,
          { account: got.account, payload, answer, fail, zone, accountId: config.account },
          digits,
          calendar,
        );
      })();
      binding.track(work).catch((e: Error) => fail("error", describeThrown(e)));
    });
  }
  RED.nodes.registerType("door-pass", DoorPass as never);
};
