/**
 * One fixture for a browser test against the demo (scripts/start-demo.ts: simulator + Node-RED
 * with our package): the demo, Debian's chromium (playwright-core), the page, and a screenshot
 * with the log when a step fails. `useEditor()` registers mocha's hooks in the calling describe
 * and returns a handle whose fields are set once `before` has run.
 *
 * Without /usr/bin/chromium the test fails (it is never skipped): `.ci/run` installs it.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { BrowserContext, Locator, Page } from "playwright-core";
import { REPO_ROOT, waitForAccountState } from "../../scripts/node-red-process.js";
import { type RunningDemo, startDemo } from "../../scripts/start-demo.js";
import { dialogReady } from "./editor-dialog.js";

export const CHROMIUM = "/usr/bin/chromium";
export const ARTIFACTS = path.join(REPO_ROOT, "test-artifacts");
export const STEP_MS = 15_000;

export interface EditorHandle {
  demo: RunningDemo;
  page: Page;
  context: BrowserContext;
  /** Everything Node-RED and the page said (the failure log). */
  log: string[];
  /** Runs `fn(RED, arg)` in the page. */
  red<T>(fn: (RED: any, arg: any) => T, arg?: unknown): Promise<T>;
  /** POST /flows (full deploy), then the editor (re)opened so it shows them, unless `reopen` is false. */
  setFlows(flows: unknown[], reopen?: boolean): Promise<void>;
  /** Opens (or reopens) the editor and waits until its palette has our nodes. */
  openEditor(): Promise<void>;
  /**
   * Opens node `id`'s edit dialog (as a double-click does) once the editor has the node, and waits
   * until it is ready to type into. Asked again (at most three times) if the editor was still busy.
   */
  editNode(id: string): Promise<void>;
  /** test-artifacts/<name>.png of the page (or of `what`). */
  screenshot(name: string, what?: Locator): Promise<void>;
}

export function useEditor(
  options: { deployExamples?: boolean; viewport?: { width: number; height: number } } = {},
): EditorHandle {
  const h = { log: [] as string[] } as EditorHandle;
  let dir = "";
  let profile = "";
  let failed = false;

  before(async function () {
    this.timeout(120_000);
    if (!fs.existsSync(CHROMIUM)) {
      throw new Error(
        `${CHROMIUM} is missing: the browser test needs Debian's chromium (apt-get install -y chromium; .ci/run installs it)`,
      );
    }
    dir = fs.mkdtempSync(path.join(tmpdir(), "door-browser-demo-"));
    profile = fs.mkdtempSync(path.join(tmpdir(), "door-browser-profile-"));
    h.demo = await startDemo({
      dir,
      simPort: 0,
      editorPort: 0,
      mqttPort: false,
      deployExamples: options.deployExamples ?? false,
      onLog: (l) => h.log.push(l),
    });
    assert.equal((await waitForAccountState(h.demo.editorUrl, h.demo.accountId, "ready", 30_000)).state, "ready");
    const { chromium } = await import("playwright-core");
    h.context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: options.viewport ?? { width: 1280, height: 760 },
      args: ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--no-first-run", "--disable-sync"],
      timeout: 60_000,
    });
    h.context.setDefaultTimeout(STEP_MS);
    h.page = h.context.pages()[0] ?? (await h.context.newPage());
    h.page.on("pageerror", (e) => h.log.push(`[pageerror] ${e.message}`));
  });

  after(async function () {
    this.timeout(60_000);
    if (h.context) await h.context.close().catch(() => undefined);
    if (h.demo) await h.demo.stop();
    for (const d of [profile, dir]) if (d) fs.rmSync(d, { recursive: true, force: true });
  });

  afterEach(async function () {
    if (this.currentTest?.state !== "failed" || failed || !h.page) return;
    failed = true;
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const name = path.basename(this.currentTest.file ?? "browser", ".js").replace(/\.test$/, "");
    await h.page.screenshot({ path: path.join(ARTIFACTS, `${name}-failure.png`) }).catch(() => undefined);
    fs.writeFileSync(path.join(ARTIFACTS, `${name}-failure.log`), h.log.join("\n") + "\n");
  });

  h.red = <T>(fn: (RED: any, arg: any) => T, arg?: unknown): Promise<T> =>
    h.page.evaluate<T>(`(${fn.toString()})(window.RED, ${JSON.stringify(arg ?? null)})`);

  h.openEditor = async () => {
    await h.page.goto(h.demo.editorUrl, { waitUntil: "domcontentloaded" });
    await h.page.locator('.red-ui-palette-node[data-palette-type="door-unlock"]').waitFor({ state: "attached" });
    await h.page.locator("#red-ui-header-button-deploy").waitFor({ state: "visible" });
  };

  h.setFlows = async (flows: unknown[], reopen = true) => {
    const res = await fetch(new URL("flows", h.demo.editorUrl), {
      method: "POST",
      headers: { "Content-Type": "application/json", "Node-RED-API-Version": "v2", "Node-RED-Deployment-Type": "full" },
      body: JSON.stringify({ flows }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200, `POST /flows: ${res.status} ${await res.text()}`);
    if (!reopen) return;
    await h.openEditor();
    // The palette is there before the flows are: wait until the editor has every node deployed.
    const ids = (flows as { id?: unknown }[]).map((n) => n.id).filter((id): id is string => typeof id === "string");
    await h.page.waitForFunction(
      (list) => {
        const RED = (window as unknown as { RED: any }).RED;
        return list.every((id) => !!(RED?.nodes?.node(id) || RED?.nodes?.workspace(id)));
      },
      ids,
      { timeout: STEP_MS },
    );
  };

  h.editNode = async (id: string) => {
    await h.page.waitForFunction((i) => !!(window as unknown as { RED: any }).RED?.nodes?.node(i), id, {
      timeout: STEP_MS,
    });
    for (let attempt = 1; ; attempt++) {
      await h.red((RED, i) => RED.editor.edit(RED.nodes.node(i)), id);
      try {
        await h.page.locator("#node-dialog-ok").waitFor({ state: "visible", timeout: 5000 });
        break;
      } catch (e) {
        if (attempt >= 3) throw e;
      }
    }
    await dialogReady(h.page);
  };

  h.screenshot = async (name: string, what?: Locator) => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const file = path.join(ARTIFACTS, `${name}.png`);
    if (what) await what.screenshot({ path: file });
    else await h.page.screenshot({ path: file });
  };
  return h;
}

/** The flows the runtime has (GET /flows, v2). */
export async function getFlows(editorUrl: string): Promise<{ rev: string; flows: Record<string, any>[] }> {
  const res = await fetch(new URL("flows", editorUrl), {
    headers: { "Node-RED-API-Version": "v2" },
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(res.status, 200);
  return (await res.json()) as never;
}
