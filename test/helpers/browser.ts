/**
 * One fixture for the browser tests against the demo (scripts/start-demo.ts: simulator + Node-RED
 * with our package) in Debian's chromium (playwright-core, headless):
 *
 * - `useDemo()`: the demo on ephemeral ports, its account ready; `newPage()` opens a chromium
 *   with a profile of its own (a phone with `mobile`; the door panel's login with `panelLogin`),
 *   closed with the demo after the describe;
 * - `useEditor()`: the demo and one page, with the editor's steps (setFlows, editNode, ...) and a
 *   screenshot with the log when a test fails (`stopAfterFailure`: steps that build on each other);
 * - `launchChromium()`, `saveFailure()`, `stopAfterFailure()` for a test that starts its own demo.
 *
 * The `use*` functions register mocha's hooks in the calling describe and return a handle whose
 * fields are set once `before` has run. Without chromium (/usr/bin/chromium, or DOOR_TEST_CHROMIUM)
 * the tests of a `use*` describe are pending, or fail under CI=true
 * (docs/testing.md#programs-the-suite-needs): `.ci/run` installs it.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { BrowserContext, Locator, Page } from "playwright-core";
import { REPO_ROOT, waitForAccountState } from "../../scripts/node-red-process.js";
import { type RunningDemo, startDemo } from "../../scripts/start-demo.js";
import { dialogReady } from "./editor-dialog.js";
import { recordForLeakScan, scanFolderForLeaks } from "../hooks/leak-scan.js";
import { chromiumPath, missingLine, needProgram, programPath } from "./programs.js";

export const ARTIFACTS = path.join(REPO_ROOT, "test-artifacts");
export const STEP_MS = 15_000;
/** Headless chromium with nothing of its own on the network: no background fetches, no updates. */
export const BROWSER_ARGS = [
  "--no-sandbox",
  "--disable-background-networking",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
];

export interface PageOptions {
  /** Default 1280 x 760. */
  viewport?: { width: number; height: number };
  /** A phone: touch, device scale factor 2. */
  mobile?: boolean;
  /** Each step's time-out (default STEP_MS). */
  stepMs?: number;
  /**
   * A page of `useDemo` that sends the demo's door panel login (`/dashboard` asks for it:
   * docs/security.md#the-door-panel-behind-a-login) with every request to the demo's origin.
   * Without it (the default), a page has no login, as a guest or a page of another site.
   */
  panelLogin?: boolean;
  /** HTTP credentials sent with every request to `origin` (set by `useDemo`'s `newPage`). */
  login?: { username: string; password: string; origin: string };
  /** The browser's language (navigator.languages and Accept-Language), e.g. `de-DE`; default: the machine's. */
  locale?: string;
}

/** Fails without chromium: a describe checks for it first (`needProgram`) to be pending instead. */
export function assertChromium(): void {
  if (programPath("chromium") === null) throw new Error(missingLine("chromium"));
}

/**
 * Debian's chromium with the profile folder `profile` (playwright-core), headless, and its first
 * page; page errors are pushed to `log` as `[pageerror] ...` and, bare, to `pageErrors`.
 */
export async function launchChromium(
  profile: string,
  options: PageOptions = {},
  log: string[] = [],
  pageErrors: string[] = [],
): Promise<{ context: BrowserContext; page: Page }> {
  assertChromium();
  const { chromium } = await import("playwright-core");
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    viewport: options.viewport ?? { width: 1280, height: 760 },
    ...(options.mobile ? { deviceScaleFactor: 2, isMobile: true, hasTouch: true } : {}),
    ...(options.login ? { httpCredentials: { ...options.login, send: "always" as const } } : {}),
    ...(options.locale ? { locale: options.locale } : {}),
    args: BROWSER_ARGS,
    timeout: 60_000,
  });
  context.setDefaultTimeout(options.stepMs ?? STEP_MS);
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => {
    log.push(`[pageerror] ${e.message}`);
    pageErrors.push(e.message);
  });
  return { context, page };
}

/** test-artifacts/<name>.png of `page` (if any), <name>.log of `log`, and with `html` <name>.html of the page. */
export async function saveFailure(
  name: string,
  page: Page | undefined,
  log: string[],
  options: { html?: boolean } = {},
): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  if (page) {
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) }).catch(() => undefined);
    if (options.html) fs.writeFileSync(path.join(ARTIFACTS, `${name}.html`), await page.content().catch(() => ""));
  }
  fs.writeFileSync(path.join(ARTIFACTS, `${name}.log`), log.join("\n") + "\n");
}

/**
 * Mocha hooks of the calling describe for steps that build on each other: the first failed test
 * saves `name` (saveFailure) of the page `page()` gives, and every later test fails at once.
 */
export function stopAfterFailure(
  name: string,
  page: () => Page | undefined,
  log: string[],
  options: { html?: boolean } = {},
): void {
  let broken = "";
  beforeEach(function () {
    if (broken) throw new Error(`an earlier step failed: ${broken}`);
  });
  afterEach(async function () {
    if (this.currentTest?.state !== "failed" || broken) return;
    broken = this.currentTest.title;
    await saveFailure(name, page(), log, options);
  });
}

export interface DemoFixtureOptions {
  /** Deploy the example flows (default false). */
  deployExamples?: boolean;
  /** The demo's MQTT broker: false (default) none, 0 an ephemeral port. */
  mqttPort?: number | false;
  /** How long the demo's account may take to be ready (default 30 s). */
  readyMs?: number;
}

export interface DemoHandle {
  demo: RunningDemo;
  /** Everything Node-RED and the pages said (the failure log). */
  log: string[];
  /** The pages' errors, bare. */
  pageErrors: string[];
  /** One more chromium with a profile of its own, closed after the describe. */
  newPage(options?: PageOptions): Promise<Page>;
}

/**
 * Mocha hooks of the calling describe: the demo on ephemeral ports in a temp folder, started
 * before its tests (its account ready), stopped after them with every chromium `newPage` opened.
 */
export function useDemo(options: DemoFixtureOptions = {}): DemoHandle {
  const h = { log: [] as string[], pageErrors: [] as string[] } as DemoHandle;
  const dirs: string[] = [];
  const contexts: BrowserContext[] = [];

  before(async function () {
    this.timeout(150_000);
    needProgram(this, "chromium");
    const dir = fs.mkdtempSync(path.join(tmpdir(), "door-browser-demo-"));
    dirs.push(dir);
    h.demo = await startDemo({
      dir,
      simPort: 0,
      editorPort: 0,
      mqttPort: options.mqttPort ?? false,
      deployExamples: options.deployExamples ?? false,
      onLog: (l) => h.log.push(l),
    });
    // The editor answers before the demo's flows have started: a deploy then can start the demo's
    // account without its credentials (Node-RED clears them for the new flows first). Wait for it.
    const ready = await waitForAccountState(h.demo.editorUrl, h.demo.accountId, "ready", options.readyMs ?? 30_000);
    assert.equal(ready.state, "ready");
  });

  after(async function () {
    this.timeout(60_000);
    for (const c of contexts) await c.close().catch(() => undefined);
    if (h.demo) await h.demo.stop();
    // The demo's files (flows, credentials, audit log, session) and its log are searched for
    // secrets before the folder goes (test/hooks/leak-scan.ts).
    if (dirs.length > 0) scanFolderForLeaks(dirs[0], "browser demo file");
    recordForLeakScan("browser demo log", h.log.join("\n"));
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  h.newPage = async (pageOptions: PageOptions = {}) => {
    const profile = fs.mkdtempSync(path.join(tmpdir(), "door-browser-profile-"));
    dirs.push(profile);
    const login = pageOptions.panelLogin
      ? {
          username: h.demo.panelLogin.user,
          password: h.demo.panelLogin.password,
          origin: new URL(h.demo.editorUrl).origin,
        }
      : undefined;
    const { context, page } = await launchChromium(profile, { ...pageOptions, login }, h.log, h.pageErrors);
    contexts.push(context);
    return page;
  };
  return h;
}

export interface EditorHandle extends DemoHandle {
  page: Page;
  context: BrowserContext;
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

export interface EditorOptions extends DemoFixtureOptions, PageOptions {
  /**
   * test-artifacts/<name>-failure.png and .log when a test fails (default: the test file's name).
   * With `stopAfterFailure`, the first failed test saves them and every later test fails at once.
   */
  name?: string;
  stopAfterFailure?: boolean;
}

/**
 * The demo (useDemo) and one chromium page (default 1280 x 760), with a screenshot and the log
 * when a test fails. Registers mocha's hooks in the calling describe and returns a handle whose
 * fields are set once `before` has run.
 */
export function useEditor(options: EditorOptions = {}): EditorHandle {
  const h = useDemo(options) as EditorHandle;
  let failed = false;

  before(async function () {
    this.timeout(120_000);
    h.page = await h.newPage(options);
    h.context = h.page.context();
  });

  if (options.stopAfterFailure) {
    stopAfterFailure(`${options.name ?? "browser"}-failure`, () => h.page, h.log);
  } else {
    afterEach(async function () {
      if (this.currentTest?.state !== "failed" || failed || !h.page) return;
      failed = true;
      const file = path.basename(this.currentTest.file ?? "browser", ".js").replace(/\.test$/, "");
      await saveFailure(`${options.name ?? file}-failure`, h.page, h.log);
    });
  }

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
