/**
 * Images in the web chat (`POST /api/chat` `images`) through a real server, the real runtime and
 * memory, the model being the fake LLM through the official OpenAI SDK: a PNG reaches the model as an
 * image part beside the text and is kept in memory as an image block; the type comes from the bytes;
 * anything that is not a PNG, JPEG, GIF or WebP data: URL is refused before any model call (400
 * `invalid_image`), and so are too many images; the HTTP channel's limits hold (a body over 10 MiB,
 * declared or not, and a message larger than memory keeps: 413); a model that cannot take images
 * answers with an error, which is the turn's `error` event, as other channels tell their users.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { MAX_CHAT_BODY_BYTES, MAX_CHAT_IMAGES } from "../../../src/domain/admin/chatImages.ts"
import type { ChatEvent } from "../../../src/domain/admin/groups/chat.ts"
import { BadRequest, TooLarge } from "../../../src/domain/admin/security.ts"
import { sessionKeyOf } from "../../../src/domain/runtime/types.ts"
import { MAX_BODY_BYTES } from "../../../src/layers/channels/HttpChannel.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { account, clientFor, withAdmin } from "./sessionsSetup.ts"

const llm = fakeLlmSuite()

/** A 1×1 PNG, and a JPEG's first bytes (enough for its signature). */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1]).toString("base64")

let mark = 0
const modelCalls = () => llm.fake.requests.slice(mark).filter((r) => r.method === "POST")

const seeded = Effect.gen(function*() {
  mark = llm.fake.requests.length
  yield* configureAgent(llm.fake, "v1", { tools: [] })
  return yield* account("alice", "user")
})

const texts = (events: ReadonlyArray<ChatEvent>) => events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join("")

describe("admin API: images in the web chat", () => {
  it.live("a PNG goes to the model as an image beside the text and stays in memory as an image block", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const token = yield* seeded
        llm.fake.script({ kind: "reply", parts: [{ type: "text", text: "A single pixel." }] })
        const alice = yield* clientFor(token)
        const events = yield* Stream.runCollect(yield* alice.chat.send({ payload: { agent: "v1", message: "what is this?", images: [`data:image/png;base64,${PNG}`] } }))
        assert.strictEqual(texts(events), "A single pixel.")
        const sent = modelCalls()[0]?.body as { messages: ReadonlyArray<{ role: string; content: unknown }> }
        assert.deepStrictEqual(sent.messages.at(-1), {
          role: "user",
          content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }, { type: "text", text: "what is this?" }]
        })
        const key = sessionKeyOf("v1", "web", "alice", "default")
        const page = yield* alice.sessions.messages({ params: { key }, query: {} })
        assert.deepStrictEqual(page.messages[0]?.message.content, [
          { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
          { type: "text", text: "what is this?" }
        ])

        // Without words, and under a type its bytes deny: the type is the bytes'.
        llm.fake.script({ kind: "reply", parts: [{ type: "text", text: "ok" }] })
        yield* Stream.runCollect(yield* alice.chat.send({ payload: { agent: "v1", message: "", images: [`data:image/gif;base64,${JPEG}`] } }))
        const second = (yield* alice.sessions.messages({ params: { key }, query: { from: 3 } })).messages[0]?.message.content
        assert.deepStrictEqual(second, [
          { type: "image", source: { type: "base64", media_type: "image/jpeg", data: JPEG } },
          { type: "text", text: "(an image)" }
        ])
      })))

  it.live("what is not a PNG, JPEG, GIF or WebP data: URL, and too many images, are refused before any model call", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const token = yield* seeded
        const alice = yield* clientFor(token)
        const svg = Buffer.from("<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>").toString("base64")
        for (
          const [url, why] of [
            [`data:image/png;base64,${Buffer.from("just some text, not a picture").toString("base64")}`, "not a PNG, JPEG, GIF or WebP image"],
            [`data:image/svg+xml;base64,${svg}`, "not a PNG, JPEG, GIF or WebP image"],
            ["https://example.com/cat.png", "not a base64 data: URL"],
            [`data:image/png;base64,${PNG.slice(0, 10)}`, "its base64 is cut short"],
            [`data:image/png,${PNG}`, "not a base64 data: URL"]
          ] as const
        ) {
          const refused = yield* Effect.flip(alice.chat.send({ payload: { agent: "v1", message: "look", images: [`data:image/png;base64,${PNG}`, url] } }))
          assert.instanceOf(refused, BadRequest, url.slice(0, 40))
          if (refused instanceof BadRequest) {
            assert.strictEqual(refused.error.code, "invalid_image")
            assert.include(refused.error.message, `image 2: ${why}`)
          }
        }
        // Too many: the typed client will not even send it; the server refuses it all the same.
        const many = Array.from({ length: MAX_CHAT_IMAGES + 1 }, () => `data:image/png;base64,${PNG}`)
        const { url } = yield* HttpAddress
        const tooMany = yield* Effect.promise(() =>
          fetch(`${url}/api/chat`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify({ agent: "v1", message: "look", images: many })
          }).then((r) => r.status)
        )
        assert.strictEqual(tooMany, 400)
        assert.instanceOf(yield* Effect.flip(alice.chat.send({ payload: { agent: "v1", message: "  ", images: [] } })), BadRequest)
        assert.strictEqual(modelCalls().length, 0)
      })))

  it.live("the HTTP channel's limits: a body over 10 MiB (declared or streamed) and a message larger than memory keeps are 413s", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        assert.strictEqual(MAX_CHAT_BODY_BYTES, MAX_BODY_BYTES, "the same body limit as the HTTP channel")
        const token = yield* seeded
        const { url } = yield* HttpAddress
        const big = (mib: number) => `data:image/png;base64,${PNG.slice(0, -4)}${"A".repeat(Math.floor((mib * 1048576) / 4) * 4)}AA==`
        const post = (body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
          Effect.promise(async () => {
            const res = await fetch(`${url}/api/chat`, {
              method: "POST",
              headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
              body,
              duplex: "half"
            } as RequestInit)
            const text = await res.text()
            if (!text.startsWith("{")) throw new Error(`${res.status}: ${text.slice(0, 200)}`)
            return { status: res.status, body: JSON.parse(text) as { error: { code: string; message: string } } }
          })
        // 9 MiB of image: under the body limit, over what memory keeps.
        const kept = yield* post(JSON.stringify({ agent: "v1", message: "big", images: [big(9)] }))
        assert.deepStrictEqual([kept.status, kept.body.error.code], [413, "message_too_large"])
        // 11 MiB declared: refused unread.
        const declared = yield* post(JSON.stringify({ agent: "v1", message: "big", images: [big(11)] }))
        assert.deepStrictEqual([declared.status, declared.body.error.code], [413, "request_too_large"])
        assert.include(declared.body.error.message, "10.0 MiB")
        // 11 MiB streamed without a length: cut at the limit.
        const payload = new TextEncoder().encode(JSON.stringify({ agent: "v1", message: "big", images: [big(11)] }))
        const streamed = yield* post(new ReadableStream({
          start(controller) {
            for (let i = 0; i < payload.length; i += 1 << 20) controller.enqueue(payload.subarray(i, i + (1 << 20)))
            controller.close()
          }
        }))
        assert.deepStrictEqual([streamed.status, streamed.body.error.code], [413, "request_too_large"])
        assert.strictEqual(modelCalls().length, 0)
        // The typed client knows the answer.
        const alice = yield* clientFor(token)
        assert.instanceOf(yield* Effect.flip(alice.chat.send({ payload: { agent: "v1", message: "big", images: [big(9)] } })), TooLarge)
      })))

  it.live("a model that cannot take images refuses the turn: the chat's error event says so, as other channels' notices do", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const token = yield* seeded
        llm.fake.respondWith(() => ({ kind: "error", status: 400, message: "Invalid content type. image_url is only supported by certain models." }))
        const alice = yield* clientFor(token)
        const events = yield* Stream.runCollect(yield* alice.chat.send({ payload: { agent: "v1", message: "see?", images: [`data:image/png;base64,${PNG}`] } }))
        const error = events.find((e) => e.type === "error")
        assert.isDefined(error)
        if (error?.type === "error") assert.include(error.message, "image_url is only supported by certain models")
        assert.deepInclude(events.at(-1), { type: "done", stopReason: "unavailable" })
        // The image did go to the model (no channel asks a model first).
        assert.include(JSON.stringify(modelCalls()[0]?.body), `data:image/png;base64,${PNG}`)
        // It stays in the conversation: the next turn sends it again (hence /model or /new, says the README).
        const calls = modelCalls().length
        yield* Stream.runCollect(yield* alice.chat.send({ payload: { agent: "v1", message: "and now?" } }))
        assert.include(JSON.stringify(modelCalls()[calls]?.body), `data:image/png;base64,${PNG}`)
      })))
})
