/**
 * ProviderStore, AgentStore and UsageLog on SQLite (migrations/0002_providers.sql, the agent and
 * usage columns of 0004_runtime.sql). Rows are decoded with Schema; a provider's key is stored as
 * given and only ever shown masked by the CLI.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { isValidId } from "../../domain/config/agent.ts"
import { AgentNotFound, InvalidConfig, ProviderExists, ProviderInUse, ProviderNotFound } from "../../domain/config/errors.ts"
import { firstByteTimeoutProblem, PROVIDER_TYPES, type ProviderConfig, type ProviderType } from "../../domain/model/types.ts"
import { type AgentPatch, AgentStore } from "../../services/AgentStore.ts"
import { ProviderStore } from "../../services/ProviderStore.ts"
import { UsageLog, type UsageTotals } from "../../services/UsageLog.ts"
import * as Sqlite from "../sql/Sqlite.ts"
import { agentColumns, agentPatchProblem, decodeAgents, toAgent } from "./agentRows.ts"
import { storageError } from "../sql/errors.ts"

const ProviderRow = Schema.Struct({
  id: Schema.String,
  type: Schema.Literals(["anthropic", "openai", "openai-response"]),
  base_url: Schema.String,
  api_key: Schema.String,
  models: Schema.fromJsonString(Schema.Array(Schema.String)),
  default_model: Schema.String,
  headers: Schema.fromJsonString(Schema.Record(Schema.String, Schema.String)),
  enabled: Schema.Number,
  first_byte_timeout_seconds: Schema.NullOr(Schema.Number)
})
const decodeProviders = Schema.decodeUnknownEffect(Schema.Array(ProviderRow))
const toProvider = (r: typeof ProviderRow.Type): ProviderConfig => ({
  id: r.id,
  type: r.type,
  baseUrl: r.base_url,
  apiKey: r.api_key,
  models: r.models,
  defaultModel: r.default_model,
  headers: r.headers,
  enabled: r.enabled === 1,
  ...(r.first_byte_timeout_seconds === null ? {} : { firstByteTimeoutSeconds: r.first_byte_timeout_seconds })
})

/** Checks a provider row before it is stored; the reason says what to change. */
export const validateProvider = (c: ProviderConfig): string | undefined => {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(c.id)) {
    return `provider id "${c.id}" must be 1–64 letters, digits, '.', '_' or '-' (no '/')`
  }
  if (!PROVIDER_TYPES.includes(c.type as ProviderType)) return `provider type must be one of ${PROVIDER_TYPES.join(", ")}`
  if (c.baseUrl !== "") {
    try {
      const u = new URL(c.baseUrl)
      if (u.protocol !== "http:" && u.protocol !== "https:") return `base URL must be http(s): ${c.baseUrl}`
    } catch {
      return `base URL is not a URL: ${c.baseUrl}`
    }
  }
  if (c.defaultModel.trim() === "") return "a default model is needed (--default-model, or --model)"
  if (c.firstByteTimeoutSeconds !== undefined) {
    const problem = firstByteTimeoutProblem(c.firstByteTimeoutSeconds)
    if (problem !== undefined) return problem
  }
  for (const name of Object.keys(c.headers)) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) return `"${name}" is not a valid HTTP header name`
  }
  return undefined
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const immediate = Sqlite.immediate(sql)

  const listProviders = sql`SELECT * FROM providers ORDER BY created_at, rowid`.pipe(
    Effect.flatMap(decodeProviders),
    Effect.map((rows) => rows.map(toProvider)),
    Effect.mapError(storageError("read providers"))
  )
  const getProvider = (id: string) =>
    sql`SELECT * FROM providers WHERE id = ${id}`.pipe(
      Effect.flatMap(decodeProviders),
      Effect.mapError(storageError("read provider")),
      Effect.flatMap((rows) => {
        const r = rows[0]
        return r === undefined ? Effect.fail(new ProviderNotFound({ id })) : Effect.succeed(toProvider(r))
      })
    )

  const providers = ProviderStore.of({
    list: listProviders,
    get: getProvider,
    add: (c) =>
      Effect.gen(function*() {
        const problem = validateProvider(c)
        if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
        const now = yield* Clock.currentTimeMillis
        const inserted = yield* sql<{ id: string }>`INSERT INTO providers ${
          sql.insert({
            id: c.id,
            type: c.type,
            base_url: c.baseUrl,
            api_key: c.apiKey,
            models: JSON.stringify(c.models),
            default_model: c.defaultModel,
            headers: JSON.stringify(c.headers),
            enabled: c.enabled ? 1 : 0,
            first_byte_timeout_seconds: c.firstByteTimeoutSeconds ?? null,
            created_at: now,
            updated_at: now
          })
        } ON CONFLICT (id) DO NOTHING RETURNING id`.pipe(Effect.mapError(storageError("add provider")))
        if (inserted.length === 0) return yield* new ProviderExists({ id: c.id })
      }),
    setFirstByteTimeout: (id, seconds) =>
      Effect.gen(function*() {
        const problem = seconds === undefined ? undefined : firstByteTimeoutProblem(seconds)
        if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
        const now = yield* Clock.currentTimeMillis
        const updated = yield* sql<{ id: string }>`UPDATE providers
          SET first_byte_timeout_seconds = ${seconds ?? null}, updated_at = ${now} WHERE id = ${id} RETURNING id`.pipe(
          Effect.mapError(storageError("update provider"))
        )
        if (updated.length === 0) return yield* new ProviderNotFound({ id })
      }),
    remove: (id) =>
      immediate(Effect.gen(function*() {
        yield* getProvider(id)
        const users = yield* sql<{ id: string }>`SELECT id FROM agents
          WHERE provider_id = ${id} OR summary_provider_id = ${id} ORDER BY id`
        if (users.length > 0) return yield* new ProviderInUse({ id, agents: users.map((u) => u.id) })
        yield* sql`DELETE FROM providers WHERE id = ${id}`
      })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storageError("remove provider")(e))))
  })

  const listAgents = sql`SELECT * FROM agents ORDER BY created_at, rowid`.pipe(
    Effect.flatMap(decodeAgents),
    Effect.map((rows) => rows.map(toAgent)),
    Effect.mapError(storageError("read agents"))
  )
  const getAgent = (id: string) =>
    sql`SELECT * FROM agents WHERE id = ${id}`.pipe(
      Effect.flatMap(decodeAgents),
      Effect.mapError(storageError("read agent")),
      Effect.flatMap((rows) => {
        const r = rows[0]
        return r === undefined ? Effect.fail(new AgentNotFound({ id })) : Effect.succeed(toAgent(r))
      })
    )
  const checkPatch = (patch: AgentPatch) =>
    Effect.gen(function*() {
      for (const p of [patch.providerId, patch.summaryProviderId]) if (p !== undefined && p !== null) yield* getProvider(p)
      const problem = agentPatchProblem(patch)
      if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
    })

  const agents = AgentStore.of({
    list: listAgents,
    get: getAgent,
    defaultAgent: listAgents.pipe(Effect.map((as) => Option.fromNullishOr(as.find((a) => a.enabled)))),
    create: (id, patch) =>
      Effect.gen(function*() {
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
    update: (id, patch) =>
      Effect.gen(function*() {
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

  const usage = UsageLog.of({
    record: (e) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        sql`INSERT INTO model_usage ${
          sql.insert({
            at: now,
            provider_id: e.providerId,
            model: e.model,
            purpose: e.purpose,
            session_key: e.sessionKey,
            agent_id: e.agentId,
            user_id: e.userId ?? "",
            input_tokens: e.usage.inputTokens,
            output_tokens: e.usage.outputTokens,
            cache_read_tokens: e.usage.cacheReadTokens,
            cache_write_tokens: e.usage.cacheWriteTokens,
            ok: e.error === undefined ? 1 : 0,
            error: e.error ?? ""
          })
        }`).pipe(Effect.asVoid, Effect.mapError(storageError("record usage"))),
    summaryCallsSince: (sessionKey, since) =>
      sql<{ n: number }>`SELECT count(*) AS n FROM model_usage
        WHERE session_key = ${sessionKey} AND purpose = 'summary' AND at >= ${since}`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0),
        Effect.mapError(storageError("read usage"))
      ),
    totals: (filter = {}) =>
      sql<{
        provider_id: string
        model: string
        purpose: "chat" | "summary"
        calls: number
        failed: number
        input_tokens: number
        output_tokens: number
      }>`SELECT provider_id, model, purpose, count(*) AS calls, sum(1 - ok) AS failed,
          sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
        FROM model_usage
        WHERE (${filter.sessionKey ?? null} IS NULL OR session_key = ${filter.sessionKey ?? null})
          AND (${filter.userId ?? null} IS NULL OR user_id = ${filter.userId ?? null})
          AND (${filter.agentId ?? null} IS NULL OR agent_id = ${filter.agentId ?? null})
          AND at >= ${filter.since ?? 0}
        GROUP BY provider_id, model, purpose ORDER BY provider_id, model, purpose`.pipe(
        Effect.map((rows) =>
          rows.map((r): UsageTotals => ({
            providerId: r.provider_id,
            model: r.model,
            purpose: r.purpose,
            calls: r.calls,
            failed: r.failed,
            inputTokens: r.input_tokens,
            outputTokens: r.output_tokens
          }))
        ),
        Effect.mapError(storageError("read usage"))
      )
  })

  return Context.make(ProviderStore, providers).pipe(Context.add(AgentStore, agents), Context.add(UsageLog, usage))
})

/** ProviderStore + AgentStore + UsageLog; needs SqlClient. */
export const layer = Layer.effectContext(make)
