/**
 * `/api/usage`: tokens of model calls (chat and summaries, failed calls counted) by user, agent,
 * model and day over a date range with totals (as `anna provider usage`), and a dashboard: sessions
 * live now, turns and tokens per hour or day over a window, spend by user and agent.
 *
 * Cost: in USD, from the prices the operator set per model (`/api/providers/{id}/prices`, `anna
 * provider price`), never a guess: null when no call of a row is priced, and `unpricedCalls` > 0
 * when the cost covers only some of its calls (partial). A `user` sees only their own usage.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors, UserAllowed } from "../security.ts"

export const UsageRow = Schema.Struct({
  /** The user id, agent id, `provider/model`, or UTC day `YYYY-MM-DD` / hour `YYYY-MM-DDTHH`. */
  key: Schema.String,
  calls: Schema.Number,
  failed: Schema.Number,
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cacheReadTokens: Schema.Number,
  cacheWriteTokens: Schema.Number,
  /** In `currency`; null: unknown (no call of the row is priced). */
  cost: Schema.NullOr(Schema.Number),
  /** Calls with tokens but no price: above 0 with a cost, the cost is partial. */
  unpricedCalls: Schema.Number
})
export type UsageRow = typeof UsageRow.Type

export const UsageTotalsView = Schema.Struct({
  calls: Schema.Number,
  failed: Schema.Number,
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cacheReadTokens: Schema.Number,
  cacheWriteTokens: Schema.Number,
  cost: Schema.NullOr(Schema.Number),
  unpricedCalls: Schema.Number
})

export const UsageReport = Schema.Struct({
  /** The range reported, [since, until) in ms. */
  since: Schema.Number,
  until: Schema.Number,
  /** The currency of costs (`USD`), or null while no cost is known. */
  currency: Schema.NullOr(Schema.String),
  totals: UsageTotalsView,
  byUser: Schema.Array(UsageRow),
  byAgent: Schema.Array(UsageRow),
  byModel: Schema.Array(UsageRow),
  byDay: Schema.Array(UsageRow)
})

export const ChartPoint = Schema.Struct({
  /** UTC hour `YYYY-MM-DDTHH` or day `YYYY-MM-DD`; every bucket of the window, empty ones as 0. */
  bucket: Schema.String,
  turns: Schema.Number,
  inputTokens: Schema.Number,
  outputTokens: Schema.Number
})

export const LiveSessionView = Schema.Struct({
  sessionKey: Schema.String,
  agentId: Schema.String,
  userId: Schema.String,
  running: Schema.Boolean,
  lastTurnAt: Schema.Number
})

export const Dashboard = Schema.Struct({
  since: Schema.Number,
  until: Schema.Number,
  bucket: Schema.Literals(["hour", "day"]),
  live: Schema.Struct({
    sessions: Schema.Number,
    running: Schema.Number,
    list: Schema.Array(LiveSessionView)
  }),
  series: Schema.Array(ChartPoint),
  currency: Schema.NullOr(Schema.String),
  spendByUser: Schema.Array(UsageRow),
  spendByAgent: Schema.Array(UsageRow)
})

export class UsageGroup extends HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("report", "/", {
      query: {
        /** ms since the epoch; default 30 days before `until`. */
        since: Schema.optional(Schema.Int),
        /** ms since the epoch (exclusive); default now. */
        until: Schema.optional(Schema.Int),
        /** Admin only (a `user` always gets their own). */
        user: Schema.optional(Schema.String),
        agent: Schema.optional(Schema.String)
      },
      success: UsageReport,
      error: CommonErrors
    }),
    HttpApiEndpoint.get("dashboard", "/dashboard", {
      query: {
        /** `24h` (hourly buckets, the default) or `7d` / `30d` (daily). */
        window: Schema.optional(Schema.Literals(["24h", "7d", "30d"]))
      },
      success: Dashboard,
      error: CommonErrors
    })
  )
  .annotate(UserAllowed, true)
  .middleware(AdminAuth)
  .prefix("/usage")
{}
