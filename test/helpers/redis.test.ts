/**
 * The suite's Redis server (test/helpers/redis.ts): a password with spaces, quotes, CR LF or a
 * leading "--" reaches redis-server intact, and a server resumed on its port while another
 * program holds that port fails instead of taking the other program for itself (the rule the
 * demo's Node-RED start-up check follows too: a program holding the picked port is never taken
 * for the server started).
 */
import { strict as assert } from "node:assert";
import * as net from "node:net";
import { needProgram } from "./programs.js";
import { RedisServer } from "./redis.js";

describe("the suite's Redis server: any password reaches it intact, and a port another program holds is never taken for it", function () {
  this.timeout(60000);
  before(function () {
    needProgram(this, "redis-server");
  });

  it("RedisServer with a password (including spaces, quotes, CR LF and a leading '--'): starts, stops, resumes on the same port", async () => {
    for (const password of ["s3cret", 'with space "q" \\ x', "p\r\nINFO", "--x"]) {
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
    const other = net.createServer((c) => {
      c.resume();
      c.end("-ERR not redis\r\n");
    });
    await new Promise<void>((r) => other.listen(port, "127.0.0.1", () => r()));
    try {
      const err = await s.resume().then(
        () => null,
        (e: Error) => e.message,
      );
      assert.match(err ?? "", /exited at start|did not start/);
      assert.equal(s.running, false);
    } finally {
      await s.stop();
      await new Promise<void>((r) => other.close(() => r()));
    }
  });
});
