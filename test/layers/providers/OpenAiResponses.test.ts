import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Stream } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import OpenAI, { APIError } from "openai"
import { afterAll, beforeAll } from "vitest"
import type { ProviderError } from "../../../src/domain/model/errors.ts"
import type { ChatEvent, ChatRequest, ProviderConfig } from "../../../src/domain/model/types.ts"
import * as OpenAiResponses from "../../../src/layers/providers/OpenAiResponses.ts"
import { openAiResponsesProtocol, responseObject, sseFrame, streamEvents } from "../../support/fakeLlm/openaiResponses.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { fastTransport, providerContract } from "./contract.ts"

providerContract("openai-response", OpenAiResponses.make)

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
const noRetry = { ...fastTransport, maxRetries: 0 }

const configFor = (baseUrl: string, overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
  id: "oar",
  type: "openai-response",
  baseUrl,
  apiKey: "sk-test-key-123456",
  models: [],
  defaultModel: "gpt-default",
  headers: { "x-anna-test": "yes" },
  enabled: true,
  ...overrides
})

const ask = (request: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "gpt-test",
  messages: [{ role: "user", content: "Hi" }],
  ...request
})

/** A server that answers every request with the given body (tests of streams scripts cannot express). */
const rawServer = async () => {
  let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end()
  const server = createServer((req, res) => {
    req.resume()
    req.on("end", () => answer(req, res))
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    answer: (f: typeof answer) => {
      answer = f
    },
    sse: (frames: ReadonlyArray<string>) => {
      answer = (_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" })
        res.end(frames.join(""))
      }
    },
    close: () => new Promise<void>((done) => server.close(() => done()))
  }
}

const recorded = (body: unknown): RecordedRequest => ({ method: "POST", path: "/v1/responses", headers: {}, body, aborted: false })
const frame = (type: string, data: Record<string, unknown>, seq = 0): string => sseFrame({ type, sequence_number: seq, ...data })

describe("OpenAiResponses", () => {
  let fake: FakeLlm
  beforeAll(async () => {
    fake = await startFakeLlm()
  })
  afterAll(() => fake.close())

  const client = (overrides: Partial<ProviderConfig> = {}) => OpenAiResponses.make(configFor(fake.openAiUrl, overrides), noRetry)
  const send = (request: Partial<ChatRequest>, overrides: Partial<ProviderConfig> = {}) =>
    Effect.gen(function*() {
      yield* Stream.runDrain(client(overrides).stream(ask(request)))
      const last = fake.requests[fake.requests.length - 1]
      assert.isDefined(last)
      return last
    })

  describe("request mapping", () => {
    it.effect("maps a whole conversation to instructions, input items, tools and settings", () =>
      Effect.gen(function*() {
        const req = yield* send({
          system: "Be brief.",
          maxTokens: 500,
          temperature: 0.3,
          tools: [{
            name: "zoom",
            description: "Zooms in",
            inputSchema: { type: "object", properties: { factor: { type: "number" } }, required: ["factor"] }
          }],
          messages: [
            { role: "user", content: "Look at these." },
            {
              role: "user",
              content: [
                { type: "text", text: "What is this?" },
                { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
                { type: "image", source: { type: "url", url: "https://example.com/cat.png" } }
              ]
            },
            {
              role: "assistant",
              content: [
                { type: "text", text: "Let me zoom." },
                { type: "tool_use", id: "call_a", name: "zoom", input: { factor: 2 } },
                { type: "tool_use", id: "call_b", name: "zoom", input: { factor: 4 } }
              ]
            },
            { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "call_a", content: "zoomed 2x" }] },
            {
              role: "tool_result",
              content: [{ type: "tool_result", tool_use_id: "call_b", content: [{ type: "text", text: "too far" }], is_error: true }]
            },
            { role: "assistant", content: "It is a cat." },
            { role: "user", content: "Thanks!" }
          ]
        })
        assert.strictEqual(req.method, "POST")
        assert.strictEqual(req.path, "/v1/responses")
        assert.deepStrictEqual(req.body, {
          model: "gpt-test",
          instructions: "Be brief.",
          input: [
            { type: "message", role: "user", content: [{ type: "input_text", text: "Look at these." }] },
            {
              type: "message",
              role: "user",
              content: [
                { type: "input_text", text: "What is this?" },
                { type: "input_image", detail: "auto", image_url: `data:image/png;base64,${PNG}` },
                { type: "input_image", detail: "auto", image_url: "https://example.com/cat.png" }
              ]
            },
            { type: "message", role: "assistant", content: [{ type: "output_text", text: "Let me zoom.", annotations: [] }] },
            { type: "function_call", call_id: "call_a", name: "zoom", arguments: "{\"factor\":2}" },
            { type: "function_call", call_id: "call_b", name: "zoom", arguments: "{\"factor\":4}" },
            { type: "function_call_output", call_id: "call_a", output: "zoomed 2x" },
            { type: "function_call_output", call_id: "call_b", output: "Error: too far" },
            { type: "message", role: "assistant", content: [{ type: "output_text", text: "It is a cat.", annotations: [] }] },
            { type: "message", role: "user", content: [{ type: "input_text", text: "Thanks!" }] }
          ],
          tools: [{
            type: "function",
            name: "zoom",
            description: "Zooms in",
            parameters: { type: "object", properties: { factor: { type: "number" } }, required: ["factor"] },
            strict: false
          }],
          max_output_tokens: 500,
          temperature: 0.3,
          store: false,
          stream: true
        })
      }))

    it.effect("defaults: the provider's model, 4096 output tokens, nothing unasked, stateless", () =>
      Effect.gen(function*() {
        const req = yield* send({ model: "", system: "" })
        assert.deepStrictEqual(req.body, {
          model: "gpt-default",
          input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Hi" }] }],
          max_output_tokens: 4096,
          store: false,
          stream: true
        })
      }))

    it.effect("images a tool returned follow all the outputs of the turn, in a user message", () =>
      Effect.gen(function*() {
        const req = yield* send({
          messages: [
            { role: "user", content: "Take screenshots" },
            {
              role: "assistant",
              content: [
                { type: "tool_use", id: "call_s", name: "shot", input: {} },
                { type: "tool_use", id: "call_t", name: "shot", input: { page: 2 } }
              ]
            },
            {
              role: "tool_result",
              content: [
                {
                  type: "tool_result",
                  tool_use_id: "call_s",
                  content: [{ type: "text", text: "screen 1" }, { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "AAAA" } }]
                },
                { type: "tool_result", tool_use_id: "call_t", content: [{ type: "image", source: { type: "url", url: "https://x.test/2.png" } }] }
              ]
            },
            { role: "user", content: "Describe them" }
          ]
        })
        const body = req.body as { readonly input: ReadonlyArray<unknown> }
        assert.deepStrictEqual(body.input.slice(1), [
          { type: "function_call", call_id: "call_s", name: "shot", arguments: "{}" },
          { type: "function_call", call_id: "call_t", name: "shot", arguments: "{\"page\":2}" },
          { type: "function_call_output", call_id: "call_s", output: "screen 1" },
          { type: "function_call_output", call_id: "call_t", output: "(the images follow in the next message)" },
          {
            type: "message",
            role: "user",
            content: [
              { type: "input_text", text: "Images returned by tool call call_s:" },
              { type: "input_image", detail: "auto", image_url: "data:image/jpeg;base64,AAAA" },
              { type: "input_text", text: "Images returned by tool call call_t:" },
              { type: "input_image", detail: "auto", image_url: "https://x.test/2.png" }
            ]
          },
          { type: "message", role: "user", content: [{ type: "input_text", text: "Describe them" }] }
        ])
      }))

    it.effect("sends the key as a bearer token and the configured headers; a keyless provider sends no Authorization", () =>
      Effect.gen(function*() {
        const req = yield* send({})
        assert.strictEqual(req.headers["authorization"], "Bearer sk-test-key-123456")
        assert.strictEqual(req.headers["x-anna-test"], "yes")
        const keyless = yield* send({}, { apiKey: "" })
        assert.isUndefined(keyless.headers["authorization"])
        assert.strictEqual(keyless.headers["x-anna-test"], "yes")
      }))

    it.effect("takes nothing from the environment: OPENAI_ORG_ID and OPENAI_PROJECT_ID are not sent", () =>
      Effect.gen(function*() {
        const saved = { org: process.env.OPENAI_ORG_ID, project: process.env.OPENAI_PROJECT_ID }
        process.env.OPENAI_ORG_ID = "org-from-env"
        process.env.OPENAI_PROJECT_ID = "proj-from-env"
        const c = client()
        if (saved.org === undefined) delete process.env.OPENAI_ORG_ID
        else process.env.OPENAI_ORG_ID = saved.org
        if (saved.project === undefined) delete process.env.OPENAI_PROJECT_ID
        else process.env.OPENAI_PROJECT_ID = saved.project
        yield* Stream.runDrain(c.stream(ask()))
        const headers = fake.requests[fake.requests.length - 1]?.headers ?? {}
        assert.isUndefined(headers["openai-organization"])
        assert.isUndefined(headers["openai-project"])
      }))
  })

  describe("stream mapping", () => {
    it.effect("text, then tool calls numbered in order with their argument deltas, usage and stop", () =>
      Effect.gen(function*() {
        fake.script({
          kind: "reply",
          parts: [
            { type: "text", text: "On it." },
            { type: "tool_call", id: "call_1", name: "read", input: { path: "a" } },
            { type: "tool_call", id: "call_2", name: "list", input: {} }
          ],
          usage: { input: 40, output: 12 },
          chunk: 4
        })
        const events = yield* Stream.runCollect(client().stream(ask()))
        const shape = events.map((e) =>
          e.type === "text_delta"
            ? `text ${e.text}`
            : e.type === "tool_call_start"
            ? `start ${e.index} ${e.id} ${e.name}`
            : e.type === "tool_call_delta"
            ? `delta ${e.index} ${e.argumentsDelta}`
            : e.type === "tool_call_end"
            ? `end ${e.index} ${JSON.stringify(e.input)}`
            : e.type === "usage"
            ? `usage ${JSON.stringify(e.usage)}`
            : `stop ${e.reason}`
        )
        assert.deepStrictEqual(shape, [
          "text On i",
          "text t.",
          "start 0 call_1 read",
          "delta 0 {\"pa",
          "delta 0 th\":",
          "delta 0 \"a\"}",
          "end 0 {\"path\":\"a\"}",
          "start 1 call_2 list",
          "delta 1 {}",
          "end 1 {}",
          "usage {\"inputTokens\":40,\"outputTokens\":12,\"cacheReadTokens\":0,\"cacheWriteTokens\":0}",
          "stop tool_use"
        ])
      }))
  })

  describe("failures inside a 200 stream", () => {
    let raw: Awaited<ReturnType<typeof rawServer>>
    beforeAll(async () => {
      raw = await rawServer()
    })
    afterAll(() => raw.close())

    const head = (text: string): Array<string> => {
      const events = streamEvents(recorded({ model: "m" }), { parts: [{ type: "text", text }] })
      // Everything up to the last text delta: the answer has started when it fails.
      const lastDelta = events.map((e) => e.type).lastIndexOf("response.output_text.delta")
      return events.slice(0, lastDelta + 1).map(sseFrame)
    }
    const failed = (code: string | null, message: string) =>
      frame("response.failed", {
        response: responseObject(recorded({ model: "m" }), "resp_1", { status: "failed", error: code === null ? null : { code, message } })
      }, 90)
    const outcome = (frames: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        raw.sse(frames)
        const seen: Array<ChatEvent> = []
        const exit = yield* Effect.exit(
          Stream.runForEach(OpenAiResponses.make(configFor(raw.url), noRetry).stream(ask()), (e) => Effect.sync(() => seen.push(e)))
        )
        const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
        return { seen, error: error?._tag === "Fail" ? (error.error as ProviderError) : undefined }
      })

    it.effect("response.failed becomes the typed error its code means, after the text already streamed", () =>
      Effect.gen(function*() {
        const limited = yield* outcome([...head("Half an ans"), failed("rate_limit_exceeded", "Rate limit reached for gpt-test")])
        assert.strictEqual(limited.seen.map((e) => (e.type === "text_delta" ? e.text : "")).join(""), "Half an ans")
        assert.strictEqual(limited.error?._tag, "ProviderRateLimited")
        assert.include(limited.error?.message ?? "", "Rate limit reached for gpt-test")
        const server = yield* outcome([...head("x"), failed("server_error", "The model failed")])
        assert.strictEqual(server.error?._tag, "ProviderServerError")
        const overflow = yield* outcome([...head("x"), failed("context_length_exceeded", "Your input exceeds the context window of this model.")])
        assert.strictEqual(overflow.error?._tag, "ContextOverflow")
        const image = yield* outcome([...head("x"), failed("invalid_image_url", "Could not download the image")])
        assert.strictEqual(image.error?._tag, "InvalidRequest")
        const bare = yield* outcome([...head("x"), failed(null, "")])
        assert.strictEqual(bare.error?._tag, "ProviderServerError")
      }))

    it.effect("an `event: error` frame (the SDK throws it) is classified by its code", () =>
      Effect.gen(function*() {
        const r = yield* outcome([
          ...head("partial"),
          frame("error", { code: "server_error", message: "An error occurred while processing your request.", param: null }, 50)
        ])
        assert.strictEqual(r.error?._tag, "ProviderServerError")
        assert.include(r.error?.message ?? "", "An error occurred while processing your request.")
      }))

    it.effect("a stream that ends without its final event is a network error, not a short answer", () =>
      Effect.gen(function*() {
        const r = yield* outcome(head("cut here"))
        assert.strictEqual(r.error?._tag, "ProviderNetworkError")
        assert.include(r.error?.message ?? "", "before response.completed")
      }))

    it.effect("an event of ours with the wrong shape, or data that is not JSON, is a server error", () =>
      Effect.gen(function*() {
        const bad = yield* outcome([...head("x"), frame("response.output_item.added", { output_index: "one", item: {} }, 9)])
        assert.strictEqual(bad.error?._tag, "ProviderServerError")
        assert.include(bad.error?.message ?? "", "malformed")
        const notJson = yield* outcome([...head("x"), "event: response.output_text.delta\ndata: {nope\n\n"])
        assert.strictEqual(notJson.error?._tag, "ProviderServerError")
      }))

    it.effect("compatible servers: whole arguments without deltas, repeated events, cached tokens, refusals, content filter", () =>
      Effect.gen(function*() {
        const call = { type: "function_call", id: "fc_1", call_id: "call_w", name: "get" }
        const usage = {
          input_tokens: 100,
          output_tokens: 9,
          total_tokens: 109,
          input_tokens_details: { cached_tokens: 64, cache_write_tokens: 4 },
          output_tokens_details: { reasoning_tokens: 0 }
        }
        const whole = yield* outcome([
          frame("response.output_item.added", { output_index: 0, item: { ...call, status: "in_progress", arguments: "" } }, 0),
          frame("response.function_call_arguments.done", { item_id: "fc_1", output_index: 0, arguments: "{\"k\":1}" }, 1),
          frame("response.output_item.done", { output_index: 0, item: { ...call, status: "completed", arguments: "{\"k\":1}" } }, 2),
          // A repeated done event does not make a second call.
          frame("response.output_item.done", { output_index: 0, item: { ...call, status: "completed", arguments: "{\"k\":1}" } }, 2),
          frame("response.completed", { response: { status: "completed", usage } }, 3)
        ])
        assert.isUndefined(whole.error)
        assert.deepStrictEqual(whole.seen, [
          { type: "tool_call_start", index: 0, id: "call_w", name: "get" },
          { type: "tool_call_delta", index: 0, argumentsDelta: "{\"k\":1}" },
          { type: "tool_call_end", index: 0, id: "call_w", name: "get", input: { k: 1 } },
          { type: "usage", usage: { inputTokens: 100, outputTokens: 9, cacheReadTokens: 64, cacheWriteTokens: 4 } },
          { type: "stop", reason: "tool_use" }
        ])
        const refusal = yield* outcome([
          frame("response.refusal.delta", { item_id: "msg_1", output_index: 0, content_index: 0, delta: "I can't help with that." }, 0),
          frame("response.completed", { response: { status: "completed", usage: null } }, 1),
          // Nothing counts after the final event.
          frame("response.output_text.delta", { item_id: "msg_1", output_index: 0, content_index: 0, delta: "late" }, 2)
        ])
        assert.deepStrictEqual(refusal.seen, [{ type: "text_delta", text: "I can't help with that." }, { type: "stop", reason: "refusal" }])
        const filtered = yield* outcome([frame("response.incomplete", { response: { incomplete_details: { reason: "content_filter" } } }, 0)])
        assert.deepStrictEqual(filtered.seen, [{ type: "stop", reason: "refusal" }])
      }))
  })

  describe("the fake Responses server, read by the real SDK", () => {
    const sdk = () => new OpenAI({ apiKey: "sk-x", baseURL: fake.openAiUrl, maxRetries: 0 })
    const sdkError = (run: () => Promise<unknown>) =>
      Effect.tryPromise({ try: run, catch: (e) => e }).pipe(
        Effect.flip,
        Effect.map((e) => {
          assert.instanceOf(e, APIError)
          return e as APIError
        })
      )

    it.effect("without stream: true it answers one response object (output, output_text, usage)", () =>
      Effect.gen(function*() {
        fake.script({
          kind: "reply",
          parts: [{ type: "text", text: "Hello there" }, { type: "tool_call", id: "call_9", name: "f", input: { a: [1] } }],
          usage: { input: 3, output: 4 }
        })
        const r = yield* Effect.promise(() => sdk().responses.create({ model: "gpt-test", input: "hi" }))
        assert.strictEqual(r.object, "response")
        assert.strictEqual(r.status, "completed")
        assert.strictEqual(r.output_text, "Hello there")
        assert.deepStrictEqual(r.output.map((o) => o.type), ["message", "function_call"])
        const fc = r.output[1]
        assert.deepStrictEqual(fc?.type === "function_call" ? [fc.call_id, fc.name, JSON.parse(fc.arguments)] : [], ["call_9", "f", { a: [1] }])
        assert.deepStrictEqual([r.usage?.input_tokens, r.usage?.output_tokens, r.usage?.total_tokens], [3, 4, 7])
      }))

    it.effect("its stream passes the SDK's own ResponseStream checks and accumulates to the final response", () =>
      Effect.gen(function*() {
        fake.script({ kind: "reply", parts: [{ type: "text", text: "abcdefghij" }, { type: "tool_call", id: "c1", name: "t", input: {} }], chunk: 5 })
        const stream = sdk().responses.stream({ model: "gpt-test", input: "hi" })
        const types: Array<string> = []
        const sequence: Array<number> = []
        stream.on("event", (e) => {
          types.push(e.type)
          sequence.push(e.sequence_number)
        })
        const final = yield* Effect.promise(() => stream.finalResponse())
        assert.deepStrictEqual(types, [
          "response.created",
          "response.in_progress",
          "response.output_item.added",
          "response.content_part.added",
          "response.output_text.delta",
          "response.output_text.delta",
          "response.output_text.done",
          "response.content_part.done",
          "response.output_item.done",
          "response.output_item.added",
          "response.function_call_arguments.delta",
          "response.function_call_arguments.done",
          "response.output_item.done",
          "response.completed"
        ])
        assert.deepStrictEqual(sequence, types.map((_, i) => i))
        assert.strictEqual(final.output_text, "abcdefghij")
        assert.strictEqual(final.status, "completed")
      }))

    it.effect("frames every event as `event: <type>` with the same type in its data, and sends no [DONE]", () =>
      Effect.gen(function*() {
        fake.script({ kind: "reply", parts: [{ type: "text", text: "cut" }], stop: "max_tokens" })
        const res = yield* Effect.promise(() =>
          fetch(`${fake.openAiUrl}/responses`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ model: "gpt-test", input: "hi", stream: true, max_output_tokens: 16 })
          })
        )
        assert.strictEqual(res.headers.get("content-type"), "text/event-stream; charset=utf-8")
        const text = yield* Effect.promise(() => res.text())
        assert.notInclude(text, "[DONE]")
        const blocks = text.split("\n\n").filter((b) => b !== "")
        for (const block of blocks) {
          const [event, data] = block.split("\n")
          const name = event?.replace(/^event: /, "")
          assert.strictEqual(JSON.parse(data?.replace(/^data: /, "") ?? "null").type, name)
        }
        const last = JSON.parse(blocks[blocks.length - 1]?.split("\n")[1]?.slice(6) ?? "null")
        assert.strictEqual(last.type, "response.incomplete")
        assert.deepStrictEqual(last.response.incomplete_details, { reason: "max_output_tokens" })
        assert.strictEqual(last.response.max_output_tokens, 16)
        assert.strictEqual(last.response.output[0].status, "incomplete")
      }))

    it.effect("error bodies carry the service's message, type, param and code; retry-after when asked", () =>
      Effect.gen(function*() {
        fake.script({ kind: "error", status: 400, contextOverflow: true })
        const overflow = yield* sdkError(() => sdk().responses.create({ model: "gpt-test", input: "hi" }))
        assert.deepStrictEqual([overflow.status, overflow.code, overflow.type, overflow.param], [400, "context_length_exceeded", "invalid_request_error", "input"])
        assert.include(overflow.message, "exceeds the context window")
        fake.script({ kind: "error", status: 429, retryAfter: 3 })
        const limited = yield* sdkError(() => sdk().responses.create({ model: "gpt-test", input: "hi" }))
        assert.deepStrictEqual([limited.status, limited.code, limited.headers?.get("retry-after")], [429, "rate_limit_exceeded", "3"])
        fake.script({ kind: "error", status: 503 })
        const down = yield* sdkError(() => sdk().responses.create({ model: "gpt-test", input: "hi" }))
        assert.deepStrictEqual([down.status, down.type], [503, "server_error"])
        assert.isString(down.headers?.get("x-request-id"))
      }))

    it.effect("rejects the input the real service rejects", () =>
      Effect.gen(function*() {
        const orphan = yield* sdkError(() =>
          sdk().responses.create({ model: "gpt-test", input: [{ type: "function_call_output", call_id: "call_z", output: "x" }] })
        )
        assert.deepStrictEqual([orphan.status, orphan.message], [400, "400 No tool call found for function call output with call_id call_z."])
        const unanswered = yield* sdkError(() =>
          sdk().responses.create({ model: "gpt-test", input: [{ type: "function_call", call_id: "call_q", name: "f", arguments: "{}" }] })
        )
        assert.deepStrictEqual([unanswered.status, unanswered.message], [400, "400 No tool output found for function call call_q."])
        const stored = yield* sdkError(() =>
          sdk().responses.create({
            model: "gpt-test",
            store: false,
            input: [{ id: "msg_1", type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "x", annotations: [] }] }]
          })
        )
        assert.strictEqual(stored.status, 404)
        assert.include(stored.message, "Items are not persisted when `store` is set to false")
        const noModel = yield* sdkError(() => sdk().responses.create({ input: "hi" }))
        assert.deepStrictEqual([noModel.status, noModel.code, noModel.param], [400, "missing_required_parameter", "model"])
      }))

    it.effect("disconnect: exactly the first N events arrive, then the connection breaks", () =>
      Effect.gen(function*() {
        fake.script({ kind: "disconnect", parts: [{ type: "text", text: "a long answer that will not finish" }], afterEvents: 4 })
        const types: Array<string> = []
        const exit = yield* Effect.exit(Effect.tryPromise(async () => {
          const stream = await sdk().responses.create({ model: "gpt-test", input: "hi", stream: true })
          for await (const e of stream) types.push(e.type)
        }))
        assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual(types, ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"])
      }))

    it.effect("lists models in OpenAI's format", () =>
      Effect.gen(function*() {
        const raw = yield* Effect.promise(() => rawServer())
        raw.answer((_req, res) => openAiResponsesProtocol.listModels(["m-1", "m-2"], res))
        const page = yield* Effect.promise(() => new OpenAI({ apiKey: "k", baseURL: raw.url }).models.list())
        yield* Effect.promise(() => raw.close())
        assert.strictEqual(page.object, "list")
        assert.deepStrictEqual(page.data.map((m) => [m.id, m.object, m.owned_by, typeof m.created]), [
          ["m-1", "model", "system", "number"],
          ["m-2", "model", "system", "number"]
        ])
      }))
  })

  it.effect("listModels gives ids with their creation time in milliseconds", () =>
    Effect.gen(function*() {
      fake.models = ["gpt-a", "gpt-b"]
      const models = yield* client().listModels
      assert.deepStrictEqual(models.map((m) => m.id), ["gpt-a", "gpt-b"])
      for (const m of models) assert.isAbove(m.createdAt ?? 0, 1_000_000_000_000)
    }))
})
