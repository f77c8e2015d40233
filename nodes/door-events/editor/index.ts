/**
 * door-events in the editor: its definition (RED.nodes.registerType) and its dialog
 * (editor/template.html): the account, and which kinds of events the node sends
 * (docs/events.md#kinds). The runtime (door-events.ts) reads exactly these properties: name,
 * account, kinds. The kinds and their default are the runtime's own (src/account/event-kinds.ts).
 *
 * The build (scripts/editor-build.ts) bundles this file into the node's door-events.html
 * (docs/architecture.md#the-editor-where-a-node-lives-and-how-it-is-built).
 */
import { DEFAULT_KINDS, EVENT_KINDS, eventKinds, kindsValid } from "../../../src/account/event-kinds.js";
import { preselectAccount, preselectAccountInDialog } from "../../common/editor/account.js";
import type { EditorNode } from "../../common/editor/red.js";
import { nodeTranslator } from "../../common/editor/i18n.js";

interface DoorEventsNode extends EditorNode {
  name?: string;
  account?: string;
  kinds?: string[];
}

const tr = nodeTranslator("door-events");

RED.nodes.registerType<DoorEventsNode>("door-events", {
  category: "door access",
  color: "#9BC4E2",
  defaults: {
    name: { value: "" },
    account: { value: "", type: "door-account", required: true },
    kinds: {
      value: [...DEFAULT_KINDS],
      validate(v, _opt) {
        return kindsValid(v);
      },
    },
  },
  inputs: 0,
  outputs: 1,
  icon: "door-events.svg",
  paletteLabel() {
    return tr("paletteLabel");
  },
  label() {
    return this.name || tr("label.default");
  },
  labelStyle() {
    return this.name ? "node_label_italic" : "";
  },
  onadd() {
    preselectAccount(this);
  },
  oneditprepare() {
    preselectAccountInDialog(this);
    const chosen = new Set<string>(eventKinds(this.kinds));
    const box = $("#node-input-kinds-box").empty();
    for (const kind of EVENT_KINDS) {
      // One line per kind: the box, the kind's word and what it tells (labels set as text).
      const label = $('<label class="door-events-kind"></label>').appendTo(box);
      $('<input type="checkbox">').val(kind).prop("checked", chosen.has(kind)).appendTo(label);
      $("<code></code>").text(kind).appendTo(label);
      $("<span></span>")
        .text(` ${tr(`kinds.${kind}`)}`)
        .appendTo(label);
    }
  },
  oneditsave() {
    const picked: string[] = [];
    $("#node-input-kinds-box input[type=checkbox]:checked").each((_i, el) => {
      picked.push(String($(el).val()));
    });
    // None ticked is the default (all but unlock), as the runtime reads it.
    this.kinds = picked.length > 0 ? picked : [...DEFAULT_KINDS];
  },
});
