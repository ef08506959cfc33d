/** UsageLog on SQLite (`model_usage`): every model call's tokens, chat and summaries, failures too. */
import { Clock, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { type UsageBucket, type UsageDimension, type UsageEntry, type UsageFilter, UsageLog, type UsageTotals } from "../../services/UsageLog.ts"
import { storageError } from "../sql/errors.ts"

/** The grouping expression of each dimension (fixed text, never from input). */
const DIMENSION: Record<UsageDimension, string> = {
  user: "user_id",
  agent: "agent_id",
  model: "provider_id || '/' || model",
  day: "strftime('%Y-%m-%d', at / 1000, 'unixepoch')",
  hour: "strftime('%Y-%m-%dT%H', at / 1000, 'unixepoch')"
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const matches = (filter: UsageFilter) =>
    sql`(${filter.sessionKey ?? null} IS NULL OR session_key = ${filter.sessionKey ?? null})
      AND (${filter.userId ?? null} IS NULL OR user_id = ${filter.userId ?? null})
      AND (${filter.agentId ?? null} IS NULL OR agent_id = ${filter.agentId ?? null})
      AND at >= ${filter.since ?? 0}
      AND (${filter.until ?? null} IS NULL OR at < ${filter.until ?? null})`

  return UsageLog.of({
    record: Effect.fn("UsageLog.record")(function*(e: UsageEntry) {
      const now = yield* Clock.currentTimeMillis
      yield* sql`INSERT INTO model_usage ${
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
      }`
    }, Effect.mapError(storageError("record usage"))),
    summaryCallsSince: Effect.fn("UsageLog.summaryCallsSince")(function*(sessionKey: string, since: number) {
      const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM model_usage
        WHERE session_key = ${sessionKey} AND purpose = 'summary' AND at >= ${since}`
      return rows[0]?.n ?? 0
    }, Effect.mapError(storageError("read usage"))),
    totals: Effect.fn("UsageLog.totals")(function*(filter: UsageFilter = {}) {
      const rows = yield* sql<{
        provider_id: string
        model: string
        purpose: "chat" | "summary"
        calls: number
        failed: number
        input_tokens: number
        output_tokens: number
      }>`SELECT provider_id, model, purpose, count(*) AS calls, sum(1 - ok) AS failed,
          sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
        FROM model_usage WHERE ${matches(filter)}
        GROUP BY provider_id, model, purpose ORDER BY provider_id, model, purpose`
      return rows.map((r): UsageTotals => ({
        providerId: r.provider_id,
        model: r.model,
        purpose: r.purpose,
        calls: r.calls,
        failed: r.failed,
        inputTokens: r.input_tokens,
        outputTokens: r.output_tokens
      }))
    }, Effect.mapError(storageError("read usage"))),
    breakdown: Effect.fn("UsageLog.breakdown")(function*(by: UsageDimension, filter: UsageFilter = {}) {
      const key = sql.literal(DIMENSION[by])
      return yield* sql<UsageBucket>`SELECT ${key} AS key, count(*) AS calls, sum(1 - ok) AS failed,
          sum(input_tokens) AS inputTokens, sum(output_tokens) AS outputTokens,
          sum(cache_read_tokens) AS cacheReadTokens, sum(cache_write_tokens) AS cacheWriteTokens
        FROM model_usage WHERE ${matches(filter)}
        GROUP BY 1 ORDER BY 1`
    }, Effect.mapError(storageError("read usage")))
  })
})

/** UsageLog; needs SqlClient. */
export const layer = Layer.effect(UsageLog, make)
