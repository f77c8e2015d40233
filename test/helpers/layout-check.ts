/**
 * The layout check of the example flows, run inside the Node-RED editor's page (playwright's
 * `page.evaluate(checkDrawnLayout, tabId)`): it reads what the editor DREW for the tab shown,
 * so node widths are the real label widths of this browser's fonts.
 *
 * For every drawn node (comments included): the box of its `rect.red-ui-flow-node` (plus the
 * inject button, drawn outside the rect on the left) and, when a status is shown, the box of
 * the status (dot and text) under it. Problems reported, each naming the nodes involved:
 *
 * - a box left of or above the canvas origin (x < 0 or y < 0);
 * - two node boxes that overlap, or a status box that overlaps another node or status (a node
 *   that may show a status later, e.g. a debug node with "node status" on, keeps 120 x 13 px
 *   under it for one);
 * - a node off the grid: its top-left corner not on the editor's 20 px grid (y), its left edge
 *   not on a 10 px step (x: Node-RED snaps the left edge to 20 px, and node widths are
 *   multiples of 20 px, so a 10 px step is what stays true when fonts change the width);
 * - a wire running right to left (its target's input left of its source's output);
 * - a wire drawn behind a third node (points along its drawn path inside that node's box).
 *
 * With `room` (px), a wire must pass that far clear of a third node's left and right sides: labels
 * drawn in wider fonts (another machine's, e.g. the ones Debian installs with chromium) grow a
 * node by up to twice that, centred, and no wire then runs behind it.
 *
 * Self-contained: playwright serialises the function into the page, so it may use nothing
 * from this module.
 */
export interface LayoutReport {
  tab: string;
  nodes: number;
  wires: number;
  problems: string[];
}

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

export function checkDrawnLayout(arg: string | { tabId: string; room: number }): LayoutReport {
  const tabId = typeof arg === "string" ? arg : arg.tabId;
  const room = typeof arg === "string" ? 0 : arg.room;
  interface EditorNode {
    id: string;
    type: string;
    name?: string;
    z?: string;
    x: number;
    y: number;
    w: number;
    h: number;
    _def?: { label?: unknown };
  }
  interface Drawn {
    id: string;
    label: string;
    box: Box;
    status: Box | null;
  }
  const RED = (
    window as unknown as {
      RED: {
        nodes: { node(id: string): EditorNode | null; workspace(id: string): { label: string } | null };
        utils: { getNodeLabel(n: EditorNode, def?: string): string };
      };
    }
  ).RED;
  const ws = RED.nodes.workspace(tabId);
  const problems: string[] = [];

  const translateOf = (el: SVGGraphicsElement): { x: number; y: number } => {
    const m = el.transform.baseVal.consolidate()?.matrix;
    return { x: m ? m.e : 0, y: m ? m.f : 0 };
  };
  const overlap = (a: Box, b: Box) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  const inside = (p: { x: number; y: number }, b: Box, pad: number) =>
    p.x > b.x + pad && p.x < b.x + b.w - pad && p.y > b.y + pad && p.y < b.y + b.h - pad;
  const fmt = (b: Box) => `(${Math.round(b.x)},${Math.round(b.y)} ${Math.round(b.w)}x${Math.round(b.h)})`;

  const drawn: Drawn[] = [];
  const groups = Array.from(
    document.querySelectorAll<SVGGElement>("#red-ui-workspace-chart svg g.red-ui-flow-node-group"),
  );
  for (const g of groups) {
    const n = RED.nodes.node(g.id);
    if (!n || n.z !== tabId) continue;
    const rect = g.querySelector<SVGRectElement>(":scope > rect.red-ui-flow-node");
    if (!rect) continue;
    const t = translateOf(g);
    const w = rect.width.baseVal.value;
    const h = rect.height.baseVal.value;
    let box: Box = { x: t.x, y: t.y, w, h };
    const button = g.querySelector<SVGGElement>(":scope > g.red-ui-flow-node-button");
    if (button && getComputedStyle(button).display !== "none") {
      const bt = translateOf(button);
      const bb = button.getBBox();
      const left = Math.min(box.x, t.x + bt.x + bb.x);
      const right = Math.max(box.x + box.w, t.x + bt.x + bb.x + bb.width);
      box = { x: left, y: box.y, w: right - left, h: box.h };
    }
    let status: Box | null = null;
    const sg = g.querySelector<SVGGElement>("g.red-ui-flow-node-status-group");
    if (sg && sg.style.display !== "none") {
      const st = translateOf(sg);
      const label = sg.querySelector<SVGTextElement>("text.red-ui-flow-node-status-label");
      const shape = sg.querySelector<SVGRectElement>("rect.red-ui-flow-node-status");
      const parts: Box[] = [];
      if (label && (label.textContent ?? "") !== "") {
        const lb = label.getBBox();
        parts.push({ x: lb.x, y: lb.y, w: lb.width, h: lb.height });
      }
      if (shape && shape.style.display !== "none") {
        const sb = shape.getBBox();
        parts.push({ x: sb.x, y: sb.y, w: sb.width, h: sb.height });
      }
      if (parts.length > 0) {
        const x0 = Math.min(...parts.map((p) => p.x));
        const y0 = Math.min(...parts.map((p) => p.y));
        const x1 = Math.max(...parts.map((p) => p.x + p.w));
        const y1 = Math.max(...parts.map((p) => p.y + p.h));
        status = { x: t.x + st.x + x0, y: t.y + st.y + y0, w: x1 - x0, h: y1 - y0 };
      }
    }
    // A node that shows a status only after a message (a debug with "node status" on, mqtt,
    // delay) or after the account connects (ours) keeps the room for one: 120 x 13 px under it.
    const mayShowStatus =
      n.type.startsWith("door-") ||
      n.type === "mqtt in" ||
      n.type === "mqtt out" ||
      n.type === "delay" ||
      (n.type === "debug" && (n as { tostatus?: boolean }).tostatus === true);
    if (!status && mayShowStatus) status = { x: t.x + 3, y: t.y + h + 2, w: 120, h: 13 };
    let label: string;
    try {
      label = RED.utils.getNodeLabel(n, n.type);
    } catch {
      label = n.name || n.type;
    }
    drawn.push({ id: n.id, label: `${n.type} "${label}"`, box, status });
  }

  for (const d of drawn) {
    if (d.box.x < 0 || d.box.y < 0) problems.push(`${d.label} is left of or above the canvas origin: ${fmt(d.box)}`);
    const n = RED.nodes.node(d.id)!;
    const left = n.x - n.w / 2;
    if (left % 10 !== 0 || n.y % 20 !== 0) {
      problems.push(
        `${d.label} is off the grid: left edge ${left}, centre y ${n.y} (left edge on a 10 px step, y on the 20 px grid)`,
      );
    }
  }
  for (let i = 0; i < drawn.length; i++) {
    for (let j = i + 1; j < drawn.length; j++) {
      const a = drawn[i];
      const b = drawn[j];
      if (overlap(a.box, b.box)) problems.push(`${a.label} ${fmt(a.box)} overlaps ${b.label} ${fmt(b.box)}`);
      if (a.status && overlap(a.status, b.box))
        problems.push(`the status of ${a.label} ${fmt(a.status)} overlaps ${b.label} ${fmt(b.box)}`);
      if (b.status && overlap(b.status, a.box))
        problems.push(`the status of ${b.label} ${fmt(b.status)} overlaps ${a.label} ${fmt(a.box)}`);
      if (a.status && b.status && overlap(a.status, b.status))
        problems.push(`the status of ${a.label} overlaps the status of ${b.label}`);
    }
  }

  // Wires: the drawn path of each link (d3 keeps the link as the element's __data__).
  let wires = 0;
  const byId = new Map(drawn.map((d) => [d.id, d]));
  const paths = Array.from(
    document.querySelectorAll<SVGPathElement>(
      "#red-ui-workspace-chart svg g.red-ui-flow-link path.red-ui-flow-link-background",
    ),
  );
  for (const p of paths) {
    const link = (p as unknown as { __data__?: { source?: { id: string }; target?: { id: string } } }).__data__;
    const src = link?.source ? byId.get(link.source.id) : undefined;
    const dst = link?.target ? byId.get(link.target.id) : undefined;
    if (!src || !dst) continue;
    wires++;
    const sn = RED.nodes.node(src.id)!;
    const dn = RED.nodes.node(dst.id)!;
    if (dn.x - dn.w / 2 < sn.x + sn.w / 2 + 20)
      problems.push(
        `the wire ${src.label} -> ${dst.label} runs right to left (or has no room): target's input at ${dn.x - dn.w / 2}, source's output at ${sn.x + sn.w / 2}`,
      );
    const total = p.getTotalLength();
    const hit = new Set<string>();
    for (let s = 0; s <= total; s += 4) {
      const pt = p.getPointAtLength(s);
      for (const o of drawn) {
        if (o.id === src.id || o.id === dst.id || hit.has(o.id)) continue;
        // Wider labels, centred on the node: a wire keeps `room` px clear of a third node's sides.
        const wide = { x: o.box.x - room, y: o.box.y, w: o.box.w + 2 * room, h: o.box.h };
        if (inside(pt, wide, 1) || (o.status && inside(pt, o.status, 1))) hit.add(o.id);
      }
    }
    for (const id of hit) problems.push(`the wire ${src.label} -> ${dst.label} runs behind ${byId.get(id)!.label}`);
  }
  return { tab: ws?.label ?? tabId, nodes: drawn.length, wires, problems };
}

/**
 * Texts cut off in the editor: run inside the page (`page.evaluate(checkTextFits, selector)`), it
 * looks at every visible text under the element `rootSelector` (a dialog's tray, the sidebar
 * tab) as this browser laid it out, and reports each one that is not shown in full:
 *
 * - a text node whose laid-out box reaches past an ancestor (up to the root) that clips its
 *   content (overflow other than visible, e.g. a table cell with an ellipsis, the dialog itself);
 * - a select whose options would not fit its box when chosen: the option's text width (in the
 *   select's own font, measured with a canvas) against the box's content width less 20 px for
 *   the drop-down arrow (what Chromium leaves for it in a select sized to its longest option);
 * - an empty input whose placeholder is wider than the input's content box;
 * - a form control reaching past the root's right or left edge.
 *
 * Self-contained (serialised into the page, like checkDrawnLayout).
 */
export interface TextFitReport {
  /** Texts, options and placeholders looked at. */
  checked: number;
  problems: string[];
}

export function checkTextFits(rootSelector: string): TextFitReport {
  const root = document.querySelector<HTMLElement>(rootSelector);
  if (!root) return { checked: 0, problems: [`${rootSelector}: not found`] };
  const problems: string[] = [];
  let checked = 0;
  const ARROW = 20;
  const canvas = document.createElement("canvas").getContext("2d")!;
  const widthOf = (text: string, font: string): number => {
    canvas.font = font;
    return canvas.measureText(text).width;
  };
  const name = (el: Element): string => {
    const id = el.id ? `#${el.id}` : "";
    const cls =
      !id && typeof el.className === "string" && el.className.trim()
        ? `.${el.className.trim().split(/\s+/).join(".")}`
        : "";
    return `${el.tagName.toLowerCase()}${id}${cls}`;
  };
  const visible = (el: Element): boolean => {
    if (!(el instanceof HTMLElement) && !(el instanceof SVGElement)) return false;
    if (el.getClientRects().length === 0) return false;
    const cs = getComputedStyle(el);
    return cs.visibility !== "hidden" && cs.display !== "none";
  };
  const contentWidth = (el: HTMLElement): number => {
    const cs = getComputedStyle(el);
    return el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  };
  const rootBox = root.getBoundingClientRect();
  const round = (n: number) => Math.round(n * 10) / 10;

  // Text nodes, against every clipping ancestor up to the root.
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = (node.textContent ?? "").replace(/\s+/g, " ").trim();
    const parent = node.parentElement;
    if (!text || !parent || parent.closest("option, script, style, textarea, select") || !visible(parent)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const rects = Array.from(range.getClientRects()).filter((r) => r.width > 0);
    if (rects.length === 0) continue;
    checked++;
    const left = Math.min(...rects.map((r) => r.left));
    const right = Math.max(...rects.map((r) => r.right));
    for (let a: HTMLElement | null = parent; a; a = a === root ? null : a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX === "visible" && a !== root) continue;
      const box = a.getBoundingClientRect();
      const clipLeft = box.left + parseFloat(cs.borderLeftWidth);
      const clipRight = box.right - parseFloat(cs.borderRightWidth);
      if (right > clipRight + 1 || left < clipLeft - 1) {
        problems.push(
          `"${text}" (${name(parent)}) is cut off by ${name(a)}: the text spans ${round(left)}..${round(right)} px, the box shows ${round(clipLeft)}..${round(clipRight)} px`,
        );
        break;
      }
    }
  }

  // Selects: each option, as it would show when chosen. Inputs: the placeholder of an empty one.
  for (const el of Array.from(root.querySelectorAll<HTMLElement>("select, input"))) {
    if (!visible(el)) continue;
    const box = el.getBoundingClientRect();
    if (box.right > rootBox.right + 1 || box.left < rootBox.left - 1) {
      problems.push(
        `${name(el)} reaches past the edge of ${rootSelector}: ${round(box.left)}..${round(box.right)} px, the edge at ${round(rootBox.left)}..${round(rootBox.right)} px`,
      );
    }
    const font = getComputedStyle(el).font;
    if (el instanceof HTMLSelectElement) {
      if (el.multiple || el.size > 1) continue;
      const have = contentWidth(el) - ARROW;
      for (const o of Array.from(el.options)) {
        if (o.hidden || o.disabled) continue;
        checked++;
        const need = widthOf(o.text, font);
        if (need > have)
          problems.push(
            `the option "${o.text}" of ${name(el)} is cut off when chosen: ${round(need)} px of text, ${round(have)} px shown`,
          );
      }
    } else if (
      el instanceof HTMLInputElement &&
      el.placeholder &&
      el.value === "" &&
      /^(text|password|email|url|search|tel|number|)$/.test(el.type)
    ) {
      checked++;
      const need = widthOf(el.placeholder, font);
      const have = contentWidth(el);
      if (need > have)
        problems.push(
          `the placeholder "${el.placeholder}" of ${name(el)} is cut off: ${round(need)} px of text, ${round(have)} px shown`,
        );
    }
  }
  return { checked, problems };
}
