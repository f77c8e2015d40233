/**
 * A page on another site, open in the same browser as the editor (Debian's chromium driven by
 * playwright-core), against the demo's Node-RED without adminAuth (docs/security.md#cross-site-requests).
 *
 * The page is served from another loopback port (another origin, the same site) and tries what a
 * page can: form posts (urlencoded, multipart, text/plain), sendBeacon, fetch with text/plain
 * and no-cors, and fetch with JSON and X-Requested-With, which needs a CORS preflight that
 * Node-RED 4 grants to any origin. Counted at the simulator: no login, no request; and the page
 * reads nothing of the accounts or their audit log.
 */
import { strict as assert } from "node:assert";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { waitForAccountState } from "../../scripts/node-red-process.js";
import type { RunningDemo } from "../../scripts/start-demo.js";
import { useEditor } from "../helpers/browser.js";
import { nodeRedVersion } from "../helpers/runtime.js";
import { recordForLeakScan } from "../hooks/leak-scan.js";

/** The hostile page: every request it can make to the editor's routes, and what it could read. */
function hostilePage(editorUrl: string, accountId: string, simUrl: string): string {
  const acc = `${editorUrl}door-access/accounts/${accountId}`;
  const sidebar = `${editorUrl}door-access/sidebar/accounts`;
  const body = JSON.stringify({
    baseUrl: simUrl,
    loginMethod: "phone",
    phoneNumber: "__PWRD__",
    password: "__PWRD__",
    sessionStore: "file",
  });
  return `<!doctype html><html><body>
<form id="f1" method="POST" action="${acc}/reconnect" target="t1"><input name="a" value="1"></form><iframe name="t1"></iframe>
<form id="f2" method="POST" action="${acc}/devices/refresh" target="t2" enctype="multipart/form-data"><input name="baseUrl" value="${simUrl}"></form><iframe name="t2"></iframe>
<form id="f3" method="POST" action="${acc}/sign-in" target="t3" enctype="text/plain"><input name='{"a":"' value='"}'></form><iframe name="t3"></iframe>
<script>
window.done = (async () => {
  const out = {};
  const tryFetch = async (name, url, init) => {
    try {
      const r = await fetch(url, init);
      out[name] = r.type === "opaque" ? "opaque" : r.status + " " + (await r.text());
    } catch (e) {
      out[name] = "failed: " + e.message;
    }
  };
  f1.submit(); f2.submit(); f3.submit();
  navigator.sendBeacon(${JSON.stringify(`${acc}/reconnect`)}, new Blob(["{}"], { type: "text/plain" }));
  const json = { "Content-Type": "application/json", "X-Requested-With": "XMLHttpRequest" };
  await tryFetch("reconnect text/plain", ${JSON.stringify(`${acc}/reconnect`)}, { method: "POST", headers: { "Content-Type": "text/plain" }, body: "{}" });
  await tryFetch("reconnect no-cors", ${JSON.stringify(`${acc}/reconnect`)}, { method: "POST", mode: "no-cors", headers: json, body: "{}" });
  await tryFetch("reconnect", ${JSON.stringify(`${acc}/reconnect`)}, { method: "POST", headers: json, body: "{}" });
  await tryFetch("refresh", ${JSON.stringify(`${acc}/devices/refresh`)}, { method: "POST", headers: json, body: ${JSON.stringify(body)} });
  await tryFetch("sign-in", ${JSON.stringify(`${acc}/sign-in`)}, { method: "POST", headers: json, body: ${JSON.stringify(body)} });
  await tryFetch("accounts", ${JSON.stringify(sidebar)}, {});
  await tryFetch("records", ${JSON.stringify(`${sidebar}/${accountId}/records`)}, {});
  await tryFetch("export", ${JSON.stringify(`${sidebar}/${accountId}/export.csv`)}, {});
  await tryFetch("state", ${JSON.stringify(`${acc}/state`)}, {});
  await tryFetch("devices", ${JSON.stringify(`${acc}/devices`)}, {});
  return out;
})();
</script></body></html>`;
}

describe(`a page on another site in a real browser (chromium, Node-RED ${nodeRedVersion}, no adminAuth): it makes no login and reads no account (docs/security.md#cross-site-requests)`, function () {
  this.timeout(120_000);
  const ed = useEditor({ viewport: { width: 1280, height: 720 }, stepMs: 20_000 });
  let demo: RunningDemo;
  let page: Page;
  let hostile: Server | null = null;

  before(async function () {
    this.timeout(60_000);
    ({ demo, page } = ed);
    // The account's own service description check follows its start-up by a second
    // (docs/service-description.md#when): let it come before the page's window, or the test
    // would count it as the page's.
    const deadline = Date.now() + 15_000;
    while (demo.sim.control.requests({ operation: "docs" }).length === 0) {
      if (Date.now() > deadline) throw new Error("no service description check after the start-up");
      await new Promise((r) => setTimeout(r, 20));
    }
    const html = hostilePage(demo.editorUrl, demo.accountId, demo.simUrl);
    hostile = createServer((_req, res) => res.writeHead(200, { "Content-Type": "text/html" }).end(html));
    await new Promise<void>((resolve) => hostile!.listen(0, "127.0.0.1", resolve));
  });

  after(async function () {
    if (hostile) await new Promise((resolve) => hostile!.close(resolve));
  });

  it("every request the page can make is refused: no login, nothing sent to the service, no account, door or record read", async () => {
    demo!.sim.control.resetRequests();
    const answers = new Map<string, number>();
    page.on("response", (r) => {
      if (r.url().includes("/door-access/"))
        answers.set(`${r.request().method()} ${new URL(r.url()).pathname}`, r.status());
    });
    await page.goto(`http://127.0.0.1:${(hostile!.address() as AddressInfo).port}/`, { waitUntil: "load" });
    const read = await page.evaluate<Record<string, string>>("window.done");
    recordForLeakScan("what a page on another site read", read);
    // The form posts and the beacon are not awaited by the page: wait for their answers.
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll("iframe")).every(
        (f) => f.contentDocument === null || f.contentDocument.readyState === "complete",
      ),
    );
    await page.waitForTimeout(500); // a beacon has no event of its own
    const ops = demo!.sim.control.requests().map((r) => `${r.operation} ${r.status}`);
    assert.deepEqual(ops, [], `requests at the service caused by the page (what it read: ${JSON.stringify(read)})`);
    for (const [name, text] of Object.entries(read)) {
      assert.ok(
        !/Front Door|"accounts"|"devices"|"records"|"state"|seq,ts/.test(text),
        `the page read ${name}: ${text.slice(0, 200)}`,
      );
    }
    for (const [request, status] of answers) assert.ok(status >= 400, `${request} answered ${status}`);
    assert.equal(
      (await waitForAccountState(demo!.editorUrl, demo!.accountId, "ready", 5_000)).state,
      "ready",
      "the session is the one it was",
    );
  });
});
