/** The in-process MQTT broker of the demo and the MQTT tests. */
import * as net from "node:net";

export interface Broker {
  port: number;
  close(): Promise<void>;
}

/** An in-process MQTT broker (aedes) on 127.0.0.1: `preferred`, or an ephemeral port when busy. */
export async function startBroker(preferred: number): Promise<Broker> {
  // aedes 1.x is ESM only, with no default export.
  const { Aedes } = (await import("aedes")) as unknown as {
    Aedes: { createBroker(): Promise<{ handle: (s: net.Socket) => void; close(cb?: () => void): void }> };
  };
  const broker = await Aedes.createBroker();
  const server = net.createServer((socket) => broker.handle(socket));
  const sockets = new Set<net.Socket>();
  server.on("connection", (s) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  let port: number;
  try {
    port = await listen(preferred);
  } catch (e) {
    if (preferred === 0 || (e as NodeJS.ErrnoException).code !== "EADDRINUSE") throw e;
    port = await listen(0);
  }
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => broker.close(() => resolve()));
      }),
  };
}
