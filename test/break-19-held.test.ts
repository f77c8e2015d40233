/**
 * Break review of cc2da17, 511ac43 and 81ac3b5: what was tried and held. Only the demo's part is
 * left here, for the move of the demo tests; the door-unlock status part is in
 * test/nodes/door-unlock-status.test.ts, the audit part in test/audit/chain.test.ts and
 * test/audit/torn-writes.test.ts.
 */
import { strict as assert } from "node:assert";
import * as net from "node:net";
import * as vm from "node:vm";
import { INSTANCE_HEADER, settingsFile } from "../scripts/demo.js";
import { RedisServer } from "./helpers/redis.js";

describe("break-19: what held", function () {
  this.timeout(60000);

  describe("511ac43: the demo's instance header, the test Redis server", function () {
    it("the generated settings file loads with the instance variable absent: the middleware sets the header to '' and calls next(); it carries nothing but that variable", () => {
      const src = settingsFile({ uiPort: 1880 });
      const mod: { exports: Record<string, unknown> } = { exports: {} };
      const env: Record<string, string | undefined> = {}; // no DOOR_ACCESS_DEMO_INSTANCE
      vm.runInNewContext(src, { module: mod, exports: mod.exports, require, process: { env }, __dirname: "/tmp" });
      const mw = mod.exports.httpAdminMiddleware as (req: unknown, res: unknown, next: () => void) => void;
      const set: [string, string][] = [];
      let nexted = 0;
      mw({}, { setHeader: (k: string, v: string) => set.push([k, v]) }, () => nexted++);
      assert.deepEqual(set, [[INSTANCE_HEADER, ""]]);
      assert.equal(nexted, 1);
      env.DOOR_ACCESS_DEMO_INSTANCE = "abc";
      set.length = 0;
      mw({}, { setHeader: (k: string, v: string) => set.push([k, v]) }, () => nexted++);
      assert.deepEqual(set, [[INSTANCE_HEADER, "abc"]]);
    });

    it("RedisServer with a password (including spaces, quotes, CR LF and a leading '--'): starts, stops, resumes on the same port", async () => {
      for (const password of ["s3cret", "with space \"q\" \\ x", "p\r\nINFO", "--x"]) {
        const s = await RedisServer.start({ password });
        try {
          await s.stop();
          await s.resume();
          assert.equal(s.running, true, JSON.stringify(password));
        } finally {
          await s.stop();
        }
      }
    });

    it("RedisServer.resume while another program holds the port: fails (redis-server exits), never takes the other program for it, leaves no process", async () => {
      const s = await RedisServer.start();
      const port = s.port;
      await s.stop();
      const other = net.createServer((c) => { c.resume(); c.end("-ERR not redis\r\n"); });
      await new Promise<void>((r) => other.listen(port, "127.0.0.1", () => r()));
      try {
        const err = await s.resume().then(() => null, (e: Error) => e.message);
        assert.match(err ?? "", /exited at start|did not start/);
        assert.equal(s.running, false);
      } finally {
        await s.stop();
        await new Promise<void>((r) => other.close(() => r()));
      }
    });
  });
});
