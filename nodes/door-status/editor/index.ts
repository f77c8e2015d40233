/**
 * door-status in the editor: its definition (RED.nodes.registerType) and its dialog
 * (editor/template.html); reads one door's state (GET /api/device/{deviceId}).
 * The runtime (door-status.ts) reads exactly these properties: name, account, deviceId, doorName,
 * doorLocation. The door picker is shared with door-unlock (nodes/common/editor/door-picker.ts).
 *
 * The build (scripts/editor-build.ts) bundles this file with what it imports into the node's
 * door-status.html (docs/architecture.md#the-editor-where-a-node-lives-and-how-it-is-built).
 */
import { preselectAccount, preselectAccountInDialog } from "../../common/editor/account.js";
import {
  type DoorNode,
  closePicker,
  doorLabel,
  doorPicker,
  isDeviceIdValue,
  savePickedDoor,
} from "../../common/editor/door-picker.js";
import { nodeTranslator } from "../../common/editor/i18n.js";

interface DoorStatusNode extends DoorNode {
  name?: string;
}

const tr = nodeTranslator("door-status");

RED.nodes.registerType<DoorStatusNode>("door-status", {
  category: "door access",
  color: "#9BC4E2",
  defaults: {
    name: { value: "" },
    account: { value: "", type: "door-account", required: true },
    deviceId: {
      value: "",
      validate(v, _opt) {
        return isDeviceIdValue(v) ? true : tr("errors.invalid-device-id");
      },
    },
    doorName: { value: "" },
    doorLocation: { value: "" },
  },
  inputs: 1,
  outputs: 1,
  icon: "door-status.svg",
  paletteLabel() {
    return tr("paletteLabel");
  },
  label() {
    return this.name || doorLabel(this, tr) || tr("label.default");
  },
  labelStyle() {
    return this.name ? "node_label_italic" : "";
  },
  onadd() {
    preselectAccount(this);
  },
  oneditprepare() {
    preselectAccountInDialog(this);
    this._doorPicker = doorPicker(this, "door-status", tr, () => {});
  },
  oneditsave() {
    savePickedDoor(this);
  },
  oneditcancel() {
    closePicker(this);
  },
});
