/**
 * Issue 25: ranked search matches each message together with its neighbouring turns, at a lower
 * weight, so a question finds the turn whose context holds its words ("When did I start the new
 * job?" finds "Monday was my first day" right after "How's the new job going?"). Real SQLite files.
 * Strict search, required terms, `NOT` and filters keep their meaning on the message's own text;
 * a one-word lookup finds only the turns that hold the word; context never crosses sessions; the
 * memory tool's own calls are neither context nor hits. A second hop finds the other half of an
 * answer told far away, through the best hit's other words. Summaries are ranked with the summaries
 * of their depth around them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { SearchHit, SearchScope } from "../../../src/domain/memory/types.ts"
import type { NewMessage } from "../../../src/domain/message.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import * as MemoryTool from "../../../src/layers/tools/memory.ts"
import { Searcher } from "../../../src/services/Searcher.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { lcmOn, sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"
import { chat, lcmWith, scriptedSummarizer, T0 } from "../../support/memory.ts"

const KEY = "a1:cli:sam:main"
const session: SearchScope = { _tag: "Session", sessionKey: KEY }

let clock = T0
const msg = (role: NewMessage["role"], content: NewMessage["content"]): NewMessage => {
  clock += 60_000
  return { role, content, createdAt: clock }
}
const put = (key: string, messages: ReadonlyArray<NewMessage>) =>
  Effect.flatMap(MemoryProvider, (memory) => memory.append(sessionRefFromKey(key), messages))

const FILLER: ReadonlyArray<NewMessage> = [
  msg("user", "Good morning! The weather looks nice today."),
  msg("assistant", "Morning! A good day for a walk in the park."),
  msg("user", "Can you help me plan the groceries for the week?"),
  msg("assistant", "Sure: vegetables, rice, eggs and some fruit.")
]

const seqs = (hits: ReadonlyArray<SearchHit>) => hits.map((h) => h.seq)
const numeric = (hits: ReadonlyArray<SearchHit>) => hits.map((h) => h.seq ?? 0).sort((a, b) => a - b)

for (const db of testDatabases(sqliteTemp)) {
const lcmTemp = lcmOn(db.layer)

describe(`ranked search matches a turn together with its neighbours (${db.name})`, () => {
  it.effect("a question finds the answer whose context holds its words, ranked below the turns that hold them", () =>
    Effect.gen(function*() {
      yield* put(KEY, [
        ...FILLER, // 1-4
        msg("assistant", "How's the new job going?"), // 5
        msg("user", "Monday was my first day, the team is lovely."), // 6: the answer, none of the question's words
        ...FILLER, // 7-10
        msg("user", "My brother is looking for a new job in Berlin."), // 11: the words, not the answer
        msg("assistant", "I hope he finds something soon."), // 12
        ...FILLER
      ])
      const searcher = yield* Searcher
      const question = "When did I start the new job?"
      const hits = yield* searcher.search(question, { scope: session })
      const answer = hits.find((h) => h.seq === 6)
      assert.isDefined(answer, `the answer is found: ${JSON.stringify(seqs(hits))}`)
      assert.deepStrictEqual(answer?.matched, [], "it matches nothing itself")
      assert.include(answer?.snippet ?? "", "Monday was my first day")
      assert.notInclude(answer?.snippet ?? "", "«", "nothing of its own is marked")
      // the turns that hold the words still come first
      assert.deepStrictEqual(numeric(hits.slice(0, 2)), [5, 11])
      assert.isBelow(hits.indexOf(answer as SearchHit), 4, "in the top 4")
      // with the row's own text only (as before), the answer is not found at all
      const own = yield* searcher.search(question, { scope: session, neighbours: false })
      assert.deepStrictEqual(numeric(own), [5, 11])
      // strict mode: every word on the row's own text, neighbours or not
      assert.deepStrictEqual(yield* searcher.search("new job", { scope: session, mode: "strict" }), yield* searcher.search("new job", { scope: session, mode: "strict", neighbours: false }))
      assert.deepStrictEqual(numeric(yield* searcher.search("new job", { scope: session, mode: "strict" })), [5, 11])
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("a one-word lookup, required terms, NOT and filters hold on the turn's own text", () =>
    Effect.gen(function*() {
      yield* put(KEY, [
        ...FILLER,
        msg("assistant", "How's the new job going?"),
        msg("user", "Monday was my first day, the team is lovely."),
        msg("assistant", "That's wonderful to hear."),
        ...FILLER
      ])
      const searcher = yield* Searcher
      // one word: only the turns that hold it
      assert.deepStrictEqual(seqs(yield* searcher.search("job", { scope: session })), [5])
      // AND: the required word must be in the turn itself; its neighbours may still lift it
      const required = yield* searcher.search("new AND job monday", { scope: session })
      assert.deepStrictEqual(seqs(required), [5])
      // NOT: a turn that holds the excluded word is out, and nothing is found through its context alone
      assert.deepStrictEqual(seqs(yield* searcher.search("new job NOT monday", { scope: session })), [5])
      // role filter: the answer (a user turn) is not found through an assistant turn's words
      assert.deepStrictEqual(seqs(yield* searcher.search("new job role:user", { scope: session })), [])
      assert.deepStrictEqual(seqs(yield* searcher.search("new job role:assistant", { scope: session })), [5])
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("a hit that matches its own text shows the same snippet and words with or without its neighbours", () =>
    Effect.gen(function*() {
      // 120 long turns with both words past the characters read of a turn that is only context
      const long = (i: number) => `Report ${i}. ${"filler words about the weather and groceries. ".repeat(40)} alpha zeta closes it.`
      yield* put(KEY, Array.from({ length: 120 }, (_, i) => msg(i % 2 === 0 ? "user" : "assistant", long(i))))
      const searcher = yield* Searcher
      for (const limit of [5, 10, 30]) {
        const own = new Map((yield* searcher.search("alpha zeta", { scope: session, limit, neighbours: false })).map((h) => [h.id, h]))
        const hits = yield* searcher.search("alpha zeta", { scope: session, limit })
        assert.strictEqual(hits.length, limit)
        for (const h of hits) {
          assert.deepStrictEqual(h.matched, ["alpha", "zeta"], `${h.id} (limit ${limit})`)
          assert.include(h.snippet, "«alpha» «zeta»", `${h.id} (limit ${limit}) was ranked on a cut text`)
          const same = own.get(h.id)
          if (same !== undefined) assert.strictEqual(h.snippet, same.snippet)
        }
      }
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("a second hop: the best hit's other words find the turn that completes the answer", () =>
    Effect.gen(function*() {
      yield* put(KEY, [
        ...FILLER, // 1-4
        msg("user", "My cousin Ana lives in Porto these days."), // 5: the other half of the answer
        msg("assistant", "Lovely city, great food."), // 6
        ...FILLER, // 7-10
        ...FILLER, // 11-14
        msg("user", "I'm flying out to see my cousin on Friday."), // 15: the question's words
        msg("assistant", "Have a great trip!"), // 16
        ...FILLER
      ])
      const searcher = yield* Searcher
      const question = "Which city am I flying to on Friday?"
      const hits = yield* searcher.search(question, { scope: session })
      assert.strictEqual(hits[0]?.seq, 15)
      const porto = hits.find((h) => h.seq === 5)
      assert.isDefined(porto, JSON.stringify(hits.map((h) => [h.seq, h.hop, h.snippet])))
      assert.deepStrictEqual(porto?.hop, ["cousin"])
      assert.deepStrictEqual(porto?.matched, [])
      assert.include(porto?.snippet ?? "", "«cousin» Ana lives in Porto")
      assert.isAtMost(porto?.score ?? Infinity, hits[0]?.score ?? 0)
      for (let i = 1; i < hits.length; i++) assert.isAtMost(hits[i]?.score ?? 0, hits[i - 1]?.score ?? 0, "scores rise down the list")
      // the tool says how it was found
      const tool = yield* MemoryTool.make
      const out = yield* tool.execute({ action: "search", query: question }, { sessionKey: KEY, userId: "sam", agentId: "a1" })
      assert.match(out, /\[message, [^\]]*, through the first hit's words: cousin\] My «cousin» Ana lives in Porto/)
      // no second hop: own text only, strict, a required word, a query the best hit holds whole, one word
      const none = (hs: ReadonlyArray<SearchHit>) => hs.filter((h) => h.hop !== undefined || h.seq === 5)
      assert.deepStrictEqual(none(yield* searcher.search(question, { scope: session, neighbours: false })), [])
      assert.deepStrictEqual(none(yield* searcher.search("flying Friday", { scope: session, mode: "strict" })), [])
      assert.deepStrictEqual(none(yield* searcher.search("flying AND friday city", { scope: session })), [])
      assert.deepStrictEqual(none(yield* searcher.search("flying Friday", { scope: session })), [])
      assert.deepStrictEqual(none(yield* searcher.search("Friday", { scope: session })), [])
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("a summary is ranked with the summaries told around it, never found through them alone", () =>
    Effect.gen(function*() {
      // Six compactions, each of a block that opens with a note: each leaf summary is its block's note.
      const NOTES = [
        "The weather was nice and we planned groceries.",
        "Sam mentioned the new job at the bakery downtown.",
        "Monday was the first day for Sam; the team is lovely.",
        "Groceries again: rice, eggs and fruit.",
        "Sam went hiking on Monday with an old friend.",
        "Rain all week, so we stayed in and read."
      ]
      const compactor = yield* Compactor
      for (const [b, note] of NOTES.entries()) {
        const [first, ...rest] = chat(20, b * 20)
        if (first === undefined) return assert.fail("no message")
        yield* put(KEY, [{ ...first, content: `NOTE ${note}` }, ...rest])
        yield* compactor.compact(KEY, { full: true })
      }
      const searcher = yield* Searcher
      const question = "When did Sam start the new job at the bakery?"
      const summaries = (hits: ReadonlyArray<SearchHit>) => hits.filter((h) => h.kind === "summary").map((h) => h.snippet.replaceAll(/[«»…]/g, ""))
      const at = (list: ReadonlyArray<string>, words: string) => list.findIndex((t) => t.includes(words))
      const own = summaries(yield* searcher.search(question, { scope: session, limit: 20, neighbours: false }))
      const ranked = summaries(yield* searcher.search(question, { scope: session, limit: 20 }))
      // the layout this test needs: each note a leaf summary of its own
      for (const note of NOTES.filter((n) => n.includes("Sam"))) assert.isAtLeast(at(own, note), 0, JSON.stringify(own))
      assert.strictEqual(at(ranked, "new job at the bakery"), 0, JSON.stringify(ranked))
      // on their own text "Sam" alone ties them and the newer comes first; with their context, the
      // summary right after the new job's comes first
      assert.isBelow(at(own, "hiking on Monday"), at(own, "first day for Sam"), JSON.stringify(own))
      assert.isBelow(at(ranked, "first day for Sam"), at(ranked, "hiking on Monday"), JSON.stringify(ranked))
      // a summary that matches nothing itself is not a hit through its neighbours
      assert.strictEqual(at(ranked, "Groceries again"), -1)
      assert.strictEqual(ranked.length, own.length)
    }).pipe(Effect.provide(lcmWith({
        database: db.layer,
      summarizer: scriptedSummarizer((request) =>
        request.input.kind === "leaf"
          ? request.input.messages.filter((m) => m.text.startsWith("NOTE ")).map((m) => m.text.slice(5)).join(" ") || "Chatter."
          : "Earlier chatter."
      )
    }))))

  it.effect("Chinese: the answer after the question's words", () =>
    Effect.gen(function*() {
      yield* put(KEY, [
        ...FILLER,
        msg("assistant", "你的新工作怎么样？"),
        msg("user", "周一是我第一天上班，同事都很好。"),
        ...FILLER
      ])
      const searcher = yield* Searcher
      const hits = yield* searcher.search("我什么时候开始新工作的？", { scope: session })
      const answer = hits.find((h) => h.seq === 6)
      assert.isDefined(answer, JSON.stringify(hits.map((h) => [h.seq, h.snippet])))
      assert.isUndefined((yield* searcher.search("我什么时候开始新工作的？", { scope: session, neighbours: false })).find((h) => h.seq === 6))
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("context never crosses sessions, and the memory tool's own calls are skipped, never hits", () =>
    Effect.gen(function*() {
      // session A ends with the question's words; session B (same user) starts with an answer-like turn
      yield* put("a1:cli:sam:a", [...FILLER, msg("assistant", "How's the new job going?")])
      yield* put("a1:cli:sam:b", [msg("user", "Monday was my first day."), ...FILLER])
      const searcher = yield* Searcher
      const user: SearchScope = { _tag: "User", userId: "sam" }
      const hits = yield* searcher.search("When did I start the new job?", { scope: user })
      assert.deepStrictEqual(hits[0]?.seq, 5)
      assert.deepStrictEqual(hits.filter((h) => h.sessionKey !== "a1:cli:sam:a"), [], "found through another session's turn")
      // the same words at the start of B would find its first turn
      assert.isTrue(hits.some((h) => h.seq === 4), "the turn before the words in A is found through them")

      // in C, the model searched its memory between the question's words and the answer
      yield* put("a1:cli:sam:c", [
        ...FILLER, // 1-4
        msg("assistant", "How's the new job going?"), // 5
        msg("assistant", [{ type: "tool_use", id: "m1", name: "memory", input: { action: "search", query: "new job" } }]), // 6
        msg("tool_result", [{ type: "tool_result", tool_use_id: "m1", content: "msg_5 How's the «new» «job» going?" }]), // 7
        msg("user", "Monday was my first day."), // 8: two turns with text away from the words, skipping 6-7
        ...FILLER
      ])
      const c: SearchScope = { _tag: "Session", sessionKey: "a1:cli:sam:c" }
      const inC = yield* searcher.search("When did I start the new job?", { scope: c })
      assert.deepStrictEqual(inC[0]?.seq, 5)
      assert.isTrue(inC.some((h) => h.seq === 8), `the answer, past the memory call: ${JSON.stringify(seqs(inC))}`)
      assert.isFalse(inC.some((h) => h.seq === 6 || h.seq === 7), `a memory call or result is a hit: ${JSON.stringify(inC.map((h) => [h.seq, h.snippet]))}`)
    }).pipe(Effect.provide(lcmTemp)))
})
}
