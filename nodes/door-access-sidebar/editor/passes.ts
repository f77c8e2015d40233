/**
 * The account's guest passes in the "Door access" sidebar (docs/passes.md#in-the-sidebar): one
 * row per pass (guest, state, doors, window in local times, uses), live passes first, at most
 * PASSES_SHOWN until "Show all"; a Revoke button on each live pass, which asks first and needs
 * door-account.write; which door-pass node made it; a New code button (door-account.write) where
 * the runtime says the new code will reach a flow (docs/passes.md#a-new-code). The runtime never
 * sends a code, and the new code goes out on the node's output, not here. Every text is set with .text(), never as
 * HTML: a guest's name is whatever a flow or a booking calendar wrote.
 */
import { adminError, notifyText } from "../../common/editor/text.js";
import { localTime, t, text } from "./findings.js";

const BASE = "door-access/sidebar/accounts";
/** Rows shown before "Show all". */
const PASSES_SHOWN = 10;
const STATES = ["upcoming", "active", "expired", "used-up", "revoked"];

/** A pass as GET .../passes gives it (a flow's `list` view, docs/passes.md#revoke-and-list). */
interface PassRow {
  id?: unknown;
  guest?: unknown;
  doors?: { deviceId?: unknown; door?: unknown }[];
  from?: unknown;
  until?: unknown;
  uses?: unknown;
  used?: unknown;
  state?: unknown;
  ref?: unknown;
  madeBy?: { id?: unknown; name?: unknown; state?: unknown; calendar?: unknown } | null;
  newCode?: unknown;
}

/** Which node made the pass, in words (a name from the flows is set as text). */
function madeByText(p: PassRow): string {
  const by = p.madeBy;
  if (!by) return t("passes.by-unknown");
  const name = by.name ? text(by.name) : t("passes.unnamed-node");
  const key = by.calendar === true ? "passes.by-calendar" : "passes.by-flow";
  const made = t(key, { node: name });
  if (by.state === "deleted") return `${made} ${t("passes.node-deleted")}`;
  if (by.state === "disabled") return `${made} ${t("passes.node-disabled")}`;
  return made;
}

function isLive(p: PassRow): boolean {
  return p.state === "active" || p.state === "upcoming";
}

function doorsText(p: PassRow): string {
  const doors = Array.isArray(p.doors) ? p.doors : [];
  return doors.map((d) => (d && d.door ? text(d.door) : t("sidebar.device", { id: text(d && d.deviceId) }))).join(", ");
}

function usesText(p: PassRow): string {
  const uses = typeof p.uses === "number" ? String(p.uses) : "\u221e";
  return t("passes.uses", { used: text(p.used), uses });
}

/** The passes section: `load(account)` shows that account's passes (null: none). */
export function passesView(): { root: JQuery; load: (account: string | null) => void } {
  const root = $('<div id="door-access-passes" class="da-passes"></div>').hide();
  const title = $('<div class="da-passes-title"></div>').appendTo(root);
  const list = $('<ul id="door-access-pass-list"></ul>').appendTo(root);
  const note = $('<div class="da-passes-note"></div>').hide().appendTo(root);
  const allBtn = $(
    '<button type="button" class="red-ui-button red-ui-button-small" id="door-access-passes-all"></button>',
  )
    .hide()
    .appendTo(root);
  let account: string | null = null;
  let passes: PassRow[] = [];
  let showAll = false;
  let seq = 0;

  function revoke(p: PassRow, button: JQuery): void {
    const id = account;
    if (!id) return;
    button.prop("disabled", true);
    $.ajax({
      url: `${BASE}/${encodeURIComponent(id)}/passes/${encodeURIComponent(text(p.id))}/revoke`,
      method: "POST",
      headers: { "X-Requested-With": "XMLHttpRequest" },
      contentType: "application/json",
      data: "{}",
    })
      .done(() => {
        notifyText(t("passes.revoked", { guest: text(p.guest) }), "success");
      })
      .fail((xhr: JQuery.jqXHR) => {
        const why = adminError(xhr) ?? (xhr.status ? `HTTP ${xhr.status}` : t("errors.no-answer"));
        notifyText(t("passes.revoke-failed", { error: why }), "error");
      })
      .always(() => {
        if (id === account) load(id);
      });
  }

  function reissue(p: PassRow, button: JQuery): void {
    const id = account;
    if (!id) return;
    button.prop("disabled", true);
    $.ajax({
      url: `${BASE}/${encodeURIComponent(id)}/passes/${encodeURIComponent(text(p.id))}/reissue`,
      method: "POST",
      headers: { "X-Requested-With": "XMLHttpRequest" },
      contentType: "application/json",
      data: "{}",
    })
      .done(() => {
        notifyText(t("passes.reissued", { guest: text(p.guest) }), "success");
      })
      .fail((xhr: JQuery.jqXHR) => {
        const why = adminError(xhr) ?? (xhr.status ? `HTTP ${xhr.status}` : t("errors.no-answer"));
        notifyText(t("passes.reissue-failed", { error: why }), "error");
      })
      .always(() => {
        if (id === account) load(id);
      });
  }

  /** The Revoke button (and New code where it may be offered), then in their place the question and Revoke / Cancel. */
  function actions(p: PassRow, box: JQuery): void {
    box.empty();
    if (p.newCode === true && RED.user.hasPermission("door-account.write"))
      $('<button type="button" class="red-ui-button red-ui-button-small da-pass-reissue"></button>')
        .text(t("passes.new-code"))
        .attr("title", t("passes.new-code-title"))
        .on("click", function () {
          reissue(p, $(this));
        })
        .appendTo(box);
    $('<button type="button" class="red-ui-button red-ui-button-small da-pass-revoke"></button>')
      .text(t("passes.revoke"))
      .on("click", () => {
        box.empty();
        $('<span class="da-pass-question"></span>')
          .text(t("passes.revoke-confirm", { guest: text(p.guest) }))
          .appendTo(box);
        const yes = $('<button type="button" class="red-ui-button red-ui-button-small da-pass-confirm"></button>')
          .text(t("passes.revoke"))
          .appendTo(box);
        $('<button type="button" class="red-ui-button red-ui-button-small da-pass-cancel"></button>')
          .text(t("passes.cancel"))
          .on("click", () => actions(p, box))
          .appendTo(box);
        yes.on("click", () => revoke(p, yes));
      })
      .appendTo(box);
  }

  function row(p: PassRow): JQuery {
    const state = STATES.indexOf(text(p.state)) !== -1 ? text(p.state) : "";
    const li = $('<li class="da-pass"></li>').attr({ "data-id": text(p.id), "data-state": text(p.state) });
    const head = $('<div class="da-pass-head"></div>').appendTo(li);
    $('<span class="da-pass-guest"></span>').text(text(p.guest)).attr("title", text(p.ref)).appendTo(head);
    $('<span class="da-badge da-pass-state"></span>')
      .addClass(state)
      .text(state ? t(`passes.state.${state}`) : text(p.state))
      .appendTo(head);
    $('<div class="da-pass-doors"></div>').text(doorsText(p)).appendTo(li);
    $('<div class="da-pass-by"></div>').text(madeByText(p)).appendTo(li);
    $('<div class="da-pass-window"></div>')
      .text(t("passes.window", { from: localTime(p.from), until: localTime(p.until) }))
      .attr("title", `${text(p.from)} \u2013 ${text(p.until)}`)
      .appendTo(li);
    const foot = $('<div class="da-pass-foot"></div>').appendTo(li);
    $('<span class="da-pass-uses"></span>').text(usesText(p)).appendTo(foot);
    if (isLive(p)) actions(p, $('<span class="da-pass-actions"></span>').appendTo(foot));
    return li;
  }

  function render(): void {
    list.empty();
    note.hide();
    const live = passes.filter(isLive).length;
    title.text(t("passes.title", { live, number: passes.length }));
    const shown = showAll ? passes : passes.slice(0, PASSES_SHOWN);
    for (const p of shown) list.append(row(p));
    if (!passes.length) note.text(t("passes.none")).show();
    allBtn
      .text(showAll ? t("passes.fewer") : t("passes.all", { number: passes.length }))
      .toggle(passes.length > PASSES_SHOWN);
  }

  function load(id: string | null): void {
    if (id !== account) showAll = false;
    account = id;
    const mine = ++seq;
    if (!id) {
      passes = [];
      root.hide();
      return;
    }
    $.ajax({ url: `${BASE}/${encodeURIComponent(id)}/passes`, dataType: "json", cache: false })
      .done((body: { passes?: PassRow[] }) => {
        if (mine !== seq) return;
        passes = Array.isArray(body.passes) ? body.passes : [];
        render();
        root.show();
      })
      .fail((xhr: JQuery.jqXHR) => {
        if (mine !== seq) return;
        // An account that cannot be used says why under its state; its passes wait for it.
        passes = [];
        if (xhr.status === 409) {
          root.hide();
          return;
        }
        list.empty();
        allBtn.hide();
        title.text(t("passes.title-only"));
        note.text(adminError(xhr) ?? (xhr.status ? `HTTP ${xhr.status}` : t("errors.no-answer"))).show();
        root.show();
      });
  }

  allBtn.on("click", () => {
    showAll = !showAll;
    render();
  });
  return { root, load };
}
