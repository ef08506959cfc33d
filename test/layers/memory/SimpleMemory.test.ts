import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { HANDOFF_ACK, HANDOFF_SECTIONS, renderHandoff, sectionOf } from "../../../src/domain/memory/handoff.ts"
import { formatSummaryId, sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { SummaryRequest } from "../../../src/domain/memory/summary.ts"
import { verifySession } from "../../../src/domain/memory/verify.ts"
import { estimateMessageTokens, type Message, type NewMessage } from "../../../src/domain/message.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as SimpleMemory from "../../../src/layers/memory/SimpleMemory.ts"
import * as Sqlite from "../../../src/layers/sql/Sqlite.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { Explorer } from "../../../src/services/Explorer.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { ProfileStore } from "../../../src/services/ProfileStore.ts"
import { ReviewSource } from "../../../src/services/ReviewSource.ts"
import { Searcher } from "../../../src/services/Searcher.ts"
import { SessionManager } from "../../../src/services/SessionManager.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { Summarizer } from "../../../src/services/Summarizer.ts"
import { selectForBudget } from "../../../src/domain/memory/context.ts"
import { TAIL_SHARE, tailTokensOf } from "../../../src/domain/memory/fit.ts"
import { SummarizerError } from "../../../src/domain/memory/errors.ts"
import { pairingProblems } from "../../properties/support/check.ts"
import { simpleTemp, sqliteTemp, tempDbFile } from "../../support/db.ts"
import { chat, scriptedSummarizer, T0 } from "../../support/memory.ts"

const KEY = "a1:cli:u1:main"
const session = sessionRefFromKey(KEY)
const plain = (ms: ReadonlyArray<NewMessage>) => ms.map((m) => ({ role: m.role, content: m.content }))

const lcmOn = (file: string) =>
  LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer), Layer.provideMerge(Sqlite.layer(file)))
const simpleOn = (file: string) =>
  SimpleMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer), Layer.provideMerge(Sqlite.layer(file)))
/** SimpleMemory whose deterministic summarizer records every request. */
const simpleLogged = (log: Array<SummaryRequest>) =>
  SimpleMemory.layerSqlite.pipe(
    Layer.provide(scriptedSummarizer((r) => DeterministicSummarizer.summarizeText(r), log)),
    Layer.provideMerge(sqliteTemp)
  )
const tokensOf = (ms: ReadonlyArray<Message>) => ms.reduce((n, m) => n + estimateMessageTokens(m), 0)

const verified = Effect.gen(function*() {
  const store = yield* MemoryStore
  const c = yield* store.getConversation(KEY)
  assert.deepStrictEqual(verifySession(yield* store.verifyInput(c.id, KEY)), [], "verifySession")
  return c
})

/**
 * A working session: a goal, a decision, files, an error, chat, and a tool call whose result is
 * the 20th message from the end, so the fresh tail must start one earlier, at the tool_use.
 */
const workSession = (): Array<NewMessage> => {
  const at = (i: number) => T0 + i * 60_000
  const intro: Array<NewMessage> = [
    { role: "user", content: "Please migrate the backup scripts to Python. Keep the old cron entries until then.", createdAt: at(0) },
    {
      role: "assistant",
      content: "We decided to rewrite scripts/backup.sh as scripts/backup.py, because bash has no error handling.",
      createdAt: at(1)
    },
    { role: "user", content: "Good. Also update docs/backup.md when done.", createdAt: at(2) },
    { role: "assistant", content: [{ type: "tool_use", id: "w1", name: "write", input: { path: "scripts/backup.py" } }], createdAt: at(3) },
    { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "w1", content: "written" }], createdAt: at(4) },
    { role: "assistant", content: "Wrote the script. The rsync step failed with a permission error on /srv/backups.", createdAt: at(5) }
  ]
  const tool: Array<NewMessage> = [
    { role: "assistant", content: [{ type: "tool_use", id: "b1", name: "bash", input: { cmd: "ls" } }], createdAt: at(60) },
    { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "b1", content: "backup.py" }], createdAt: at(61) }
  ]
  return [...intro, ...chat(40, 6), ...tool, ...chat(19, 62)]
}

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
        const expected = selectForBudget(all, budget, freshTail, tailTokensOf(budget))
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
      // The fresh tail: 20 messages at most, and at most its share of the budget (12 of these).
      assert.strictEqual(a.freshTailMessages, Math.floor(tailTokensOf(budget) / perMessage))
      assert.strictEqual((yield* memory.assemble(KEY, { budget, tailShare: 1 })).freshTailMessages, 20)
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

  it.effect("always keeps the newest unit, whatever the budget; the fresh tail follows the budget", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const messages = chat(30)
      yield* memory.append(session, messages)
      const a = yield* memory.assemble(KEY, { budget: 1 })
      assert.deepStrictEqual(a.messages, plain(messages.slice(-1)))
      assert.strictEqual(a.freshTailMessages, 1)
      assert.isAbove(a.tokens, 1)
      const twenty = tokensOf(plain(messages.slice(-20)))
      const b = yield* memory.assemble(KEY, { budget: Math.ceil(twenty / TAIL_SHARE), freshTail: 4 })
      assert.strictEqual(b.freshTailMessages, 4)
      const c = yield* memory.assemble(KEY, { budget: Math.ceil(twenty / TAIL_SHARE) })
      assert.strictEqual(c.freshTailMessages, 20)
      assert.deepStrictEqual(c.messages, plain(messages))
      const invalid = yield* memory.assemble(KEY, { budget: 0 }).pipe(Effect.flip)
      assert.strictEqual(invalid._tag, "InvalidInput")
      const missing = yield* memory.assemble("nobody", { budget: 100 }).pipe(Effect.flip)
      assert.strictEqual(missing._tag, "SessionNotFound")
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("has the provider, compactor, profile and session capabilities, no search or explore", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      assert.strictEqual(memory.name, SimpleMemory.NAME)
      assert.strictEqual(memory.name, "memory/simple")
      assert.isTrue(Option.isSome(yield* Effect.serviceOption(Compactor)))
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

describe("SimpleMemory handoff compaction (seed 003)", () => {
  it.effect("writes one leaf summary with the seven sections of everything outside the unit-aligned tail of 20", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      const store = yield* MemoryStore
      const messages = workSession()
      yield* memory.append(session, messages)
      const report = yield* compactor.compact(KEY)
      assert.deepInclude(report, { compacted: true, passes: 1, leafSummaries: 1, condensedSummaries: 0, stopReason: "no_candidates" })
      assert.isBelow(report.tokensAfter, report.tokensBefore)
      const c = yield* verified
      const items = yield* store.items(c.id)
      // the tool_use / tool_result pair is kept together: 21 messages stay raw
      assert.deepStrictEqual(items.map((it) => it.kind), ["summary", ...Array<"message">(21).fill("message")])
      const [summary] = yield* store.summariesByIds([items[0]?.refId ?? -1])
      assert.deepInclude(summary, { kind: "leaf", depth: 0, firstSeq: 1, lastSeq: messages.length - 21 })
      const content = summary?.content ?? ""
      assert.strictEqual(report.summary?.id, formatSummaryId(summary?.id ?? -1))
      assert.strictEqual(report.summary?.content, content)
      const headings = content.split("\n").filter((l) => l.startsWith("## "))
      assert.deepStrictEqual(headings, HANDOFF_SECTIONS.map((h) => `## ${h}`))
      assert.strictEqual(sectionOf(content, "Goal"), "Please migrate the backup scripts to Python.")
      assert.include(sectionOf(content, "Key Decisions"), "decided to rewrite scripts/backup.sh")
      for (const path of ["scripts/backup.sh", "scripts/backup.py", "docs/backup.md"]) {
        assert.include(sectionOf(content, "Files Changed"), path)
      }
      assert.include(sectionOf(content, "Blockers / Gotchas"), "permission error")
      assert.include(sectionOf(content, "Next Steps"), "Message 44.")
      // the links: exactly the summarized messages, and the raw messages are all still there
      const links = yield* store.summaryLinks(summary?.id ?? -1)
      assert.strictEqual(links.sourceMessages.length, messages.length - 21)
      assert.strictEqual((yield* (yield* SessionManager).loadHistory(KEY)).length, messages.length)
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("assembles the summary, an acknowledgement and the newer messages, within the budget", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const messages = [...workSession(), ...chat(30, 200)]
      yield* memory.append(session, messages.slice(0, -30))
      const report = yield* (yield* Compactor).compact(KEY)
      yield* memory.append(session, messages.slice(-30))
      const content = report.summary?.content ?? ""
      const after = plain(messages.slice(-51))
      const all = yield* memory.assemble(KEY, { budget: 1_000_000 })
      const [head, ack] = renderHandoff({ content, earliestAt: T0, latestAt: T0 + 45 * 60_000 })
      assert.deepStrictEqual(all.messages, [head, ack, ...after])
      assert.deepStrictEqual(ack, { role: "assistant", content: HANDOFF_ACK })
      assert.include(typeof head?.content === "string" ? head.content : "", content)
      assert.deepInclude(all, { summaries: 1, freshTailMessages: 20, omittedItems: 0, tokens: tokensOf(all.messages) })
      // exactly enough for everything, then one token less: the summary holds everything before the
      // messages, so it is the last thing given up — the oldest message goes instead (no gaps)
      const whole = yield* memory.assemble(KEY, { budget: all.tokens })
      assert.strictEqual(whole.summaries, 1)
      const tight = yield* memory.assemble(KEY, { budget: all.tokens - 1 })
      assert.strictEqual(tight.summaries, 1)
      const kept = tight.messages.slice(2)
      assert.deepStrictEqual(tight.messages, [head, ack, ...after.slice(after.length - kept.length)])
      // The oldest unit (here a tool call with its result) went instead.
      assert.strictEqual(kept.length, after.length - 2)
      assert.strictEqual(tight.omittedItems, 2)
      for (const budget of [1, 300, 900, all.tokens - 400, all.tokens - 200, all.tokens - 1]) {
        const a = yield* memory.assemble(KEY, { budget })
        assert.deepStrictEqual(pairingProblems(a.messages), [], `pairing at ${budget}`)
        const rest = a.summaries === 1 ? a.messages.slice(2) : a.messages
        if (a.summaries === 1) assert.deepStrictEqual(a.messages.slice(0, 2), [head, ack], `summary first at ${budget}`)
        assert.deepStrictEqual(rest, after.slice(after.length - rest.length), `a suffix at ${budget}`)
        assert.strictEqual(a.omittedItems, 1 - a.summaries + after.length - rest.length)
        assert.strictEqual(a.tokens, tokensOf(a.messages))
        if (a.messages.length > a.freshTailMessages) assert.isAtMost(a.tokens, budget)
        assert.isAtMost(a.freshTailMessages, 20)
        assert.isAtLeast(a.freshTailMessages, 1, "the newest message always")
      }
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("needs compaction above 0.75 × budget of Simple's view, and honours the threshold", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(session, workSession())
      const view = (yield* memory.assemble(KEY, { budget: 1_000_000 })).tokens
      assert.isTrue(yield* compactor.needsCompaction(KEY, Math.floor(view / 0.75) - 1))
      assert.isFalse(yield* compactor.needsCompaction(KEY, Math.ceil(view / 0.75)))
      assert.isTrue(yield* compactor.needsCompaction(KEY, view - 1, 1))
      const below = yield* compactor.compact(KEY, { budget: Math.ceil(view / 0.75) })
      assert.deepInclude(below, { compacted: false, passes: 0, stopReason: "below_threshold", tokensBefore: view })
      const done = yield* compactor.compact(KEY, { budget: Math.floor(view / 0.75) - 1 })
      assert.deepInclude(done, { compacted: true, stopReason: "below_threshold", tokensBefore: view })
      const now = (yield* memory.assemble(KEY, { budget: 1_000_000 })).tokens
      assert.strictEqual(done.tokensAfter, now)
      assert.isFalse(yield* compactor.needsCompaction(KEY, Math.ceil(now / 0.75)))
      // everything left is the fresh tail
      const again = yield* compactor.compact(KEY, { full: true })
      assert.deepInclude(again, { compacted: false, passes: 0, stopReason: "no_candidates", tokensBefore: now, tokensAfter: now })
      yield* verified
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("a second compaction folds the previous summary's text in, yet links only its own messages", () => {
    const log: Array<SummaryRequest> = []
    return Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      const store = yield* MemoryStore
      yield* memory.append(session, workSession())
      const first = yield* compactor.compact(KEY)
      yield* memory.append(session, chat(40, 300))
      const second = yield* compactor.compact(KEY)
      assert.isTrue(second.compacted)
      assert.strictEqual(log.length, 2)
      const [r1, r2] = log
      assert.strictEqual(r1?.style, "handoff")
      assert.strictEqual(r2?.style, "handoff")
      assert.isTrue(r1?.input.kind === "leaf" && r1.input.previousSummary === undefined)
      assert.isTrue(r2?.input.kind === "leaf" && r2.input.previousSummary === first.summary?.content)
      const text = second.summary?.content ?? ""
      // the goal came from a message the second summary never saw: carried over from the first
      assert.strictEqual(sectionOf(text, "Goal"), "Please migrate the backup scripts to Python.")
      assert.include(sectionOf(text, "Files Changed"), "scripts/backup.py")
      const c = yield* verified
      const items = yield* store.items(c.id)
      assert.deepStrictEqual(items.slice(0, 2).map((it) => it.kind), ["summary", "summary"])
      const [s1, s2] = yield* store.summariesByIds(items.slice(0, 2).map((it) => it.refId))
      assert.strictEqual(s2?.firstSeq, (s1?.lastSeq ?? 0) + 1)
      const links = yield* store.summaryLinks(s2?.id ?? -1)
      assert.deepStrictEqual([links.constituents, links.parents, links.live], [[], [], true])
      assert.strictEqual(links.sourceMessages.length, (s2?.lastSeq ?? 0) - (s1?.lastSeq ?? 0))
      // Simple's view starts at the newest summary only
      const a = yield* memory.assemble(KEY, { budget: 1_000_000 })
      assert.strictEqual(a.summaries, 1)
      assert.include(typeof a.messages[0]?.content === "string" ? a.messages[0].content : "", text)
      assert.strictEqual(a.messages.length, 2 + 20)
    }).pipe(Effect.provide(simpleLogged(log)))
  })

  it.effect("a failing summarizer leaves the session untouched", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const store = yield* MemoryStore
      yield* memory.append(session, workSession())
      const c = yield* store.getConversation(KEY)
      const before = yield* store.verifyInput(c.id, KEY)
      const e = yield* Effect.flip((yield* Compactor).compact(KEY))
      assert.strictEqual(e._tag, "CompactionFailed")
      assert.include(e.message, "0 committed step")
      assert.deepStrictEqual(yield* store.verifyInput(c.id, KEY), before)
    }).pipe(Effect.provide(
      SimpleMemory.layerSqlite.pipe(
        Layer.provide(Layer.succeed(Summarizer, Summarizer.of({ summarize: () => Effect.fail(new SummarizerError({ reason: "down" })) }))),
        Layer.provideMerge(sqliteTemp)
      )
    )))
})

describe("switching between SimpleMemory and LcmMemory on one database", () => {
  it.effect("loses nothing in either direction, and each reads the other's summaries", () =>
    Effect.gen(function*() {
      const file = yield* tempDbFile
      const first = workSession()
      const second = chat(60, 300)
      const third = chat(5, 400)
      const all = [...first, ...second, ...third]

      // 1. Simple appends and compacts: one handoff leaf
      const handoff = yield* Effect.gen(function*() {
        yield* (yield* MemoryProvider).append(session, first)
        const report = yield* (yield* Compactor).compact(KEY)
        yield* verified
        return report.summary?.content ?? ""
      }).pipe(Effect.provide(simpleOn(file)))

      // 2. LCM sees it as an ordinary depth-0 summary, appends more, compacts (and may condense it)
      const lcmView = yield* Effect.gen(function*() {
        const memory = yield* MemoryProvider
        const before = yield* memory.assemble(KEY, { budget: 1_000_000 })
        assert.strictEqual(before.summaries, 1)
        assert.include(typeof before.messages[0]?.content === "string" ? before.messages[0].content : "", handoff)
        assert.deepStrictEqual(before.messages.slice(1), plain(first.slice(-21)))
        const described = yield* (yield* Explorer).describe("sum_1")
        assert.deepInclude(described, { kind: "leaf", depth: 0, content: handoff })
        yield* memory.append(session, second)
        assert.isTrue((yield* (yield* Compactor).compact(KEY, { full: true })).compacted)
        yield* verified
        return yield* memory.assemble(KEY, { budget: 1_000_000 })
      }).pipe(Effect.provide(lcmOn(file)))

      // 3. Simple: LCM's newest live summary + ack + the raw messages after it; then a handoff of its own
      yield* Effect.gen(function*() {
        const memory = yield* MemoryProvider
        const store = yield* MemoryStore
        const c = yield* store.getConversation(KEY)
        const items = yield* store.items(c.id)
        const newest = [...items].reverse().find((it) => it.kind === "summary")
        const [s] = yield* store.summariesByIds([newest?.refId ?? -1])
        assert.isDefined(s)
        if (s === undefined) return
        const a = yield* memory.assemble(KEY, { budget: 1_000_000 })
        const after = plain(all.slice(s.lastSeq, first.length + second.length))
        assert.deepStrictEqual(a.messages, [...renderHandoff(s), ...after])
        assert.strictEqual(a.summaries, 1)
        assert.deepStrictEqual(pairingProblems(a.messages), [])
        const stats = yield* memory.stats(KEY)
        assert.strictEqual(stats.messages, first.length + second.length)
        yield* memory.append(session, third)
        const report = yield* (yield* Compactor).compact(KEY, { freshTail: 4 })
        assert.isTrue(report.compacted)
        yield* verified
      }).pipe(Effect.provide(simpleOn(file)))

      // 4. LCM again: its own summaries, Simple's new leaf and the raw tail, all verifiable
      yield* Effect.gen(function*() {
        const memory = yield* MemoryProvider
        const a = yield* memory.assemble(KEY, { budget: 1_000_000 })
        assert.strictEqual(a.summaries, lcmView.summaries + 1)
        assert.deepStrictEqual(a.messages.slice(-4), plain(all.slice(-4)))
        assert.strictEqual((yield* memory.stats(KEY)).messages, all.length)
        yield* (yield* Compactor).compact(KEY, { full: true })
        yield* verified
      }).pipe(Effect.provide(lcmOn(file)))
    }))
})
