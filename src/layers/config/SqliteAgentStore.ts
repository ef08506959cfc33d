/**
 * AgentStore on SQLite (the `agents` table of migrations/0002_providers.sql and later): rows decoded
 * with Schema (./agentRows.ts); a patch is checked before it is stored, the providers it names must
 * exist (ProviderStore), and the agent's enabled state is settled by the model rule of
 * src/domain/config/agent.ts. Every read-then-write is one IMMEDIATE transaction.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { type Agent, checkAgentModel, type Enablement, isValidId, settleEnablement } from "../../domain/config/agent.ts"
import { AgentNotFound, InvalidConfig } from "../../domain/config/errors.ts"
import type { ProviderConfig } from "../../domain/model/types.ts"
import { type AgentPatch, AgentStore, type RemovedAgent } from "../../services/AgentStore.ts"
import { ProviderStore } from "../../services/ProviderStore.ts"
import * as Sqlite from "../sql/Sqlite.ts"
import { storageError } from "../sql/errors.ts"
import { agentColumns, agentPatchProblem, decodeAgents, toAgent } from "./agentRows.ts"

/** A failed BEGIN/COMMIT (or a statement left unmapped) becomes StorageError; domain errors pass. */
const sqlFailure = (operation: string) => <A, E, R>(self: Effect.Effect<A, E | SqlError, R>) =>
  Effect.catchIf(self, isSqlError, (e) => Effect.fail(storageError(operation)(e)))

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const providers = yield* ProviderStore
  const immediate = Sqlite.immediate(sql)

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
      if (patch.embeddingProviderId !== undefined && patch.embeddingProviderId !== null) {
        const provider = yield* providers.get(patch.embeddingProviderId)
        if (provider.type === "anthropic") {
          return yield* new InvalidConfig({
            reason: `provider ${provider.id} is an Anthropic provider, which has no embeddings API; name an OpenAI-compatible one (OpenAI, Ollama, vLLM, llama.cpp)`
          })
        }
      }
      const problem = agentPatchProblem(patch)
      if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
    })

  /** The provider the model rule reads: undefined when none is set or it is gone. */
  const providerOf = (id: string | null) =>
    id === null
      ? Effect.succeed(undefined)
      : providers.get(id).pipe(
        Effect.map((p): ProviderConfig | undefined => p),
        Effect.catchTag("ProviderNotFound", () => Effect.succeed(undefined))
      )

  /** The enabled state `current` (undefined: a new agent) is stored with once `patch` applies. */
  const settle = (id: string, current: Agent | undefined, patch: AgentPatch) =>
    Effect.gen(function*() {
      const providerId = patch.providerId !== undefined ? patch.providerId : current?.providerId ?? null
      const check = checkAgentModel({ providerId, model: patch.model ?? current?.model ?? "" }, yield* providerOf(providerId))
      const asked: Enablement = {
        enabled: patch.enabled ?? current?.enabled ?? true,
        // A state the patch names replaces "awaiting a model" unless it asks for that again.
        awaitingModel: patch.awaitingModel ?? (patch.enabled !== undefined ? false : current?.awaitingModel ?? false)
      }
      const settled = settleEnablement(asked, patch.enabled === true, check.ok || !check.lacksModel)
      if (settled === undefined) {
        return yield* new InvalidConfig({
          reason: `agent ${id} has no usable model (${check.ok ? "none" : check.reason}); give it one first: anna agent set ${id} --model PROVIDER/MODEL`
        })
      }
      return settled
    })

  const remove = Effect.fn("AgentStore.remove")(function*(id: string) {
    return yield* immediate(Effect.gen(function*() {
      yield* getAgent(id)
      const count = (rows: ReadonlyArray<{ readonly n: number }>) => rows[0]?.n ?? 0
      const usersDefaulted = count(yield* sql<{ n: number }>`SELECT count(*) AS n FROM users WHERE default_agent_id = ${id}`)
      const bindings = count(yield* sql<{ n: number }>`SELECT count(*) AS n FROM chat_agents WHERE agent_id = ${id}`)
      const chatStates = count(yield* sql<{ n: number }>`SELECT count(*) AS n FROM chat_contexts WHERE agent_id = ${id}`)
      const now = yield* Clock.currentTimeMillis
      // The foreign keys would do the first two; said here so it does not depend on the pragma.
      yield* sql`UPDATE users SET default_agent_id = NULL, updated_at = ${now} WHERE default_agent_id = ${id}`
      yield* sql`DELETE FROM chat_agents WHERE agent_id = ${id}`
      // No foreign key: a later agent with the same id must not inherit these chats' contexts.
      yield* sql`DELETE FROM chat_contexts WHERE agent_id = ${id}`
      yield* sql`DELETE FROM agents WHERE id = ${id}`
      const removed: RemovedAgent = { agentId: id, usersDefaulted, bindings, chatStates }
      return removed
    })).pipe(sqlFailure("remove agent"))
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
      yield* immediate(Effect.gen(function*() {
        const state = yield* settle(id, undefined, patch)
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO agents ${
          sql.insert({ id, name: patch.name ?? id, ...agentColumns({ ...patch, ...state }), created_at: now, updated_at: now })
        }`
      })).pipe(sqlFailure("create agent"))
      return yield* getAgent(id).pipe(Effect.catchTag("AgentNotFound", () => Effect.die("agent vanished after insert")))
    }),
    update: Effect.fn("AgentStore.update")(function*(id: string, patch: AgentPatch) {
      yield* immediate(Effect.gen(function*() {
        const current = yield* getAgent(id)
        yield* checkPatch(patch)
        const state = yield* settle(id, current, patch)
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE agents SET ${sql.update({ ...agentColumns({ ...patch, ...state }), updated_at: now })} WHERE id = ${id}`
      })).pipe(sqlFailure("update agent"))
      return yield* getAgent(id)
    }),
    remove
  })
})

/** AgentStore; needs SqlClient and ProviderStore. */
export const layer = Layer.effect(AgentStore, make)
