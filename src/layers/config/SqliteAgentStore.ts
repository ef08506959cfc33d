/**
 * AgentStore on SQLite (the `agents` table of migrations/0002_providers.sql and later): rows decoded
 * with Schema (./agentRows.ts); a patch is checked before it is stored, the providers it names must
 * exist (ProviderStore).
 */
import { Clock, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { isValidId } from "../../domain/config/agent.ts"
import { AgentNotFound, InvalidConfig } from "../../domain/config/errors.ts"
import { type AgentPatch, AgentStore } from "../../services/AgentStore.ts"
import { ProviderStore } from "../../services/ProviderStore.ts"
import { storageError } from "../sql/errors.ts"
import { agentColumns, agentPatchProblem, decodeAgents, toAgent } from "./agentRows.ts"

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const providers = yield* ProviderStore

  const listAgents = sql`SELECT * FROM agents ORDER BY created_at, rowid`.pipe(
    Effect.flatMap(decodeAgents),
    Effect.map((rows) => rows.map(toAgent)),
    Effect.mapError(storageError("read agents"))
  )
  const getAgent = Effect.fn("AgentStore.get")(function*(id: string) {
    const rows = yield* sql`SELECT * FROM agents WHERE id = ${id}`.pipe(Effect.flatMap(decodeAgents), Effect.mapError(storageError("read agent")))
    const r = rows[0]
    return r === undefined ? yield* new AgentNotFound({ id }) : toAgent(r)
  })
  const checkPatch = (patch: AgentPatch) =>
    Effect.gen(function*() {
      for (const p of [patch.providerId, patch.summaryProviderId]) if (p !== undefined && p !== null) yield* providers.get(p)
      const problem = agentPatchProblem(patch)
      if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
    })

  return AgentStore.of({
    list: listAgents,
    get: getAgent,
    defaultAgent: listAgents.pipe(Effect.map((as) => Option.fromNullishOr(as.find((a) => a.enabled)))),
    create: Effect.fn("AgentStore.create")(function*(id: string, patch: AgentPatch) {
      if (!isValidId(id)) {
        return yield* new InvalidConfig({ reason: `agent id "${id}" must be 1–64 letters, digits, '.', '_' or '-'` })
      }
      yield* checkPatch(patch)
      const now = yield* Clock.currentTimeMillis
      yield* sql`INSERT INTO agents ${
        sql.insert({ id, name: patch.name ?? id, ...agentColumns(patch), created_at: now, updated_at: now })
      }`.pipe(Effect.mapError(storageError("create agent")))
      return yield* getAgent(id).pipe(Effect.catchTag("AgentNotFound", () => Effect.die("agent vanished after insert")))
    }),
    update: Effect.fn("AgentStore.update")(function*(id: string, patch: AgentPatch) {
      yield* getAgent(id)
      yield* checkPatch(patch)
      const set = agentColumns(patch)
      const now = yield* Clock.currentTimeMillis
      yield* sql`UPDATE agents SET ${sql.update({ ...set, updated_at: now })} WHERE id = ${id}`.pipe(
        Effect.mapError(storageError("update agent"))
      )
      return yield* getAgent(id)
    })
  })
})

/** AgentStore; needs SqlClient and ProviderStore. */
export const layer = Layer.effect(AgentStore, make)
