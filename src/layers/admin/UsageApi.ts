/**
 * Handlers of the admin API's `usage` group (src/domain/admin/groups/usage.ts): model calls' tokens
 * from the UsageLog, turns from memory (user messages stored), live sessions from the SessionPool.
 *
 * A `user` gets only their own usage, turns and live sessions. Costs are in USD from the prices
 * the operator set (UsageLog joins them): null where no call is priced, partial where
 * `unpricedCalls` > 0; `currency` is null while no cost is known at all. Buckets are UTC hours or days, every bucket of the window present (0 when empty) so
 * a chart's x axis is the window itself.
 */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import type { UsageRow } from "../../domain/admin/groups/usage.ts"
import { CurrentPrincipal } from "../../domain/admin/security.ts"
import { MemoryStore } from "../../services/MemoryStore.ts"
import { SessionPool } from "../../services/SessionPool.ts"
import { type UsageBucket, type UsageDimension, type UsageFilter, UsageLog } from "../../services/UsageLog.ts"
import { CURRENCY } from "../../domain/model/prices.ts"
import { storage } from "./SessionsApi.ts"

const HOUR = 3600_000
const DAY = 24 * HOUR
/** The report's range when the request gives none. */
export const DEFAULT_RANGE = 30 * DAY

const WINDOWS = {
  "24h": { bucket: "hour", count: 24 },
  "7d": { bucket: "day", count: 7 },
  "30d": { bucket: "day", count: 30 }
} as const

const toRow = (b: UsageBucket): UsageRow => ({
  key: b.key,
  calls: b.calls,
  failed: b.failed,
  inputTokens: b.inputTokens,
  outputTokens: b.outputTokens,
  cacheReadTokens: b.cacheReadTokens,
  cacheWriteTokens: b.cacheWriteTokens,
  cost: b.cost,
  unpricedCalls: b.unpricedCalls
})

/** The sum of the known costs; null when none is known. */
export const sumCosts = (rows: ReadonlyArray<{ readonly cost: number | null }>): number | null =>
  rows.reduce<number | null>((n, r) => (r.cost === null ? n : (n ?? 0) + r.cost), null)

/** `USD` once some cost is known. */
const currencyOf = (...groups: ReadonlyArray<ReadonlyArray<{ readonly cost: number | null }>>) =>
  groups.some((rows) => sumCosts(rows) !== null) ? CURRENCY : null

/** UTC bucket key, as SQLite's strftime writes it (`YYYY-MM-DDTHH` / `YYYY-MM-DD`). */
export const bucketKey = (at: number, bucket: "hour" | "day"): string => new Date(at).toISOString().slice(0, bucket === "hour" ? 13 : 10)

/** The window's buckets: `count` of them, the last being the one `now` is in; and the first's start. */
export const windowBuckets = (now: number, bucket: "hour" | "day", count: number) => {
  const size = bucket === "hour" ? HOUR : DAY
  const start = Math.floor(now / size) * size - (count - 1) * size
  return { since: start, keys: Array.from({ length: count }, (_, i) => bucketKey(start + i * size, bucket)) }
}

export const layer = HttpApiBuilder.group(AdminApi, "usage", (handlers) =>
  Effect.gen(function*() {
    const usage = yield* UsageLog
    const store = yield* MemoryStore
    const pool = yield* SessionPool

    const breakdown = (by: UsageDimension, filter: UsageFilter) =>
      usage.breakdown(by, filter).pipe(Effect.map((rows) => rows.map(toRow)), storage)

    /** The principal's own user id for a `user`; the asked one (or all) for an admin. */
    const userScope = (asked: string | undefined) =>
      Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        return p.role === "admin" ? asked : p.userId
      })

    return handlers
      .handle("report", ({ query }) =>
        Effect.gen(function*() {
          const until = query.until ?? (yield* Clock.currentTimeMillis)
          const since = query.since ?? until - DEFAULT_RANGE
          const filter: UsageFilter = { since, until, userId: yield* userScope(query.user), agentId: query.agent }
          const byModel = yield* breakdown("model", filter)
          const sum = (f: (r: UsageRow) => number) => byModel.reduce((n, r) => n + f(r), 0)
          return {
            since,
            until,
            currency: currencyOf(byModel),
            totals: {
              calls: sum((r) => r.calls),
              failed: sum((r) => r.failed),
              inputTokens: sum((r) => r.inputTokens),
              outputTokens: sum((r) => r.outputTokens),
              cacheReadTokens: sum((r) => r.cacheReadTokens),
              cacheWriteTokens: sum((r) => r.cacheWriteTokens),
              cost: sumCosts(byModel),
              unpricedCalls: sum((r) => r.unpricedCalls)
            },
            byUser: yield* breakdown("user", filter),
            byAgent: yield* breakdown("agent", filter),
            byModel,
            byDay: yield* breakdown("day", filter)
          }
        }))
      .handle("dashboard", ({ query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const userId = principal.role === "admin" ? undefined : principal.userId
          const now = yield* Clock.currentTimeMillis
          const window = WINDOWS[query.window ?? "24h"]
          const { since, keys } = windowBuckets(now, window.bucket, window.count)
          const until = now + 1
          const turns = yield* store.turnCounts({ since, until, userId }, window.bucket).pipe(storage)
          const tokens = yield* breakdown(window.bucket, { since, until, userId })
          const turnsBy = new Map(turns.map((t) => [t.bucket, t.turns]))
          const tokensBy = new Map(tokens.map((t) => [t.key, t]))
          const spendByUser = yield* breakdown("user", { since, until, userId })
          const live = (yield* pool.live).filter((s) => userId === undefined || s.userId === userId)
          return {
            since,
            until,
            bucket: window.bucket,
            live: {
              sessions: live.length,
              running: live.filter((s) => s.running).length,
              list: live.map((s) => ({ sessionKey: s.sessionKey, agentId: s.agentId, userId: s.userId, running: s.running, lastTurnAt: s.lastTurnAt }))
            },
            series: keys.map((bucket) => ({
              bucket,
              turns: turnsBy.get(bucket) ?? 0,
              inputTokens: tokensBy.get(bucket)?.inputTokens ?? 0,
              outputTokens: tokensBy.get(bucket)?.outputTokens ?? 0
            })),
            currency: currencyOf(spendByUser),
            spendByUser,
            spendByAgent: yield* breakdown("agent", { since, until, userId })
          }
        }))
  }))
