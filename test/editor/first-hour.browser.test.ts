/**
 * What a new user meets in the editor in their first hour, in a real browser (chromium) against
 * the demo: each rule here is one a new user tripped over (the docs section it follows is named in
 * each test). Screenshots: test-artifacts/first-hour-*.png.
 */
import { strict as assert } from "node:assert";
import { nodeRedVersion } from "../helpers/runtime.js";
import { STEP_MS, getFlows, useEditor } from "../helpers/browser.js";

const TAB = "f1f1f1f1f1f1f1f1";

/** A door node on door 101 (Front Door) of `account`, on the test's tab. */
function doorNode(
  id: string,
  type: string,
  account: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id,
    type,
    z: TAB,
    account,
    deviceId: "101",
    doorName: "Front Door",
    doorLocation: "",
    lockId: "",
    actor: "",
    rejectRetained: true,
    x: 300,
    y: 100,
    wires: type === "door-unlock" ? [[], []] : [[]],
    ...extra,
  };
}

describe(`the editor's first hour (chromium, Node-RED ${nodeRedVersion})`, function () {
  this.timeout(120_000);
  const ed = useEditor();

  /** The demo's account alone on one tab (and `more` nodes). */
  async function withAccount(more: Record<string, unknown>[] = []): Promise<Record<string, any>> {
    const { flows } = await getFlows(ed.demo.editorUrl);
    const account = flows.find((n) => n.type === "door-account")!;
    await ed.setFlows([{ id: TAB, type: "tab", label: "First hour" }, account, ...more]);
    return account;
  }

  /** Drops a node of `type` from the palette onto the workspace, as a person does; its id. */
  async function drop(type: string, x: number, y: number): Promise<string> {
    const page = ed.page;
    const before: string[] = await ed.red((RED, t) => RED.nodes.filterNodes({ type: t }).map((n: any) => n.id), type);
    const item = page.locator(`#red-ui-palette .red-ui-palette-node[data-palette-type="${type}"]`);
    await item.scrollIntoViewIfNeeded();
    const from = (await item.boundingBox())!;
    const chart = (await page.locator("#red-ui-workspace-chart").boundingBox())!;
    await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
    await page.mouse.down();
    await page.mouse.move(from.x + 40, from.y + 10, { steps: 5 });
    await page.mouse.move(chart.x + x, chart.y + y, { steps: 15 });
    await page.mouse.up();
    let id: string | null = null;
    const end = Date.now() + STEP_MS;
    while (id === null && Date.now() < end) {
      id = await ed.red(
        (RED, a) => RED.nodes.filterNodes({ type: a.type }).find((n: any) => !a.before.includes(n.id))?.id ?? null,
        { type, before },
      );
      if (id === null) await page.waitForTimeout(100);
    }
    assert.ok(id, `a ${type} was dropped`);
    return id;
  }

  // docs/doors.md#picking-a-door-in-the-editor
  it("a door renamed at the service: the dialog says 'renamed to Main Entrance' (not 'not in the current list') and takes the new name on request; the canvas label follows", async () => {
    const { flows } = await getFlows(ed.demo.editorUrl);
    const accountId = flows.find((n) => n.type === "door-account")!.id as string;
    await withAccount([doorNode("f1f1f1f1f1f1f1c1", "door-unlock", accountId, { doorLocation: "Main Street 1" })]);
    const res = await fetch(new URL("/_sim/devices/101", ed.demo.simUrl), {
      method: "PATCH",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Main Entrance" }),
    });
    assert.ok(res.ok, `rename at the simulator: ${res.status}`);
    try {
      await ed.editNode("f1f1f1f1f1f1f1c1");
      await ed.page.locator("#door-unlock-door-refresh").click();
      const detail = ed.page.locator("#door-unlock-door-detail");
      await ed.page.waitForFunction(
        () => /renamed to Main Entrance/.test(document.querySelector("#door-unlock-door-detail")?.textContent ?? ""),
        null,
        { timeout: STEP_MS },
      );
      assert.doesNotMatch(await detail.innerText(), /not in the current list/);
      assert.equal(await ed.page.locator("#door-unlock-door-kept").isVisible(), false);
      await ed.screenshot("first-hour-renamed-door");
      await ed.page.locator("#door-unlock-door-rename").click();
      assert.match(await ed.page.locator("#door-unlock-door option:checked").innerText(), /^Main Entrance\b/);
      await ed.page.locator("#node-dialog-ok").click();
      await ed.page.locator("#node-dialog-ok").waitFor({ state: "detached" });
      const saved = await ed.red((RED) => {
        const n = RED.nodes.node("f1f1f1f1f1f1f1c1");
        return { id: n.deviceId, name: n.doorName, label: n._def.label.call(n) };
      });
      assert.deepEqual(saved, { id: 101, name: "Main Entrance", label: "Main Entrance (Main Street 1)" });
    } finally {
      await fetch(new URL("/_sim/devices/101", ed.demo.simUrl), {
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: "Front Door" }),
      });
    }
  });

  // docs/nodes.md#door-account
  it("a door node dropped where exactly one door-account exists uses it: the dialog shows it, not 'none'", async () => {
    const account = await withAccount();
    for (const [type, y] of [
      ["door-unlock", 80],
      ["door-status", 160],
      ["door-devices", 240],
    ] as const) {
      const id = await drop(type, 200, y);
      assert.equal(
        await ed.red((RED, i) => RED.nodes.node(i).account, id),
        account.id,
        `${type} took the only account`,
      );
    }
    // A node made before the account existed (its account empty) gets it when its dialog opens.
    const statusId = await ed.red((RED) => {
      const n = RED.nodes.filterNodes({ type: "door-status" })[0];
      n.account = "";
      return n.id as string;
    });
    await ed.editNode(statusId);
    await ed.page.waitForFunction(
      (id) => document.querySelector<HTMLSelectElement>("#node-input-account")?.value === id,
      account.id,
      { timeout: STEP_MS },
    );
    await ed.screenshot("first-hour-only-account");
    await ed.page.locator("#node-dialog-cancel").click();
  });
});

describe(`the editor's first hour: what the runtime says (chromium, Node-RED ${nodeRedVersion})`, function () {
  this.timeout(120_000);
  const ed = useEditor();

  // docs/session.md#halts-and-reconnect
  it("a halted account puts one line per node in the debug sidebar: the reason, never a stack trace or a file path", async () => {
    const { flows } = await getFlows(ed.demo.editorUrl);
    const account = flows.find((n) => n.type === "door-account")!;
    await ed.setFlows([
      { id: TAB, type: "tab", label: "First hour" },
      { ...account, credentials: { phoneNumber: "+15550000001", password: "not-the-password" } },
      doorNode("f1f1f1f1f1f1f1a1", "door-unlock", account.id as string),
    ]);
    await ed.red((RED) => RED.sidebar.show("debug"));
    // Reconnect (as the sidebar's button does): one more login, refused, the halt said again.
    const res = await fetch(new URL(`door-access/accounts/${account.id}/reconnect`, ed.demo.editorUrl), {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Requested-With": "XMLHttpRequest" },
      body: "{}",
    });
    assert.equal(res.status, 202);
    // The account's line and the door node's line.
    const lines = ed.page.locator(".red-ui-debug-msg", { hasText: "f1f1f1f1f1f1f1a1" });
    await lines.first().waitFor({ state: "attached", timeout: 30_000 });
    // The editor may have switched the sidebar while it loaded: the debug tab again.
    await ed.red((RED) => RED.sidebar.show("debug"));
    await lines.first().waitFor({ state: "visible" });
    // Opened, as a person does to read the whole of it.
    await lines.first().locator(".red-ui-debug-msg-object-handle, .red-ui-debug-msg-element").first().click();
    // Every debug message's text (Node-RED 4 and 5 lay the sidebar out differently).
    const text = await ed.page.evaluate(() =>
      [...document.querySelectorAll(".red-ui-debug-msg")].map((e) => (e as HTMLElement).innerText).join("\n"),
    );
    assert.match(text, /refused the login/);
    assert.doesNotMatch(text, /SessionHaltedError|\bat \S+ \(|\/dist\/|node_modules|\.js:\d+/, text);
    await ed.screenshot("first-hour-halt-debug");
  });
});

describe(`the editor's first hour: an account without a name (chromium, Node-RED ${nodeRedVersion})`, function () {
  this.timeout(120_000);
  const ed = useEditor();

  // docs/nodes.md#door-account
  it("an unnamed account has one label everywhere, 'door account <host>': in the config list, the door node's Account field, the Door access tab and the debug sidebar; never its id", async () => {
    const { flows } = await getFlows(ed.demo.editorUrl);
    const account = flows.find((n) => n.type === "door-account")!;
    const host = new URL(account.baseUrl as string).host;
    const label = `door account ${host}`;
    await ed.setFlows([
      { id: TAB, type: "tab", label: "First hour" },
      { ...account, name: "", credentials: { phoneNumber: "+15550000001", password: "not-the-password" } },
      doorNode("f1f1f1f1f1f1f1d1", "door-unlock", account.id as string),
    ]);
    // The editor's own label of the config node.
    assert.equal(await ed.red((RED, id) => RED.utils.getNodeLabel(RED.nodes.node(id)), account.id), label);
    // The Door access tab.
    await ed.red((RED) => RED.sidebar.show("door-access"));
    await ed.page.waitForFunction(
      (id) => !!document.querySelector(`#door-access-account option[value="${id}"]`),
      account.id,
      { timeout: STEP_MS },
    );
    assert.equal(await ed.page.locator(`#door-access-account option[value="${account.id}"]`).innerText(), label);
    // The debug sidebar: the halt said by the account after a Reconnect.
    await ed.red((RED) => RED.sidebar.show("debug"));
    const res = await fetch(new URL(`door-access/accounts/${account.id}/reconnect`, ed.demo.editorUrl), {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Requested-With": "XMLHttpRequest" },
      body: "{}",
    });
    assert.equal(res.status, 202);
    const fromAccount = ed.page.locator(".red-ui-debug-msg", { hasText: "session halted" }).first();
    await fromAccount.waitFor({ state: "attached", timeout: 30_000 });
    await ed.red((RED) => RED.sidebar.show("debug"));
    await fromAccount.waitFor({ state: "visible" });
    const text = await fromAccount.innerText();
    assert.match(text, new RegExp(`node: ${label.replace(/[.]/g, "\\.")}`), text);
    assert.ok(!text.includes(account.id as string), "not the account's id");
    // The door node's dialog: its Account field.
    await ed.editNode("f1f1f1f1f1f1f1d1");
    assert.equal(await ed.page.locator("#node-input-account option:checked").innerText(), label);
    await ed.screenshot("first-hour-unnamed-account");
    await ed.page.locator("#node-dialog-cancel").click();
  });
});

describe(`the editor's first hour: statuses fit (chromium, Node-RED ${nodeRedVersion})`, function () {
  this.timeout(120_000);
  const ed = useEditor();

  // docs/nodes.md#node-status
  it("an account that cannot be used: every status on the canvas fits in 64 characters, and the sidebar says the whole reason once, beside its records", async () => {
    const { flows } = await getFlows(ed.demo.editorUrl);
    const account = flows.find((n) => n.type === "door-account")!;
    await ed.setFlows([
      { id: TAB, type: "tab", label: "First hour" },
      // Plain http to a host that is not this machine: refused before anything is sent.
      { ...account, baseUrl: "http://doors.example.com/api/v1/some/long/path/of/the/installation" },
      doorNode("f1f1f1f1f1f1f1b1", "door-unlock", account.id as string, { y: 80 }),
      doorNode("f1f1f1f1f1f1f1b2", "door-status", account.id as string, { y: 160 }),
    ]);
    await ed.page.waitForFunction(
      () => document.querySelectorAll("#red-ui-workspace-chart .red-ui-flow-node-status-label").length >= 2,
      null,
      {
        timeout: STEP_MS,
      },
    );
    const texts = await ed.page.evaluate(() =>
      [...document.querySelectorAll("#red-ui-workspace-chart .red-ui-flow-node-status-label")].map(
        (e) => e.textContent ?? "",
      ),
    );
    for (const t of texts) assert.ok(t.length <= 64, `"${t}" (${t.length} characters) fits on the canvas`);
    await ed.red((RED) => RED.sidebar.show("door-access"));
    const sidebar = ed.page.locator("#door-access-sidebar");
    await sidebar.waitFor({ state: "visible" });
    await ed.page.waitForFunction(
      () => /must use https/i.test(document.querySelector("#door-access-sidebar")?.textContent ?? ""),
      null,
      {
        timeout: STEP_MS,
      },
    );
    const whole = await sidebar.innerText();
    const said = whole.match(/must use https/gi) ?? [];
    assert.equal(said.length, 1, `the reason once: ${whole}`);
    await ed.screenshot("first-hour-statuses");
  });
});
