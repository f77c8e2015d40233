/**
 * The example flows look made with care: the demo (`npm start`, every example on its
 * own tab) opened in Debian's chromium (playwright-core); each example tab and the demo's intro
 * tab are shown in the editor, and the boxes Node-RED DREW (its own label widths, with this
 * machine's fonts) are checked by test/helpers/layout-check.ts: nothing left of or above the
 * canvas origin, no two nodes (comments included) overlapping, no status label over a node, on
 * the grid, wires left to right and never behind a third node. A failure names the nodes.
 *
 * With ROOM to spare: every node counts as ROOM px wider on each side, as if its label were drawn
 * in fonts 2 x ROOM px wider than here (Debian's chromium on a fresh machine drew wider labels, and
 * a wire that cleared a node by a few pixels here ran behind it there).
 *
 * A deliberately careless tab (imported into the same editor) proves the check fails, naming
 * the two nodes. Screenshots of every tab: test-artifacts/layout-*.png.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Page } from "playwright-core";
import { loadExamples } from "../../scripts/demo-flows.js";
import { ARTIFACTS, useEditor } from "../helpers/browser.js";
import { checkDrawnLayout, type LayoutReport } from "../helpers/layout-check.js";
import { nodeRedVersion } from "../helpers/runtime.js";

/** Px each node may grow on each side with another machine's fonts (docs/testing.md#example-layout). */
const ROOM = 20;

interface Tab {
  id: string;
  label: string;
}

describe(`example flows as drawn by the editor: nothing overlaps or lies left of or above the origin, on the grid, wires left to right (chromium, Node-RED ${nodeRedVersion})`, function () {
  this.timeout(120_000);
  // The demo with its examples and the MQTT broker (example 06), as `npm start` shows them.
  const ed = useEditor({
    deployExamples: true,
    mqttPort: 0,
    readyMs: 20_000,
    viewport: { width: 1600, height: 900 },
    stepMs: 20_000,
  });
  const log = ed.log;
  let page: Page;
  let tabs: Tab[] = [];

  before(async function () {
    this.timeout(150_000);
    page = ed.page;
    await page.goto(ed.demo.editorUrl, { waitUntil: "domcontentloaded", timeout: 60_000 });
    await page.locator("#red-ui-workspace-chart").waitFor({ state: "visible", timeout: 60_000 });
    await page.waitForFunction(
      () => {
        const RED = (window as unknown as { RED?: { nodes?: { version?(): unknown; eachWorkspace?: unknown } } }).RED;
        return !!RED?.nodes?.version?.();
      },
      null,
      { timeout: 60_000 },
    );
    tabs = await page.evaluate(() => {
      const out: { id: string; label: string }[] = [];
      (
        window as unknown as { RED: { nodes: { eachWorkspace(cb: (w: { id: string; label: string }) => void): void } } }
      ).RED.nodes.eachWorkspace((w) => out.push({ id: w.id, label: w.label }));
      return out;
    });
  });

  /** Shows the tab and waits until the editor has drawn each of its nodes, and each door node's status. */
  async function showTab(tabId: string): Promise<void> {
    await page.evaluate(
      (id) => (window as unknown as { RED: { workspaces: { show(id: string): void } } }).RED.workspaces.show(id),
      tabId,
    );
    await page.waitForFunction(
      (id) => {
        const RED = (
          window as unknown as { RED: { nodes: { filterNodes(f: object): { id: string; type: string }[] } } }
        ).RED;
        const nodes = RED.nodes.filterNodes({ z: id });
        if (nodes.length === 0) return false;
        return nodes.every((n) => {
          const g = document.querySelector(`#red-ui-workspace-chart g.red-ui-flow-node-group[id="${n.id}"]`);
          if (!g) return false;
          if (!n.type.startsWith("door-")) return true;
          const status = g.querySelector<SVGGElement>("g.red-ui-flow-node-status-group");
          return !!status && status.style.display !== "none";
        });
      },
      tabId,
      { timeout: 20_000 },
    );
    await page.evaluate(() => {
      const el = document.querySelector("#red-ui-workspace-chart");
      if (el) {
        el.scrollLeft = 0;
        el.scrollTop = 0;
      }
    });
  }

  async function check(tab: Tab): Promise<LayoutReport> {
    await showTab(tab.id);
    const report = await page.evaluate(checkDrawnLayout, { tabId: tab.id, room: ROOM });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const slug = tab.label.replace(/[^A-Za-z0-9]+/g, "-").slice(0, 40);
    await page.screenshot({ path: path.join(ARTIFACTS, `layout-${slug}.png`) });
    return report;
  }

  it("the demo shows the intro tab and one tab per example", () => {
    assert.equal(tabs[0]?.label, "Door access demo");
    for (const ex of loadExamples())
      assert.ok(
        tabs.some((t) => t.label === ex.title),
        `a tab for ${ex.title}`,
      );
  });

  it("the check fails on a careless tab, naming the two overlapping nodes, the node left of the origin and the backwards wire", async () => {
    const tabId = "badbadbad0000001";
    await page.evaluate((id) => {
      const RED = (window as unknown as { RED: { view: { importNodes(n: object[], o?: object): void } } }).RED;
      RED.view.importNodes(
        [
          { id, type: "tab", label: "careless", disabled: false, info: "" },
          {
            id: "badbadbad0000002",
            type: "comment",
            z: id,
            name: "A comment about the first step",
            x: 200,
            y: 60,
            wires: [],
          },
          {
            id: "badbadbad0000003",
            type: "comment",
            z: id,
            name: "A second comment on top of it",
            x: 220,
            y: 60,
            wires: [],
          },
          {
            id: "badbadbad0000004",
            type: "inject",
            z: id,
            name: "far left",
            x: 20,
            y: 140,
            props: [],
            repeat: "",
            once: false,
            wires: [["badbadbad0000005"]],
          },
          { id: "badbadbad0000005", type: "debug", z: id, name: "left of its source", x: 10, y: 220, wires: [] },
        ],
        { generateIds: false, addFlow: false, touchImport: true },
      );
    }, tabId);
    const report = await check({ id: tabId, label: "careless" });
    const all = report.problems.join("\n");
    assert.match(all, /comment "A comment about the first step".*overlaps comment "A second comment on top of it"/);
    assert.match(all, /inject "far left" is left of or above the canvas origin/);
    assert.match(all, /wire inject "far left" -> debug "left of its source" runs right to left/);
    await page.evaluate((id) => {
      const RED = (
        window as unknown as {
          RED: { workspaces: { delete(w: object): void }; nodes: { workspace(id: string): object } };
        }
      ).RED;
      RED.workspaces.delete(RED.nodes.workspace(id));
    }, tabId);
  });

  for (const title of ["Door access demo", ...loadExamples().map((e) => e.title)]) {
    it(`${title}: nothing overlaps, nothing left of or above the origin, on the grid, wires left to right and never behind a node, with ${ROOM} px to spare on each side of every node for wider fonts`, async () => {
      const tab = tabs.find((t) => t.label === title);
      assert.ok(tab, `tab ${title}`);
      const report = await check(tab);
      assert.ok(report.nodes >= 1, "nodes drawn");
      assert.deepEqual(report.problems, [], `${title}:\n  ${report.problems.join("\n  ")}`);
    });
  }

  it("no error in the page or in Node-RED's log", () => {
    assert.doesNotMatch(
      log.join("\n"),
      /\[error\]|\[pageerror\]/,
      log.filter((l) => /\[error\]|\[pageerror\]/.test(l)).join("\n"),
    );
  });
});
