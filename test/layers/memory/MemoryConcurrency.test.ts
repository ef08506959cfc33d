import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import { verifySession } from "../../../src/domain/memory/verify.ts"
import { messageText, type NewMessage } from "../../../src/domain/message.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { SessionManager } from "../../../src/services/SessionManager.ts"
import { lcmTemp, simpleTemp } from "../../support/db.ts"
import { chat, lcmWith, T0 } from "../../support/memory.ts"

const KEY = "a1:cli:u1:main"

/** Batch `b` of two messages: "b:0" and "b:1". */
const batch = (b: number): Array<NewMessage> => [
  { role: "user", content: `${b}:0`, createdAt: T0 + b },
  { role: "assistant", content: `${b}:1`, createdAt: T0 + b }
]

const checkBatches = (sessionKey: string, batches: number) =>
  Effect.gen(function*() {
    const sessions = yield* SessionManager
    const history = yield* sessions.loadHistory(sessionKey)
    assert.strictEqual(history.length, batches * 2)
    assert.deepStrictEqual(history.map((m) => m.seq), Array.from({ length: batches * 2 }, (_, i) => i + 1))
    const texts = history.map((m) => messageText(m.message))
    // every batch is present once, and its two messages are adjacent and in order
    for (let i = 0; i < texts.length; i += 2) {
      const [b, k] = (texts[i] ?? "").split(":")
      assert.strictEqual(k, "0")
      assert.strictEqual(texts[i + 1], `${b}:1`)
    }
    assert.deepStrictEqual(
      texts.filter((_, i) => i % 2 === 0).map((t) => Number(t.split(":")[0])).sort((a, b) => a - b),
      Array.from({ length: batches }, (_, i) => i)
    )
  })

describe("concurrent appends", () => {
  it.effect("to one session give consecutive seqs and lose nothing (LCM)", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const session = sessionRefFromKey(KEY)
      yield* Effect.all(Array.from({ length: 60 }, (_, b) => memory.append(session, batch(b))), { concurrency: 12 })
      yield* checkBatches(KEY, 60)
      const store = yield* MemoryStore
      const c = yield* store.getConversation(KEY)
      assert.deepStrictEqual(verifySession(yield* store.verifyInput(c.id, KEY)), [])
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("to one session give consecutive seqs and lose nothing (Simple)", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const session = sessionRefFromKey(KEY)
      yield* Effect.all(Array.from({ length: 40 }, (_, b) => memory.append(session, batch(b))), { concurrency: "unbounded" })
      yield* checkBatches(KEY, 40)
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("straight to the store, without the session lock, still give consecutive seqs", () =>
    Effect.gen(function*() {
      const store = yield* MemoryStore
      const c = yield* store.ensureConversation(sessionRefFromKey(KEY))
      const ranges = yield* Effect.all(
        Array.from({ length: 30 }, (_, b) => store.appendMessages(c.id, batch(b))),
        { concurrency: "unbounded" }
      )
      const sorted = [...ranges].sort((a, b) => a.firstSeq - b.firstSeq)
      for (const [i, r] of sorted.entries()) assert.deepStrictEqual(r, { firstSeq: 2 * i + 1, lastSeq: 2 * i + 2 })
      yield* checkBatches(KEY, 30)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("to many sessions in parallel keep every session complete and separate", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const keys = Array.from({ length: 20 }, (_, s) => `a1:cli:u${s % 4}:s${s}`)
      const jobs = keys.flatMap((key) => Array.from({ length: 6 }, (_, b) => memory.append(sessionRefFromKey(key), batch(b))))
      yield* Effect.all(jobs, { concurrency: 16 })
      for (const key of keys) yield* checkBatches(key, 6)
      const sessions = yield* SessionManager
      assert.strictEqual((yield* sessions.listInfo()).length, 20)
      assert.strictEqual((yield* sessions.listInfo({ userId: "u1" })).length, 5)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("while a compaction runs on the same session keep the DAG valid", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      const session = sessionRefFromKey(KEY)
      yield* memory.append(session, chat(200))
      const [report] = yield* Effect.all([
        compactor.compact(KEY, { full: true }),
        Effect.all(Array.from({ length: 30 }, (_, i) => memory.append(session, chat(2, 200 + 2 * i))), { concurrency: 4 })
      ], { concurrency: "unbounded" })
      assert.isTrue(report.compacted)
      const store = yield* MemoryStore
      const c = yield* store.getConversation(KEY)
      assert.deepStrictEqual(verifySession(yield* store.verifyInput(c.id, KEY)), [])
      const stats = yield* memory.stats(KEY)
      assert.strictEqual(stats.messages, 260)
      // the newest messages are still the fresh tail of the assembled context
      const a = yield* memory.assemble(KEY, { budget: 1_000_000 })
      assert.deepStrictEqual(a.messages.slice(-20).map(messageText), chat(260).slice(-20).map(messageText))
    }).pipe(Effect.provide(lcmWith({ config: { chunkTokens: 600 } }))))

  it.effect("two compactions of one session at once do not corrupt it", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      yield* memory.append(sessionRefFromKey(KEY), chat(300))
      const reports = yield* Effect.all([
        compactor.compact(KEY, { full: true }),
        compactor.compact(KEY, { full: true })
      ], { concurrency: "unbounded" })
      assert.isTrue(reports.some((r) => r.compacted))
      const store = yield* MemoryStore
      const c = yield* store.getConversation(KEY)
      assert.deepStrictEqual(verifySession(yield* store.verifyInput(c.id, KEY)), [])
      const stats = yield* memory.stats(KEY)
      const made = reports.reduce((n, r) => n + r.leafSummaries + r.condensedSummaries, 0)
      assert.strictEqual(stats.summaries, made)
    }).pipe(Effect.provide(lcmWith({ config: { chunkTokens: 600 } }))))
})
