<!--
  door-unlock: sends exactly one unlock command per accepted message.
  The runtime reads exactly these properties: name, account, deviceId, doorName,
  doorLocation, lockId, actor, rejectRetained, and the access rules allowActors, schedule,
  timeZone, cooldown with the credential pin (docs/access-rules.md; the section is built by
  resources/access-rules-editor.js).
-->

<script type="text/javascript" src="resources/@door-access/node-red/door-picker.js"></script>
<script type="text/javascript" src="resources/@door-access/node-red/access-rules-editor.js"></script>

<style>
    #door-unlock-rules-title { margin-top: 16px; padding-top: 8px; border-top: 1px solid var(--red-ui-secondary-border-color, #ddd); }
    #door-unlock-rules-title label { width: auto; font-weight: bold; }
    .door-unlock-rules-row > label { vertical-align: top; margin-top: 4px; }
    .door-unlock-rules-list { display: inline-block; width: calc(100% - 105px); vertical-align: top; }
    .door-unlock-rules-note { display: block; margin: 3px 0 0 0; font-size: 0.9em; color: var(--red-ui-secondary-text-color, #666); white-space: normal; }
    .door-unlock-window-hint, .door-unlock-days { white-space: normal; }
    /* Node-RED sizes the dialog to its content's natural width (500 px unless something is wider): every text here wraps within it. */
    #door-unlock-rules-title .door-unlock-rules-note { max-width: 450px; }
    .door-unlock-rules-list .door-unlock-rules-note, .door-unlock-window-hint { max-width: 340px; }
    .door-unlock-days { display: flex; flex-wrap: wrap; gap: 2px 6px; border-radius: 3px; }
    .door-unlock-days.input-error { outline: 1px solid var(--red-ui-form-input-border-error-color, #d6615f); }
    .door-unlock-day-label { display: inline-flex !important; align-items: center; gap: 2px; width: auto !important; margin: 0 !important; font-size: 0.95em; cursor: pointer; }
    .door-unlock-day-label input.door-unlock-day { width: auto !important; margin: 0 !important; }
    .door-unlock-times { display: flex; align-items: center; gap: 6px; margin-top: 4px; }
    .door-unlock-times input[type="time"] { width: 110px !important; padding: 0 4px; }
    .door-unlock-window-hint { font-size: 0.85em; color: var(--red-ui-secondary-text-color, #666); min-height: 1em; }
    .door-unlock-window-hint.door-unlock-window-problem, .door-unlock-pin-problem { color: var(--red-ui-text-color-error, #c00) !important; }
</style>

<script type="text/javascript">
(function () {
    var NS = "@door-access/node-red/door-unlock";

    function tr(key, opts) {
        return RED._(NS + ":door-unlock." + key, opts);
    }

    // The door picker and the door-id helpers are shared with the other door node:
    // resources/door-picker.js (loaded above).
    var E = window.DoorAccessEditor;
    var doorPicker = E.doorPicker;
    var toDeviceId = E.toDeviceId;
    var isDeviceIdValue = E.isDeviceIdValue;
    function doorLabel(node) {
        return E.doorLabel(node, tr);
    }

    // The access rules' checks and dialog section: resources/access-rules-editor.js (loaded above).
    var R = window.DoorAccessRules;
    function ruleResult(problem) {
        return problem ? tr("errors." + problem) : true;
    }

    function toLockId(v) {
        var s = v == null ? "" : String(v).trim();
        if (s === "") {
            return "";
        }
        if (/^[0-9]+$/.test(s) && Number(s) > 0 && Number(s) <= 2147483647) {
            return Number(s);
        }
        return null;
    }

    RED.nodes.registerType('door-unlock', {
        category: 'door access',
        color: "#9BC4E2",
        defaults: {
            name: { value: "" },
            account: { value: "", type: "door-account", required: true },
            deviceId: {
                value: "",
                validate: function (v, opt) {
                    return isDeviceIdValue(v) ? true : tr("errors.invalid-device-id");
                }
            },
            doorName: { value: "" },
            doorLocation: { value: "" },
            lockId: {
                value: "",
                validate: function (v, opt) {
                    return toLockId(v) !== null ? true : tr("errors.invalid-lock-id");
                }
            },
            actor: {
                value: "",
                validate: function (v, opt) {
                    var s = v == null ? "" : String(v);
                    if (s.length <= 200 && !/[\u0000-\u001f\u007f]/.test(s)) {
                        return true;
                    }
                    return tr("errors.invalid-actor");
                }
            },
            rejectRetained: { value: true },
            // Access rules (docs/access-rules.md): a rule the runtime cannot read is flagged here too.
            allowActors: { value: [], validate: function (v, opt) { return ruleResult(R.actorsProblem(v)); } },
            schedule: { value: [], validate: function (v, opt) { return ruleResult(R.scheduleProblem(v)); } },
            timeZone: { value: "", validate: function (v, opt) { return ruleResult(R.zoneProblem(v)); } },
            cooldown: { value: 0, validate: function (v, opt) { return ruleResult(R.cooldownProblem(v)); } }
        },
        credentials: {
            pin: {
                type: "password",
                validate: function (v, opt) { return ruleResult(R.pinProblem(v)); }
            }
        },
        inputs: 1,
        outputs: 2,
        outputLabels: function (i) {
            return i === 0 ? tr("outputs.accepted") : tr("outputs.failed");
        },
        icon: "door-unlock.svg",
        paletteLabel: function () {
            return tr("paletteLabel");
        },
        label: function () {
            if (this.name) {
                return R.hasRules(this) ? tr("label.withRules", { label: this.name }) : this.name;
            }
            var door = doorLabel(this) || tr("label.default");
            var lock = toLockId(this.lockId);
            var label = lock ? tr("label.withLock", { door: door, lock: lock }) : door;
            // Rules apply: said in the label (docs/access-rules.md).
            return R.hasRules(this) ? tr("label.withRules", { label: label }) : label;
        },
        labelStyle: function () {
            return this.name ? "node_label_italic" : "";
        },
        oneditprepare: function () {
            var node = this;
            var lockInput = $("#door-unlock-lockId");
            var lockSel = $("#door-unlock-lock");
            var device = null;

            lockInput.val(node.lockId === undefined || node.lockId === null ? "" : String(node.lockId));
            $("#node-input-actor").attr("placeholder", tr("placeholder.actor", { id: node.id }));

            function locksOf(d) {
                if (!d || !Array.isArray(d.locks)) {
                    return [];
                }
                return d.locks.filter(function (l) {
                    return l && typeof l.id === "number";
                });
            }
            function checkLock() {
                var ok = toLockId(lockInput.val()) !== null;
                lockInput.toggleClass("input-error", !ok);
                return ok;
            }
            // Offer the picked device's locks when it has more than one.
            function renderLocks() {
                var locks = locksOf(device);
                var typed = toLockId(lockInput.val());
                lockSel.empty();
                if (locks.length > 1) {
                    $("<option>").val("").text(tr("lock.whole")).appendTo(lockSel);
                    var found = typed === "";
                    locks.forEach(function (l) {
                        var text = l.name ? tr("lock.option", { name: l.name, id: l.id }) : tr("lock.unnamed", { id: l.id });
                        $("<option>").val(String(l.id)).text(text).appendTo(lockSel);
                        if (l.id === typed) { found = true; }
                    });
                    if (!found && typed) {
                        $("<option>").val(String(typed)).text(tr("lock.not-in-list", { id: typed })).appendTo(lockSel);
                    }
                    lockSel.val(typed === null ? "" : String(typed));
                }
                lockSel.toggle(locks.length > 1);
            }
            lockSel.on("change", function () {
                lockInput.val(lockSel.val() || "");
                checkLock();
            });
            lockInput.on("change keyup paste", function () {
                if (checkLock() && lockSel.css("display") !== "none") {
                    var typed = toLockId(lockInput.val());
                    if (lockSel.find("option").filter(function () { return this.value === String(typed); }).length) {
                        lockSel.val(String(typed));
                    } else {
                        renderLocks();
                    }
                }
            });

            node._doorPicker = doorPicker(node, "door-unlock", tr, function (d, changedByUser) {
                // Another door picked by the user: the old lock id belongs to the old door.
                if (changedByUser && d) {
                    lockInput.val("");
                }
                device = d;
                renderLocks();
                checkLock();
            });

            function showRetainedWarning() {
                var on = $("#node-input-rejectRetained").is(":checked");
                $("#door-unlock-retained-off").toggle(!on);
            }
            $("#node-input-rejectRetained").on("change", showRetainedWarning);
            showRetainedWarning();

            node._accessRules = R.section(node, function (key, opts) { return tr("rules." + key, opts); });
        },
        oneditsave: function () {
            E.savePickedDoor(this);
            var raw = String($("#door-unlock-lockId").val() || "").trim();
            var lock = toLockId(raw);
            // An invalid value is kept as typed so that the node shows it as invalid.
            this.lockId = lock === null ? raw : lock;
            $("#node-input-actor").val(String($("#node-input-actor").val() || "").trim());
            if (this._accessRules) {
                var saved = this._accessRules.save(this);
                delete this._accessRules;
                if (saved.pinInvalid) {
                    E.notifyText(tr("rules.pin-invalid-saved"), "warning");
                }
            }
        },
        oneditcancel: function () {
            E.closePicker(this);
            delete this._accessRules;
        }
    });
})();
</script>

<script type="text/html" data-template-name="door-unlock">
    <div class="form-row">
        <label for="node-input-name"><i class="fa fa-tag"></i> <span data-i18n="door-unlock.label.name"></span></label>
        <input type="text" id="node-input-name" data-i18n="[placeholder]door-unlock.placeholder.name">
    </div>
    <div class="form-row">
        <label for="node-input-account"><i class="fa fa-user"></i> <span data-i18n="door-unlock.label.account"></span></label>
        <input type="text" id="node-input-account">
    </div>
    <div class="form-row">
        <label for="door-unlock-door"><i class="fa fa-sign-in"></i> <span data-i18n="door-unlock.label.door"></span></label>
        <select id="door-unlock-door" style="width: calc(70% - 40px);"></select>
        <button type="button" id="door-unlock-door-refresh" class="red-ui-button" data-i18n="[title]door-unlock.picker.refresh"><i class="fa fa-refresh"></i></button>
    </div>
    <div class="form-row">
        <label></label>
        <span style="display: inline-block; width: 70%; font-size: 0.9em;">
            <span id="door-unlock-door-detail" style="display: none;"></span>
            <span id="door-unlock-door-note" style="display: block;"></span>
        </span>
    </div>
    <div class="form-tips" id="door-unlock-door-kept" style="display: none; margin-bottom: 12px;" data-i18n="door-unlock.picker.kept"></div>
    <div class="form-row">
        <label for="door-unlock-lockId"><i class="fa fa-key"></i> <span data-i18n="door-unlock.label.lock"></span></label>
        <input type="text" id="door-unlock-lockId" style="width: 110px;" data-i18n="[placeholder]door-unlock.placeholder.lockId">
        <select id="door-unlock-lock" style="width: calc(70% - 120px); display: none;"></select>
    </div>
    <div class="form-row">
        <label for="node-input-actor"><i class="fa fa-id-badge"></i> <span data-i18n="door-unlock.label.actor"></span></label>
        <input type="text" id="node-input-actor">
    </div>
    <div class="form-row">
        <label for="node-input-rejectRetained"><i class="fa fa-shield"></i> <span data-i18n="door-unlock.label.rejectRetained"></span></label>
        <input type="checkbox" id="node-input-rejectRetained" style="display: inline-block; width: auto; vertical-align: top;">
        <label for="node-input-rejectRetained" style="width: auto;" data-i18n="door-unlock.label.rejectRetainedText"></label>
    </div>
    <div class="form-tips" id="door-unlock-retained-off" style="display: none; margin-bottom: 12px; color: var(--red-ui-text-color-error, #c00);" data-i18n="door-unlock.tip.retained-off"></div>
    <div class="form-tips" data-i18n="door-unlock.tip.once"></div>

    <div class="form-row" id="door-unlock-rules-title">
        <label><i class="fa fa-lock"></i> <span data-i18n="door-unlock.rules.title"></span></label>
        <span class="door-unlock-rules-note" data-i18n="door-unlock.rules.intro"></span>
    </div>
    <div class="form-row door-unlock-rules-row">
        <label><i class="fa fa-users"></i> <span data-i18n="door-unlock.rules.actors"></span></label>
        <div class="door-unlock-rules-list">
            <ol id="door-unlock-actors"></ol>
            <span class="door-unlock-rules-note" data-i18n="door-unlock.rules.actors-note"></span>
        </div>
    </div>
    <div class="form-row door-unlock-rules-row">
        <label><i class="fa fa-calendar"></i> <span data-i18n="door-unlock.rules.schedule"></span></label>
        <div class="door-unlock-rules-list">
            <ol id="door-unlock-schedule"></ol>
            <span class="door-unlock-rules-note" data-i18n="door-unlock.rules.schedule-note"></span>
        </div>
    </div>
    <div class="form-row">
        <label for="door-unlock-timeZone"><i class="fa fa-globe"></i> <span data-i18n="door-unlock.rules.timeZone"></span></label>
        <select id="door-unlock-timeZone" style="width: 70%;"></select>
    </div>
    <div class="form-row">
        <label for="door-unlock-cooldown"><i class="fa fa-hourglass-half"></i> <span data-i18n="door-unlock.rules.cooldown"></span></label>
        <input type="number" id="door-unlock-cooldown" min="0" max="86400" step="1" style="width: 100px;">
        <span data-i18n="door-unlock.rules.seconds"></span>
    </div>
    <div class="form-row door-unlock-rules-row">
        <label for="node-input-pin"><i class="fa fa-asterisk"></i> <span data-i18n="door-unlock.rules.pin"></span></label>
        <div class="door-unlock-rules-list">
            <input type="password" id="node-input-pin" autocomplete="new-password" inputmode="numeric" maxlength="12" style="width: 160px;">
            <button type="button" id="door-unlock-pin-remove" class="red-ui-button red-ui-button-small" style="display: none;" data-i18n="door-unlock.rules.pin-remove"></button>
            <span id="door-unlock-pin-state" class="door-unlock-rules-note"></span>
        </div>
    </div>
</script>
