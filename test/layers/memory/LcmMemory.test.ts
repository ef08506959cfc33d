import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SummarizerError } from "../../../src/domain/memory/errors.ts"
import { TAIL_SHARE } from "../../../src/domain/memory/fit.ts"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { ExpandResult, SearchScope } from "../../../src/domain/memory/types.ts"
import { verifySession } from "../../../src/domain/memory/verify.ts"
import { estimateMessageTokens, estimateTextTokens, type NewMessage } from "../../../src/domain/message.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { Explorer } from "../../../src/services/Explorer.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { ProfileStore } from "../../../src/services/ProfileStore.ts"
import { ReviewSource } from "../../../src/services/ReviewSource.ts"
import { Searcher } from "../../../src/services/Searcher.ts"
import { SessionManager } from "../../../src/services/SessionManager.ts"
import { Summarizer, type SummaryRequest } from "../../../src/services/Summarizer.ts"
import { lcmTemp } from "../../support/db.ts"
import { chat, lcmWith, scriptedSummarizer, T0 } from "../../support/memory.ts"

const KEY = "a1:cli:u1:main"
const session = sessionRefFromKey(KEY)

/** Live summary ids of a session, in position order. */
const liveSummaryIds = (sessionKey: string) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const c = yield* store.getConversation(sessionKey)
    return (yield* store.items(c.id)).flatMap((it) => (it.kind === "summary" ? [it.refId] : []))
  })

const verify = (sessionKey: string) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const c = yield* store.getConversation(sessionKey)
    return verifySession(yield* store.verifyInput(c.id, sessionKey))
  })

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i % 50}`).join(" ") + "."

describe("LcmMemory compaction", () => {
  it.effect("reports below_threshold with a large budget and changes nothing", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, chat(100))
      const before = yield* memory.stats(KEY)
      assert.isFalse(yield* compactor.needsCompaction(KEY, 1_000_000))
      const report = yield* compactor.compact(KEY, { budget: 1_000_000 })
      assert.deepStrictEqual(report, {
        compacted: false,
        passes: 0,
        leafSummaries: 0,
        condensedSummaries: 0,
        tokensBefore: before.contextTokens,
        tokensAfter: before.contextTokens,
        stopReason: "below_threshold",
        summaryIds: [],
        summarizerCalls: 0
      })
      assert.strictEqual((yield* memory.stats(KEY)).summaries, 0)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("reports no_candidates when everything is in the fresh tail", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, chat(15))
      const report = yield* compactor.compact(KEY)
      assert.strictEqual(report.stopReason, "no_candidates")
      assert.isFalse(report.compacted)
      assert.strictEqual(report.passes, 2)
      assert.strictEqual(report.tokensAfter, report.tokensBefore)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("needsCompaction compares the live context with threshold × budget", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, chat(10))
      const tokens = (yield* memory.stats(KEY)).contextTokens
      assert.isTrue(yield* compactor.needsCompaction(KEY, tokens))
      assert.isFalse(yield* compactor.needsCompaction(KEY, Math.ceil(tokens / 0.75)))
      assert.isTrue(yield* compactor.needsCompaction(KEY, tokens * 2, 0.25))
      const missing = yield* compactor.needsCompaction("nope", 100).pipe(Effect.flip)
      assert.strictEqual(missing._tag, "SessionNotFound")
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("an incremental compaction makes one leaf pass and keeps the fresh tail", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, chat(60))
      const report = yield* compactor.compact(KEY)
      assert.isTrue(report.compacted)
      assert.strictEqual(report.leafSummaries, 1)
      assert.strictEqual(report.condensedSummaries, 0)
      assert.isBelow(report.tokensAfter, report.tokensBefore)
      const store = yield* MemoryStore
      const c = yield* store.getConversation(KEY)
      const items = yield* store.items(c.id)
      // one summary for messages 1..40, then the 20 tail messages untouched
      assert.strictEqual(items.length, 21)
      assert.strictEqual(items[0]?.kind, "summary")
      assert.deepStrictEqual(report.summaryIds, [`sum_${items[0]?.refId}`])
      assert.isTrue(items.slice(1).every((it) => it.kind === "message"))
      assert.deepStrictEqual(yield* verify(KEY), [])
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("a full compaction of a long session builds condensed summaries (depth > 0)", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, chat(400))
      const stats0 = yield* memory.stats(KEY)
      const report = yield* compactor.compact(KEY, { full: true })
      const stats = yield* memory.stats(KEY)
      assert.isTrue(report.compacted)
      assert.isAbove(report.leafSummaries, 1)
      assert.isAbove(report.condensedSummaries, 0)
      assert.isAbove(report.passes, 2)
      assert.strictEqual(report.tokensBefore, stats0.contextTokens)
      assert.strictEqual(report.tokensAfter, stats.contextTokens)
      assert.isBelow(report.tokensAfter, report.tokensBefore / 4)
      assert.oneOf(report.stopReason, ["no_candidates", "no_progress"])
      assert.isAbove(stats.maxDepth, 0)
      assert.strictEqual(stats.summaries, report.leafSummaries + report.condensedSummaries)
      assert.strictEqual(new Set(report.summaryIds).size, stats.summaries)
      assert.strictEqual(stats.messages, 400)
      assert.strictEqual(stats.messageTokens, stats0.messageTokens)
      assert.deepStrictEqual(yield* verify(KEY), [])
      // compacting again finds nothing more to do
      const again = yield* compactor.compact(KEY, { full: true })
      assert.isFalse(again.compacted)
      assert.strictEqual(again.stopReason, "no_candidates")
    }).pipe(Effect.provide(lcmWith({ config: { chunkTokens: 600 } }))))

  it.effect("with a budget, compaction stops as soon as the context is below threshold", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, chat(300))
      const before = (yield* memory.stats(KEY)).contextTokens
      const budget = Math.ceil(before / 2)
      const report = yield* compactor.compact(KEY, { full: true, budget })
      assert.strictEqual(report.stopReason, "below_threshold")
      assert.isAtMost(report.tokensAfter, 0.75 * budget)
      assert.isTrue(report.compacted)
    }).pipe(Effect.provide(lcmWith({ config: { chunkTokens: 600 } }))))
})

describe("LcmMemory summarization escalation", () => {
  it.effect("uses aggressive mode when the normal summary is too long", () => {
    const log: Array<SummaryRequest> = []
    const summarizer = scriptedSummarizer((r) => r.mode === "normal" ? words(r.targetTokens * 4) : "Short aggressive summary.", log)
    return Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      const explorer = yield* Explorer
      yield* memory.append(session, chat(15))
      const report = yield* compactor.compact(KEY, { freshTail: 5 })
      assert.strictEqual(report.leafSummaries, 1)
      assert.deepStrictEqual(log.map((r) => r.mode), ["normal", "aggressive"])
      assert.strictEqual(log[0]?.input.kind, "leaf")
      assert.strictEqual(log[0]?.input.kind === "leaf" ? log[0].input.messages.length : 0, 10)
      const [id] = yield* liveSummaryIds(KEY)
      assert.isDefined(id)
      const d = yield* explorer.describe(`sum_${id}`)
      assert.strictEqual(d.mode, "aggressive")
      assert.strictEqual(d.content, "Short aggressive summary.")
    }).pipe(Effect.provide(lcmWith({ summarizer })))
  })

  it.effect("accepts a normal summary up to 150 % of its target", () => {
    const log: Array<SummaryRequest> = []
    const summarizer = scriptedSummarizer((r) => "x".repeat(Math.floor(r.targetTokens * 1.5) * 4), log)
    return Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      const explorer = yield* Explorer
      yield* memory.append(session, chat(15))
      yield* compactor.compact(KEY, { freshTail: 5 })
      assert.deepStrictEqual(log.map((r) => r.mode), ["normal"])
      const [id] = yield* liveSummaryIds(KEY)
      assert.strictEqual((yield* explorer.describe(`sum_${id}`)).mode, "normal")
    }).pipe(Effect.provide(lcmWith({ summarizer })))
  })

  it.effect("truncates deterministically when both modes are too long", () => {
    const log: Array<SummaryRequest> = []
    const summarizer = scriptedSummarizer(
      (r) => `First finding is here. Second finding follows. ${words(r.targetTokens * 4)}`,
      log
    )
    return Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      const explorer = yield* Explorer
      yield* memory.append(session, chat(15))
      const report = yield* compactor.compact(KEY, { freshTail: 5 })
      assert.strictEqual(report.leafSummaries, 1)
      assert.deepStrictEqual(log.map((r) => r.mode), ["normal", "aggressive"])
      const target = log[0]?.targetTokens ?? 0
      assert.isAbove(target, 0)
      const [id] = yield* liveSummaryIds(KEY)
      const d = yield* explorer.describe(`sum_${id}`)
      assert.strictEqual(d.mode, "truncated")
      assert.isAtMost(estimateTextTokens(d.content), target)
      assert.isTrue(d.content.startsWith("First finding is here."))
      assert.deepStrictEqual(yield* verify(KEY), [])
    }).pipe(Effect.provide(lcmWith({ summarizer })))
  })

  it.effect("asks for about a third of the source tokens", () => {
    const log: Array<SummaryRequest> = []
    return Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      const messages = chat(15)
      yield* memory.append(session, messages)
      yield* compactor.compact(KEY, { freshTail: 5 })
      const source = messages.slice(0, 10).reduce((n, m) => n + estimateMessageTokens(m), 0)
      assert.strictEqual(log[0]?.targetTokens, Math.floor(source / 3))
      assert.strictEqual(log[0]?.sessionKey, KEY)
    }).pipe(Effect.provide(lcmWith({ summarizer: scriptedSummarizer(() => "A summary.", log) })))
  })

  it.effect("fails with CompactionFailed on an empty summary and stores nothing", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, chat(15))
      const before = yield* memory.stats(KEY)
      const error = yield* compactor.compact(KEY, { freshTail: 5 }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "CompactionFailed")
      if (error._tag !== "CompactionFailed") return
      assert.strictEqual(error.sessionKey, KEY)
      assert.strictEqual(error.committedSteps, 0)
      assert.include(error.reason, "empty")
      const after = yield* memory.stats(KEY)
      assert.deepStrictEqual(after, before)
    }).pipe(Effect.provide(lcmWith({ summarizer: scriptedSummarizer(() => "  \n  ") }))))

  it.effect("fails with CompactionFailed on a summarizer error, keeping the steps committed before it", () => {
    let calls = 0
    const failing = Layer.succeed(
      Summarizer,
      Summarizer.of({
        summarize: () =>
          Effect.suspend(() => {
            calls++
            return calls === 1
              ? Effect.succeed("First chunk summary.")
              : Effect.fail(new SummarizerError({ reason: "model down" }))
          })
      })
    )
    return Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, chat(45))
      const error = yield* compactor.compact(KEY, { freshTail: 5 }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "CompactionFailed")
      if (error._tag !== "CompactionFailed") return
      assert.strictEqual(error.reason, "model down")
      assert.strictEqual(error.committedSteps, 1)
      assert.strictEqual(calls, 2)
      assert.strictEqual((yield* memory.stats(KEY)).summaries, 1)
      assert.deepStrictEqual(yield* verify(KEY), [])
    }).pipe(Effect.provide(lcmWith({
      // chunks close at 350 tokens (about 11 messages), so 40 messages make several chunks
      config: { chunkTokens: 350 },
      summarizer: failing
    })))
  })
})

describe("LcmMemory compaction with the default configuration", () => {
  it.effect("compacts a session of long messages into a DAG", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, chat(300, 0, ` ${words(400)}`))
      const report = yield* compactor.compact(KEY, { full: true })
      const stats = yield* memory.stats(KEY)
      assert.isAbove(report.leafSummaries, 1)
      assert.isAbove(report.condensedSummaries, 0)
      assert.isAbove(stats.maxDepth, 0)
      assert.isBelow(report.tokensAfter, report.tokensBefore / 4)
      assert.deepStrictEqual(yield* verify(KEY), [])
    }).pipe(Effect.provide(lcmTemp)))
})

/** A compacted session: 200 messages, full compaction with small chunks (depth ≥ 1). */
const compacted = (key = KEY) =>
  Effect.gen(function*() {
    const memory = yield* MemoryProvider
    const compactor = yield* Compactor
    const messages = chat(200)
    yield* memory.append(sessionRefFromKey(key), messages)
    yield* compactor.compact(key, { full: true })
    return messages
  })
const smallChunks = () => lcmWith({ config: { chunkTokens: 600 } })

describe("LcmMemory assembly", () => {
  it.effect("renders live summaries with their ids, then the fresh tail verbatim", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const store = yield* MemoryStore
      const messages = yield* compacted()
      const items = yield* store.items((yield* store.getConversation(KEY)).id)
      const ids = yield* liveSummaryIds(KEY)
      assert.isAbove(ids.length, 0)
      const a = yield* memory.assemble(KEY, { budget: 1_000_000 })
      assert.strictEqual(a.summaries, ids.length)
      assert.strictEqual(a.freshTailMessages, 20)
      assert.strictEqual(a.omittedItems, 0)
      assert.strictEqual(a.messages.length, items.length)
      const raw = yield* store.messagesByIds(items.flatMap((it) => (it.kind === "message" ? [it.refId] : [])))
      const rawById = new Map(raw.map((m) => [m.id, m.message]))
      items.forEach((it, i) => {
        const m = a.messages[i]
        if (it.kind === "summary") {
          assert.strictEqual(m?.role, "user")
          assert.include(typeof m?.content === "string" ? m.content : "", `<memory-summary id="sum_${it.refId}"`)
        } else {
          assert.deepStrictEqual(m, rawById.get(it.refId))
        }
      })
      const tail = a.messages.slice(-20)
      assert.deepStrictEqual(tail, messages.slice(-20).map((m) => ({ role: m.role, content: m.content })))
      assert.strictEqual(a.tokens, a.messages.reduce((n, m) => n + estimateMessageTokens(m), 0))
    }).pipe(Effect.provide(smallChunks())))

  it.effect("keeps the newest message over budget and leaves older items out; the tail follows the budget", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const messages = yield* compacted()
      const stats = yield* memory.stats(KEY)
      const plainOf = (ms: typeof messages) => ms.map((m) => ({ role: m.role, content: m.content }))
      const a = yield* memory.assemble(KEY, { budget: 10 })
      assert.strictEqual(a.summaries, 0)
      assert.strictEqual(a.omittedItems, stats.contextItems - 1)
      assert.deepStrictEqual(a.messages, plainOf(messages.slice(-1)))
      assert.strictEqual(a.freshTailMessages, 1)
      // A budget whose tail share holds 20 messages keeps them all verbatim; a smaller count, fewer.
      const twenty = plainOf(messages.slice(-20)).reduce((n, m) => n + estimateMessageTokens(m), 0)
      const roomy = yield* memory.assemble(KEY, { budget: Math.ceil(twenty / TAIL_SHARE) })
      assert.strictEqual(roomy.freshTailMessages, 20)
      assert.deepStrictEqual(roomy.messages.slice(-20), plainOf(messages.slice(-20)))
      const custom = yield* memory.assemble(KEY, { budget: Math.ceil(twenty / TAIL_SHARE), freshTail: 3 })
      assert.strictEqual(custom.freshTailMessages, 3)
    }).pipe(Effect.provide(smallChunks())))

  it.effect("fills a middle budget newest first within the budget", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      yield* memory.append(session, chat(100))
      const full = yield* memory.assemble(KEY, { budget: 1_000_000 })
      const budget = Math.floor(full.tokens / 2)
      const a = yield* memory.assemble(KEY, { budget })
      assert.isAtMost(a.tokens, budget)
      assert.isAbove(a.omittedItems, 0)
      assert.deepStrictEqual(a.messages, full.messages.slice(-a.messages.length))
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("repairs tool pairing cut by compaction and keeps tool units whole", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const toolTurn = (i: number): Array<NewMessage> => [
        { role: "user", content: `please run step ${i}`, createdAt: T0 + i * 4 },
        { role: "assistant", content: [{ type: "tool_use", id: `t${i}`, name: "bash", input: { step: i } }], createdAt: T0 + i * 4 + 1 },
        { role: "tool_result", content: [{ type: "tool_result", tool_use_id: `t${i}`, content: `done ${i}` }], createdAt: T0 + i * 4 + 2 },
        { role: "assistant", content: `step ${i} finished`, createdAt: T0 + i * 4 + 3 }
      ]
      yield* memory.append(session, Array.from({ length: 10 }, (_, i) => toolTurn(i)).flat())
      for (const freshTail of [1, 2, 3, 5, 7]) {
        for (const budget of [30, 60, 100, 200]) {
          const a = yield* memory.assemble(KEY, { budget, freshTail })
          a.messages.forEach((m, i) => {
            if (typeof m.content === "string") return
            for (const b of m.content) {
              if (b.type === "tool_result") {
                const prev = a.messages[i - 1]
                const paired = prev !== undefined && typeof prev.content !== "string" &&
                  prev.content.some((x) => x.type === "tool_use" && x.id === b.tool_use_id)
                assert.isTrue(paired, `tail ${freshTail}, budget ${budget}: tool_result ${b.tool_use_id} unpaired`)
              }
            }
          })
        }
      }
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("rejects a bad budget or fresh tail and an unknown session", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      yield* memory.append(session, chat(3))
      for (const options of [{ budget: 0 }, { budget: -5 }, { budget: 1.5 }, { budget: 100, freshTail: -1 }]) {
        const e = yield* memory.assemble(KEY, options).pipe(Effect.flip)
        assert.strictEqual(e._tag, "InvalidInput")
      }
      const missing = yield* memory.assemble("nobody", { budget: 100 }).pipe(Effect.flip)
      assert.strictEqual(missing._tag, "SessionNotFound")
    }).pipe(Effect.provide(lcmTemp)))
})

describe("LcmMemory describe and expand", () => {
  it.effect("describes lineage: parents, children and source range", () =>
    Effect.gen(function*() {
      const explorer = yield* Explorer
      yield* compacted()
      const [top] = yield* liveSummaryIds(KEY)
      assert.isDefined(top)
      const d = yield* explorer.describe(`sum_${top}`)
      assert.strictEqual(d.id, `sum_${top}`)
      assert.strictEqual(d.sessionKey, KEY)
      assert.strictEqual(d.kind, "condensed")
      assert.isAbove(d.depth, 0)
      assert.isTrue(d.live)
      assert.deepStrictEqual(d.parents, [])
      assert.isAtLeast(d.childSummaries.length, 2)
      assert.strictEqual(d.childMessages, 0)
      assert.strictEqual(d.sourceRange.firstSeq, 1)
      assert.strictEqual(d.sourceRange.messages, d.sourceRange.lastSeq - d.sourceRange.firstSeq + 1)
      assert.isAtMost(d.earliestAt, d.latestAt)
      // each child points back to its parent and the children cover the parent's range in order
      let next = d.sourceRange.firstSeq
      for (const childId of d.childSummaries) {
        const child = yield* explorer.describe(childId)
        assert.deepStrictEqual(child.parents, [d.id])
        assert.isFalse(child.live)
        assert.strictEqual(child.depth, d.depth - 1)
        assert.strictEqual(child.sourceRange.firstSeq, next)
        next = child.sourceRange.lastSeq + 1
      }
      assert.strictEqual(next, d.sourceRange.lastSeq + 1)
      // accepts the bare number too
      assert.strictEqual((yield* explorer.describe(String(top))).id, d.id)
    }).pipe(Effect.provide(smallChunks())))

  it.effect("expands a leaf into its source messages and a condensed summary into its constituents", () =>
    Effect.gen(function*() {
      const explorer = yield* Explorer
      const messages = yield* compacted()
      const [top] = yield* liveSummaryIds(KEY)
      const d = yield* explorer.describe(`sum_${top}`)
      const e = yield* explorer.expand(d.id, { maxTokens: 1_000_000 })
      assert.strictEqual(e.kind, "condensed")
      assert.deepStrictEqual(e.items.map((it) => it.id), d.childSummaries)
      assert.strictEqual(e.totalItems, d.childSummaries.length)
      assert.isNull(e.nextCursor)
      // walk down to a leaf
      let leafId = d.id
      for (;;) {
        const desc = yield* explorer.describe(leafId)
        if (desc.kind === "leaf") break
        const first = desc.childSummaries[0]
        assert.isDefined(first)
        leafId = first ?? ""
      }
      const leaf = yield* explorer.describe(leafId)
      const le = yield* explorer.expand(leafId, { maxTokens: 1_000_000 })
      assert.strictEqual(le.kind, "leaf")
      assert.strictEqual(le.items.length, leaf.childMessages)
      le.items.forEach((it, i) => {
        assert.strictEqual(it.kind, "message")
        if (it.kind !== "message") return
        const seq = leaf.sourceRange.firstSeq + i
        assert.strictEqual(it.seq, seq)
        const original = messages[seq - 1]
        assert.deepStrictEqual(it.message, { role: original?.role, content: original?.content })
        assert.strictEqual(it.createdAt, original?.createdAt)
      })
    }).pipe(Effect.provide(smallChunks())))

  it.effect("pages with nextCursor until null, within the token limit", () =>
    Effect.gen(function*() {
      const explorer = yield* Explorer
      yield* compacted()
      const [top] = yield* liveSummaryIds(KEY)
      let leafId = `sum_${top}`
      for (;;) {
        const desc = yield* explorer.describe(leafId)
        if (desc.kind === "leaf") break
        leafId = desc.childSummaries[0] ?? ""
      }
      const whole = yield* explorer.expand(leafId, { maxTokens: 1_000_000 })
      assert.isAtLeast(whole.items.length, 4)
      const itemTokens = whole.items[0]?.tokens ?? 0
      const maxTokens = itemTokens * 3
      const pages: Array<ReadonlyArray<string>> = []
      let cursor: number | undefined
      for (let guard = 0; guard < 100; guard++) {
        const page: ExpandResult = yield* explorer.expand(leafId, { maxTokens, cursor })
        assert.isAtMost(page.tokens, maxTokens)
        assert.strictEqual(page.tokens, page.items.reduce((n, it) => n + it.tokens, 0))
        assert.strictEqual(page.totalItems, whole.items.length)
        pages.push(page.items.map((it) => it.id))
        if (page.nextCursor === null) break
        assert.isAbove(page.nextCursor, cursor ?? 0)
        cursor = page.nextCursor
      }
      assert.isAbove(pages.length, 1)
      assert.deepStrictEqual(pages.flat(), whole.items.map((it) => it.id))
      // the first item is always returned whole, even over the limit
      const tiny = yield* explorer.expand(leafId, { maxTokens: 1 })
      assert.strictEqual(tiny.items.length, 1)
      assert.strictEqual(tiny.nextCursor, 1)
      // a cursor past the end gives an empty last page
      const past = yield* explorer.expand(leafId, { cursor: 10_000 })
      assert.deepStrictEqual(past.items, [])
      assert.isNull(past.nextCursor)
    }).pipe(Effect.provide(smallChunks())))

  it.effect("reports unknown ids as SummaryNotFound", () =>
    Effect.gen(function*() {
      const explorer = yield* Explorer
      yield* compacted()
      for (const id of ["sum_999999", "msg_1", "", "sum_", "garbage", "sum_1; DROP TABLE x"]) {
        const e = yield* explorer.describe(id).pipe(Effect.flip)
        assert.strictEqual(e._tag, "SummaryNotFound")
        const x = yield* explorer.expand(id).pipe(Effect.flip)
        assert.strictEqual(x._tag, "SummaryNotFound")
      }
    }).pipe(Effect.provide(smallChunks())))

  it.effect("a scope hides summaries outside it", () =>
    Effect.gen(function*() {
      const explorer = yield* Explorer
      yield* compacted("a1:cli:alice:main")
      const [id] = yield* liveSummaryIds("a1:cli:alice:main")
      const sid = `sum_${id}`
      const bob: SearchScope = { _tag: "User", userId: "bob" }
      const alice: SearchScope = { _tag: "User", userId: "alice" }
      assert.strictEqual((yield* explorer.describe(sid, bob).pipe(Effect.flip))._tag, "SummaryNotFound")
      assert.strictEqual((yield* explorer.expand(sid, { scope: bob }).pipe(Effect.flip))._tag, "SummaryNotFound")
      const otherSession: SearchScope = { _tag: "Session", sessionKey: "a1:cli:alice:other" }
      assert.strictEqual((yield* explorer.describe(sid, otherSession).pipe(Effect.flip))._tag, "SummaryNotFound")
      assert.strictEqual((yield* explorer.describe(sid, alice)).id, sid)
      assert.strictEqual((yield* explorer.describe(sid, { _tag: "Session", sessionKey: "a1:cli:alice:main" })).id, sid)
      assert.strictEqual((yield* explorer.expand(sid, { scope: alice })).summaryId, sid)
      assert.strictEqual((yield* explorer.describe(sid, { _tag: "All" })).id, sid)
    }).pipe(Effect.provide(smallChunks())))
})

describe("LcmMemory search", () => {
  const put = (key: string, texts: ReadonlyArray<string>) =>
    Effect.flatMap(MemoryProvider, (memory) =>
      memory.append(
        sessionRefFromKey(key),
        texts.map((content, i) => ({ role: "user" as const, content, createdAt: T0 + i * 1000 }))
      ))

  it.effect("ranks a document with more matches higher and marks matches with «»", () =>
    Effect.gen(function*() {
      const searcher = yield* Searcher
      yield* put(KEY, [
        "alpha beta gamma delta epsilon zeta",
        "alpha alpha alpha delta epsilon zeta",
        "nothing relevant here at all today"
      ])
      const hits = yield* searcher.search("alpha", { scope: { _tag: "Session", sessionKey: KEY } })
      assert.strictEqual(hits.length, 2)
      assert.include(hits[0]?.snippet ?? "", "«alpha» «alpha» «alpha»")
      assert.isAbove(hits[0]?.score ?? 0, hits[1]?.score ?? 0)
      for (const h of hits) {
        assert.strictEqual(h.kind, "message")
        assert.match(h.id, /^msg_\d+$/)
        assert.strictEqual(h.sessionKey, KEY)
        assert.include(h.snippet, "«alpha»")
      }
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("matches stems, prefixes, phrases and OR", () =>
    Effect.gen(function*() {
      const searcher = yield* Searcher
      yield* put(KEY, ["The containers are running", "I love kubernetes clusters", "red apple pie", "green apple tart"])
      const scope: SearchScope = { _tag: "Session", sessionKey: KEY }
      const count = (q: string) => Effect.map(searcher.search(q, { scope }), (h) => h.length)
      assert.strictEqual(yield* count("container"), 1)
      assert.strictEqual(yield* count("kube*"), 1)
      assert.strictEqual(yield* count(`"apple pie"`), 1)
      assert.strictEqual(yield* count("apple"), 2)
      assert.strictEqual(yield* count("pie OR tart"), 2)
      // Ranked (the default): either word will do, both rank first; strict: both must match.
      const own = yield* searcher.search("apple pie", { scope, neighbours: false })
      assert.deepStrictEqual(own.map((h) => h.matched), [["apple", "pie"], ["apple"]])
      // With their neighbouring turns (the default), the turns around "red apple pie" come after, matching nothing themselves.
      const ranked = yield* searcher.search("apple pie", { scope })
      assert.deepStrictEqual(ranked.map((h) => h.matched), [["apple", "pie"], ["apple"], [], []])
      assert.deepStrictEqual(ranked.slice(2).map((h) => h.snippet).sort(), ["I love kubernetes clusters", "The containers are running"])
      assert.strictEqual((yield* searcher.search("apple pie", { scope, mode: "strict" })).length, 1)
      assert.strictEqual(yield* count("zebra"), 0)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("finds Chinese and Japanese text with 2-character and longer queries", () =>
    Effect.gen(function*() {
      const searcher = yield* Searcher
      yield* put(KEY, [
        "我们讨论了记忆系统的设计",
        "今日は東京で会議があります",
        "天气很好，我们去公园散步",
        "an English message about memory"
      ])
      const scope: SearchScope = { _tag: "Session", sessionKey: KEY }
      const find = (q: string) => searcher.search(q, { scope, mode: "strict" })
      const zh2 = yield* find("记忆")
      assert.strictEqual(zh2.length, 1)
      assert.include(zh2[0]?.snippet ?? "", "«记忆»")
      const zh4 = yield* find("记忆系统")
      assert.strictEqual(zh4.length, 1)
      assert.include(zh4[0]?.snippet ?? "", "记忆系统")
      const ja2 = yield* find("東京")
      assert.strictEqual(ja2.length, 1)
      assert.include(ja2[0]?.snippet ?? "", "«東京»")
      const ja5 = yield* find("東京で会議")
      assert.strictEqual(ja5.length, 1)
      assert.strictEqual((yield* find("公园")).length, 1)
      assert.strictEqual((yield* find("我们")).length, 2)
      assert.strictEqual((yield* find("我们 公园")).length, 1)
      assert.strictEqual((yield* find("大阪")).length, 0)
      assert.strictEqual((yield* find("大阪城公园")).length, 0)
      // OR between short words: either may occur.
      assert.strictEqual((yield* find("东京 OR 公园")).length, 1)
      assert.strictEqual((yield* find("東京 OR 公园")).length, 2)
      assert.strictEqual((yield* find("東京で会議 OR 记忆")).length, 2)
      // Ranked, a question finds its words: 公园 (park) in "what did we do at the Osaka castle park?"
      const ranked = yield* searcher.search("我们在大阪城公园做了什么", { scope })
      assert.deepStrictEqual(ranked.map((h) => h.snippet), ["天气很好，我们去«公园»散步"])
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("searches summaries too", () =>
    Effect.gen(function*() {
      const searcher = yield* Searcher
      yield* compacted()
      // only the deterministic summaries say "Expand for details about"
      const hits = yield* searcher.search("expand", { scope: { _tag: "Session", sessionKey: KEY }, limit: 100 })
      assert.isAbove(hits.length, 0)
      assert.isTrue(hits.every((h) => h.kind === "summary" && /^sum_\d+$/.test(h.id)))
      assert.isTrue(hits.every((h) => h.snippet.toLowerCase().includes("«expand»")))
      const both = yield* searcher.search("message", { scope: { _tag: "Session", sessionKey: KEY }, limit: 100 })
      assert.isTrue(both.some((h) => h.kind === "summary"))
      assert.isTrue(both.some((h) => h.kind === "message"))
    }).pipe(Effect.provide(smallChunks())))

  it.effect("stays inside its scope: session, user, or all", () =>
    Effect.gen(function*() {
      const searcher = yield* Searcher
      yield* put("a1:cli:u1:one", ["kiwi in session one"])
      yield* put("a1:cli:u1:two", ["kiwi in session two"])
      yield* put("a1:cli:u2:three", ["kiwi for another user"])
      const keys = (scope: SearchScope) =>
        Effect.map(searcher.search("kiwi", { scope }), (hits) => hits.map((h) => h.sessionKey).sort())
      assert.deepStrictEqual(yield* keys({ _tag: "Session", sessionKey: "a1:cli:u1:one" }), ["a1:cli:u1:one"])
      assert.deepStrictEqual(yield* keys({ _tag: "User", userId: "u1" }), ["a1:cli:u1:one", "a1:cli:u1:two"])
      assert.deepStrictEqual(yield* keys({ _tag: "User", userId: "u2" }), ["a1:cli:u2:three"])
      assert.deepStrictEqual(yield* keys({ _tag: "User", userId: "u3" }), [])
      assert.deepStrictEqual(yield* keys({ _tag: "All" }), ["a1:cli:u1:one", "a1:cli:u1:two", "a1:cli:u2:three"])
      // CJK routes respect the scope too
      yield* put("a1:cli:u1:one", ["猕猴桃很好吃"])
      yield* put("a1:cli:u2:three", ["猕猴桃不好吃"])
      const cjk = yield* searcher.search("猕猴", { scope: { _tag: "User", userId: "u2" } })
      assert.deepStrictEqual(cjk.map((h) => h.sessionKey), ["a1:cli:u2:three"])
      const cjk3 = yield* searcher.search("猕猴桃", { scope: { _tag: "User", userId: "u1" } })
      assert.deepStrictEqual(cjk3.map((h) => h.sessionKey), ["a1:cli:u1:one"])
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("honours the limit and accepts any text as a query", () =>
    Effect.gen(function*() {
      const searcher = yield* Searcher
      yield* put(KEY, Array.from({ length: 30 }, (_, i) => `banana number ${i}`))
      const scope: SearchScope = { _tag: "All" }
      assert.strictEqual((yield* searcher.search("banana", { scope, limit: 5 })).length, 5)
      assert.strictEqual((yield* searcher.search("banana", { scope })).length, 10)
      assert.strictEqual((yield* searcher.search("banana", { scope, limit: 0 })).length, 1)
      for (const q of [`"`, `"unbalanced`, "NOT", "a AND", "key:value", "%", "_", "😀", "*", "(", ")", "NEAR(a b)", "-", "^", "''", "\\"]) {
        const hits = yield* searcher.search(q, { scope })
        assert.isArray(hits)
      }
    }).pipe(Effect.provide(lcmTemp)))
})

describe("LcmMemory profiles, sessions and review", () => {
  it.effect("ProfileStore gets, sets and limits notes per user and agent", () =>
    Effect.gen(function*() {
      const profiles = yield* ProfileStore
      assert.strictEqual(yield* profiles.getProfile("u1", "a1"), "")
      yield* profiles.setProfile("u1", "a1", "Prefers short answers.")
      assert.strictEqual(yield* profiles.getProfile("u1", "a1"), "Prefers short answers.")
      assert.strictEqual(yield* profiles.getProfile("u1", "a2"), "")
      const tooBig = yield* profiles.setProfile("u1", "a1", "x".repeat(64 * 1024 + 1)).pipe(Effect.flip)
      assert.strictEqual(tooBig._tag, "InvalidInput")
      // the limit is in bytes: 22k CJK characters are 66 KB
      const cjk = yield* profiles.setProfile("u1", "a1", "记".repeat(22_000)).pipe(Effect.flip)
      assert.strictEqual(cjk._tag, "InvalidInput")
      assert.strictEqual(yield* profiles.getProfile("u1", "a1"), "Prefers short answers.")
      yield* profiles.setProfile("u1", "a1", "x".repeat(64 * 1024))
      assert.strictEqual((yield* profiles.getProfile("u1", "a1")).length, 64 * 1024)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("SessionManager merges info, lists sessions and pages history", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const sessions = yield* SessionManager
      yield* memory.append(session, chat(25))
      yield* memory.bootstrap(sessionRefFromKey("a2:tg:u2:x"))
      yield* sessions.saveInfo(KEY, { title: "first", model: "m1" })
      yield* sessions.saveInfo(KEY, { title: "second", tags: ["a"] })
      const info = yield* sessions.loadInfo(KEY)
      assert.deepStrictEqual(info.info, { title: "second", model: "m1", tags: ["a"] })
      assert.strictEqual(info.messages, 25)
      assert.strictEqual(info.agentId, "a1")
      assert.strictEqual(info.userId, "u1")
      const missing = yield* sessions.saveInfo("nope", { a: 1 }).pipe(Effect.flip)
      assert.strictEqual(missing._tag, "SessionNotFound")
      assert.strictEqual((yield* sessions.loadInfo("nope").pipe(Effect.flip))._tag, "SessionNotFound")
      const all = yield* sessions.listInfo()
      assert.deepStrictEqual(all.map((s) => s.sessionKey).sort(), ["a1:cli:u1:main", "a2:tg:u2:x"])
      const u2 = yield* sessions.listInfo({ userId: "u2" })
      assert.deepStrictEqual(u2.map((s) => [s.sessionKey, s.messages]), [["a2:tg:u2:x", 0]])
      assert.deepStrictEqual((yield* sessions.listInfo({ agentId: "a1" })).map((s) => s.info), [info.info])
      assert.strictEqual((yield* sessions.listInfo({ limit: 1 })).length, 1)
      const history = yield* sessions.loadHistory(KEY)
      assert.deepStrictEqual(history.map((m) => m.seq), Array.from({ length: 25 }, (_, i) => i + 1))
      const page = yield* sessions.loadHistory(KEY, { fromSeq: 11, limit: 5 })
      assert.deepStrictEqual(page.map((m) => m.seq), [11, 12, 13, 14, 15])
      assert.deepStrictEqual(page, history.slice(10, 15))
      assert.deepStrictEqual(yield* sessions.loadHistory(KEY, { fromSeq: 26 }), [])
      assert.strictEqual((yield* sessions.loadHistory("nope").pipe(Effect.flip))._tag, "SessionNotFound")
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("history stays complete after compaction", () =>
    Effect.gen(function*() {
      const sessions = yield* SessionManager
      const messages = yield* compacted()
      const history = yield* sessions.loadHistory(KEY)
      assert.deepStrictEqual(history.map((h) => h.message), messages.map((m) => ({ role: m.role, content: m.content })))
    }).pipe(Effect.provide(smallChunks())))

  it.effect("ReviewSource lists unreviewed sessions, builds a transcript and marks them reviewed", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const review = yield* ReviewSource
      yield* memory.append(sessionRefFromKey("a1:cli:u1:one"), chat(5))
      yield* memory.append(sessionRefFromKey("a1:cli:u2:two"), chat(2))
      const batches = yield* review.listUnreviewed({ minMessages: 3 })
      assert.deepStrictEqual(batches, [{
        sessionKey: "a1:cli:u1:one",
        agentId: "a1",
        userId: "u1",
        unreviewedMessages: 5,
        fromSeq: 1,
        toSeq: 5
      }])
      assert.strictEqual((yield* review.listUnreviewed()).length, 2)
      assert.strictEqual((yield* review.listUnreviewed({ limit: 1 })).length, 1)

      const ctx = yield* review.buildReviewContext("a1:cli:u1:one")
      assert.strictEqual(ctx.toSeq, 5)
      const lines = ctx.transcript.split("\n")
      assert.strictEqual(lines.length, 5)
      assert.match(lines[0] ?? "", /^\[user 2023-11-14T22:13:20\.000Z\] Message 0\./)
      assert.match(lines[1] ?? "", /^\[assistant /)

      yield* review.markReviewed("a1:cli:u1:one", 3)
      const rest = yield* review.buildReviewContext("a1:cli:u1:one")
      assert.strictEqual(rest.toSeq, 5)
      assert.deepStrictEqual(rest.transcript.split("\n").map((l) => /Message (\d+)\./.exec(l)?.[1]), ["3", "4"])
      const after = yield* review.listUnreviewed()
      const one = after.find((b) => b.sessionKey === "a1:cli:u1:one")
      assert.deepStrictEqual(one && { from: one.fromSeq, to: one.toSeq, n: one.unreviewedMessages }, { from: 4, to: 5, n: 2 })

      // never backwards
      yield* review.markReviewed("a1:cli:u1:one", 1)
      assert.strictEqual((yield* review.buildReviewContext("a1:cli:u1:one")).toSeq, 5)
      assert.strictEqual(
        (yield* review.listUnreviewed()).find((b) => b.sessionKey === "a1:cli:u1:one")?.fromSeq,
        4
      )
      yield* review.markReviewed("a1:cli:u1:one", 5)
      assert.isUndefined((yield* review.listUnreviewed()).find((b) => b.sessionKey === "a1:cli:u1:one"))
      const done = yield* review.buildReviewContext("a1:cli:u1:one")
      assert.deepStrictEqual(done, { sessionKey: "a1:cli:u1:one", toSeq: 5, transcript: "" })
      assert.strictEqual((yield* review.markReviewed("nope", 1).pipe(Effect.flip))._tag, "SessionNotFound")
      assert.strictEqual((yield* review.buildReviewContext("nope").pipe(Effect.flip))._tag, "SessionNotFound")
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("a review transcript over maxTokens stops at a message boundary so the rest is reviewed next", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const review = yield* ReviewSource
      yield* memory.append(session, chat(40))
      const ctx = yield* review.buildReviewContext(KEY, { maxTokens: 200 })
      assert.isAbove(ctx.toSeq, 0)
      assert.isBelow(ctx.toSeq, 40)
      assert.isAtMost(estimateTextTokens(ctx.transcript), 200)
      assert.strictEqual(ctx.transcript.split("\n").length, ctx.toSeq)
      yield* review.markReviewed(KEY, ctx.toSeq)
      const next = yield* review.buildReviewContext(KEY, { maxTokens: 200 })
      assert.include(next.transcript.split("\n")[0] ?? "", `Message ${ctx.toSeq}.`)
      // one message larger than maxTokens is still returned whole
      const big = yield* review.buildReviewContext(KEY, { maxTokens: 1 })
      assert.strictEqual(big.toSeq, ctx.toSeq + 1)
    }).pipe(Effect.provide(lcmTemp)))
})

describe("LcmMemory layer", () => {
  it.effect("provides all seven memory services under the memory/lcm name", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      assert.strictEqual(memory.name, LcmMemory.NAME)
      assert.strictEqual(memory.name, "memory/lcm")
      yield* Compactor
      yield* Searcher
      yield* Explorer
      yield* ProfileStore
      yield* SessionManager
      yield* ReviewSource
      yield* memory.close
      const stats = yield* memory.stats("nobody").pipe(Effect.flip)
      assert.strictEqual(stats._tag, "SessionNotFound")
    }).pipe(Effect.provide(lcmTemp)))
})
