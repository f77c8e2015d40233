/**
 * A real redis-server on loopback for the Redis store tests: a free port (found by binding
 * 127.0.0.1:0), no persistence, no daemon; stopped (and restartable on the same port) by
 * the tests. A describe that uses it calls `needProgram(this, "redis-server")` in its `before`
 * hook: without redis-server on PATH its tests are pending, or fail under CI=true
 * (docs/testing.md#programs-the-suite-needs; .ci/run installs Debian's package).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, connect } from "node:net";
import { missingLine, programPath } from "./programs.js";

export function redisServerPath(): string {
  const bin = programPath("redis-server");
  if (bin === null) throw new Error(missingLine("redis-server"));
  return bin;
}

function probe(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(null));
    srv.listen(port, "127.0.0.1", () => {
      const got = (srv.address() as { port: number }).port;
      srv.close(() => resolve(got));
    });
  });
}

/**
 * A free port below Linux's ephemeral range (32768-60999): a Redis server the tests stop and
 * start again on the same port must find it free, and an ephemeral port can be taken meanwhile
 * by any outgoing connection. Falls back to an ephemeral port.
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const got = await probe(20_000 + Math.floor(Math.random() * 12_000));
    if (got !== null) return got;
  }
  const got = await probe(0);
  if (got === null) throw new Error("no free TCP port on 127.0.0.1");
  return got;
}

/** A RESP command (arrays of bulk strings). */
function resp(...args: string[]): string {
  return `*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("");
}

/**
 * Whether the Redis server on `port` is the process `pid`: AUTH if needed, then INFO server,
 * whose `process_id` names it. false when nothing listens, or another program answers (within 1 s).
 */
function servedBy(port: number, pid: number, password: string | null): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host: "127.0.0.1" });
    let got = "";
    const done = (v: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => done(false), 1000);
    s.once("connect", () => s.write((password ? resp("AUTH", password) : "") + resp("INFO", "server")));
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      const m = /process_id:(\d+)/.exec(got);
      if (m) done(Number(m[1]) === pid);
    });
    s.once("error", () => done(false));
    s.once("close", () => done(false));
  });
}

export class RedisServer {
  private proc: ChildProcess | null = null;
  private constructor(
    readonly port: number,
    private readonly bin: string,
    private readonly password: string | null,
  ) {}

  static async start(opts: { password?: string } = {}): Promise<RedisServer> {
    const bin = redisServerPath();
    const server = new RedisServer(await freePort(), bin, opts.password ?? null);
    await server.resume();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.proc !== null;
  }

  /** Starts (again) on the same port; resolves when it accepts connections. */
  async resume(): Promise<void> {
    if (this.proc) return;
    const args = [
      "--port",
      String(this.port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--daemonize",
      "no",
      "--loglevel",
      "warning",
    ];
    if (this.password) args.push("--requirepass", this.password);
    // redis-server writes its title over its environment: the test run's mark goes into the title
    // (test/hooks/children.ts), so that the run's watcher finds it.
    const mark = process.env.DOOR_TEST_RUN;
    if (mark) args.push("--proc-title-template", `{title} {listen-addr} {server-mode} DOOR_TEST_RUN=${mark}`);
    let out = "";
    const proc = spawn(this.bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    this.proc = proc;
    proc.once("exit", () => {
      if (this.proc === proc) this.proc = null;
    });
    const end = Date.now() + 10_000;
    for (;;) {
      if (this.proc !== proc) throw new Error(`redis-server exited at start: ${out}`);
      // The server answering is this process (INFO's process_id), not another program that took
      // the port while the server was stopped: that one is never taken for it.
      if (proc.pid !== undefined && (await servedBy(this.port, proc.pid, this.password))) return;
      if (Date.now() > end) throw new Error(`redis-server did not start on port ${this.port}: ${out}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Kills the server (its data is lost: no persistence). */
  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    await new Promise<void>((resolve) => {
      proc.once("exit", () => resolve());
      proc.kill("SIGKILL");
    });
    this.proc = null;
  }
}
