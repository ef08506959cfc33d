/** Conversation fixtures and memory layers with a configurable summarizer and compaction config. */
import type { SqlClient } from "effect/sql"
import { Effect, Layer } from "effect"
import type { NewMessage } from "../../src/domain/message.ts"
import * as DagCompactionEngine from "../../src/layers/memory/DagCompactionEngine.ts"
import * as DeterministicSummarizer from "../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../src/layers/memory/LcmMemory.ts"
import * as SessionLocks from "../../src/layers/memory/SessionLocks.ts"
import * as SqliteMemoryStore from "../../src/layers/memory/SqliteMemoryStore.ts"
import type { CompactionConfig } from "../../src/services/CompactionEngine.ts"
import { Summarizer, type SummaryRequest } from "../../src/services/Summarizer.ts"
import { sqliteTemp } from "./db.ts"

export const T0 = 1_700_000_000_000

/** `n` alternating user/assistant text messages, one minute apart, each about 30 tokens. */
export const chat = (n: number, from = 0, extra = ""): Array<NewMessage> =>
  Array.from({ length: n }, (_, k) => {
    const i = from + k
    return {
      role: i % 2 === 0 ? "user" : "assistant",
      content: `Message ${i}. We talked about topic ${i % 7} in some depth, with details and more words.${extra}`,
      createdAt: T0 + i * 60_000
    }
  })

/** A Summarizer answering with `answer(request)` and recording every request in `log`. */
export const scriptedSummarizer = (
  answer: (request: SummaryRequest, call: number) => string,
  log: Array<SummaryRequest> = []
) =>
  Layer.succeed(
    Summarizer,
    Summarizer.of({
      summarize: (request) =>
        Effect.sync(() => {
          log.push(request)
          return answer(request, log.length)
        })
    })
  )

/** LcmMemory on a fresh file with the given summarizer and compaction config. */
export const lcmWith = (options: {
  readonly summarizer?: Layer.Layer<Summarizer> | undefined
  readonly config?: Partial<CompactionConfig> | undefined
  /** The database (a fresh SQLite file by default). */
  readonly database?: Layer.Layer<SqlClient.SqlClient, unknown> | undefined
} = {}) =>
  LcmMemory.layer.pipe(
    Layer.provide(DagCompactionEngine.layer({ ...DagCompactionEngine.defaultConfig, ...options.config })),
    Layer.provideMerge(Layer.merge(SqliteMemoryStore.layer, SessionLocks.layer)),
    Layer.provide(options.summarizer ?? DeterministicSummarizer.layer),
    Layer.provideMerge(options.database ?? sqliteTemp)
  )
