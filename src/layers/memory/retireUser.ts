/**
 * Moving a removed user's kept memory to the id they are removed as (part of SqliteMemoryStore;
 * issue 23, domain/config/removedUser.ts). Raw messages are immutable and stay as they are: what
 * changes is whom their conversation belongs to — its `user_id` and its session key, so a later user
 * of the same id, writing in the same chat, starts a conversation of their own — and the search
 * index's scope tokens, which name the user (`u<hex of the id>0`, migrations/0010): rows left with
 * the old token would not be hits of the new user (stage 2 checks the owner) but would crowd out
 * theirs among the candidates. Each row leaves the index by rowid and is indexed again under its new
 * owner: in SQL for rows without CJK letters or memory tool calls, through the backlog for the others
 * (./searchIndex.ts).
 * Agents' profiles of the user go with the sessions they were drawn from.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { removedSessionKey } from "../../domain/config/removedUser.ts"
import { tsvectorOf, userToken } from "../../domain/search/tsvector.ts"
import { isPostgres, jsonIdsSql, placeholders } from "../sql/dialect.ts"
import { mayHoldMemoryCallsSql, scopeColumnSql } from "./searchIndex.ts"

export interface RetiredSessions {
  /** Each session moved: its key before and after. */
  readonly sessions: ReadonlyArray<{ readonly from: string; readonly to: string }>
  readonly profiles: number
}

/** `queued`: the rows TypeScript indexes (ctx_search_backlog), as the insert triggers decide. */
const SOURCES = [
  { source: "message", table: "ctx_messages", fts: "ctx_messages_search", text: "text", queued: `(t.has_cjk = 1 OR ${mayHoldMemoryCallsSql("t")})` },
  { source: "summary", table: "ctx_summaries", fts: "ctx_summaries_search", text: "content", queued: "t.has_cjk = 1" }
] as const

/** Call inside a write transaction (it runs `indexQueued`, which must be). */
export const makeRetireUser = (sql: SqlClient, indexQueued: Effect.Effect<void, SqlError>) =>
(userId: string, removedAs: string): Effect.Effect<RetiredSessions, SqlError> =>
  Effect.gen(function*() {
    const convs = yield* sql<{ id: number; session_key: string }>`SELECT id, session_key FROM ctx_conversations
      WHERE user_id = ${userId} ORDER BY id`
    const sessions: Array<{ readonly from: string; readonly to: string }> = []
    for (const c of convs) {
      let to = removedSessionKey(c.session_key, userId, removedAs)
      // Taken only when a session of the same key was moved by an earlier, unfinished run of the
      // removal and written to again after it: both are kept, apart.
      const taken = yield* sql<{ id: number }>`SELECT id FROM ctx_conversations WHERE session_key = ${to}`
      if (taken.length > 0) to = `${to}~${c.id}`
      yield* sql`UPDATE ctx_conversations SET user_id = ${removedAs}, session_key = ${to} WHERE id = ${c.id}`
      sessions.push({ from: c.session_key, to })
    }
    // PostgreSQL's vectors (domain/search/tsvector.ts) change their user token only.
    if (convs.length > 0 && isPostgres(sql)) {
      const ids = JSON.stringify(convs.map((c) => c.id))
      const before = userToken(userId)
      const after = userToken(removedAs)
      for (const s of SOURCES) {
        yield* sql.unsafe(
          placeholders(sql, `UPDATE ${s.fts} f SET terms = ts_delete(f.terms, CAST(? AS text)) || CAST(? AS tsvector)
           FROM ${s.table} t WHERE t.id = f.id AND t.conversation_id IN (${jsonIdsSql(sql)})`),
          [before ?? "", after === null ? "" : tsvectorOf({ body: "", memory: "" }, [after]), ids]
        )
      }
    }
    if (convs.length > 0 && !isPostgres(sql)) {
      const ids = JSON.stringify(convs.map((c) => c.id))
      for (const s of SOURCES) {
        const mine = `SELECT id FROM ${s.table} WHERE conversation_id IN (SELECT value FROM json_each(?))`
        yield* sql.unsafe(`DELETE FROM ${s.fts} WHERE rowid IN (${mine})`, [ids])
        yield* sql.unsafe(
          `INSERT INTO ${s.fts} (rowid, body, cjk, scope, memory, memory_cjk)
           SELECT t.id, t.${s.text}, '', ${scopeColumnSql("c")}, '', ''
           FROM ${s.table} t JOIN ctx_conversations c ON c.id = t.conversation_id
           WHERE NOT ${s.queued} AND c.id IN (SELECT value FROM json_each(?)) ORDER BY t.id`,
          [ids]
        )
        yield* sql.unsafe(
          `INSERT OR IGNORE INTO ctx_search_backlog (source, id)
           SELECT ?, t.id FROM ${s.table} t WHERE ${s.queued} AND t.conversation_id IN (SELECT value FROM json_each(?))`,
          [s.source, ids]
        )
      }
      yield* indexQueued
    }
    // A profile the removed id already has for the agent stays (the first one moved), as OR IGNORE would.
    const moved = yield* sql<{ agent_id: string }>`UPDATE ctx_agent_memory SET user_id = ${removedAs}
      WHERE user_id = ${userId} AND NOT EXISTS (SELECT 1 FROM ctx_agent_memory o
        WHERE o.user_id = ${removedAs} AND o.agent_id = ctx_agent_memory.agent_id) RETURNING agent_id`
    // A profile written under the id after an earlier, unfinished run moved its namesake: it must not
    // reach a later user of the id either, and the one moved first stays.
    yield* sql`DELETE FROM ctx_agent_memory WHERE user_id = ${userId}`
    return { sessions, profiles: moved.length }
  })
