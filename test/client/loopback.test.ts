/**
 * The loopback rule (src/util/loopback.ts): which hosts may use plain http://. Checked over one
 * table of hosts (test/helpers/loopback-hosts.ts), both as typed and as the WHATWG URL parser
 * gives them, since the parsed hostname is what the connection uses. docs/simulator.md#loopback-only
 */
import { strict as assert } from "node:assert";
import { readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { parseBaseUrl } from "../../src/client/base-url.js";
import { isLoopbackHost } from "../../src/util/loopback.js";
import { LOOPBACK_CASES } from "../helpers/loopback-hosts.js";
import { PACKAGE_ROOT, editorDefinition, editorScripts, nodeFile } from "../helpers/node-files.js";

function hostnameOf(input: string): string | null {
  try {
    return new URL(`http://${input}/`).hostname;
  } catch {
    return null;
  }
}

describe("loopback rule: 127.0.0.0/8 in dotted decimal, ::1 in any spelling, localhost; nothing else (docs/security.md#plain-http-only-to-this-machine)", () => {
  for (const c of LOOPBACK_CASES) {
    it(`${JSON.stringify(c.input)} as typed is ${c.raw ? "" : "not "}loopback (${c.why})`, () => {
      assert.equal(isLoopbackHost(c.input), c.raw);
    });
  }

  it("anything that is not a string is not loopback", () => {
    for (const v of [undefined, null, 127, ["127.0.0.1"], { toString: () => "127.0.0.1" }]) {
      assert.equal(isLoopbackHost(v as unknown as string), false);
    }
  });
});

describe('loopback rule on the parsed hostname: what new URL("http://<host>/").hostname gives is what the guard checks (docs/security.md#plain-http-only-to-this-machine)', () => {
  for (const c of LOOPBACK_CASES) {
    const outcome = c.hostname === null ? "does not parse" : `is ${c.hostname}, ${c.parsed ? "" : "not "}loopback`;
    it(`http://${c.input}/ ${outcome}`, () => {
      const hostname = hostnameOf(c.input);
      assert.equal(hostname, c.hostname);
      if (hostname !== null) assert.equal(isLoopbackHost(hostname), c.parsed);
    });
  }

  it("every hostname the URL parser gives is judged the same bracketed (as URL.hostname) and bare (as a listen address)", () => {
    for (const c of LOOPBACK_CASES) {
      if (c.hostname === null || !c.hostname.startsWith("[")) continue;
      assert.equal(isLoopbackHost(c.hostname.slice(1, -1)), c.parsed, c.hostname);
    }
  });
});

/** Whether a URL has what a base URL may not: a user name or password, a query, a fragment. */
function hasExtras(url: string): boolean {
  try {
    const u = new URL(url);
    return !!(u.username || u.password || u.search || u.hash);
  } catch {
    return false;
  }
}

describe("loopback rule in the editor: the account dialog checks a base URL with the runtime's rule, bundled from src/client/base-url.ts and src/util/loopback.ts (docs/security.md#plain-http-only-to-this-machine)", () => {
  let accepts: (url: string) => boolean;
  before(() => {
    const validate = editorDefinition("door-account").defaults.baseUrl.validate!;
    accepts = (url) => validate.call({}, url) === true;
  });

  it("the dialog accepts http://<host>/ exactly when the host is loopback, over the whole table", () => {
    for (const c of LOOPBACK_CASES) {
      const url = `http://${c.input}/`;
      if (hasExtras(url)) continue; // refused for what else it holds: the next test
      assert.equal(accepts(url), c.parsed === true, `${url} (${c.why})`);
    }
  });

  it("the dialog accepts a base URL exactly when the runtime does, over the whole table (http:// and https://)", () => {
    const runtimeAccepts = (url: string): boolean => {
      try {
        parseBaseUrl(url);
        return true;
      } catch {
        return false;
      }
    };
    for (const c of LOOPBACK_CASES)
      for (const url of [`http://${c.input}/`, `https://${c.input}/`, `http://${c.input}`, c.input])
        assert.equal(accepts(url), runtimeAccepts(url), JSON.stringify(url));
  });

  it("no editor file carries a loopback rule of its own: the built account dialog holds the runtime's one function", () => {
    const script = editorScripts(readFileSync(nodeFile("door-account", "editor"), "utf8")).join("\n");
    assert.equal(script.split("function isLoopbackHost(").length - 1, 1, "isLoopbackHost bundled once");
    assert.equal(script.split("// src/util/loopback.ts\n").length - 1, 1, "from src/util/loopback.ts");
    const editorSources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) return editorSources(p);
        return /\.(ts|html)$/.test(e.name) && /[/\\]editor[/\\]/.test(p) ? [p] : [];
      });
    const files = editorSources(path.join(PACKAGE_ROOT, "nodes"));
    assert.ok(files.length >= 10, `the editor's sources: ${files.length}`);
    for (const f of files) {
      assert.doesNotMatch(
        readFileSync(f, "utf8"),
        /function isLoopbackHost|127\\\.|\[::1\]/,
        `${path.relative(PACKAGE_ROOT, f)} decides loopback hosts by itself`,
      );
    }
  });
});
