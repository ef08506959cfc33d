import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import { estimateMessageTokens, type NewMessage } from "../../src/domain/message.ts"
import * as DeterministicSummarizer from "../../src/layers/DeterministicSummarizer.ts"
import * as LcmMemory from "../../src/layers/LcmMemory.ts"
import * as SimpleMemory from "../../src/layers/SimpleMemory.ts"
import * as Sqlite from "../../src/layers/Sqlite.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { Explorer } from "../../src/services/Explorer.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { ProfileStore } from "../../src/services/ProfileStore.ts"
import { ReviewSource } from "../../src/services/ReviewSource.ts"
import { Searcher } from "../../src/services/Searcher.ts"
import { SessionManager } from "../../src/services/SessionManager.ts"
import { MemoryStore } from "../../src/services/MemoryStore.ts"
import { selectForBudget } from "../../src/domain/memory/context.ts"
import { simpleTemp, tempDbFile } from "../support/db.ts"
import { chat, T0 } from "../support/memory.ts"

const KEY = "a1:cli:u1:main"
const session = sessionRefFromKey(KEY)
const plain = (ms: ReadonlyArray<NewMessage>) => ms.map((m) => ({ role: m.role, content: m.content }))

const lcmOn = (file: string) =>
  LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer), Layer.provideMerge(Sqlite.layer(file)))
const simpleOn = (file: string) => SimpleMemory.layerSqlite.pipe(Layer.provideMerge(Sqlite.layer(file)))

describe("SimpleMemory", () => {
  it.effect("reads only the newest pages yet chooses exactly what a choice over the whole session would", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const store = yield* MemoryStore
      // Long enough for several 512-message pages, with tool units that may straddle a page edge.
      const messages: Array<NewMessage> = []
      for (let i = 0; messages.length < 2500; i++) {
        messages.push(...chat(3, i * 3))
        if (i % 5 === 0) {
          messages.push(
            { role: "assistant", content: [{ type: "tool_use", id: `t${i}`, name: "bash", input: { i } }] },
            { role: "tool_result", content: [{ type: "tool_result", tool_use_id: `t${i}`, content: "ok ".repeat(i % 40) }] }
          )
        }
      }
      yield* memory.append(session, messages)
      const conversation = yield* store.getConversation(KEY)
      const all = yield* store.messageMetas(conversation.id)
      for (const [budget, freshTail] of [[50, 20], [2_000, 20], [20_000, 3], [40_000, 0], [90_000, 20], [10_000_000, 20]] as const) {
        const a = yield* memory.assemble(KEY, { budget, freshTail })
        const expected = selectForBudget(all, budget, freshTail, "contiguous")
        const stored = yield* store.messagesByIds(expected.indices.map((i) => all[i]?.refId ?? -1))
        assert.deepStrictEqual(a.messages, stored.map((m) => m.message), `budget ${budget}, fresh tail ${freshTail}`)
        assert.strictEqual(a.omittedItems, expected.omitted, `omitted at budget ${budget}`)
      }
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("assembles a contiguous window of the newest messages within the budget", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const messages = chat(50)
      yield* memory.append(session, messages)
      const perMessage = estimateMessageTokens(messages[0] ?? { role: "user", content: "" })
      const budget = perMessage * 30 + 5
      const a = yield* memory.assemble(KEY, { budget })
      assert.isAtMost(a.tokens, budget)
      assert.strictEqual(a.messages.length, 30)
      assert.deepStrictEqual(a.messages, plain(messages.slice(-30)))
      assert.strictEqual(a.omittedItems, 20)
      assert.strictEqual(a.summaries, 0)
      assert.strictEqual(a.freshTailMessages, 20)
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("stops at the first message that does not fit (no gaps)", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const messages: Array<NewMessage> = [
        ...chat(5),
        { role: "user", content: "huge paste ".repeat(2000), createdAt: T0 + 10_000_000 },
        ...chat(5, 100)
      ]
      yield* memory.append(session, messages)
      const a = yield* memory.assemble(KEY, { budget: 1000, freshTail: 3 })
      // the huge paste does not fit: nothing older than it is assembled either
      assert.deepStrictEqual(a.messages, plain(messages.slice(-5)))
      assert.strictEqual(a.omittedItems, 6)
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("always keeps the fresh tail, whatever the budget", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const messages = chat(30)
      yield* memory.append(session, messages)
      const a = yield* memory.assemble(KEY, { budget: 1 })
      assert.deepStrictEqual(a.messages, plain(messages.slice(-20)))
      assert.strictEqual(a.freshTailMessages, 20)
      assert.isAbove(a.tokens, 1)
      const b = yield* memory.assemble(KEY, { budget: 1, freshTail: 4 })
      assert.deepStrictEqual(b.messages, plain(messages.slice(-4)))
      const invalid = yield* memory.assemble(KEY, { budget: 0 }).pipe(Effect.flip)
      assert.strictEqual(invalid._tag, "InvalidInput")
      const missing = yield* memory.assemble("nobody", { budget: 100 }).pipe(Effect.flip)
      assert.strictEqual(missing._tag, "SessionNotFound")
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("has only the provider, profile and session capabilities", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      assert.strictEqual(memory.name, SimpleMemory.NAME)
      assert.strictEqual(memory.name, "memory/simple")
      assert.isTrue(Option.isNone(yield* Effect.serviceOption(Compactor)))
      assert.isTrue(Option.isNone(yield* Effect.serviceOption(Searcher)))
      assert.isTrue(Option.isNone(yield* Effect.serviceOption(Explorer)))
      assert.isTrue(Option.isNone(yield* Effect.serviceOption(ReviewSource)))
      assert.isTrue(Option.isSome(yield* Effect.serviceOption(ProfileStore)))
      assert.isTrue(Option.isSome(yield* Effect.serviceOption(SessionManager)))
      const profiles = yield* ProfileStore
      yield* profiles.setProfile("u1", "a1", "notes")
      assert.strictEqual(yield* profiles.getProfile("u1", "a1"), "notes")
      const sessions = yield* SessionManager
      yield* memory.append(session, chat(3))
      assert.strictEqual((yield* sessions.loadHistory(KEY)).length, 3)
      assert.strictEqual((yield* memory.stats(KEY)).messages, 3)
    }).pipe(Effect.provide(simpleTemp)))
})

describe("switching between SimpleMemory and LcmMemory on one database", () => {
  it.effect("loses nothing in either direction", () =>
    Effect.gen(function*() {
      const file = yield* tempDbFile
      const first = chat(30)
      const second = chat(60, 30)
      const all = [...first, ...second]

      // 1. Simple appends
      yield* Effect.gen(function*() {
        const memory = yield* MemoryProvider
        yield* memory.append(session, first)
      }).pipe(Effect.provide(simpleOn(file)))

      // 2. LCM sees them, appends more, compacts
      const lcmView = yield* Effect.gen(function*() {
        const memory = yield* MemoryProvider
        const compactor = yield* Compactor
        const before = yield* memory.assemble(KEY, { budget: 1_000_000 })
        assert.deepStrictEqual(before.messages, plain(first))
        yield* memory.append(session, second)
        const report = yield* compactor.compact(KEY, { full: true })
        assert.isTrue(report.compacted)
        const after = yield* memory.assemble(KEY, { budget: 1_000_000 })
        assert.isAbove(after.summaries, 0)
        return after
      }).pipe(Effect.provide(lcmOn(file)))

      // 3. Simple ignores the summaries and assembles every recent raw message
      yield* Effect.gen(function*() {
        const memory = yield* MemoryProvider
        const a = yield* memory.assemble(KEY, { budget: 1_000_000 })
        assert.strictEqual(a.summaries, 0)
        assert.deepStrictEqual(a.messages, plain(all))
        const stats = yield* memory.stats(KEY)
        assert.strictEqual(stats.messages, 90)
        assert.isAbove(stats.summaries, 0)
        // a tight budget still gives the newest raw messages, including compacted ones
        const perMessage = estimateMessageTokens(all[0] ?? { role: "user", content: "" })
        const recent = yield* memory.assemble(KEY, { budget: perMessage * 40 + 10 })
        assert.deepStrictEqual(recent.messages, plain(all.slice(-40)))
        yield* memory.append(session, chat(5, 90))
      }).pipe(Effect.provide(simpleOn(file)))

      // 4. LCM again: the summaries are still live and Simple's new messages follow them
      yield* Effect.gen(function*() {
        const memory = yield* MemoryProvider
        const a = yield* memory.assemble(KEY, { budget: 1_000_000 })
        assert.strictEqual(a.summaries, lcmView.summaries)
        assert.deepStrictEqual(a.messages.slice(0, lcmView.messages.length), lcmView.messages)
        assert.deepStrictEqual(a.messages.slice(-5), plain(chat(5, 90)))
        assert.strictEqual((yield* memory.stats(KEY)).messages, 95)
      }).pipe(Effect.provide(lcmOn(file)))
    }))
})
