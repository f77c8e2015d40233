/**
 * The account's base URL rule (docs/nodes.md#door-account): `https://` required, except a
 * loopback host (src/util/loopback.ts: 127.0.0.0/8, ::1, localhost), which may use `http://`.
 * The account dialog checks a base URL with parseBaseUrl too (nodes/door-account/editor/,
 * bundled for the browser): this module stays free of Node.js.
 */
import { isLoopbackHost } from "../util/loopback.js";
import { clip, quoted } from "../util/text.js";

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
    throw new BaseUrlError(`base URL ${quoted(withoutUserInfo(value.trim()))} is not a URL`);
  }
  if (url.username || url.password) throw new BaseUrlError("base URL must not contain a user name or password");
  if (url.search || url.hash) throw new BaseUrlError("base URL must not contain a query or fragment");
  if (url.protocol === "https:") return url;
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return url;
  if (url.protocol === "http:") {
    throw new BaseUrlError(
      `base URL must use https:// (http:// is allowed only for a loopback host such as 127.0.0.1), got host ${quoted(url.hostname)}`,
    );
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
  // Cited as a clipped JSON string, without a user name or password typed into it; the
  // suggestion is the URL parser's (markup in a path comes out percent-encoded), clipped too.
  const shown = quoted(withoutUserInfo(value));
  const rest = clip(`${url.host}${url.pathname === "/" ? "" : url.pathname}`, 80, "…");
  return isLoopbackHost(url.hostname)
    ? `base URL ${shown} has no scheme: write it as http://${rest} (a loopback host may use http://) or https://${rest}`
    : `base URL ${shown} has no scheme: write it as https://${rest}`;
}

/** `value` with a user name and password before an `@` (`user:pass@host`) replaced by "…": never quoted back (docs/security.md#secrets). */
function withoutUserInfo(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/@]*@/i, (_m, scheme: string | undefined) => `${scheme ?? ""}…@`);
}
