/**
 * The door picker of the door-status and door-unlock dialogs (docs/doors.md#picking-a-door-in-the-editor)
 * and the door-id helpers of their definitions. Every text from the runtime or the service goes in
 * as text (nodes/common/editor/text.ts).
 */
import { storedDeviceId } from "../../../src/doors/ids.js";
import { textOf } from "../../../src/util/text.js";
import { STORED } from "./credentials.js";
import type { Translate } from "./i18n.js";
import type { EditorNode } from "./red.js";
import { adminError } from "./text.js";

/** A node's catalogue lookup for keys under its own "<type>." (e.g. "picker.none"). */
export type { Translate } from "./i18n.js";

/** A door as a node stores it. deviceId "" = stored by name only. */
export interface DoorIdentity {
  deviceId: number | "";
  doorName: string;
  doorLocation: string;
}

/** A device as the admin endpoint lists it. */
export interface PickerDevice {
  id: number;
  name?: string;
  locationName?: string;
  online?: boolean;
  locks?: { id?: unknown; name?: string }[];
  lockCount?: number;
}

/** What a door node keeps of its door, and its open picker while the dialog is open. */
export interface DoorNode extends EditorNode {
  account?: string;
  deviceId?: unknown;
  doorName?: unknown;
  doorLocation?: unknown;
  _doorPicker?: DoorPicker;
}

export interface DoorPicker {
  value(): DoorIdentity | null;
  /** The doors of the list as last loaded (none before it is): for a dialog that keeps several. */
  devices(): readonly PickerDevice[];
  close(): void;
}

/** The body the list requests send: the account as edited (deployed or not). */
interface EditedAccount {
  baseUrl: string;
  loginMethod: string;
  phoneNumber: string;
  email: string;
  password?: string;
  sessionStore: string;
  redisUrl: string;
  redisKeyPrefix: string;
  redisPassword?: string;
}

/**
 * What the editor knows of a door-account config node: its settings and the credentials typed
 * since the last deploy (Node-RED keeps them on the node until it deploys). A password-type
 * credential the editor was never shown is sent as STORED.
 */
function editedAccount(id: string): EditedAccount {
  const n: Record<string, unknown> = RED.nodes.node(id) ?? {};
  const c = (n.credentials ?? {}) as Record<string, unknown>;
  const text = (v: unknown, fallback: string): string => (typeof v === "string" && v !== "" ? v : fallback);
  function secret(name: string): string {
    if (typeof c[name] === "string" && c[name] !== "") return c[name];
    return c[`has_${name}`] ? STORED : "";
  }
  return {
    baseUrl: text(n.baseUrl, ""),
    loginMethod: text(n.loginMethod, "phone"),
    phoneNumber: secret("phoneNumber"),
    email: secret("email"),
    password: secret("password"),
    sessionStore: text(n.sessionStore, "file"),
    redisUrl: text(n.redisUrl, ""),
    redisKeyPrefix: text(n.redisKeyPrefix, ""),
    redisPassword: secret("redisPassword"),
  };
}

/** The list endpoint's answer. */
interface DeviceList {
  devices?: unknown;
  throttled?: boolean;
  ageSeconds?: number;
  retryInSeconds?: number;
}

/**
 * Lists the account's doors from the runtime's admin endpoint and keeps the chosen door as
 * { deviceId, doorName, doorLocation }. A door that the list no longer shows is kept and marked,
 * never replaced by another one. The dialog's elements are `#<prefix>-door`, `-door-note`,
 * `-door-detail`, `-door-refresh` and `-door-kept`; `onDevice` hears of each door shown or picked
 * (null: none, or one the list does not show) and whether the user changed it.
 */
export function doorPicker(
  node: DoorNode,
  prefix: string,
  t: Translate,
  onDevice: (device: PickerDevice | null, changedByUser: boolean) => void,
): DoorPicker {
  const sel = $(`#${prefix}-door`);
  const note = $(`#${prefix}-door-note`);
  const detail = $(`#${prefix}-door-detail`);
  const refreshBtn = $(`#${prefix}-door-refresh`);
  // Offered under a kept door that the service now calls by another name: take that name.
  const renameBtn = $('<div style="margin: 4px 0;"></div>').hide().insertAfter(detail);
  $(`<button type="button" id="${prefix}-door-rename" class="red-ui-button red-ui-button-small"></button>`)
    .text(t("picker.take-new-name"))
    .appendTo(renameBtn)
    .on("click", (evt) => {
      evt.preventDefault();
      const i = renamedIndex();
      if (i !== -1) sel.val(`dev:${i}`).trigger("change");
    });
  const accountSel = $("#node-input-account");
  let devices: PickerDevice[] = [];
  let loaded = false;
  let lastAccount: string | null = null;
  let seq = 0;
  let closed = false;
  let current = identityOf(node.deviceId, node.doorName, node.doorLocation);

  function identityOf(deviceId: unknown, doorName: unknown, doorLocation: unknown): DoorIdentity | null {
    const id = toDeviceId(deviceId);
    const name = textOf(doorName ?? "");
    const loc = textOf(doorLocation ?? "");
    if (id === "" && name === "") return null;
    return { deviceId: id, doorName: name, doorLocation: loc };
  }
  function deviceIdentity(d: PickerDevice): DoorIdentity {
    return identityOf(d.id, d.name || "", d.locationName || "") as DoorIdentity;
  }
  // What the select shows: the door's name and location only, so that the chosen door fits
  // the select at the dialog's default width (docs/doors.md#picking-a-door-in-the-editor);
  // its online state, locks and id are in the line under the select (detailText). The id
  // is added only to tell apart doors of the same name at the same location.
  function doorText(door: DoorIdentity): string {
    const name = door.doorName || t("picker.unnamed", { id: door.deviceId });
    return door.doorLocation ? `${name} \u2014 ${door.doorLocation}` : name;
  }
  function optionText(d: PickerDevice): string {
    const text = doorText(deviceIdentity(d));
    const twins = devices.filter(
      (o) => (o.name || "") === (d.name || "") && (o.locationName || "") === (d.locationName || ""),
    );
    return twins.length > 1 ? `${text} \u00b7 ${t("picker.id", { id: d.id })}` : text;
  }
  function detailText(d: PickerDevice): string {
    const parts: string[] = [];
    if (d.online === true) parts.push(t("picker.online"));
    else if (d.online === false) parts.push(t("picker.offline"));
    else parts.push(t("picker.online-unknown"));
    const locks = lockCountOf(d);
    if (locks === 1) parts.push(t("picker.lock-one"));
    else if (locks > 1) parts.push(t("picker.lock-many", { count: locks }));
    parts.push(t("picker.id", { id: d.id }));
    return parts.join(" \u00b7 ");
  }
  function pickedIndex(v: unknown): number {
    return typeof v === "string" && v.indexOf("dev:") === 0 ? Number(v.slice(4)) : -1;
  }
  // The line under the select: the chosen door's online state, locks and id; for a kept door
  // that the list does not show, its id and that it is not in the list.
  function showDetail(): void {
    const v = sel.val();
    const picked = devices[pickedIndex(v)];
    let text = "";
    if (picked) {
      text = detailText(picked);
    } else if (v === "kept" && current) {
      const parts: string[] = [];
      if (current.deviceId !== "") parts.push(t("picker.id", { id: current.deviceId }));
      const renamed = renamedIndex();
      if (renamed !== -1) parts.push(t("picker.renamed", { name: doorText(deviceIdentity(devices[renamed])) }));
      else if (loaded) parts.push(t("picker.not-in-list"));
      text = parts.join(" \u00b7 ");
    }
    detail.text(text).toggle(text !== "");
    renameBtn.toggle(v === "kept" && renamedIndex() !== -1);
    // The whole text on hover, should a long door name still be cut.
    sel.attr("title", sel.find("option:selected").text() || "");
  }
  // Index of the device that is the kept door, or -1. The id and the identity must agree; a door
  // stored by id only (or by name only) matches on what it has.
  function findCurrent(): number {
    if (!current) return -1;
    const door = current;
    const sameName = (o: PickerDevice): boolean =>
      (o.name || "") === door.doorName && (door.doorLocation === "" || (o.locationName || "") === door.doorLocation);
    for (let i = 0; i < devices.length; i++) {
      const d = devices[i];
      if (door.deviceId !== "" && d.id !== door.deviceId) continue;
      if (door.doorName === "" && door.deviceId !== "") return i;
      if (sameName(d)) {
        if (door.deviceId !== "") return i;
        // Stored by name only: take it only when the name is unique.
        return devices.filter(sameName).length === 1 ? i : -1;
      }
    }
    return -1;
  }
  /**
   * The device with the kept door's id when its name (or location) at the service is another one:
   * the door was renamed (docs/doors.md#picking-a-door-in-the-editor). -1 when not.
   */
  function renamedIndex(): number {
    if (!current || current.deviceId === "" || findCurrent() !== -1) return -1;
    const id = current.deviceId;
    return devices.findIndex((d) => d.id === id);
  }
  function render(): void {
    sel.empty();
    $("<option>").val("none").text(t("picker.none")).appendTo(sel);
    const match = findCurrent();
    if (current && match === -1) $("<option>").val("kept").text(doorText(current)).appendTo(sel);
    devices.forEach((d, i) => {
      $("<option>").val(`dev:${i}`).text(optionText(d)).appendTo(sel);
    });
    if (!current) {
      sel.val("none");
    } else if (match === -1) {
      sel.val("kept");
    } else {
      // Fill in what a door stored by id only (or name only) lacked.
      current = deviceIdentity(devices[match]);
      sel.val(`dev:${match}`);
    }
    $(`#${prefix}-door-kept`).toggle(loaded && !!current && match === -1 && renamedIndex() === -1);
    showDetail();
    onDevice(match === -1 ? null : devices[match], false);
  }
  function setNote(text: string, level?: "error" | "warn" | ""): void {
    note.text(text || "");
    note.css(
      "color",
      level === "error"
        ? "var(--red-ui-text-color-error, #c00)"
        : level === "warn"
          ? "var(--red-ui-text-color-warning, #b85c00)"
          : "",
    );
    note.toggle(!!text);
  }
  function errorText(xhr: JQuery.jqXHR): string {
    const error = adminError(xhr);
    if (error !== null) return error;
    if (xhr.statusText === "timeout") return t("picker.timeout");
    return (xhr.status ? `${xhr.status} ` : "") + (xhr.statusText || "");
  }
  function accountId(): string {
    let a = accountSel.val();
    if (a == null) a = node.account;
    return typeof a === "string" && a !== "" && a !== "_ADD_" ? a : "";
  }
  function load(refresh: boolean): void {
    const account = accountId();
    const mine = ++seq;
    lastAccount = account;
    devices = [];
    loaded = false;
    if (!account) {
      render();
      setNote(t("picker.no-account"), "warn");
      refreshBtn.prop("disabled", true);
      return;
    }
    render();
    setNote(t("picker.loading"));
    refreshBtn.prop("disabled", true);
    // The account as edited (deployed or not): its base URL and login go in a POST
    // body, so the runtime finds a running session of the same login; a credential the
    // editor was never shown stays STORED and the runtime uses the deployed one.
    const body = editedAccount(account);
    delete body.password; // a list needs no password: only the running session's login
    delete body.redisPassword;
    // The list the runtime holds (door-account.read), or Refresh: fetched again from the
    // service (door-account.write). A POST is taken only as JSON with this header.
    $.ajax({
      url: `door-access/accounts/${encodeURIComponent(account)}/devices${refresh ? "/refresh" : ""}`,
      method: "POST",
      headers: { "X-Requested-With": "XMLHttpRequest" },
      contentType: "application/json",
      data: JSON.stringify(body),
      dataType: "json",
      cache: false,
      timeout: 30000,
    })
      .done((answer: DeviceList | null) => {
        if (closed || mine !== seq) return;
        const list: unknown[] = answer && Array.isArray(answer.devices) ? (answer.devices as unknown[]) : [];
        devices = list
          .filter((d): d is PickerDevice => {
            const id = d && typeof d === "object" ? (d as { id?: unknown }).id : undefined;
            return typeof id === "number" && Math.floor(id) === id;
          })
          .sort((a, b) => {
            const la = String(a.locationName || "");
            const lb = String(b.locationName || "");
            if (la !== lb) return la.localeCompare(lb);
            return String(a.name || "").localeCompare(String(b.name || "")) || a.id - b.id;
          });
        loaded = true;
        render();
        let text = devices.length ? t("picker.loaded", { count: devices.length }) : t("picker.empty");
        if (answer && answer.throttled === true) {
          text += ` ${t("picker.cached", { age: answer.ageSeconds, retry: answer.retryInSeconds })}`;
        }
        setNote(text, devices.length ? "" : "warn");
      })
      .fail((xhr: JQuery.jqXHR) => {
        if (closed || mine !== seq) return;
        render();
        const answer = (xhr.responseJSON || null) as { signIn?: unknown; refresh?: unknown; state?: unknown } | null;
        if (xhr.status === 503 && answer && answer.signIn === true) {
          setNote(t("picker.sign-in-first"), "warn");
        } else if (xhr.status === 503 && answer && (answer.refresh === true || answer.state)) {
          setNote(t("picker.error", { error: errorText(xhr) }), "warn");
        } else if (xhr.status === 404 || xhr.status === 503) {
          setNote(t("picker.not-deployed"), "warn");
        } else {
          setNote(t("picker.error", { error: errorText(xhr) }), "error");
        }
      })
      .always(() => {
        if (closed || mine !== seq) return;
        refreshBtn.prop("disabled", false);
      });
  }

  sel.on("change", () => {
    const v = sel.val();
    const before = current;
    let device: PickerDevice | null = null;
    if (v === "none") {
      current = null;
    } else if (pickedIndex(v) !== -1) {
      device = devices[pickedIndex(v)] || null;
      current = device ? deviceIdentity(device) : current;
    }
    // "kept": the door stays as it was. Another device is a change (its lock goes); the same
    // device under its new name is not.
    const changed =
      (before?.deviceId ?? "") !== (current?.deviceId ?? "") ||
      ((current?.deviceId ?? "") === "" && JSON.stringify(before) !== JSON.stringify(current));
    $(`#${prefix}-door-kept`).toggle(v === "kept" && loaded && renamedIndex() === -1);
    showDetail();
    onDevice(device, changed);
  });
  refreshBtn.on("click", (evt) => {
    evt.preventDefault();
    load(true);
  });
  accountSel.on("change", () => {
    if (accountId() !== lastAccount) load(false);
  });
  load(false);

  return {
    value: () => current,
    devices: () => devices,
    close: () => {
      closed = true;
      seq++;
    },
  };
}

/** oneditsave: the picked door onto the node (deviceId, doorName, doorLocation); the picker closes. */
export function savePickedDoor(node: DoorNode): void {
  const picker = node._doorPicker;
  if (picker) {
    const door = picker.value();
    node.deviceId = door ? door.deviceId : "";
    node.doorName = door ? door.doorName : "";
    node.doorLocation = door ? door.doorLocation : "";
    closePicker(node);
  }
}

/** oneditcancel (and after a save): stops the picker; a list still loading is ignored. */
export function closePicker(node: DoorNode): void {
  if (node._doorPicker) {
    node._doorPicker.close();
    delete node._doorPicker;
  }
}

/** A stored device id as a number, or "" when it is none: the runtime's rule (src/doors/ids.ts). */
export function toDeviceId(v: unknown): number | "" {
  return storedDeviceId(v) ?? "";
}

export function lockCountOf(d: PickerDevice): number {
  const counted = typeof d.lockCount === "number" ? d.lockCount : 0;
  return Array.isArray(d.locks) ? Math.max(d.locks.length, counted) : counted;
}

/** The deviceId property's check: empty (a door stored by name, or none), or a device id. */
export function isDeviceIdValue(v: unknown): boolean {
  if (v === "" || v === undefined || v === null) return true;
  return storedDeviceId(v) !== null;
}

/** The door part of a node's label: its name (and location), else its id, else "". */
export function doorLabel(node: DoorNode, t: Translate): string {
  if (node.doorName) {
    const name = textOf(node.doorName);
    return node.doorLocation ? `${name} (${textOf(node.doorLocation)})` : name;
  }
  if (toDeviceId(node.deviceId) !== "") return t("picker.unnamed", { id: node.deviceId });
  return "";
}
