/**
 * UsageLog on SQLite (`model_usage`): every model call's tokens, chat and summaries, failures too.
 * Costs are computed when read, each call joined to its model's price (`model_prices`, USD per
 * million tokens). OpenAI's APIs count cached prompt tokens within the input tokens and Anthropic's
 * besides them (as the log stores them: src/layers/providers/*), so for the OpenAI types the
 * input tokens billed at the input price are those left after the cache reads and writes. Each call
 * recorded also moves the metrics `anna_model_tokens_total` and (when priced) `anna_model_cost_usd_total`.
 *
 * The same SQL runs on PostgreSQL (issue 26): parameters compared with NULL are cast (PostgreSQL
 * must know their type), sums of 64-bit columns are cast back to integers (PostgreSQL sums them as
 * numeric), camel-case names are quoted, and only the UTC day and hour differ (`utcBucket`).
 */
import { Clock, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { removedSessionKey } from "../../domain/config/removedUser.ts"
import * as Metrics from "../../domain/observability/metrics.ts"
import { type UsageBucket, type UsageDimension, type UsageEntry, type UsageFilter, UsageLog, type UsagePurpose, type UsageTotals } from "../../services/UsageLog.ts"
import { utcBucket } from "../sql/dialect.ts"
import { storageError } from "../sql/errors.ts"

/** The grouping expression of each dimension but time (fixed text, never from input). */
const DIMENSION: Record<Exclude<UsageDimension, "day" | "hour">, string> = {
  user: "user_id",
  agent: "agent_id",
  model: "provider_id || '/' || model"
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const matches = (filter: UsageFilter) =>
    sql`(CAST(${filter.sessionKey ?? null} AS TEXT) IS NULL OR session_key = ${filter.sessionKey ?? null})
      AND (CAST(${filter.userId ?? null} AS TEXT) IS NULL OR user_id = ${filter.userId ?? null})
      AND (CAST(${filter.agentId ?? null} AS TEXT) IS NULL OR agent_id = ${filter.agentId ?? null})
      AND at >= ${filter.since ?? 0}
      AND (CAST(${filter.until ?? null} AS BIGINT) IS NULL OR at < ${filter.until ?? null})`

  /** The calls `where` selects, each with its cost (null: no price) and whether it is unpriced (tokens, no price). */
  const priced = (where: ReturnType<typeof matches>) =>
    sql`SELECT u.*,
        CASE WHEN p.input IS NULL THEN NULL ELSE (
          (CASE WHEN pr.type = 'anthropic' THEN u.input_tokens
            WHEN u.input_tokens > u.cache_read_tokens + u.cache_write_tokens
              THEN u.input_tokens - u.cache_read_tokens - u.cache_write_tokens ELSE 0 END) * p.input
          + u.output_tokens * p.output
          + u.cache_read_tokens * coalesce(p.cache_read, p.input)
          + u.cache_write_tokens * coalesce(p.cache_write, p.input)
        ) / 1000000.0 END AS cost,
        CASE WHEN p.input IS NULL AND u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens > 0
          THEN 1 ELSE 0 END AS unpriced
      FROM model_usage u
      LEFT JOIN model_prices p ON p.provider_id = u.provider_id AND p.model = u.model
      LEFT JOIN providers pr ON pr.id = u.provider_id
      WHERE ${where}`

  return UsageLog.of({
    record: Effect.fn("UsageLog.record")(function*(e: UsageEntry) {
      const now = yield* Clock.currentTimeMillis
      const inserted = yield* sql<{ id: number | string }>`INSERT INTO model_usage ${
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
      } RETURNING id`
      // The metrics count the call as it is recorded, priced as the usage reports price it (the same SQL).
      const id = inserted[0]?.id
      const tokens = e.usage.inputTokens + e.usage.outputTokens + e.usage.cacheReadTokens + e.usage.cacheWriteTokens
      if (id === undefined || tokens === 0) return
      const cost = yield* sql<{ cost: number | null }>`WITH calls AS (${priced(sql`u.id = ${id}`)}) SELECT cost FROM calls`.pipe(
        Effect.map((rows) => rows[0]?.cost ?? null),
        Effect.orElseSucceed(() => null)
      )
      yield* Metrics.modelUsage({ provider: e.providerId, model: e.model }, e.usage, cost === null ? null : Number(cost))
    }, Effect.mapError(storageError("record usage"))),
    summaryCallsSince: Effect.fn("UsageLog.summaryCallsSince")(function*(sessionKey: string, since: number) {
      const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM model_usage
        WHERE session_key = ${sessionKey} AND purpose = 'summary' AND at >= ${since}`
      return rows[0]?.n ?? 0
    }, Effect.mapError(storageError("read usage"))),
    embeddingCallsSince: Effect.fn("UsageLog.embeddingCallsSince")(function*(agentId: string, since: number) {
      const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM model_usage
        WHERE agent_id = ${agentId} AND purpose = 'embedding' AND at >= ${since}`
      return rows[0]?.n ?? 0
    }, Effect.mapError(storageError("read usage"))),
    totals: Effect.fn("UsageLog.totals")(function*(filter: UsageFilter = {}) {
      const rows = yield* sql<{
        provider_id: string
        model: string
        purpose: UsagePurpose
        calls: number
        failed: number
        input_tokens: number
        output_tokens: number
        cost: number | null
        unpriced: number
      }>`WITH calls AS (${priced(matches(filter))})
        SELECT provider_id, model, purpose, count(*) AS calls, CAST(sum(1 - ok) AS BIGINT) AS failed,
          CAST(sum(input_tokens) AS BIGINT) AS input_tokens, CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
          sum(cost) AS cost, CAST(sum(unpriced) AS BIGINT) AS unpriced
        FROM calls
        GROUP BY provider_id, model, purpose ORDER BY provider_id, model, purpose`
      return rows.map((r): UsageTotals => ({
        providerId: r.provider_id,
        model: r.model,
        purpose: r.purpose,
        calls: r.calls,
        failed: r.failed,
        inputTokens: r.input_tokens,
        outputTokens: r.output_tokens,
        cost: r.cost,
        unpricedCalls: r.unpriced
      }))
    }, Effect.mapError(storageError("read usage"))),
    breakdown: Effect.fn("UsageLog.breakdown")(function*(by: UsageDimension, filter: UsageFilter = {}) {
      // A UTC day or hour is written by each database its own way (dialect.ts).
      const key = by === "day" || by === "hour" ? utcBucket(sql, "at", by) : sql.literal(DIMENSION[by])
      return yield* sql<UsageBucket>`WITH calls AS (${priced(matches(filter))})
        SELECT ${key} AS key, count(*) AS calls, CAST(sum(1 - ok) AS BIGINT) AS failed,
          CAST(sum(input_tokens) AS BIGINT) AS "inputTokens", CAST(sum(output_tokens) AS BIGINT) AS "outputTokens",
          CAST(sum(cache_read_tokens) AS BIGINT) AS "cacheReadTokens", CAST(sum(cache_write_tokens) AS BIGINT) AS "cacheWriteTokens",
          sum(cost) AS cost, CAST(sum(unpriced) AS BIGINT) AS "unpricedCalls"
        FROM calls
        GROUP BY 1 ORDER BY 1`
    }, Effect.mapError(storageError("read usage"))),

    retireUser: Effect.fn("UsageLog.retireUser")(function*(userId: string, removedAs: string) {
      // '' is calls made for nobody (a summary run from the CLI), never a user's.
      if (userId === "") return 0
      return yield* sql.withTransaction(Effect.gen(function*() {
        let moved = 0
        const keys = yield* sql<{ session_key: string }>`SELECT DISTINCT session_key FROM model_usage WHERE user_id = ${userId}`
        for (const k of keys) {
          const rows = yield* sql<{ n: number }>`UPDATE model_usage SET user_id = ${removedAs},
            session_key = ${removedSessionKey(k.session_key, userId, removedAs)}
            WHERE user_id = ${userId} AND session_key = ${k.session_key} RETURNING 1 AS n`
          moved += rows.length
        }
        return moved
      }))
    }, Effect.mapError(storageError("move a removed user's usage")))
  })
})

/** UsageLog; needs SqlClient. */
export const layer = Layer.effect(UsageLog, make)
