import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Stream } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import OpenAI from "openai"
import { afterAll, beforeAll } from "vitest"
import type { ChatEvent, ChatRequest, ProviderConfig } from "../../../src/domain/model/types.ts"
import * as OpenAiChat from "../../../src/layers/providers/OpenAiChat.ts"
import { toChatParams, usesMaxCompletionTokens } from "../../../src/layers/providers/openaiChatRequest.ts"
import { collectResponse } from "../../../src/domain/model/collect.ts"
import type { Scripted } from "../../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { fastTransport, providerContract } from "./contract.ts"

providerContract("openai", OpenAiChat.make)

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

describe("OpenAiChat", () => {
  let fake: FakeLlm
  beforeAll(async () => {
    fake = await startFakeLlm()
  })
  afterAll(() => fake.close())

  const config = (overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
    id: "oa",
    type: "openai",
    baseUrl: fake.openAiUrl,
    apiKey: "sk-test-key-123456",
    models: [],
    defaultModel: "gpt-test",
    headers: { "x-anna-test": "yes" },
    enabled: true,
    ...overrides
  })
  const client = (overrides: Partial<ProviderConfig> = {}) => OpenAiChat.make(config(overrides), { ...fastTransport, maxRetries: 0 })
  const send = (request: Partial<ChatRequest>, overrides: Partial<ProviderConfig> = {}) =>
    Effect.gen(function*() {
      yield* Stream.runDrain(client(overrides).stream({ model: "gpt-test", messages: [{ role: "user", content: "Hi" }], ...request }))
      const last = fake.requests[fake.requests.length - 1]
      assert.isDefined(last)
      return last
    })
  const sdk = () => new OpenAI({ apiKey: "sk-x", baseURL: fake.openAiUrl, maxRetries: 0 })
  const post = (body: unknown) =>
    fetch(`${fake.openAiUrl}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  const sdkFailure = () =>
    Effect.tryPromise({ try: () => sdk().chat.completions.create({ model: "m", messages: [] }), catch: (e) => e }).pipe(Effect.flip)
  const sseData = (text: string) => text.split("\n\n").filter((e) => e !== "").map((e) => e.replace(/^data: /, ""))

  describe("request mapping", () => {
    it.effect("a plain request: model, messages, stream with usage, default max tokens, nothing unasked", () =>
      Effect.gen(function*() {
        const req = yield* send({ model: "", system: "Be brief." })
        assert.deepStrictEqual(req.body, {
          model: "gpt-test",
          messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
          stream: true,
          stream_options: { include_usage: true },
          max_tokens: 4096
        })
        assert.strictEqual(req.path, "/v1/chat/completions")
        assert.strictEqual(req.headers["authorization"], "Bearer sk-test-key-123456")
        assert.strictEqual(req.headers["x-anna-test"], "yes")
      }))

    it.effect("tools, temperature and max tokens", () =>
      Effect.gen(function*() {
        const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
        const req = yield* send({
          maxTokens: 77,
          temperature: 0,
          tools: [{ name: "weather", description: "Weather in a city", inputSchema: schema }]
        })
        const body = req.body as Record<string, unknown>
        assert.strictEqual(body["max_tokens"], 77)
        assert.strictEqual(body["temperature"], 0, "a temperature of 0 is sent, not dropped")
        assert.deepStrictEqual(body["tools"], [{
          type: "function",
          function: { name: "weather", description: "Weather in a city", parameters: schema }
        }])
      }))

    it.effect("images, tool calls, tool results (with images, errors, extra user text) in the API's order", () =>
      Effect.gen(function*() {
        const req = yield* send({
          messages: [
            { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }] },
            { role: "assistant", content: [{ type: "text", text: "Let me check." }, { type: "tool_use", id: "call_a", name: "zoom", input: { factor: 2 } }, { type: "tool_use", id: "call_b", name: "ocr", input: {} }] },
            { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "call_a", content: "zoomed in" }] },
            {
              role: "tool_result",
              content: [{
                type: "tool_result",
                tool_use_id: "call_b",
                content: [{ type: "text", text: "no text found" }, { type: "image", source: { type: "url", url: "https://example.com/cat.png" } }],
                is_error: true
              }]
            },
            { role: "assistant", content: [{ type: "tool_use", id: "call_c", name: "count", input: { of: "cats" } }] },
            { role: "user", content: [{ type: "tool_result", tool_use_id: "call_c", content: "42" }, { type: "text", text: "and also this" }] },
            { role: "user", content: "Thanks" }
          ]
        })
        assert.deepStrictEqual((req.body as { messages: unknown }).messages, [
          { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }] },
          {
            role: "assistant",
            content: "Let me check.",
            tool_calls: [
              { id: "call_a", type: "function", function: { name: "zoom", arguments: "{\"factor\":2}" } },
              { id: "call_b", type: "function", function: { name: "ocr", arguments: "{}" } }
            ]
          },
          { role: "tool", tool_call_id: "call_a", content: "zoomed in" },
          { role: "tool", tool_call_id: "call_b", content: "Error: no text found\n(1 image(s) follow in the next user message)" },
          { role: "user", content: [{ type: "text", text: "Image(s) returned by tool call call_b:" }, { type: "image_url", image_url: { url: "https://example.com/cat.png" } }] },
          { role: "assistant", content: null, tool_calls: [{ id: "call_c", type: "function", function: { name: "count", arguments: "{\"of\":\"cats\"}" } }] },
          { role: "tool", tool_call_id: "call_c", content: "42" },
          { role: "user", content: [{ type: "text", text: "and also this" }] },
          { role: "user", content: "Thanks" }
        ])
      }))

    it.effect("a provider without a key (a local server) still gets a request", () =>
      Effect.gen(function*() {
        const req = yield* send({}, { apiKey: "" })
        assert.strictEqual(req.headers["authorization"], "Bearer anna-no-key")
      }))

    it.effect("organization and project come from the provider row, never from the environment", () =>
      Effect.gen(function*() {
        const saved = [process.env["OPENAI_ORG_ID"], process.env["OPENAI_PROJECT_ID"]] as const
        process.env["OPENAI_ORG_ID"] = "org-from-env"
        process.env["OPENAI_PROJECT_ID"] = "proj-from-env"
        const req = yield* send({}).pipe(Effect.ensuring(Effect.sync(() => {
          if (saved[0] === undefined) delete process.env["OPENAI_ORG_ID"]
          else process.env["OPENAI_ORG_ID"] = saved[0]
          if (saved[1] === undefined) delete process.env["OPENAI_PROJECT_ID"]
          else process.env["OPENAI_PROJECT_ID"] = saved[1]
        })))
        assert.isUndefined(req.headers["openai-organization"])
        assert.isUndefined(req.headers["openai-project"])
      }))

    it("OpenAI's own endpoint gets max_completion_tokens; compatible servers get max_tokens", () => {
      assert.isTrue(usesMaxCompletionTokens(""))
      assert.isTrue(usesMaxCompletionTokens("https://api.openai.com/v1"))
      assert.isFalse(usesMaxCompletionTokens("http://localhost:11434/v1"))
      assert.isFalse(usesMaxCompletionTokens("not a url"))
      const params = toChatParams({ ...config(), baseUrl: "" }, { model: "m", messages: [], maxTokens: 10 }) as unknown as Record<string, unknown>
      assert.strictEqual(params["max_completion_tokens"], 10)
      assert.notProperty(params, "max_tokens")
    })
  })

  describe("responses and failures", () => {
    it.effect("tool-call events: start, several argument deltas, end with parsed input, in order", () =>
      Effect.gen(function*() {
        fake.script({
          kind: "reply",
          parts: [
            { type: "tool_call", id: "call_1", name: "a", input: { long: "abcdefghijklmnopqrstuvwxyz" } },
            { type: "tool_call", id: "call_2", name: "b", input: {} }
          ],
          chunk: 6
        })
        const events = yield* Stream.runCollect(client().stream({ model: "m", messages: [{ role: "user", content: "go" }] }))
        const shape = events.map((e) => e.type === "tool_call_delta" ? `delta${e.index}` : e.type === "text_delta" ? "text" : e.type)
        const firstEnd = shape.indexOf("tool_call_end")
        assert.deepStrictEqual(shape.slice(0, 1), ["tool_call_start"])
        assert.isAtLeast(shape.filter((s) => s === "delta0").length, 5)
        assert.isTrue(shape.lastIndexOf("delta0") < shape.indexOf("tool_call_start", 1), "the second call starts after the first's arguments")
        assert.deepStrictEqual(shape.slice(firstEnd), ["tool_call_end", "tool_call_end", "usage", "stop"])
        const ends = events.filter((e): e is Extract<ChatEvent, { type: "tool_call_end" }> => e.type === "tool_call_end")
        assert.deepStrictEqual(ends.map((e) => [e.index, e.id, e.input]), [[0, "call_1", { long: "abcdefghijklmnopqrstuvwxyz" }], [1, "call_2", {}]])
        const joined = events.flatMap((e) => (e.type === "tool_call_delta" && e.index === 0 ? [e.argumentsDelta] : [])).join("")
        assert.strictEqual(joined, "{\"long\":\"abcdefghijklmnopqrstuvwxyz\"}")
      }))

    it.effect("the service's error message is the detail; context overflow is recognised by its code", () =>
      Effect.gen(function*() {
        const fail = (s: Scripted) =>
          Effect.suspend(() => {
            fake.script(s)
            return Stream.runDrain(client().stream({ model: "m", messages: [{ role: "user", content: "x" }] })).pipe(Effect.flip)
          })
        const bad = yield* fail({ kind: "error", status: 400, message: "Invalid value for 'temperature'." })
        assert.strictEqual(bad._tag, "InvalidRequest")
        assert.strictEqual(bad.detail, "Invalid value for 'temperature'.")
        const overflow = yield* fail({ kind: "error", status: 400, contextOverflow: true, message: "Too big, sorry." })
        assert.strictEqual(overflow._tag, "ContextOverflow", "by code, even when the wording does not say so")
        assert.strictEqual(overflow.detail, "Too big, sorry.")
        const missing = yield* fail({ kind: "error", status: 404 })
        assert.strictEqual(missing._tag, "InvalidRequest")
        assert.include(missing.detail, "does not exist")
      }))

    it.effect("a cut-off stream delivers what arrived, then fails with a network error", () =>
      Effect.gen(function*() {
        fake.script({ kind: "disconnect", parts: [{ type: "text", text: "abcdefghijklmnopqrstuvwxyz" }], afterEvents: 3 })
        const seen: Array<ChatEvent> = []
        const exit = yield* Stream.runForEach(client().stream({ model: "m", messages: [] }), (e) => Effect.sync(() => seen.push(e))).pipe(Effect.exit)
        assert.deepStrictEqual(seen, [{ type: "text_delta", text: "abcdefgh" }, { type: "text_delta", text: "ijklmnop" }])
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
        assert.strictEqual(error?._tag === "Fail" ? error.error._tag : "none", "ProviderNetworkError")
      }))

    it.effect("an error event inside a started stream is a typed error with the service's words", () =>
      Effect.gen(function*() {
        const server = createServer((_req, res) => {
          res.writeHead(200, { "content-type": "text/event-stream" })
          res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content: "Hel" }, finish_reason: null }] })}\n\n`)
          res.end(`data: ${JSON.stringify({ error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: null } })}\n\n`)
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((done) => server.listen(0, "127.0.0.1", () => done()))),
          () => Effect.promise(() => new Promise<void>((done) => server.close(() => done())))
        )
        const { port } = server.address() as AddressInfo
        const error = yield* Stream.runDrain(client({ baseUrl: `http://127.0.0.1:${port}/v1` }).stream({ model: "m", messages: [] })).pipe(Effect.flip)
        assert.strictEqual(error._tag, "ProviderServerError")
        assert.strictEqual(error.detail, "The server had an error while processing your request.")
      }))

    it.effect("lists models with their creation time", () =>
      Effect.gen(function*() {
        fake.models = ["gpt-a", "gpt-b"]
        const models = yield* client().listModels
        assert.deepStrictEqual(models, [{ id: "gpt-a", createdAt: 1_763_800_000_000 }, { id: "gpt-b", createdAt: 1_763_800_000_000 }])
      }))
  })

  describe("the fake server speaks the wire format", () => {
    it.effect("chunks as the SDK reads them: role first, tool-call deltas, finish, usage with empty choices, [DONE]", () =>
      Effect.gen(function*() {
        fake.script({ kind: "reply", parts: [{ type: "text", text: "Hi!" }, { type: "tool_call", id: "call_9", name: "t", input: { a: 1 } }], usage: { input: 5, output: 3 } })
        const text = yield* Effect.promise(() =>
          post({ model: "m", messages: [], stream: true, stream_options: { include_usage: true } }).then((r) => r.text())
        )
        const data = sseData(text)
        assert.strictEqual(data[data.length - 1], "[DONE]")
        const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Record<string, unknown>)
        for (const c of chunks) {
          assert.strictEqual(c["object"], "chat.completion.chunk")
          assert.property(c, "usage")
        }
        const choice = (i: number) => (chunks[i]?.["choices"] as Array<Record<string, unknown>> | undefined)?.[0]
        assert.deepStrictEqual(choice(0)?.["delta"], { role: "assistant", content: "", refusal: null })
        assert.deepStrictEqual(choice(1)?.["delta"], { content: "Hi!" })
        assert.deepStrictEqual(choice(2)?.["delta"], { tool_calls: [{ index: 0, id: "call_9", type: "function", function: { name: "t", arguments: "" } }] })
        assert.deepStrictEqual(choice(3)?.["delta"], { tool_calls: [{ index: 0, function: { arguments: "{\"a\":1}" } }] })
        assert.deepStrictEqual([choice(4)?.["delta"], choice(4)?.["finish_reason"]], [{}, "tool_calls"])
        const last = chunks[chunks.length - 1]
        assert.deepStrictEqual(last?.["choices"], [])
        assert.deepInclude(last?.["usage"] as object, { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 })
        fake.script({ kind: "reply", parts: [{ type: "tool_call", id: "call_8", name: "t", input: {} }] })
        const toolFirst = sseData(yield* Effect.promise(() => post({ model: "m", messages: [], stream: true }).then((r) => r.text())))
        const first = JSON.parse(toolFirst[0] ?? "{}") as { choices: Array<{ delta: unknown }> }
        assert.deepStrictEqual(first.choices[0]?.delta, {
          role: "assistant",
          content: null,
          tool_calls: [{ index: 0, id: "call_8", type: "function", function: { name: "t", arguments: "" } }],
          refusal: null
        }, "an answer that starts with a tool call opens with it")
      }))

    it.effect("no usage key at all unless the request asks for it", () =>
      Effect.gen(function*() {
        fake.script({ kind: "reply", parts: [{ type: "text", text: "Hi" }] })
        const text = yield* Effect.promise(() => post({ model: "m", messages: [], stream: true }).then((r) => r.text()))
        assert.notInclude(text, "usage")
        assert.include(text, "\"finish_reason\":\"stop\"")
      }))

    it.effect("a non-streaming request gets one chat.completion the SDK parses", () =>
      Effect.gen(function*() {
        fake.script({ kind: "reply", parts: [{ type: "tool_call", id: "call_z", name: "z", input: { q: "?" } }], stop: "tool_use", usage: { input: 9, output: 4 } })
        const done = yield* Effect.promise(() => sdk().chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }))
        assert.strictEqual(done.object, "chat.completion")
        assert.strictEqual(done.model, "gpt-x")
        assert.strictEqual(done.choices[0]?.finish_reason, "tool_calls")
        assert.isNull(done.choices[0]?.message.content ?? null)
        assert.deepStrictEqual(done.choices[0]?.message.tool_calls, [{ id: "call_z", type: "function", function: { name: "z", arguments: "{\"q\":\"?\"}" } }])
        assert.deepStrictEqual([done.usage?.prompt_tokens, done.usage?.completion_tokens], [9, 4])
        fake.script({ kind: "reply", parts: [{ type: "text", text: "plain" }], stop: "max_tokens" })
        const plain = yield* Effect.promise(() => sdk().chat.completions.create({ model: "gpt-x", messages: [] }))
        assert.deepStrictEqual([plain.choices[0]?.message.content, plain.choices[0]?.finish_reason], ["plain", "length"])
      }))

    it.effect("errors carry the service's body and retry-after, as the SDK exposes them", () =>
      Effect.gen(function*() {
        fake.script({ kind: "error", status: 429, retryAfter: 3 })
        const cause = yield* sdkFailure()
        assert.instanceOf(cause, OpenAI.RateLimitError)
        if (!(cause instanceof OpenAI.RateLimitError)) return
        assert.strictEqual(cause.code, "rate_limit_exceeded")
        assert.strictEqual(cause.type, "requests")
        assert.strictEqual(cause.headers.get("retry-after"), "3")
        assert.isString(cause.requestID)
        fake.script({ kind: "error", status: 400, contextOverflow: true })
        const overflow = yield* sdkFailure()
        assert.instanceOf(overflow, OpenAI.BadRequestError)
        assert.include(String(overflow), "maximum context length")
        assert.strictEqual(overflow instanceof OpenAI.APIError ? overflow.code : "", "context_length_exceeded")
        assert.strictEqual(overflow instanceof OpenAI.APIError ? overflow.param : "", "messages")
      }))
  })

  it.effect("a full round trip collects text, tool calls, usage and stop", () =>
    Effect.gen(function*() {
      fake.script({ kind: "reply", parts: [{ type: "text", text: "One sec." }, { type: "tool_call", id: "call_r", name: "r", input: { n: 1 } }], usage: { input: 20, output: 6 } })
      const r = yield* collectResponse(client().stream({ model: "m", messages: [{ role: "user", content: "go" }] }))
      assert.deepStrictEqual(r, {
        message: { role: "assistant", content: [{ type: "text", text: "One sec." }, { type: "tool_use", id: "call_r", name: "r", input: { n: 1 } }] },
        usage: { inputTokens: 20, outputTokens: 6, cacheReadTokens: 0, cacheWriteTokens: 0 },
        stopReason: "tool_use"
      })
    }))
})
