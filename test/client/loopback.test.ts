/**
 * The loopback rule (src/util/loopback.ts): which hosts may use plain http://. Checked over one
 * table of hosts (test/helpers/loopback-hosts.ts), both as typed and as the WHATWG URL parser
 * gives them, since the parsed hostname is what the connection uses. docs/simulator.md#loopback-only
 */
import { strict as assert } from "node:assert";
import { readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { loopbackScript } from "../../scripts/editor-assets.js";
import { isLoopbackHost } from "../../src/util/loopback.js";
import { LOOPBACK_CASES } from "../helpers/loopback-hosts.js";

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

describe("loopback rule: one self-contained function, so the editor can carry the same source (docs/security.md#plain-http-only-to-this-machine)", () => {
  it("its source, evaluated on its own, gives the same answers over the whole table", () => {
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- what is tested: the function's source text, run on its own
    const copy = new Function(`return ${isLoopbackHost.toString()}`)() as (host: unknown) => boolean;
    for (const c of LOOPBACK_CASES) {
      assert.equal(copy(c.input), c.raw, c.input);
      if (c.hostname !== null) assert.equal(copy(c.hostname), c.parsed, c.hostname);
    }
  });

  it("anything that is not a string is not loopback", () => {
    for (const v of [undefined, null, 127, ["127.0.0.1"], { toString: () => "127.0.0.1" }]) {
      assert.equal(isLoopbackHost(v as unknown as string), false);
    }
  });
});

describe("loopback rule: the editor uses the same function, generated from src/util/loopback.ts at build (docs/security.md#plain-http-only-to-this-machine)", () => {
  const root = path.resolve(__dirname, "..", "..", "..");

  it("resources/loopback.js is the compiled rule, and gives the same answers over the whole table", () => {
    const script = readFileSync(path.join(root, "resources", "loopback.js"), "utf8");
    assert.equal(script, loopbackScript(), "resources/loopback.js is stale: run npm run build");
    const window: { DoorAccessLoopback?: { isLoopbackHost: (h: unknown) => boolean } } = {};
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- what is tested: the generated script, run as the editor runs it
    new Function("window", script)(window);
    const editor = window.DoorAccessLoopback!.isLoopbackHost;
    for (const c of LOOPBACK_CASES) {
      assert.equal(editor(c.input), c.raw, c.input);
      if (c.hostname !== null) assert.equal(editor(c.hostname), c.parsed, c.hostname);
    }
  });

  it("no editor file carries a loopback rule of its own: the account dialog loads the generated one", () => {
    const html = readFileSync(path.join(root, "nodes", "door-account.html"), "utf8");
    assert.match(
      html,
      /<script type="text\/javascript" src="resources\/@door-access\/node-red\/loopback\.js"><\/script>/,
    );
    assert.match(html, /window\.DoorAccessLoopback\.isLoopbackHost\(u\.hostname\)/);
    for (const dir of ["nodes", "nodes/plugins", "resources"]) {
      for (const f of readdirSync(path.join(root, dir)).filter((n) => /\.(html|js)$/.test(n) && n !== "loopback.js")) {
        const text = readFileSync(path.join(root, dir, f), "utf8");
        assert.doesNotMatch(
          text,
          /function isLoopbackHost|127\\\.|\[::1\]/,
          `${dir}/${f} decides loopback hosts by itself`,
        );
      }
    }
  });
});
