<!--
  door-devices: the account's devices (GET /api/user/device) or locations
  (GET /api/user/location). The runtime reads exactly these properties: name, account, list.
-->

<script type="text/javascript">
(function () {
    var NS = "@door-access/node-red/door-devices";

    function tr(key, opts) {
        return RED._(NS + ":door-devices." + key, opts);
    }

    RED.nodes.registerType('door-devices', {
        category: 'door access',
        color: "#9BC4E2",
        defaults: {
            name: { value: "" },
            account: { value: "", type: "door-account", required: true },
            list: {
                value: "devices",
                validate: function (v, opt) {
                    return v === "devices" || v === "locations";
                }
            }
        },
        inputs: 1,
        outputs: 1,
        icon: "door-devices.svg",
        paletteLabel: function () {
            return tr("paletteLabel");
        },
        label: function () {
            return this.name || (this.list === "locations" ? tr("label.locations") : tr("label.default"));
        },
        labelStyle: function () {
            return this.name ? "node_label_italic" : "";
        },
        oneditprepare: function () {
            if (!$("#node-input-list").val()) {
                $("#node-input-list").val("devices");
            }
        }
    });
})();
</script>

<script type="text/html" data-template-name="door-devices">
    <div class="form-row">
        <label for="node-input-name"><i class="fa fa-tag"></i> <span data-i18n="door-devices.label.name"></span></label>
        <input type="text" id="node-input-name" data-i18n="[placeholder]door-devices.placeholder.name">
    </div>
    <div class="form-row">
        <label for="node-input-account"><i class="fa fa-user"></i> <span data-i18n="door-devices.label.account"></span></label>
        <input type="text" id="node-input-account">
    </div>
    <div class="form-row">
        <label for="node-input-list"><i class="fa fa-list"></i> <span data-i18n="door-devices.label.list"></span></label>
        <select id="node-input-list" style="width: 70%;">
            <option value="devices" data-i18n="door-devices.list.devices"></option>
            <option value="locations" data-i18n="door-devices.list.locations"></option>
        </select>
    </div>
    <div class="form-tips" data-i18n="door-devices.tip.list"></div>
</script>
