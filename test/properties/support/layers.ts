/**
 * Memory layers over a given SQLite file (or PostgreSQL database), so one property run can switch plugins (LcmMemory ↔
 * SimpleMemory) over the same database by closing one layer and opening the other on the same
 * path, and can swap in custom summarizers (failing, never returning) and compaction configs.
 */
import { Deferred, Effect, Layer, Ref } from "effect"
import type { SqlClient } from "effect/sql"
import { SummarizerError } from "../../../src/domain/memory/errors.ts"
import * as DagCompactionEngine from "../../../src/layers/memory/DagCompactionEngine.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as SessionLocks from "../../../src/layers/memory/SessionLocks.ts"
import * as SimpleMemory from "../../../src/layers/memory/SimpleMemory.ts"
import * as Sqlite from "../../../src/layers/sql/Sqlite.ts"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import type { CompactionConfig } from "../../../src/services/CompactionEngine.ts"
import { Summarizer, type SummaryRequest } from "../../../src/services/Summarizer.ts"

/** A SQLite file's path, or a database layer (a PostgreSQL database: test/support/postgres.ts). */
export type Database = string | Layer.Layer<SqlClient.SqlClient, unknown>
const open = (database: Database) => (typeof database === "string" ? Sqlite.layer(database) : database)

export const lcmOn = (
  file: Database,
  config: CompactionConfig = DagCompactionEngine.defaultConfig,
  summarizer: Layer.Layer<Summarizer> = DeterministicSummarizer.layer
) =>
  LcmMemory.layer.pipe(
    Layer.provide(DagCompactionEngine.layer(config)),
    Layer.provideMerge(Layer.merge(SqliteMemoryStore.layer, SessionLocks.layer)),
    Layer.provide(summarizer),
    Layer.provideMerge(open(file))
  )

export const simpleOn = (file: Database, summarizer: Layer.Layer<Summarizer> = DeterministicSummarizer.layer) =>
  SimpleMemory.layerSqlite.pipe(Layer.provide(summarizer), Layer.provideMerge(open(file)))

/** What a scripted summarizer does on its n-th call (1-based). */
export type Behaviour = "ok" | "too_long" | "fail" | "hang"

/**
 * A summarizer driven by a script: the deterministic text, an over-long text (forcing the
 * aggressive retry and then truncation), a SummarizerError, or a call that never returns (it
 * signals `started` first, so a test can interrupt it there). Counts its calls in `calls`.
 */
export const scriptedSummarizer = (
  script: (call: number) => Behaviour,
  calls: Ref.Ref<number>,
  options: {
    /** Signalled with the call number when a "hang" call starts. */
    readonly started?: Deferred.Deferred<number> | undefined
    /** Runs at the start of every call (before the behaviour), e.g. to snapshot the database. */
    readonly onCall?: ((call: number) => Effect.Effect<void>) | undefined
  } = {}
): Layer.Layer<Summarizer> =>
  Layer.succeed(
    Summarizer,
    Summarizer.of({
      summarize: (request: SummaryRequest) =>
        Ref.updateAndGet(calls, (n) => n + 1).pipe(
          Effect.tap((n) => options.onCall?.(n) ?? Effect.void),
          // biome-ignore lint/suspicious/useIterableCallbackReturn: Effect.flatMap, not Array#flatMap; the switch covers every Script case and each returns
          Effect.flatMap((n) => {
            const started = options.started
            switch (script(n)) {
              case "ok":
                return Effect.succeed(DeterministicSummarizer.summarizeText(request))
              case "too_long":
                return Effect.succeed(`${DeterministicSummarizer.summarizeText(request)} ${"padding ".repeat(request.targetTokens * 4)}`)
              case "fail":
                return Effect.fail(new SummarizerError({ reason: `scripted failure on call ${n}` }))
              case "hang":
                return (started === undefined ? Effect.void : Deferred.succeed(started, n)).pipe(Effect.andThen(Effect.never))
            }
          })
        )
    })
  )
