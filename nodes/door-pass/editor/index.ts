/**
 * door-pass in the editor: its definition (RED.nodes.registerType) and its dialog
 * (editor/template.html): the account and the length of the codes it issues
 * (docs/passes.md#the-node), and the booking calendar, whose doors are picked from the account's
 * list with the door picker door-unlock uses (docs/nodes.md#door-pass). The checks are the
 * runtime's own (src/passes/pass.ts, src/passes/calendar-settings.ts).
 *
 * The build (scripts/editor-build.ts) bundles this file into the node's door-pass.html
 * (docs/architecture.md#the-editor-where-a-node-lives-and-how-it-is-built).
 */
import { DEFAULT_CODE_LENGTH, codeLengthOf } from "../../../src/passes/pass-limits.js";
import { DEFAULT_BLOCKED, calendarDoors, checkCalendarSettings } from "../../../src/passes/calendar-settings.js";
import { textOf } from "../../../src/util/text.js";
import { type DoorNode, type DoorPicker, doorPicker } from "../../common/editor/door-picker.js";
import { preselectAccount, preselectAccountInDialog } from "../../common/editor/account.js";
import type { EditorNode } from "../../common/editor/red.js";
import { nodeTranslator } from "../../common/editor/i18n.js";

interface DoorPassNode extends EditorNode {
  name?: string;
  account?: string;
  codeLength?: number | string;
  calendarUrl?: string;
  calendarEvery?: number | string;
  /** Device ids picked in the dialog, or door names (a node written by hand: also a comma-separated text). */
  doors?: (number | string)[] | string;
  checkIn?: string;
  checkOut?: string;
  timeZone?: string;
  bufferBefore?: number | string;
  bufferAfter?: number | string;
  blocked?: string;
  placeholderGuest?: string;
  /** While the dialog is open: its door picker and the doors it keeps. */
  _passDoors?: { picker: DoorPicker; items: (number | string)[] };
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
      value: [],
      validate(v, _opt) {
        const url = (this as unknown as { calendarUrl?: unknown }).calendarUrl;
        const needs = typeof url === "string" && url.trim() !== "";
        return !needs || calendarDoors(v).length > 0 ? true : tr("errors.doors");
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
    prepareDoors(this);
    // docs/passes.md#no-code-goes-nowhere: a calendar node whose output reaches nothing issues no pass.
    const unwired = RED.nodes.filterLinks({ source: this }).length === 0;
    const showTip = () => {
      const url = String($("#node-input-calendarUrl").val() ?? "").trim();
      $("#door-pass-unwired").toggle(unwired && url !== "");
    };
    $("#node-input-calendarUrl").on("input change", showTip);
    showTip();
  },
  oneditsave() {
    const kept = this._passDoors;
    if (kept) this.doors = kept.items.slice();
    closeDoors(this);
  },
  oneditcancel() {
    closeDoors(this);
  },
});

/**
 * The calendar's doors in the dialog: the door picker lists the account's doors (as in door-unlock,
 * docs/doors.md#picking-a-door-in-the-editor), *Add* keeps the picked one (by id), each kept door
 * has *Remove*. Names come from the list, set as text.
 */
function prepareDoors(node: DoorPassNode): void {
  const items = calendarDoors(node.doors);
  const list = $("#door-pass-doors");
  const scratch = { account: node.account, deviceId: "", doorName: "", doorLocation: "" } as DoorNode;
  let picker: DoorPicker | null = null;
  const labelOf = (item: number | string): string => {
    if (typeof item === "string") return textOf(item);
    const d = picker?.devices().find((x) => x.id === item);
    if (!d) return tr("picker.unnamed", { id: item });
    const name = d.name ? textOf(d.name) : tr("picker.unnamed", { id: item });
    return d.locationName ? `${name} \u2014 ${textOf(d.locationName)}` : name;
  };
  const render = (): void => {
    list.empty();
    if (items.length === 0) $("<li>").addClass("door-pass-no-doors").text(tr("picker.no-doors")).appendTo(list);
    items.forEach((item, i) => {
      const li = $("<li>").addClass("door-pass-kept-door").css("margin", "2px 0").appendTo(list);
      $("<span>").text(labelOf(item)).appendTo(li);
      $('<button type="button" class="red-ui-button red-ui-button-small" style="margin-left: 8px;"></button>')
        .text(tr("picker.remove"))
        .appendTo(li)
        .on("click", (evt) => {
          evt.preventDefault();
          items.splice(i, 1);
          render();
        });
    });
  };
  picker = doorPicker(scratch, "door-pass", tr, () => render());
  $("#door-pass-door-add").on("click", (evt) => {
    evt.preventDefault();
    const door = picker?.value();
    if (!door || door.deviceId === "") return;
    if (!items.includes(door.deviceId)) items.push(door.deviceId);
    render();
  });
  node._passDoors = { picker, items };
  render();
}

function closeDoors(node: DoorPassNode): void {
  node._passDoors?.picker.close();
  delete node._passDoors;
}
