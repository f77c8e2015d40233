/**
 * The door-account dialog in a real browser (Debian's chromium via playwright-core) against the
 * demo (scripts/demo.ts): a stored login, email or phone number, is a secret
 * (docs/security.md#secrets). The editor is told only that one is stored: the field shows it as
 * stored (a password field holding Node-RED's "__PWRD__" marker), the eye button never reveals
 * it, the page never holds it; and an account deployed before keeps working when its dialog is
 * saved and deployed again (the stored email is kept, not replaced by the marker).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { REPO_ROOT, newNodeId, startDemo, waitForAccountState, type RunningDemo } from "../scripts/demo.js";
import { DEMO_ACCOUNT } from "../src/simulator/index.js";
import { nodeRedVersion } from "./helpers/runtime.js";
import { recordForLeakScan } from "./hooks/leak-scan.js";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = path.join(REPO_ROOT, "test-artifacts");
const STEP_MS = 15_000;
const TAB_ID = "acd1a1090000a000";

describe(`door-account dialog in a real browser (chromium, Node-RED ${nodeRedVersion}): a stored login is shown as stored, never in clear`, function () {
  this.timeout(180_000);
  let dir = "";
  let profile = "";
  let demo: RunningDemo | null = null;
  let context: BrowserContext | null = null;
  let page: Page;
  const accountId = newNodeId();
  const log: string[] = [];
  const pageErrors: string[] = [];

  before(async function () {
    this.timeout(120_000);
    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: the browser test needs Debian's chromium`);
    dir = fs.mkdtempSync(path.join(tmpdir(), "door-dialog-demo-"));
    profile = fs.mkdtempSync(path.join(tmpdir(), "door-dialog-profile-"));
    demo = await startDemo({ dir, simPort: 0, editorPort: 0, mqttPort: false, deployExamples: false, onLog: (l) => log.push(l) });
    // An account that logs in by email, deployed as an existing flow is (its credentials sent once).
    const res = await fetch(new URL("flows", demo.editorUrl), {
      method: "POST",
      headers: { "Content-Type": "application/json", "Node-RED-API-Version": "v2", "Node-RED-Deployment-Type": "full" },
      body: JSON.stringify({
        flows: [
          { id: TAB_ID, type: "tab", label: "Dialog test", disabled: false, info: "" },
          {
            id: accountId, type: "door-account", name: "Email account", baseUrl: demo.simUrl, loginMethod: "email", auditLog: "",
            credentials: { email: DEMO_ACCOUNT.email, password: DEMO_ACCOUNT.password },
          },
        ],
      }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200, `deploying the email account: ${res.status} ${await res.text()}`);
    assert.equal((await waitForAccountState(demo.editorUrl, accountId, "ready", 20_000)).state, "ready");

    const { chromium } = await import("playwright-core");
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 760 },
      args: ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"],
      timeout: 60_000,
    });
    context.setDefaultTimeout(STEP_MS);
    page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (e) => pageErrors.push(e.message));
  });

  after(async function () {
    this.timeout(60_000);
    if (context) await context.close().catch(() => undefined);
    if (demo) await demo.stop();
    for (const d of [profile, dir]) if (d) fs.rmSync(d, { recursive: true, force: true });
  });

  let broken = "";
  beforeEach(function () {
    if (broken) throw new Error(`an earlier step failed: ${broken}`);
  });
  afterEach(async function () {
    if (this.currentTest?.state !== "failed" || broken) return;
    broken = this.currentTest.title;
    if (context) {
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(ARTIFACTS, "account-dialog-failure.png") }).catch(() => undefined);
      fs.writeFileSync(path.join(ARTIFACTS, "account-dialog-failure.log"), [...log, ...pageErrors.map((e) => `[pageerror] ${e}`)].join("\n") + "\n");
    }
  });

  const email = () => page.locator("#node-config-input-email");

  it("the dialog of an email account: the email field shows a stored value, as the phone field does, and holds no email", async () => {
    await page.goto(demo!.editorUrl, { waitUntil: "domcontentloaded", timeout: 60_000 });
    await page.locator('.red-ui-palette-node[data-palette-type="door-unlock"]').waitFor({ state: "attached", timeout: 60_000 });
    // The editor loads the flows after the palette: the account must be there, or editConfig opens a new one.
    await page.waitForFunction((id) => !!(window as unknown as { RED: { nodes: { node(id: string): unknown } } }).RED.nodes.node(id), accountId, { timeout: 60_000 });
    await page.evaluate((id) => (window as unknown as { RED: { editor: { editConfig(n: string, t: string, id: string): void } } }).RED.editor.editConfig("", "door-account", id), accountId);
    await email().waitFor({ state: "visible" });
    // Node-RED fills a password-type credential it was told is stored with its "__PWRD__" marker.
    await page.waitForFunction(() => (document.querySelector("#node-config-input-email") as HTMLInputElement | null)?.value === "__PWRD__", null, { timeout: STEP_MS })
      .catch(async () => assert.fail(`the email field holds ${JSON.stringify(await email().inputValue())}, not the stored-value marker`));
    assert.equal(await email().getAttribute("type"), "password");
    assert.equal(await page.locator("#node-config-input-phoneNumber").getAttribute("type"), "password", "as the phone field");
    // The eye button shows what is typed, never the stored value (the editor does not have it).
    await page.locator("#door-account-show-email").click();
    assert.equal(await email().getAttribute("type"), "password");
    assert.equal(await email().inputValue(), "__PWRD__");
    const held = await page.evaluate((id) => {
      const RED = (window as unknown as { RED: { nodes: { node(id: string): { credentials?: object } } } }).RED;
      return JSON.stringify(RED.nodes.node(id)?.credentials ?? {}) + document.documentElement.outerHTML;
    }, accountId);
    recordForLeakScan("account dialog", held);
    assert.ok(!held.includes(DEMO_ACCOUNT.email), "the page holds the email");
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, "account-dialog-email.png") });
  });

  it("saved with another name and deployed: the account keeps its stored email and is ready again, with no configuration problem", async () => {
    await page.locator("#node-config-input-name").fill("Email account (renamed)");
    await page.locator("#node-config-dialog-ok").click();
    await page.locator("#node-config-dialog-ok").waitFor({ state: "detached" });
    const deploy = page.locator("#red-ui-header-button-deploy");
    await page.waitForFunction(() => document.querySelector("#red-ui-header-button-deploy")?.classList.contains("disabled") === false, null, { timeout: STEP_MS });
    // The button is disabled while the deploy is in flight too: wait for the runtime's answer.
    const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname.endsWith("/flows")), deploy.click()]);
    assert.equal(answer.status(), 200, "the deploy was accepted");
    await page.waitForFunction(() => document.querySelector("#red-ui-header-button-deploy")?.classList.contains("disabled") === true, null, { timeout: STEP_MS });
    const back = (await (await fetch(new URL("flows", demo!.editorUrl), { headers: { "Node-RED-API-Version": "v2" }, signal: AbortSignal.timeout(5000) })).json()) as { flows: Array<{ id: string; name?: string }> };
    assert.equal(back.flows.find((n) => n.id === accountId)?.name, "Email account (renamed)", "the change was deployed");
    const state = await waitForAccountState(demo!.editorUrl, accountId, "ready", 20_000);
    assert.equal(state.state, "ready", JSON.stringify(state));
    assert.equal(state.reason, null, JSON.stringify(state));
    const creds = (await (await fetch(new URL(`credentials/door-account/${accountId}`, demo!.editorUrl), { signal: AbortSignal.timeout(5000) })).json()) as Record<string, unknown>;
    assert.equal(creds.has_email, true, JSON.stringify(creds));
    assert.equal(creds.email, undefined);
    assert.deepEqual(pageErrors, []);
  });
});
