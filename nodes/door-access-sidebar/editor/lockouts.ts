/**
 * The account's lockouts in the "Door access" sidebar (docs/access-rules.md#ending-a-lockout):
 * one row per locked door-unlock node or door (node, door, wrong tries, until in local time),
 * shown only while something is locked, with an End lockout button that asks first and needs
 * door-account.write. Every text is set with .text(), never as HTML.
 */
import { adminError, notifyText } from "../../common/editor/text.js";
import { localTime, t, text } from "./findings.js";

const BASE = "door-access/sidebar/accounts";

/** A lockout as GET .../lockouts gives it. */
interface LockRow {
  node?: unknown;
  name?: unknown;
  deviceId?: unknown;
  door?: unknown;
  wrongPins?: unknown;
  until?: unknown;
}

/** The lockouts section: `load(account)` shows that account's locked nodes and doors (none: hidden). */
export function lockoutsView(): { root: JQuery; load: (account: string | null) => void } {
  const root = $('<div id="door-access-lockouts" class="da-lockouts"></div>').hide();
  $('<div class="da-lockouts-title"></div>').text(t("lockouts.title")).appendTo(root);
  const list = $('<ul id="door-access-lockout-list"></ul>').appendTo(root);
  let account: string | null = null;
  let seq = 0;
  /** The row whose End lockout question is open: a live refresh shows it still asking. */
  let asking: string | null = null;
  const keyOf = (l: LockRow): string => `${text(l.node)}/${text(l.deviceId)}`;

  function where(l: LockRow): string {
    return l.deviceId === null || l.deviceId === undefined ? t("lockouts.every-door") : text(l.door);
  }

  function end(l: LockRow, button: JQuery): void {
    const id = account;
    if (!id) return;
    button.prop("disabled", true);
    $.ajax({
      url: `${BASE}/${encodeURIComponent(id)}/lockouts/${encodeURIComponent(text(l.node))}/end`,
      method: "POST",
      headers: { "X-Requested-With": "XMLHttpRequest" },
      contentType: "application/json",
      data: JSON.stringify({ deviceId: typeof l.deviceId === "number" ? l.deviceId : null }),
    })
      .done(() => notifyText(t("lockouts.ended", { door: where(l) }), "success"))
      .fail((xhr: JQuery.jqXHR) => {
        const why = adminError(xhr) ?? (xhr.status ? `HTTP ${xhr.status}` : t("errors.no-answer"));
        notifyText(t("lockouts.end-failed", { error: why }), "error");
      })
      .always(() => {
        if (id === account) load(id);
      });
  }

  /** The question and End / Cancel. */
  function ask(l: LockRow, box: JQuery): void {
    asking = keyOf(l);
    box.empty();
    $("<span></span>")
      .text(t("lockouts.end-confirm", { door: where(l) }))
      .appendTo(box);
    const yes = $('<button type="button" class="red-ui-button red-ui-button-small da-lockout-confirm"></button>')
      .text(t("lockouts.end"))
      .appendTo(box);
    $('<button type="button" class="red-ui-button red-ui-button-small"></button>')
      .text(t("passes.cancel"))
      .on("click", () => actions(l, box))
      .appendTo(box);
    yes.on("click", () => {
      asking = null;
      end(l, yes);
    });
  }

  /** The End lockout button (or, while it is open, the question). */
  function actions(l: LockRow, box: JQuery, open = false): void {
    if (open) {
      ask(l, box);
      return;
    }
    if (asking === keyOf(l)) asking = null;
    box.empty();
    $('<button type="button" class="red-ui-button red-ui-button-small da-lockout-end"></button>')
      .text(t("lockouts.end"))
      .on("click", () => ask(l, box))
      .appendTo(box);
  }

  function row(l: LockRow): JQuery {
    const li = $('<li class="da-lockout"></li>').attr({ "data-node": text(l.node), "data-device": text(l.deviceId) });
    $('<div class="da-lockout-head"></div>')
      .text(`${text(l.name)}: ${where(l)}`)
      .appendTo(li);
    $('<div class="da-lockout-until"></div>')
      .text(t("lockouts.until", { tries: text(l.wrongPins), until: localTime(l.until) }))
      .attr("title", text(l.until))
      .appendTo(li);
    actions(l, $('<div class="da-lockout-actions"></div>').appendTo(li), asking === keyOf(l));
    return li;
  }

  function load(id: string | null): void {
    account = id;
    const mine = ++seq;
    if (!id) {
      root.hide();
      return;
    }
    $.ajax({ url: `${BASE}/${encodeURIComponent(id)}/lockouts`, dataType: "json", cache: false })
      .done((body: { lockouts?: LockRow[] }) => {
        if (mine !== seq) return;
        const rows = Array.isArray(body.lockouts) ? body.lockouts : [];
        list.empty();
        for (const l of rows) list.append(row(l));
        root.toggle(rows.length > 0);
      })
      .fail(() => {
        if (mine === seq) root.hide(); // the account's state says why; nothing locked is shown
      });
  }
  return { root, load };
}
