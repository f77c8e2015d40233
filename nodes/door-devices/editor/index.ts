/**
 * door-devices in the editor: its definition (RED.nodes.registerType) and its dialog
 * (editor/template.html); the account's devices (GET /api/user/device) or locations
 * (GET /api/user/location). The runtime (door-devices.ts) reads exactly these properties: name,
 * account, list.
 *
 * The build (scripts/editor-build.ts) bundles this file into the node's door-devices.html
 * (docs/architecture.md#the-editor-where-a-node-lives-and-how-it-is-built).
 */
import { preselectAccount, preselectAccountInDialog } from "../../common/editor/account.js";
import type { EditorNode } from "../../common/editor/red.js";
import { nodeTranslator } from "../../common/editor/i18n.js";

interface DoorDevicesNode extends EditorNode {
  name?: string;
  account?: string;
  list?: string;
}

const tr = nodeTranslator("door-devices");

RED.nodes.registerType<DoorDevicesNode>("door-devices", {
  category: "door access",
  color: "#9BC4E2",
  defaults: {
    name: { value: "" },
    account: { value: "", type: "door-account", required: true },
    list: {
      value: "devices",
      validate(v, _opt) {
        return v === "devices" || v === "locations";
      },
    },
  },
  inputs: 1,
  outputs: 1,
  icon: "door-devices.svg",
  paletteLabel() {
    return tr("paletteLabel");
  },
  label() {
    return this.name || (this.list === "locations" ? tr("label.locations") : tr("label.default"));
  },
  labelStyle() {
    return this.name ? "node_label_italic" : "";
  },
  onadd() {
    preselectAccount(this);
  },
  oneditprepare() {
    preselectAccountInDialog(this);
    if (!$("#node-input-list").val()) $("#node-input-list").val("devices");
  },
});
