/**
 * The words of a guest page (example 07's /door-guest) in the guest's language
 * (docs/passes.md#the-guest-pages-languages): one catalogue per language in guest-words/, English
 * the fallback for a language or a key a catalogue lacks. Served to the page at
 * GET <httpNodeRoot>/door-access/guest-words, in the language its Accept-Language asks for.
 *
 * The languages are a fixed list, the catalogues imported here: a header picks one of them or
 * English, and nothing of it is echoed, looked up on disk or put in a path.
 */
import type { NodeAPI } from "node-red";

import de from "./guest-words/de.json";
import en from "./guest-words/en.json";
import es from "./guest-words/es.json";
import fr from "./guest-words/fr.json";
import it from "./guest-words/it.json";

export type GuestWords = Record<keyof typeof en, string>;

/** Every catalogue, by its language's primary subtag (lowercase). English first: the fallback. */
export const CATALOGUES: Readonly<Record<string, Partial<GuestWords>>> = Object.freeze({ en, de, fr, es, it });

/** Where the page asks for its words, under Node-RED's httpNodeRoot. */
export const GUEST_WORDS_PATH = "/door-access/guest-words";

/** The longest Accept-Language header read, and the most language ranges in it. */
const MAX_HEADER = 1000;
const MAX_RANGES = 30;

/**
 * The language of the fixed list an Accept-Language header prefers (RFC 9110: ranges by their
 * `q`, first listed first among equals; a range matches its primary subtag: `de-CH` is German);
 * English when it names none of them, or cannot be read.
 */
export function pickLanguage(header: unknown): string {
  if (typeof header !== "string" || header.length > MAX_HEADER) return "en";
  const ranges: { lang: string; q: number; at: number }[] = [];
  header
    .split(",")
    .slice(0, MAX_RANGES)
    .forEach((part, at) => {
      const m = /^\s*([A-Za-z]{1,8})(?:-[A-Za-z0-9]{1,8})*\s*(?:;\s*q\s*=\s*([01](?:\.\d{0,3})?))?\s*$/.exec(part);
      if (m === null) return;
      const q = m[2] === undefined ? 1 : Number(m[2]);
      if (q > 0 && q <= 1) ranges.push({ lang: m[1].toLowerCase(), q, at });
    });
  ranges.sort((a, b) => b.q - a.q || a.at - b.at);
  const known = ranges.find((r) => Object.prototype.hasOwnProperty.call(CATALOGUES, r.lang));
  return known ? known.lang : "en";
}

/** A language's words, each key the catalogue lacks in English. */
export function wordsOf(lang: string): GuestWords {
  const own = Object.prototype.hasOwnProperty.call(CATALOGUES, lang) ? CATALOGUES[lang] : {};
  return { ...en, ...own };
}

/** What GET /door-access/guest-words answers for an Accept-Language header. */
export function guestWords(acceptLanguage: unknown): { lang: string; words: GuestWords } {
  const lang = pickLanguage(acceptLanguage);
  return { lang, words: wordsOf(lang) };
}

/** Serves the words on Node-RED's httpNode (the same server, root and authentication as http in nodes). */
export function serveGuestWords(RED: NodeAPI): void {
  const app = RED.httpNode as NodeAPI["httpNode"] | undefined;
  if (!app || typeof app.get !== "function") return; // httpNodeRoot: false, no endpoints at all
  app.get(GUEST_WORDS_PATH, (req, res) => {
    const { lang, words } = guestWords(req.headers["accept-language"]);
    res.set({
      "Content-Type": "application/json; charset=utf-8",
      "Content-Language": lang,
      "Cache-Control": "no-cache",
      Vary: "Accept-Language",
      "X-Content-Type-Options": "nosniff",
    });
    res.send(JSON.stringify({ lang, words }));
  });
}
