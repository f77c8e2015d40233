/**
 * The account a door node uses, in the editor: a new node takes the only door-account it can use
 * (docs/nodes.md#door-account), so that a second door node does not start at "none". With two or
 * more accounts, or none, nothing is chosen for the user.
 */

interface AccountUser {
  account?: unknown;
  z?: string;
}

/** The id of the only door-account a node on flow `z` can use (global, or on that flow), else null. */
export function onlyAccount(z: string | undefined): string | null {
  const found: string[] = [];
  RED.nodes.eachConfig((c) => {
    if (c.type === "door-account" && (!c.z || c.z === z)) found.push(c.id);
  });
  return found.length === 1 ? found[0] : null;
}

/**
 * A node without an account takes the only one there is (onadd, and when its dialog opens). On an
 * import Node-RED has judged the node before onadd: it is judged again, so that a node whose
 * account was just chosen has no red triangle.
 */
export function preselectAccount(node: AccountUser): void {
  if (typeof node.account === "string" && node.account !== "" && node.account !== "_ADD_") return;
  const id = onlyAccount(node.z ?? RED.workspaces.active());
  if (id === null) return;
  node.account = id;
  try {
    RED.editor.validateNode(node as unknown as Parameters<typeof RED.editor.validateNode>[0]);
  } catch {
    /* an editor without it draws the node as it judged it */
  }
}

/** In an open dialog whose Account is "none": the only account is chosen (and the door picker told). */
export function preselectAccountInDialog(node: AccountUser): void {
  const select = $("#node-input-account");
  const value = select.val();
  if (typeof value === "string" && value !== "" && value !== "_ADD_") return;
  const id = onlyAccount(node.z ?? RED.workspaces.active());
  if (id === null) return;
  const option = select.find("option").filter((_i, o) => o.value === id);
  if (option.length === 1) select.val(id).trigger("change");
}
