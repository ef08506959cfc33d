/**
 * The MemoryStore's reads for browsing (the admin API and web console, issue 13): a filtered page
 * of sessions with their totals, a session's summary DAG, and turns per hour or day for charts.
 * Kept apart from SqliteMemoryStore.ts, which owns the writes and the hot paths of memory.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { ConversationFilter, ConversationOverview, SummaryNode } from "../../services/MemoryStore.ts"
import { isPostgres, jsonValues, utcBucket } from "../sql/dialect.ts"
import { decodeConversation, decodeConversationRows, storageError, type SummaryRow, toSummary } from "./rows.ts"

/** `null` for an absent list, else the list as JSON for `json_each`. */
const keyList = (keys: ReadonlyArray<string> | undefined): string | null => (keys === undefined ? null : JSON.stringify(keys))

export const makeBrowse = (sql: SqlClient.SqlClient) => {
  const where = (f: ConversationFilter) => {
    const text = f.text === undefined || f.text.trim() === "" ? null : f.text.trim().toLowerCase()
    const only = keyList(f.onlyKeys)
    const except = keyList(f.exceptKeys)
    // The platform is the key's second part; its first is the agent id, so it starts right after it.
    // Where a text occurs in a text (0: not at all), and the session's title (its info's `title`).
    const pg = isPostgres(sql)
    const title = pg ? "(CAST(c.info AS json) ->> 'title')" : "json_extract(c.info, '$.title')"
    const find = (haystack: string) => sql.literal(`${pg ? "strpos" : "instr"}(${haystack}, `)
    return sql`(CAST(${f.agentId ?? null} AS TEXT) IS NULL OR c.agent_id = ${f.agentId ?? null})
      AND (CAST(${f.userId ?? null} AS TEXT) IS NULL OR c.user_id = ${f.userId ?? null})
      AND (CAST(${f.platform ?? null} AS TEXT) IS NULL OR substr(c.session_key, length(c.agent_id) + 2, length(CAST(${f.platform ?? ""} AS TEXT)) + 1) = CAST(${
      f.platform ?? ""
    } AS TEXT) || ':')
      AND (CAST(${text} AS TEXT) IS NULL OR ${find("lower(c.session_key)")}${text}) > 0
        OR ${find(`lower(coalesce(${title}, ''))`)}${text}) > 0)
      AND (CAST(${only} AS TEXT) IS NULL OR c.session_key IN (${jsonValues(sql, only ?? "[]", "text")}))
      AND (CAST(${except} AS TEXT) IS NULL OR c.session_key NOT IN (${jsonValues(sql, except ?? "[]", "text")}))`
  }

  const browseConversations = Effect.fn("MemoryStore.browseConversations")(function*(
    filter: ConversationFilter,
    page: { readonly limit: number; readonly offset: number }
  ) {
    const counted = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_conversations c WHERE ${where(filter)}`
    // The page first, then its totals: with the totals in the same SELECT as the ORDER BY, SQLite
    // computed them (a sum over every message) for every matching session before sorting, so a
    // page cost a pass over the whole database (BENCHMARKS.md, issue 13: 1,000 sessions / 200k messages).
    const rows = yield* sql<{ readonly messages: number; readonly message_tokens: number; readonly last_at: number | null }>`WITH page AS (
        SELECT * FROM ctx_conversations c WHERE ${where(filter)}
        ORDER BY c.updated_at DESC, c.id DESC LIMIT ${page.limit} OFFSET ${page.offset}
      )
      SELECT c.*,
        coalesce((SELECT max(seq) FROM ctx_messages m WHERE m.conversation_id = c.id), 0) AS messages,
        (SELECT CAST(coalesce(sum(token_count), 0) AS BIGINT) FROM ctx_messages m WHERE m.conversation_id = c.id) AS message_tokens,
        (SELECT created_at FROM ctx_messages m WHERE m.conversation_id = c.id ORDER BY seq DESC LIMIT 1) AS last_at
      FROM page c ORDER BY c.updated_at DESC, c.id DESC`
    const convs = yield* decodeConversationRows(rows)
    return {
      total: counted[0]?.n ?? 0,
      rows: convs.map((c, i): ConversationOverview => ({
        ...decodeConversation(c),
        messages: rows[i]?.messages ?? 0,
        messageTokens: rows[i]?.message_tokens ?? 0,
        lastMessageAt: rows[i]?.last_at ?? null
      }))
    }
  }, Effect.mapError(storageError("list conversations")))

  const summaryNodes = Effect.fn("MemoryStore.summaryNodes")(function*(conversationId: number) {
    const rows = yield* sql<SummaryRow & { readonly parent: number | null; readonly live: number }>`SELECT s.*, c.session_key, c.user_id,
        (SELECT condensed_id FROM ctx_summary_parents p WHERE p.constituent_id = s.id) AS parent,
        CASE WHEN EXISTS (SELECT 1 FROM ctx_items i WHERE i.summary_id = s.id) THEN 1 ELSE 0 END AS live
      FROM ctx_summaries s JOIN ctx_conversations c ON c.id = s.conversation_id
      WHERE s.conversation_id = ${conversationId} ORDER BY s.first_seq, s.depth, s.id`
    return rows.map((r): SummaryNode => ({ ...toSummary(r), parent: r.parent, live: r.live === 1 }))
  }, Effect.mapError(storageError("read summaries")))

  const turnCounts = Effect.fn("MemoryStore.turnCounts")(function*(
    filter: { readonly since: number; readonly until: number; readonly userId?: string | undefined },
    bucket: "hour" | "day"
  ) {
    return yield* sql<{ bucket: string; turns: number }>`SELECT ${utcBucket(sql, "m.created_at", bucket)} AS bucket,
        count(*) AS turns
      FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id
      WHERE m.role = 'user' AND m.created_at >= ${filter.since} AND m.created_at < ${filter.until}
        AND (CAST(${filter.userId ?? null} AS TEXT) IS NULL OR c.user_id = ${filter.userId ?? null})
      GROUP BY 1 ORDER BY 1`
  }, Effect.mapError(storageError("count turns")))

  // Seqs run 1..N without gaps (memory is lossless; `anna memory verify` checks it), so the last seq
  // is the count: one index probe, whatever the session's size.
  const messageCount = Effect.fn("MemoryStore.messageCount")(function*(conversationId: number) {
    const rows = yield* sql<{ n: number | null }>`SELECT max(seq) AS n FROM ctx_messages WHERE conversation_id = ${conversationId}`
    return rows[0]?.n ?? 0
  }, Effect.mapError(storageError("count messages")))

  return { browseConversations, summaryNodes, turnCounts, messageCount }
}
