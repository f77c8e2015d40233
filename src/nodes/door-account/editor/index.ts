<!--
  door-account: one API account on one environment, and its one session.
  The runtime reads exactly these properties: name, baseUrl, loginMethod, auditLog,
  auditMaxBytes, auditKeep, sessionStore, redisUrl, redisKeyPrefix, specCheck, docsUrl, and the credentials
  phoneNumber, email, password, redisPassword.
-->

<script type="text/javascript" src="resources/@door-access/node-red/door-picker.js"></script>
<script type="text/javascript" src="resources/@door-access/node-red/loopback.js"></script>

<script type="text/javascript">
(function () {
    var NS = "@door-access/node-red/door-account";
    var PHONE = /^[+][0-9]{9,13}$/;

    function t(key, opts) {
        return RED._(NS + ":door-account." + key, opts);
    }

    function isValidBaseUrl(v) {
        var u;
        try {
            u = new URL(String(v || "").trim());
        } catch (e) {
            return false;
        }
        if (!u.hostname || u.username || u.password || u.search || u.hash) {
            return false;
        }
        if (u.protocol === "https:") {
            return true;
        }
        // The one loopback rule, generated from src/util/loopback.ts (resources/loopback.js).
        return u.protocol === "http:" && window.DoorAccessLoopback.isLoopbackHost(u.hostname);
    }

    function isValidRedisUrl(v) {
        var u;
        try {
            u = new URL(String(v || "").trim());
        } catch (e) {
            return false;
        }
        // A password belongs in the Redis password field (a credential), not in the flow file.
        return (u.protocol === "redis:" || u.protocol === "rediss:") && !!u.hostname && !u.password;
    }

    // The session store being edited, else the stored one.
    function currentStore(node) {
        var sel = $("#node-config-input-sessionStore");
        var m = sel.length ? sel.val() : node.sessionStore;
        return m || "file";
    }

    function normalisePhone(v) {
        return String(v == null ? "" : v).replace(/[\s\-().]/g, "");
    }

    // The login method being edited, else the stored one.
    function currentMethod(node) {
        var sel = $("#node-config-input-loginMethod");
        var m = sel.length ? sel.val() : node.loginMethod;
        return m || "phone";
    }

    function stateColour(state) {
        if (state === "ready") { return "green"; }
        if (state === "logging-in" || state === "refreshing" || state === "idle") { return "yellow"; }
        if (state === "closed") { return "grey"; }
        return "red";
    }

    // Every notification is made from text: its error part is the runtime's words, which can
    // quote the flow (a base URL, a name) or the service (resources/door-picker.js).
    function notifyText(text, type) {
        return window.DoorAccessEditor.notifyText(text, type);
    }

    // The error text of a failed admin request: the endpoint's { error } when it
    // sent one (resources/door-picker.js), else the HTTP status text.
    function errorText(xhr) {
        return window.DoorAccessEditor.adminError(xhr) || xhr.statusText || String(xhr.status);
    }

    function isHalt(body) {
        if (!body) { return false; }
        if (body.halted === true) { return true; }
        return typeof body.state === "string" && body.state.indexOf("halted") === 0;
    }

    RED.nodes.registerType('door-account', {
        category: 'config',
        defaults: {
            name: { value: "" },
            baseUrl: {
                value: "",
                required: true,
                label: RED._("@door-access/node-red/door-account:door-account.label.baseUrl"),
                validate: function (v, opt) {
                    if (isValidBaseUrl(v)) {
                        return true;
                    }
                    // "127.0.0.1:18787", "door.example.com": the scheme is missing.
                    var typed = String(v || "").trim();
                    if (typed && !/^[a-z][a-z0-9+.-]*:(?!\d)/i.test(typed)) {
                        return t("errors.base-url-no-scheme");
                    }
                    return t("errors.invalid-base-url");
                }
            },
            loginMethod: {
                value: "phone",
                validate: function (v, opt) {
                    return v === "phone" || v === "email" || v === "login";
                }
            },
            auditLog: { value: "" },
            auditMaxBytes: {
                value: "10485760",
                validate: function (v, opt) {
                    if (v === undefined || v === "" || /^\s*\d{1,15}\s*$/.test(String(v))) {
                        return true;
                    }
                    return t("errors.invalid-audit-max-bytes");
                }
            },
            auditKeep: {
                value: "10",
                validate: function (v, opt) {
                    if (v === undefined || v === "" || /^\s*\d{1,6}\s*$/.test(String(v))) {
                        return true;
                    }
                    return t("errors.invalid-audit-keep");
                }
            },
            sessionStore: {
                value: "file",
                validate: function (v, opt) {
                    return v === undefined || v === "" || v === "file" || v === "redis";
                }
            },
            redisUrl: {
                value: "",
                validate: function (v, opt) {
                    if (currentStore(this) !== "redis" || isValidRedisUrl(v)) {
                        return true;
                    }
                    return t("errors.invalid-redis-url");
                }
            },
            redisKeyPrefix: {
                value: "door-access:",
                validate: function (v, opt) {
                    if (v === undefined || v === "" || (String(v).length <= 100 && !/\s/.test(String(v)))) {
                        return true;
                    }
                    return t("errors.invalid-redis-prefix");
                }
            },
            // The service description check (docs/service-description.md): on by default;
            // docsUrl empty = the base URL.
            specCheck: { value: true },
            docsUrl: {
                value: "",
                validate: function (v, opt) {
                    if (v === undefined || String(v).trim() === "" || isValidBaseUrl(v)) {
                        return true;
                    }
                    return t("errors.invalid-docs-url");
                }
            }
        },
        credentials: {
            phoneNumber: {
                type: "password",
                validate: function (v, opt) {
                    if (v === undefined || currentMethod(this) === "email") {
                        return true;
                    }
                    // "__PWRD__": a stored value the editor is never shown.
                    if (v === "__PWRD__" || PHONE.test(normalisePhone(v))) {
                        return true;
                    }
                    return normalisePhone(v) === "" ? t("errors.missing-phone") : t("errors.invalid-phone");
                }
            },
            email: {
                type: "password",
                validate: function (v, opt) {
                    if (v === undefined || v === "__PWRD__" || currentMethod(this) !== "email") {
                        return true;
                    }
                    if (/^[^\s@]+@[^\s@]+$/.test(String(v).trim())) {
                        return true;
                    }
                    return t("errors.invalid-email");
                }
            },
            password: {
                type: "password",
                validate: function (v, opt) {
                    if (v === undefined || v === "__PWRD__" || String(v).length > 0) {
                        return true;
                    }
                    return t("errors.missing-password");
                }
            },
            redisPassword: { type: "password" }
        },
        paletteLabel: function () {
            return t("paletteLabel");
        },
        label: function () {
            return this.name || t("label.default");
        },
        oneditprepare: function () {
            var node = this;
            var base = "door-access/accounts/" + encodeURIComponent(node.id);
            var pollTimer = null;
            var closed = false;
            var seq = 0;

            // Show the phone row or the email row according to the login method.
            var methodSel = $("#node-config-input-loginMethod");
            if (!methodSel.val()) {
                methodSel.val("phone");
            }
            function showCredentialRows() {
                var email = methodSel.val() === "email";
                $("#door-account-row-phone").toggle(!email);
                $("#door-account-row-email").toggle(email);
            }
            methodSel.on("change", showCredentialRows);
            showCredentialRows();

            // The Redis rows only when the session is shared through Redis.
            var storeSel = $("#node-config-input-sessionStore");
            if (!storeSel.val()) {
                storeSel.val("file");
            }
            if (!$("#node-config-input-redisKeyPrefix").val()) {
                $("#node-config-input-redisKeyPrefix").val("door-access:");
            }
            function showStoreRows() {
                $(".door-account-redis-row").toggle(storeSel.val() === "redis");
            }
            storeSel.on("change", showStoreRows);
            showStoreRows();

            // The docs URL matters only while the service description check is on.
            var specCheckBox = $("#node-config-input-specCheck");
            function enableDocsUrl() {
                $("#node-config-input-docsUrl").prop("disabled", !specCheckBox.prop("checked"));
            }
            specCheckBox.on("change", enableDocsUrl);
            enableDocsUrl();

            // Let the operator see what they type (never the stored value,
            // which the editor does not have).
            ["phone", "email"].forEach(function (which) {
                $("#door-account-show-" + which).on("click", function (evt) {
                    evt.preventDefault();
                    var input = $("#node-config-input-" + (which === "phone" ? "phoneNumber" : "email"));
                    if (input.val() === "__PWRD__") {
                        return;
                    }
                    var hidden = input.attr("type") === "password";
                    input.attr("type", hidden ? "text" : "password");
                    $(this).find("i").toggleClass("fa-eye", !hidden).toggleClass("fa-eye-slash", hidden);
                });
            });

            // Session state of the deployed account.
            var stateText = $("#door-account-session-state");
            var stateDot = $("#door-account-session-dot");
            var reconnectBtn = $("#door-account-reconnect");

            function showState(colour, text, canReconnect) {
                stateDot.css("color", {
                    green: "#5a8", yellow: "#F9DF31", red: "#c00", grey: "#aaa"
                }[colour] || "#aaa");
                stateText.text(text);
                reconnectBtn.prop("disabled", !canReconnect);
            }

            function describe(body) {
                var state = body && typeof body.state === "string" ? body.state : "";
                var label = state ? t("state." + state) : "";
                if (!state || label === NS + ":door-account.state." + state || label === "door-account.state." + state) {
                    label = t("session.unknown", { state: state || "?" });
                }
                var detail = body && (body.message || body.reason || body.detail);
                if (detail && typeof detail === "string" && detail !== label) {
                    label += " (" + detail + ")";
                }
                return { colour: stateColour(state), text: label };
            }

            function loadState() {
                var mine = ++seq;
                $.ajax({
                    url: base + "/state",
                    dataType: "json",
                    cache: false,
                    timeout: 15000
                }).done(function (body) {
                    if (closed || mine !== seq) { return; }
                    var d = describe(body);
                    signInRow.hide();
                    showState(d.colour, d.text, isHalt(body));
                }).fail(function (xhr) {
                    if (closed || mine !== seq) { return; }
                    if (xhr.status === 404 || xhr.status === 503) {
                        // Not deployed: the answer of the last sign-in stays until the next press.
                        if (signInShown) {
                            showState(signInShown.colour, signInShown.text, false);
                        } else {
                            showState("grey", t("session.not-running"), false);
                        }
                        signInRow.show();
                    } else {
                        showState("red", t("session.error", { error: errorText(xhr) }), false);
                    }
                });
            }

            reconnectBtn.on("click", function (evt) {
                evt.preventDefault();
                reconnectBtn.prop("disabled", true);
                showState("yellow", t("session.reconnecting"), false);
                $.ajax({
                    url: base + "/reconnect",
                    method: "POST",
                    headers: { "X-Requested-With": "XMLHttpRequest" },
                    contentType: "application/json",
                    data: "{}",
                    dataType: "text",
                    timeout: 35000
                }).always(function () {
                    if (!closed) { loadState(); }
                }).done(function () {
                    if (!closed) { notifyText(t("session.reconnect-requested"), "success"); }
                }).fail(function (xhr) {
                    if (closed) { return; }
                    if (xhr.status === 404 || xhr.status === 503) {
                        notifyText(t("session.not-deployed"), "warning");
                    } else {
                        notifyText(t("session.reconnect-failed", { error: errorText(xhr) }), "error");
                    }
                });
            });

            // Sign in before the first deploy: the values typed in this dialog go to the runtime
            // once, in a POST body (door-account.write); nothing comes back but the outcome. A
            // credential the editor was never shown stays "__PWRD__": the runtime then uses the
            // deployed node's. The pair is stored under the account key: the deploy resumes it.
            var signInRow = $("#door-account-sign-in-row");
            var signInBtn = $("#door-account-sign-in");
            var signInShown = null;
            signInRow.hide();
            function showSignIn(colour, text) {
                signInShown = { colour: colour, text: text };
                showState(colour, text, false);
            }
            function typedValue(id) {
                return String($("#node-config-input-" + id).val() || "");
            }
            // A session of another login runs on the same service here: the runtime sent nothing
            // and asks for the operator's word (docs/session.md#signing-in-from-the-editor). The
            // button then reads "Sign in anyway" for that base URL and login only; changing either
            // takes the confirmation back.
            var confirmFor = null;
            function loginOf(body) {
                return JSON.stringify([body.baseUrl, body.loginMethod, body.phoneNumber, body.email]);
            }
            function setConfirm(login) {
                confirmFor = login;
                signInBtn.find("span").first().text(t(login === null ? "session.sign-in" : "session.sign-in-anyway"));
            }
            $("#node-config-input-baseUrl, #node-config-input-loginMethod, #node-config-input-phoneNumber, #node-config-input-email").on("input change", function () {
                if (confirmFor !== null) { setConfirm(null); }
            });
            signInBtn.on("click", function (evt) {
                evt.preventDefault();
                signInBtn.prop("disabled", true);
                showState("yellow", t("session.signing-in"), false);
                var body = {
                    baseUrl: typedValue("baseUrl").trim(),
                    loginMethod: methodSel.val() || "phone",
                    phoneNumber: typedValue("phoneNumber") === "__PWRD__" ? "__PWRD__" : normalisePhone(typedValue("phoneNumber")),
                    email: typedValue("email").trim(),
                    password: typedValue("password"),
                    sessionStore: storeSel.val() || "file",
                    redisUrl: typedValue("redisUrl").trim(),
                    redisKeyPrefix: typedValue("redisKeyPrefix"),
                    redisPassword: typedValue("redisPassword")
                };
                var login = loginOf(body);
                if (confirmFor !== null && confirmFor === login) { body.confirm = true; }
                setConfirm(null);
                $.ajax({
                    url: base + "/sign-in",
                    method: "POST",
                    headers: { "X-Requested-With": "XMLHttpRequest" },
                    contentType: "application/json",
                    data: JSON.stringify(body),
                    dataType: "json",
                    timeout: 35000
                }).done(function (res) {
                    if (closed) { return; }
                    if (res && res.signedIn === false) {
                        // A session of this login runs, but the password typed was not checked
                        // (that needs a login, which would end the session): no success is claimed.
                        var unchecked = t("errors.password-not-checked");
                        showSignIn("yellow", unchecked);
                        notifyText(unchecked, "warning");
                        return;
                    }
                    var text = res && res.already ? t("session.already") : t("session.signed-in");
                    showSignIn("green", text);
                    notifyText(text, "success");
                }).fail(function (xhr) {
                    if (closed) { return; }
                    if (xhr.status === 409 && xhr.responseJSON && xhr.responseJSON.confirm === true && !body.confirm) {
                        var warning = errorText(xhr);
                        showSignIn("yellow", warning);
                        notifyText(warning, "warning");
                        setConfirm(login);
                        return;
                    }
                    var text = t("session.sign-in-failed", { error: errorText(xhr) });
                    showSignIn("red", text);
                    notifyText(text, "error");
                }).always(function () {
                    if (!closed) { signInBtn.prop("disabled", false); }
                });
            });

            showState("grey", t("session.loading"), false);
            loadState();
            pollTimer = setInterval(loadState, 5000);

            node._doorAccountStop = function () {
                closed = true;
                if (pollTimer) {
                    clearInterval(pollTimer);
                    pollTimer = null;
                }
            };
        },
        oneditsave: function () {
            var phone = $("#node-config-input-phoneNumber");
            if (phone.val() !== "__PWRD__") {
                phone.val(normalisePhone(phone.val()));
            }
            $("#node-config-input-baseUrl").val(String($("#node-config-input-baseUrl").val() || "").trim());
            $("#node-config-input-email").val(String($("#node-config-input-email").val() || "").trim());
            $("#node-config-input-redisUrl").val(String($("#node-config-input-redisUrl").val() || "").trim());
            $("#node-config-input-docsUrl").val(String($("#node-config-input-docsUrl").val() || "").trim());
            if (this._doorAccountStop) { this._doorAccountStop(); delete this._doorAccountStop; }
        },
        oneditcancel: function () {
            if (this._doorAccountStop) { this._doorAccountStop(); delete this._doorAccountStop; }
        },
        oneditdelete: function () {
            if (this._doorAccountStop) { this._doorAccountStop(); delete this._doorAccountStop; }
        }
    });
})();
</script>

<script type="text/html" data-template-name="door-account">
    <div class="form-row">
        <label for="node-config-input-name"><i class="fa fa-tag"></i> <span data-i18n="door-account.label.name"></span></label>
        <input type="text" id="node-config-input-name" data-i18n="[placeholder]door-account.placeholder.name">
    </div>
    <div class="form-row">
        <label for="node-config-input-baseUrl"><i class="fa fa-globe"></i> <span data-i18n="door-account.label.baseUrl"></span></label>
        <input type="text" id="node-config-input-baseUrl" data-i18n="[placeholder]door-account.placeholder.baseUrl">
    </div>
    <div class="form-row">
        <label for="node-config-input-loginMethod"><i class="fa fa-sign-in"></i> <span data-i18n="door-account.label.loginMethod"></span></label>
        <select id="node-config-input-loginMethod" style="width: 70%;">
            <option value="phone" data-i18n="door-account.loginMethod.phone"></option>
            <option value="email" data-i18n="door-account.loginMethod.email"></option>
            <option value="login" data-i18n="door-account.loginMethod.login"></option>
        </select>
    </div>
    <div class="form-row" id="door-account-row-phone">
        <label for="node-config-input-phoneNumber"><i class="fa fa-phone"></i> <span data-i18n="door-account.label.phoneNumber"></span></label>
        <input type="password" id="node-config-input-phoneNumber" style="width: calc(70% - 40px);" data-i18n="[placeholder]door-account.placeholder.phoneNumber">
        <button type="button" id="door-account-show-phone" class="red-ui-button" data-i18n="[title]door-account.label.show"><i class="fa fa-eye"></i></button>
    </div>
    <div class="form-row" id="door-account-row-email">
        <label for="node-config-input-email"><i class="fa fa-envelope"></i> <span data-i18n="door-account.label.email"></span></label>
        <input type="password" id="node-config-input-email" style="width: calc(70% - 40px);" data-i18n="[placeholder]door-account.placeholder.email">
        <button type="button" id="door-account-show-email" class="red-ui-button" data-i18n="[title]door-account.label.show"><i class="fa fa-eye"></i></button>
    </div>
    <div class="form-row">
        <label for="node-config-input-password"><i class="fa fa-lock"></i> <span data-i18n="door-account.label.password"></span></label>
        <input type="password" id="node-config-input-password">
    </div>
    <div class="form-row">
        <label for="node-config-input-auditLog"><i class="fa fa-file-text-o"></i> <span data-i18n="door-account.label.auditLog"></span></label>
        <input type="text" id="node-config-input-auditLog" data-i18n="[placeholder]door-account.placeholder.auditLog">
    </div>
    <div class="form-row">
        <label for="node-config-input-auditMaxBytes"><i class="fa fa-scissors"></i> <span data-i18n="door-account.label.auditMaxBytes"></span></label>
        <input type="text" id="node-config-input-auditMaxBytes" style="width: 110px;" data-i18n="[placeholder]door-account.placeholder.auditMaxBytes;[title]door-account.label.auditRotateTip">
        <span data-i18n="door-account.label.auditMaxBytesUnit" style="margin: 0 4px;"></span>
        <input type="text" id="node-config-input-auditKeep" style="width: 50px;" data-i18n="[placeholder]door-account.placeholder.auditKeep;[title]door-account.label.auditRotateTip">
        <span data-i18n="door-account.label.auditKeep" style="margin-left: 4px;"></span>
    </div>
    <div class="form-row">
        <label for="node-config-input-sessionStore"><i class="fa fa-database"></i> <span data-i18n="door-account.label.sessionStore"></span></label>
        <select id="node-config-input-sessionStore" style="width: 70%;">
            <option value="file" data-i18n="door-account.sessionStore.file"></option>
            <option value="redis" data-i18n="door-account.sessionStore.redis"></option>
        </select>
    </div>
    <div class="form-row door-account-redis-row">
        <label for="node-config-input-redisUrl"><i class="fa fa-link"></i> <span data-i18n="door-account.label.redisUrl"></span></label>
        <input type="text" id="node-config-input-redisUrl" data-i18n="[placeholder]door-account.placeholder.redisUrl">
    </div>
    <div class="form-row door-account-redis-row">
        <label for="node-config-input-redisPassword"><i class="fa fa-key"></i> <span data-i18n="door-account.label.redisPassword"></span></label>
        <input type="password" id="node-config-input-redisPassword">
    </div>
    <div class="form-row door-account-redis-row">
        <label for="node-config-input-redisKeyPrefix"><i class="fa fa-tag"></i> <span data-i18n="door-account.label.redisKeyPrefix"></span></label>
        <input type="text" id="node-config-input-redisKeyPrefix" data-i18n="[placeholder]door-account.placeholder.redisKeyPrefix">
    </div>
    <div class="form-row">
        <label for="node-config-input-specCheck"><i class="fa fa-book"></i> <span data-i18n="door-account.label.specCheck"></span></label>
        <input type="checkbox" id="node-config-input-specCheck" style="display: inline-block; width: auto; vertical-align: top;" data-i18n="[title]door-account.tip.specCheck">
        <label for="node-config-input-specCheck" style="width: 70%;" data-i18n="door-account.specCheck.on"></label>
    </div>
    <div class="form-row">
        <label for="node-config-input-docsUrl"><i class="fa fa-link"></i> <span data-i18n="door-account.label.docsUrl"></span></label>
        <input type="text" id="node-config-input-docsUrl" data-i18n="[placeholder]door-account.placeholder.docsUrl;[title]door-account.tip.docsUrl">
    </div>
    <div class="form-row">
        <label><i class="fa fa-heartbeat"></i> <span data-i18n="door-account.label.session"></span></label>
        <span style="display: inline-block; width: 70%;">
            <i id="door-account-session-dot" class="fa fa-circle" style="color: #aaa;"></i>
            <span id="door-account-session-state"></span>
            <button type="button" id="door-account-reconnect" class="red-ui-button red-ui-button-small" style="margin-left: 8px;" disabled data-i18n="[title]door-account.session.reconnect-tip"><i class="fa fa-plug"></i> <span data-i18n="door-account.session.reconnect"></span></button>
        </span>
    </div>
    <div class="form-row" id="door-account-sign-in-row">
        <label></label>
        <span style="display: inline-block; width: 70%;">
            <button type="button" id="door-account-sign-in" class="red-ui-button red-ui-button-small" data-i18n="[title]door-account.session.sign-in-tip"><i class="fa fa-sign-in"></i> <span data-i18n="door-account.session.sign-in"></span></button>
            <span class="form-tips" style="display: block; margin-top: 6px;"><i class="fa fa-warning"></i> <span data-i18n="door-account.session.sign-in-warning"></span></span>
        </span>
    </div>
    <div class="form-tips" data-i18n="door-account.tip.session"></div>
</script>
