/**
 * `/api/sessions`: conversations in memory (as `anna memory sessions|describe|expand|search|stats`)
 * and the turns running in them: a filtered, paged list (with totals and whether a turn runs now), a
 * conversation read in pages (tool_use/tool_result blocks intact: the console folds them), the
 * summary DAG (list, describe, expand), ranked search with highlighted snippets, a fresh context for
 * a chat (what `/new` does) and aborting a running turn.
 *
 * A `user` sees only their own sessions: another's session or summary answers 404, as if it did not
 * exist (ids do not leak), and search is kept to their sessions. Session keys
 * (`{agent}:{platform}:{user}:{context}`) go in the path percent-encoded (the typed client does it).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Message, Role } from "../../message.ts"
import { AdminAuth, CommonErrors, UserAllowed } from "../security.ts"

/** Most sessions or messages a page holds. */
export const MAX_PAGE = 200

const PageSize = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_PAGE }))
const NonNegative = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

export const SessionOverview = Schema.Struct({
  sessionKey: Schema.String,
  agentId: Schema.String,
  userId: Schema.String,
  /** The key's platform part (`telegram`, `web`, …; '' for keys of another shape). */
  platform: Schema.String,
  /** The key's context part (`dm`, `dm#2` after a /new, …). */
  context: Schema.String,
  /** `info.title` when the session has one. */
  title: Schema.NullOr(Schema.String),
  messages: Schema.Number,
  /** Estimated tokens of all its stored messages. */
  messageTokens: Schema.Number,
  createdAt: Schema.Number,
  /** Its newest message, else its last change (ms). */
  lastActivityAt: Schema.Number,
  /** It has a live runner now (SessionPool). */
  live: Schema.Boolean,
  /** A turn is running in it now. */
  running: Schema.Boolean
})
export type SessionOverview = typeof SessionOverview.Type

export const SessionList = Schema.Struct({
  /** Sessions matching the filters, over all pages. */
  total: Schema.Number,
  sessions: Schema.Array(SessionOverview)
})

export const SessionDetail = Schema.Struct({
  session: SessionOverview,
  summaries: Schema.Number,
  /** -1 when there are no summaries. */
  maxDepth: Schema.Number,
  contextItems: Schema.Number,
  contextTokens: Schema.Number,
  firstMessageAt: Schema.NullOr(Schema.Number),
  info: Schema.Record(Schema.String, Schema.Json)
})

export const StoredMessageView = Schema.Struct({
  /** `msg_<n>`. */
  id: Schema.String,
  seq: Schema.Number,
  role: Role,
  /** As stored: a string, or blocks (text, image, tool_use, tool_result). */
  message: Message,
  tokens: Schema.Number,
  createdAt: Schema.Number
})

export const MessagePage = Schema.Struct({
  sessionKey: Schema.String,
  messages: Schema.Array(StoredMessageView),
  /** Pass as `from` for the next page; null at the end. */
  nextSeq: Schema.NullOr(Schema.Number),
  /** Messages in the session. */
  total: Schema.Number
})

const Mode = Schema.Literals(["normal", "aggressive", "truncated"])
const Kind = Schema.Literals(["leaf", "condensed"])

export const Coverage = Schema.Struct({
  firstSeq: Schema.Number,
  lastSeq: Schema.Number,
  earliestAt: Schema.Number,
  latestAt: Schema.Number
})

export const SummaryNodeView = Schema.Struct({
  /** `sum_<n>`. */
  id: Schema.String,
  kind: Kind,
  depth: Schema.Number,
  mode: Mode,
  tokens: Schema.Number,
  sourceTokens: Schema.Number,
  /** The raw messages below it. */
  covers: Coverage,
  /** The condensed summary that contains it (at most one), as `sum_<n>`. */
  parents: Schema.Array(Schema.String),
  /** In the live context (not yet condensed into another). */
  live: Schema.Boolean,
  createdAt: Schema.Number
})

export const SummaryList = Schema.Struct({ sessionKey: Schema.String, summaries: Schema.Array(SummaryNodeView) })

/** `anna memory describe --json`. */
export const SummaryDescriptionView = Schema.Struct({
  id: Schema.String,
  sessionKey: Schema.String,
  kind: Kind,
  depth: Schema.Number,
  mode: Mode,
  tokens: Schema.Number,
  sourceTokens: Schema.Number,
  earliestAt: Schema.Number,
  latestAt: Schema.Number,
  createdAt: Schema.Number,
  parents: Schema.Array(Schema.String),
  childSummaries: Schema.Array(Schema.String),
  childMessages: Schema.Number,
  sourceRange: Schema.Struct({ firstSeq: Schema.Number, lastSeq: Schema.Number, messages: Schema.Number }),
  live: Schema.Boolean,
  content: Schema.String
})

export const ExpandedItemView = Schema.Union([
  Schema.Struct({
    kind: Schema.Literal("message"),
    id: Schema.String,
    seq: Schema.Number,
    createdAt: Schema.Number,
    message: Message,
    tokens: Schema.Number
  }),
  Schema.Struct({
    kind: Schema.Literal("summary"),
    id: Schema.String,
    depth: Schema.Number,
    earliestAt: Schema.Number,
    latestAt: Schema.Number,
    content: Schema.String,
    tokens: Schema.Number
  })
])

/** `anna memory expand --json`. */
export const ExpandResultView = Schema.Struct({
  summaryId: Schema.String,
  kind: Kind,
  items: Schema.Array(ExpandedItemView),
  totalItems: Schema.Number,
  tokens: Schema.Number,
  nextCursor: Schema.NullOr(Schema.Number)
})

/** `anna memory search --json`: matches in the snippet are between « and ». */
export const SearchHitView = Schema.Struct({
  kind: Schema.Literals(["message", "summary"]),
  id: Schema.String,
  sessionKey: Schema.String,
  snippet: Schema.String,
  score: Schema.Number,
  createdAt: Schema.Number,
  matched: Schema.Array(Schema.String),
  seq: Schema.optional(Schema.Number),
  role: Schema.optional(Role),
  covers: Schema.optional(Coverage),
  context: Schema.optional(Schema.Array(Schema.Struct({
    id: Schema.String,
    seq: Schema.Number,
    role: Role,
    createdAt: Schema.Number,
    text: Schema.String
  }))),
  /** Found by meaning (the agent's embedding model): the cosine similarity of its vector to the query's. */
  similarity: Schema.optional(Schema.Number),
  /** Found by the second hop, through these words of the first hit. */
  hop: Schema.optional(Schema.Array(Schema.String))
})

export const SearchResults = Schema.Struct({ hits: Schema.Array(SearchHitView) })

export const NewContext = Schema.Struct({
  /** The session the chat leaves (it stays stored and searchable). */
  previous: Schema.String,
  /** The runtime's answer, as the chat would show it. */
  text: Schema.String
})

export const AbortResult = Schema.Struct({
  /** False when no turn was running. */
  aborted: Schema.Boolean
})

const key = { key: Schema.String }
const summaryId = { id: Schema.String }

export class SessionsGroup extends HttpApiGroup.make("sessions")
  .add(
    HttpApiEndpoint.get("list", "/", {
      query: {
        agent: Schema.optional(Schema.String),
        /** Ignored for a `user` (always their own). */
        user: Schema.optional(Schema.String),
        platform: Schema.optional(Schema.String),
        /** Part of the session key or title, any case. */
        q: Schema.optional(Schema.String),
        /** `live`: a runner is up (a turn may be running); `idle`: not. */
        state: Schema.optional(Schema.Literals(["live", "idle"])),
        limit: Schema.optional(PageSize),
        offset: Schema.optional(NonNegative)
      },
      success: SessionList,
      error: CommonErrors
    }),
    HttpApiEndpoint.get("search", "/search", {
      query: {
        /** Words, "phrases", prefix*, AND/OR/NOT, role:ROLE, tool:NAME (README: Search syntax). */
        q: Schema.String,
        session: Schema.optional(Schema.String),
        /** Admin only: this user's sessions. */
        user: Schema.optional(Schema.String),
        limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }))),
        /** Every word must match (default: ranked). */
        strict: Schema.optional(Schema.Boolean),
        /** Messages before and after each message hit (0–10). */
        context: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10 }))),
        /** Also search the memory tool's own calls and their results (default: left out). */
        includeMemoryCalls: Schema.optional(Schema.Boolean),
        /** Rank each message on its own text only (default: together with its neighbouring turns). */
        ownText: Schema.optional(Schema.Boolean),
        /**
         * Fuse with the nearest vectors of this agent's embedding model (`anna agent set A
         * --embedding-model`), when it has one; default: the session's agent when `session` is given.
         */
        agent: Schema.optional(Schema.String)
      },
      success: SearchResults,
      error: CommonErrors
    }),
    HttpApiEndpoint.get("describeSummary", "/summaries/:id", { params: summaryId, success: SummaryDescriptionView, error: CommonErrors }),
    HttpApiEndpoint.get("expandSummary", "/summaries/:id/expand", {
      params: summaryId,
      query: {
        cursor: Schema.optional(NonNegative),
        maxTokens: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
      },
      success: ExpandResultView,
      error: CommonErrors
    }),
    HttpApiEndpoint.get("get", "/:key", { params: key, success: SessionDetail, error: CommonErrors }),
    HttpApiEndpoint.get("messages", "/:key/messages", {
      params: key,
      /** From this seq (default 1), at most `limit` (default 50). */
      query: { from: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))), limit: Schema.optional(PageSize) },
      success: MessagePage,
      error: CommonErrors
    }),
    HttpApiEndpoint.get("summaries", "/:key/summaries", { params: key, success: SummaryList, error: CommonErrors }),
    HttpApiEndpoint.post("newContext", "/:key/new", { params: key, success: NewContext, error: CommonErrors }),
    HttpApiEndpoint.post("abort", "/:key/abort", { params: key, success: AbortResult, error: CommonErrors })
  )
  .annotate(UserAllowed, true)
  .middleware(AdminAuth)
  .prefix("/sessions")
{}
