/**
 * Text from a flow, the runtime or the service in the editor (docs/security.md#text-in-the-editor-and-the-dashboard):
 * names, base URLs, error texts, and RED._() strings with such a __value__ in them (Node-RED's
 * i18n does not escape) go into the page with .text(), .val() or .attr(), never .html() or a
 * string given to $() or .append(); a notification is made with notifyText() below. A node's
 * validate() returns fixed text only: the editor shows that text as HTML in its tooltips.
 * Used by every dialog and the "Door access" sidebar.
 */
import { textOf } from "../../../src/util/text.js";
import type { NotificationType } from "./red.js";

/** The { error } text that our admin endpoints send with a failure, or null. */
export function adminError(xhr: JQuery.jqXHR): string | null {
  let body: unknown = xhr.responseJSON;
  if (!body && xhr.responseText) {
    try {
      body = JSON.parse(xhr.responseText);
    } catch {
      body = null;
    }
  }
  const error = body && typeof body === "object" ? (body as { error?: unknown }).error : undefined;
  return typeof error === "string" ? error : null;
}

/** RED.notify() takes a string as HTML: the text goes in as a <p> element's text instead. */
export function notifyText(text: unknown, type: NotificationType): unknown {
  return RED.notify($("<p>").text(textOf(text ?? "")), type);
}
