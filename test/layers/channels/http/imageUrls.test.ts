/**
 * Image URLs in `/v1/chat/completions` (issue 23, "also noticed"): passed on unchanged, they made a
 * self-hosted model server that fetches URLs an SSRF point. Through the real HTTP channel and a real
 * image server on 127.0.0.1:
 * - by default a non-`data:` image URL is a 400 that says what to send instead, and nothing is fetched;
 * - with `http.fetch_image_urls=on` anna fetches it itself through webfetch's SSRF guard (so
 *   127.0.0.1 is refused, also after a redirect) unless `http.image_url_hosts` names the host, checks
 *   it is a PNG, JPEG, GIF or WebP image within the size cap, and passes its bytes on as base64.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { settingSpec, settingValue } from "../../../../src/domain/config/settings.ts"
import { MAX_IMAGE_BYTES } from "../../../../src/layers/channels/shared/images.ts"
import * as HttpChannel from "../../../../src/layers/channels/HttpChannel.ts"
import { HttpAddress } from "../../../../src/services/HttpAddress.ts"
import { fakeServices, fakeSettings, recorded, resetRecorded } from "../../../support/httpChannelFakes.ts"

const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
const PNG = Buffer.from(PNG_BASE64, "base64")

/** The image server: what it serves, and every path it was asked for. */
let images: Server
let imageBase = ""
const asked: Array<string> = []

beforeAll(async () => {
  images = createServer((req, res) => {
    asked.push(req.url ?? "")
    switch (req.url) {
      case "/cat.png":
        // Labelled as something else: the bytes decide.
        return void res.writeHead(200, { "content-type": "application/octet-stream", "content-length": PNG.length }).end(PNG)
      case "/page.png":
        return void res.writeHead(200, { "content-type": "image/png" }).end("<html><body>not an image</body></html>")
      case "/huge.png":
        return void res.writeHead(200, { "content-type": "image/png" }).end(Buffer.concat([PNG, Buffer.alloc(MAX_IMAGE_BYTES)]))
      case "/to-metadata":
        return void res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end()
      default:
        return void res.writeHead(404).end()
    }
  })
  await new Promise<void>((done) => images.listen(0, "127.0.0.1", done))
  imageBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((done) => images.close(() => done())))
beforeEach(() => {
  fakeSettings.clear()
  asked.length = 0
  resetRecorded()
})

const ErrorBody = Schema.Struct({ error: Schema.Struct({ message: Schema.String, code: Schema.NullOr(Schema.String), param: Schema.NullOr(Schema.String) }) })

/** A completion whose user message is a text part and an image part with `url`: its status and error. */
const ask = (url: string) =>
  Effect.gen(function*() {
    const base = (yield* HttpAddress).url
    const res = yield* Effect.promise(() =>
      fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer tok-alice", "content-type": "application/json" },
        body: JSON.stringify({
          model: "default",
          messages: [{ role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image_url", image_url: { url } }] }]
        })
      })
    )
    const json: unknown = yield* Effect.promise(() => res.json())
    const error = Schema.decodeUnknownOption(ErrorBody)(json)
    return { status: res.status, error: error._tag === "Some" ? error.value.error : undefined }
  })

const Channel = HttpChannel.layer({ port: 0 }).pipe(Layer.provide(fakeServices))

layer(Channel, { excludeTestServices: true })("image URLs in chat completions", (it) => {
  it.effect("by default an http(s) image URL is refused with a 400 that says what to send, and nothing is fetched", () =>
    Effect.gen(function*() {
      for (const url of [`${imageBase}/cat.png`, "https://example.com/cat.jpg"]) {
        const { status, error } = yield* ask(url)
        assert.strictEqual(status, 400)
        assert.strictEqual(error?.code, "invalid_image_url")
        assert.strictEqual(error?.param, "messages")
        assert.include(error?.message, "data:image/")
        assert.include(error?.message, "http.fetch_image_urls")
      }
      assert.deepStrictEqual(asked, [])
      assert.strictEqual(recorded.sends.length, 0)
    }))

  it.effect("switched on, the fetch goes through the SSRF guard: a loopback host is refused before any request", () =>
    Effect.gen(function*() {
      fakeSettings.set("http.fetch_image_urls", "on")
      const { status, error } = yield* ask(`${imageBase}/cat.png`)
      assert.strictEqual(status, 400)
      assert.strictEqual(error?.code, "invalid_image_url")
      assert.include(error?.message, "loopback")
      assert.deepStrictEqual(asked, [])
      assert.strictEqual(recorded.sends.length, 0)
    }))

  it.effect("with the host allowed, the image's bytes are passed on as base64 (its type from the bytes)", () =>
    Effect.gen(function*() {
      fakeSettings.set("http.fetch_image_urls", "on")
      fakeSettings.set("http.image_url_hosts", "127.0.0.1")
      const { status } = yield* ask(`${imageBase}/cat.png`)
      assert.strictEqual(status, 200)
      assert.deepStrictEqual(recorded.sends.at(-1)?.message, [
        { type: "text", text: "what is this?" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_BASE64 } }
      ])
    }))

  it.effect("with the host allowed: not an image, too large, a 404, and a redirect to the metadata address are each a 400 saying why", () =>
    Effect.gen(function*() {
      fakeSettings.set("http.fetch_image_urls", "on")
      fakeSettings.set("http.image_url_hosts", "127.0.0.1")
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["/page.png", "not a PNG, JPEG, GIF or WebP image"],
        ["/huge.png", "larger than"],
        ["/missing.png", "404"],
        ["/to-metadata", "metadata"]
      ]
      for (const [path, why] of cases) {
        const { status, error } = yield* ask(`${imageBase}${path}`)
        assert.strictEqual(status, 400, path)
        assert.strictEqual(error?.code, "invalid_image_url", path)
        assert.include(error?.message, why, path)
      }
      assert.strictEqual(recorded.sends.length, 0)
    }))
})

describe("image URL settings", () => {
  it("fetching is off unless set on; hosts are names or IP literals separated by commas", () => {
    assert.strictEqual(settingValue("http.fetch_image_urls", undefined), "off")
    assert.isUndefined(settingSpec("http.fetch_image_urls")?.problem("on"))
    assert.isDefined(settingSpec("http.fetch_image_urls")?.problem("yes"))
    assert.strictEqual(settingValue("http.image_url_hosts", undefined), "")
    assert.isUndefined(settingSpec("http.image_url_hosts")?.problem("127.0.0.1, images.lan, [::1]"))
    assert.isDefined(settingSpec("http.image_url_hosts")?.problem("http://images.lan/"))
  })

  layer(Channel, { excludeTestServices: true })("checked values", (it) => {
    it.effect("a value that is neither on nor off keeps the default (off)", () =>
      Effect.gen(function*() {
        fakeSettings.set("http.fetch_image_urls", "maybe")
        const { status, error } = yield* ask(`${imageBase}/cat.png`)
        assert.strictEqual(status, 400)
        assert.include(error?.message, "http.fetch_image_urls")
        assert.deepStrictEqual(asked, [])
      }))
  })
})
