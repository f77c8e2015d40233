/**
 * The editor in a real browser (Debian's chromium driven by playwright-core), against the demo
 * setup of `npm start` (scripts/start-demo.ts: simulator + Node-RED with our package installed).
 * The rules: docs/session.md#signing-in-from-the-editor, docs/doors.md#picking-a-door-in-the-editor,
 * docs/security.md#text-in-the-editor-and-the-dashboard.
 *
 * Starting from an empty workspace, the test does what a user does, with the mouse and the
 * keyboard only: drags a door-unlock from the palette, adds a door-account through the config
 * dialog (base URL = the simulator, phone, password), presses "Sign in" in that dialog, picks
 * "Front Door" from the live door picker BEFORE any deploy, deploys, wires an inject and two
 * debug nodes to it by dragging between ports, deploys, and presses the inject's button.
 * Checked at the simulator: exactly one login for our account (the dialog's) and exactly one
 * unlock of device 101.
 *
 * Screenshots: test-artifacts/browser-*.png every run (test-artifacts/ is gitignored); the
 * README's docs/editor.png is rewritten only with DOOR_ACCESS_UPDATE_SCREENSHOT=1.
 * Without /usr/bin/chromium the test fails (it is never skipped): `.ci/run` installs it.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Locator, Page } from "playwright-core";
import { REPO_ROOT, waitForAccountState } from "../../scripts/node-red-process.js";
import type { RunningDemo } from "../../scripts/start-demo.js";
import { ARTIFACTS, STEP_MS, useEditor } from "../helpers/browser.js";
import { checkTextFits } from "../helpers/layout-check.js";
import { nodeRedPackage, nodeRedVersion } from "../helpers/runtime.js";
import { dialogReady } from "../helpers/editor-dialog.js";
import { recordForLeakScan } from "../hooks/leak-scan.js";

const DOCS_SCREENSHOT = path.join(REPO_ROOT, "docs", "editor.png");

interface EditorNode {
  id: string;
  type: string;
  [k: string]: unknown;
}

describe(`editor in a real browser (chromium, Node-RED ${nodeRedVersion}): a flow built with the mouse signs in once from the dialog, picks its door before the deploy and unlocks once (docs/doors.md#picking-a-door-in-the-editor)`, function () {
  this.timeout(180_000);
  // The steps build on each other: after a failed one, the rest fail at once instead of timing out.
  const ed = useEditor({ name: "browser", stopAfterFailure: true });
  let demo: RunningDemo;
  let page: Page;
  const log = ed.log;

  before(async function () {
    this.timeout(60_000);
    ({ demo, page } = ed);
    // Our own flow from scratch: replace the demo's preconfigured account with one empty tab.
    const res = await fetch(new URL("flows", demo.editorUrl), {
      method: "POST",
      headers: { "Content-Type": "application/json", "Node-RED-API-Version": "v2", "Node-RED-Deployment-Type": "full" },
      body: JSON.stringify({
        flows: [{ id: "b0b0b0b0b0b0b0b0", type: "tab", label: "Browser test", disabled: false, info: "" }],
      }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200, `clearing the demo flows: ${res.status} ${await res.text()}`);
  });

  // ---- helpers: the editor's DOM --------------------------------------------------------

  const chart = () => page.locator("#red-ui-workspace-chart");
  const nodeOnCanvas = (id: string) => page.locator(`#red-ui-workspace-chart g.red-ui-flow-node-group[id="${id}"]`);

  async function editorNodes(type: string): Promise<EditorNode[]> {
    return page
      .evaluate((t) => {
        const RED = (window as unknown as { RED: { nodes: { filterNodes(f: object): EditorNode[] } } }).RED;
        return RED.nodes
          .filterNodes({ type: t })
          .map((n) => ({ ...n, _def: undefined, _: undefined, _config: undefined, _alias: undefined }));
      }, type)
      .then((list) => JSON.parse(JSON.stringify(list)) as EditorNode[]);
  }

  async function configNodes(type: string): Promise<string[]> {
    return page.evaluate((t) => {
      const ids: string[] = [];
      const RED = (
        window as unknown as { RED: { nodes: { eachConfig(cb: (n: { id: string; type: string }) => void): void } } }
      ).RED;
      RED.nodes.eachConfig((n) => {
        if (n.type === t) ids.push(n.id);
      });
      return ids;
    }, type);
  }

  async function centre(loc: Locator): Promise<{ x: number; y: number }> {
    await loc.waitFor({ state: "visible" });
    const box = await loc.boundingBox();
    assert.ok(box, "element has a box");
    return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  }

  /** The centre of an element once it has stopped moving (the palette filter re-lays out after a delay). */
  async function steadyCentre(loc: Locator): Promise<{ x: number; y: number }> {
    let last = await centre(loc);
    const deadline = Date.now() + STEP_MS;
    for (let same = 0; same < 3 && Date.now() < deadline;) {
      await page.waitForTimeout(150);
      const now = await centre(loc);
      same = now.x === last.x && now.y === last.y ? same + 1 : 0;
      last = now;
    }
    return last;
  }

  /** Drags a node type from the palette (filtered by the palette search) to a point of the workspace. */
  async function dragFromPalette(type: string, dx: number, dy: number): Promise<EditorNode> {
    const before = new Set((await editorNodes(type)).map((n) => n.id));
    const item = page.locator(`#red-ui-palette .red-ui-palette-node[data-palette-type="${type}"]`);
    await item.scrollIntoViewIfNeeded();
    const from = await steadyCentre(item);
    const viewport = page.viewportSize()!;
    assert.ok(from.y > 0 && from.y < viewport.height, `the ${type} palette entry is on screen (y ${from.y})`);
    const box = (await chart().boundingBox())!;
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    await page.mouse.move(from.x + 30, from.y + 10, { steps: 5 });
    await page.mouse.move(box.x + dx, box.y + dy, { steps: 20 });
    await page.mouse.up();
    let added: EditorNode[] = [];
    const deadline = Date.now() + STEP_MS;
    while (added.length === 0 && Date.now() < deadline) {
      added = (await editorNodes(type)).filter((n) => !before.has(n.id));
      if (added.length === 0) await page.waitForTimeout(100);
    }
    assert.equal(added.length, 1, `one ${type} dropped on the workspace`);
    await nodeOnCanvas(added[0].id).waitFor({ state: "visible" });
    return added[0];
  }

  /**
   * Scrolls the workspace back to its top-left corner, as a user does after an edit dialog: the
   * editor scrolls the workspace so that the node being edited is not hidden by the dialog and
   * leaves it there (how far depends on the fonts' widths; with only fonts-dejavu-core, as on a
   * fresh CI machine, the door-unlock ended half under the sidebar and no wire could reach it).
   */
  async function scrollWorkspaceHome(): Promise<void> {
    await chart().evaluate((el) => {
      el.scrollLeft = 0;
      el.scrollTop = 0;
    });
    await page.waitForFunction(
      () => {
        const el = document.querySelector("#red-ui-workspace-chart");
        return el !== null && el.scrollLeft === 0 && el.scrollTop === 0;
      },
      null,
      { timeout: STEP_MS },
    );
  }

  /** Fails clearly when a node is not wholly inside the visible workspace. */
  async function assertOnScreen(id: string): Promise<void> {
    const node = await nodeOnCanvas(id).boundingBox();
    const area = await chart().boundingBox();
    assert.ok(node && area, `node ${id} and the workspace have boxes`);
    const inside =
      node.x - 10 >= area.x &&
      node.y >= area.y &&
      node.x + node.width + 10 <= area.x + area.width &&
      node.y + node.height <= area.y + area.height;
    assert.ok(
      inside,
      `node ${id} is wholly inside the visible workspace: node ${JSON.stringify(node)}, workspace ${JSON.stringify(area)}`,
    );
  }

  /** What the page has at a point of the viewport (for a failure message): the element and two ancestors. */
  async function whatIsAt(x: number, y: number): Promise<string> {
    return page.evaluate(
      ([px, py]) => {
        const chain: string[] = [];
        for (let el = document.elementFromPoint(px, py); el && chain.length < 3; el = el.parentElement) {
          chain.push(
            `${el.tagName.toLowerCase()}.${String(el.getAttribute("class") ?? "")
              .trim()
              .replace(/\s+/g, ".")}`,
          );
        }
        return chain.join(" < ") || "nothing";
      },
      [x, y],
    );
  }

  /**
   * Drags a wire from an output port to an input port, as a user does. The editor has missed such
   * a drag on loaded CI machines (seen twice on Node-RED 5, never here), so a missed drag is made
   * again, up to four times, after Escape and a moment's pause; attempts 3 and 4 Ctrl-click the
   * output port and then click the input port (the editor's quick-join mode).
   * When every attempt misses, the failure says what was under the two points and keeps a screenshot.
   */
  async function wire(fromId: string, port: number, toId: string): Promise<void> {
    const links = () =>
      page.evaluate((id) => {
        const RED = (
          window as unknown as {
            RED: {
              nodes: {
                filterLinks(f: object): { source: { id: string }; sourcePort: number; target: { id: string } }[];
              };
            };
          }
        ).RED;
        return RED.nodes.filterLinks({ source: { id } }).map((l) => ({ port: l.sourcePort, target: l.target.id }));
      }, fromId);
    await assertOnScreen(fromId);
    await assertOnScreen(toId);
    const tries: string[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      const outPort = nodeOnCanvas(fromId).locator("g.red-ui-flow-port-output").nth(port);
      const inPort = nodeOnCanvas(toId).locator("g.red-ui-flow-port-input");
      await outPort.scrollIntoViewIfNeeded();
      const out = await centre(outPort);
      const inp = await centre(inPort);
      tries.push(
        `attempt ${attempt}: at output ${await whatIsAt(out.x, out.y)}; at input ${await whatIsAt(inp.x, inp.y)}`,
      );
      await page.mouse.move(out.x - 4, out.y);
      await page.mouse.move(out.x, out.y, { steps: 2 });
      if (attempt <= 2) {
        await page.mouse.down();
        await page.mouse.move(out.x + 12, out.y, { steps: 4 });
        await page.mouse.move((out.x + inp.x) / 2, (out.y + inp.y) / 2, { steps: 10 });
        await page.mouse.move(inp.x, inp.y, { steps: 10 });
        await page.mouse.up();
      } else {
        // Ctrl-click on the output port starts a wire that follows the mouse; a click on the input
        // port ends it; releasing Ctrl leaves the editor's quick-join mode.
        await page.keyboard.down("Control");
        await page.mouse.down();
        await page.mouse.up();
        await page.mouse.move(inp.x, inp.y, { steps: 15 });
        await page.mouse.down();
        await page.mouse.up();
        await page.keyboard.up("Control");
      }
      const deadline = Date.now() + 1000;
      let src = await links();
      while (!src.some((l) => l.port === port && l.target === toId) && Date.now() < deadline) {
        await page.waitForTimeout(100);
        src = await links();
      }
      if (src.some((l) => l.port === port && l.target === toId)) return;
      tries.push(`  links from ${fromId} after it: ${JSON.stringify(src)}`);
      await page.keyboard.press("Escape");
      await page.waitForTimeout(500 * attempt);
    }
    await screenshot(`browser-wire-${fromId}-${port}.png`).catch(() => undefined);
    assert.fail(`wire ${fromId}[${port}] -> ${toId} was not made:\n${tries.join("\n")}`);
  }

  async function openEditDialog(id: string): Promise<void> {
    await nodeOnCanvas(id).locator("rect.red-ui-flow-node").dblclick();
    await page.locator("#node-dialog-ok").waitFor({ state: "visible" });
    await dialogReady(page);
  }

  async function deploy(): Promise<void> {
    const button = page.locator("#red-ui-header-button-deploy");
    await assertNoDisabled(button);
    // The button is disabled while the deploy is in flight too: wait for the runtime's answer.
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname.endsWith("/flows")),
      button.click(),
    ]);
    assert.equal(answer.status(), 200, "the deploy was accepted");
    await page.waitForFunction(
      () => document.querySelector("#red-ui-header-button-deploy")?.classList.contains("disabled") === true,
      null,
      { timeout: STEP_MS },
    );
  }

  async function assertNoDisabled(button: Locator): Promise<void> {
    await page.waitForFunction(
      () => document.querySelector("#red-ui-header-button-deploy")?.classList.contains("disabled") === false,
      null,
      { timeout: STEP_MS },
    );
    await button.waitFor({ state: "visible" });
  }

  async function screenshot(
    name: string,
    clip?: { x: number; y: number; width: number; height: number },
  ): Promise<string> {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const file = path.join(ARTIFACTS, name);
    await page.screenshot({ path: file, ...(clip ? { clip } : {}) });
    return file;
  }

  async function pageText(where: string): Promise<string> {
    const text = await page.locator("body").innerText();
    recordForLeakScan(where, text);
    return text;
  }

  // ---- the flow, step by step ---------------------------------------------------------

  let unlockId = "";
  let accountId = "";

  it("opens the editor with our nodes in the palette and an empty workspace", async () => {
    await page.goto(demo!.editorUrl, { waitUntil: "domcontentloaded", timeout: 60_000 });
    for (const type of ["door-devices", "door-events", "door-pass", "door-status", "door-unlock"]) {
      await page
        .locator(`.red-ui-palette-node[data-palette-type="${type}"]`)
        .waitFor({ state: "attached", timeout: 60_000 });
    }
    await page.waitForFunction(
      () => !!(window as unknown as { RED: { nodes: { version(): unknown } } }).RED.nodes.version(),
      null,
      { timeout: 60_000 },
    ); // the flows are loaded after the palette
    await chart().waitFor({ state: "visible" });
    const settings = (await (
      await fetch(new URL("settings", demo!.editorUrl), { signal: AbortSignal.timeout(5000) })
    ).json()) as { version: string };
    // Node-RED reports "<version>-git" when it finds a .git folder above its node_modules.
    assert.equal(
      settings.version.replace(/-git$/, ""),
      nodeRedVersion,
      `the demo runs the selected Node-RED (${nodeRedPackage()})`,
    );
    assert.deepEqual(await editorNodes("door-unlock"), []);
    assert.deepEqual(
      await configNodes("door-account"),
      [],
      "the demo's preconfigured account was removed: this flow is built from scratch",
    );
    const text = await pageText("editor page");
    assert.match(text, /door access/i, "our palette category");
  });

  const okLogins = () =>
    demo!.sim.control.requests({ operation: "loginByPhone" }).filter((r) => r.status === 200).length;
  let loginsBefore = 0;

  it("adds a door-unlock and a door-account through its dialog, signs in from the dialog, picks Front Door BEFORE deploying", async () => {
    loginsBefore = okLogins(); // the demo's own account, removed by before()
    const unlock = await dragFromPalette("door-unlock", 380, 160);
    unlockId = unlock.id;
    await openEditDialog(unlockId);

    // The account field: a select of door-account config nodes with the pencil/add button beside it.
    const accountSel = page.locator("select#node-input-account");
    await accountSel.waitFor({ state: "visible" });
    assert.equal(await accountSel.inputValue(), "_ADD_", "no account yet: the select offers to add one");
    // Node-RED 4/5: a "+" (add) and a pencil (edit) button beside it; older editors: one lookup button.
    await page.locator("#node-input-btn-account-add, #node-input-lookup-account").first().click();

    await page.locator("#node-config-input-baseUrl").waitFor({ state: "visible" });
    await page.locator("#node-config-input-name").fill("Simulator account");
    await page.locator("#node-config-input-baseUrl").fill(demo!.simUrl);
    await page.locator("#node-config-input-loginMethod").selectOption("phone");
    await page.locator("#node-config-input-phoneNumber").fill("+15550000001");
    await page.locator("#node-config-input-password").fill("demo-password");
    // Not deployed, no session for this login: the dialog offers to sign in, with its warning.
    const signIn = page.locator("#door-account-sign-in");
    await signIn.waitFor({ state: "visible" });
    assert.match(await page.locator("#door-account-sign-in-row").innerText(), /ends any other session of this account/);
    await signIn.click();
    await page.waitForFunction(
      () => /signed in/i.test(document.querySelector("#door-account-session-state")?.textContent ?? ""),
      null,
      { timeout: STEP_MS },
    );
    recordForLeakScan("account dialog after sign-in", await page.locator("#door-account-session-state").innerText());
    assert.equal(okLogins() - loginsBefore, 1, "one login from the dialog");
    // The service description check (docs/service-description.md): on by default, the docs URL empty (the base URL).
    assert.equal(await page.locator("#node-config-input-specCheck").isChecked(), true);
    assert.equal(await page.locator("#node-config-input-docsUrl").inputValue(), "");
    assert.equal(await page.locator("#node-config-input-docsUrl").getAttribute("placeholder"), "empty: the base URL");
    await page.locator("#node-config-input-docsUrl").scrollIntoViewIfNeeded();
    await screenshot("browser-account-dialog.png");
    await page.locator("#node-config-dialog-ok").click(); // "Add"
    await page.locator("#node-config-input-baseUrl").waitFor({ state: "detached" });

    // Back in the door-unlock dialog: the new, undeployed account is selected and its doors are listed.
    const accounts = await configNodes("door-account");
    assert.equal(accounts.length, 1, "one door-account added through the dialog");
    accountId = accounts[0]!;
    assert.equal(await accountSel.inputValue(), accountId);
    const door = page.locator("#door-unlock-door");
    await page.waitForFunction(
      () => /Doors of this account: \d+/.test(document.querySelector("#door-unlock-door-note")?.textContent ?? ""),
      null,
      { timeout: STEP_MS },
    );
    const options = await door.locator("option").allInnerTexts();
    recordForLeakScan("door picker options", options);
    assert.ok(
      options.some((o) => /^Garage\b/.test(o)),
      `the account's doors: ${JSON.stringify(options)}`,
    );
    // Each door by name and location; the picked one's state and id in the line under the picker.
    const front = await door.locator("option", { hasText: /^Front Door \u2014 Main Street 1$/ }).getAttribute("value");
    assert.ok(front, `Front Door offered: ${JSON.stringify(options)}`);
    await door.selectOption(front);
    assert.match(await page.locator("#door-unlock-door-detail").innerText(), /\bid 101\b/);
    await page.locator("#node-input-name").click(); // moves focus off the select
    await screenshot("browser-door-picker.png");
    await page.locator("#node-dialog-ok").click(); // "Done"
    await page.locator("#node-dialog-ok").waitFor({ state: "detached" });
    const [picked] = (await editorNodes("door-unlock")).filter((n) => n.id === unlockId);
    assert.equal(picked?.deviceId, 101);
    assert.equal(picked?.doorName, "Front Door");
    assert.equal(picked?.account, accountId);
    assert.equal(okLogins() - loginsBefore, 1, "listing the doors logged in no more");
  });

  it("deploys: the account takes over the signed-in session (no second login); no credential in the flow file", async () => {
    await deploy();
    const state = await waitForAccountState(demo!.editorUrl, accountId, "ready", 20_000);
    assert.equal(state.state, "ready", `the deployed account is ready: ${JSON.stringify(state)}`);
    assert.equal(okLogins() - loginsBefore, 1, "the deploy resumed the session signed in from the dialog");
    const back = await fetch(new URL("flows", demo!.editorUrl), {
      headers: { "Node-RED-API-Version": "v2" },
      signal: AbortSignal.timeout(5000),
    });
    const flowsText = await back.text();
    recordForLeakScan("GET /flows", flowsText);
    const deployed = (JSON.parse(flowsText) as { flows: EditorNode[] }).flows;
    const acc = deployed.find((n) => n.id === accountId);
    assert.ok(acc, "the account is deployed");
    assert.equal(acc.baseUrl, demo!.simUrl);
    assert.doesNotMatch(flowsText, /demo-password|15550000001/, "no credential in the deployed flow");
  });

  it("wires an inject and two debug nodes to it, deploys, presses the button: exactly one unlock of door 101 at the simulator", async () => {
    await scrollWorkspaceHome();
    await assertOnScreen(unlockId);
    const inject = await dragFromPalette("inject", 150, 160);
    const okDebug = await dragFromPalette("debug", 620, 120);
    const failDebug = await dragFromPalette("debug", 620, 200);
    await wire(inject.id, 0, unlockId);
    await wire(unlockId, 0, okDebug.id);
    await wire(unlockId, 1, failDebug.id);
    // Name the debug nodes after the outputs they show.
    for (const [id, name] of [
      [okDebug.id, "accepted"],
      [failDebug.id, "failed"],
    ] as const) {
      await openEditDialog(id);
      await page.locator("#node-input-name").fill(name);
      await page.locator("#node-dialog-ok").click();
      await page.locator("#node-dialog-ok").waitFor({ state: "detached" });
    }
    await page.locator("#red-ui-workspace").click({ position: { x: 600, y: 560 } }); // deselect
    await deploy();
    assert.equal((await waitForAccountState(demo!.editorUrl, accountId, "ready", 20_000)).state, "ready");
    const before = demo!.sim.control.requests({ operation: "unlockDevice" }).length;
    assert.equal(before, 0, "nothing unlocked a door before the button was pressed");

    // The debug sidebar, to see the accepted message (the sidebar's bug button; the editor API if a
    // future editor moves that button).
    await page
      .locator("#red-ui-tab-debug-link-button")
      .click({ timeout: 3000 })
      .catch(() =>
        page.evaluate(() =>
          (window as unknown as { RED: { sidebar: { show(id: string): void } } }).RED.sidebar.show("debug"),
        ),
      );
    await nodeOnCanvas(inject.id).locator(".red-ui-flow-node-button").click();

    const deadline = Date.now() + STEP_MS;
    while (demo!.sim.control.requests({ operation: "unlockDevice" }).length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    // The node shows its outcome; by then nothing else can still be under way for this message.
    const status = nodeOnCanvas(unlockId).locator(".red-ui-flow-node-status-label");
    await page.waitForFunction(
      (id) =>
        /accepted/i.test(
          document.querySelector(`g.red-ui-flow-node-group[id="${id}"] .red-ui-flow-node-status-label`)?.textContent ??
            "",
        ),
      unlockId,
      { timeout: STEP_MS },
    );
    recordForLeakScan("node status", await status.textContent());
    await page.waitForTimeout(1000);
    const unlocks = demo!.sim.control.requests({ operation: "unlockDevice" });
    assert.equal(unlocks.length, 1, `exactly one unlock at the simulator: ${JSON.stringify(unlocks)}`);
    assert.equal(unlocks[0].deviceId, 101);
    assert.equal(unlocks[0].status, 200);
    assert.equal(
      okLogins() - loginsBefore,
      1,
      "exactly one login for our account (from the dialog), none per message or deploy",
    );

    const debugMsg = page.locator(".red-ui-debug-msg");
    await debugMsg.first().waitFor({ state: "visible" });
    assert.equal(await debugMsg.count(), 1, "one message in the debug sidebar");
    assert.match(await debugMsg.first().innerText(), /accepted/, 'from the "accepted" debug node (output 1)');
    const text = await pageText("editor page after the unlock");
    assert.match(text, /accepted/);
    // Let the "Successfully deployed" notification fade before the picture.
    await page
      .locator(".red-ui-notification")
      .first()
      .waitFor({ state: "hidden", timeout: 8000 })
      .catch(() => undefined);
    const shot = await screenshot("browser-flow.png");
    assert.ok(fs.statSync(shot).size > 10_000, "a screenshot of the flow was written");

    // The README's picture: our palette category, the flow with its green status, the debug message.
    await page.locator("#red-ui-palette-search input").pressSequentially("door"); // the palette filter reacts to keys
    await page.locator('#red-ui-palette .red-ui-palette-node[data-palette-type="inject"]').waitFor({ state: "hidden" });
    await steadyCentre(page.locator('#red-ui-palette .red-ui-palette-node[data-palette-type="door-unlock"]'));
    await page.mouse.move(640, 700);
    const readme = await screenshot("editor.png", { x: 0, y: 0, width: 1280, height: 400 });
    if (process.env.DOOR_ACCESS_UPDATE_SCREENSHOT === "1") {
      fs.mkdirSync(path.dirname(DOCS_SCREENSHOT), { recursive: true });
      fs.copyFileSync(readme, DOCS_SCREENSHOT);
    }
    assert.doesNotMatch(log.join("\n"), /\[error\]|\[pageerror\]/, "no error in Node-RED's log or in the page");
  });

  // ---- texts cut off in the dialogs ----------------------------------------------------

  const TOP_TRAY = "#red-ui-editor-stack > .red-ui-tray:last-child";

  /** Waits until the dialog on top has stopped sliding in; its width. */
  async function steadyTrayWidth(): Promise<number> {
    let last = "";
    for (let same = 0, deadline = Date.now() + STEP_MS; same < 3 && Date.now() < deadline;) {
      await page.waitForTimeout(150);
      const box = await page.locator(TOP_TRAY).boundingBox();
      const now = JSON.stringify(box);
      same = now === last ? same + 1 : 0;
      last = now;
    }
    return (JSON.parse(last) as { width: number }).width;
  }

  /**
   * Node-RED opens an edit dialog 500 px wide, or as wide as its form needs: its own tips
   * (.form-tips, max-width 450 px) make most dialogs a little wider (508 px on Node-RED 4, 526 px
   * on 5). A row of ours wider than such a tip would widen the dialog further; none may be.
   */
  async function assertRowsNoWiderThanTips(what: string): Promise<void> {
    const w = await page.evaluate((tray) => {
      const maxContent = (el: HTMLElement): number => {
        const old = el.style.width;
        el.style.width = "max-content";
        const width = el.getBoundingClientRect().width;
        el.style.width = old;
        return width;
      };
      const shown = (sel: string) =>
        Array.from(document.querySelectorAll<HTMLElement>(`${tray} ${sel}`)).filter(
          (el) => el.getClientRects().length > 0,
        );
      const tips = Math.max(...shown(".form-tips").map(maxContent));
      const rows = shown(".form-row").map((el) => ({
        width: maxContent(el),
        row: (el.innerText || el.id).trim().split("\n")[0] ?? "",
      }));
      return { tips, widest: rows.sort((a, b) => b.width - a.width)[0] };
    }, TOP_TRAY);
    assert.ok(w.tips > 0, `${what}: a tip is shown`);
    assert.ok(
      w.widest.width <= w.tips + 0.5,
      `${what}: the row "${w.widest.row}" needs ${w.widest.width} px, wider than Node-RED's tips (${w.tips} px): it widens the dialog beyond its default`,
    );
  }

  /** Every text, choice and placeholder of the dialog on top shown in full (test/helpers/layout-check.ts). */
  async function assertDialogTextFits(what: string): Promise<void> {
    const report = await page.evaluate(checkTextFits, `${TOP_TRAY} .red-ui-tray-body`);
    assert.ok(report.checked > 5, `${what}: texts looked at (${report.checked})`);
    assert.deepEqual(report.problems, [], `${what}: texts cut off`);
  }

  // The texts of our dialogs are checked at the width Node-RED opens them with (a user cannot make
  // a dialog narrower than that), as laid out by the browser, not by reading the HTML.
  it("at Node-RED's default dialog width, the door-unlock and door-account dialogs show every text, door, choice and placeholder in full", async () => {
    await scrollWorkspaceHome();
    await openEditDialog(unlockId);
    await page.waitForFunction(
      () => /Doors of this account: \d+/.test(document.querySelector("#door-unlock-door-note")?.textContent ?? ""),
      null,
      { timeout: STEP_MS },
    );
    await steadyTrayWidth();
    await assertRowsNoWiderThanTips("door-unlock dialog");
    const door = page.locator("#door-unlock-door");
    assert.match(await door.locator("option:checked").innerText(), /^Front Door\b/);
    assert.match(
      await page.locator("#door-unlock-door-detail").innerText(),
      /\bonline\b.*\bid 101\b/,
      "the picked door's state and id under the picker",
    );
    await assertDialogTextFits("door-unlock dialog, Front Door picked");
    await screenshot("browser-dialog-door-unlock.png");
    // A door with two locks: the list of its locks replaces the lock id field (one control, not
    // a "whole device" field beside a "whole device" list: docs/doors.md#picking-a-door-in-the-editor).
    assert.equal(await page.locator("#door-unlock-lockId").isVisible(), true, "one lock: the id field");
    await door.selectOption(await door.locator("option", { hasText: /^Garage\b/ }).getAttribute("value"));
    await page.locator("#door-unlock-lock").waitFor({ state: "visible" });
    await page.locator("#door-unlock-lockId").waitFor({ state: "hidden" });
    assert.equal(await page.locator("#door-unlock-lock option:checked").innerText(), "whole device");
    await assertDialogTextFits("door-unlock dialog, Garage (two locks) picked");
    await screenshot("browser-dialog-door-unlock-two-locks.png");

    // The account, from the pencil beside it (Node-RED 4/5: -edit-; older editors: the lookup button).
    await page
      .locator("#node-input-edit-account, #node-input-btn-account-edit, #node-input-lookup-account")
      .first()
      .click();
    await page.locator("#node-config-input-baseUrl").waitFor({ state: "visible" });
    await steadyTrayWidth();
    await assertRowsNoWiderThanTips("door-account dialog");
    await assertDialogTextFits("door-account dialog");
    await screenshot("browser-dialog-door-account.png");
    await page.locator("#node-config-input-loginMethod").selectOption("email");
    await page.locator("#node-config-input-sessionStore").selectOption("redis");
    await page.locator("#node-config-input-redisUrl").waitFor({ state: "visible" });
    await assertDialogTextFits("door-account dialog, email login and Redis store");
    await screenshot("browser-dialog-door-account-redis.png");
    await page.locator("#node-config-dialog-cancel").click();
    await page.locator("#node-config-input-baseUrl").waitFor({ state: "detached" });
    await page.locator("#node-dialog-cancel").click();
    await page.locator("#node-dialog-ok").waitFor({ state: "detached" });
    const [kept] = (await editorNodes("door-unlock")).filter((n) => n.id === unlockId);
    assert.equal(kept?.deviceId, 101, "cancelled: the door stays Front Door");
  });
});

/**
 * docs/security.md#text-in-the-editor-and-the-dashboard: text that came from a flow, the runtime
 * or the service is set as text in the editor, never parsed as HTML. An imported (undeployed)
 * flow brings a door-account whose base URL and name are markup; the simulator answers with an
 * error whose title is markup. Sign in, Reconnect and CSV export are pressed in the account
 * dialog and in the sidebar, and a door list is refreshed; each payload would set `window.__xss`
 * to the name of the path it came through if the browser ran it. Every notification must show
 * the markup as literal text and hold no element made from it.
 */
describe(`editor in a real browser (chromium, Node-RED ${nodeRedVersion}): text from a flow, the runtime or the service is shown as text, never as HTML (docs/security.md#text-in-the-editor-and-the-dashboard)`, function () {
  this.timeout(180_000);
  const TAB = "7e7e000000000001";
  const HOSTILE_ID = "7e7e000000000002"; // its base URL and its name are markup
  const SERVICE_ID = "7e7e000000000003"; // a good base URL; the service fails its login
  const PICKER_ID = "7e7e000000000013"; // a door-status on the demo's (ready) account
  // No double quote in the payloads: a JSON-quoted copy of them (as the runtime quotes a base URL) runs as well.
  const payload = (path: string) => `<img src=x onerror=window.__xss='${path}'>`;
  const MARKUP = "<img src=x onerror=";
  const HOSTILE_URL = payload("base-url");
  const HOSTILE_NAME = `<svg onload=window.__xss='account-name'></svg>`;
  const HOSTILE_TITLE = payload("service-title");
  const ed = useEditor({ name: "text-as-text", stopAfterFailure: true });
  let demo: RunningDemo;
  let page: Page;
  const log = ed.log;
  before(() => ({ demo, page } = ed));

  /** Runs fn(RED) in the page (for what a user does through a menu or a tab's button). */
  const red = (fn: (RED: any) => unknown) => page.evaluate(`(${fn.toString()})(window.RED)`);

  /** Closes the notifications shown so far and marks them, so that the next check looks at new ones only. */
  async function markNotices(): Promise<void> {
    await page.evaluate(() =>
      document.querySelectorAll(".red-ui-notification").forEach((n) => {
        n.setAttribute("data-seen", "1");
        (n as unknown as { close?: () => void }).close?.();
      }),
    );
  }

  /**
   * Nothing ran: every image of the page has finished loading or failing (so an onerror handler
   * would have run by now) and `window.__xss` is still unset.
   */
  async function assertNothingRan(where: string): Promise<void> {
    await page.waitForFunction(() => Array.from(document.images).every((i) => i.complete), null, { timeout: STEP_MS });
    const ran = await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss);
    assert.equal(ran, undefined, `${where}: a script from the ${String(ran)} ran in the editor`);
  }

  /** The first new notification: nothing ran, and it shows the markup as text, with no element made from it. */
  async function newNotice(where: string): Promise<string> {
    const notice = page.locator(".red-ui-notification:not([data-seen])").first();
    await notice.waitFor({ state: "attached" });
    await assertNothingRan(where);
    const shown = await notice.evaluate((n) => ({
      text: n.textContent ?? "",
      markup: n.querySelectorAll("img, svg, script, iframe, a, [onerror], [onload]").length,
    }));
    assert.ok(
      shown.text.includes(MARKUP),
      `${where}: the notification shows ${JSON.stringify(MARKUP)} as text; it shows ${JSON.stringify(shown.text)}`,
    );
    assert.equal(shown.markup, 0, `${where}: no element made from the text in the notification`);
    return shown.text;
  }

  async function textShows(selector: string, where: string): Promise<void> {
    await page
      .waitForFunction(([sel, m]) => (document.querySelector(sel)?.textContent ?? "").includes(m), [selector, MARKUP], {
        timeout: STEP_MS,
      })
      .catch(async () =>
        assert.fail(`${where}: ${selector} shows ${JSON.stringify(await page.locator(selector).textContent())}`),
      );
    await assertNothingRan(where);
  }

  async function openConfigDialog(label: string): Promise<void> {
    await red((RED) => RED.sidebar.show("config"));
    await page.locator(".red-ui-palette-node-config", { hasText: label }).first().dblclick();
    await page.locator("#node-config-input-baseUrl").waitFor({ state: "visible" });
    await dialogReady(page);
  }

  async function closeConfigDialog(button: "ok" | "cancel"): Promise<void> {
    await page.locator(`#node-config-dialog-${button}`).click();
    await page.locator("#node-config-input-baseUrl").waitFor({ state: "detached" });
  }

  async function screenshot(
    name: string,
    clip?: { x: number; y: number; width: number; height: number },
  ): Promise<string> {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const file = path.join(ARTIFACTS, name);
    await page.screenshot({ path: file, ...(clip ? { clip } : {}) });
    return file;
  }

  it("imports, without deploying, a flow whose door-account has markup as its base URL and name; nothing runs", async () => {
    assert.equal((await waitForAccountState(demo!.editorUrl, demo!.accountId, "ready", 30_000)).state, "ready");
    await page.goto(demo!.editorUrl, { waitUntil: "domcontentloaded", timeout: 60_000 });
    await page
      .locator('.red-ui-palette-node[data-palette-type="door-unlock"]')
      .waitFor({ state: "attached", timeout: 60_000 });
    await page.waitForFunction(
      () => !!(window as unknown as { RED: { nodes: { version(): unknown } } }).RED.nodes.version(),
      null,
      { timeout: 60_000 },
    ); // the flows are loaded after the palette
    const status = (id: string, account: string, y: number) => ({
      id,
      type: "door-status",
      z: TAB,
      name: "",
      account,
      deviceId: "",
      doorName: "",
      doorLocation: "",
      x: 200,
      y,
      wires: [[]],
    });
    const flow = [
      { id: TAB, type: "tab", label: "Imported", disabled: false, info: "" },
      {
        id: HOSTILE_ID,
        type: "door-account",
        name: HOSTILE_NAME,
        baseUrl: HOSTILE_URL,
        loginMethod: "phone",
        auditLog: "",
        sessionStore: "file",
      },
      {
        id: SERVICE_ID,
        type: "door-account",
        name: "Service text",
        baseUrl: demo!.simUrl,
        loginMethod: "phone",
        auditLog: "",
        sessionStore: "file",
      },
      status("7e7e000000000011", HOSTILE_ID, 80),
      status("7e7e000000000012", SERVICE_ID, 160),
      status(PICKER_ID, demo!.accountId, 240),
    ];
    await red((RED) => RED.actions.invoke("core:show-import-dialog"));
    const text = page.locator("#red-ui-clipboard-dialog-import-text");
    await text.fill(JSON.stringify(flow));
    await text.press("End"); // the dialog checks the text on keyup
    await page.locator("#red-ui-clipboard-dialog-ok").click();
    await text.waitFor({ state: "hidden" });
    await page.waitForFunction((id) => !!(window as any).RED.nodes.node(id), HOSTILE_ID);
    await page.locator(".red-ui-tab", { hasText: "Imported" }).first().click();
    await page
      .locator(`#red-ui-workspace-chart g.red-ui-flow-node-group[id="${PICKER_ID}"]`)
      .waitFor({ state: "visible" });
    await assertNothingRan("the import");
  });

  it("account dialog, Sign in: the runtime's error quoting the base URL is shown as text (notification and state line)", async () => {
    await openConfigDialog(HOSTILE_NAME);
    await page.locator("#door-account-sign-in").waitFor({ state: "visible" });
    await markNotices();
    await page.locator("#door-account-sign-in").click();
    assert.match(await newNotice("dialog Sign in"), /base URL/);
    await textShows("#door-account-session-state", "the dialog's state line");
    await page.mouse.move(640, 700);
    await page.waitForFunction(() => !(window as any).$(".red-ui-notification").is(":animated"), null, {
      timeout: STEP_MS,
    });
    const box = await page.locator(".red-ui-notification:not([data-seen])").first().boundingBox();
    const shot = await screenshot(
      "text-as-text-notification.png",
      box
        ? { x: Math.max(0, box.x - 20), y: 0, width: Math.min(1280, box.width + 40), height: box.y + box.height + 20 }
        : undefined,
    );
    assert.ok(fs.statSync(shot).size > 2_000, "a screenshot of the notification");
    await closeConfigDialog("cancel");
  });

  it("door picker: the service's error title (a failed door list) is shown as text", async () => {
    demo!.sim.control.inject({
      kind: "503",
      endpoint: "listUserDevices",
      accountId: "demo",
      title: HOSTILE_TITLE,
      count: 20,
    });
    await page
      .locator(`#red-ui-workspace-chart g.red-ui-flow-node-group[id="${PICKER_ID}"] rect.red-ui-flow-node`)
      .dblclick();
    await page.locator("#door-status-door-refresh").waitFor({ state: "visible" });
    await page.waitForFunction(
      () => document.querySelector("#door-status-door-refresh")?.hasAttribute("disabled") === false,
      null,
      { timeout: STEP_MS },
    );
    await page.locator("#door-status-door-refresh").click();
    await textShows("#door-status-door-note", "the door picker's note");
    await page.locator("#node-dialog-cancel").click();
    await page.locator("#door-status-door-refresh").waitFor({ state: "detached" });
    demo!.sim.control.clearFaults();
  });

  let reconnectError = "";

  it("deployed: the sidebar's Reconnect and CSV export get the configuration error; both notifications show it as text", async () => {
    // The second account logs in at the deploy and the service refuses it with a 503 (and
    // markup as the title): the account stays unreachable, so its dialog offers Reconnect.
    demo!.sim.control.inject({
      kind: "503",
      endpoint: "loginByPhone",
      accountId: "other",
      title: HOSTILE_TITLE,
      count: 1000,
    });
    await openConfigDialog("Service text");
    await page.locator("#node-config-input-phoneNumber").fill("+15550000002");
    await page.locator("#node-config-input-password").fill("other-password");
    await closeConfigDialog("ok");

    const deployed = page.waitForResponse(
      (r) => r.request().method() === "POST" && new URL(r.url()).pathname.endsWith("/flows"),
    );
    await page.locator("#red-ui-header-button-deploy").click();
    await page.locator("#red-ui-deploy-dialog-confirm-deploy-deploy").click(); // the account with the bad base URL is invalid
    assert.equal((await deployed).status(), 200, "the deploy was accepted");
    await page.waitForFunction(
      () => document.querySelector("#red-ui-header-button-deploy")?.classList.contains("disabled") === true,
      null,
      { timeout: STEP_MS },
    );
    await red((RED) => RED.sidebar.show("door-access"));
    await page.locator("#door-access-sidebar").waitFor({ state: "visible" });
    await page.waitForFunction(
      (id) => !!document.querySelector(`#door-access-account option[value="${id}"]`),
      HOSTILE_ID,
      { timeout: STEP_MS },
    );
    await page.locator("#door-access-account").selectOption(HOSTILE_ID);
    // The short state above, the whole reason once under it (docs/nodes.md#node-status).
    await textShows("#door-access-reason", "the sidebar's reason line");
    // The record list does not say it again.
    await page.waitForFunction(
      () =>
        /cannot be shown while the account cannot be used/.test(
          document.querySelector("#door-access-empty")?.textContent ?? "",
        ),
      null,
      { timeout: STEP_MS },
    );

    await markNotices();
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/door-access/accounts/${HOSTILE_ID}/reconnect`)),
      page.locator("#door-access-reconnect").click(),
    ]);
    assert.equal(answer.status(), 409);
    reconnectError = ((await answer.json()) as { error: string }).error;
    await newNotice("sidebar Reconnect");

    await markNotices();
    await page.locator("#door-access-csv").click();
    await newNotice("sidebar CSV export");
  });

  it("account dialog, Reconnect of a deployed account: the runtime's error is shown as text", async () => {
    // The dialog offers Reconnect while the account cannot reach the service. The runtime answers
    // a configuration error only when the node was redeployed broken in between; that answer (the
    // very text the sidebar's Reconnect got) is given to this press.
    assert.ok(reconnectError.includes(MARKUP), `the runtime's reconnect error: ${reconnectError}`);
    const route = `**/door-access/accounts/${SERVICE_ID}/reconnect`;
    await page.route(route, (r) =>
      r.fulfill({ status: 409, contentType: "application/json", body: JSON.stringify({ error: reconnectError }) }),
    );
    await openConfigDialog("Service text");
    await page.waitForFunction(
      () => document.querySelector("#door-account-reconnect")?.hasAttribute("disabled") === false,
      null,
      { timeout: STEP_MS },
    );
    await markNotices();
    await page.locator("#door-account-reconnect").click();
    await newNotice("dialog Reconnect");
    await closeConfigDialog("cancel");
    await page.unroute(route);
    await assertNothingRan("the whole run");
    assert.doesNotMatch(log.join("\n"), /\[pageerror\]/, "no error in the page");
  });
});
