/**
 * A small context window seen from the runtime (issue 11): the output tokens each model call asks
 * for (and the budget leaves free) follow the agent's window or its `maxOutputTokens`, never more
 * than half the window; compaction before a turn runs only when it gains a meaningful share of the
 * budget, says so as a status notice, and makes at most MAX_SUMMARIZER_CALLS_PER_TURN summarizer
 * calls. Real SQLite, the OpenAI Chat SDK against the fake server, the model summarizer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { outputReserve } from "../../../src/domain/config/agent.ts"
import type { ChatTarget, TurnEvent } from "../../../src/domain/runtime/types.ts"
import { assemblyBudget, MAX_SUMMARIZER_CALLS_PER_TURN, turnOutputTokens } from "../../../src/layers/runtime/turn.ts"
import { toolRegistry } from "../../../src/domain/tool.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { localProvider, modelSummarizerRuntime } from "../../support/runtimeStack.ts"
import { fastTransport } from "../providers/contract.ts"

const suite = fakeLlmSuite()

const stack = () => modelSummarizerRuntime(suite.keep(mkdtempSync(join(tmpdir(), "anna-small-window-"))), fastTransport)

interface Body {
  readonly model?: string
  readonly max_tokens?: number
  readonly tools?: ReadonlyArray<unknown>
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
}
const bodyOf = (r: RecordedRequest | undefined) => (r?.body ?? {}) as Body
/** Summary requests come without tools and with the summarizer's system prompt. */
const isSummary = (r: RecordedRequest) => JSON.stringify(bodyOf(r).messages ?? []).includes("into a summary that replaces it")
  || JSON.stringify(bodyOf(r).messages ?? []).includes("You merge ")

const alice: ChatTarget = { platform: "cli", externalUserId: "alice", userName: "Alice" }

describe("the output reserve", () => {
  it("is a quarter of the window (256 to 8192), or the agent's setting up to half the window", () => {
    assert.strictEqual(outputReserve(6_000), 1_500)
    assert.strictEqual(outputReserve(2_000), 500)
    assert.strictEqual(outputReserve(128_000), 8_192)
    assert.strictEqual(outputReserve(1_000_000), 8_192)
    assert.strictEqual(outputReserve(800), 256)
    assert.strictEqual(outputReserve(300), 150)
    assert.strictEqual(outputReserve(6_000, 900), 900)
    assert.strictEqual(outputReserve(6_000, 5_000), 3_000)
    assert.strictEqual(outputReserve(200_000, 32_000), 32_000)
  })

  it("leaves the context budget the window less the reserve, the system prompt and the tools", () => {
    const tools = Effect.runSync(toolRegistry([]))
    assert.strictEqual(turnOutputTokens({ contextTokens: 6_000 }), 1_500)
    assert.strictEqual(assemblyBudget({ contextTokens: 6_000, system: "", tools }), 6_000 - 1_500 - 1)
    assert.strictEqual(assemblyBudget({ contextTokens: 6_000, maxOutputTokens: 500, system: "x".repeat(400), tools }), 6_000 - 500 - 100 - 1)
    // Never below 1,000, unless the window less the reserve is smaller.
    assert.strictEqual(assemblyBudget({ contextTokens: 6_000, system: "x".repeat(40_000), tools }), 1_000)
    assert.strictEqual(assemblyBudget({ contextTokens: 1_000, system: "x".repeat(40_000), tools }), 1_000 - 256)
  })

  it.effect("is what every model call of a turn asks for", () =>
    Effect.gen(function*() {
      yield* (yield* ProviderStore).add(localProvider(suite.fake))
      const agents = yield* AgentStore
      const runtime = yield* Runtime
      const ask = Effect.fn(function*(agentId: string) {
        const chat = yield* runtime.resolve({ ...alice, agentId })
        yield* Stream.runCollect(runtime.send(chat, "hello"))
        return bodyOf(suite.fake.requests.at(-1)).max_tokens
      })
      yield* agents.create("small", { providerId: "local", contextTokens: 6_000, tools: [] })
      assert.strictEqual(yield* ask("small"), 1_500)
      yield* agents.update("small", { maxOutputTokens: 900 })
      assert.strictEqual(yield* ask("small"), 900)
      yield* agents.update("small", { maxOutputTokens: 5_000 })
      assert.strictEqual(yield* ask("small"), 3_000)
      yield* agents.create("large", { providerId: "local", tools: [] })
      assert.strictEqual(yield* ask("large"), 8_192)
      const refused = yield* Effect.flip(agents.update("small", { maxOutputTokens: -1 }))
      assert.strictEqual(refused._tag, "InvalidConfig")
    }).pipe(Effect.provide(stack())))
})

describe("compaction before a turn in a small window", () => {
  it.effect("runs only when it gains a meaningful share, within the per-turn cap, and says so as status", () =>
    Effect.gen(function*() {
      yield* (yield* ProviderStore).add(localProvider(suite.fake))
      yield* (yield* AgentStore).create("a1", { providerId: "local", contextTokens: 6_000, tools: [] })
      // The summary model keeps the facts it was given and little else.
      suite.fake.respondWith((req) => {
        if (!isSummary(req)) return { kind: "reply", parts: [{ type: "text", text: "Noted, thank you. ".repeat(6) }] }
        const facts = [...new Set(JSON.stringify(bodyOf(req).messages ?? []).match(/FACT-\d+[^"\\]*/g) ?? [])]
        return { kind: "reply", parts: [{ type: "text", text: [...facts, "Small talk otherwise."].join("\n") }] }
      })
      const runtime = yield* Runtime
      const chat = yield* runtime.resolve(alice)
      const perTurn: Array<{ readonly summaries: number; readonly notice: TurnEvent | undefined }> = []
      for (let i = 0; i < 80; i++) {
        const before = suite.fake.requests.filter(isSummary).length
        const text = i === 0 ? "Remember FACT-1: the backup runs at 02:00." : `Ordinary turn ${i}. ${"Some chatter to take space. ".repeat(12)}`
        const events = yield* Stream.runCollect(runtime.send(chat, text))
        perTurn.push({
          summaries: suite.fake.requests.filter(isSummary).length - before,
          notice: events.find((e) => e.type === "notice" && e.text.startsWith("compacted"))
        })
      }
      const compacting = perTurn.filter((t) => t.summaries > 0)
      assert.isAtLeast(compacting.length, 3, "the conversation outgrew the window and was compacted")
      // Far from every turn: each compaction frees a good share of the budget (here about 1,900 of
      // about 4,000 tokens, once every 15 turns or so), so the next one waits for the context to grow.
      assert.isAtMost(compacting.length, 8, JSON.stringify(perTurn.map((t) => t.summaries)))
      compacting.slice(1).forEach((t, k) => {
        const i = perTurn.indexOf(t)
        const previous = compacting[k]
        assert.isAtLeast(i - (previous === undefined ? -1 : perTurn.indexOf(previous)), 5, "two compactions within five turns")
      })
      for (const t of perTurn) {
        assert.isAtMost(t.summaries, MAX_SUMMARIZER_CALLS_PER_TURN)
        // A summarizer call only on a turn whose compaction gained something, told as status.
        if (t.summaries === 0) continue
        assert.isDefined(t.notice)
        if (t.notice?.type !== "notice") continue
        assert.isTrue(t.notice.status)
        const [before, after] = (/(\d+) → (\d+)/.exec(t.notice.text) ?? []).slice(1).map(Number)
        assert.isBelow(after ?? Number.NaN, before ?? Number.NaN, t.notice.text)
      }
      // The fact of the first turn is in what the model receives at the end.
      assert.include(JSON.stringify(bodyOf(suite.fake.requests.filter((r) => !isSummary(r)).at(-1)).messages), "FACT-1")
    }).pipe(Effect.provide(stack())))
})
