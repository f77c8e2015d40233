/**
 * door-unlock in the editor: its definition (RED.nodes.registerType) and its dialog
 * (editor/template.html, editor/style.css); sends exactly one unlock command per accepted message.
 * The runtime (door-unlock.ts) reads exactly these properties: name, account, deviceId, doorName,
 * doorLocation, lockId, actor, rejectRetained, and the access rules allowActors, schedule,
 * timeZone, cooldown with the credential pin and its mark pinSet (docs/access-rules.md; the
 * section is built by editor/access-rules.ts).
 *
 * The build (scripts/editor-build.ts) bundles this file with what it imports into the node's
 * door-unlock.html; the registerType call stays literal there, as Node-RED and the flow library's
 * scorecard read it (docs/architecture.md#the-editor-where-a-node-lives-and-how-it-is-built).
 */
import { preselectAccount, preselectAccountInDialog } from "../../common/editor/account.js";
import { parseLockId } from "../../../src/doors/ids.js";
import { nodeActorProblem } from "../../../src/unlock/node-actor.js";
import { textOf } from "../../../src/util/text.js";
import {
  type DoorNode,
  type PickerDevice,
  closePicker,
  doorLabel,
  doorPicker,
  isDeviceIdValue,
  savePickedDoor,
} from "../../common/editor/door-picker.js";
import { notifyText } from "../../common/editor/text.js";
import {
  type RulesNode,
  type RulesSection,
  actorsProblem,
  cooldownProblem,
  hasRules,
  pinProblem,
  rulesSection,
  scheduleProblem,
  zoneProblem,
} from "./access-rules.js";
import { nodeTranslator } from "../../common/editor/i18n.js";

interface DoorUnlockNode extends DoorNode, RulesNode {
  name?: string;
  lockId?: unknown;
  actor?: unknown;
  rejectRetained?: boolean;
  acceptPasses?: boolean;
  _accessRules?: RulesSection;
}

const tr = nodeTranslator("door-unlock");

function ruleResult(problem: string | null): true | string {
  return problem ? tr(`errors.${problem}`) : true;
}

/** The lock id as typed: "" (the whole device), a lock id, or null when it is neither (the runtime's rule, src/doors/ids.ts). */
function toLockId(v: unknown): number | "" | null {
  const r = parseLockId(v, true);
  return r.ok ? (r.lockId ?? "") : null;
}

function locksOf(d: PickerDevice | null): { id: number; name?: string }[] {
  if (!d || !Array.isArray(d.locks)) return [];
  return d.locks.filter((l): l is { id: number; name?: string } => !!l && typeof l.id === "number");
}

RED.nodes.registerType<DoorUnlockNode>("door-unlock", {
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
    lockId: {
      value: "",
      validate(v, _opt) {
        return toLockId(v) !== null ? true : tr("errors.invalid-lock-id");
      },
    },
    actor: {
      value: "",
      // The runtime's own check (src/unlock/node-actor.ts): one line of at most 200 characters.
      validate(v, _opt) {
        return nodeActorProblem(textOf(v ?? "")) === null ? true : tr("errors.invalid-actor");
      },
    },
    rejectRetained: { value: true },
    // docs/passes.md#at-a-door-unlock: msg.pass opens for a live guest pass of the account.
    acceptPasses: { value: false },
    // Access rules (docs/access-rules.md): the runtime's reading of each field; what it cannot read is flagged.
    allowActors: {
      value: [],
      validate(v, _opt) {
        return ruleResult(actorsProblem(v));
      },
    },
    schedule: {
      value: [],
      validate(v, _opt) {
        return ruleResult(scheduleProblem(v));
      },
    },
    timeZone: {
      value: "",
      validate(v, _opt) {
        return ruleResult(zoneProblem(v));
      },
    },
    cooldown: {
      value: 0,
      validate(v, _opt) {
        return ruleResult(cooldownProblem(v));
      },
    },
    // Whether a PIN was set: kept in the flow (never the PIN), so that a copy or an import,
    // which Node-RED makes without credentials, refuses instead of opening without it.
    pinSet: { value: false },
  },
  credentials: {
    pin: {
      type: "password",
      validate(v, _opt) {
        return ruleResult(pinProblem(v));
      },
    },
  },
  inputs: 1,
  outputs: 2,
  outputLabels(i) {
    return i === 0 ? tr("outputs.accepted") : tr("outputs.failed");
  },
  icon: "door-unlock.svg",
  paletteLabel() {
    return tr("paletteLabel");
  },
  label() {
    if (this.name) return hasRules(this) ? tr("label.withRules", { label: this.name }) : this.name;
    const door = doorLabel(this, tr) || tr("label.default");
    const lock = toLockId(this.lockId);
    const label = lock ? tr("label.withLock", { door, lock }) : door;
    // Rules apply: said in the label (docs/access-rules.md).
    return hasRules(this) ? tr("label.withRules", { label }) : label;
  },
  labelStyle() {
    return this.name ? "node_label_italic" : "";
  },
  onadd() {
    preselectAccount(this);
  },
  oneditprepare() {
    preselectAccountInDialog(this);
    const node = this;
    const lockInput = $("#door-unlock-lockId");
    const lockSel = $("#door-unlock-lock");
    let device: PickerDevice | null = null;

    lockInput.val(textOf(node.lockId ?? ""));
    $("#node-input-actor").attr("placeholder", tr("placeholder.actor", { id: node.id }));

    function checkLock(): boolean {
      const ok = toLockId(lockInput.val()) !== null;
      lockInput.toggleClass("input-error", !ok);
      return ok;
    }
    // Offer the picked device's locks when it has more than one.
    function renderLocks(): void {
      const locks = locksOf(device);
      const typed = toLockId(lockInput.val());
      lockSel.empty();
      if (locks.length > 1) {
        $("<option>").val("").text(tr("lock.whole")).appendTo(lockSel);
        let found = typed === "";
        locks.forEach((l) => {
          const text = l.name ? tr("lock.option", { name: l.name, id: l.id }) : tr("lock.unnamed", { id: l.id });
          $("<option>").val(String(l.id)).text(text).appendTo(lockSel);
          if (l.id === typed) found = true;
        });
        if (!found && typed) {
          $("<option>")
            .val(String(typed))
            .text(tr("lock.not-in-list", { id: typed }))
            .appendTo(lockSel);
        }
        lockSel.val(typed === null ? "" : String(typed));
      }
      // One control at a time: the list when the door has several locks (it holds any id typed
      // before, marked "not in the list"), else the text field.
      lockSel.toggle(locks.length > 1);
      lockInput.toggle(locks.length <= 1);
    }
    lockSel.on("change", () => {
      lockInput.val(lockSel.val() || "");
      checkLock();
    });
    lockInput.on("change keyup paste", () => {
      if (checkLock() && lockSel.css("display") !== "none") {
        const typed = String(toLockId(lockInput.val()));
        if (lockSel.find("option").filter((_i, o) => o.value === typed).length) {
          lockSel.val(typed);
        } else {
          renderLocks();
        }
      }
    });

    node._doorPicker = doorPicker(node, "door-unlock", tr, (d, changedByUser) => {
      // Another door picked by the user: the old lock id belongs to the old door.
      if (changedByUser && d) lockInput.val("");
      device = d;
      renderLocks();
      checkLock();
    });

    function showRetainedWarning(): void {
      const on = $("#node-input-rejectRetained").is(":checked");
      $("#door-unlock-retained-off").toggle(!on);
    }
    $("#node-input-rejectRetained").on("change", showRetainedWarning);
    showRetainedWarning();

    node._accessRules = rulesSection(node, (key, opts) => tr(`rules.${key}`, opts));
  },
  oneditsave() {
    savePickedDoor(this);
    const raw = String($("#door-unlock-lockId").val() || "").trim();
    const lock = toLockId(raw);
    // An invalid value is kept as typed so that the node shows it as invalid.
    this.lockId = lock === null ? raw : lock;
    $("#node-input-actor").val(String($("#node-input-actor").val() || "").trim());
    if (this._accessRules) {
      const saved = this._accessRules.save(this);
      delete this._accessRules;
      if (saved.pinInvalid) notifyText(tr("rules.pin-invalid-saved"), "warning");
    }
  },
  oneditcancel() {
    closePicker(this);
    delete this._accessRules;
  },
});
