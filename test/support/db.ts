/**
 * Real SQLite files in a fresh temporary folder per test (removed when the test's scope closes) —
 * or, when the whole suite runs on PostgreSQL (`ANNA_TEST_DATABASE=postgres`, suiteDatabase.ts), a
 * fresh PostgreSQL database per test wherever `sqliteTemp` is asked for.
 */
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import type { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as DeterministicSummarizer from "../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../src/layers/memory/LcmMemory.ts"
import * as SimpleMemory from "../../src/layers/memory/SimpleMemory.ts"
import * as SqliteAgentStore from "../../src/layers/config/SqliteAgentStore.ts"
import * as SqliteProviderStore from "../../src/layers/config/SqliteProviderStore.ts"
import * as SqliteUsageLog from "../../src/layers/config/SqliteUsageLog.ts"
import * as Postgres from "../../src/layers/sql/Postgres.ts"
import * as Sqlite from "../../src/layers/sql/Sqlite.ts"
import { homeDatabaseUrl, suiteOnPostgres } from "./suiteDatabase.ts"

export const tempDir = (prefix = "anna-test-"): string => mkdtempSync(join(tmpdir(), prefix))

/** A scoped temporary database file path. */
export const tempDbFile = Effect.acquireRelease(
  Effect.sync(() => tempDir()),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => join(dir, "anna.db")))

/** SqlClient on a fresh temporary SQLite file, whatever database the suite runs on (tests of SQLite itself). */
export const sqliteFileTemp: Layer.Layer<SqlClient.SqlClient, unknown> = Layer.unwrap(Effect.map(tempDbFile, Sqlite.layer))

/**
 * `layer` on the real clock even in a test on the TestClock: a server's pool lives in real time. On
 * virtual time its idle-connection reaper woke every 60 virtual seconds of a `TestClock.adjust`
 * (1,440 wakes for a day, each closing a connection), and a `setTime` a month ahead never ended.
 */
export const onRealClock = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.unwrap(Clock.clockWith((clock) =>
    "adjust" in clock && "withLive" in clock // a TestClock
      ? TestClock.withLive(Clock.clockWith((real) => Effect.succeed(Layer.provide(layer, Layer.succeed(Clock.Clock, real)))))
      : Effect.succeed(layer)
  ))

/** SqlClient on a fresh temporary file (a fresh PostgreSQL database when the suite runs there). */
export const sqliteTemp: Layer.Layer<SqlClient.SqlClient, unknown> = Layer.unwrap(
  // postgres.ts is loaded only then: it registers the test file's hooks, and benchmarks use this module too.
  Effect.suspend(() =>
    suiteOnPostgres()
      ? Effect.promise(() => import("./postgres.ts")).pipe(Effect.map((m) => m.pgTemp))
      : Effect.succeed(sqliteFileTemp)
  )
)

/**
 * SqlClient on the database of the `anna` home `home`, as the processes started on it use it: its
 * `anna.db`, or — when the suite runs on PostgreSQL — the home's PostgreSQL database
 * (suiteDatabase.ts). Tests seed a home or read what a process wrote through it.
 */
export const homeDatabase = (home: string): Layer.Layer<SqlClient.SqlClient, unknown> =>
  Layer.unwrap(Effect.sync(() => {
    const url = homeDatabaseUrl(home)
    return url === undefined ? Sqlite.layer(join(home, "anna.db")) : onRealClock(Postgres.layer(url, { maxConnections: 2 }))
  }))

/** LcmMemory (all seven services) + the store on `database`, with the deterministic summarizer. */
export const lcmOn = <E>(database: Layer.Layer<SqlClient.SqlClient, E>) =>
  LcmMemory.layerSqlite.pipe(
    Layer.provide(DeterministicSummarizer.layer),
    Layer.provideMerge(database)
  )

/** LcmMemory (all seven services) + the store, on a fresh file, with the deterministic summarizer. */
export const lcmTemp = lcmOn(sqliteTemp)

/** SimpleMemory (provider, handoff compactor, profiles, sessions) + the store, on a fresh file, with the deterministic summarizer. */
export const simpleTemp = SimpleMemory.layerSqlite.pipe(
  Layer.provide(DeterministicSummarizer.layer),
  Layer.provideMerge(sqliteTemp)
)

/** ProviderStore, AgentStore and UsageLog (needs SqlClient). */
export const modelStores = Layer.merge(SqliteAgentStore.layer, SqliteUsageLog.layer).pipe(Layer.provideMerge(SqliteProviderStore.layer))
