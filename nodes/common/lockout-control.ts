/**
 * The deployed door-unlock nodes whose lockouts the host may end from the sidebar
 * (docs/access-rules.md#ending-a-lockout): each node registers what it shows and how to end it
 * while it runs, and takes it back when it closes. Knows nothing of HTTP.
 */

/** One lock of a node: the node's (deviceId null: the whole node, or the ceiling across its doors) or a door's. */
export interface LockView {
  deviceId: number | null;
  door: string | null;
  wrongPins: number;
  /** ISO time the lockout ends by itself. */
  until: string;
}

export interface LockoutControl {
  nodeId: string;
  name: string;
  /** The door-account config node the door-unlock uses. */
  accountId: string;
  /** The lockouts in force now. */
  locks(): LockView[];
  /** Ends door `deviceId`'s lockout, or (null) every lockout of the node; `by` names who. */
  end(deviceId: number | null, by: string): Promise<{ ended: { deviceId: number | null; door: string | null }[] }>;
}

const controls = new Map<string, LockoutControl>();

/** A node offers its lockouts; the returned function takes the offer back (on close). */
export function offerLockouts(c: LockoutControl): () => void {
  controls.set(c.nodeId, c);
  return () => {
    if (controls.get(c.nodeId) === c) controls.delete(c.nodeId);
  };
}

/** The nodes of account `accountId` that offer their lockouts. */
export function lockoutControls(accountId: string): LockoutControl[] {
  return [...controls.values()].filter((c) => c.accountId === accountId);
}

/** The node `nodeId`'s offer, if it runs. */
export function lockoutControl(nodeId: string): LockoutControl | null {
  return controls.get(nodeId) ?? null;
}
