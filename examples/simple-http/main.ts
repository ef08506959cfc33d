/**
 * A custom deployment composed from anna's layers: Simple (sliding-window) memory, the
 * OpenAI-compatible HTTP channel, and no sandbox — so no shell or file tools (memory, the scheduler and webfetch stay).
 * It uses the database of an ordinary anna installation (`$ANNA_HOME/anna.db`, or the PostgreSQL
 * database `ANNA_DATABASE_URL` names): providers, agents and users are managed with the `anna` CLI
 * as usual.
 *
 *   ANNA_HOME=~/.anna PORT=8788 node --conditions=development examples/simple-http/main.ts
 *
 * (`--conditions=development` runs anna from its TypeScript sources; an installed package resolves
 * the same imports to `dist/`.)
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { homedir } from "node:os"
import { join } from "node:path"
import { HttpAddress } from "anna"
import { Compose, DeterministicSummarizer, HttpChannel, Postgres, SdkProviderRegistry, SimpleMemory, Sqlite, SqliteConfigStore } from "anna/layers"

const home = process.env.ANNA_HOME ?? join(homedir(), ".anna")
const port = Number(process.env.PORT ?? 8788)

const url = process.env.ANNA_DATABASE_URL ?? ""
const database: Layer.Layer<SqlClient.SqlClient, unknown> = url === "" ? Sqlite.layer(join(home, "anna.db")) : Postgres.layer(url)
const stores = SqliteConfigStore.layerWithStores(home)
const memory = SimpleMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))
const runtime = Compose.agentRuntime().pipe(Layer.provide(SdkProviderRegistry.layer()), Layer.provideMerge(memory), Layer.provideMerge(stores))
const app = HttpChannel.layer({ host: "127.0.0.1", port }).pipe(Layer.provide(runtime), Layer.provide(database))

Effect.gen(function*() {
  const address = yield* HttpAddress
  console.log(`simple-http: listening on ${address.url}/v1 (memory/simple, no sandbox)`)
  return yield* Effect.never
}).pipe(Effect.provide(app), NodeRuntime.runMain)
