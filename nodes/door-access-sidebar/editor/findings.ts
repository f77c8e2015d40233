/**
 * What the sidebar's account view says besides its state: the differences the service
 * description check found (docs/service-description.md#what-you-see) and the account's last events
 * (docs/events.md#in-the-sidebar). Every text from the runtime is set with .text(), never as HTML.
 */
import { textOf } from "../../../src/util/text.js";
import { pluginTranslator } from "../../common/editor/i18n.js";

export const t = pluginTranslator("door-access-sidebar");
export const text = (v: unknown): string => textOf(v ?? "");
export function localTime(ts: unknown): string {
  const d = new Date(ts as string);
  if (isNaN(d.getTime())) return String(ts);
  // Today: the time alone; before: the date too (the full ISO time is in the tooltip).
  return d.toDateString() === new Date().toDateString()
    ? d.toLocaleTimeString()
    : `${d.toLocaleDateString()} ${d.toLocaleTimeString()}`;
}

/** An account as the sidebar's list endpoint gives it, as far as these parts read it. */
export interface AccountFindings {
  serviceDescription?: { differences?: unknown; url?: unknown; checkedAt?: unknown } | null;
  events?: unknown;
}

/** What the service description check found: each difference as text. */
export function showSpec(spec: JQuery, a: AccountFindings | null): void {
  const d = a && a.serviceDescription;
  const list: unknown[] = d && Array.isArray(d.differences) ? (d.differences as unknown[]) : [];
  spec.empty();
  if (!d || !list.length) {
    spec.hide();
    return;
  }
  $('<div class="da-spec-title"></div>')
    .text(t("spec.differs", { number: list.length }))
    .attr("title", text(d.url) + (d.checkedAt ? `  ${localTime(d.checkedAt)}` : ""))
    .appendTo(spec);
  const ul = $("<ul></ul>").appendTo(spec);
  list.forEach((x) => {
    $("<li></li>").text(String(x)).appendTo(ul);
  });
  spec.show();
}

/** The account's last events, newest first: time, topic and the line for a person. */
export function showEvents(box: JQuery, a: AccountFindings | null): void {
  const list = a && Array.isArray(a.events) ? (a.events as { topic?: unknown; at?: unknown; message?: unknown }[]) : [];
  box.empty();
  if (!list.length) {
    box.hide();
    return;
  }
  $('<div class="da-events-title"></div>')
    .text(t("events.title", { number: list.length }))
    .appendTo(box);
  const ul = $("<ul></ul>").appendTo(box);
  for (const e of list) {
    const li = $("<li></li>").attr("title", text(e.at)).appendTo(ul);
    $('<span class="da-event-time"></span>').text(localTime(e.at)).appendTo(li);
    $('<code class="da-event-topic"></code>').text(text(e.topic)).appendTo(li);
    $('<span class="da-event-message"></span>').text(text(e.message)).appendTo(li);
  }
  box.show();
}
