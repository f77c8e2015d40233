/**
 * door-pass in the editor: its definition (RED.nodes.registerType) and its dialog
 * (editor/template.html): the account and the length of the codes it issues
 * (docs/passes.md#the-node). The runtime (door-pass.ts) reads exactly these properties: name,
 * account, codeLength; the range is the runtime's own (src/passes/pass.ts).
 *
 * The build (scripts/editor-build.ts) bundles this file into the node's door-pass.html
 * (docs/architecture.md#the-editor-where-a-node-lives-and-how-it-is-built).
 */
import { DEFAULT_CODE_LENGTH, codeLengthOf } from "../../../src/passes/pass-limits.js";
import { DEFAULT_BLOCKED, checkCalendarSettings } from "../../../src/passes/calendar-settings.js";
import { preselectAccount, preselectAccountInDialog } from "../../shared/editor/account.js";
import type { EditorNode } from "../../shared/editor/red.js";
import { nodeTranslator } from "../../shared/editor/i18n.js";

interface DoorPassNode extends EditorNode {
  name?: string;
  account?: string;
  codeLength?: number | string;
  calendarUrl?: string;
  calendarEvery?: number | string;
  doors?: string;
  checkIn?: string;
  checkOut?: string;
  timeZone?: string;
  bufferBefore?: number | string;
  bufferAfter?: number | string;
  blocked?: string;
  placeholderGuest?: string;
}

/** The problem the runtime would report for this calendar field (its own check), or true. */
function calendarField(node: Record<string, unknown>, field: string, value: unknown): true | string {
  const checked = checkCalendarSettings({ ...node, [field]: value });
  if (checked.ok) return true;
  const mine = checked.problems.find((p) => p.startsWith(`${field}:`));
  return mine ?? true;
}

const tr = nodeTranslator("door-pass");

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
    // The booking calendar (docs/passes.md#from-a-booking-calendar), checked by the runtime's own rules.
    calendarUrl: {
      value: "",
      validate(v, _opt) {
        return calendarField(this as unknown as Record<string, unknown>, "calendarUrl", v);
      },
    },
    calendarEvery: {
      value: 15,
      validate(v, _opt) {
        return calendarField(this as unknown as Record<string, unknown>, "calendarEvery", v);
      },
    },
    doors: {
      value: "",
      validate(v, _opt) {
        const url = (this as unknown as { calendarUrl?: unknown }).calendarUrl;
        const needs = typeof url === "string" && url.trim() !== "";
        return !needs || (typeof v === "string" && v.trim() !== "") ? true : tr("errors.doors");
      },
    },
    checkIn: {
      value: "15:00",
      validate(v, _opt) {
        return calendarField(this as unknown as Record<string, unknown>, "checkIn", v);
      },
    },
    checkOut: {
      value: "11:00",
      validate(v, _opt) {
        return calendarField(this as unknown as Record<string, unknown>, "checkOut", v);
      },
    },
    timeZone: {
      value: "",
      validate(v, _opt) {
        return calendarField(this as unknown as Record<string, unknown>, "timeZone", v);
      },
    },
    bufferBefore: {
      value: 0,
      validate(v, _opt) {
        return calendarField(this as unknown as Record<string, unknown>, "bufferBefore", v);
      },
    },
    bufferAfter: {
      value: 0,
      validate(v, _opt) {
        return calendarField(this as unknown as Record<string, unknown>, "bufferAfter", v);
      },
    },
    // docs/passes.md#blocked-time-and-placeholder-names: blocked time is no booking (one summary a line).
    blocked: {
      value: DEFAULT_BLOCKED.join("\n"),
      validate(v, _opt) {
        return calendarField(this as unknown as Record<string, unknown>, "blocked", v);
      },
    },
    placeholderGuest: {
      value: "",
      validate(v, _opt) {
        return calendarField(this as unknown as Record<string, unknown>, "placeholderGuest", v);
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
    // docs/passes.md#no-code-goes-nowhere: a calendar node whose output reaches nothing issues no pass.
    const unwired = RED.nodes.filterLinks({ source: this }).length === 0;
    const showTip = () => {
      const url = String($("#node-input-calendarUrl").val() ?? "").trim();
      $("#door-pass-unwired").toggle(unwired && url !== "");
    };
    $("#node-input-calendarUrl").on("input change", showTip);
    showTip();
  },
});
