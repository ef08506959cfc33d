/**
 * What the model reads of a response (pure rendering, no network): Readability's article when there
 * is one, the whole body otherwise; links absolute (also against `<base href>`), script links
 * dropped; charsets from the header, `<meta>`, or UTF-8 with a note; types without a header sniffed;
 * binary described, never shown.
 */
import { assert, describe, it } from "@effect/vitest"
import { type FetchedBody, metaCharset, render } from "../../../src/domain/webfetch/render.ts"

const body = (contentType: string, content: string | Uint8Array, url = "https://site.test/a/page.html"): FetchedBody => ({
  url,
  status: 200,
  contentType,
  bytes: typeof content === "string" ? new TextEncoder().encode(content) : content,
  truncated: false
})

describe("webfetch rendering", () => {
  it("makes links absolute (also against <base href>) and drops script links", () => {
    const page = render(body("text/html", `<html><head><title>Tiny</title><base href="https://cdn.test/base/"></head><body>
      <p>Short <a href="x.html">rel</a> <a href="javascript:alert(1)">js</a> <a href="mailto:a@b.test">mail</a></p><script>var secret=1</script></body></html>`))
    assert.strictEqual(page.kind, "html")
    assert.strictEqual(page.title, "Tiny")
    assert.include(page.text, "[rel](https://cdn.test/base/x.html)")
    assert.include(page.text, "[mail](mailto:a@b.test)")
    assert.notInclude(page.text, "javascript:")
    assert.notInclude(page.text, "secret")
  })

  it("falls back to the whole body when Readability finds nothing", () => {
    const page = render(body("text/html", `<html><head><title>Pic</title></head><body><img src="../img/a.png" alt="a picture"><script>var secret=1</script></body></html>`))
    assert.strictEqual(page.title, "Pic")
    assert.strictEqual(page.text, "![a picture](https://site.test/img/a.png)")
    assert.deepStrictEqual(page.notes, ["no main article found: the whole page is shown"])
  })

  it("finds the charset in <meta> forms, and decodes text by the header first", () => {
    assert.strictEqual(metaCharset(new TextEncoder().encode(`<meta charset='windows-1251'>`)), "windows-1251")
    assert.strictEqual(metaCharset(new TextEncoder().encode(`<META HTTP-EQUIV="content-type" CONTENT="text/html; charset=EUC-KR">`)), "EUC-KR")
    assert.isUndefined(metaCharset(new TextEncoder().encode(`${" ".repeat(2100)}<meta charset="gbk">`)))
    // 0xE9 is é in windows-1252/latin1 and an invalid byte in UTF-8
    const latin = render(body("text/plain; charset=latin1", new Uint8Array([0x63, 0x61, 0x66, 0xe9])))
    assert.strictEqual(latin.text, "café")
    assert.strictEqual(render(body("text/plain", new Uint8Array([0x63, 0x61, 0x66, 0xe9]))).text, "caf\uFFFD")
  })

  it("sniffs a body without a content type; describes binary types, never shows them", () => {
    assert.strictEqual(render(body("", "<!DOCTYPE html><html><body><p>hi there</p></body></html>")).kind, "html")
    assert.strictEqual(render(body("", "just words")).kind, "text")
    const blob = render(body("", new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 1])))
    assert.strictEqual(blob.kind, "binary")
    assert.strictEqual(blob.text, "[unknown type, 8 B: not text, so its content is not shown]")
    const pdf = render({ ...body("application/pdf", new Uint8Array(0)), declaredSize: 3 * 1024 * 1024, truncated: true })
    assert.strictEqual(pdf.text, "[application/pdf, 3.0 MiB: not text, so its content is not shown]")
    assert.strictEqual(render(body("application/rss+xml", "<rss><item>x</item></rss>")).kind, "xml")
    assert.include(render(body("application/json", "{not json")).notes.join(" "), "not valid JSON")
  })
})
