/**
 * Our engine as the benchmarks run it: LcmMemory on a real SQLite file (migrated, WAL), with the
 * deterministic summarizer wrapped in a timing layer so compaction time can be split into time
 * inside the summarizer and time outside it (planning, reads, commits, locks, Effect).
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import * as DeterministicSummarizer from "../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../src/layers/memory/LcmMemory.ts"
import * as Sqlite from "../../src/layers/sql/Sqlite.ts"
import { Summarizer } from "../../src/services/Summarizer.ts"
import type { SummarizerClock } from "./floor.ts"

/** Provides `Summarizer` by timing every call of the deterministic one into `clock`. */
export const timingSummarizer = (clock: SummarizerClock) =>
  Layer.effect(
    Summarizer,
    Effect.gen(function*() {
      const inner = yield* Summarizer
      return Summarizer.of({
        summarize: (request) =>
          Effect.suspend(() => {
            const t0 = performance.now()
            return inner.summarize(request).pipe(
              Effect.ensuring(Effect.sync(() => {
                clock.ms += performance.now() - t0
                clock.calls++
              }))
            )
          })
      })
    })
  ).pipe(Layer.provide(DeterministicSummarizer.layer))

export const engineLayer = (file: string, clock: SummarizerClock) =>
  LcmMemory.layerSqlite.pipe(Layer.provide(timingSummarizer(clock)), Layer.provideMerge(Sqlite.layer(file)))

/** A runtime over one database file; `dispose()` closes the database. */
export const openEngine = (file: string, clock: SummarizerClock = { ms: 0, calls: 0 }) =>
  ManagedRuntime.make(engineLayer(file, clock))

export type Engine = ReturnType<typeof openEngine>
