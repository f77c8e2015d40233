/**
 * The part of Node-RED's editor API (the browser's global `RED`) that our editor code uses, typed
 * for it. @types/node-red__editor-client does not fit: it pulls Node.js and Express types into the
 * browser's type-check (through @node-red/runtime), and its validators return a boolean, where
 * Node-RED 3+ takes a message too. jQuery's own types (@types/jquery) type `$`.
 * Reference: https://nodered.org/docs/api/ui/ and https://nodered.org/docs/creating-nodes/node-html
 */

/** What every node in the editor has; a node type's interface adds its properties. */
export interface EditorNode {
  readonly id: string;
  readonly type: string;
  /**
   * The credentials the editor holds: typed since the last deploy, or `has_<name>` for a stored
   * password-type one (never its value); `_` is what the runtime last sent.
   */
  credentials?: Record<string, unknown> & { _?: Record<string, unknown> };
  dirty?: boolean;
}

/**
 * A validator: true, else false or the message to show (fixed text only: the editor shows it as
 * HTML). Declare it with both parameters, `validate(v, _opt)`: Node-RED takes a returned message as
 * "invalid" only from a validator of two parameters (`validate.length === 2`); from one of one
 * parameter it coerces the message to true, valid (test/editor/dialogs.test.ts).
 */
export type Validator<N> = (this: N, value: unknown, opt: unknown) => boolean | string;

export interface PropertyDefinition<N> {
  value: unknown;
  required?: boolean;
  /** The type of config node this property points to. */
  type?: string;
  label?: string;
  validate?: Validator<N>;
}

export interface CredentialDefinition<N> {
  type: "text" | "password";
  validate?: Validator<N>;
}

/** RED.nodes.registerType's definition (https://nodered.org/docs/creating-nodes/node-html#node-definition). */
export interface NodeDefinition<N extends EditorNode> {
  category: string;
  color?: string;
  defaults: Record<string, PropertyDefinition<N>>;
  credentials?: Record<string, CredentialDefinition<N>>;
  inputs?: number;
  outputs?: number;
  outputLabels?: (this: N, index: number) => string;
  icon?: string;
  paletteLabel?: string | ((this: N) => string);
  label?: string | ((this: N) => string);
  labelStyle?: string | ((this: N) => string);
  /** Called when the node is dropped from the palette or imported (before it is added). */
  onadd?: (this: N) => void;
  oneditprepare?: (this: N) => void;
  oneditsave?: (this: N) => void;
  oneditcancel?: (this: N) => void;
  oneditdelete?: (this: N) => void;
}

export type NotificationType = "success" | "warning" | "error" | "compact";

/** One row of an editableList: its element and the data it was added with. */
export interface EditableListOptions<T> {
  addButton?: string | boolean;
  height?: number | "auto";
  removable?: boolean;
  sortable?: boolean;
  scrollOnAdd?: boolean;
  addItem: (row: JQuery, index: number, data: T) => void;
}

export interface SidebarTab {
  id: string;
  label: string;
  name: string;
  iconClass: string;
  content: JQuery;
  enableOnEdit?: boolean;
  onchange?: () => void;
}

export interface RedEditor {
  /** A message of the catalogue `namespace:key`, with `__name__` replaced by opts' values (not escaped). */
  _(key: string, opts?: Record<string, unknown>): string;
  nodes: {
    registerType<N extends EditorNode>(type: string, definition: NodeDefinition<N>): void;
    node(id: string): (EditorNode & Record<string, unknown>) | null;
    /** The wires of the workspace that match (here: those leaving `source`). */
    filterLinks(filter: { source: EditorNode }): unknown[];
    /** Calls `cb` for each config node; stops when it returns false. */
    eachConfig(cb: (node: EditorNode & { z?: string }) => boolean | void): void;
  };
  workspaces: { active(): string };
  plugins: {
    registerPlugin(id: string, definition: { onadd: () => void }): void;
  };
  view: { redraw(): void };
  /** Node-RED's validation of a node's properties: sets its `valid` (the red triangle on the canvas). */
  editor: { validateNode(node: EditorNode): boolean };
  /** Takes a string as HTML: give it an element whose text is set instead (nodes/common/editor/text.ts). */
  notify(message: JQuery, type?: NotificationType): unknown;
  comms: { subscribe(topic: string, callback: (topic: string, data: unknown) => void): void };
  events: { on(event: string, callback: (...args: unknown[]) => void): void };
  sidebar: { addTab(tab: SidebarTab): void; show(id: string): void };
  actions: { add(name: string, action: () => void): void };
  /** The signed-in user's permissions (every permission when the editor has no login). */
  user: { hasPermission(permission: string): boolean };
}

declare global {
  const RED: RedEditor;

  interface JQuery {
    /** Node-RED's editableList widget (https://nodered.org/docs/api/ui/editableList/). */
    editableList<T extends object>(options: EditableListOptions<T>): JQuery;
    editableList(method: "addItem", data: object): JQuery;
    editableList(method: "items"): JQuery;
  }
}
