/**
 * door-pass in the editor: its definition (RED.nodes.registerType) and its dialog
 * (editor/template.html): the account and the length of the codes it issues
 * (docs/passes.md#the-node). The runtime (door-pass.ts) reads exactly these properties: name,
 * account, codeLength; the range is the runtime's own (src/passes/pass.ts).
 *
 * The build (scripts/editor-build.ts) bundles this file into the node's door-pass.html
 * (docs/architecture.md#the-editor-where-a-node-lives-and-how-it-is-built).
 */
import { DEFAULT_CODE_LENGTH, codeLengthOf } from "../../../passes/pass-limits.js";
import { preselectAccount, preselectAccountInDialog } from "../../editor-shared/account.js";
import type { EditorNode } from "../../editor-shared/red.js";

interface DoorPassNode extends EditorNode {
  name?: string;
  account?: string;
  codeLength?: number | string;
}

const NS = "@door-access/node-red/door-pass";

function tr(key: string, opts?: Record<string, unknown>): string {
  return RED._(`${NS}:door-pass.${key}`, opts);
}

RED.nodes.registerType<DoorPassNode>("door-pass", {
  category: "door access",
  color: "#9BC4E2",
  defaults: {
    name: { value: "" },
    account: { value: "", type: "door-account", required: true },
    codeLength: {
      value: DEFAULT_CODE_LENGTH,
      validate(v, _opt) {
        const n = codeLengthOf(v);
        return typeof n === "number" ? true : n;
      },
    },
  },
  inputs: 1,
  outputs: 1,
  icon: "door-pass.svg",
  paletteLabel() {
    return tr("paletteLabel");
  },
  label() {
    return this.name || tr("label.default");
  },
  labelStyle() {
    return this.name ? "node_label_italic" : "";
  },
  onadd() {
    preselectAccount(this);
  },
  oneditprepare() {
    preselectAccountInDialog(this);
  },
});
