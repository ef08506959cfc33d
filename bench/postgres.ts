/**
 * `BENCH_ONLY=postgres` (issue 26): the memory engine's hot paths on SQLite and on a local PostgreSQL
 * (a throwaway server on loopback: test/support/pgServer.ts, or ANNA_TEST_DATABASE_URL) in one run,
 * the same code over each database: building a session (append, 1,000 messages per call), one
 * message appended (a turn's own write), assembly of the raw session, full compaction, assembly
 * after it, scoped search (a session's and its user's: a rare word, and a question of common words),
 * and a turn's memory work (the user's message appended, the context assembled, the reply
 * appended). Sessions of 1k / 10k / 100k messages (`BENCH_PG_SIZES=1000,10000` to choose). Ratios
 * are PostgreSQL / SQLite.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { join } from "node:path"
import * as LcmMemory from "../src/layers/memory/LcmMemory.ts"
import * as Postgres from "../src/layers/sql/Postgres.ts"
import { isPostgres } from "../src/layers/sql/dialect.ts"
import * as Sqlite from "../src/layers/sql/Sqlite.ts"
import { Compactor } from "../src/services/Compactor.ts"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { Searcher } from "../src/services/Searcher.ts"
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
  /** The same after a VACUUM (PostgreSQL; what autovacuum makes of it within a minute). */
  readonly vacuumedAssemble: Summary
  readonly rareSession: Summary
  readonly commonSession: Summary
  readonly commonUser: Summary
  readonly turn: Summary
}

/** A word the transcript never has, put into one message in the middle of the session. */
const MARKER = "qzx7381marker"
const COMMON = "how did we fix the docker container timeout error"
const LIMIT = 10

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
      if (done === Math.floor(size / 2 / BATCH) * BATCH) batch[0] = { role: "user", content: `remember ${MARKER} for later`, createdAt: Date.now() }
      await runtime.runPromise(MemoryProvider.use((m) => m.append(session, batch)))
    }
    const buildRate = size / ((performance.now() - t0) / 1000)
    // Fresh statistics and visibility map, as autovacuum makes them within a minute of a burst like
    // this one (the planner would otherwise plan for the empty tables it last saw, and whether an
    // index-only read visits the heap would depend on when autovacuum happened to run). SQLite plans
    // without them.
    await runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      if (isPostgres(sql)) yield* sql`VACUUM ANALYZE`
    }))
    const extra = makeTranscript({ seed: 900 + index }).take(SINGLES.max + SINGLES.warmup)
    return await runtime.runPromise(Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const rawAssemble = yield* sampleEffect(SAMPLES, () => memory.assemble(session.key, { budget: BUDGET }))
      const c0 = performance.now()
      const report = yield* (yield* Compactor).compact(session.key, { full: true })
      const compactMs = performance.now() - c0
      const compactedAssemble = yield* sampleEffect(SAMPLES, () => memory.assemble(session.key, { budget: BUDGET }))
      // A full compaction deletes almost every live item at once: until autovacuum (within a minute
      // of it) clears the dead index entries, PostgreSQL's read of the newest items steps over them.
      // Measured again after a VACUUM, as a gateway would find it a minute later (SQLite: a repeat).
      const sql = yield* SqlClient.SqlClient
      if (isPostgres(sql)) yield* sql`VACUUM ANALYZE`
      const vacuumedAssemble = yield* sampleEffect(SAMPLES, () => memory.assemble(session.key, { budget: BUDGET }))
      const single = yield* sampleEffect(SINGLES, (i) => memory.append(session, extra.slice(i, i + 1)))
      const searcher = yield* Searcher
      const inSession = { _tag: "Session", sessionKey: session.key } as const
      const inUser = { _tag: "User", userId: session.userId } as const
      const found = yield* searcher.search(MARKER, { scope: inSession, limit: LIMIT })
      if (found.length === 0) return yield* Effect.die(new Error(`the marker was not found in ${size} messages`))
      const rareSession = yield* sampleEffect(SAMPLES, () => searcher.search(MARKER, { scope: inSession, limit: LIMIT }))
      const commonSession = yield* sampleEffect(SAMPLES, () => searcher.search(COMMON, { scope: inSession, limit: LIMIT }))
      const commonUser = yield* sampleEffect(SAMPLES, () => searcher.search(COMMON, { scope: inUser, limit: LIMIT }))
      const turns = makeTranscript({ seed: 1100 + index }).take(2 * (SAMPLES.max + SAMPLES.warmup))
      const turn = yield* sampleEffect(SAMPLES, (i) =>
        memory.append(session, turns.slice(2 * i, 2 * i + 1)).pipe(
          Effect.andThen(memory.assemble(session.key, { budget: BUDGET })),
          Effect.andThen(memory.append(session, turns.slice(2 * i + 1, 2 * i + 2)))
        ))
      return {
        buildRate,
        single,
        rawAssemble,
        compactMs,
        summaries: report.summaryIds.length,
        compactedAssemble,
        vacuumedAssemble,
        rareSession,
        commonSession,
        commonUser,
        turn
      }
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
          [int(r.size), ...pair("append one message (p95)", r.lite.single.p95, r.pg.single.p95, "ms")],
          [int(r.size), ...pair("assemble, raw session (p50)", r.lite.rawAssemble.p50, r.pg.rawAssemble.p50, "ms")],
          [int(r.size), ...pair(`full compaction (${r.lite.summaries} / ${r.pg.summaries} summaries)`, r.lite.compactMs, r.pg.compactMs, "ms")],
          [int(r.size), ...pair("assemble, after full compaction (p50)", r.lite.compactedAssemble.p50, r.pg.compactedAssemble.p50, "ms")],
          [int(r.size), ...pair("assemble, after full compaction, vacuumed (p50)", r.lite.vacuumedAssemble.p50, r.pg.vacuumedAssemble.p50, "ms")],
          [int(r.size), ...pair("search a rare word, session (p50)", r.lite.rareSession.p50, r.pg.rareSession.p50, "ms")],
          [int(r.size), ...pair("search a question, session (p50)", r.lite.commonSession.p50, r.pg.commonSession.p50, "ms")],
          [int(r.size), ...pair("search a question, user (p50)", r.lite.commonUser.p50, r.pg.commonUser.p50, "ms")],
          [int(r.size), ...pair("a turn: append, assemble, append (p50)", r.lite.turn.p50, r.pg.turn.p50, "ms")]
        ])
      ),
      "Same LcmMemory code over each database (deterministic summarizer, budget 100,000 tokens). PostgreSQL 15 on loopback,\n" +
        "fsync off (a throwaway server: durability costs are not measured). SQLite: WAL, synchronous=NORMAL. Target (issue 26):\n" +
        "every hot path on PostgreSQL within 3× of SQLite, assemble ≤ 10 ms at 100k messages."
    )
    for (const r of rows) {
      for (const [what, key] of [["assemble raw", "rawAssemble"], ["search a question, user", "commonUser"], ["a turn", "turn"]] as const) {
        ratios.push({
          operation: `PostgreSQL vs SQLite, ${int(r.size)} messages, ${what} (p50)`,
          ours: `${ms(r.pg[key].p50)} ms`,
          floor: `${ms(r.lite[key].p50)} ms`,
          ratio: ratio(r.pg[key].p50, r.lite[key].p50)
        })
      }
    }
  } finally {
    server.stop()
  }
}
