/** collectResponse: folding a stream of ChatEvents into one response, with an optional per-event hook. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { collectResponse } from "../../../src/domain/model/collect.ts"
import type { ChatEvent } from "../../../src/domain/model/types.ts"

const events: ReadonlyArray<ChatEvent> = [
  { type: "text_delta", text: "Hel" },
  { type: "text_delta", text: "lo" },
  { type: "tool_call_start", index: 0, id: "t1", name: "read" },
  { type: "tool_call_end", index: 0, id: "t1", name: "read", input: { path: "a.txt" } },
  { type: "usage", usage: { inputTokens: 12, outputTokens: 3 } },
  { type: "stop", reason: "tool_use" }
]

describe("collectResponse", () => {
  it.effect("folds the events into one message, with and without a hook, and the hook sees each event in order", () =>
    Effect.gen(function*() {
      const plain = yield* collectResponse(Stream.fromIterable(events))
      const seen: Array<string> = []
      const streamed: Array<string> = []
      const hooked = yield* collectResponse(Stream.fromIterable(events), (e) =>
        Effect.sync(() => {
          seen.push(e.type)
          if (e.type === "text_delta") streamed.push(e.text)
        }))
      assert.deepStrictEqual(hooked, plain)
      assert.deepStrictEqual(plain.message.content, [
        { type: "text", text: "Hello" },
        { type: "tool_use", id: "t1", name: "read", input: { path: "a.txt" } }
      ])
      assert.strictEqual(plain.stopReason, "tool_use")
      assert.deepStrictEqual(seen, events.map((e) => e.type))
      assert.deepStrictEqual(streamed, ["Hel", "lo"])
    }))

  it.effect("a failing hook fails the collection, and the stream's own failure passes through", () =>
    Effect.gen(function*() {
      const hookFailed = yield* Effect.flip(
        collectResponse(Stream.fromIterable(events), (e) => (e.type === "tool_call_end" ? Effect.fail("client gone" as const) : Effect.void))
      )
      assert.strictEqual(hookFailed, "client gone")
      const streamFailed = yield* Effect.flip(collectResponse(Stream.concat(Stream.fromIterable(events.slice(0, 2)), Stream.fail("cut off" as const))))
      assert.strictEqual(streamFailed, "cut off")
    }))
})
