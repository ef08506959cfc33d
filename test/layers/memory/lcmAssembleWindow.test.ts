/**
 * LcmMemory assembles from the newest live items (pages, newest first) and the live summaries,
 * never from every live item (issue 11, part 4: O(window) reads): it must choose exactly what a
 * choice over the whole live context would, omitted count included, on a long session with tool
 * units straddling page edges, summaries older than the raw messages, and every budget from tiny
 * to more than the session holds. And it must read about a budget's worth of rows, not the session,
 * and the content of at most a budget's worth (and CONTENT_ITEMS) of them with the pages.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { selectForBudget } from "../../../src/domain/memory/context.ts"
import { renderSummary } from "../../../src/domain/memory/render.ts"
import { tailTokensOf } from "../../../src/domain/memory/fit.ts"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { Message, NewMessage } from "../../../src/domain/message.ts"
import * as DagCompactionEngine from "../../../src/layers/memory/DagCompactionEngine.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as SessionLocks from "../../../src/layers/memory/SessionLocks.ts"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { sqliteTemp } from "../../support/db.ts"
import { chat, T0 } from "../../support/memory.ts"

const KEY = "agent:test:alice:window"
const session = sessionRefFromKey(KEY)

/**
 * What assembly read: full-context reads (must stay 0), rows of newest-first pages, and the tokens
 * of the items read with their content in those pages.
 */
const reads = { items: 0, newestRows: 0, contentTokens: 0, contentItems: 0 }

/** The SQLite store, counting what is read. */
const countingStore = Layer.effect(
  MemoryStore,
  Effect.map(SqliteMemoryStore.make, (store) =>
    MemoryStore.of({
      ...store,
      items: (id) => Effect.tap(store.items(id), () => Effect.sync(() => reads.items++)),
      itemsNewest: (id, before, limit, contentTokens) =>
        Effect.tap(store.itemsNewest(id, before, limit, contentTokens), (read) =>
          Effect.sync(() => {
            reads.newestRows += read.items.length
            const loaded = new Set([...read.messages.map((m) => `message:${m.id}`), ...read.summaries.map((s) => `summary:${s.id}`)])
            for (const it of read.items) if (loaded.has(`${it.kind}:${it.refId}`)) reads.contentTokens += it.tokens
            reads.contentItems = Math.max(reads.contentItems, loaded.size)
          }))
    }))
)

const lcm = LcmMemory.layer.pipe(
  Layer.provide(DagCompactionEngine.layer({ ...DagCompactionEngine.defaultConfig, chunkTokens: 2_000 })),
  Layer.provideMerge(Layer.merge(countingStore, SessionLocks.layer)),
  Layer.provide(DeterministicSummarizer.layer),
  Layer.provideMerge(sqliteTemp)
)

/** Chat with a tool call (and its result) every fifth exchange, the result's size varying. */
const toolChat = (n: number, from: number): Array<NewMessage> => {
  const out: Array<NewMessage> = []
  for (let i = 0; out.length < n; i++) {
    out.push(...chat(3, from + i * 3))
    if (i % 5 === 0) {
      const id = `t${from}_${i}`
      out.push(
        { role: "assistant", content: [{ type: "tool_use", id, name: "bash", input: { i } }], createdAt: T0 + (from + i) * 1000 },
        { role: "tool_result", content: [{ type: "tool_result", tool_use_id: id, content: "ok ".repeat(1 + (i % 40)) }], createdAt: T0 + (from + i) * 1000 }
      )
    }
  }
  return out
}

describe("LcmMemory assembly reads a window, not the session", () => {
  it.effect("chooses exactly what a choice over every live item would, and reads about a budget's worth", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const store = yield* MemoryStore
      // Old history compacted into summaries, then a long raw stretch after them.
      yield* memory.append(session, toolChat(1_200, 0))
      yield* (yield* Compactor).compact(KEY, { full: true, freshTail: 40 })
      yield* memory.append(session, toolChat(2_600, 10_000))
      const conversation = yield* store.getConversation(KEY)
      const all = yield* store.items(conversation.id)
      const summaries = all.filter((it) => it.kind === "summary").length
      assert.isAbove(summaries, 0)
      assert.isAbove(all.length, 2_000)
      const total = all.reduce((n, it) => n + it.tokens, 0)
      for (
        const [budget, freshTail] of [[1, 20], [50, 20], [400, 3], [2_000, 20], [9_000, 0], [20_000, 20], [total - 50, 20], [total, 20], [
          10 * total,
          20
        ]] as const
      ) {
        reads.items = 0
        reads.newestRows = 0
        reads.contentTokens = 0
        reads.contentItems = 0
        const a = yield* memory.assemble(KEY, { budget, freshTail })
        const expected = selectForBudget(all, budget, freshTail, tailTokensOf(budget))
        const chosen = expected.indices.flatMap((i) => (all[i] === undefined ? [] : [all[i]]))
        const [messages, sums] = yield* Effect.all([
          store.messagesByIds(chosen.filter((it) => it.kind === "message").map((it) => it.refId)),
          store.summariesByIds(chosen.filter((it) => it.kind === "summary").map((it) => it.refId))
        ])
        const byId = new Map<string, Message>([
          ...messages.map((m) => [`message:${m.id}`, m.message] as const),
          ...sums.map((s) => [`summary:${s.id}`, renderSummary(s)] as const)
        ])
        const want = chosen.flatMap((it) => {
          const m = byId.get(`${it.kind}:${it.refId}`)
          return m === undefined ? [] : [m]
        })
        const at = `budget ${budget}, fresh tail ${freshTail}`
        assert.deepStrictEqual(a.messages, want, at)
        assert.strictEqual(a.omittedItems, expected.omitted, `omitted at ${at}`)
        assert.strictEqual(a.summaries, chosen.filter((it) => it.kind === "summary").length, `summaries at ${at}`)
        assert.strictEqual(reads.items, 0, `assembly read every live item at ${at}`)
        // Content read with the pages is bounded by the budget (a page of huge messages is not read
        // whole), and is most of what was chosen once the budget holds a few items.
        assert.isAtMost(reads.contentTokens, budget, `content read with the pages at ${at}`)
        assert.isAtMost(reads.contentItems, SqliteMemoryStore.CONTENT_ITEMS, `items read with their content at ${at}`)
        if (budget >= 2_000) assert.isAbove(reads.contentTokens, 0, `no content read with the pages at ${at}`)
        if (budget < total / 2) {
          // A budget's worth of rows (messages here cost ≥ 10 tokens), plus at most a page of overshoot.
          assert.isAtMost(reads.newestRows, Math.ceil(budget / 10) + 4_096 / 2 + 256, `rows read at ${at}`)
        }
      }
    }).pipe(Effect.provide(lcm)))
})
