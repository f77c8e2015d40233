/**
 * The table of hosts the loopback rule is tested over (docs/simulator.md#loopback-only states the
 * rule for the simulator; src/util/loopback.ts explains each choice). Shared so that every user
 * of the one rule (the client, the simulator, the account dialog's bundle) is held to the same rows.
 *
 * Each row: what a user might type as the host of `http://<input>/` (or pass as --host), what the
 * rule says of that text as it is (`raw`), what the WHATWG URL parser makes of it (`hostname`,
 * null when the URL does not parse), and what the rule says of that hostname (`parsed`), which is
 * the host the connection uses and so what a base URL is held to.
 */
export interface LoopbackCase {
  input: string;
  raw: boolean;
  hostname: string | null;
  parsed: boolean | null;
  why: string;
}

export const LOOPBACK_CASES: readonly LoopbackCase[] = [
  // IPv4 127.0.0.0/8, dotted decimal
  { input: "127.0.0.1", raw: true, hostname: "127.0.0.1", parsed: true, why: "the loopback address" },
  { input: "127.3.2.1", raw: true, hostname: "127.3.2.1", parsed: true, why: "all of 127.0.0.0/8" },
  { input: "127.255.255.255", raw: true, hostname: "127.255.255.255", parsed: true, why: "octets up to 255" },
  { input: "127.0.0.256", raw: false, hostname: null, parsed: null, why: "an octet over 255 is no address" },
  {
    input: "127.0.0.1.evil.com",
    raw: false,
    hostname: "127.0.0.1.evil.com",
    parsed: false,
    why: "a DNS name that starts like an address",
  },
  // other IPv4 spellings: refused as text, normalised by the URL parser
  {
    input: "127.1",
    raw: false,
    hostname: "127.0.0.1",
    parsed: true,
    why: "short form; the URL parser writes 127.0.0.1",
  },
  { input: "0x7f.1", raw: false, hostname: "127.0.0.1", parsed: true, why: "hex; the URL parser writes 127.0.0.1" },
  {
    input: "0177.0.0.1",
    raw: false,
    hostname: "127.0.0.1",
    parsed: true,
    why: "octal; the URL parser writes 127.0.0.1",
  },
  {
    input: "127.0.0.01",
    raw: false,
    hostname: "127.0.0.1",
    parsed: true,
    why: "a leading zero (octal to some resolvers)",
  },
  { input: "2130706433", raw: false, hostname: "127.0.0.1", parsed: true, why: "one 32-bit number" },
  {
    input: "127.0.0.1.",
    raw: false,
    hostname: "127.0.0.1",
    parsed: true,
    why: "a trailing dot; the URL parser drops it",
  },
  {
    input: "１２７.０.０.１",
    raw: false,
    hostname: "127.0.0.1",
    parsed: true,
    why: "full-width digits; the URL parser maps them",
  },
  // IPv6
  { input: "::1", raw: true, hostname: null, parsed: null, why: "bare ::1 is a listen address, not a URL host" },
  { input: "[::1]", raw: true, hostname: "[::1]", parsed: true, why: "::1 as a URL writes it" },
  { input: "0:0:0:0:0:0:0:1", raw: true, hostname: null, parsed: null, why: "::1 written out, bare" },
  { input: "[0:0:0:0:0:0:0:1]", raw: true, hostname: "[::1]", parsed: true, why: "::1 written out" },
  {
    input: "[0000:0000:0000:0000:0000:0000:0000:0001]",
    raw: true,
    hostname: "[::1]",
    parsed: true,
    why: "::1 with leading zeros",
  },
  { input: "[0::1]", raw: true, hostname: "[::1]", parsed: true, why: "::1 with a zero group before ::" },
  { input: "[::0:1]", raw: true, hostname: "[::1]", parsed: true, why: "::1 with a zero group after ::" },
  {
    input: "[::0.0.0.1]",
    raw: true,
    hostname: "[::1]",
    parsed: true,
    why: "::1 with its last 32 bits as a dotted quad",
  },
  {
    input: "[::ffff:127.0.0.1]",
    raw: false,
    hostname: "[::ffff:7f00:1]",
    parsed: false,
    why: "IPv4-mapped: not loopback on every socket",
  },
  { input: "::ffff:127.0.0.1", raw: false, hostname: null, parsed: null, why: "IPv4-mapped, bare" },
  {
    input: "[::127.0.0.1]",
    raw: false,
    hostname: "[::7f00:1]",
    parsed: false,
    why: "IPv4-compatible (deprecated), not ::1",
  },
  { input: "[::]", raw: false, hostname: "[::]", parsed: false, why: "the unspecified address: every interface" },
  { input: "[1::]", raw: false, hostname: "[1::]", parsed: false, why: "not ::1" },
  { input: "[::1:0]", raw: false, hostname: "[::1:0]", parsed: false, why: "not ::1" },
  { input: "[::00001]", raw: false, hostname: null, parsed: null, why: "a group of five digits" },
  { input: "[:::1]", raw: false, hostname: null, parsed: null, why: "not an IPv6 address" },
  { input: "[::1%25lo]", raw: false, hostname: null, parsed: null, why: "a zone id" },
  { input: "[127.0.0.1]", raw: false, hostname: null, parsed: null, why: "brackets hold IPv6 only" },
  // names
  { input: "localhost", raw: true, hostname: "localhost", parsed: true, why: "the loopback name" },
  { input: "LocalHost", raw: true, hostname: "localhost", parsed: true, why: "names have no case" },
  {
    input: "localhost.",
    raw: false,
    hostname: "localhost.",
    parsed: false,
    why: "the FQDN form goes to DNS, not /etc/hosts",
  },
  {
    input: "LOCALHOST.",
    raw: false,
    hostname: "localhost.",
    parsed: false,
    why: "the FQDN form goes to DNS, not /etc/hosts",
  },
  { input: "foo.localhost", raw: false, hostname: "foo.localhost", parsed: false, why: "a subdomain goes to DNS" },
  { input: "localhost.example.com", raw: false, hostname: "localhost.example.com", parsed: false, why: "a DNS name" },
  { input: "0.0.0.0", raw: false, hostname: "0.0.0.0", parsed: false, why: "every interface" },
  { input: "10.0.0.1", raw: false, hostname: "10.0.0.1", parsed: false, why: "a network address" },
  // what the URL parser takes off before the host
  {
    input: "127.0.0.1@evil.com",
    raw: false,
    hostname: "evil.com",
    parsed: false,
    why: "user information: the host is evil.com",
  },
  {
    input: "127.0.0.1:80@evil.com",
    raw: false,
    hostname: "evil.com",
    parsed: false,
    why: "user and password: the host is evil.com",
  },
  {
    input: "evil.com@127.0.0.1",
    raw: false,
    hostname: "127.0.0.1",
    parsed: true,
    why: "user information: the host is 127.0.0.1",
  },
  {
    input: "127.0.0.1\\@evil.com",
    raw: false,
    hostname: "127.0.0.1",
    parsed: true,
    why: "a backslash ends the host of an http URL",
  },
  { input: "127.0.0.1#@evil.com", raw: false, hostname: "127.0.0.1", parsed: true, why: "a fragment ends the host" },
  {
    input: "127.0.0.1%2f.evil.com",
    raw: false,
    hostname: null,
    parsed: null,
    why: "an escaped slash in a host does not parse",
  },
  { input: "127.0.0.1:8787", raw: false, hostname: "127.0.0.1", parsed: true, why: "a port is not part of the host" },
  { input: " 127.0.0.1", raw: false, hostname: null, parsed: null, why: "a space is not part of a host" },
  { input: "", raw: false, hostname: null, parsed: null, why: "no host" },
];
