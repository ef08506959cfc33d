/**
 * `BENCH_ONLY=postgres` (issue 26): the memory engine's hot paths on SQLite and on a local PostgreSQL
 * (a throwaway server on loopback: test/support/pgServer.ts, or ANNA_TEST_DATABASE_URL) in one run,
 * the same code over each database: building a session (append, 1,000 messages per call), one
 * message appended (a turn's own write), assembly of the raw session, full compaction, assembly
 * after it. Sessions of 1k / 10k / 100k messages (`BENCH_PG_SIZES=1000,10000` to choose). Search
 * does not run on PostgreSQL yet and is not here. Ratios are PostgreSQL / SQLite.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { join } from "node:path"
import * as LcmMemory from "../src/layers/memory/LcmMemory.ts"
import * as Postgres from "../src/layers/sql/Postgres.ts"
import * as Sqlite from "../src/layers/sql/Sqlite.ts"
import { Compactor } from "../src/services/Compactor.ts"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { postgresMissing, startServer } from "../test/support/pgServer.ts"
import { ratios, removeDb, sessionOf } from "./support/common.ts"
import { timingSummarizer } from "./support/engine.ts"
import { int, ms, progress, rate, ratio, sampleEffect, type SampleOptions, section, type Summary, table } from "./support/measure.ts"
import { makeTranscript } from "./support/transcript.ts"

const SIZES: ReadonlyArray<number> = (process.env["BENCH_PG_SIZES"] ?? "1000,10000,100000").split(",").map(Number)
const BUDGET = 100_000
const BATCH = 1_000
const SAMPLES: SampleOptions = { warmup: 3, min: 10, max: 100, budgetMs: 2_000 }
const SINGLES: SampleOptions = { warmup: 5, min: 50, max: 200, budgetMs: 2_000 }

interface Figures {
  /** Messages per second while building the session. */
  readonly buildRate: number
  readonly single: Summary
  readonly rawAssemble: Summary
  readonly compactMs: number
  readonly summaries: number
  readonly compactedAssemble: Summary
}

const measure = async (database: Layer.Layer<SqlClient.SqlClient, unknown>, size: number, index: number): Promise<Figures> => {
  const runtime = ManagedRuntime.make(
    LcmMemory.layerSqlite.pipe(Layer.provide(timingSummarizer({ ms: 0, calls: 0 })), Layer.provideMerge(database))
  )
  try {
    const session = sessionOf(index, 1)
    const transcript = makeTranscript({ seed: 700 + index })
    const t0 = performance.now()
    for (let done = 0; done < size; done += BATCH) {
      const batch = transcript.take(Math.min(BATCH, size - done))
      await runtime.runPromise(MemoryProvider.use((m) => m.append(session, batch)))
    }
    const buildRate = size / ((performance.now() - t0) / 1000)
    const extra = makeTranscript({ seed: 900 + index }).take(SINGLES.max + SINGLES.warmup)
    return await runtime.runPromise(Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const rawAssemble = yield* sampleEffect(SAMPLES, () => memory.assemble(session.key, { budget: BUDGET }))
      const c0 = performance.now()
      const report = yield* (yield* Compactor).compact(session.key, { full: true })
      const compactMs = performance.now() - c0
      const compactedAssemble = yield* sampleEffect(SAMPLES, () => memory.assemble(session.key, { budget: BUDGET }))
      const single = yield* sampleEffect(SINGLES, (i) => memory.append(session, extra.slice(i, i + 1)))
      return { buildRate, single, rawAssemble, compactMs, summaries: report.summaryIds.length, compactedAssemble }
    }))
  } finally {
    await runtime.dispose()
  }
}

/** A fresh PostgreSQL database on the server, dropped afterwards. */
const withDatabase = (adminUrl: string, name: string) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      yield* admin(adminUrl, `CREATE DATABASE ${name}`)
      const url = new URL(adminUrl)
      url.pathname = `/${name}`
      return url.toString()
    }),
    () => Effect.ignore(admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  )

const admin = (url: string, statement: string) =>
  Effect.scoped(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(statement)
    }).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
    )
  ).pipe(Effect.orDie)

export const runPostgres = async (dir: string): Promise<void> => {
  const missing = postgresMissing()
  if (missing !== undefined) {
    section("SQLite and PostgreSQL side by side (issue 26)", `not run: ${missing}`)
    return
  }
  progress("postgres: starting a throwaway server")
  const server = await startServer()
  try {
    const rows: Array<{ readonly size: number; readonly lite: Figures; readonly pg: Figures }> = []
    for (const [index, size] of SIZES.entries()) {
      progress(`postgres: ${int(size)} messages on SQLite`)
      const file = join(dir, `pg-compare-${size}.db`)
      const lite = await measure(Sqlite.layer(file), size, index)
      removeDb(file)
      progress(`postgres: ${int(size)} messages on PostgreSQL`)
      const pg = await Effect.runPromise(Effect.scoped(Effect.flatMap(
        withDatabase(server.adminUrl, `anna_bench_${size}`),
        (url) => Effect.promise(() => measure(Postgres.layer(url), size, index))
      )))
      rows.push({ size, lite, pg })
    }
    const pair = (label: string, lite: number, pg: number, unit: string) => [label, `${ms(lite)} ${unit}`, `${ms(pg)} ${unit}`, ratio(pg, lite)]
    section(
      "SQLite and PostgreSQL side by side (issue 26): the memory engine's hot paths",
      table(
        ["messages", "operation", "SQLite", "PostgreSQL", "PostgreSQL / SQLite"],
        rows.flatMap((r) => [
          [int(r.size), "build: append, 1,000 per call", `${rate(r.lite.buildRate)} msg/s`, `${rate(r.pg.buildRate)} msg/s`, ratio(r.lite.buildRate, r.pg.buildRate)],
          [int(r.size), ...pair("append one message (p50)", r.lite.single.p50, r.pg.single.p50, "ms")],
          [int(r.size), ...pair("assemble, raw session (p50)", r.lite.rawAssemble.p50, r.pg.rawAssemble.p50, "ms")],
          [int(r.size), ...pair(`full compaction (${r.lite.summaries} / ${r.pg.summaries} summaries)`, r.lite.compactMs, r.pg.compactMs, "ms")],
          [int(r.size), ...pair("assemble, after full compaction (p50)", r.lite.compactedAssemble.p50, r.pg.compactedAssemble.p50, "ms")]
        ])
      ),
      "Same LcmMemory code over each database (deterministic summarizer, budget 100,000 tokens). PostgreSQL 15 on loopback,\n" +
        "fsync off (a throwaway server: durability costs are not measured). SQLite: WAL, synchronous=NORMAL. Target (issue 26):\n" +
        "every hot path on PostgreSQL within 3× of SQLite, assemble ≤ 10 ms at 100k messages."
    )
    for (const r of rows) {
      ratios.push({
        operation: `PostgreSQL vs SQLite, ${int(r.size)} messages, assemble raw (p50)`,
        ours: `${ms(r.pg.rawAssemble.p50)} ms`,
        floor: `${ms(r.lite.rawAssemble.p50)} ms`,
        ratio: ratio(r.pg.rawAssemble.p50, r.lite.rawAssemble.p50)
      })
    }
  } finally {
    server.stop()
  }
}
