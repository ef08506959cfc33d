/**
 * The provider contract: every ChatModel layer, through its official SDK, against the fake LLM
 * server speaking that provider's protocol. Each layer's test file calls `providerContract`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Stream } from "effect"
import { createServer, type AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type { ChatEvent, ChatRequest, ProviderConfig, ProviderType, TransportOptions } from "../../../src/domain/model/types.ts"
import { collectResponse } from "../../../src/domain/model/collect.ts"
import type { ChatModelClient } from "../../../src/services/ChatModel.ts"
import type { Scripted } from "../../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"

export const fastTransport: TransportOptions = { timeoutMs: 5_000, maxRetries: 3, baseBackoffMs: 5, maxBackoffMs: 2_000 }

const PNG_1PX =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

/** What the contract checks differently for one provider. */
export interface ContractOptions {
  /**
   * "dropped" for an API that refuses sampling parameters: Anthropic's API version 2026-10-21 (the
   * one its SDK 1.x sends) answers 400 "temperature: Extra inputs are not permitted", so that layer
   * must not send the request's temperature. Default "sent".
   */
  readonly temperature?: "sent" | "dropped"
}

export const providerContract = (
  type: ProviderType,
  make: (config: ProviderConfig, transport: TransportOptions) => ChatModelClient,
  options: ContractOptions = {}
) =>
  describe(`provider contract: ${type}`, () => {
    let fake: FakeLlm
    let closedPort = 0
    beforeAll(async () => {
      fake = await startFakeLlm()
      // A port that was just bound and released: connecting to it is refused.
      closedPort = await new Promise<number>((done) => {
        const probe = createServer()
        probe.listen(0, "127.0.0.1", () => {
          const { port } = probe.address() as AddressInfo
          probe.close(() => done(port))
        })
      })
    })
    afterAll(() => fake.close())
    // One test's leftover scripted answers must never reach the next.
    beforeEach(() => fake.reset())

    const config = (overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
      id: `test-${type}`,
      type,
      baseUrl: type === "anthropic" ? fake.url : fake.openAiUrl,
      apiKey: "sk-test-key-123456",
      models: [],
      defaultModel: "fake-large",
      headers: { "x-anna-test": "yes" },
      enabled: true,
      ...overrides
    })
    const client = (overrides: Partial<ProviderConfig> = {}, transport: TransportOptions = fastTransport) =>
      make(config(overrides), transport)
    const ask = (req: Partial<ChatRequest> = {}): ChatRequest => ({
      model: "fake-large",
      messages: [{ role: "user", content: "Hello?" }],
      ...req
    })
    const run = (scripted: ReadonlyArray<Scripted>, req: Partial<ChatRequest> = {}, c = client()) =>
      Effect.suspend(() => {
        fake.script(...scripted)
        return Stream.runCollect(c.stream(ask(req)))
      })
    const lastBody = () => JSON.stringify(fake.requests[fake.requests.length - 1]?.body ?? null)

    it.effect("streams text in several deltas and collects it with usage and stop reason", () =>
      Effect.gen(function*() {
        fake.script({ kind: "reply", parts: [{ type: "text", text: "Hello there, friend." }], usage: { input: 11, output: 7 }, chunk: 4 })
        const events = yield* Stream.runCollect(client().stream(ask()))
        const deltas = events.filter((e) => e.type === "text_delta")
        assert.isAtLeast(deltas.length, 3)
        fake.script({ kind: "reply", parts: [{ type: "text", text: "Hello there, friend." }], usage: { input: 11, output: 7 } })
        const r = yield* collectResponse(client().stream(ask()))
        assert.deepStrictEqual(r.message, { role: "assistant", content: [{ type: "text", text: "Hello there, friend." }] })
        assert.strictEqual(r.usage.inputTokens, 11)
        assert.strictEqual(r.usage.outputTokens, 7)
        assert.strictEqual(r.stopReason, "end_turn")
      }))

    it.effect("sends model, system, tools, max tokens, temperature, key and extra headers", () =>
      Effect.gen(function*() {
        yield* run([], {
          model: "fake-small",
          system: "You are terse.",
          maxTokens: 321,
          temperature: 0.25,
          tools: [{ name: "lookup_weather", description: "Weather", inputSchema: { type: "object", properties: { city: { type: "string" } } } }]
        })
        const req = fake.requests[fake.requests.length - 1]
        const body = lastBody()
        const dropsTemperature = options.temperature === "dropped"
        for (const needle of ["fake-small", "You are terse.", "321", ...(dropsTemperature ? [] : ["0.25"]), "lookup_weather", "city"]) {
          assert.include(body, needle)
        }
        if (dropsTemperature) assert.notInclude(body, "temperature")
        assert.include(JSON.stringify(req?.headers ?? {}), "sk-test-key-123456")
        assert.strictEqual(req?.headers["x-anna-test"], "yes")
        yield* run([], { model: "" })
        assert.include(lastBody(), "fake-large", "an empty model means the provider's default model")
      }))

    it.effect("round-trips a conversation with tool calls, tool results and images", () =>
      Effect.gen(function*() {
        yield* run([], {
          messages: [
            { role: "user", content: [{ type: "text", text: "What is in this picture?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1PX } }] },
            { role: "assistant", content: [{ type: "text", text: "Let me check." }, { type: "tool_use", id: "call_a", name: "zoom", input: { factor: 2 } }, { type: "tool_use", id: "call_b", name: "ocr", input: {} }] },
            { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "call_a", content: "zoomed in" }] },
            { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "call_b", content: [{ type: "text", text: "no text found" }], is_error: true }] },
            { role: "user", content: [{ type: "image", source: { type: "url", url: "https://example.com/cat.png" } }] }
          ]
        })
        const body = lastBody()
        for (const needle of [PNG_1PX, "call_a", "call_b", "zoomed in", "no text found", "zoom", "factor", "https://example.com/cat.png"]) {
          assert.include(body, needle)
        }
      }))

    it.effect("streams a single tool call with incremental arguments", () =>
      Effect.gen(function*() {
        const events = yield* run([{ kind: "reply", parts: [{ type: "tool_call", id: "call_1", name: "get_weather", input: { city: "Paris", unit: "c" } }], chunk: 5 }])
        const starts = events.filter((e) => e.type === "tool_call_start")
        const argDeltas = events.filter((e) => e.type === "tool_call_delta")
        const ends = events.filter((e): e is Extract<ChatEvent, { type: "tool_call_end" }> => e.type === "tool_call_end")
        assert.strictEqual(starts.length, 1)
        assert.isAtLeast(argDeltas.length, 2)
        assert.deepStrictEqual(ends.map((e) => [e.id, e.name, e.input]), [["call_1", "get_weather", { city: "Paris", unit: "c" }]])
        fake.script({ kind: "reply", parts: [{ type: "tool_call", id: "call_1", name: "get_weather", input: { city: "Paris" } }] })
        const r = yield* collectResponse(client().stream(ask()))
        assert.deepStrictEqual(r.message.content, [{ type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } }])
        assert.strictEqual(r.stopReason, "tool_use")
      }))

    it.effect("streams text and several parallel tool calls in order", () =>
      Effect.gen(function*() {
        fake.script({
          kind: "reply",
          parts: [
            { type: "text", text: "Checking both." },
            { type: "tool_call", id: "call_x", name: "read", input: { path: "a.txt" } },
            { type: "tool_call", id: "call_y", name: "read", input: { path: "b.txt", lines: [1, 2] } }
          ]
        })
        const r = yield* collectResponse(client().stream(ask()))
        assert.deepStrictEqual(r.message.content, [
          { type: "text", text: "Checking both." },
          { type: "tool_use", id: "call_x", name: "read", input: { path: "a.txt" } },
          { type: "tool_use", id: "call_y", name: "read", input: { path: "b.txt", lines: [1, 2] } }
        ])
        assert.strictEqual(r.stopReason, "tool_use")
      }))

    it.effect("reports max_tokens as the stop reason", () =>
      Effect.gen(function*() {
        fake.script({ kind: "reply", parts: [{ type: "text", text: "cut" }], stop: "max_tokens" })
        const r = yield* collectResponse(client().stream(ask()))
        assert.strictEqual(r.stopReason, "max_tokens")
      }))

    const failure = (scripted: Scripted, c = client({}, { ...fastTransport, maxRetries: 0 })) =>
      run([scripted], {}, c).pipe(Effect.flip)

    it.effect("maps each HTTP failure to its typed error", () =>
      Effect.gen(function*() {
        assert.strictEqual((yield* failure({ kind: "error", status: 401, message: "invalid x-api-key" }))._tag, "ProviderAuthError")
        assert.strictEqual((yield* failure({ kind: "error", status: 403, message: "forbidden" }))._tag, "ProviderAuthError")
        const limited = yield* failure({ kind: "error", status: 429, message: "slow down", retryAfter: 7 })
        assert.strictEqual(limited._tag, "ProviderRateLimited")
        assert.strictEqual(limited._tag === "ProviderRateLimited" ? limited.retryAfterMs : -1, 7000)
        assert.strictEqual((yield* failure({ kind: "error", status: 400, contextOverflow: true }))._tag, "ContextOverflow")
        assert.strictEqual((yield* failure({ kind: "error", status: 400, message: "bad temperature" }))._tag, "InvalidRequest")
        assert.strictEqual((yield* failure({ kind: "error", status: 404, message: "no such model" }))._tag, "InvalidRequest")
        assert.strictEqual((yield* failure({ kind: "error", status: 500, message: "boom" }))._tag, "ProviderServerError")
        assert.strictEqual((yield* failure({ kind: "error", status: 503, message: "overloaded" }))._tag, "ProviderServerError")
        const timeout = yield* failure({ kind: "hang" }, client({}, { ...fastTransport, maxRetries: 0, timeoutMs: 300 }))
        assert.strictEqual(timeout._tag, "ProviderNetworkError")
        assert.isTrue(timeout._tag === "ProviderNetworkError" && timeout.timeout)
        const refused = yield* Stream.runCollect(
          make({ ...config(), baseUrl: type === "anthropic" ? `http://127.0.0.1:${closedPort}` : `http://127.0.0.1:${closedPort}/v1` }, { ...fastTransport, maxRetries: 0 })
            .stream(ask())
        ).pipe(Effect.flip)
        assert.strictEqual(refused._tag, "ProviderNetworkError")
      }))

    // Live clock: the backoff waits are real (a few milliseconds with fastTransport).
    it.live("retries 429 and 5xx with backoff, honouring retry-after, then succeeds", () =>
      Effect.gen(function*() {
        const before = fake.requests.length
        const r = yield* run([
          { kind: "error", status: 429, retryAfter: 0, message: "busy" },
          { kind: "error", status: 500, message: "oops" },
          { kind: "error", status: 503, message: "overloaded" },
          { kind: "reply", parts: [{ type: "text", text: "finally" }] }
        ])
        assert.strictEqual(fake.requests.length - before, 4)
        assert.deepStrictEqual(r.filter((e) => e.type === "text_delta").map((e) => (e.type === "text_delta" ? e.text : "")).join(""), "finally")
        // Bounded: with two retries allowed, a third failure is final.
        const gaveUp = yield* run(
          [{ kind: "error", status: 500 }, { kind: "error", status: 500 }, { kind: "error", status: 500 }, { kind: "error", status: 500 }],
          {},
          client({}, { ...fastTransport, maxRetries: 2 })
        ).pipe(Effect.flip)
        assert.strictEqual(gaveUp._tag, "ProviderServerError")
        fake.script({ kind: "reply", parts: [{ type: "text", text: "drain" }] })
        yield* Stream.runCollect(client().stream(ask()))
        // Not retried: a retry-after longer than the backoff cap, and non-retryable errors.
        const long = yield* failure({ kind: "error", status: 429, retryAfter: 3600 }, client())
        assert.strictEqual(long._tag, "ProviderRateLimited")
        const n = fake.requests.length
        yield* failure({ kind: "error", status: 401 }, client())
        assert.strictEqual(fake.requests.length - n, 1)
      }))

    it.effect("fails with a network error when the stream is cut off midway", () =>
      Effect.gen(function*() {
        fake.script({ kind: "disconnect", parts: [{ type: "text", text: "This answer will be cut off somewhere in the middle." }], afterEvents: 3 })
        const exit = yield* Effect.exit(Stream.runCollect(client({}, { ...fastTransport, maxRetries: 0 }).stream(ask())))
        assert.isTrue(Exit.isFailure(exit))
        const e = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
        assert.strictEqual(e?._tag === "Fail" ? (e.error as { _tag: string })._tag : "none", "ProviderNetworkError")
      }))

    it.live("fails with a timeout when the stream goes silent midway", () =>
      Effect.gen(function*() {
        fake.script({ kind: "disconnect", parts: [{ type: "text", text: "This answer stalls after a few events." }], afterEvents: 3, stall: true })
        const e = yield* Stream.runCollect(client({}, { ...fastTransport, maxRetries: 0, timeoutMs: 400 }).stream(ask())).pipe(Effect.flip)
        assert.strictEqual(e._tag, "ProviderNetworkError")
        assert.isTrue(e._tag === "ProviderNetworkError" && e.timeout)
      }))

    it.live("interrupting the consumer aborts the HTTP request", () =>
      Effect.gen(function*() {
        fake.script({ kind: "hang" })
        const before = fake.requests.length
        const fiber = yield* Effect.forkChild(Stream.runCollect(client().stream(ask())))
        // The request is in flight once the server has it (it never answers).
        const req = yield* Effect.promise(() => fake.request(before))
        assert.strictEqual(fake.requests.length, before + 1)
        assert.isFalse(req.aborted, "open until the consumer is interrupted")
        yield* Fiber.interrupt(fiber)
        // The server sees the connection go away without an answer.
        yield* Effect.promise(() => fake.when(() => req.aborted, { what: "the abort of the HTTP request" }))
        assert.isTrue(req.aborted)
      }))

    it.effect("lists the server's models", () =>
      Effect.gen(function*() {
        fake.models = ["model-a", "model-b", "model-c"]
        const models = yield* client().listModels
        assert.deepStrictEqual(models.map((m) => m.id).sort(), ["model-a", "model-b", "model-c"])
      }))
  })
