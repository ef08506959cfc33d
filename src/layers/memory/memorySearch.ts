/**
 * Full-text search over messages and summaries (part of SqliteMemoryStore), in two stages that
 * each read a bounded number of rows, so a search costs about the same in a session of a 1k- or a
 * 1M-message database:
 *
 * 1. Candidates. For each term of the plan (domain/search/query.ts), the index (migrations/0010)
 *    gives the newest PER_TERM rows that match it *and the scope* (the scope is a token of every
 *    row, ANDed into the MATCH, so a session's search reads the session's matches only). Each term's
 *    number of matches in the scope (its list when shorter than PER_TERM, else estimated from the
 *    list; counted up to DF_CAP only for plans with required terms, `NOT` or filters) and the scope's
 *    number of rows (kept per conversation by triggers, migrations/0030: never counted per search)
 *    give its idf. Candidates are ordered by the idf-weighted share of the query
 *    they match, newest first among equals.
 * 2. Ranking. The best STAGE2 candidates are read (their first TEXT_CHARS characters) and ranked
 *    in TypeScript (domain/search/rank.ts: BM25 with coverage and proximity); the hits get snippets
 *    with their matches marked, summary hits the messages they cover, message hits their neighbours
 *    when asked.
 * 3. Context (issue 25, ranked plans, messages): the turns around the best WINDOWED candidates are
 *    read too (one query by the (conversation, seq) index, their first WINDOW_CHARS characters) and
 *    every row is ranked together with the two turns with text on each side of it, at
 *    CONTEXT_WEIGHTS (rank.ts): the answer right after the question's words is found, and ranks
 *    below the turns that hold them. A turn found only through its neighbours must have two or more
 *    of the query's words around it and CONTEXT_MIN_TOKENS words of its own ("Noted." is not a hit); with required terms, `NOT` or filters only rows that satisfy
 *    them on their own text are hits. Nothing is stored for it: no index space, no import cost.
 *    A summary is ranked the same way with the summaries of its depth told before and after it in
 *    its conversation (`readSummaryWindows`); a summary is never a hit through its neighbours alone.
 *
 * On PostgreSQL a row whose vector lost positions to PostgreSQL's limits (domain/search/tsvector.ts,
 * CAPPED_TOKEN) cannot answer a phrase: stage 1 asks such rows for the phrase's words and checks the
 * phrase against their text (`capSplit`, `recheck`), so the lists, counts and listings are SQLite's.
 *
 * FTS5's own bm25() is not used: it counts every match of every term in the whole database on each
 * query (7 ms for a common word at 1M messages, whatever the scope). The scope is also checked on
 * the rows read in stage 2, so a hit outside it could not get through even with a wrong token.
 *
 * The memory tool's own calls and results (domain/search/memoryCalls.ts) are left out unless the
 * plan asks for them (`filters.memoryCalls`): the plan's expressions then name their index columns,
 * and stage 2 reads a message's whole text; otherwise it reads the text without them
 * (ctx_message_search_text), and a listing by filters skips the messages that are nothing else.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SearchScope } from "../../domain/memory/types.ts"
import type { Role } from "../../domain/message.ts"
import { planSearch, type QueryPlan, type SearchGroup, type SearchKind, type SearchPlan } from "../../domain/search/query.ts"
import {
  byScore,
  type Candidate,
  type ContextPart,
  findOccurrences,
  groupsFound,
  idf,
  markSpans,
  rankCandidates,
  type Occurrences,
  type Ranked,
  termCounts
} from "../../domain/search/rank.ts"
import { snippetAround } from "../../domain/search/snippet.ts"
import { isStopWord } from "../../domain/search/stopwords.ts"
import { fold, tokenize } from "../../domain/search/text.ts"
import {
  CAPPED_TOKEN,
  conversationToken,
  isPhrase,
  looseTsqueryOfMatcher,
  matcherMatches,
  type TextIndex,
  textIndex,
  tsqueryOfMatcher,
  tsqueryOfMatchers,
  tsqueryOfToken,
  USER_TOKEN_BYTES,
  userToken
} from "../../domain/search/tsvector.ts"
import { StorageError } from "../../domain/storage/errors.ts"
import type { RawContextMessage, RawHit, SearchRequest } from "../../services/MemoryStore.ts"
import { isPostgres, jsonIdsSql, placeholders } from "../sql/dialect.ts"
import { blocksColumnsSql, messageSearchText } from "./searchIndex.ts"

/** Newest matches of one term considered (a term with more is a common one; its idf says so). */
const PER_TERM = 2000
/** Matches of a term counted for its idf, at most. */
const DF_CAP = 20_000
/** Candidates ranked in TypeScript: this many per hit asked for, within bounds. */
const stage2Size = (limit: number) => Math.min(250, Math.max(50, limit * 5))
/** Characters of a row read for ranking and its snippet. */
const TEXT_CHARS = 4000
/** Characters of a neighbouring message returned with a hit. */
const CONTEXT_CHARS = 600
/**
 * Context (issue 25): the weight of a message's neighbouring turns when it is matched together with
 * them, by distance (1 = the turn just before or after). Turns with no searchable text (the memory
 * tool's own calls) are skipped, not counted. The turns before weigh more: a question's words are
 * usually in the turn before its answer. Measured with bench/retrieval.ts (BENCHMARKS.md, issue 25):
 * against 0.5/0.25 both ways, context-dependent questions 62.9 → 71.4 % at 10 in session scope and
 * 46.7 → 64.8 % in user scope, for an MRR of 0.852 → 0.833 on the other kinds.
 */
export const CONTEXT_WEIGHTS = { before: [0.8, 0.4], after: [0.5, 0.25] } as const
/** Turns a message's own text must have (words, CJK letters) to be a hit found through its neighbours alone. */
const CONTEXT_MIN_TOKENS = 4
/** Query words (groups) a turn's neighbours must hold for it to be found through them alone. */
const CONTEXT_MIN_WORDS = 2
/** Chosen rows whose neighbouring turns are read (the best of stage 1), per hit asked for, within bounds. */
const windowed = (limit: number) => Math.min(100, Math.max(20, limit * 2))
/**
 * The second hop (issue 25): when the best hit holds only some of the query's words, its own words
 * that the query does not have (at most HOP_WORDS: capitalised ones first, then the longest) are
 * searched again in the best hit's session, and the best HOP_HITS rows
 * they find that are not among the first HOP_AFTER hits come right after those. For a question whose
 * answer needs two turns far apart ("Which city am I flying to on Friday?": "I'm flying out to see my
 * cousin on Friday" → "my cousin Ana lives in Porto"). Measured with bench/retrieval.ts.
 */
const HOP_WORDS = 3
const HOP_HITS = 2
const HOP_AFTER = 5
/** Characters of a turn read only as another one's context (or a hit found through its context). */
const WINDOW_CHARS = 1000
/** Rows read at once to check a phrase against their whole text (PostgreSQL, rows past its limits: tens of thousands of words each). */
const RECHECK_BATCH = 16

/** What a statement of stage 1 asks for: rows in scope matching every one of `groups` (of the plan), without its `NOT` terms when `exclude`. */
interface Condition {
  readonly groups: ReadonlyArray<number>
  readonly exclude: boolean
}

interface Source {
  readonly kind: SearchKind
  readonly table: string
  readonly fts: string
  readonly text: string
  /** When the hit happened: a message's time, or the end of a summary's time range. */
  readonly time: string
  /** Extra columns read in stage 2. */
  readonly extra: string
  /** Stage 2's text without the memory tool's calls and results (an expression on `t`). */
  readonly searchText?: { readonly text: string }
}

const SOURCES: ReadonlyArray<Source> = [
  {
    kind: "message",
    table: "ctx_messages",
    fts: "ctx_messages_search",
    text: "text",
    time: "created_at",
    extra: "t.seq, t.role",
    // A scalar read by the key per row rather than a join: PostgreSQL hashed the whole table for a
    // join under a read of a few ranges (0.7 of 1.4 ms of a search's neighbouring turns at 100k).
    searchText: { text: "coalesce((SELECT s.body FROM ctx_message_search_text s WHERE s.message_id = t.id), t.text)" }
  },
  {
    kind: "summary",
    table: "ctx_summaries",
    fts: "ctx_summaries_search",
    text: "content",
    time: "latest_at",
    extra: "t.first_seq, t.last_seq, t.earliest_at, t.latest_at, t.depth"
  }
]

const quote = (s: string) => `"${s.replaceAll("\"", "\"\"")}"`
const hex = (s: string) => Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, "0")).join("")

/** A scope resolved against the database. */
interface Resolved {
  /** FTS5 expression selecting the scope's rows, when it has a token. */
  readonly token: string | null
  /** SQL condition on `t` (the source row) for the scope, with its parameters. */
  readonly where: string
  readonly params: ReadonlyArray<unknown>
  /** Whether a row read in stage 2 is inside the scope. */
  readonly owns: (row: { readonly session_key: string; readonly user_id: string }) => boolean
  readonly sessionConversation: number | null
  /**
   * The scope's rows per source and a query of its conversations' ids (with `params`), for a
   * session's or a user's scope; null for All.
   */
  readonly sizes: ({ readonly [K in SearchKind]: number } & { readonly conversations: string }) | null
}

interface Row {
  readonly id: number
  readonly session_key: string
  readonly user_id: string
  readonly conversation_id: number
  readonly created_at: number
  readonly length: number
  readonly text: string
  readonly seq?: number
  readonly role?: Role
  readonly first_seq?: number
  readonly last_seq?: number
  readonly earliest_at?: number
  readonly latest_at?: number
  readonly depth?: number
}

/** A row read in stage 2, its text as ranked and where the plan's terms occur in it. */
interface Analysed {
  readonly row: Row
  readonly text: string
  readonly occurrences: Occurrences
}

/** A conversation's rows of one source: the first and last id, and how many. */
export interface Range {
  readonly first: number
  readonly last: number
  readonly n: number
}

interface Found extends Candidate {
  readonly kind: SearchKind
  readonly row: Row
  /** Found by the second hop, through these words of the best hit. */
  readonly hop?: ReadonlyArray<string> | undefined
}

/**
 * A term's matches in a scope of `n` rows, estimated from its newest PER_TERM matches (`ids`, a
 * full list): they are all the matches among the scope's rows from the oldest of them on, so the
 * term's share of those rows, times `n`. The rows from an id on are counted per conversation, in
 * proportion within the one that straddles it (a conversation's ids grow with its messages). Not
 * counted: counting a common word's matches cost more than the rest of its search (up to DF_CAP
 * rows read per term; 2–5 ms a word at 1M messages).
 */
export const estimateMatching = (ranges: ReadonlyArray<Range>, n: number, ids: ReadonlyArray<number>): number => {
  const from = Math.min(...ids)
  let after = 0
  for (const r of ranges) {
    if (from <= r.first) after += r.n
    else if (from <= r.last) after += (r.n * (r.last - from + 1)) / (r.last - r.first + 1)
  }
  return Math.min(n, Math.max(ids.length, Math.round((ids.length * n) / Math.max(1, after))))
}

/**
 * What differs between SQLite's FTS5 index and PostgreSQL's tsvector index (domain/search/tsvector.ts)
 * in this module's statements: the match expressions and how an index is asked, the JSON lists
 * bound as one parameter, and a few functions.
 */
interface Dialect {
  /** A JSON array parameter's elements as rows `j` with `j.value` (one element) and `j.key` (its index). */
  readonly elements: string
  /** Element `i` of the array `j.value`, as an integer. */
  readonly at: (i: number) => string
  /** Statements run at once (SQLite's one connection runs one at a time anyway). */
  readonly concurrency: number
  /**
   * `table` as `alias`, joined to `elements` row by row on `on` (by an index: PostgreSQL's planner
   * would rather hash the whole table than look up each of a few dozen ranges), in `order` up to
   * `limit` rows per element when given.
   */
  readonly joinEach: (table: string, alias: string, on: string, order?: { readonly by: string; readonly limit: number }) => string
  /** The ids of the rows of `fts` (aliased `f`) matching the expression parameter. */
  readonly match: (fts: string) => string
  readonly id: string
  readonly concatIds: string
  /** SQLite's instr. */
  readonly find: string
  readonly and: (parts: ReadonlyArray<string>) => string
  /** `expr` without the rows matching any of `excluded` (none: `expr` as it is). */
  readonly without: (expr: string, excluded: ReadonlyArray<string>) => string
  readonly group: (g: SearchGroup, plan: QueryPlan) => string
  readonly exclude: (plan: QueryPlan) => ReadonlyArray<string>
  readonly conversationToken: (id: number) => string
  /** A user's scope token, or null when their id has none. */
  readonly userToken: (userId: string) => string | null
}

const FTS5: Dialect = {
  elements: "json_each(?) j",
  concurrency: 1,
  at: (i) => `j.value ->> ${i}`,
  joinEach: (table, alias, on, order) =>
    order === undefined
      ? `JOIN ${table} ${alias} ON ${on}`
      : `JOIN ${table} ${alias} ON ${alias}.id IN (SELECT ${alias}.id FROM ${table} ${alias} WHERE ${on} ORDER BY ${order.by} LIMIT ${order.limit})`,
  match: (fts) => `${fts} MATCH ?`,
  id: "rowid",
  concatIds: "group_concat(id)",
  find: "instr",
  and: (parts) => parts.map((p) => `(${p})`).join(" AND "),
  without: (expr, excluded) => (excluded.length === 0 ? expr : `${expr} NOT (${excluded.join(" OR ")})`),
  group: (g) => g.match,
  exclude: (plan) => plan.exclude,
  conversationToken: (id) => `scope : ${quote(`c${id}`)}`,
  userToken: (userId) =>
    new TextEncoder().encode(userId).length <= USER_TOKEN_BYTES ? `scope : ${quote(`u${hex(userId)}0`)}` : null
}

const TSVECTOR: Dialect = {
  elements: "json_array_elements(CAST(? AS json)) WITH ORDINALITY AS j(value, key)",
  at: (i) => `CAST(j.value ->> ${i} AS bigint)`,
  concurrency: 4,
  // OFFSET 0 keeps the planner from pulling the subquery up into a join of the whole table.
  joinEach: (table, alias, on, order) =>
    `CROSS JOIN LATERAL (SELECT * FROM ${table} ${alias} WHERE ${on}${
      order === undefined ? " OFFSET 0" : ` ORDER BY ${order.by} LIMIT ${order.limit}`
    }) ${alias}`,
  match: () => "f.terms @@ CAST(? AS tsquery)",
  id: "id",
  concatIds: "string_agg(CAST(id AS text), ',')",
  find: "strpos",
  and: (parts) => parts.map((p) => `(${p})`).join(" & "),
  without: (expr, excluded) => (excluded.length === 0 ? expr : `${expr} & !(${excluded.join(" | ")})`),
  group: (g, plan) => tsqueryOfMatchers(g.matchers, plan.filters.memoryCalls),
  exclude: (plan) => plan.excludeMatchers.map((m) => tsqueryOfMatcher(m, plan.filters.memoryCalls)),
  conversationToken: (id) => tsqueryOfToken(conversationToken(id)),
  userToken: (userId) => {
    const token = userToken(userId)
    return token === null ? null : tsqueryOfToken(token)
  }
}

const dialectOf = (sql: SqlClient): Dialect => (isPostgres(sql) ? TSVECTOR : FTS5)

/**
 * The messages `around` seqs before and after each message hit (the hit itself left out), in order,
 * texts cut at CONTEXT_CHARS: one read by the (conversation, seq) index. Shared with dense hits.
 */
export const readNeighbours = (
  sql: SqlClient,
  hits: ReadonlyArray<{ readonly id: number; readonly conversationId: number; readonly seq: number }>,
  around: number
) =>
  Effect.gen(function*() {
    const byHit = new Map<number, Array<RawContextMessage>>()
    if (around <= 0 || hits.length === 0) return byHit
    const d = dialectOf(sql)
    const ranges = hits.map((h) => [h.conversationId, h.seq - around, h.seq + around, h.id, h.seq])
    const rows = yield* sql.unsafe<{ hit: number; id: number; seq: number; role: Role; created_at: number; text: string }>(
      placeholders(
        sql,
        `SELECT ${d.at(3)} AS hit, m.id, m.seq, m.role, m.created_at, substr(m.text, 1, ${CONTEXT_CHARS + 1}) AS text
         FROM ${d.elements}
           ${d.joinEach("ctx_messages", "m", `m.conversation_id = ${d.at(0)} AND m.seq BETWEEN ${d.at(1)} AND ${d.at(2)} AND m.seq <> ${d.at(4)}`)}
         ORDER BY j.key, m.seq`
      ),
      [JSON.stringify(ranges)]
    )
    for (const r of rows) {
      const list = byHit.get(r.hit) ?? []
      list.push({
        id: r.id,
        seq: r.seq,
        role: r.role,
        createdAt: r.created_at,
        text: r.text.length > CONTEXT_CHARS ? `${r.text.slice(0, CONTEXT_CHARS)}…` : r.text
      })
      byHit.set(r.hit, list)
    }
    return byHit
  })

/**
 * A constant LIMIT written into a statement rather than bound: PostgreSQL plans a prepared statement
 * once for any parameters after a few runs, and with the LIMIT a parameter that generic plan walked a
 * table's primary key backwards, reading every row's vector (3 ms for a rare word among a 100k
 * session's summaries, 0.04 ms by its index); with the LIMIT known it takes the index.
 */
const limitSql = (n: number): string => {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`search: a LIMIT of ${n}`)
  return String(n)
}

export const makeSearch = (sql: SqlClient) => {
  const d = dialectOf(sql)
  const and = d.and
  const idList = jsonIdsSql(sql)
  const query = <A extends object>(text: string, params: ReadonlyArray<unknown>) => sql.unsafe<A>(placeholders(sql, text), [...params])

  const resolve = (scope: SearchScope) =>
    Effect.gen(function*() {
      switch (scope._tag) {
        case "Session": {
          // The session's row counts (migrations/0030) come with its id: one read.
          const rows = yield* query<{ id: number; messages: number; summaries: number }>(
            `SELECT c.id,
               coalesce((SELECT n FROM ctx_search_counts WHERE conversation_id = c.id AND source = 'message'), 0) AS messages,
               coalesce((SELECT n FROM ctx_search_counts WHERE conversation_id = c.id AND source = 'summary'), 0) AS summaries
             FROM ctx_conversations c WHERE c.session_key = ?`,
            [scope.sessionKey]
          )
          const row = rows[0]
          if (row === undefined) return null
          const id = row.id
          const resolved: Resolved = {
            token: d.conversationToken(id),
            where: "t.conversation_id = ?",
            params: [id],
            owns: (r) => r.session_key === scope.sessionKey,
            sessionConversation: id,
            sizes: { message: Number(row.messages), summary: Number(row.summaries), conversations: "SELECT CAST(? AS BIGINT)" }
          }
          return resolved
        }
        case "User": {
          // The user's row counts (migrations/0030), summed over their conversations: one indexed read.
          const counts = yield* query<{ source: SearchKind; n: number }>(
            `SELECT k.source, sum(k.n) AS n FROM ctx_conversations c JOIN ctx_search_counts k ON k.conversation_id = c.id
             WHERE c.user_id = ? GROUP BY k.source`,
            [scope.userId]
          )
          const sizeOf = (kind: SearchKind) => Number(counts.find((c) => c.source === kind)?.n ?? 0)
          const resolved: Resolved = {
            token: d.userToken(scope.userId),
            where: "t.conversation_id IN (SELECT id FROM ctx_conversations WHERE user_id = ?)",
            params: [scope.userId],
            owns: (r) => r.user_id === scope.userId,
            sessionConversation: null,
            sizes: {
              message: sizeOf("message"),
              summary: sizeOf("summary"),
              conversations: "SELECT id FROM ctx_conversations WHERE user_id = ?"
            }
          }
          return resolved
        }
        case "All": {
          const resolved: Resolved = { token: null, where: "1 = 1", params: [], owns: () => true, sessionConversation: null, sizes: null }
          return resolved
        }
      }
    })

  /** SQL conditions on `t` for the plan's filters (messages only; summaries have none). */
  const filterSql = (plan: QueryPlan, src: Source): readonly [string, ReadonlyArray<unknown>] => {
    if (src.kind !== "message") return ["", []]
    const f = plan.filters
    const parts: Array<string> = []
    const params: Array<unknown> = []
    if (f.roles !== null) {
      parts.push(`t.role IN (${f.roles.map(() => "?").join(", ")})`)
      params.push(...f.roles)
    }
    if (f.notRoles.length > 0) {
      parts.push(`t.role NOT IN (${f.notRoles.map(() => "?").join(", ")})`)
      params.push(...f.notRoles)
    }
    // A tool's call is in the message's text as "[tool call NAME]"; its results answer the message before.
    const tool = `(CASE WHEN t.has_tool_results = 1 THEN EXISTS (SELECT 1 FROM ctx_messages p
      WHERE p.conversation_id = t.conversation_id AND p.seq = t.seq - 1 AND ${d.find}(p.text, ?) > 0)
      ELSE ${d.find}(t.text, ?) > 0 END)`
    if (f.tools.length > 0) {
      parts.push(`(${f.tools.map(() => tool).join(" OR ")})`)
      for (const name of f.tools) params.push(`[tool call ${name}]`, `[tool call ${name}]`)
    }
    for (const name of f.notTools) {
      parts.push(`NOT ${tool}`)
      params.push(`[tool call ${name}]`, `[tool call ${name}]`)
    }
    return [parts.map((p) => ` AND ${p}`).join(""), params]
  }

  /**
   * The statement of the newest `limit` ids of `src`'s rows in scope matching `match` and passing
   * `filters` (older than `below` when given), as a subquery, with its parameters.
   */
  const idsSql = (
    src: Source,
    scope: Resolved,
    filters: readonly [string, ReadonlyArray<unknown>],
    match: string,
    limit: number,
    below?: number
  ): readonly [string, ReadonlyArray<unknown>] => {
    const [filter, filterParams] = filters
    const joinScope = scope.token === null && scope.where !== "1 = 1"
    const conditions = `${filter}${joinScope ? ` AND ${scope.where}` : ""}`
    const older = below === undefined ? "" : ` AND f.${d.id} < ?`
    const params = [match, ...(below === undefined ? [] : [below]), ...filterParams, ...(joinScope ? scope.params : [])]
    const text = conditions === ""
      ? `SELECT f.${d.id} AS id FROM ${src.fts} f WHERE ${d.match(src.fts)}${older} ORDER BY f.${d.id} DESC LIMIT ${limitSql(limit)}`
      : `SELECT f.${d.id} AS id FROM ${src.fts} f JOIN ${src.table} t ON t.id = f.${d.id}
         WHERE ${d.match(src.fts)}${older}${conditions} ORDER BY f.${d.id} DESC LIMIT ${limitSql(limit)}`
    return [text, params]
  }

  /** The lowest of ids (a list of up to DF_CAP: no spread into arguments). */
  const oldestOf = (ids: ReadonlyArray<number>): number => ids.reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY)

  /** Ids as one text (see `matching`), read back. */
  const idsOf = (ids: string | null | undefined): Array<number> =>
    ids === null || ids === undefined || ids === "" ? [] : ids.split(",").map(Number)

  /** The rows of `src` a condition of stage 1 asks for: in scope, matching its groups, without the plan's `NOT` terms when asked. */
  const expression = (plan: QueryPlan, scope: Resolved, cond: Condition): string =>
    d.without(
      and([...(scope.token === null ? [] : [scope.token]), ...cond.groups.map((g) => {
        const group = plan.groups[g]
        return group === undefined ? "" : d.group(group, plan)
      })]),
      cond.exclude ? d.exclude(plan) : []
    )

  /**
   * PostgreSQL, when a condition has a phrase (a quoted phrase, a CJK word of three letters or
   * more, `NOT` of either): a row whose vector has the CAPPED_TOKEN (domain/search/tsvector.ts)
   * cannot answer a phrase, so the condition is asked in two parts. `exact`: the rows with every
   * position, where the index answers as it is. `loose`: the rows without, where a phrase is its
   * words anywhere and a `NOT` phrase leaves nothing out — every row that may match, checked in
   * TypeScript against its text (`recheck`). Undefined on SQLite and for conditions without a phrase.
   */
  const capSplit = (plan: QueryPlan, scope: Resolved, cond: Condition): { readonly exact: string; readonly loose: string } | undefined => {
    if (d !== TSVECTOR) return undefined
    const memoryCalls = plan.filters.memoryCalls
    const excluded = cond.exclude ? plan.excludeMatchers : []
    const phrases = cond.groups.some((g) => plan.groups[g]?.matchers.some(isPhrase) === true) || excluded.some(isPhrase)
    if (!phrases) return undefined
    const capped = tsqueryOfToken(CAPPED_TOKEN)
    const loose = cond.groups.map((g) => {
      const parts = (plan.groups[g]?.matchers ?? []).map((m) => looseTsqueryOfMatcher(m, memoryCalls))
      return parts.length === 1 ? (parts[0] ?? "") : `(${parts.join(" | ")})`
    })
    const words = excluded.filter((m) => !isPhrase(m)).map((m) => tsqueryOfMatcher(m, memoryCalls))
    return {
      exact: and([expression(plan, scope, cond), `!${capped}`]),
      loose: d.without(and([capped, ...(scope.token === null ? [] : [scope.token]), ...loose]), words)
    }
  }

  /** Whether a row's text (all of its positions) satisfies `cond`'s groups and `NOT` terms. */
  const satisfies = (plan: QueryPlan, cond: Condition) => (index: TextIndex): boolean => {
    const memoryCalls = plan.filters.memoryCalls
    return cond.groups.every((g) => (plan.groups[g]?.matchers ?? []).some((m) => matcherMatches(index, m, memoryCalls))) &&
      !(cond.exclude && plan.excludeMatchers.some((m) => matcherMatches(index, m, memoryCalls)))
  }

  /**
   * The rows of `ids` whose whole text passes `test`: their text read again (all of it, in batches
   * of RECHECK_BATCH: these are rows of tens of thousands of words) and cut as the index cuts it.
   */
  const recheck = (src: Source, ids: ReadonlyArray<number>, test: (index: TextIndex) => boolean) =>
    Effect.gen(function*() {
      const passed: Array<number> = []
      for (let i = 0; i < ids.length; i += RECHECK_BATCH) {
        const rows = yield* query<{ id: number; text: string; blocks: string | null; answered: string | null }>(
          `SELECT t.id, t.${src.text} AS text${blocksColumnsSql(src.kind, true)} FROM ${src.table} t WHERE t.id IN (${idList})`,
          [JSON.stringify(ids.slice(i, i + RECHECK_BATCH))]
        )
        for (const r of rows) {
          const text = src.kind === "message" ? messageSearchText(r.text, r.blocks, r.answered) : { body: r.text, memory: "" }
          if (test(textIndex(text))) passed.push(Number(r.id))
        }
      }
      return passed
    })

  /**
   * The newest `limit` rows of `loose`'s that pass the recheck, merged into `sure` (the newest
   * `limit` of the others): `first` is loose's newest `limit`, older ones are read while they could
   * still be among the newest `limit` of all.
   */
  const mergeChecked = (
    src: Source,
    scope: Resolved,
    filters: readonly [string, ReadonlyArray<unknown>],
    loose: string,
    test: (index: TextIndex) => boolean,
    sure: ReadonlyArray<number>,
    first: ReadonlyArray<number>,
    limit: number
  ) =>
    Effect.gen(function*() {
      const found = [...sure]
      let batch = first
      while (batch.length > 0) {
        found.push(...(yield* recheck(src, batch, test)))
        found.sort((a, b) => b - a)
        const oldest = oldestOf(batch)
        if (batch.length < limit || (found.length >= limit && (found[limit - 1] ?? 0) > oldest)) break
        const [text, params] = idsSql(src, scope, filters, loose, limit, oldest)
        batch = idsOf((yield* query<{ ids: string | null }>(`SELECT ${d.concatIds} AS ids FROM (${text}) AS x`, params))[0]?.ids)
      }
      return found.slice(0, limit)
    })

  /** Rows of `src` in scope matching `cond`: the newest `limit` ids. */
  const matching = (
    src: Source,
    scope: Resolved,
    plan: QueryPlan,
    cond: Condition,
    limit: number
  ) =>
    Effect.gen(function*() {
      const filters = filterSql(plan, src)
      const split = capSplit(plan, scope, cond)
      if (split === undefined) {
        const [inner, params] = idsSql(src, scope, filters, expression(plan, scope, cond), limit)
        // The ids as one text: up to PER_TERM rows as objects cost more than FTS5 finding them (0.5 ms a
        // term in a user's scope at 1M messages). Their order is not relied on.
        return idsOf((yield* query<{ ids: string | null }>(`SELECT ${d.concatIds} AS ids FROM (${inner}) AS x`, params))[0]?.ids)
      }
      // Both parts in one statement; the rows without every position are rechecked only when there are any.
      const [exact, exactParams] = idsSql(src, scope, filters, split.exact, limit)
      const [loose, looseParams] = idsSql(src, scope, filters, split.loose, limit)
      const rows = yield* query<{ ids: string | null; maybe: string | null }>(
        `SELECT (SELECT ${d.concatIds} FROM (${exact}) AS x) AS ids, (SELECT ${d.concatIds} FROM (${loose}) AS y) AS maybe`,
        [...exactParams, ...looseParams]
      )
      const sure = idsOf(rows[0]?.ids)
      const maybe = idsOf(rows[0]?.maybe)
      return maybe.length === 0 ? sure : yield* mergeChecked(src, scope, filters, split.loose, satisfies(plan, cond), sure, maybe, limit)
    })

  /**
   * Where the scope's rows are: per conversation, its first and last row id and how many rows it has
   * (for All, one range of every id). Read once per source and search, only when a term has more
   * matches than its list holds (`estimateMatching`).
   */
  const scopeRanges = (src: Source, scope: Resolved, n: number) => {
    if (scope.sizes === null) return Effect.succeed<ReadonlyArray<Range>>([{ first: 1, last: n, n }])
    // A message's id grows with its seq: the first and last are one seek each in (conversation, seq).
    const [first, last] = src.kind === "message"
      ? [
        "(SELECT id FROM ctx_messages WHERE conversation_id = k.conversation_id ORDER BY seq LIMIT 1)",
        "(SELECT id FROM ctx_messages WHERE conversation_id = k.conversation_id ORDER BY seq DESC LIMIT 1)"
      ]
      : [
        "(SELECT min(id) FROM ctx_summaries WHERE conversation_id = k.conversation_id)",
        "(SELECT max(id) FROM ctx_summaries WHERE conversation_id = k.conversation_id)"
      ]
    return query<Range>(
      `SELECT k.n, ${first} AS first, ${last} AS last FROM ctx_search_counts k
       WHERE k.source = ? AND k.n > 0 AND k.conversation_id IN (${scope.sizes.conversations})`,
      [src.kind, ...scope.params]
    )
  }

  /** Rows in scope matching `match`, counted up to `cap` (filters left out: they do not change a term's rarity). */
  const countSql = (src: Source, scope: Resolved, match: string, cap: number): readonly [string, ReadonlyArray<unknown>] => {
    const joinScope = scope.token === null && scope.where !== "1 = 1"
    const text = joinScope
      ? `SELECT count(*) AS n FROM (SELECT 1 FROM ${src.fts} f JOIN ${src.table} t ON t.id = f.${d.id}
           WHERE ${d.match(src.fts)} AND ${scope.where} LIMIT ${limitSql(cap)}) AS x`
      : `SELECT count(*) AS n FROM (SELECT 1 FROM ${src.fts} f WHERE ${d.match(src.fts)} LIMIT ${limitSql(cap)}) AS x`
    return [text, joinScope ? [match, ...scope.params] : [match]]
  }

  /** Rows in scope matching `cond` (no `NOT`), counted up to `cap`. */
  const countMatching = (src: Source, scope: Resolved, plan: QueryPlan, cond: Condition, cap: number) =>
    Effect.gen(function*() {
      const split = capSplit(plan, scope, cond)
      if (split === undefined) {
        const [text, params] = countSql(src, scope, expression(plan, scope, cond), cap)
        return Number((yield* query<{ n: number }>(text, params))[0]?.n ?? 0)
      }
      const none: readonly [string, ReadonlyArray<unknown>] = ["", []]
      const [exact, exactParams] = countSql(src, scope, split.exact, cap)
      const [loose, looseParams] = idsSql(src, scope, none, split.loose, cap)
      const rows = yield* query<{ n: number; maybe: string | null }>(
        `SELECT (${exact}) AS n, (SELECT ${d.concatIds} FROM (${loose}) AS y) AS maybe`,
        [...exactParams, ...looseParams]
      )
      const sure = Number(rows[0]?.n ?? 0)
      let batch = idsOf(rows[0]?.maybe)
      let n = sure
      // Rows without every position are read only while the count can still reach the cap.
      while (batch.length > 0 && n < cap) {
        n += (yield* recheck(src, batch, satisfies(plan, cond))).length
        if (batch.length < cap || n >= cap) break
        const [text, params] = idsSql(src, scope, none, split.loose, cap, oldestOf(batch))
        batch = idsOf((yield* query<{ ids: string | null }>(`SELECT ${d.concatIds} AS ids FROM (${text}) AS x`, params))[0]?.ids)
      }
      return Math.min(n, cap)
    })

  /**
   * How many rows the scope has: kept per conversation by triggers (migrations/0030) and read when
   * the scope was resolved (a session's with its id, a user's summed over their conversations); an
   * estimate for All (the highest id).
   */
  const scopeSize = (src: Source, scope: Resolved) =>
    scope.sizes !== null
      ? Effect.succeed(scope.sizes[src.kind])
      : Effect.map(query<{ n: number }>(`SELECT coalesce(max(id), 0) AS n FROM ${src.table}`, []), (rows) => Number(rows[0]?.n ?? 0))

  /** Stage 2: the rows of `ids` (in scope), with what ranking and hits need. */
  const readRows = (plan: QueryPlan, src: Source, scope: Resolved, ids: ReadonlyArray<number>) => {
    const apart = plan.filters.memoryCalls ? undefined : src.searchText
    return Effect.map(
      query<Row>(
        `SELECT t.id, t.conversation_id, c.session_key, c.user_id, t.${src.time} AS created_at, t.token_count AS length,
           substr(${apart?.text ?? `t.${src.text}`}, 1, ${TEXT_CHARS + 1}) AS text, ${src.extra}
         FROM ${src.table} t JOIN ctx_conversations c ON c.id = t.conversation_id
         WHERE t.id IN (${idList})`,
        [JSON.stringify(ids)]
      ),
      (rows) => rows.filter(scope.owns)
    )
  }

  /**
   * The messages around `rows` (up to CONTEXT_WEIGHTS' length + 1 turns each side, their first
   * WINDOW_CHARS characters), those already `read` left out. One read, by the (conversation, seq) index.
   */
  const readWindows = (plan: QueryPlan, src: Source, scope: Resolved, rows: ReadonlyArray<Row>, read: ReadonlyArray<Row>) => {
    const apart = plan.filters.memoryCalls ? undefined : src.searchText
    const reach = Math.max(CONTEXT_WEIGHTS.before.length, CONTEXT_WEIGHTS.after.length) + 1
    const ranges = rows.flatMap((r) => r.seq === undefined ? [] : [[r.conversation_id, r.seq - reach, r.seq + reach]])
    if (ranges.length === 0) return Effect.succeed<Array<Row>>([])
    return Effect.map(
      query<Row>(
        `SELECT DISTINCT t.id, t.conversation_id, c.session_key, c.user_id, t.${src.time} AS created_at, t.token_count AS length,
           substr(${apart?.text ?? `t.${src.text}`}, 1, ${WINDOW_CHARS + 1}) AS text, ${src.extra}
         FROM ${d.elements}
           ${d.joinEach(src.table, "t", `t.conversation_id = ${d.at(0)} AND t.seq BETWEEN ${d.at(1)} AND ${d.at(2)}`)}
         JOIN ctx_conversations c ON c.id = t.conversation_id
         WHERE t.id NOT IN (${idList})`,
        [JSON.stringify(ranges), JSON.stringify(read.map((r) => r.id))]
      ),
      (found) => found.filter(scope.owns)
    )
  }

  /**
   * The summaries of the same conversation and depth around each of `rows` (up to CONTEXT_WEIGHTS'
   * length each side, nearest first, their first WINDOW_CHARS characters), by the (conversation,
   * depth) index: a depth's summaries are made in the order of the turns they cover, so their ids
   * are in that order. One read; `around` is the summary they are read for, `side` -1 before, 1 after.
   */
  const readSummaryWindows = (src: Source, scope: Resolved, rows: ReadonlyArray<Row>) => {
    const targets = rows.flatMap((r) => r.depth === undefined ? [] : [[r.id, r.conversation_id, r.depth]])
    if (targets.length === 0) return Effect.succeed<Array<Row & { readonly around: number; readonly side: number }>>([])
    const side = (sign: -1 | 1, reach: number) =>
      `SELECT ${d.at(0)} AS around, ${sign} AS side, t.id, t.conversation_id, c.session_key, c.user_id,
         t.${src.time} AS created_at, t.token_count AS length, substr(t.${src.text}, 1, ${WINDOW_CHARS + 1}) AS text, ${src.extra}
       FROM ${d.elements}
         ${
        d.joinEach(src.table, "t", `t.conversation_id = ${d.at(1)} AND t.depth = ${d.at(2)} AND t.id ${sign < 0 ? "<" : ">"} ${d.at(0)}`, {
          by: `t.id ${sign < 0 ? "DESC" : "ASC"}`,
          limit: reach
        })
      }
       JOIN ctx_conversations c ON c.id = t.conversation_id`
    const json = JSON.stringify(targets)
    return Effect.map(
      query<Row & { readonly around: number; readonly side: number }>(
        `${side(-1, CONTEXT_WEIGHTS.before.length)} UNION ALL ${side(1, CONTEXT_WEIGHTS.after.length)}`,
        [json, json]
      ),
      (found) => found.filter(scope.owns)
    )
  }

  /** Summaries ranked with the summaries around them (`readSummaryWindows`) as their context. */
  const summariesWithContext = (
    plan: QueryPlan,
    chosen: ReadonlyArray<Row>,
    around: ReadonlyArray<Row & { readonly around: number; readonly side: number }>,
    matched: ReadonlyMap<number, ReadonlyArray<number>>
  ): Array<Found> => {
    const occurrences = new Map<number, Occurrences>()
    const occurrencesOf = (row: Row) => {
      const known = occurrences.get(row.id)
      if (known !== undefined) return known
      const found = findOccurrences(plan, row.text.length > TEXT_CHARS ? row.text.slice(0, TEXT_CHARS) : row.text)
      occurrences.set(row.id, found)
      return found
    }
    const byTarget = new Map<number, Array<Row & { readonly side: number }>>()
    for (const r of around) byTarget.set(r.around, [...(byTarget.get(r.around) ?? []), r])
    return chosen.map((row): Found => {
      const near = byTarget.get(row.id) ?? []
      const context: Array<ContextPart> = []
      for (const sign of [-1, 1] as const) {
        const weights: ReadonlyArray<number> = sign < 0 ? CONTEXT_WEIGHTS.before : CONTEXT_WEIGHTS.after
        const ordered = near.filter((r) => r.side === sign).sort((a, b) => sign * (a.id - b.id))
        ordered.forEach((r, i) => {
          const weight = weights[i]
          if (weight !== undefined) context.push({ tf: termCounts(occurrencesOf(r)), length: r.length, weight })
        })
      }
      const text = row.text.length > TEXT_CHARS ? `${row.text.slice(0, TEXT_CHARS)}…` : row.text
      return {
        id: row.id,
        text,
        length: row.length,
        matched: matched.get(row.id) ?? [],
        createdAt: row.created_at,
        occurrences: occurrencesOf(row),
        context,
        kind: "summary",
        row
      }
    })
  }


  /**
   * Stage 2 with context (messages of a ranked plan): the chosen rows and the turns around them are
   * analysed once each; every row gets its neighbouring turns as context, and when the plan has no
   * required term, exclusion or filter, a turn around a chosen row is a candidate too (the answer
   * right after the question's words). With required terms, `NOT` or filters a hit must satisfy them
   * on its own text, so only the chosen rows (which do) are candidates; their context still counts.
   */
  const withContext = (
    plan: QueryPlan,
    chosen: ReadonlyArray<Row>,
    around: ReadonlyArray<Row>,
    matched: ReadonlyMap<number, ReadonlyArray<number>>,
    admit: boolean
  ): Array<Found> => {
    const all = [...chosen, ...around]
    const analysed = new Map(all.map((row): readonly [number, Analysed] => {
      const text = row.text.length > TEXT_CHARS ? `${row.text.slice(0, TEXT_CHARS)}…` : row.text
      return [row.id, { row, text, occurrences: findOccurrences(plan, text) }]
    }))
    // Each conversation's rows by seq, to walk to the neighbours (only across seqs that were read).
    const bySeq = new Map<string, Analysed>()
    for (const a of analysed.values()) bySeq.set(`${a.row.conversation_id}:${a.row.seq}`, a)
    const contextOf = (row: Row): Array<ContextPart> => {
      const parts: Array<ContextPart> = []
      for (const step of [-1, 1]) {
        const weights: ReadonlyArray<number> = step < 0 ? CONTEXT_WEIGHTS.before : CONTEXT_WEIGHTS.after
        let seq = (row.seq ?? 0) + step
        let distance = 0
        while (distance < weights.length) {
          const next = bySeq.get(`${row.conversation_id}:${seq}`)
          if (next === undefined) break
          seq += step
          if (next.row.text.trim() === "") continue
          const weight = weights[distance] ?? 0
          distance++
          parts.push({ tf: termCounts(next.occurrences), length: next.row.length, weight })
        }
      }
      return parts
    }
    const words = plan.groups.flatMap((g, i) => (g.bonus ? [] : [i]))
    const wordsIn = (context: ReadonlyArray<ContextPart>) => words.filter((g) => context.some((p) => (p.tf[g] ?? 0) > 0)).length
    const chosenIds = new Set(chosen.map((r) => r.id))
    const out: Array<Found> = []
    for (const a of analysed.values()) {
      const isChosen = chosenIds.has(a.row.id)
      if (!isChosen && (!admit || a.row.text.trim() === "")) continue
      const context = contextOf(a.row)
      // A turn read only as context is a candidate when its context holds two or more of the query's
      // words (so a one-word lookup finds only the turns that hold the word).
      if (!isChosen && (wordsIn(context) < CONTEXT_MIN_WORDS || a.occurrences.tokens < CONTEXT_MIN_TOKENS)) continue
      out.push({
        id: a.row.id,
        text: a.text,
        length: a.row.length,
        matched: isChosen ? matched.get(a.row.id) ?? [] : groupsFound(a.occurrences),
        createdAt: a.row.created_at,
        occurrences: a.occurrences,
        context,
        kind: "message",
        row: a.row
      })
    }
    return out
  }

  /** Stages 1 and 2 for one source. */
  const searchSource = (plan: QueryPlan, src: Source, scope: Resolved, limit: number, neighbours: boolean) =>
    Effect.gen(function*() {
      const groups = plan.groups
      const required = groups.flatMap((g, i) => (g.required ? [i] : []))
      const optional = groups.flatMap((g, i) => (g.required ? [] : [i]))
      const matched = new Map<number, Array<number>>()
      const add = (ids: ReadonlyArray<number>, gs: ReadonlyArray<number>) => {
        for (const id of ids) {
          const seen = matched.get(id)
          if (seen === undefined) matched.set(id, [...gs])
          else for (const g of gs) if (!seen.includes(g)) seen.push(g)
        }
      }
      const df: Array<number | undefined> = groups.map(() => undefined)
      const simple = required.length === 0 && plan.exclude.length === 0 && filterSql(plan, src)[0] === ""
      const full: Array<readonly [number, ReadonlyArray<number>]> = []
      if (optional.length === 0) {
        add(yield* matching(src, scope, plan, { groups: required, exclude: true }, PER_TERM), required)
      } else {
        if (required.length > 0) add(yield* matching(src, scope, plan, { groups: required, exclude: true }, PER_TERM), required)
        // Each term's list is its own statement: PostgreSQL runs them side by side on the pool's
        // connections (a round trip each); they are merged in the query's order.
        const lists = yield* Effect.forEach(
          optional,
          (g) => matching(src, scope, plan, { groups: [...required, g], exclude: true }, PER_TERM),
          { concurrency: d.concurrency }
        )
        for (const [k, g] of optional.entries()) {
          const ids = lists[k] ?? []
          add(ids, [...required, g])
          // Alone, unfiltered and below the cap, the list is the term's whole set of matches.
          if (simple && ids.length < PER_TERM) df[g] = ids.length
          // Alone, unfiltered and full, it gives an estimate of them.
          else if (simple && ids.length > 0) full.push([g, ids])
        }
      }
      if (matched.size === 0) return []
      const n = yield* scopeSize(src, scope)
      if (full.length > 0) {
        const ranges = yield* scopeRanges(src, scope, n)
        for (const [g, ids] of full) df[g] = estimateMatching(ranges, n, ids)
      }
      const idfs = yield* Effect.forEach(
        groups,
        (_, g) => {
          const known = df[g]
          return Effect.map(
            known === undefined ? countMatching(src, scope, plan, { groups: [g], exclude: false }, DF_CAP) : Effect.succeed(known),
            (count) => idf(count, n)
          )
        },
        { concurrency: d.concurrency }
      )
      // Best share of the query first, newest first among equals.
      const weightOf = (gs: ReadonlyArray<number>) => gs.reduce((w, g) => w + (groups[g]?.weight ?? 0) * (idfs[g] ?? 0), 0)
      const chosen = Array.from(matched, ([id, gs]) => ({ id, w: weightOf(gs) }))
        .sort((a, b) => b.w - a.w || b.id - a.id)
        .slice(0, stage2Size(limit))
      const rows = yield* readRows(plan, src, scope, chosen.map((c) => c.id))
      if (neighbours && plan.mode === "ranked" && src.kind === "message") {
        const best = new Set(chosen.slice(0, windowed(limit)).map((c) => c.id))
        const around = yield* readWindows(plan, src, scope, rows.filter((r) => best.has(r.id)), rows)
        return rankCandidates(plan, idfs, withContext(plan, rows, around, matched, simple))
      }
      if (neighbours && plan.mode === "ranked" && src.kind === "summary") {
        const best = new Set(chosen.slice(0, windowed(limit)).map((c) => c.id))
        const around = yield* readSummaryWindows(src, scope, rows.filter((r) => best.has(r.id)))
        return rankCandidates(plan, idfs, summariesWithContext(plan, rows, around, matched))
      }
      const candidates: Array<Found> = rows.map((row) => ({
        id: row.id,
        text: row.text.length > TEXT_CHARS ? `${row.text.slice(0, TEXT_CHARS)}…` : row.text,
        length: row.length,
        matched: matched.get(row.id) ?? [],
        createdAt: row.created_at,
        kind: src.kind,
        row
      }))
      return rankCandidates(plan, idfs, candidates)
    })

  /** A plan of filters only: the newest rows in scope that pass them. */
  const listSource = (plan: QueryPlan, src: Source, scope: Resolved, limit: number) =>
    Effect.gen(function*() {
      const [filters, filterParams] = filterSql(plan, src)
      const exclude = plan.exclude.length === 0
        ? ""
        : ` AND t.id NOT IN (SELECT f.${d.id} FROM ${src.fts} f WHERE ${d.match(src.fts)})`
      const excluded = and([...(scope.token === null ? [] : [scope.token]), d.exclude(plan).join(d === FTS5 ? " OR " : " | ")])
      // PostgreSQL, a `NOT` phrase: the index leaves out the rows with every position that hold it;
      // a listed row without them (CAPPED_TOKEN) that may hold it is checked against its text, and
      // the list read again without the rows that do (see capSplit).
      const phrases = d === TSVECTOR && plan.excludeMatchers.some(isPhrase)
      const capped = tsqueryOfToken(CAPPED_TOKEN)
      const excludeParams = plan.exclude.length === 0 ? [] : [phrases ? and([excluded, `!${capped}`]) : excluded]
      // Messages that are nothing but memory tool calls or results have no text of their own to list.
      const onlyMemory = src.searchText !== undefined && !plan.filters.memoryCalls
        ? " AND NOT EXISTS (SELECT 1 FROM ctx_message_search_text s WHERE s.message_id = t.id AND s.body = '')"
        : ""
      // A session's messages come newest first from its (conversation, seq) index.
      const order = src.kind === "message" && scope.sessionConversation !== null ? "t.seq DESC" : "t.id DESC"
      const dropped: Array<number> = []
      const kept = new Set<number>()
      let ids: ReadonlyArray<number> = []
      for (;;) {
        const drop = dropped.length === 0 ? "" : ` AND t.id NOT IN (${idList})`
        ids = yield* Effect.map(
          query<{ id: number }>(
            `SELECT t.id FROM ${src.table} t WHERE ${scope.where}${filters}${exclude}${onlyMemory}${drop} ORDER BY ${order} LIMIT ?`,
            [...scope.params, ...filterParams, ...excludeParams, ...(dropped.length === 0 ? [] : [JSON.stringify(dropped)]), limit]
          ),
          (rows) => rows.map((r) => Number(r.id))
        )
        const unknown = phrases ? ids.filter((id) => !kept.has(id)) : []
        if (unknown.length === 0) break
        const memoryCalls = plan.filters.memoryCalls
        const loose = and([capped, plan.excludeMatchers.map((m) => looseTsqueryOfMatcher(m, memoryCalls)).join(" | ")])
        const maybe = yield* Effect.map(
          query<{ id: number }>(
            `SELECT f.${d.id} AS id FROM ${src.fts} f WHERE f.${d.id} IN (${idList}) AND ${d.match(src.fts)}`,
            [JSON.stringify(unknown), loose]
          ),
          (rows) => rows.map((r) => Number(r.id))
        )
        const holding = new Set(
          yield* recheck(src, maybe, (index) => plan.excludeMatchers.some((m) => matcherMatches(index, m, memoryCalls)))
        )
        for (const id of unknown) if (!holding.has(id)) kept.add(id)
        if (holding.size === 0) break
        dropped.push(...holding)
      }
      const rows = yield* readRows(plan, src, scope, ids)
      return rows.map((row): Ranked<Found> => ({
        candidate: {
          id: row.id,
          text: row.text.length > TEXT_CHARS ? `${row.text.slice(0, TEXT_CHARS)}…` : row.text,
          length: row.length,
          matched: [],
          createdAt: row.created_at,
          kind: src.kind,
          row
        },
        score: 0,
        matched: [],
        spans: []
      }))
    })

  const neighbours = (hits: ReadonlyArray<Ranked<Found>>, around: number) =>
    readNeighbours(
      sql,
      hits.flatMap((h) =>
        h.candidate.kind === "message" && h.candidate.row.seq !== undefined
          ? [{ id: h.candidate.id, conversationId: h.candidate.row.conversation_id, seq: h.candidate.row.seq }]
          : []
      ),
      around
    )

  /** The best hit's own words that the query does not have, for the second hop (none for CJK text). */
  const hopWords = (plan: QueryPlan, text: string): Array<string> => {
    const asked = new Set(plan.groups.flatMap((g) => g.matchers.flatMap((m) => m.terms)))
    const seen = new Set<string>()
    const words: Array<{ readonly word: string; readonly capital: boolean; readonly at: number }> = []
    for (const t of tokenize(text)) {
      const word = text.slice(t.start, t.end)
      if (t.cjk || asked.has(t.term) || seen.has(t.term) || word.length < 3 || /^\d+$/u.test(word) || isStopWord(fold(word))) continue
      seen.add(t.term)
      // A capital inside the text (a name, a place) says more than one at its start.
      words.push({ word, capital: t.start > 0 && /^\p{Lu}/u.test(word), at: words.length })
    }
    return words
      .sort((a, b) => Number(b.capital) - Number(a.capital) || b.word.length - a.word.length || a.at - b.at)
      .slice(0, HOP_WORDS)
      .map((w) => w.word)
  }

  /**
   * The second hop (HOP_WORDS): for a ranked plan with no required term, `NOT` or filter whose best
   * hit is a message, the rows its other words find (on their own text), placed after the first
   * HOP_AFTER hits with the score of the last of those (so scores never rise down the list).
   */
  const secondHop = (plan: QueryPlan, scope: Resolved, hits: ReadonlyArray<Ranked<Found>>, limit: number) =>
    Effect.gen(function*() {
      const top = hits[0]
      const src = SOURCES.find((s) => s.kind === "message")
      // Only when the best hit answers part of the question: it lacks some of the query's words (so a
      // lookup it matches whole, or a one-word query, never gets a second hop).
      const words = plan.groups.filter((g) => !g.bonus).length
      if (
        top === undefined || src === undefined || top.candidate.kind !== "message" || plan.mode !== "ranked" ||
        plan.exclude.length > 0 || plan.groups.some((g) => g.required) || filterSql(plan, src)[0] !== "" || limit <= 1 ||
        words < 2 || top.matched.length >= words
      ) return hits
      const others = hopWords(plan, top.candidate.text)
      const hopPlan = others.length === 0 ? undefined : planSearch(others.join(" "), "ranked", { includeMemoryCalls: plan.filters.memoryCalls })
      if (hopPlan === undefined || hopPlan._tag !== "Query") return hits
      // In the best hit's session: the other half of an answer is told in the same conversation, and a
      // session's matches are few (the words of a hop are often common in a user's other sessions).
      const session = yield* resolve({ _tag: "Session", sessionKey: top.candidate.row.session_key })
      if (session === null || !scope.owns(top.candidate.row)) return hits
      const shown = new Set(hits.slice(0, HOP_AFTER).map((h) => h.candidate.id))
      const found = (yield* searchSource(hopPlan, src, session, HOP_AFTER, false)).sort(byScore)
        .filter((h) => !shown.has(h.candidate.id) && h.score > 0)
        .slice(0, HOP_HITS)
      if (found.length === 0) return hits
      const ids = new Set(found.map((h) => h.candidate.id))
      const rest = hits.filter((h) => !ids.has(h.candidate.id))
      const at = Math.min(HOP_AFTER, rest.length)
      const score = rest[at - 1]?.score ?? top.score
      const hop = found.map((h): Ranked<Found> => ({ ...h, score, matched: [], candidate: { ...h.candidate, hop: h.matched } }))
      return [...rest.slice(0, at), ...hop, ...rest.slice(at)].slice(0, limit)
    })

  const toHit = (h: Ranked<Found>, context: Map<number, Array<RawContextMessage>>): RawHit => {
    const { row } = h.candidate
    const snippet = snippetAround(markSpans(h.candidate.text, h.spans))
    const base = {
      kind: h.candidate.kind,
      id: row.id,
      sessionKey: row.session_key,
      snippet,
      score: Number.isFinite(h.score) ? h.score : 0,
      createdAt: row.created_at,
      matched: h.matched
    }
    if (h.candidate.kind === "summary") {
      return {
        ...base,
        covers: {
          firstSeq: row.first_seq ?? 0,
          lastSeq: row.last_seq ?? 0,
          earliestAt: row.earliest_at ?? 0,
          latestAt: row.latest_at ?? 0
        }
      }
    }
    const around = context.get(row.id)
    return {
      ...base,
      seq: row.seq,
      role: row.role,
      ...(around === undefined ? {} : { context: around }),
      ...(h.candidate.hop === undefined ? {} : { hop: h.candidate.hop })
    }
  }

  return (plan: SearchPlan, scope: SearchScope, request: SearchRequest): Effect.Effect<ReadonlyArray<RawHit>, StorageError> =>
    Effect.gen(function*() {
      if (plan._tag === "Empty" || request.limit <= 0) return []
      const resolved = yield* resolve(scope)
      if (resolved === null) return []
      // A source the scope has no rows of (a session never compacted has no summaries) is not read.
      const sources = SOURCES.filter((s) => plan.filters.kinds.includes(s.kind) && resolved.sizes?.[s.kind] !== 0)
      const lists = yield* Effect.forEach(sources, (src) =>
        plan.groups.length === 0
          ? listSource(plan, src, resolved, request.limit)
          : searchSource(plan, src, resolved, request.limit, request.neighbours ?? true), { concurrency: d.concurrency })
      const first = lists.flat().sort(byScore).slice(0, request.limit)
      const best = (request.neighbours ?? true) ? yield* secondHop(plan, resolved, first, request.limit) : first
      const context = yield* neighbours(best, request.context)
      return best.map((h) => toHit(h, context))
    }).pipe(
      Effect.mapError((e) => new StorageError({ operation: "search", reason: e instanceof Error ? e.message : String(e) }))
    )
}
