/**
 * The "Access rules" section of the door-unlock dialog (docs/access-rules.md): the allowed
 * actors as an editable list, the weekly schedule as a weekday grid with from/to times per
 * window, the time zone from the browser's list, the cooldown in seconds and the PIN (a
 * Node-RED password credential that the dialog never shows), plus the checks the node's
 * `defaults` validate with.
 *
 * The checks are the runtime's own reading of the rules (src/unlock/access-config.ts, bundled
 * into this editor: docs/access-rules.md#configuration-errors), so a rule the runtime cannot read
 * is flagged here and nothing else is. They return a problem key (fixed text in the node's
 * catalogue), never text made from the value: the editor shows a validator's answer as HTML
 * (docs/security.md#text-in-the-editor-and-the-dashboard). Everything the section puts in the
 * page is set with .text(), .val() or .attr().
 */
import {
  type AccessProblemKey,
  MAX_PATTERN_LENGTH,
  cooldownValue,
  fieldProblem,
  isTimeOfDay,
} from "../../../src/unlock/access-config.js";
import { textOf } from "../../../src/util/text.js";
import { STORED } from "../../common/editor/credentials.js";
import type { Translate } from "../../common/editor/door-picker.js";
import type { EditorNode } from "../../common/editor/red.js";

const DAY_KEYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]; // ISO 1 .. 7

/** The rule properties of a door-unlock node, as the editor holds them. */
export interface RulesNode extends EditorNode {
  allowActors?: unknown;
  schedule?: unknown;
  timeZone?: unknown;
  cooldown?: unknown;
  /** The mark that a PIN was set (docs/access-rules.md#a-copied-node-and-its-pin); never the PIN. */
  pinSet?: unknown;
}

/** A schedule window as the dialog reads it from its row. */
interface WindowRow {
  days: number[];
  from: string;
  to: string;
}

// ---- checks (null = fine, else a problem key): the runtime's reading, field by field --------

export const actorsProblem = (v: unknown): AccessProblemKey | null => fieldProblem("allowActors", v);
export const scheduleProblem = (v: unknown): AccessProblemKey | null => fieldProblem("schedule", v);
export const zoneProblem = (v: unknown): AccessProblemKey | null => fieldProblem("timeZone", v);
export const cooldownProblem = (v: unknown): AccessProblemKey | null => fieldProblem("cooldown", v);

/** The PIN field's value: empty (no PIN / keep), the stored placeholder, or what the runtime reads as a PIN. */
export function pinProblem(v: unknown): AccessProblemKey | null {
  return v === STORED ? null : fieldProblem("pin", v);
}

function windowProblem(w: WindowRow): AccessProblemKey | null {
  return fieldProblem("schedule", [w]);
}

// ---- whether a node has a PIN (for its label) ---------------------------------------------

// The editor is never sent a PIN, only whether one is stored (`has_pin`); it is asked once per
// node (the same request the dialog makes) and remembered here, since Node-RED drops a node's
// credentials from the editor at every deploy.
const pinKnown = new Map<string, boolean>();
const pinAsked = new Set<string>();

function pinFromCredentials(node: EditorNode): boolean | undefined {
  const c = node.credentials;
  if (!c) return undefined;
  if (typeof c.pin === "string") return c.pin !== "";
  if (typeof c.has_pin === "boolean") return c.has_pin;
  return undefined;
}

export function hasPin(node: EditorNode): boolean {
  const local = pinFromCredentials(node);
  if (local !== undefined) return local;
  const known = pinKnown.get(node.id);
  if (known !== undefined) return known;
  if (!pinAsked.has(node.id) && typeof $ !== "undefined" && node.id) {
    pinAsked.add(node.id);
    const id = node.id;
    $.ajax({ url: `credentials/door-unlock/${encodeURIComponent(id)}`, dataType: "json", cache: false })
      .done((data: { has_pin?: unknown } | null) => {
        const has = !!(data && data.has_pin === true);
        if (!pinKnown.has(id)) pinKnown.set(id, has);
        const n = RED.nodes.node(id);
        if (has && n) {
          n.dirty = true;
          RED.view.redraw();
        }
      })
      .fail(() => {
        // Not allowed to ask (no credentials.read), or no answer: the label says nothing
        // of a PIN, and is not asked again (the label is drawn often).
      });
  }
  return false;
}

function setPinKnown(id: string, has: boolean): void {
  pinKnown.set(id, has);
  pinAsked.add(id);
}

/** Whether any rule is set on the node (its label says so). */
export function hasRules(node: RulesNode): boolean {
  if (Array.isArray(node.allowActors) && node.allowActors.length > 0) return true;
  if (Array.isArray(node.schedule) && node.schedule.length > 0) return true;
  const c = cooldownValue(node.cooldown);
  if (c === null || c > 0) return true;
  if (actorsProblem(node.allowActors) || scheduleProblem(node.schedule)) return true;
  return node.pinSet === true || hasPin(node);
}

// ---- the time zones -----------------------------------------------------------------------

function zoneNames(): string[] {
  try {
    if (typeof Intl.supportedValuesOf === "function") return Intl.supportedValuesOf("timeZone").slice();
  } catch {
    /* an old browser: the stored zone and UTC only */
  }
  return ["UTC"];
}

// ---- the dialog section -------------------------------------------------------------------

function readWindow(row: JQuery): WindowRow {
  const days: number[] = [];
  row.find(".door-unlock-day").each(function () {
    if ($(this).prop("checked")) days.push(Number($(this).val()));
  });
  return {
    days,
    from: String(row.find(".door-unlock-from").val() || ""),
    to: String(row.find(".door-unlock-to").val() || ""),
  };
}

/** What oneditsave learns of the section. */
export interface RulesSection {
  /** Writes the rules onto the node; pinInvalid: a PIN was typed that the runtime will refuse. */
  save(node: RulesNode): { pinInvalid: boolean };
}

/**
 * Fills the section of the dialog (the elements of the template, editor/template.html) from the
 * node, and returns { save(node) } for oneditsave. `t(key, opts)` is the node's RED._ for keys
 * under "door-unlock.rules.".
 */
export function rulesSection(node: RulesNode, t: Translate): RulesSection {
  const actorsList = $("#door-unlock-actors");
  const scheduleList = $("#door-unlock-schedule");
  const zoneSel = $("#door-unlock-timeZone");
  const cooldownInput = $("#door-unlock-cooldown");
  const pinInput = $("#node-input-pin");
  const pinState = $("#door-unlock-pin-state");
  const pinRemove = $("#door-unlock-pin-remove");

  // ---- actors: one per row
  actorsList.editableList<{ actor?: unknown }>({
    addButton: t("add-actor"),
    height: "auto",
    removable: true,
    sortable: false,
    scrollOnAdd: false,
    addItem(row, _index, data) {
      const input = $('<input type="text" class="door-unlock-actor" style="width: 100%; box-sizing: border-box;">')
        .attr("placeholder", t("actor-placeholder"))
        .attr("maxlength", String(MAX_PATTERN_LENGTH + 20))
        .val(typeof data.actor === "string" ? data.actor : "")
        .appendTo(row);
      function check(): void {
        const v = String(input.val() || "").trim();
        input.toggleClass("input-error", v !== "" && actorsProblem([v]) !== null);
      }
      input.on("change keyup paste", check);
      check();
    },
  });
  (Array.isArray(node.allowActors) ? (node.allowActors as unknown[]) : []).forEach((a) => {
    actorsList.editableList("addItem", { actor: typeof a === "string" ? a : String(a) });
  });

  // ---- schedule: a weekday grid with from/to per window
  function windowRow(row: JQuery, data: { days?: unknown; from?: unknown; to?: unknown }): void {
    row.addClass("door-unlock-window");
    const days = $('<div class="door-unlock-days"></div>').appendTo(row);
    const chosen: unknown[] = Array.isArray(data.days) ? (data.days as unknown[]) : [];
    DAY_KEYS.forEach((k, i) => {
      const label = $('<label class="door-unlock-day-label"></label>').appendTo(days);
      $('<input type="checkbox" class="door-unlock-day">')
        .val(String(i + 1))
        .prop("checked", chosen.indexOf(i + 1) !== -1)
        .appendTo(label);
      $("<span></span>")
        .text(t(`day.${k}`))
        .appendTo(label);
    });
    const times = $('<div class="door-unlock-times"></div>').appendTo(row);
    $('<span class="door-unlock-time-label"></span>').text(t("from")).appendTo(times);
    // 24-hour text fields, as the rules are written (a browser's time picker follows its
    // locale's 12-hour clock): "7:30" is taken as 07:30 when the field is left.
    const timeField = (cls: string, value: string) =>
      $(`<input type="text" class="door-unlock-time ${cls}" inputmode="numeric" maxlength="5" autocomplete="off">`)
        .attr("placeholder", "HH:MM")
        .val(value)
        .on("change", function () {
          const v = String($(this).val() ?? "").trim();
          if (/^[0-9]:[0-5][0-9]$/.test(v)) $(this).val(`0${v}`);
        });
    const from = timeField("door-unlock-from", typeof data.from === "string" ? data.from : "").appendTo(times);
    $('<span class="door-unlock-time-label"></span>').text(t("to")).appendTo(times);
    const to = timeField(
      "door-unlock-to",
      typeof data.to === "string" ? (data.to === "24:00" ? "00:00" : data.to) : "",
    ).appendTo(times);
    const hint = $('<div class="door-unlock-window-hint"></div>').appendTo(row);
    function check(): void {
      const w = readWindow(row);
      const p = windowProblem(w);
      days.toggleClass("input-error", p === "schedule-days");
      from.toggleClass("input-error", !isTimeOfDay(w.from) || p === "schedule-length");
      to.toggleClass("input-error", !isTimeOfDay(w.to) || p === "schedule-length");
      if (p === "schedule-days") {
        hint.text(t("hint-days"));
      } else if (p) {
        hint.text(t(p === "schedule-length" ? "hint-length" : "hint-times"));
      } else if (w.from === "00:00" && w.to === "00:00") {
        hint.text(t("hint-whole-day"));
      } else if (w.to === "00:00") {
        hint.text(t("hint-midnight"));
      } else if (w.to < w.from) {
        hint.text(t("hint-overnight", { to: w.to }));
      } else {
        hint.text("");
      }
      hint.toggleClass("door-unlock-window-problem", !!p);
    }
    row.on("change input", "input", check);
    check();
  }
  scheduleList.editableList<{ days?: unknown; from?: unknown; to?: unknown }>({
    addButton: t("add-window"),
    height: "auto",
    removable: true,
    sortable: false,
    scrollOnAdd: false,
    addItem(row, _index, data) {
      windowRow(row, data);
    },
  });
  (Array.isArray(node.schedule) ? (node.schedule as unknown[]) : []).forEach((w) => {
    scheduleList.editableList("addItem", w && typeof w === "object" ? w : {});
  });

  // ---- time zone: the browser's list; empty = the runtime's zone
  const stored = typeof node.timeZone === "string" ? node.timeZone : "";
  $("<option>").val("").text(t("runtime-zone")).appendTo(zoneSel);
  const names = zoneNames();
  if (stored !== "" && names.indexOf(stored) === -1) {
    $("<option>")
      .val(stored)
      .text(t("zone-not-listed", { zone: stored }))
      .appendTo(zoneSel);
  }
  names.forEach((z) => {
    $("<option>").val(z).text(z).appendTo(zoneSel);
  });
  zoneSel.val(stored);
  function checkZone(): void {
    zoneSel.toggleClass("input-error", zoneProblem(zoneSel.val()) !== null);
  }
  zoneSel.on("change", checkZone);
  checkZone();

  // ---- cooldown (seconds)
  const cooldown = node.cooldown;
  cooldownInput.val(textOf(cooldown === undefined || cooldown === null || cooldown === "" ? "0" : cooldown));
  function checkCooldown(): void {
    cooldownInput.toggleClass("input-error", cooldownProblem(String(cooldownInput.val()).trim()) !== null);
  }
  cooldownInput.on("change keyup input", checkCooldown);
  checkCooldown();

  // ---- PIN: never shown. Node-RED fills the field before this runs: STORED for a stored PIN,
  // or the digits typed since the last deploy; both are taken out of the page.
  const initial = String(pinInput.val() || "");
  const hadPin = initial !== "";
  // A runtime that answered nothing about the PIN (a node never deployed, or a runtime that
  // does not know the credential) has none: recorded as Node-RED records "none stored", so
  // that an untouched empty field sends no credential at the next deploy.
  const c = node.credentials;
  if (c && typeof c.pin !== "string" && c.has_pin === undefined) {
    c.has_pin = false;
    if (c._ && c._.has_pin === undefined) c._.has_pin = false;
  }
  // A node marked pinSet without a stored PIN is a copy or an import (Node-RED never copies
  // credentials): the runtime refuses every message until a PIN is entered again, and the
  // mark stays unless "Remove PIN" is pressed (docs/access-rules.md#a-copied-node-and-its-pin).
  const pinLost = node.pinSet === true && !hadPin;
  let removing = false;
  pinInput.val("");
  function showPin(): void {
    const typed = String(pinInput.val() || "");
    pinInput.attr("placeholder", hadPin && !removing ? t("pin-placeholder-stored") : t("pin-placeholder-none"));
    let state: string;
    if (typed !== "") {
      state = pinProblem(typed) ? t("pin-invalid") : hadPin ? t("pin-replace") : t("pin-new");
    } else if (removing) {
      state = t("pin-removing");
    } else if (pinLost) {
      state = t("pin-missing");
    } else {
      state = hadPin ? t("pin-stored") : t("pin-none");
    }
    const problem = typed !== "" ? pinProblem(typed) !== null : pinLost && !removing;
    pinState.text(state).toggleClass("door-unlock-pin-problem", problem);
    pinRemove.toggle((hadPin || pinLost) && !removing);
  }
  pinInput.on("change keyup input paste", () => {
    if (String(pinInput.val() || "") !== "") removing = false;
    showPin();
  });
  pinRemove.on("click", (evt) => {
    evt.preventDefault();
    removing = true;
    pinInput.val("");
    showPin();
  });
  showPin();

  return {
    save(n) {
      const actors: string[] = [];
      actorsList.editableList("items").each(function () {
        const v = String($(this).find(".door-unlock-actor").val() || "").trim();
        if (v !== "") actors.push(v);
      });
      n.allowActors = actors;
      const windows: WindowRow[] = [];
      scheduleList.editableList("items").each(function () {
        const w = readWindow($(this));
        // A row left as added (no day, no time) is no window; anything else is kept as
        // entered, so that a window that cannot be read is flagged, never dropped.
        if (w.days.length === 0 && w.from === "" && w.to === "") return;
        windows.push(w);
      });
      n.schedule = windows;
      n.timeZone = String(zoneSel.val() || "");
      const typedCooldown = String(cooldownInput.val() || "").trim();
      // Whole seconds as a number; anything else is kept as typed, so that the node shows it as invalid.
      n.cooldown =
        typedCooldown === ""
          ? 0
          : /^[0-9]+$/.test(typedCooldown)
            ? (cooldownValue(typedCooldown) ?? typedCooldown)
            : typedCooldown;
      // The PIN: a typed value is saved as typed (one that is not 4 to 12 digits too: the
      // runtime then refuses every message until it is corrected, and the caller says so);
      // an empty field keeps what was there unless "Remove PIN" was pressed.
      const typed = String(pinInput.val() || "");
      if (typed === "" && hadPin && !removing) pinInput.val(initial);
      const after = typed !== "" || (hadPin && !removing);
      setPinKnown(n.id, after);
      // The mark the flow file keeps (never the PIN): set while a PIN is, or was and is lost.
      n.pinSet = after || (pinLost && !removing);
      return { pinInvalid: typed !== "" && pinProblem(typed) !== null };
    },
  };
}
