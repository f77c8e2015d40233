/**
 * A loopback port that refuses connections for the whole run, for the tests of a base URL with
 * a wrong port (docs/session.md#connection-errors).
 *
 * A port that a test listened on and closed is back in the kernel's ephemeral range, where every
 * other test file running beside it (docs/testing.md#writing-a-test-that-runs-beside-others) gets
 * its ports from: another worker may listen on it before the login tries it, and the test then
 * meets a server instead of a refusal. This port is below that range, where nothing of the suite
 * listens (the fixed ports of the demo are far lower), and is checked to refuse before use.
 */
import { readFileSync } from "node:fs";
import { connect } from "node:net";

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 2048 ? low : 32768;
  } catch {
    return 32768; // not Linux: the usual start of the range
  }
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code === "ECONNREFUSED"));
  });
}

let found: number | null = null;

/** The port (the same one for every call in a process); throws if none of 100 candidates refuses. */
export async function refusedPort(): Promise<number> {
  if (found !== null && (await refuses(found))) return found;
  const top = ephemeralLow() - 1000;
  for (let port = top; port > top - 100; port--) {
    if (await refuses(port)) return (found = port);
  }
  throw new Error(`no refusing loopback port in ${top - 99}..${top}`);
}
