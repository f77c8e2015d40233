/**
 * The account's base URL rule (docs/nodes.md#door-account, `baseUrl`): `https://` required, except
 * a loopback host (127.0.0.0/8, ::1, localhost), which may use `http://`.
 */
import { quoted } from "../util/text.js";

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (h === "localhost" || h === "::1") return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) && h.split(".").every((p) => Number(p) <= 255);
}

export class BaseUrlError extends Error {
  override readonly name = "BaseUrlError";
}

/**
 * Returns the parsed URL, or throws a BaseUrlError that says what is wrong. The message quotes
 * what it cites as a clipped JSON string: a base URL comes from a flow (maybe an imported one).
 */
export function parseBaseUrl(value: unknown): URL {
  if (typeof value !== "string" || value.trim() === "") throw new BaseUrlError("base URL is missing");
  const missing = withoutScheme(value.trim());
  if (missing) throw new BaseUrlError(missing);
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new BaseUrlError(`base URL ${quoted(value.trim())} is not a URL`);
  }
  if (url.username || url.password) throw new BaseUrlError("base URL must not contain a user name or password");
  if (url.search || url.hash) throw new BaseUrlError("base URL must not contain a query or fragment");
  if (url.protocol === "https:") return url;
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return url;
  if (url.protocol === "http:") {
    throw new BaseUrlError(`base URL must use https:// (http:// is allowed only for a loopback host such as 127.0.0.1), got host ${quoted(url.hostname)}`);
  }
  throw new BaseUrlError(`base URL must use https://, got ${quoted(url.protocol, 20)}`);
}

/**
 * A value typed without `scheme://` ("127.0.0.1:18787", "localhost:18787", "door.example.com"):
 * the text that says so and suggests the fix; null when the value has a scheme or is no host at
 * all. ("localhost:18787" would otherwise parse as the scheme "localhost:".)
 */
function withoutScheme(value: string): string | null {
  // A scheme (even a malformed "http:/host") is left to the URL parser; "host:port" is not one.
  if (/^[a-z][a-z0-9+.-]*:(?!\d)/i.test(value)) return null;
  let url: URL;
  try {
    url = new URL(`https://${value}`);
  } catch {
    return null;
  }
  if (!url.hostname || /\s/.test(value)) return null;
  const shown = value.slice(0, 200);
  return isLoopbackHost(url.hostname)
    ? `base URL "${shown}" has no scheme: write it as http://${shown} (a loopback host may use http://) or https://${shown}`
    : `base URL "${shown}" has no scheme: write it as https://${shown}`;
}
