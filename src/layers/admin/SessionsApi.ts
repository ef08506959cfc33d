/**
 * Handlers of the admin API's `sessions` group (src/domain/admin/groups/sessions.ts): memory's
 * sessions, their messages and summary DAG, search, `/new` and abort, for the principal.
 *
 * - Scope: an admin sees every session; a `user` only their own (`conversation.userId`). Another's
 *   session or summary is 404 exactly like one that does not exist, so ids do not leak; search runs
 *   in the user's scope (Searcher's `User` scope never returns another user's rows).
 * - Live state comes from the SessionPool (a runner up; a turn running), the rest from MemoryStore.
 * - `/new` goes through the Runtime's own command (the same as typing /new in that chat); abort
 *   through the SessionPool (pending tool calls get an "aborted" result, the turn ends `aborted`).
 * - Describe, expand and search need the memory plugin's capabilities (memory/lcm has them); without
 *   one the answer is 400 `not_supported`.
 */
import { lastAttempt } from "../../domain/runtime/restart.ts"
import { Effect, Option, Stream } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import type { SessionOverview } from "../../domain/admin/groups/sessions.ts"
import { BadRequest, CurrentPrincipal, NotFound, ServerError } from "../../domain/admin/security.ts"
import { formatSummaryId } from "../../domain/memory/session.ts"
import type { SearchScope } from "../../domain/memory/types.ts"
import { CONTEXT_MARK, type ResolvedChat } from "../../domain/runtime/types.ts"
import type { Principal } from "../../services/Accounts.ts"
import { Embedder } from "../../services/Embedder.ts"
import { Explorer } from "../../services/Explorer.ts"
import { type Conversation, type ConversationOverview, MemoryStore } from "../../services/MemoryStore.ts"
import { Runtime } from "../../services/Runtime.ts"
import { Searcher } from "../../services/Searcher.ts"
import { type LiveSession, SessionPool } from "../../services/SessionPool.ts"

export const DEFAULT_PAGE = 50

/**
 * A StorageError as a 500, logged here and answered without the database's words (as the other
 * groups answer it).
 */
export const storage = <A, E extends { readonly message: string }, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, ServerError, R> =>
  Effect.catch(self, (e) =>
    Effect.logWarning(`admin API: ${e.message}`).pipe(
      Effect.andThen(Effect.fail(ServerError.of("anna could not read or write its database; see the gateway's log")))
    ))

/** The parts of a chat session key `{agentId}:{platform}:{userId}:{context}` (undefined for other shapes). */
export const keyParts = (key: string) => {
  const parts = key.split(":")
  if (parts.length < 4) return undefined
  return { agentId: parts[0] ?? "", platform: parts[1] ?? "", userId: parts[2] ?? "", context: parts.slice(3).join(":") }
}

export const mayRead = (principal: Principal, ownerId: string): boolean => principal.role === "admin" || ownerId === principal.userId

const titleOf = (info: Readonly<Record<string, unknown>>): string | null => (typeof info["title"] === "string" ? info["title"] : null)

const overview = (c: ConversationOverview, live: ReadonlyMap<string, LiveSession>): SessionOverview => {
  const parts = keyParts(c.sessionKey)
  const running = live.get(c.sessionKey)
  return {
    sessionKey: c.sessionKey,
    agentId: c.agentId,
    userId: c.userId,
    platform: parts?.platform ?? "",
    context: parts?.context ?? "",
    title: titleOf(c.info),
    messages: c.messages,
    messageTokens: c.messageTokens,
    createdAt: c.createdAt,
    lastActivityAt: Math.max(c.lastMessageAt ?? 0, c.updatedAt),
    live: running !== undefined,
    running: running?.running === true
  }
}

const capability = <I, S>(service: import("effect").Context.Key<I, S>, what: string) =>
  Effect.flatMap(
    Effect.serviceOption(service),
    Option.match({
      onNone: () => Effect.fail(BadRequest.of(`the memory plugin in use does not support ${what} (memory/lcm does)`, "not_supported")),
      onSome: Effect.succeed
    })
  )

export const layer = HttpApiBuilder.group(AdminApi, "sessions", (handlers) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const pool = yield* SessionPool
    const runtime = yield* Runtime

    const liveMap = Effect.map(pool.live, (all) => new Map(all.map((s) => [s.sessionKey, s])))

    /** The session if the principal may see it; 404 otherwise, whether it exists or not. */
    const visibleSession = Effect.fn("SessionsApi.visibleSession")(function*(key: string) {
      const principal = yield* CurrentPrincipal
      const found = yield* store.loadConversation(key).pipe(
        Effect.map(Option.some<Conversation>),
        Effect.catchTags({ SessionNotFound: () => Effect.succeed(Option.none<Conversation>()), StorageError: (e) => storage(Effect.fail(e)) })
      )
      if (Option.isNone(found) || !mayRead(principal, found.value.userId)) return yield* NotFound.of(`no session ${key}`)
      return found.value
    })

    const overviewOf = Effect.fn("SessionsApi.overviewOf")(function*(c: Conversation) {
      const page = yield* store.browseConversations({ onlyKeys: [c.sessionKey] }, { limit: 1, offset: 0 }).pipe(storage)
      const row = page.rows[0] ?? { ...c, messages: 0, messageTokens: 0, lastMessageAt: null }
      return overview(row, yield* liveMap)
    })

    /** Explorer/Searcher scope of the principal: a `user` never reaches beyond their own sessions. */
    const scopeOf = (principal: Principal): SearchScope | undefined =>
      principal.role === "admin" ? undefined : { _tag: "User", userId: principal.userId }

    const summaryErrors = {
      SummaryNotFound: (e: { readonly summaryId: string }) => Effect.fail(NotFound.of(`no summary ${e.summaryId}`)),
      StorageError: (e: { readonly message: string }) => storage(Effect.fail(e))
    }

    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const live = yield* liveMap
          const liveKeys = [...live.keys()]
          const page = yield* store.browseConversations({
            agentId: query.agent,
            userId: principal.role === "admin" ? query.user : principal.userId,
            platform: query.platform,
            text: query.q,
            onlyKeys: query.state === "live" ? liveKeys : undefined,
            exceptKeys: query.state === "idle" ? liveKeys : undefined
          }, { limit: query.limit ?? DEFAULT_PAGE, offset: query.offset ?? 0 }).pipe(storage)
          return { total: page.total, sessions: page.rows.map((r) => overview(r, live)) }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const c = yield* visibleSession(params.key)
          const stats = yield* store.stats(c.id).pipe(storage)
          return {
            session: yield* overviewOf(c),
            summaries: stats.summaries,
            maxDepth: stats.maxDepth,
            contextItems: stats.contextItems,
            contextTokens: stats.contextTokens,
            firstMessageAt: stats.firstMessageAt,
            // Session metadata is free-form JSON as stored.
            info: c.info as Record<string, import("effect").Schema.Json>
          }
        }))
      .handle("messages", ({ params, query }) =>
        Effect.gen(function*() {
          const c = yield* visibleSession(params.key)
          const limit = query.limit ?? DEFAULT_PAGE
          const rows = yield* store.messagesBySeq(c.id, query.from ?? 1, limit + 1).pipe(storage)
          const total = yield* store.messageCount(c.id).pipe(storage)
          return {
            sessionKey: c.sessionKey,
            messages: rows.slice(0, limit).map((m) => ({
              id: `msg_${m.id}`,
              seq: m.seq,
              role: m.role,
              message: m.message,
              tokens: m.tokens,
              createdAt: m.createdAt
            })),
            nextSeq: rows[limit]?.seq ?? null,
            total
          }
        }))
      .handle("summaries", ({ params }) =>
        Effect.gen(function*() {
          const c = yield* visibleSession(params.key)
          const nodes = yield* store.summaryNodes(c.id).pipe(storage)
          return {
            sessionKey: c.sessionKey,
            summaries: nodes.map((s) => ({
              id: formatSummaryId(s.id),
              kind: s.kind,
              depth: s.depth,
              mode: s.mode,
              tokens: s.tokenCount,
              sourceTokens: s.sourceTokenCount,
              covers: { firstSeq: s.firstSeq, lastSeq: s.lastSeq, earliestAt: s.earliestAt, latestAt: s.latestAt },
              parents: s.parent === null ? [] : [formatSummaryId(s.parent)],
              live: s.live,
              createdAt: s.createdAt
            }))
          }
        }))
      .handle("describeSummary", ({ params }) =>
        Effect.gen(function*() {
          const explorer = yield* capability(Explorer, "describing summaries")
          return yield* explorer.describe(params.id, scopeOf(yield* CurrentPrincipal)).pipe(Effect.catchTags(summaryErrors))
        }))
      .handle("expandSummary", ({ params, query }) =>
        Effect.gen(function*() {
          const explorer = yield* capability(Explorer, "expanding summaries")
          return yield* explorer.expand(params.id, {
            cursor: query.cursor,
            maxTokens: query.maxTokens,
            scope: scopeOf(yield* CurrentPrincipal)
          }).pipe(Effect.catchTags(summaryErrors))
        }))
      .handle("search", ({ query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const searcher = yield* capability(Searcher, "search")
          let scope: SearchScope
          let agentId = query.agent
          if (query.session !== undefined) {
            const session = yield* visibleSession(query.session)
            scope = { _tag: "Session", sessionKey: session.sessionKey }
            agentId ??= session.agentId
          } else if (principal.role !== "admin") {
            scope = { _tag: "User", userId: principal.userId }
          } else {
            scope = query.user === undefined ? { _tag: "All" } : { _tag: "User", userId: query.user }
          }
          // With the agent's embedding model, the query's vector (none without one, or on a failure:
          // the search is then lexical, as the memory tool's).
          const embedder = yield* Effect.serviceOption(Embedder)
          const dense = query.strict === true || agentId === undefined || Option.isNone(embedder)
            ? undefined
            : yield* embedder.value.queryVector(agentId, query.q, { userId: principal.userId })
          const hits = yield* searcher.search(query.q, {
            scope,
            limit: query.limit,
            mode: query.strict === true ? "strict" : "ranked",
            context: query.context ?? 0,
            includeMemoryCalls: query.includeMemoryCalls === true,
            neighbours: query.ownText !== true,
            ...(dense === undefined ? {} : { dense })
          }).pipe(storage)
          return { hits }
        }))
      .handle("newContext", ({ params }) =>
        Effect.gen(function*() {
          const c = yield* visibleSession(params.key)
          const parts = keyParts(c.sessionKey)
          if (parts === undefined) return yield* BadRequest.of(`${c.sessionKey} is not a chat's session (imported?); it has no chat to move on`)
          const chatId = parts.context.split(CONTEXT_MARK)[0] ?? parts.context
          const chat: ResolvedChat = {
            userId: parts.userId,
            userName: "",
            agentId: parts.agentId,
            platform: parts.platform,
            chatId,
            isGroup: false,
            context: parts.context,
            sessionKey: c.sessionKey,
            model: ""
          }
          // The chat's own /new: the same state change and answer as typing it on that channel.
          const events = yield* Stream.runCollect(runtime.send(chat, "/new"))
          const text = lastAttempt(events).flatMap((e) => (e.type === "text" ? [e.text] : [])).join("")
          return { previous: c.sessionKey, text }
        }))
      .handle("abort", ({ params }) =>
        Effect.gen(function*() {
          const c = yield* visibleSession(params.key)
          return { aborted: yield* pool.abort(c.sessionKey) }
        }))
  }))
