/**
 * The "Door access" sidebar tab (editor plugin `door-access-sidebar`): every deployed door-account
 * with its state and a Reconnect button, the latest records of its audit log (filterable, denied
 * attempts by the rule that refused them, docs/access-rules.md; updated live over Node-RED comms),
 * the chain's last seq and whether it verifies, a CSV download of a time range, and the
 * differences the service description check found (docs/service-description.md#what-you-see), and
 * the account's guest passes with a Revoke button (editor/passes.ts, docs/passes.md#in-the-sidebar).
 * Runtime half: door-access-sidebar.ts in this folder (admin endpoints under door-access/sidebar/).
 * Every text from the runtime is set with .text(), never as HTML; notifications are made from
 * text (nodes/common/editor/text.ts), as in the node dialogs.
 *
 * The build (scripts/editor-build.ts) bundles this file with what it imports, and editor/style.css,
 * into the plugin's door-access-sidebar.html.
 */
import { adminError, notifyText } from "../../common/editor/text.js";
import { type AccountFindings, localTime, showEvents, showSpec, t, text } from "./findings.js";
import { passesView } from "./passes.js";
import { lockoutsView } from "./lockouts.js";

const BASE = "door-access/sidebar/accounts";
/** Records asked for per page (the runtime's page size: door-access-sidebar.ts). */
const PAGE = 50;
const OUTCOMES = [
  "accepted",
  "denied",
  "invalid-input",
  "retained-rejected",
  "session-halted",
  "service-unreachable",
  "unauthorized",
  "forbidden",
  "not-found",
  "rate-limited",
  "unreachable",
  "offline",
  "timeout",
  "network-error",
  "error",
];
// The rules a denied attempt names as its reason (docs/access-rules.md).
const DENY_REASONS = ["actor", "schedule", "cooldown", "pin", "locked-out", "configuration"];

/** An account as the sidebar's list endpoint gives it. */
interface SidebarAccount extends AccountFindings {
  id: string;
  name?: string;
  state?: string;
  reason?: string;
  status?: { fill?: string; text?: string };
}

/** An audit record as the records endpoint gives it. */
interface AuditRecordRow {
  type?: string;
  seq?: unknown;
  ts?: string;
  outcome?: string;
  status?: number | null;
  reason?: string;
  replay?: boolean;
  actor?: string;
  door?: string;
  deviceId?: number | null;
  lockId?: number | null;
}

function errorText(xhr: JQuery.jqXHR): string {
  return adminError(xhr) ?? (xhr.status ? `HTTP ${xhr.status}` : t("errors.no-answer"));
}
function isoOrEmpty(localValue: unknown): string | null {
  if (!localValue) return "";
  const d = new Date(localValue as string);
  return isNaN(d.getTime()) ? null : d.toISOString();
}

function build(): { root: JQuery; refresh: () => void } {
  const root = $('<div id="door-access-sidebar" class="door-access-sidebar"></div>');
  const accountRow = $('<div class="da-row"></div>').appendTo(root);
  const accountSel = $('<select id="door-access-account" class="da-grow"></select>').appendTo(accountRow);
  const refreshBtn = $(
    '<button type="button" class="red-ui-button red-ui-button-small" id="door-access-refresh"><i class="fa fa-refresh"></i></button>',
  )
    .attr("title", t("sidebar.refresh"))
    .appendTo(accountRow);
  const stateRow = $('<div class="da-row"></div>').appendTo(root);
  const state = $(
    '<span id="door-access-state" class="da-state da-grow"><span class="da-dot"></span><span class="da-state-text"></span></span>',
  ).appendTo(stateRow);
  const reconnectBtn = $(
    '<button type="button" class="red-ui-button red-ui-button-small" id="door-access-reconnect"></button>',
  )
    .text(t("sidebar.reconnect"))
    .appendTo(stateRow);
  // Why the account cannot be used, in full and once (statuses are short).
  const reasonLine = $('<div id="door-access-reason" class="da-reason-line"></div>').hide().appendTo(root);
  const spec = $('<div id="door-access-spec" class="da-spec"></div>').hide().appendTo(root);
  // docs/access-rules.md#ending-a-lockout: the locked door-unlock nodes and doors, each with End lockout.
  const lockouts = lockoutsView();
  lockouts.root.appendTo(root);
  // The passes right under the account's state (and its lockouts): the events list never pushes
  // them down (docs/passes.md#in-the-sidebar).
  const passes = passesView();
  passes.root.appendTo(root);
  const events = $('<div id="door-access-events" class="da-events"></div>').hide().appendTo(root);
  const chain = $('<div id="door-access-chain" class="da-chain"></div>').appendTo(root);

  // Two text filters side by side; the outcome select as wide as its longest outcome, on the
  // next line when the sidebar is too narrow for all three.
  const filterRow = $('<div class="da-row da-filters"></div>').appendTo(root);
  const doorFilter = $('<input type="text" id="door-access-filter-door">')
    .attr("placeholder", t("filter.door"))
    .appendTo(filterRow);
  const actorFilter = $('<input type="text" id="door-access-filter-actor">')
    .attr("placeholder", t("filter.actor"))
    .appendTo(filterRow);
  const outcomeFilter = $('<select id="door-access-filter-outcome"></select>').appendTo(filterRow);
  $("<option>").val("").text(t("filter.any-outcome")).appendTo(outcomeFilter);
  $("<option>").val("attempt").text(t("outcome.attempt")).appendTo(outcomeFilter);
  $("<option>").val("rejected").text(t("outcome.rejected")).appendTo(outcomeFilter);
  OUTCOMES.forEach((o) => {
    $("<option>").val(o).text(o).appendTo(outcomeFilter);
  });
  // Denied attempts: which rule refused them (shown while the outcome filter is "denied").
  const reasonRow = $('<div class="da-row"></div>').hide().appendTo(root);
  const reasonFilter = $('<select id="door-access-filter-reason" class="da-grow"></select>').appendTo(reasonRow);
  $("<option>").val("").text(t("filter.any-reason")).appendTo(reasonFilter);
  DENY_REASONS.forEach((r) => {
    $("<option>")
      .val(r)
      .text(t(`reason-long.${r}`))
      .appendTo(reasonFilter);
  });

  const table = $(
    '<table id="door-access-records"><colgroup><col style="width: 20%"><col style="width: 22%"><col style="width: 22%"><col style="width: 36%"></colgroup></table>',
  ).appendTo(root);
  $("<thead><tr></tr></thead>")
    .appendTo(table)
    .find("tr")
    .append(
      $("<th>").text(t("column.time")),
      $("<th>").text(t("column.actor")),
      $("<th>").text(t("column.door")),
      $("<th>").text(t("column.outcome")),
    );
  const tbody = $("<tbody></tbody>").appendTo(table);
  const empty = $('<div class="da-empty" id="door-access-empty"></div>').appendTo(root);
  const moreBtn = $('<button type="button" class="red-ui-button red-ui-button-small" id="door-access-more"></button>')
    .text(t("sidebar.older"))
    .hide()
    .appendTo(root);

  const csv = $("<fieldset></fieldset>").appendTo(root);
  $("<legend>").text(t("csv.title")).appendTo(csv);
  const csvRow1 = $('<div class="da-row"></div>').appendTo(csv);
  $("<label>").attr("for", "door-access-csv-from").text(t("csv.from")).css("width", "40px").appendTo(csvRow1);
  const csvFrom = $('<input type="datetime-local" id="door-access-csv-from" class="da-grow">').appendTo(csvRow1);
  const csvRow2 = $('<div class="da-row"></div>').appendTo(csv);
  $("<label>").attr("for", "door-access-csv-to").text(t("csv.to")).css("width", "40px").appendTo(csvRow2);
  const csvTo = $('<input type="datetime-local" id="door-access-csv-to" class="da-grow">').appendTo(csvRow2);
  const csvBtn = $('<button type="button" class="red-ui-button" id="door-access-csv"></button>')
    .append('<i class="fa fa-download"></i> ')
    .append($("<span>").text(t("csv.download")))
    .appendTo(csv);

  let accounts: SidebarAccount[] = [];
  let current: string | null = null;
  let records: AuditRecordRow[] = [];
  let loadSeq = 0;
  let refreshTimer: ReturnType<typeof setTimeout> | null = null;
  let lastVerify = 0;
  let verifyTimer: ReturnType<typeof setTimeout> | null = null;

  function selected(): SidebarAccount | null {
    return accounts.find((a) => a.id === current) ?? null;
  }
  /** The selected account cannot be used (its reason is shown once, under its state). */
  function unusable(): boolean {
    const a = selected();
    return !!a && !!a.reason && !!a.status && a.status.fill === "red";
  }
  function showState(): void {
    const a = selected();
    const dot = state.find(".da-dot").removeClass("green yellow red");
    if (!a) {
      reasonLine.text("").hide();
      state.find(".da-state-text").text(accounts.length ? "" : t("sidebar.no-accounts"));
      reconnectBtn.prop("disabled", true);
      showSpec(spec, null);
      showEvents(events, null);
      return;
    }
    const fill = a.status && a.status.fill;
    if (fill === "green" || fill === "yellow" || fill === "red") dot.addClass(fill);
    state
      .find(".da-state-text")
      .text((a.status && a.status.text) || text(a.state))
      .attr("title", a.reason || "");
    reasonLine.text(text(a.reason)).toggle(fill === "red" && !!a.reason);
    reconnectBtn.prop("disabled", false);
    showSpec(spec, a);
    showEvents(events, a);
  }
  function loadAccounts(done?: (changed: boolean) => void): void {
    $.ajax({ url: BASE, dataType: "json", cache: false })
      .done((body: { accounts?: SidebarAccount[] }) => {
        accounts = body.accounts || [];
        let keep = current;
        accountSel.empty();
        accounts.forEach((a) => {
          $("<option>")
            .val(a.id)
            .text(a.name || a.id)
            .appendTo(accountSel);
        });
        if (!accounts.some((a) => a.id === keep)) keep = accounts.length ? accounts[0].id : null;
        const changed = keep !== current;
        current = keep;
        if (current) accountSel.val(current);
        showState();
        if (done) done(changed);
      })
      .fail((xhr: JQuery.jqXHR) => {
        state.find(".da-state-text").text(errorText(xhr));
      });
  }
  function filterQuery(): Record<string, string | number> {
    const q: Record<string, string | number> = {};
    const door = String(doorFilter.val() || "").trim();
    const actor = String(actorFilter.val() || "").trim();
    const outcome = String(outcomeFilter.val() || "");
    if (door) q.door = door;
    if (actor) q.actor = actor;
    if (outcome) q.outcome = outcome;
    if (outcome === "denied" && reasonFilter.val()) q.reason = String(reasonFilter.val());
    return q;
  }
  function row(r: AuditRecordRow): JQuery {
    const tr = $('<tr class="door-access-record"></tr>').attr("data-type", text(r.type));
    if (typeof r.seq === "number") tr.attr("data-seq", r.seq);
    const outcome = $('<td class="da-outcome"></td>');
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
      const known = DENY_REASONS.indexOf(text(r.reason)) !== -1;
      outcome.append(
        $('<span class="da-badge rejected"></span>').text(t("outcome.denied")),
        $('<span class="da-reason"></span>').text(` ${known ? t(`reason.${text(r.reason)}`) : text(r.reason)}`),
      );
      outcome.attr(
        "title",
        t("outcome.denied-title", {
          text: known ? t(`reason-long.${text(r.reason)}`) : text(r.reason),
          reason: text(r.reason),
        }),
      );
    } else if (r.type === "unlock-rejected") {
      tr.addClass("is-rejected");
      // The badge first: the mark leads, a long outcome wraps after it.
      outcome.append(
        $('<span class="da-badge rejected"></span>').text(t("outcome.rejected")),
        $("<span>").text(` ${r.outcome || ""}`),
      );
      outcome.attr("title", r.reason || "");
    } else {
      tr.addClass(r.outcome === "accepted" ? "is-accepted" : "is-failed");
      outcome.text((r.outcome || "") + (r.status !== null && r.status !== undefined ? ` ${r.status}` : ""));
    }
    const door =
      (r.door ||
        (r.deviceId !== null && r.deviceId !== undefined ? t("sidebar.device", { id: r.deviceId }) : "\u2014")) +
      (r.lockId !== null && r.lockId !== undefined ? ` / ${r.lockId}` : "");
    tr.append(
      $('<td class="da-time"></td>')
        .text(localTime(r.ts))
        .attr("title", text(r.ts) + (typeof r.seq === "number" ? `  #${r.seq}` : "")),
      $('<td class="da-actor"></td>')
        .text(r.actor || "")
        .attr("title", r.actor || ""),
      $('<td class="da-door"></td>').text(door).attr("title", door),
      outcome,
    );
    return tr;
  }
  function render(more: boolean): void {
    tbody.empty();
    records.forEach((r) => {
      tbody.append(row(r));
    });
    empty.text(records.length ? "" : t("sidebar.no-records")).toggle(records.length === 0);
    // Paging goes by seq: a log written before the hash chain shows its newest page only.
    const last = records[records.length - 1];
    moreBtn.toggle(!!more && !!last && typeof last.seq === "number");
  }
  function loadRecords(older: boolean): void {
    if (!current) {
      records = [];
      render(false);
      chain.text("");
      return;
    }
    const mine = ++loadSeq;
    const q = filterQuery();
    q.limit = PAGE;
    const last = records[records.length - 1];
    if (older && last && typeof last.seq === "number") q.beforeSeq = last.seq;
    $.ajax({ url: `${BASE}/${encodeURIComponent(current)}/records`, data: q, dataType: "json", cache: false })
      .done((body: { records: AuditRecordRow[]; more?: boolean; lastSeq: number | null }) => {
        if (mine !== loadSeq) return;
        records = older ? records.concat(body.records) : body.records;
        render(!!body.more);
        root.attr("data-last-seq", body.lastSeq === null ? "" : body.lastSeq);
      })
      .fail((xhr: JQuery.jqXHR) => {
        if (mine !== loadSeq) return;
        records = [];
        render(false);
        empty.text(unusable() ? t("sidebar.records-unavailable") : errorText(xhr)).show();
      });
  }
  function verify(): void {
    if (!current) return;
    lastVerify = Date.now();
    const id = current;
    $.ajax({ url: `${BASE}/${encodeURIComponent(id)}/verify`, dataType: "json", cache: false })
      .done((r: { ok?: boolean | null; lastSeq?: unknown; message?: string; records?: unknown }) => {
        if (id !== current) return;
        chain.removeClass("bad");
        if (r.ok === true) {
          chain.text(t("chain.ok", { seq: r.lastSeq })).attr("title", text(r.message));
        } else if (r.ok === false) {
          chain
            .addClass("bad")
            .text(t("chain.broken", { message: r.message }))
            .attr("title", text(r.message));
        } else {
          chain.text(t("chain.none", { count: r.records })).attr("title", text(r.message));
        }
      })
      .fail((xhr: JQuery.jqXHR) => {
        if (unusable()) chain.removeClass("bad").text("");
        else chain.addClass("bad").text(errorText(xhr));
      });
  }
  function verifySoon(): void {
    // verify reads the whole log: at most once every 3 s while records stream in.
    if (verifyTimer) return;
    verifyTimer = setTimeout(
      () => {
        verifyTimer = null;
        verify();
      },
      Math.max(0, 3000 - (Date.now() - lastVerify)),
    );
  }
  function refreshAll(): void {
    loadAccounts(() => {
      loadRecords(false);
      verify();
      passes.load(current);
      lockouts.load(current);
    });
  }
  function refreshSoon(): void {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => {
      refreshTimer = null;
      loadAccounts((changed) => {
        loadRecords(false);
        passes.load(current);
        lockouts.load(current);
        if (changed) verify();
        else verifySoon();
      });
    }, 100);
  }

  accountSel.on("change", () => {
    current = String(accountSel.val() ?? "") || null;
    showState();
    loadRecords(false);
    verify();
    passes.load(current);
    lockouts.load(current);
  });
  refreshBtn.on("click", refreshAll);
  let filterTimer: ReturnType<typeof setTimeout> | undefined;
  doorFilter.add(actorFilter).on("input", () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => loadRecords(false), 250);
  });
  outcomeFilter.on("change", () => {
    reasonRow.toggle(outcomeFilter.val() === "denied");
    loadRecords(false);
  });
  reasonFilter.on("change", () => loadRecords(false));
  moreBtn.on("click", () => loadRecords(true));
  reconnectBtn.on("click", () => {
    const id = current;
    if (!id) return;
    reconnectBtn.prop("disabled", true);
    $.ajax({
      url: `door-access/accounts/${encodeURIComponent(id)}/reconnect`,
      method: "POST",
      headers: { "X-Requested-With": "XMLHttpRequest" },
      contentType: "application/json",
      data: "{}",
    })
      .done(() => {
        notifyText(t("sidebar.reconnect-requested"), "success");
        // The login takes a moment: show the new state as it comes.
        [500, 1500, 4000].forEach((ms) => setTimeout(() => loadAccounts(), ms));
      })
      .fail((xhr: JQuery.jqXHR) => {
        notifyText(t("sidebar.reconnect-failed", { error: errorText(xhr) }), "error");
      })
      .always(() => {
        reconnectBtn.prop("disabled", false);
      });
  });
  csvBtn.on("click", () => {
    const id = current;
    if (!id) return;
    const from = isoOrEmpty(csvFrom.val());
    const to = isoOrEmpty(csvTo.val());
    if (from === null || to === null) {
      notifyText(t("csv.bad-range"), "error");
      return;
    }
    const q: Record<string, string> = {};
    if (from) q.from = from;
    if (to) q.to = to;
    // Through $.ajax, so the editor's access token goes with it (a plain link would not carry it).
    $.ajax({ url: `${BASE}/${encodeURIComponent(id)}/export.csv`, data: q, dataType: "text", cache: false })
      .done((csvText: string) => {
        const blob = new Blob([csvText], { type: "text/csv;charset=utf-8" });
        const url = URL.createObjectURL(blob);
        const a = $("<a>")
          .attr({ href: url, download: `door-access-audit-${id}.csv` })
          .appendTo("body");
        a[0].click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
      })
      .fail((xhr: JQuery.jqXHR) => {
        notifyText(t("csv.failed", { error: errorText(xhr) }), "error");
      });
  });

  RED.comms.subscribe("door-access/audit", (_topic, data) => {
    const changed = data && typeof data === "object" ? (data as { accounts?: unknown }).accounts : undefined;
    if (Array.isArray(changed) && current !== null && changed.indexOf(current) !== -1) refreshSoon();
  });
  RED.events.on("deploy", () => {
    setTimeout(refreshAll, 500);
  });
  // Account states change without a record (a login, a halt): looked up every 5 s while the tab is shown.
  setInterval(() => {
    if (root.is(":visible")) loadAccounts();
  }, 5000);

  return { root, refresh: refreshAll };
}

RED.plugins.registerPlugin("door-access-sidebar", {
  onadd() {
    const tab = build();
    RED.sidebar.addTab({
      id: "door-access",
      label: t("sidebar.label"),
      name: t("sidebar.name"),
      iconClass: "fa fa-key",
      content: tab.root,
      enableOnEdit: true,
      onchange: () => tab.refresh(),
    });
    RED.actions.add("door-access:show-door-access-tab", () => RED.sidebar.show("door-access"));
  },
});
