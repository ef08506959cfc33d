/**
 * The gateway's catch-up at start (issue 15): bursts that ended while no gateway ran are queued for
 * reflection — recent sessions (quiet for more than 10 minutes, less than 7 days) with at least two
 * messages after their latest diary entry — on the real MemoryStore and Diary over SQLite, with a
 * recording Learning (a fake of our contract, to see what is queued).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import type { BurstTrigger, DiaryEntry } from "../../../src/domain/learning/diary.ts"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import { CATCH_UP_IDLE_MS, CATCH_UP_MAX, CATCH_UP_WINDOW_MS, catchUp } from "../../../src/layers/learning/catchUp.ts"
import * as SqliteDiary from "../../../src/layers/learning/SqliteDiary.ts"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import { Diary } from "../../../src/services/Diary.ts"
import { Learning } from "../../../src/services/Learning.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { sqliteTemp } from "../../support/db.ts"
import { chat, T0 } from "../../support/memory.ts"

const queued: Array<string> = []
const recording = Layer.succeed(Learning, Learning.of({
  beforeTurn: () => Effect.succeed(""),
  skillUsed: () => Effect.void,
  endBurst: (key: string, trigger: BurstTrigger) => Effect.sync(() => void queued.push(`${key} ${trigger}`)),
  reflect: () => Effect.succeed(Option.none<DiaryEntry>()),
  feedback: () => Effect.succeed({ rules: [], forYou: [], skills: [] }),
  idle: Effect.void
}))

const stores = Layer.mergeAll(SqliteMemoryStore.layer, SqliteDiary.layer, recording).pipe(Layer.provideMerge(sqliteTemp))

/** A session whose messages end `ago` ms before `now`. */
const session = (key: string, count: number, lastAt: number) =>
  Effect.gen(function*() {
    const memory = yield* MemoryStore
    const c = yield* memory.ensureConversation(sessionRefFromKey(key))
    const messages = chat(count).map((m, i) => ({ ...m, createdAt: lastAt - (count - 1 - i) * 1000 }))
    yield* memory.appendMessages(c.id, messages)
  })

const entry = (key: string, toSeq: number, at: number): DiaryEntry => ({
  id: `diary_${key.replaceAll(":", "_")}`,
  sessionKey: key,
  agentId: "a1",
  userId: "u",
  fromSeq: 1,
  toSeq,
  accomplishments: [],
  decisions: [],
  challenges: [],
  keyLearnings: [],
  tags: [],
  status: "success",
  qualityScore: 0.5,
  createdAt: at,
  source: "heuristic",
  trigger: "demand"
})

describe("catch-up at the gateway's start", () => {
  it.effect("queues recent, quiet, unreflected sessions only", () =>
    Effect.gen(function*() {
      queued.length = 0
      const now = T0 + 30 * 86_400_000
      yield* TestClock.setTime(now)
      yield* session("a1:cli:u:quiet", 4, now - CATCH_UP_IDLE_MS - 60_000) // over: queued
      yield* session("a1:cli:u:live", 4, now - 60_000) // still going: a live runner will end it
      yield* session("a1:cli:u:old", 4, now - CATCH_UP_WINDOW_MS - 60_000) // too old
      yield* session("a1:cli:u:lonely", 1, now - CATCH_UP_IDLE_MS - 60_000) // one message
      yield* session("a1:cli:u:done", 4, now - CATCH_UP_IDLE_MS - 60_000) // reflected to its end
      yield* session("a1:cli:u:more", 6, now - CATCH_UP_IDLE_MS - 60_000) // reflected to 4 of 6: queued
      const diary = yield* Diary
      yield* diary.add(entry("a1:cli:u:done", 4, now - CATCH_UP_IDLE_MS))
      yield* diary.add(entry("a1:cli:u:more", 4, now - CATCH_UP_IDLE_MS))
      assert.strictEqual(yield* catchUp(), 2)
      assert.deepStrictEqual(queued.toSorted(), ["a1:cli:u:more startup", "a1:cli:u:quiet startup"])
    }).pipe(Effect.provide(stores)))

  it.effect(`queues at most ${CATCH_UP_MAX} sessions per start`, () =>
    Effect.gen(function*() {
      queued.length = 0
      const now = T0 + 30 * 86_400_000
      yield* TestClock.setTime(now)
      for (let i = 0; i < CATCH_UP_MAX + 5; i++) yield* session(`a1:cli:u:s${i}`, 2, now - CATCH_UP_IDLE_MS - 60_000 - i)
      assert.strictEqual(yield* catchUp(), CATCH_UP_MAX)
      assert.lengthOf(queued, CATCH_UP_MAX)
    }).pipe(Effect.provide(stores)))
})
