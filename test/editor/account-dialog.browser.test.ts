/**
 * The door-account dialog in a real browser (Debian's chromium via playwright-core) against the
 * demo (scripts/start-demo.ts: simulator + Node-RED with our package installed), on ephemeral
 * ports. Each describe runs a demo of its own.
 *
 * A stored login, email or phone number, is a secret (docs/security.md#secrets). The editor is
 * told only that one is stored: the field shows it as stored (a password field holding
 * Node-RED's "__PWRD__" marker), the eye button never reveals it, the page never holds it; and an
 * account deployed before keeps working when its dialog is saved and deployed again (the stored
 * email is kept, not replaced by the marker).
 *
 * Set-up: the demo's account is deployed again with a wrong password; it resumes its stored
 * token pair, so it runs with a password no login has accepted. In the browser a new account
 * of the same login is added through a door-unlock's dialog and signed in with that same wrong
 * password, then with the right one; a second login (the simulator's other account) on the same
 * simulator is first held back with a warning (the runtime cannot know it is another service
 * account), signed in with "Sign in anyway" and its right password, and then with a wrong one.
 *
 * "Sign in" (docs/session.md#signing-in-from-the-editor) never reports success for a password
 * that is not the account's, and never logs in while a session of that account runs in this
 * Node-RED (a login would end it). Counted at the simulator. Set-up: the demo's account is
 * deployed again with a wrong password; it resumes its stored token pair, so it runs with a
 * password no login has accepted. In the browser a new account of the same login is added
 * through a door-unlock's dialog and signed in with that same wrong password, then with the
 * right one; a second login (the simulator's other account) is signed in with its right password
 * and then with a wrong one.
 *
 * Screenshots: test-artifacts/account-dialog-*.png and sign-in-*.png every run (test-artifacts/
 * is gitignored).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Locator, Page } from "playwright-core";
import { newNodeId } from "../../scripts/demo-flows.js";
import { waitForAccountState } from "../../scripts/node-red-process.js";
import type { RunningDemo } from "../../scripts/start-demo.js";
import { ARTIFACTS, STEP_MS, useEditor } from "../helpers/browser.js";
import { DEMO_ACCOUNT, OTHER_ACCOUNT } from "../../src/simulator/seed.js";
import { nodeRedVersion } from "../helpers/runtime.js";
import { dialogReady } from "../helpers/editor-dialog.js";
import { recordForLeakScan } from "../hooks/leak-scan.js";

const TAB_ID = "acd1a1090000a000";

describe(`door-account dialog in a real browser (chromium, Node-RED ${nodeRedVersion}): a stored login is shown as stored, never in clear (docs/security.md#secrets)`, function () {
  this.timeout(180_000);
  const ed = useEditor({ name: "account-dialog", stopAfterFailure: true });
  let demo: RunningDemo;
  let page: Page;
  const accountId = newNodeId();
  const pageErrors = ed.pageErrors;

  before(async function () {
    this.timeout(60_000);
    ({ demo, page } = ed);
    // An account that logs in by email, deployed as an existing flow is (its credentials sent once).
    const res = await fetch(new URL("flows", demo.editorUrl), {
      method: "POST",
      headers: { "Content-Type": "application/json", "Node-RED-API-Version": "v2", "Node-RED-Deployment-Type": "full" },
      body: JSON.stringify({
        flows: [
          { id: TAB_ID, type: "tab", label: "Dialog test", disabled: false, info: "" },
          {
            id: accountId,
            type: "door-account",
            name: "Email account",
            baseUrl: demo.simUrl,
            loginMethod: "email",
            auditLog: "",
            credentials: { email: DEMO_ACCOUNT.email, password: DEMO_ACCOUNT.password },
          },
        ],
      }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200, `deploying the email account: ${res.status} ${await res.text()}`);
    assert.equal((await waitForAccountState(demo.editorUrl, accountId, "ready", 20_000)).state, "ready");
  });

  const email = () => page.locator("#node-config-input-email");

  it("the dialog of an email account: the email field shows a stored value, as the phone field does, and holds no email", async () => {
    await page.goto(demo!.editorUrl, { waitUntil: "domcontentloaded", timeout: 60_000 });
    await page
      .locator('.red-ui-palette-node[data-palette-type="door-unlock"]')
      .waitFor({ state: "attached", timeout: 60_000 });
    // The editor loads the flows after the palette: the account must be there, or editConfig opens a new one.
    await page.waitForFunction(
      (id) => !!(window as unknown as { RED: { nodes: { node(id: string): unknown } } }).RED.nodes.node(id),
      accountId,
      { timeout: 60_000 },
    );
    await page.evaluate(
      (id) =>
        (
          window as unknown as { RED: { editor: { editConfig(n: string, t: string, id: string): void } } }
        ).RED.editor.editConfig("", "door-account", id),
      accountId,
    );
    await email().waitFor({ state: "visible" });
    // Node-RED fills a password-type credential it was told is stored with its "__PWRD__" marker.
    await page
      .waitForFunction(
        () => document.querySelector<HTMLInputElement>("#node-config-input-email")?.value === "__PWRD__",
        null,
        { timeout: STEP_MS },
      )
      .catch(async () =>
        assert.fail(`the email field holds ${JSON.stringify(await email().inputValue())}, not the stored-value marker`),
      );
    assert.equal(await email().getAttribute("type"), "password");
    assert.equal(
      await page.locator("#node-config-input-phoneNumber").getAttribute("type"),
      "password",
      "as the phone field",
    );
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
    await page.waitForFunction(
      () => document.querySelector("#red-ui-header-button-deploy")?.classList.contains("disabled") === false,
      null,
      { timeout: STEP_MS },
    );
    await deploy.click();
    await page.waitForFunction(
      () => document.querySelector("#red-ui-header-button-deploy")?.classList.contains("disabled") === true,
      null,
      { timeout: STEP_MS },
    );
    // The deploy button greys out while the deploy is under way too: wait for the runtime's flows.
    const deployedName = async () =>
      (
        (await (
          await fetch(new URL("flows", demo!.editorUrl), {
            headers: { "Node-RED-API-Version": "v2" },
            signal: AbortSignal.timeout(5000),
          })
        ).json()) as { flows: Array<{ id: string; name?: string }> }
      ).flows.find((n) => n.id === accountId)?.name;
    const until = Date.now() + STEP_MS;
    let name = await deployedName();
    while (name !== "Email account (renamed)" && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
      name = await deployedName();
    }
    assert.equal(name, "Email account (renamed)", "the change was deployed");
    const state = await waitForAccountState(demo!.editorUrl, accountId, "ready", 20_000);
    assert.equal(state.state, "ready", JSON.stringify(state));
    assert.equal(state.reason, null, JSON.stringify(state));
    const creds = (await (
      await fetch(new URL(`credentials/door-account/${accountId}`, demo!.editorUrl), {
        signal: AbortSignal.timeout(5000),
      })
    ).json()) as Record<string, unknown>;
    assert.equal(creds.has_email, true, JSON.stringify(creds));
    assert.equal(creds.email, undefined);
    assert.deepEqual(pageErrors, []);
  });
});

describe(`door-account dialog: Sign in never claims a password no login accepted (docs/session.md#signing-in-from-the-editor; chromium, Node-RED ${nodeRedVersion})`, function () {
  this.timeout(180_000);
  const ed = useEditor({ readyMs: 20_000, name: "sign-in", stopAfterFailure: true });
  let demo: RunningDemo;
  let page: Page;
  const pageErrors = ed.pageErrors;
  before(() => ({ demo, page } = ed));

  const logins = (outcome?: number) =>
    demo!.sim.control
      .requests()
      .filter((r) => /^login/.test(r.operation) && (outcome === undefined || r.status === outcome)).length;

  // ---- the editor's DOM -----------------------------------------------------------------

  const chart = () => page.locator("#red-ui-workspace-chart");
  const stateText = () => page.locator("#door-account-session-state");

  async function centre(loc: Locator): Promise<{ x: number; y: number }> {
    await loc.waitFor({ state: "visible" });
    const box = await loc.boundingBox();
    assert.ok(box, "element has a box");
    return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  }

  /** Drags a door-unlock from the palette onto the workspace and opens its dialog. */
  async function newUnlockDialog(dx: number, dy: number): Promise<void> {
    const item = page.locator(`#red-ui-palette .red-ui-palette-node[data-palette-type="door-unlock"]`);
    await item.scrollIntoViewIfNeeded();
    let from = await centre(item);
    for (let same = 0; same < 3;) {
      await page.waitForTimeout(150);
      const now = await centre(item);
      same = now.x === from.x && now.y === from.y ? same + 1 : 0;
      from = now;
    }
    const count = () =>
      page.evaluate(
        () =>
          (window as unknown as { RED: { nodes: { filterNodes(f: object): unknown[] } } }).RED.nodes.filterNodes({
            type: "door-unlock",
          }).length,
      );
    const before = await count();
    const box = (await chart().boundingBox())!;
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    await page.mouse.move(from.x + 30, from.y + 10, { steps: 5 });
    await page.mouse.move(box.x + dx, box.y + dy, { steps: 20 });
    await page.mouse.up();
    await page.waitForFunction(
      (n) =>
        (window as unknown as { RED: { nodes: { filterNodes(f: object): unknown[] } } }).RED.nodes.filterNodes({
          type: "door-unlock",
        }).length > n,
      before,
      { timeout: STEP_MS },
    );
    const id = await page.evaluate(() => {
      const list = (
        window as unknown as { RED: { nodes: { filterNodes(f: object): { id: string }[] } } }
      ).RED.nodes.filterNodes({ type: "door-unlock" });
      return list[list.length - 1].id;
    });
    await page.locator(`#red-ui-workspace-chart g.red-ui-flow-node-group[id="${id}"] rect.red-ui-flow-node`).dblclick();
    await page.locator("#node-dialog-ok").waitFor({ state: "visible" });
    await dialogReady(page);
  }

  /** From the door-unlock dialog: a new door-account with a login typed in, not deployed. */
  async function addAccount(name: string, phone: string, password: string): Promise<void> {
    await page.locator("select#node-input-account").waitFor({ state: "visible" });
    // Node-RED 4/5: a "+" (add) button beside the select; older editors: "add new" in the select and its lookup button.
    if ((await page.locator("#node-input-btn-account-add").count()) > 0) {
      await page.locator("#node-input-btn-account-add").click();
    } else {
      await page.locator("select#node-input-account").selectOption("_ADD_");
      await page.locator("#node-input-lookup-account").click();
    }
    await page.locator("#node-config-input-baseUrl").waitFor({ state: "visible" });
    await page.locator("#node-config-input-name").fill(name);
    await page.locator("#node-config-input-baseUrl").fill(demo!.simUrl);
    await page.locator("#node-config-input-loginMethod").selectOption("phone");
    await page.locator("#node-config-input-phoneNumber").fill(phone);
    await page.locator("#node-config-input-password").fill(password);
    await page.locator("#door-account-sign-in").waitFor({ state: "visible" });
  }

  /** Presses Sign in with `password` typed; resolves with the dialog's session line once it has the answer. */
  async function signIn(password: string): Promise<{ text: string; colour: string }> {
    await page.locator("#node-config-input-password").fill(password);
    await page.locator("#door-account-sign-in").click();
    await page.waitForFunction(
      () => {
        const t = document.querySelector("#door-account-session-state")?.textContent ?? "";
        return (
          t !== "" &&
          !/^signing in\.\.\.$/.test(t) &&
          !document.querySelector<HTMLButtonElement>("#door-account-sign-in")?.disabled
        );
      },
      null,
      { timeout: STEP_MS },
    );
    const text = await stateText().innerText();
    const colour = await page.locator("#door-account-session-dot").evaluate((el) => getComputedStyle(el).color);
    recordForLeakScan("account dialog session line", text);
    return { text, colour };
  }

  /** The text of the newest notification (RED.notify) that says `what`, as shown. */
  async function notification(what: RegExp): Promise<string> {
    const n = page.locator(".red-ui-notification", { hasText: what }).last();
    await n.waitFor({ state: "visible" });
    const text = await n.innerText();
    recordForLeakScan("notification", text);
    return text;
  }

  const GREEN = "rgb(85, 170, 136)"; // #5a8, the dialog's "ready" dot

  // ---- the steps --------------------------------------------------------------------------

  it("opens the editor with the demo's account deployed (its session running)", async () => {
    await page.goto(demo!.editorUrl, { waitUntil: "domcontentloaded", timeout: 60_000 });
    await page
      .locator(`.red-ui-palette-node[data-palette-type="door-unlock"]`)
      .waitFor({ state: "attached", timeout: 60_000 });
    await page.waitForFunction(
      () => !!(window as unknown as { RED: { nodes: { version(): unknown } } }).RED.nodes.version(),
      null,
      { timeout: 60_000 },
    ); // the flows are loaded after the palette
    await chart().waitFor({ state: "visible" });
  });

  // docs/session.md#signing-in-from-the-editor (a deployed account's changed password is checked
  // at deploy: docs/session.md#changed-credentials-are-checked)
  it("the same login with a wrong password while the deployed session runs: it cannot be checked without ending that session; no success is claimed, the dot is not green, nothing is sent", async () => {
    await newUnlockDialog(380, 160);
    await addAccount("Same login", DEMO_ACCOUNT.phoneNumber, "wrong-password");
    const before = logins();
    const shown = await signIn("wrong-password");
    assert.match(
      shown.text,
      /sign-in failed: door-account "Demo account \(simulator\)" runs a session of this login with another password: the password typed cannot be checked without ending that session/,
    );
    assert.doesNotMatch(shown.text, /^signed in|door pickers can list/);
    assert.notEqual(shown.colour, GREEN, "not shown as a success");
    assert.equal(logins(), before, "no login over the running session");
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, "sign-in-not-checked.png") });
  });

  it("the same login with the right password while that session runs: the running session is used, no login is sent", async () => {
    const before = logins();
    const shown = await signIn(DEMO_ACCOUNT.password);
    assert.doesNotMatch(shown.text, /sign-in failed/);
    assert.equal(logins(), before, "no login over the running session");
    await page.locator("#node-config-dialog-cancel").click();
    await page.locator("#node-config-input-baseUrl").waitFor({ state: "detached" });
    await page.locator("#node-dialog-cancel").click();
    await page.locator("#node-dialog-ok").waitFor({ state: "detached" });
  });

  it("another login on the same service: the dialog first warns that the deployed account's session would end if it is the same service account, and sends nothing; 'Sign in anyway' logs in once; then a wrong password is never 'signed in': no login over the session it started", async () => {
    await newUnlockDialog(380, 260);
    await addAccount("Other login", OTHER_ACCOUNT.phoneNumber, OTHER_ACCOUNT.password);
    const button = () => page.locator("#door-account-sign-in").innerText();
    const sent = logins();
    const warned = await signIn(OTHER_ACCOUNT.password);
    assert.match(
      warned.text,
      /^another door-account of this Node-RED holds a session on this service: door-account "Demo account \(simulator\)" \(phone number login\)\. Nothing was sent\./,
    );
    assert.doesNotMatch(warned.text, /^signed in|sign-in failed/);
    assert.notEqual(warned.colour, GREEN);
    assert.match(await notification(/holds a session on this service/), /signing in would end that session/);
    assert.equal((await button()).trim(), "Sign in anyway");
    assert.equal(logins(), sent, "nothing sent before the operator confirms");
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.locator("#door-account-sign-in").scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(ARTIFACTS, "sign-in-other-login-warning.png") });

    // Editing the login takes the confirmation back: the next press asks again.
    await page.locator("#node-config-input-phoneNumber").fill(OTHER_ACCOUNT.phoneNumber);
    assert.equal((await button()).trim(), "Sign in");
    assert.match(
      (await signIn(OTHER_ACCOUNT.password)).text,
      /^another door-account of this Node-RED holds a session on this service/,
    );
    assert.equal(logins(), sent, "still nothing sent");

    const before = logins(200);
    const ok = await signIn(OTHER_ACCOUNT.password);
    assert.match(ok.text, /^signed in/);
    assert.equal(ok.colour, GREEN);
    assert.equal(logins(200) - before, 1, "one login checked the right password");
    assert.equal((await button()).trim(), "Sign in", "the confirmation was for that one attempt");

    const all = logins();
    const wrong = await signIn("wrong-password");
    assert.doesNotMatch(wrong.text, /^signed in|door pickers can list/);
    assert.match(
      wrong.text,
      /an earlier sign-in from the editor runs a session of this login with another password: the password typed cannot be checked without ending that session/,
    );
    assert.notEqual(wrong.colour, GREEN);
    assert.match(
      await notification(/cannot be checked without ending that session/),
      /^sign-in failed: an earlier sign-in from the editor/,
    );
    assert.equal(logins(), all, "nothing sent");
    await page.screenshot({ path: path.join(ARTIFACTS, "sign-in-wrong-over-live.png") });
    const text = await page.locator("body").innerText();
    recordForLeakScan("editor page after the sign-ins", text);
    assert.ok(!text.includes(OTHER_ACCOUNT.password) && !text.includes("wrong-password"), "no password on the page");
    assert.deepEqual(pageErrors, [], "no page error");
  });
});
