<!--
  The "Door access" sidebar tab: every deployed door-account with its state and a Reconnect
  button, the latest records of its audit log (filterable, denied attempts by the rule that
  refused them, docs/access-rules.md; updated live over Node-RED comms),
  the chain's last seq and whether it verifies, a CSV download of a time range, and the
  differences the service description check found (docs/service-description.md#what-you-see).
  Runtime half: src/plugin/sidebar.ts (admin endpoints under door-access/sidebar/).
  Every text from the runtime is set with .text(), never as HTML; notifications are made from
  text by resources/door-picker.js (loaded below), as in the node dialogs.
-->
<style>
    .door-access-sidebar { padding: 8px 10px; font-size: 13px; overflow-y: auto; height: 100%; box-sizing: border-box; }
    .door-access-sidebar .da-row { display: flex; gap: 6px; align-items: center; margin-bottom: 6px; flex-wrap: wrap; }
    .door-access-sidebar select, .door-access-sidebar input { font-size: 12px; }
    .door-access-sidebar .da-grow { flex: 1 1 auto; min-width: 0; }
    .door-access-sidebar .da-state { display: inline-flex; align-items: center; gap: 5px; }
    .door-access-sidebar .da-dot { width: 9px; height: 9px; border-radius: 50%; display: inline-block; background: #999; }
    .door-access-sidebar .da-dot.green { background: #5a8; } .door-access-sidebar .da-dot.yellow { background: #eb3; } .door-access-sidebar .da-dot.red { background: #c33; }
    .door-access-sidebar .da-chain { color: var(--red-ui-secondary-text-color, #666); margin-bottom: 6px; }
    .door-access-sidebar .da-chain.bad { color: #c33; font-weight: bold; }
    /* At the sidebar's default width (315 px) the four columns cannot show every text on one line:
       a cell wraps instead of cutting its text. The time stays on one line; an actor or a door (an
       id like node-red:0123456789abcdef) may break anywhere; an outcome wraps between words. */
    .door-access-sidebar table { width: 100%; border-collapse: collapse; table-layout: auto; }
    .door-access-sidebar th, .door-access-sidebar td { text-align: left; vertical-align: top; padding: 3px 4px; border-bottom: 1px solid var(--red-ui-secondary-border-color, #ddd); white-space: normal; }
    .door-access-sidebar th, .door-access-sidebar td.da-time { white-space: nowrap; }
    .door-access-sidebar td.da-actor, .door-access-sidebar td.da-door { overflow-wrap: anywhere; }
    .door-access-sidebar .da-filters input { flex: 1 1 70px; min-width: 0; width: auto; }
    .door-access-sidebar .da-filters select { flex: 0 0 auto; width: auto; max-width: 100%; }
    .door-access-sidebar th { font-weight: normal; color: var(--red-ui-secondary-text-color, #666); }
    .door-access-sidebar .da-badge { display: inline-block; padding: 0 4px; border-radius: 3px; font-size: 11px; margin: 0 3px; }
    .door-access-sidebar .da-badge.replay { background: #e3ecfa; color: #235; }
    .door-access-sidebar .da-badge.rejected { background: #fbe3e3; color: #722; }
    .door-access-sidebar tr.is-accepted td.da-outcome { color: #286; }
    .door-access-sidebar tr.is-failed td.da-outcome, .door-access-sidebar tr.is-rejected td.da-outcome { color: #b22; }
    .door-access-sidebar .da-empty { color: var(--red-ui-secondary-text-color, #666); padding: 8px 0; }
    .door-access-sidebar fieldset { border: 1px solid var(--red-ui-secondary-border-color, #ddd); padding: 6px 8px; margin: 10px 0 0 0; }
    .door-access-sidebar legend { font-size: 12px; width: auto; border: 0; margin: 0; padding: 0 4px; }
    .door-access-sidebar .da-spec { border-left: 3px solid #eb3; background: var(--red-ui-secondary-background, #fdf6e3); padding: 4px 6px; margin-bottom: 6px; }
    .door-access-sidebar .da-spec ul { margin: 3px 0 0 16px; padding: 0; }
    .door-access-sidebar .da-spec li { overflow-wrap: anywhere; }
</style>

<script type="text/javascript" src="resources/@door-access/node-red/door-picker.js"></script>

<script type="text/javascript">
(function () {
    "use strict";
    var NS = "@door-access/node-red/door-access-sidebar:";
    var BASE = "door-access/sidebar/accounts";
    var OUTCOMES = ["accepted", "denied", "invalid-input", "retained-rejected", "session-halted", "service-unreachable", "unauthorized",
        "forbidden", "not-found", "rate-limited", "unreachable", "offline", "timeout", "network-error", "error"];
    // The rules a denied attempt names as its reason (docs/access-rules.md).
    var DENY_REASONS = ["actor", "schedule", "cooldown", "pin", "locked-out", "configuration"];

    function t(key, opts) { return RED._(NS + key, opts); }
    // A notification made from text (resources/door-picker.js): an error quotes the runtime.
    function notifyText(text, type) { return window.DoorAccessEditor.notifyText(text, type); }
    function errorText(xhr) {
        var body = xhr.responseJSON;
        if (!body && xhr.responseText) { try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; } }
        return body && typeof body.error === "string" ? body.error : (xhr.status ? "HTTP " + xhr.status : t("errors.no-answer"));
    }
    function localTime(ts) {
        var d = new Date(ts);
        if (isNaN(d.getTime())) { return String(ts); }
        // Today: the time alone; before: the date too (the full ISO time is in the tooltip).
        return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleDateString() + " " + d.toLocaleTimeString();
    }
    function isoOrEmpty(localValue) {
        if (!localValue) { return ""; }
        var d = new Date(localValue);
        return isNaN(d.getTime()) ? null : d.toISOString();
    }

    function build() {
        var root = $('<div id="door-access-sidebar" class="door-access-sidebar"></div>');
        var accountRow = $('<div class="da-row"></div>').appendTo(root);
        var accountSel = $('<select id="door-access-account" class="da-grow"></select>').appendTo(accountRow);
        var refreshBtn = $('<button type="button" class="red-ui-button red-ui-button-small" id="door-access-refresh"><i class="fa fa-refresh"></i></button>')
            .attr("title", t("sidebar.refresh")).appendTo(accountRow);
        var stateRow = $('<div class="da-row"></div>').appendTo(root);
        var state = $('<span id="door-access-state" class="da-state da-grow"><span class="da-dot"></span><span class="da-state-text"></span></span>').appendTo(stateRow);
        var reconnectBtn = $('<button type="button" class="red-ui-button red-ui-button-small" id="door-access-reconnect"></button>')
            .text(t("sidebar.reconnect")).appendTo(stateRow);
        var spec = $('<div id="door-access-spec" class="da-spec"></div>').hide().appendTo(root);
        var chain = $('<div id="door-access-chain" class="da-chain"></div>').appendTo(root);

        // Two text filters side by side; the outcome select as wide as its longest outcome, on the
        // next line when the sidebar is too narrow for all three.
        var filterRow = $('<div class="da-row da-filters"></div>').appendTo(root);
        var doorFilter = $('<input type="text" id="door-access-filter-door">').attr("placeholder", t("filter.door")).appendTo(filterRow);
        var actorFilter = $('<input type="text" id="door-access-filter-actor">').attr("placeholder", t("filter.actor")).appendTo(filterRow);
        var outcomeFilter = $('<select id="door-access-filter-outcome"></select>').appendTo(filterRow);
        $("<option>").val("").text(t("filter.any-outcome")).appendTo(outcomeFilter);
        $("<option>").val("attempt").text(t("outcome.attempt")).appendTo(outcomeFilter);
        $("<option>").val("rejected").text(t("outcome.rejected")).appendTo(outcomeFilter);
        OUTCOMES.forEach(function (o) { $("<option>").val(o).text(o).appendTo(outcomeFilter); });
        // Denied attempts: which rule refused them (shown while the outcome filter is "denied").
        var reasonRow = $('<div class="da-row"></div>').hide().appendTo(root);
        var reasonFilter = $('<select id="door-access-filter-reason" class="da-grow"></select>').appendTo(reasonRow);
        $("<option>").val("").text(t("filter.any-reason")).appendTo(reasonFilter);
        DENY_REASONS.forEach(function (r) { $("<option>").val(r).text(t("reason-long." + r)).appendTo(reasonFilter); });

        var table = $('<table id="door-access-records"><colgroup><col style="width: 20%"><col style="width: 22%"><col style="width: 22%"><col style="width: 36%"></colgroup></table>').appendTo(root);
        $("<thead><tr></tr></thead>").appendTo(table).find("tr")
            .append($("<th>").text(t("column.time")), $("<th>").text(t("column.actor")), $("<th>").text(t("column.door")), $("<th>").text(t("column.outcome")));
        var tbody = $("<tbody></tbody>").appendTo(table);
        var empty = $('<div class="da-empty" id="door-access-empty"></div>').appendTo(root);
        var moreBtn = $('<button type="button" class="red-ui-button red-ui-button-small" id="door-access-more"></button>').text(t("sidebar.older")).hide().appendTo(root);

        var csv = $("<fieldset></fieldset>").appendTo(root);
        $("<legend>").text(t("csv.title")).appendTo(csv);
        var csvRow1 = $('<div class="da-row"></div>').appendTo(csv);
        $("<label>").attr("for", "door-access-csv-from").text(t("csv.from")).css("width", "40px").appendTo(csvRow1);
        var csvFrom = $('<input type="datetime-local" id="door-access-csv-from" class="da-grow">').appendTo(csvRow1);
        var csvRow2 = $('<div class="da-row"></div>').appendTo(csv);
        $("<label>").attr("for", "door-access-csv-to").text(t("csv.to")).css("width", "40px").appendTo(csvRow2);
        var csvTo = $('<input type="datetime-local" id="door-access-csv-to" class="da-grow">').appendTo(csvRow2);
        var csvBtn = $('<button type="button" class="red-ui-button" id="door-access-csv"></button>')
            .append('<i class="fa fa-download"></i> ').append($("<span>").text(t("csv.download"))).appendTo(csv);

        var accounts = [];
        var current = null;
        var records = [];
        var loadSeq = 0;
        var refreshTimer = null;
        var lastVerify = 0;
        var verifyTimer = null;

        function selected() {
            for (var i = 0; i < accounts.length; i++) { if (accounts[i].id === current) { return accounts[i]; } }
            return null;
        }
        function showState() {
            var a = selected();
            var dot = state.find(".da-dot").removeClass("green yellow red");
            if (!a) {
                state.find(".da-state-text").text(accounts.length ? "" : t("sidebar.no-accounts"));
                reconnectBtn.prop("disabled", true);
                showSpec(null);
                return;
            }
            var fill = a.status && a.status.fill;
            if (fill === "green" || fill === "yellow" || fill === "red") { dot.addClass(fill); }
            state.find(".da-state-text").text((a.status && a.status.text) || a.state).attr("title", a.reason || "");
            reconnectBtn.prop("disabled", false);
            showSpec(a);
        }
        // What the service description check found: each difference as text, never as HTML.
        function showSpec(a) {
            var d = a && a.serviceDescription;
            var list = d && Array.isArray(d.differences) ? d.differences : [];
            spec.empty();
            if (!list.length) { spec.hide(); return; }
            $('<div class="da-spec-title"></div>').text(t("spec.differs", { number: list.length }))
                .attr("title", String(d.url || "") + (d.checkedAt ? "  " + localTime(d.checkedAt) : "")).appendTo(spec);
            var ul = $("<ul></ul>").appendTo(spec);
            list.forEach(function (x) { $("<li></li>").text(String(x)).appendTo(ul); });
            spec.show();
        }
        function loadAccounts(done) {
            $.ajax({ url: BASE, dataType: "json", cache: false }).done(function (body) {
                accounts = body.accounts || [];
                var keep = current;
                accountSel.empty();
                accounts.forEach(function (a) {
                    $("<option>").val(a.id).text(a.name || a.id).appendTo(accountSel);
                });
                if (!accounts.some(function (a) { return a.id === keep; })) { keep = accounts.length ? accounts[0].id : null; }
                var changed = keep !== current;
                current = keep;
                if (current) { accountSel.val(current); }
                showState();
                if (done) { done(changed); }
            }).fail(function (xhr) {
                state.find(".da-state-text").text(errorText(xhr));
            });
        }
        function filterQuery() {
            var q = {};
            if ($.trim(doorFilter.val())) { q.door = $.trim(doorFilter.val()); }
            if ($.trim(actorFilter.val())) { q.actor = $.trim(actorFilter.val()); }
            if (outcomeFilter.val()) { q.outcome = outcomeFilter.val(); }
            if (outcomeFilter.val() === "denied" && reasonFilter.val()) { q.reason = reasonFilter.val(); }
            return q;
        }
        function row(r) {
            var tr = $('<tr class="door-access-record"></tr>').attr("data-type", r.type);
            if (typeof r.seq === "number") { tr.attr("data-seq", r.seq); }
            var outcome = $('<td class="da-outcome"></td>');
            if (r.type === "unlock-attempt") {
                tr.addClass("is-attempt");
                outcome.text(t("outcome.attempt"));
                if (r.replay === true) {
                    tr.addClass("is-replay");
                    outcome.append($('<span class="da-badge replay"></span>').text(t("outcome.replay")));
                }
            } else if (r.type === "unlock-rejected" && r.outcome === "denied") {
                // A denied attempt: the rule that refused it, in words (the word itself in the tooltip).
                tr.addClass("is-rejected is-denied");
                var known = DENY_REASONS.indexOf(r.reason) !== -1;
                outcome.append($('<span class="da-badge rejected"></span>').text(t("outcome.denied")),
                    $('<span class="da-reason"></span>').text(" " + (known ? t("reason." + r.reason) : String(r.reason || ""))));
                outcome.attr("title", t("outcome.denied-title", { text: known ? t("reason-long." + r.reason) : String(r.reason || ""), reason: String(r.reason || "") }));
            } else if (r.type === "unlock-rejected") {
                tr.addClass("is-rejected");
                // The badge first: the mark leads, a long outcome wraps after it.
                outcome.append($('<span class="da-badge rejected"></span>').text(t("outcome.rejected")), $("<span>").text(" " + (r.outcome || "")));
                outcome.attr("title", r.reason || "");
            } else {
                tr.addClass(r.outcome === "accepted" ? "is-accepted" : "is-failed");
                outcome.text((r.outcome || "") + (r.status !== null && r.status !== undefined ? " " + r.status : ""));
            }
            var door = (r.door || (r.deviceId !== null && r.deviceId !== undefined ? t("sidebar.device", { id: r.deviceId }) : "\u2014")) + (r.lockId !== null && r.lockId !== undefined ? " / " + r.lockId : "");
            tr.append(
                $('<td class="da-time"></td>').text(localTime(r.ts)).attr("title", r.ts + (typeof r.seq === "number" ? "  #" + r.seq : "")),
                $('<td class="da-actor"></td>').text(r.actor || "").attr("title", r.actor || ""),
                $('<td class="da-door"></td>').text(door).attr("title", door),
                outcome
            );
            return tr;
        }
        function render(more) {
            tbody.empty();
            records.forEach(function (r) { tbody.append(row(r)); });
            empty.text(records.length ? "" : t("sidebar.no-records")).toggle(records.length === 0);
            // Paging goes by seq: a log written before the hash chain shows its newest page only.
            var last = records[records.length - 1];
            moreBtn.toggle(!!more && !!last && typeof last.seq === "number");
        }
        function loadRecords(older) {
            if (!current) { records = []; render(false); chain.text(""); return; }
            var mine = ++loadSeq;
            var q = filterQuery();
            q.limit = 50;
            if (older && records.length && typeof records[records.length - 1].seq === "number") { q.beforeSeq = records[records.length - 1].seq; }
            $.ajax({ url: BASE + "/" + encodeURIComponent(current) + "/records", data: q, dataType: "json", cache: false }).done(function (body) {
                if (mine !== loadSeq) { return; }
                records = older ? records.concat(body.records) : body.records;
                render(body.more);
                root.attr("data-last-seq", body.lastSeq === null ? "" : body.lastSeq);
            }).fail(function (xhr) {
                if (mine !== loadSeq) { return; }
                records = [];
                render(false);
                empty.text(errorText(xhr)).show();
            });
        }
        function verify() {
            if (!current) { return; }
            lastVerify = Date.now();
            var id = current;
            $.ajax({ url: BASE + "/" + encodeURIComponent(id) + "/verify", dataType: "json", cache: false }).done(function (r) {
                if (id !== current) { return; }
                chain.removeClass("bad");
                if (r.ok === true) {
                    chain.text(t("chain.ok", { seq: r.lastSeq })).attr("title", r.message);
                } else if (r.ok === false) {
                    chain.addClass("bad").text(t("chain.broken", { message: r.message })).attr("title", r.message);
                } else {
                    chain.text(t("chain.none", { count: r.records })).attr("title", r.message);
                }
            }).fail(function (xhr) {
                chain.addClass("bad").text(errorText(xhr));
            });
        }
        function verifySoon() {
            // verify reads the whole log: at most once every 3 s while records stream in.
            if (verifyTimer) { return; }
            verifyTimer = setTimeout(function () { verifyTimer = null; verify(); }, Math.max(0, 3000 - (Date.now() - lastVerify)));
        }
        function refreshAll() {
            loadAccounts(function () { loadRecords(false); verify(); });
        }
        function refreshSoon() {
            if (refreshTimer) { return; }
            refreshTimer = setTimeout(function () {
                refreshTimer = null;
                loadAccounts(function (changed) { loadRecords(false); if (changed) { verify(); } else { verifySoon(); } });
            }, 100);
        }

        accountSel.on("change", function () { current = accountSel.val(); showState(); loadRecords(false); verify(); });
        refreshBtn.on("click", refreshAll);
        var filterTimer = null;
        doorFilter.add(actorFilter).on("input", function () {
            clearTimeout(filterTimer);
            filterTimer = setTimeout(function () { loadRecords(false); }, 250);
        });
        outcomeFilter.on("change", function () {
            reasonRow.toggle(outcomeFilter.val() === "denied");
            loadRecords(false);
        });
        reasonFilter.on("change", function () { loadRecords(false); });
        moreBtn.on("click", function () { loadRecords(true); });
        reconnectBtn.on("click", function () {
            var id = current;
            if (!id) { return; }
            reconnectBtn.prop("disabled", true);
            $.ajax({
                url: "door-access/accounts/" + encodeURIComponent(id) + "/reconnect", method: "POST",
                headers: { "X-Requested-With": "XMLHttpRequest" }, contentType: "application/json", data: "{}"
            }).done(function () {
                notifyText(t("sidebar.reconnect-requested"), "success");
                // The login takes a moment: show the new state as it comes.
                [500, 1500, 4000].forEach(function (ms) { setTimeout(function () { loadAccounts(); }, ms); });
            }).fail(function (xhr) {
                notifyText(t("sidebar.reconnect-failed", { error: errorText(xhr) }), "error");
            }).always(function () { reconnectBtn.prop("disabled", false); });
        });
        csvBtn.on("click", function () {
            var id = current;
            if (!id) { return; }
            var from = isoOrEmpty(csvFrom.val());
            var to = isoOrEmpty(csvTo.val());
            if (from === null || to === null) { notifyText(t("csv.bad-range"), "error"); return; }
            var q = {};
            if (from) { q.from = from; }
            if (to) { q.to = to; }
            // Through $.ajax, so the editor's access token goes with it (a plain link would not carry it).
            $.ajax({ url: BASE + "/" + encodeURIComponent(id) + "/export.csv", data: q, dataType: "text", cache: false }).done(function (text) {
                var blob = new Blob([text], { type: "text/csv;charset=utf-8" });
                var url = URL.createObjectURL(blob);
                var a = $("<a>").attr({ href: url, download: "door-access-audit-" + id + ".csv" }).appendTo("body");
                a[0].click();
                a.remove();
                setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
            }).fail(function (xhr) {
                notifyText(t("csv.failed", { error: errorText(xhr) }), "error");
            });
        });

        RED.comms.subscribe("door-access/audit", function (topic, data) {
            if (data && Array.isArray(data.accounts) && data.accounts.indexOf(current) !== -1) { refreshSoon(); }
        });
        RED.events.on("deploy", function () { setTimeout(refreshAll, 500); });
        // Account states change without a record (a login, a halt): looked up every 5 s while the tab is shown.
        setInterval(function () { if (root.is(":visible")) { loadAccounts(); } }, 5000);

        return { root: root, refresh: refreshAll };
    }

    RED.plugins.registerPlugin("door-access-sidebar", {
        onadd: function () {
            var tab = build();
            RED.sidebar.addTab({
                id: "door-access",
                label: t("sidebar.label"),
                name: t("sidebar.name"),
                iconClass: "fa fa-key",
                content: tab.root,
                enableOnEdit: true,
                onchange: function () { tab.refresh(); }
            });
            RED.actions.add("door-access:show-door-access-tab", function () { RED.sidebar.show("door-access"); });
        }
    });
})();
</script>
