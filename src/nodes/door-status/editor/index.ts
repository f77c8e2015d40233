<!--
  door-status: reads one door's state (GET /api/device/{deviceId}).
  The runtime reads exactly these properties: name, account, deviceId, doorName, doorLocation.
-->

<script type="text/javascript" src="resources/@door-access/node-red/door-picker.js"></script>

<script type="text/javascript">
(function () {
    var NS = "@door-access/node-red/door-status";

    function tr(key, opts) {
        return RED._(NS + ":door-status." + key, opts);
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

    RED.nodes.registerType('door-status', {
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
            doorLocation: { value: "" }
        },
        inputs: 1,
        outputs: 1,
        icon: "door-status.svg",
        paletteLabel: function () {
            return tr("paletteLabel");
        },
        label: function () {
            return this.name || doorLabel(this) || tr("label.default");
        },
        labelStyle: function () {
            return this.name ? "node_label_italic" : "";
        },
        oneditprepare: function () {
            var node = this;
            node._doorPicker = doorPicker(node, "door-status", tr, function () {});
        },
        oneditsave: function () {
            E.savePickedDoor(this);
        },
        oneditcancel: function () {
            E.closePicker(this);
        }
    });
})();
</script>

<script type="text/html" data-template-name="door-status">
    <div class="form-row">
        <label for="node-input-name"><i class="fa fa-tag"></i> <span data-i18n="door-status.label.name"></span></label>
        <input type="text" id="node-input-name" data-i18n="[placeholder]door-status.placeholder.name">
    </div>
    <div class="form-row">
        <label for="node-input-account"><i class="fa fa-user"></i> <span data-i18n="door-status.label.account"></span></label>
        <input type="text" id="node-input-account">
    </div>
    <div class="form-row">
        <label for="door-status-door"><i class="fa fa-sign-in"></i> <span data-i18n="door-status.label.door"></span></label>
        <select id="door-status-door" style="width: calc(70% - 40px);"></select>
        <button type="button" id="door-status-door-refresh" class="red-ui-button" data-i18n="[title]door-status.picker.refresh"><i class="fa fa-refresh"></i></button>
    </div>
    <div class="form-row">
        <label></label>
        <span style="display: inline-block; width: 70%; font-size: 0.9em;">
            <span id="door-status-door-detail" style="display: none;"></span>
            <span id="door-status-door-note" style="display: block;"></span>
        </span>
    </div>
    <div class="form-tips" id="door-status-door-kept" style="display: none; margin-bottom: 12px;" data-i18n="door-status.picker.kept"></div>
    <div class="form-tips" data-i18n="door-status.tip.door"></div>
</script>
