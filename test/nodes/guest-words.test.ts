/**
 * The guest page's words (docs/passes.md#the-guest-pages-languages): one catalogue per language
 * that a translator can extend, English the fallback, and the language picked from a fixed list
 * by the browser's Accept-Language. Node.js alone: the route itself is exercised by the guest
 * page's browser test (test/editor/door-panel.browser.test.ts).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { CATALOGUES, guestWords, pickLanguage, wordsOf } from "../../nodes/door-unlock/guest-words.js";

const FOLDER = path.join(__dirname, "..", "..", "..", "nodes", "door-unlock", "guest-words");
const placeholders = (s: string) => [...s.matchAll(/\{[^}]*\}/g)].map((m) => m[0]).sort();

describe("the guest page's words: one catalogue per language in nodes/door-unlock/guest-words/, English the fallback, the language from a fixed list (docs/passes.md#the-guest-pages-languages)", () => {
  const en = CATALOGUES.en as Record<string, string>;

  it("ships English, German, French, Spanish and Italian; every catalogue file of the folder is one the page can be given (none forgotten in guest-words.ts)", () => {
    assert.deepEqual(Object.keys(CATALOGUES).sort(), ["de", "en", "es", "fr", "it"]);
    const files = fs.readdirSync(FOLDER).sort();
    assert.deepEqual(
      files,
      Object.keys(CATALOGUES)
        .map((l) => `${l}.json`)
        .sort(),
    );
    for (const f of files) assert.match(f, /^[a-z]{2,3}\.json$/, "a file is named by its language's primary subtag");
  });

  for (const [lang, words] of Object.entries(CATALOGUES)) {
    it(`${lang}: every key of the English catalogue, no other key, each a text with the same placeholders, and a guest reads "code", never "PIN"`, () => {
      const w = words as Record<string, unknown>;
      assert.deepEqual(Object.keys(w).sort(), Object.keys(en).sort());
      for (const [key, text] of Object.entries(w)) {
        assert.equal(typeof text, "string", `${lang}.${key}`);
        assert.notEqual((text as string).trim(), "", `${lang}.${key}`);
        assert.deepEqual(placeholders(text as string), placeholders(en[key]), `${lang}.${key}: its placeholders`);
        assert.doesNotMatch(text as string, /\bPINs?\b|<|>|&/i, `${lang}.${key}: "code", never "PIN", and no markup`);
      }
      const json = JSON.parse(fs.readFileSync(path.join(FOLDER, `${lang}.json`), "utf8")) as unknown;
      assert.deepEqual(json, w, "the file as it is shipped");
    });
  }

  it("a key a catalogue lacks, and a language it does not have, read in English", () => {
    assert.deepEqual(wordsOf("xx"), en);
    assert.deepEqual(wordsOf("__proto__"), en);
    assert.equal(wordsOf("de").open, "Öffnen");
  });

  it("Accept-Language picks the first language of the list the browser prefers, by q and then by order; a region reads as its language", () => {
    const cases: [string | undefined, string][] = [
      ["de-DE", "de"],
      ["de-CH,de;q=0.9,en;q=0.8", "de"],
      ["fr-FR,fr;q=0.9", "fr"],
      ["es-ES", "es"],
      ["es-419,es;q=0.9", "es"],
      ["it-IT,it;q=0.9,en-US;q=0.8", "it"],
      ["en-US,en;q=0.9", "en"],
      ["ja,de;q=0.5", "de"],
      ["en;q=0.4, it;q=0.6", "it"],
      ["fr;q=0, es", "es"],
      ["ja, zh-CN", "en"],
      ["*", "en"],
      ["", "en"],
      [undefined, "en"],
    ];
    for (const [header, lang] of cases) assert.equal(pickLanguage(header), lang, String(header));
  });

  it("a forged Accept-Language picks English or a language of the list: nothing of it is echoed, nothing read from disk", () => {
    for (const forged of [
      "../../../package.json",
      "../../../../etc/passwd,de",
      "de/../../en",
      "<script>alert(1)</script>",
      "de\r\nSet-Cookie: x=1",
      "__proto__",
      "constructor, toString",
      "de;q=2",
      "x".repeat(5000),
      `${"ja,".repeat(200)}de`,
      ["de"] as unknown as string,
    ]) {
      const answer = guestWords(forged);
      assert.ok(Object.keys(CATALOGUES).includes(answer.lang), JSON.stringify(forged).slice(0, 40));
      assert.deepEqual(answer.words, wordsOf(answer.lang));
      const text = JSON.stringify(answer);
      for (const bit of ["script", "passwd", "Set-Cookie", "package", "proto"]) assert.ok(!text.includes(bit), bit);
    }
  });
});
