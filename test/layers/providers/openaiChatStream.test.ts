import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { ChatEvent } from "../../../src/domain/model/types.ts"
import { chunkEvents } from "../../../src/layers/providers/openaiChatStream.ts"

/** Runs raw chunk objects (as the SDK yields them) through the mapping. */
const run = (chunks: ReadonlyArray<unknown>) => Stream.runCollect(chunkEvents("p")(Stream.fromIterable(chunks)))

const choice = (delta: Record<string, unknown>, finish: string | null = null, index = 0) => ({
  choices: [{ index, delta, finish_reason: finish }]
})
const call = (index: number, fields: Record<string, unknown>) => choice({ tool_calls: [{ index, ...fields }] })

const ends = (events: ReadonlyArray<ChatEvent>) =>
  events.flatMap((e) => (e.type === "tool_call_end" ? [[e.index, e.id, e.name, e.input]] : []))

describe("OpenAI chat chunks → events", () => {
  it.effect("text, usage with cached tokens, and stop after usage", () =>
    Effect.gen(function*() {
      const events = yield* run([
        choice({ role: "assistant", content: "" }),
        choice({ content: "Hel" }),
        choice({ content: "lo" }),
        choice({}, "stop"),
        { choices: [], usage: { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105, prompt_tokens_details: { cached_tokens: 64 } } }
      ])
      assert.deepStrictEqual(events, [
        { type: "text_delta", text: "Hel" },
        { type: "text_delta", text: "lo" },
        { type: "usage", usage: { inputTokens: 100, outputTokens: 5, cacheReadTokens: 64 } },
        { type: "stop", reason: "end_turn" }
      ])
    }))

  it.effect("a server that puts every tool call at index 0 still yields separate calls", () =>
    Effect.gen(function*() {
      const events = yield* run([
        call(0, { id: "a", function: { name: "one", arguments: "{\"x\":1}" } }),
        call(0, { id: "b", function: { name: "two", arguments: "{}" } }),
        // And says "stop" rather than "tool_calls", as some do.
        choice({}, "stop")
      ])
      assert.deepStrictEqual(ends(events), [[0, "a", "one", { x: 1 }], [1, "b", "two", {}]])
      assert.deepStrictEqual(events[events.length - 1], { type: "stop", reason: "tool_use" })
    }))

  it.effect("argument pieces without id continue their call; broken JSON is kept raw", () =>
    Effect.gen(function*() {
      const events = yield* run([
        call(0, { id: "a", type: "function", function: { name: "f", arguments: "" } }),
        call(0, { function: { arguments: "{\"open\": " } }),
        call(0, { function: { arguments: "tru" } }),
        choice({}, "tool_calls")
      ])
      const deltas = events.filter((e) => e.type === "tool_call_delta")
      assert.strictEqual(deltas.length, 2, "empty argument pieces are not events")
      assert.deepStrictEqual(ends(events), [[0, "a", "f", { _raw: "{\"open\": tru" }]])
    }))

  it.effect("finish reasons: length, content_filter, refusals, unknown", () =>
    Effect.gen(function*() {
      const stop = (chunks: ReadonlyArray<unknown>) =>
        run(chunks).pipe(Effect.map((events) => events.flatMap((e) => (e.type === "stop" ? [e.reason] : []))))
      assert.deepStrictEqual(yield* stop([choice({ content: "cut" }, "length")]), ["max_tokens"])
      assert.deepStrictEqual(yield* stop([choice({}, "content_filter")]), ["refusal"])
      assert.deepStrictEqual(yield* stop([choice({ refusal: "I can't help with that." }), choice({}, "stop")]), ["refusal"])
      assert.deepStrictEqual(yield* stop([choice({}, "something_new")]), ["other"])
    }))

  it.effect("only the first choice is read", () =>
    Effect.gen(function*() {
      const events = yield* run([choice({ content: "other" }, null, 1), choice({ content: "mine" }), choice({}, "stop")])
      assert.deepStrictEqual(events.filter((e) => e.type === "text_delta"), [{ type: "text_delta", text: "mine" }])
    }))

  it.effect("a stream that ends without a finish_reason is a network error", () =>
    Effect.gen(function*() {
      const error = yield* run([choice({ content: "half an ans" })]).pipe(Effect.flip)
      assert.strictEqual(error._tag, "ProviderNetworkError")
      assert.include(error.detail, "finish_reason")
    }))

  it.effect("an unreadable chunk is a server error", () =>
    Effect.gen(function*() {
      const error = yield* run([{ choices: [{ index: 0, delta: { content: 42 } }] }]).pipe(Effect.flip)
      assert.strictEqual(error._tag, "ProviderServerError")
      assert.include(error.detail, "unreadable stream chunk")
    }))
})
