/**
 * What the three flow nodes share: finding their account, showing its state as node status
 * (then their own last result), raising a halt to a Catch node, and waiting for requests in
 * flight on close.
 */
import { clip, describeThrown } from "../../src/util/text.js";
import type { Node, NodeAPI } from "node-red";
import type { Account } from "../../src/account/account.js";
import type { DoorIdentity } from "../../src/doors/directory.js";
import { storedDeviceId } from "../../src/doors/ids.js";
import type { SessionHaltedError } from "../../src/session/errors.js";
import type { SessionSnapshot } from "../../src/session/session.js";

export const ADMIN_PREFIX = "/door-access/accounts";
/** How long a closing node waits for its requests in flight (Node-RED allows 15 s). */
export const CLOSE_WAIT_MS = 10_000;
/**
 * Longest a closing door-account node takes: unlocks in flight get ACCOUNT_DRAIN_MS (10 s) to
 * finish and write their result records, the session and the audit log the rest; within
 * Node-RED's 15 s close time-out.
 */
export const ACCOUNT_CLOSE_GUARD_MS = 12_000;

export interface NodeStatus {
  fill?: "red" | "green" | "yellow" | "blue" | "grey";
  shape?: "ring" | "dot";
  text?: string;
  /**
   * door-unlock only: whether the node asks for a PIN (it has one, or had one that was not copied).
   * A Status node passes it on as msg.status.pinRequired (docs/nodes.md#node-status): a door panel
   * asks for the PIN from the first press.
   */
  pinRequired?: boolean;
}

export interface AccountUser {
  /** The flow tab the node is on (Catch nodes are per tab). */
  readonly z: string;
  onAccountState(status: NodeStatus): void;
  onAccountHalt(error: SessionHaltedError): void;
}

/** The runtime face of a `door-account` node, as flow nodes and admin endpoints see it. */
export interface DoorAccountNode {
  id: string;
  type: string;
  account: Account | null;
  /** Configuration problem that keeps the account from starting. */
  problem: string | null;
  /** The account key its events are kept under (docs/events.md); null when its settings cannot be read. */
  eventsKey?: string | null;
  users: Set<AccountUser>;
  register(user: AccountUser): void;
  deregister(user: AccountUser): void;
  statusFor(): NodeStatus;
  /** Work of a flow node that uses this account (an unlock writing its audit records): the account's audit log stays open for it on close. */
  track?(work: Promise<unknown>): void;
}

/** green: ready; yellow: connecting or refreshing; red: halted or unreachable. */
export function stateStatus(snap: SessionSnapshot, label: (state: string) => string): NodeStatus {
  const text = label(snap.state);
  switch (snap.state) {
    case "ready":
      return { fill: "green", shape: "dot", text };
    case "idle":
    case "logging-in":
    case "refreshing":
      return { fill: "yellow", shape: "ring", text };
    case "closed":
      return { fill: "grey", shape: "ring", text };
    default:
      // The state's label says why ("login refused: check credentials", "session superseded");
      // a service that cannot be reached adds what failed ("service unreachable: connection refused").
      return { fill: "red", shape: "ring", text: snap.detail ? `${text}: ${snap.detail}` : text };
  }
}

/** A node status fits on the canvas under its node (docs/nodes.md#node-status): at most this many characters. */
export const STATUS_MAX = 64;

/** The status with its text cut to STATUS_MAX characters (ending in "…"); the whole is said in the sidebar. */
export function fitStatus(status: NodeStatus): NodeStatus {
  const text = status.text;
  if (typeof text !== "string" || text.length <= STATUS_MAX) return status;
  return { ...status, text: `${clip(text, STATUS_MAX - 1).trimEnd()}…` };
}

/**
 * The first clause of a failure's message, for a node status: 'no door named "Frontdoor" —
 * known doors: ...' gives 'no door named "Frontdoor"'. Cut at " — ", "; ", ": " or ", got ",
 * then clipped to `max` characters.
 */
export function briefReason(message: string, max = 40): string {
  const cut = /( — |; |: |, got )/.exec(message);
  const first = cut ? message.slice(0, cut.index) : message;
  return first.length <= max ? first : `${clip(first, max - 1).trimEnd()}…`;
}

/** Status clocks by zone: making one costs far more than using it. */
const clockFormats = new Map<string, Intl.DateTimeFormat>();

/**
 * hh:mm:ss in local time, for node status: on the wall clock of `timeZone` when the node has one
 * (docs/nodes.md#node-status), else the runtime's (formatted by hand: it runs for every message).
 */
export function clockTime(ms: number, timeZone?: string): string {
  if (timeZone !== undefined) {
    try {
      let f = clockFormats.get(timeZone);
      if (f === undefined) {
        f = new Intl.DateTimeFormat("en-GB", {
          timeZone,
          hour: "2-digit",
          minute: "2-digit",
          second: "2-digit",
          hourCycle: "h23",
        });
        clockFormats.set(timeZone, f);
      }
      return f.format(ms);
    } catch {
      /* a zone this Node.js lacks: the runtime's clock */
    }
  }
  const d = new Date(ms);
  const two = (n: number) => (n < 10 ? "0" : "") + n;
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

export { describeThrown };

/**
 * A message's fields, each read once. One that cannot be read (a getter that throws, as a
 * function node can set; a Proxy) is bad input: `unreadable` says which, and its value is
 * undefined. The nodes answer invalid-input for it and send nothing.
 */
export class MessageFields {
  unreadable: string | undefined;
  constructor(private readonly msg: Record<string, unknown>) {}
  /** `quote: false` for a secret (msg.pin): what its getter threw may hold it, and is not quoted. */
  read(key: string, quote = true): unknown {
    try {
      return this.msg[key];
    } catch (e) {
      this.unreadable ??= quote ? `msg.${key} could not be read: ${describeThrown(e)}` : `msg.${key} could not be read`;
      return undefined;
    }
  }
}

/**
 * done() that never throws. Node-RED hands the message to Catch and Complete nodes by copying
 * it, and a message that cannot be copied (a getter that throws) makes done() throw; thrown from
 * a promise's handler that would be an unhandled rejection. The error is then logged on the node,
 * without the message.
 */
export function endMessage(node: Node, done: (err?: Error) => void, err?: Error): void {
  try {
    done(err);
  } catch (e) {
    try {
      node.error(
        `${err ? `${err.message}; ` : ""}the message could not be handed on to Catch or Complete nodes: ${describeThrown(e)}`,
      );
    } catch {
      /* nothing left to tell it with */
    }
  }
}

/**
 * The Error a failed message ends with (done(err)). Node-RED gives a Catch node
 * `msg.error.message = err.toString()`, which for a plain Error is "Error: <text>"; this one's is
 * the text alone, as the halt error and door-unlock's (docs/outcomes.md#door-devices-and-door-status-failures).
 */
export class MessageError extends Error {
  override toString(): string {
    return this.message;
  }
}

/**
 * Ends a failed door-devices / door-status message the way the contract says: msg.outcome and
 * msg.statusCode set, a red status, and done() with a real Error a Catch node sees. A
 * rate-limited failure also sets msg.retryAfter, the seconds its error text names
 * (docs/session.md#rate-limits).
 */
export function failMessage(
  RED: NodeAPI,
  type: "door-devices" | "door-status",
  binding: FlowNodeBinding,
  msg: Record<string, unknown>,
  done: (err?: Error) => void,
  failure: { outcome: string; status: number | null; message: string; retryAfter?: number | null },
): void {
  let message = failure.message;
  try {
    clearOutcomeFields(msg);
    msg.outcome = failure.outcome;
    if (failure.status !== null) msg.statusCode = failure.status;
    if (failure.outcome === "rate-limited" && typeof failure.retryAfter === "number")
      msg.retryAfter = failure.retryAfter;
  } catch (e) {
    // A frozen message, a setter that throws: the error still ends the message and the status shows it.
    message += ` (msg.outcome could not be set on the message: ${describeThrown(e)})`;
  }
  const time = clockTime(Date.now());
  binding.setResult({
    fill: "red",
    shape: "ring",
    text:
      failure.status !== null
        ? RED._(`${type}.status.failed-status`, { outcome: failure.outcome, status: failure.status, time })
        : failure.outcome === "invalid-input"
          ? RED._(`${type}.status.failed-reason`, {
              outcome: failure.outcome,
              reason: briefReason(failure.message),
              time,
            })
          : RED._(`${type}.status.failed`, { outcome: failure.outcome, time }),
  });
  // docs/events.md#catch-errors: a Catch node's msg.error.code is the outcome word (Node-RED 4.1 passes code on).
  done(Object.assign(new MessageError(message), { code: failure.outcome }));
}

/**
 * Removes msg.outcome, msg.statusCode and msg.retryAfter (an earlier failure's, or a flow's): they
 * describe a failure of this node (docs/outcomes.md), so a message that succeeds leaves without
 * them, and one that fails carries only its own. Never throws.
 */
export function clearOutcomeFields(msg: Record<string, unknown>): void {
  for (const k of ["outcome", "statusCode", "retryAfter"]) {
    try {
      if (Object.prototype.hasOwnProperty.call(msg, k)) delete msg[k];
    } catch {
      /* a frozen message keeps what it has */
    }
  }
}

/**
 * Binds a flow node to its account: registration, status (the account's state unless it is
 * ready, then the node's own last result), halts raised as node errors, and the set of
 * requests in flight that close() waits for.
 */
export class FlowNodeBinding implements AccountUser {
  readonly accountNode: DoorAccountNode | null;
  private accountStatus: NodeStatus = { fill: "grey", shape: "ring", text: "" };
  private lastResult: NodeStatus | null = null;
  /** The last result came before or during a halt or an outage: dropped once the account is ready again. */
  private resultStale = false;
  private readonly inflight = new Set<Promise<unknown>>();

  /**
   * `decorate` (optional) turns every status the binding would show into the one shown: a node
   * adds its own state with it (door-unlock: its access rules, a lockout; docs/access-rules.md).
   */
  constructor(
    RED: NodeAPI,
    private readonly node: Node,
    accountId: string | undefined,
    private readonly decorate?: (status: NodeStatus) => NodeStatus,
  ) {
    const n = accountId ? (RED.nodes.getNode(accountId) as unknown as DoorAccountNode | null) : null;
    this.accountNode = n && n.type === "door-account" ? n : null;
    if (this.accountNode) {
      this.accountNode.register(this);
    } else {
      this.accountStatus = { fill: "red", shape: "ring", text: "no door-account configured" };
      this.render();
    }
    node.on("close", (_removed: boolean, done: () => void) => {
      this.accountNode?.deregister(this);
      const all = Promise.allSettled([...this.inflight]);
      const guard = setTimeout(done, CLOSE_WAIT_MS);
      void all.then(() => {
        clearTimeout(guard);
        done();
      });
    });
  }

  get z(): string {
    return (this.node as unknown as { z?: string }).z ?? "";
  }

  /** The account, or a reason why there is none (shown to the user as a session halt). */
  account(): { account: Account } | { problem: string } {
    if (!this.accountNode) return { problem: "no door-account is configured for this node" };
    if (!this.accountNode.account)
      return { problem: `the door-account is not usable: ${this.accountNode.problem ?? "not started"}` };
    return { account: this.accountNode.account };
  }

  onAccountState(status: NodeStatus): void {
    // Ready again after a halt or an outage (red): the result the node showed from before, or
    // got during it, is over, so the account's "ready" is shown until the next message, not a
    // stale red result (docs/nodes.md#node-status).
    if (status.fill === "red") this.resultStale = true;
    else if (status.fill === "green" && this.resultStale) {
      this.lastResult = null;
      this.resultStale = false;
    }
    this.accountStatus = status;
    this.render();
  }

  onAccountHalt(error: SessionHaltedError): void {
    // The text only: an Error object would put its stack (file paths) in the debug sidebar
    // (docs/session.md#halts-and-reconnect).
    this.node.error(error.message, {
      topic: "door-access/session-halted",
      payload: { state: error.state, reason: error.message },
      outcome: "session-halted",
    });
  }

  /** The node's own last result; shown while the account is ready. */
  setResult(status: NodeStatus | null): void {
    this.lastResult = status;
    this.resultStale = this.accountStatus.fill === "red";
    this.render();
  }

  track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    this.accountNode?.track?.(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => undefined);
    return p;
  }

  /** Shows the status again (a node's own state changed, e.g. a lockout ended). */
  refresh(): void {
    this.render();
  }

  private render(): void {
    const ready = this.accountStatus.fill === "green";
    const status = ready && this.lastResult ? this.lastResult : this.accountStatus;
    this.node.status(fitStatus(this.decorate ? this.decorate(status) : status));
  }
}

/** The door picked in the editor: its identity and the id seen when it was picked. */
export function configuredDoor(config: {
  deviceId?: unknown;
  doorName?: unknown;
  doorLocation?: unknown;
}): DoorIdentity | null {
  const id = storedDeviceId(config.deviceId);
  const name = typeof config.doorName === "string" && config.doorName.trim() ? config.doorName.trim() : null;
  const location =
    typeof config.doorLocation === "string" && config.doorLocation.trim() ? config.doorLocation.trim() : null;
  return id === null && name === null ? null : { id, name, location };
}
