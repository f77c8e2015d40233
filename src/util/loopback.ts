/**
 * The loopback rule: which hosts may be spoken to over plain http:// (the account's base URL)
 * and which the simulator may listen on without --allow-remote-control. One rule, used by the
 * client, the simulator and the editor.
 *
 * Loopback is, and nothing else:
 * - an IPv4 address in 127.0.0.0/8 written as four dotted-decimal numbers 0..255 without
 *   leading zeros (`127.0.0.1`, `127.3.2.1`);
 * - the IPv6 address ::1 in any valid spelling, with or without brackets (`::1`, `[::1]`,
 *   `[0:0:0:0:0:0:0:1]`, `[::0.0.0.1]`);
 * - `localhost`, in any case.
 *
 * Refused on purpose:
 * - IPv4-mapped IPv6 (`[::ffff:127.0.0.1]`): on an IPv6-only socket or a system that does not map
 *   it, it does not mean 127.0.0.1, and nobody needs it to reach a local service;
 * - `localhost.` (the fully qualified spelling): resolvers do not take it from /etc/hosts but ask
 *   DNS, which may answer with any address (Node 20 on Linux here: ENOTFOUND, not 127.0.0.1);
 *   `*.localhost` likewise;
 * - other spellings of an IPv4 address (`127.1`, `0x7f.1`, `0177.0.0.1`, `2130706433`,
 *   `127.0.0.01`), which resolvers read differently; `127.0.0.256`; `127.0.0.1.evil.com`.
 *
 * For a URL, check the host the connection will use: `new URL(text).hostname`, never the text
 * the user typed. The URL parser takes user information off (`http://127.0.0.1@evil.com/` is
 * evil.com) and writes every IPv4 spelling as dotted decimal (`http://127.1/` and
 * `http://0x7f.1/` are 127.0.0.1, which is loopback, and is where the connection goes).
 *
 * The editor's account dialog bundles this module (through src/client/base-url.ts) and checks a
 * base URL with it, so the dialog and the runtime apply the same rule: it runs in the browser too.
 *
 * docs/simulator.md#loopback-only; the base URL rule: docs/nodes.md#door-account
 */
export function isLoopbackHost(host: string): boolean {
  if (typeof host !== "string") return false;
  const h = host.toLowerCase();
  if (h === "localhost") return true;
  const octet = "(0|[1-9][0-9]{0,2})";
  const ipv4 = new RegExp(`^${octet}\\.${octet}\\.${octet}\\.${octet}$`);
  const v4 = ipv4.exec(h);
  if (v4) return v4[1] === "127" && v4.slice(2, 5).every((p) => Number(p) <= 255);
  // IPv6, bracketed as in a URL or bare as a listen address.
  let v6 = /^\[(.*)\]$/.exec(h)?.[1] ?? h;
  if (!v6.includes(":")) return false;
  // A dotted quad in the last 32 bits (`::0.0.0.1`) becomes two hex groups.
  const quad = new RegExp(`^(.*:)${octet}\\.${octet}\\.${octet}\\.${octet}$`).exec(v6);
  if (quad) {
    const [a, b, c, d] = quad.slice(2, 6).map(Number) as [number, number, number, number];
    if (![a, b, c, d].every((n) => n <= 255)) return false;
    v6 = `${quad[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = v6.split("::");
  if (halves.length > 2) return false;
  const groups = (s: string): string[] => (s === "" ? [] : s.split(":"));
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (![...head, ...tail].every((g) => /^[0-9a-f]{1,4}$/.test(g))) return false;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return false;
  const all = [...head, ...Array<string>(missing).fill("0"), ...tail].map((g) => parseInt(g, 16));
  return all.slice(0, 7).every((n) => n === 0) && all[7] === 1;
}
