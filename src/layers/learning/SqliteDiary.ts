/**
 * Diary on the diary_entries and burst_uses tables (migration 0021). List fields are stored as JSON
 * arrays of strings; every row is Schema-decoded on the way out, so a hand-edited or corrupt row is a
 * StorageError, not a crash further up.
 */
import { Array as Arr, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { removedSessionKey } from "../../domain/config/removedUser.ts"
import type { DiaryEntry } from "../../domain/learning/diary.ts"
import { DiaryEntryNotFound } from "../../domain/learning/errors.ts"
import { type BurstUse, Diary, type DiaryFilter } from "../../services/Diary.ts"
import { storageError } from "../sql/errors.ts"

/** `list` returns this many entries when the filter gives no limit. */
export const DEFAULT_LIST_LIMIT = 50
/** Rows per INSERT when recording uses (7 bound values each). */
const MAX_USES_PER_INSERT = 2000

const JsonItems = Schema.fromJsonString(Schema.Array(Schema.String))

const EntryRow = Schema.Struct({
  id: Schema.String,
  session_key: Schema.String,
  agent_id: Schema.String,
  user_id: Schema.String,
  from_seq: Schema.Number,
  to_seq: Schema.Number,
  accomplishments: JsonItems,
  decisions: JsonItems,
  challenges: JsonItems,
  key_learnings: JsonItems,
  tags: JsonItems,
  status: Schema.Literals(["success", "failure", "mixed"]),
  quality_score: Schema.Number,
  source: Schema.Literals(["model", "heuristic"]),
  trigger: Schema.Literals(["idle", "new", "demand", "startup"]),
  created_at: Schema.Number
})
const UseRow = Schema.Struct({
  id: Schema.Number,
  session_key: Schema.String,
  agent_id: Schema.String,
  user_id: Schema.String,
  kind: Schema.Literals(["rule", "skill"]),
  ref: Schema.String,
  scope: Schema.String,
  at: Schema.Number
})
const decodeEntries = Schema.decodeUnknownEffect(Schema.Array(EntryRow))
const decodeUses = Schema.decodeUnknownEffect(Schema.Array(UseRow))

const toEntry = (r: typeof EntryRow.Type): DiaryEntry => ({
  id: r.id,
  sessionKey: r.session_key,
  agentId: r.agent_id,
  userId: r.user_id,
  fromSeq: r.from_seq,
  toSeq: r.to_seq,
  accomplishments: r.accomplishments,
  decisions: r.decisions,
  challenges: r.challenges,
  keyLearnings: r.key_learnings,
  tags: r.tags,
  status: r.status,
  qualityScore: r.quality_score,
  createdAt: r.created_at,
  source: r.source,
  trigger: r.trigger
})
const toUse = (r: typeof UseRow.Type): BurstUse => ({
  sessionKey: r.session_key,
  agentId: r.agent_id,
  userId: r.user_id,
  kind: r.kind,
  ref: r.ref,
  scope: r.scope,
  at: r.at
})
/** Uses in the order they were recorded (row id), whatever order SQLite hands them back in. */
const inOrder = (rows: ReadonlyArray<typeof UseRow.Type>): ReadonlyArray<BurstUse> =>
  [...rows].sort((a, b) => a.id - b.id).map(toUse)

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const fail = (operation: string) => Effect.mapError(storageError(operation))

  const add = Effect.fn("Diary.add")(function*(e: DiaryEntry) {
    yield* sql`INSERT INTO diary_entries ${
      sql.insert({
        id: e.id,
        session_key: e.sessionKey,
        agent_id: e.agentId,
        user_id: e.userId,
        from_seq: e.fromSeq,
        to_seq: e.toSeq,
        accomplishments: JSON.stringify(e.accomplishments),
        decisions: JSON.stringify(e.decisions),
        challenges: JSON.stringify(e.challenges),
        key_learnings: JSON.stringify(e.keyLearnings),
        tags: JSON.stringify(e.tags),
        status: e.status,
        quality_score: e.qualityScore,
        source: e.source,
        trigger: e.trigger,
        created_at: e.createdAt
      })
    }`.pipe(fail("add a diary entry"))
  })

  const get = Effect.fn("Diary.get")(function*(id: string) {
    const rows = yield* sql`SELECT * FROM diary_entries WHERE id = ${id}`.pipe(Effect.flatMap(decodeEntries), fail("read a diary entry"))
    const row = rows[0]
    if (row === undefined) return yield* new DiaryEntryNotFound({ id })
    return toEntry(row)
  })

  const list = Effect.fn("Diary.list")(function*(filter: DiaryFilter) {
    const session = filter.sessionKey ?? null
    const agent = filter.agentId ?? null
    const user = filter.userId ?? null
    const tag = filter.tag === undefined ? null : filter.tag.trim()
    const status = filter.status ?? null
    const limit = Math.max(0, Math.floor(filter.limit ?? DEFAULT_LIST_LIMIT))
    const offset = Math.max(0, Math.floor(filter.offset ?? 0))
    // The entry's tags (a JSON array of strings) as rows `t.value`.
    const tagsOf = sql.literal(sql.onDialectOrElse({
      pg: () => "json_array_elements_text(diary_entries.tags::json) AS t(value)",
      orElse: () => "json_each(diary_entries.tags) AS t"
    }))
    const rows = yield* sql`SELECT * FROM diary_entries
      WHERE (CAST(${session} AS TEXT) IS NULL OR session_key = ${session})
        AND (CAST(${agent} AS TEXT) IS NULL OR agent_id = ${agent})
        AND (CAST(${user} AS TEXT) IS NULL OR user_id = ${user})
        AND (CAST(${status} AS TEXT) IS NULL OR status = ${status})
        AND (CAST(${tag} AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM ${tagsOf} WHERE lower(t.value) = lower(${tag})))
      ORDER BY created_at DESC, to_seq DESC, id DESC LIMIT ${limit} OFFSET ${offset}`.pipe(Effect.flatMap(decodeEntries), fail("list diary entries"))
    return rows.map(toEntry)
  })

  const latest = Effect.fn("Diary.latest")(function*(sessionKey: string) {
    const rows = yield* sql`SELECT * FROM diary_entries WHERE session_key = ${sessionKey}
      ORDER BY to_seq DESC, created_at DESC, id DESC LIMIT 1`.pipe(Effect.flatMap(decodeEntries), fail("read the latest diary entry"))
    return Option.map(Option.fromNullishOr(rows[0]), toEntry)
  })

  const recordUses = Effect.fn("Diary.recordUses")(function*(uses: ReadonlyArray<BurstUse>) {
    const rows = uses.map((u) => ({
      session_key: u.sessionKey,
      agent_id: u.agentId,
      user_id: u.userId,
      kind: u.kind,
      ref: u.ref,
      scope: u.scope,
      at: u.at
    }))
    // One INSERT per chunk keeps a statement under SQLite's limit of bound variables (32766).
    const inserts = Arr.chunksOf(rows, MAX_USES_PER_INSERT).map((chunk) => sql`INSERT INTO burst_uses ${sql.insert(chunk)}`)
    if (inserts.length === 0) return
    yield* sql.withTransaction(Effect.all(inserts, { discard: true })).pipe(fail("record burst uses"))
  })

  const openUses = Effect.fn("Diary.openUses")(function*(sessionKey: string) {
    const rows = yield* sql`SELECT * FROM burst_uses WHERE session_key = ${sessionKey} AND settled_by IS NULL ORDER BY id`.pipe(
      Effect.flatMap(decodeUses),
      fail("read open burst uses")
    )
    return inOrder(rows)
  })

  // One UPDATE … RETURNING: SQLite runs it under the write lock, so a use is claimed by exactly one
  // settler even when two processes settle the same session at once.
  const settleUses = Effect.fn("Diary.settleUses")(function*(sessionKey: string, settledBy: string, until?: number) {
    const bound = until === undefined ? sql`` : sql`AND at <= ${until}`
    const rows = yield* sql`UPDATE burst_uses SET settled_by = ${settledBy} WHERE session_key = ${sessionKey} AND settled_by IS NULL ${bound}
      RETURNING id, session_key, agent_id, user_id, kind, ref, scope, at`.pipe(Effect.flatMap(decodeUses), fail("settle burst uses"))
    return inOrder(rows)
  })

  const removeUser = Effect.fn("Diary.removeUser")(function*(userId: string, removedAs: string | undefined) {
    return yield* sql.withTransaction(Effect.gen(function*() {
      if (removedAs === undefined) {
        const entries = yield* sql<{ id: string }>`DELETE FROM diary_entries WHERE user_id = ${userId} RETURNING id`
        const uses = yield* sql<{ id: number }>`DELETE FROM burst_uses WHERE user_id = ${userId} RETURNING id`
        return { entries: entries.length, uses: uses.length }
      }
      let entries = 0
      let uses = 0
      for (const table of ["diary_entries", "burst_uses"] as const) {
        const keys = yield* sql<{ session_key: string }>`SELECT DISTINCT session_key FROM ${sql(table)} WHERE user_id = ${userId}`
        for (const k of keys) {
          const moved = yield* sql<{ n: number }>`UPDATE ${sql(table)} SET user_id = ${removedAs},
            session_key = ${removedSessionKey(k.session_key, userId, removedAs)}
            WHERE user_id = ${userId} AND session_key = ${k.session_key} RETURNING 1 AS n`
          if (table === "diary_entries") entries += moved.length
          else uses += moved.length
        }
      }
      return { entries, uses }
    })).pipe(fail("move or delete a removed user's diary"))
  })

  return Diary.of({ add, get, list, latest, recordUses, openUses, settleUses, removeUser })
})

export const layer = Layer.effect(Diary, make)
