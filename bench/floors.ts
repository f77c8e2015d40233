/**
 * What a node's unlock is measured against, done by hand with raw undici on a keep-alive pool
 * like the client's:
 *
 * - put():          the PUT alone (no audit);
 * - auditedPut():   the floor: one audit line appended and fsynced, then the same PUT (with
 *                   `result`, also the closing line and its fsync: the same durable work);
 * - sameBytesPut(): a yardstick: the bytes the node writes per unlock, in one write+fsync, then the PUT;
 * - get():          the status read (GET + JSON parse), door-status's floor.
 */
import { promises as fsp } from "node:fs";
import { Pool } from "undici";
import { DOOR } from "./flows.js";

/** A prev as long as the chain's (64 hex digits); the yardstick writes bytes, it does not hash. */
const SAME_PREV = "0".repeat(64);

export class Raw {
  /** Same options as the client's Pool (src/client/client.ts): 32 keep-alive sockets. */
  readonly pool: Pool;
  private fh: fsp.FileHandle | null = null;
  private seq = 0;
  /** Characters written by auditedPut (attempt lines only) and by sameBytesPut. */
  bytes = 0;
  floorCount = 0;
  sameBytes = 0;
  sameCount = 0;
  constructor(
    url: string,
    private readonly auditPath: string,
    private readonly token: () => string,
  ) {
    this.pool = new Pool(url, {
      connections: 32,
      connect: { timeout: 10_000 },
      headersTimeout: 20_000,
      bodyTimeout: 20_000,
      keepAliveTimeout: 10_000,
    });
  }
  async open(): Promise<void> {
    this.fh = await fsp.open(this.auditPath, "a", 0o600);
  }
  async put(): Promise<boolean> {
    const res = await this.pool.request({
      path: `/api/device/${DOOR}/unlock`,
      method: "PUT",
      headers: { accept: "application/json", authorization: `Bearer ${this.token()}` },
    });
    await res.body.dump();
    return res.statusCode === 200;
  }
  /**
   * The floor: append one audit line, fsync it, then the same PUT. With `result`, also the
   * second line our node writes (and waits for) after the answer: the same durable work.
   */
  async auditedPut(result = false): Promise<boolean> {
    const msgid = `raw-${++this.seq}`;
    const line =
      JSON.stringify({
        type: "unlock-attempt",
        ts: new Date().toISOString(),
        actor: "bench",
        deviceId: DOOR,
        lockId: null,
        door: "Front Door",
        msgid,
      }) + "\n";
    this.bytes += line.length;
    this.floorCount++;
    await this.fh!.write(line);
    await this.fh!.sync();
    const ok = await this.put();
    if (result) {
      await this.fh!.write(
        JSON.stringify({
          type: "unlock-result",
          ts: new Date().toISOString(),
          actor: "bench",
          deviceId: DOOR,
          lockId: null,
          door: "Front Door",
          msgid,
          outcome: "accepted",
          status: 200,
        }) + "\n",
      );
      await this.fh!.sync();
    }
    return ok;
  }
  /**
   * Not a floor, a yardstick: the bytes the node writes per unlock in a stream (the previous
   * unlock's result line and this attempt's line, each with seq and prev) in one write+fsync,
   * then the PUT. No hash is computed and no name is checked: what separates the node from this
   * is its own work, not the size of what the contract has it write.
   */
  async sameBytesPut(): Promise<boolean> {
    const msgid = `same-${++this.seq}`;
    const chain = () => `,"seq":${this.seq * 2},"prev":"${SAME_PREV}"}`;
    const ts = new Date().toISOString();
    const fields = { actor: "node-red:u1", deviceId: DOOR, lockId: null, door: "Front Door" };
    const result =
      JSON.stringify({
        type: "unlock-result",
        ts,
        ...fields,
        msgid: `same-${this.seq - 1}`,
        outcome: "accepted",
        status: 200,
      }).slice(0, -1) + chain();
    const attempt = JSON.stringify({ type: "unlock-attempt", ts, ...fields, msgid }).slice(0, -1) + chain();
    const text = `${result}\n${attempt}\n`;
    this.sameBytes += text.length;
    this.sameCount++;
    await this.fh!.write(text);
    await this.fh!.sync();
    return this.put();
  }
  async get(): Promise<boolean> {
    const res = await this.pool.request({
      path: `/api/device/${DOOR}`,
      method: "GET",
      headers: { accept: "application/json", authorization: `Bearer ${this.token()}` },
    });
    const body = (await res.body.json()) as { id?: number };
    return res.statusCode === 200 && body.id === DOOR;
  }
  async close(): Promise<void> {
    await this.fh?.close();
    await this.pool.close();
  }
}
