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
import { type PassDoor, checkIssue, codeLengthOf } from "../../passes/pass.js";
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
        if (action === "list") {
          const passes = await book.list();
          const live = passes.filter((p) => p.state === "active" || p.state === "upcoming").length;
          return answer({ action: "list", passes }, `${live} live`);
        }
        return fail("invalid-input", `msg.payload.action must be "issue", "revoke" or "list"`);
      })();
      binding.track(work).catch((e: Error) => fail("error", describeThrown(e)));
    });
  }
  RED.nodes.registerType("door-pass", DoorPass as never);
};
