/**
 * AnthropicMessages: the shared provider contract, then what is Anthropic's own — the exact request
 * body, stream mapping, errors inside the stream, paging of the model list — through the real SDK
 * against the fake server on 127.0.0.1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { createServer as createHttpServer } from "node:http"
import { type AddressInfo, createServer } from "node:net"
import { afterAll, beforeAll } from "vitest"
import type { ChatEvent, ChatRequest, ProviderConfig, TransportOptions } from "../../../src/domain/model/types.ts"
import * as AnthropicMessages from "../../../src/layers/providers/AnthropicMessages.ts"
import { MISSING_RESULT } from "../../../src/layers/providers/anthropicRequest.ts"
import { collectResponse } from "../../../src/domain/model/collect.ts"
import { ChatModel } from "../../../src/services/ChatModel.ts"
import { streamError } from "../../support/fakeLlm/anthropic.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { fastTransport, providerContract } from "./contract.ts"

providerContract("anthropic", AnthropicMessages.make, { temperature: "dropped" })

const noRetry: TransportOptions = { ...fastTransport, maxRetries: 0 }

describe("AnthropicMessages on the wire", () => {
  let fake: FakeLlm
  beforeAll(async () => {
    fake = await startFakeLlm()
  })
  afterAll(() => fake.close())

  const config = (overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
    id: "claude",
    type: "anthropic",
    baseUrl: fake.url,
    apiKey: "sk-ant-test-0001",
    models: [],
    defaultModel: "claude-default",
    headers: {},
    enabled: true,
    ...overrides
  })
  const ask = (req: Partial<ChatRequest> = {}): ChatRequest => ({ model: "claude-x", messages: [{ role: "user", content: "Hi" }], ...req })
  const events = (req: Partial<ChatRequest> = {}, overrides: Partial<ProviderConfig> = {}, transport = fastTransport) =>
    Effect.suspend(() => Stream.runCollect(AnthropicMessages.make(config(overrides), transport).stream(ask(req))))
  const collect = (req: Partial<ChatRequest> = {}, overrides: Partial<ProviderConfig> = {}) =>
    Effect.suspend(() => collectResponse(AnthropicMessages.make(config(overrides), fastTransport).stream(ask(req))))
  const last = () => {
    const r = fake.requests[fake.requests.length - 1]
    if (r === undefined) throw new Error("no request recorded")
    return { ...r, body: r.body as Record<string, unknown> }
  }

  it.effect("sends a minimal request exactly, with the key as a bearer token", () =>
    Effect.gen(function*() {
      yield* events()
      const r = last()
      assert.strictEqual(r.path, "/v1/messages")
      assert.deepStrictEqual(r.body, { model: "claude-x", max_tokens: 4096, messages: [{ role: "user", content: "Hi" }], stream: true })
      assert.strictEqual(r.headers["authorization"], "Bearer sk-ant-test-0001")
      assert.strictEqual(r.headers["anthropic-version"], "2026-10-21")
    }))

  it.effect("sends system, tools and max tokens in the API's shape, and temperature only where the version takes it", () =>
    Effect.gen(function*() {
      const tools = [
        { name: "read", description: "Reads a file", inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
        { name: "now", description: "", inputSchema: {} }
      ]
      yield* events({ system: "Be brief.", maxTokens: 100, temperature: 0.3, tools })
      const body = last().body
      assert.strictEqual(body["system"], "Be brief.")
      assert.strictEqual(body["max_tokens"], 100)
      assert.notProperty(body, "temperature")
      assert.deepStrictEqual(body["tools"], [
        { name: "read", description: "Reads a file", input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
        { name: "now", input_schema: { type: "object" } }
      ])
      // A provider pinned to the older API version (e.g. a compatible server) gets temperature; the
      // pinned header replaces the SDK's own.
      yield* events({ temperature: 0.3 }, { headers: { "anthropic-version": "2023-06-01" } })
      assert.strictEqual(last().body["temperature"], 0.3)
      assert.strictEqual(last().headers["anthropic-version"], "2023-06-01")
    }))

  it.effect("sends a conversation with tool calls and images as alternating turns, results first", () =>
    Effect.gen(function*() {
      yield* events({
        messages: [
          { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] },
          { role: "assistant", content: [{ type: "text", text: "Let me look." }, { type: "tool_use", id: "toolu_a", name: "zoom", input: { factor: 2 } }, { type: "tool_use", id: "toolu_b", name: "ocr", input: {} }] },
          { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "toolu_a", content: "zoomed" }] },
          { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "toolu_b", content: [{ type: "text", text: "no text" }], is_error: true }] },
          { role: "user", content: [{ type: "image", source: { type: "url", url: "https://example.com/cat.png" } }] }
        ]
      })
      assert.deepStrictEqual(last().body["messages"], [
        { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] },
        { role: "assistant", content: [{ type: "text", text: "Let me look." }, { type: "tool_use", id: "toolu_a", name: "zoom", input: { factor: 2 } }, { type: "tool_use", id: "toolu_b", name: "ocr", input: {} }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_a", content: "zoomed" },
            { type: "tool_result", tool_use_id: "toolu_b", content: [{ type: "text", text: "no text" }], is_error: true },
            { type: "image", source: { type: "url", url: "https://example.com/cat.png" } }
          ]
        }
      ])
    }))

  it.effect("repairs an interrupted turn so the service accepts the history", () =>
    Effect.gen(function*() {
      const r = yield* collect({
        messages: [
          { role: "user", content: "Run both" },
          { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "bash", input: { cmd: "ls" } }, { type: "tool_use", id: "toolu_2", name: "bash", input: { cmd: "pwd" } }] },
          { role: "user", content: "never mind" },
          { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "a.txt" }] }
        ]
      })
      assert.deepStrictEqual(r.message.content, [{ type: "text", text: "ok" }], "the fake, which checks pairing as the service does, answered")
      assert.deepStrictEqual((last().body["messages"] as ReadonlyArray<unknown>)[2], {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "a.txt" },
          { type: "tool_result", tool_use_id: "toolu_2", content: MISSING_RESULT, is_error: true },
          { type: "text", text: "never mind" }
        ]
      })
    }))

  it.effect("streams usage from message_start and message_delta, fragments in order, one stop", () =>
    Effect.gen(function*() {
      fake.script({
        kind: "reply",
        parts: [{ type: "text", text: "Reading both." }, { type: "tool_call", id: "toolu_r", name: "read", input: { path: "a.txt", n: [1, 2] } }],
        usage: { input: 42, output: 17 },
        chunk: 3
      })
      const out = yield* events()
      assert.deepStrictEqual(out[0], { type: "usage", usage: { inputTokens: 42, cacheReadTokens: 0, cacheWriteTokens: 0 } })
      const text = out.flatMap((e) => (e.type === "text_delta" ? [e.text] : []))
      assert.deepStrictEqual(text, ["Rea", "din", "g b", "oth", "."])
      const args = out.flatMap((e) => (e.type === "tool_call_delta" ? [e.argumentsDelta] : []))
      assert.isAtLeast(args.length, 5)
      assert.isTrue(args.every((a) => a !== ""), "the service's empty opening fragment is not passed on")
      assert.strictEqual(args.join(""), JSON.stringify({ path: "a.txt", n: [1, 2] }))
      assert.deepStrictEqual(out.slice(-3), [
        { type: "tool_call_end", index: 0, id: "toolu_r", name: "read", input: { path: "a.txt", n: [1, 2] } },
        { type: "usage", usage: { outputTokens: 17 } },
        { type: "stop", reason: "tool_use" }
      ] satisfies ReadonlyArray<ChatEvent>)
    }))

  it.effect("fails on an overloaded_error inside the stream as a server error, without retrying it", () =>
    Effect.gen(function*() {
      fake.script(streamError(529, "Overloaded"))
      const before = fake.requests.length
      const error = yield* Effect.flip(events())
      assert.strictEqual(error._tag, "ProviderServerError")
      assert.strictEqual(error._tag === "ProviderServerError" ? error.status : 0, 529)
      assert.include(error.message, "Overloaded")
      assert.strictEqual(fake.requests.length - before, 1)
    }))

  it.effect("keeps the service's status and wording in HTTP errors", () =>
    Effect.gen(function*() {
      const fail = (status: number, extra: { message?: string; contextOverflow?: boolean; retryAfter?: number } = {}) =>
        Effect.suspend(() => {
          fake.script({ kind: "error", status, ...extra })
          return Effect.flip(events({}, {}, noRetry))
        })
      const overloaded = yield* fail(529)
      assert.deepInclude(overloaded, { _tag: "ProviderServerError", status: 529, detail: "Overloaded" })
      const overflow = yield* fail(400, { contextOverflow: true })
      assert.strictEqual(overflow._tag, "ContextOverflow")
      assert.match(overflow.message, /prompt is too long: \d+ tokens > 200000 maximum/)
      assert.deepInclude(yield* fail(401), { _tag: "ProviderAuthError", detail: "invalid x-api-key" })
      assert.deepInclude(yield* fail(429, { retryAfter: 2 }), { _tag: "ProviderRateLimited", retryAfterMs: 2000 })
      assert.deepInclude(yield* fail(404, { message: "model: claude-x" }), { _tag: "InvalidRequest", status: 404, detail: "model: claude-x" })
    }))

  /** A port nothing listens on (taken, then released). */
  const closedPort = () =>
    new Promise<number>((done) => {
      const server = createServer()
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        server.close(() => done(port))
      })
    })

  it.effect("says why a connection failed", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(closedPort)
      const error = yield* Effect.flip(events({}, { baseUrl: `http://127.0.0.1:${port}` }, noRetry))
      assert.strictEqual(error._tag, "ProviderNetworkError")
      assert.include(error.message, "ECONNREFUSED")
    }))

  it.effect("takes an empty base URL as the public endpoint, never ANTHROPIC_BASE_URL", () =>
    Effect.gen(function*() {
      const before = fake.requests.length
      const saved = process.env["ANTHROPIC_BASE_URL"]
      process.env["ANTHROPIC_BASE_URL"] = fake.url
      const exit = yield* Effect.exit(events({}, { baseUrl: "" }, { ...noRetry, timeoutMs: 1_500 })).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (saved === undefined) delete process.env["ANTHROPIC_BASE_URL"]
          else process.env["ANTHROPIC_BASE_URL"] = saved
        }))
      )
      assert.strictEqual(exit._tag, "Failure", "api.anthropic.com is out of reach here")
      assert.strictEqual(fake.requests.length, before, "the fake named by the environment was not called")
    }))

  it.effect("lists the models of every page", () =>
    Effect.gen(function*() {
      fake.models = Array.from({ length: 1005 }, (_, i) => `claude-test-${String(i).padStart(4, "0")}`)
      const before = fake.requests.length
      const models = yield* AnthropicMessages.make(config(), fastTransport).listModels
      assert.strictEqual(models.length, 1005)
      assert.strictEqual(new Set(models.map((m) => m.id)).size, 1005)
      assert.deepStrictEqual(models[0], { id: "claude-test-0000", displayName: "Claude Test 0000", createdAt: Date.UTC(2026, 9, 21) })
      assert.strictEqual(fake.requests.length - before, 2, "two pages of at most 1000")
    }))

  it.effect("lists what a compatible server gives with ids only, skipping entries without one", () =>
    Effect.gen(function*() {
      const server = createHttpServer((_req, res) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ data: [{ id: "local-model" }, { name: "no id" }], has_more: false }))
      })
      const port = yield* Effect.promise(() => new Promise<number>((done) => server.listen(0, "127.0.0.1", () => done((server.address() as AddressInfo).port))))
      const models = yield* AnthropicMessages.make(config({ baseUrl: `http://127.0.0.1:${port}` }), noRetry).listModels.pipe(
        Effect.ensuring(Effect.promise(() => new Promise<void>((done) => server.close(() => done()))))
      )
      assert.deepStrictEqual(models, [{ id: "local-model" }])
    }))

  it.effect("provides the client as the ChatModel service", () =>
    Effect.gen(function*() {
      const model = yield* ChatModel
      assert.deepStrictEqual([model.provider, model.type, model.defaultModel], ["claude", "anthropic", "claude-default"])
      const r = yield* collectResponse(model.stream(ask({ model: "" })))
      assert.deepStrictEqual(r.message.content, [{ type: "text", text: "ok" }])
      assert.strictEqual(last().body["model"], "claude-default")
    }).pipe(Effect.provide(AnthropicMessages.layer(config(), fastTransport))))
})
