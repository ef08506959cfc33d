/** The pure halves of AnthropicMessages: our history → API messages, API events → ChatEvents. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { Message } from "../../../src/domain/message.ts"
import { ProviderServerError } from "../../../src/domain/model/errors.ts"
import type { ProviderConfig } from "../../../src/domain/model/types.ts"
import { stopReasonOf, toChatEvents } from "../../../src/layers/providers/anthropicEvents.ts"
import { acceptsSampling, MISSING_RESULT, toMessages, toParams } from "../../../src/layers/providers/anthropicRequest.ts"

const config: ProviderConfig = {
  id: "claude",
  type: "anthropic",
  baseUrl: "",
  apiKey: "k",
  models: [],
  defaultModel: "claude-default",
  headers: {},
  enabled: true
}

describe("anthropic request mapping", () => {
  it("keeps a plain exchange as it is", () => {
    const messages: ReadonlyArray<Message> = [
      { role: "user", content: "Hi" },
      { role: "assistant", content: [{ type: "text", text: "Hello." }] },
      { role: "user", content: "Bye" }
    ]
    assert.deepStrictEqual(toMessages(messages), [
      { role: "user", content: "Hi" },
      { role: "assistant", content: [{ type: "text", text: "Hello." }] },
      { role: "user", content: "Bye" }
    ])
  })

  it("merges consecutive turns of one role and drops empty ones", () => {
    assert.deepStrictEqual(
      toMessages([
        { role: "user", content: "one" },
        { role: "user", content: "" },
        { role: "user", content: [{ type: "text", text: "" }, { type: "text", text: "two" }] },
        { role: "assistant", content: "three" },
        { role: "assistant", content: [{ type: "text", text: "four" }] }
      ]),
      [
        { role: "user", content: [{ type: "text", text: "one" }, { type: "text", text: "two" }] },
        { role: "assistant", content: [{ type: "text", text: "three" }, { type: "text", text: "four" }] }
      ]
    )
  })

  it("puts one assistant turn's results first in one user message, the rest after", () => {
    const out = toMessages([
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "a", input: {} }, { type: "tool_use", id: "t2", name: "b", input: { x: 1 } }] },
      { role: "user", content: [{ type: "text", text: "also this" }, { type: "tool_result", tool_use_id: "t2", content: "two" }] },
      { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "one" }], is_error: true }] }
    ])
    assert.deepStrictEqual(out[1], {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "t2", content: "two" },
        { type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "one" }], is_error: true },
        { type: "text", text: "also this" }
      ]
    })
  })

  it("answers a call left without result and turns a result without call into text", () => {
    const out = toMessages([
      { role: "user", content: "go" },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "a", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "old", content: "stale" }, { type: "text", text: "stop that" }] }
    ])
    assert.deepStrictEqual(out[2], {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "t1", content: MISSING_RESULT, is_error: true },
        { type: "text", text: "[tool result old] stale" },
        { type: "text", text: "stop that" }
      ]
    })
    // A result at the start of a conversation has no call at all.
    assert.deepStrictEqual(toMessages([{ role: "tool_result", content: [{ type: "tool_result", tool_use_id: "x", content: "r", is_error: true }] }]), [
      { role: "user", content: [{ type: "text", text: "[tool error x] r" }] }
    ])
  })

  it("leaves a conversation that ends on a call as it is", () => {
    const out = toMessages([{ role: "user", content: "go" }, { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "a", input: {} }] }])
    assert.strictEqual(out.length, 2)
  })

  it("sends images the model reads and says which it cannot", () => {
    const [user, assistant] = toMessages([
      {
        role: "user",
        content: [
          { type: "image", source: { type: "base64", media_type: "image/jpg", data: "AAAA" } },
          { type: "image", source: { type: "base64", media_type: "image/bmp", data: "BBBB" } },
          { type: "image", source: { type: "url", url: "https://example.com/a.webp" } }
        ]
      },
      { role: "assistant", content: [{ type: "image", source: { type: "url", url: "https://example.com/b.png" } }, { type: "tool_use", id: "t", name: "n", input: [1, 2] }] }
    ])
    assert.deepStrictEqual(user?.content, [
      { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "AAAA" } },
      { type: "text", text: "[image omitted: image/bmp is not a format the model reads]" },
      { type: "image", source: { type: "url", url: "https://example.com/a.webp" } }
    ])
    assert.deepStrictEqual(assistant?.content, [{ type: "text", text: "[image]" }, { type: "tool_use", id: "t", name: "n", input: { value: [1, 2] } }])
  })

  it("sends temperature only to a provider pinned to an API version that takes it", () => {
    const request = { model: "", messages: [{ role: "user" as const, content: "x" }], temperature: 0.5 }
    assert.isFalse(acceptsSampling(config))
    assert.notProperty(toParams(config, request), "temperature")
    const pinned = { ...config, headers: { "Anthropic-Version": "2023-06-01" } }
    assert.isTrue(acceptsSampling(pinned))
    assert.strictEqual(toParams(pinned, request).temperature, 0.5)
    assert.isFalse(acceptsSampling({ ...config, headers: { "anthropic-version": "2026-10-21" } }))
    assert.strictEqual(toParams(config, request).model, "claude-default")
    assert.strictEqual(toParams(config, request).max_tokens, 4096)
  })
})

describe("anthropic event mapping", () => {
  const run = (events: ReadonlyArray<unknown>) => Stream.runCollect(toChatEvents("claude")(Stream.fromIterable(events)))
  const start = { type: "message_start", message: { usage: { input_tokens: 5, cache_read_input_tokens: 3, cache_creation_input_tokens: 2, output_tokens: 1 } } }
  const end = [{ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } }, { type: "message_stop" }]

  it.effect("skips event types it does not use (thinking, server tools, new ones)", () =>
    Effect.gen(function*() {
      const events = yield* run([
        start,
        { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
        { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "hmm" } },
        { type: "content_block_stop", index: 0 },
        { type: "some_future_event", payload: 1 },
        { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Hi" } },
        { type: "content_block_stop", index: 1 },
        ...end
      ])
      assert.deepStrictEqual(events, [
        { type: "usage", usage: { inputTokens: 5, cacheReadTokens: 3, cacheWriteTokens: 2 } },
        { type: "text_delta", text: "Hi" },
        { type: "usage", usage: { outputTokens: 9 } },
        { type: "stop", reason: "end_turn" }
      ])
    }))

  it.effect("uses a tool block's own input when no fragments follow", () =>
    Effect.gen(function*() {
      const events = yield* run([
        start,
        { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "t", name: "n", input: { a: 1 } } },
        { type: "content_block_stop", index: 0 },
        { type: "message_delta", delta: { stop_reason: null }, usage: { output_tokens: 2 } },
        { type: "message_stop" }
      ])
      assert.deepStrictEqual(events.filter((e) => e.type === "tool_call_end"), [{ type: "tool_call_end", index: 0, id: "t", name: "n", input: { a: 1 } }])
      assert.deepStrictEqual(events[events.length - 1], { type: "stop", reason: "tool_use" })
    }))

  it.effect("fails a stream that ends before message_stop as cut off", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(run([start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }]))
      assert.strictEqual(error._tag, "ProviderNetworkError")
      assert.include(error.message, "before message_stop")
    }))

  it.effect("reports a failure of the stream itself, not a cut-off", () =>
    Effect.gen(function*() {
      const overloaded = new ProviderServerError({ provider: "claude", status: 529, detail: "Overloaded" })
      const error = yield* Effect.flip(Stream.runCollect(toChatEvents("claude")(Stream.concat(Stream.fromIterable([start]), Stream.fail(overloaded)))))
      assert.strictEqual(error, overloaded)
    }))

  it.effect("fails on a known event that does not decode", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(run([start, { type: "content_block_delta", delta: { type: "text_delta", text: "x" } }, ...end]))
      assert.strictEqual(error._tag, "ProviderServerError")
      assert.strictEqual(error._tag === "ProviderServerError" ? error.status : 0, 502)
    }))

  it("maps every stop reason of the API", () => {
    assert.deepStrictEqual(
      ["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "model_context_window_exceeded", "pause_turn", "new_reason"].map((r) => stopReasonOf(r, false)),
      ["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "max_tokens", "other", "other"]
    )
    assert.strictEqual(stopReasonOf(null, true), "tool_use")
    assert.strictEqual(stopReasonOf(undefined, false), "end_turn")
  })
})
