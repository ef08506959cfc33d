/**
 * anna's memory as MCP tools (issue 14, `anna mcp serve`): `status`, `search`, `describe` and
 * `expand` over the sessions of ONE user (and of one agent, with `agentId`), for other agents and
 * editors to consult anna's lossless memory.
 *
 * Search, describe and expand are the memory tool's own (src/layers/tools/memory.ts: the same input
 * schemas, validation and text), built here over a Searcher and an Explorer that are locked to the
 * scope whatever a caller asks: the user scope is forced on every call, and with an agent a hit or a
 * summary of another agent's session is dropped or refused with the very error an unknown id gets
 * (`no summary "sum_7"`), so the answers are no oracle of what exists outside. `status` lists the
 * scope's sessions. Nothing here writes memory.
 *
 * The tools follow the memory capabilities present, like the memory tool: with memory/simple (no
 * Searcher, no Explorer) only `status` is offered.
 */
import { Effect, Option } from "effect"
import { SummaryNotFound } from "../../domain/memory/errors.ts"
import type { SearchHit, SearchScope } from "../../domain/memory/types.ts"
import type { ToolCallContext } from "../../domain/tool.ts"
import { inputSchemaOf, type ToolInputSchema } from "../../domain/toolSchema.ts"
import { Explorer } from "../../services/Explorer.ts"
import { MemoryProvider } from "../../services/MemoryProvider.ts"
import { MemoryStore } from "../../services/MemoryStore.ts"
import { Searcher } from "../../services/Searcher.ts"
import * as MemoryTool from "../tools/memory.ts"

export type MemoryToolName = "status" | "search" | "describe" | "expand"

/** Whose memory is served: a user's sessions, or only those with one agent. */
export interface MemoryServerScope {
  readonly userId: string
  readonly agentId?: string | undefined
}

export interface MemoryServerTool {
  readonly name: MemoryToolName
  readonly description: string
  readonly inputSchema: ToolInputSchema
}

/** A tool's answer: text for the client, `isError` when the call was refused or failed. */
export interface MemoryServerResult {
  readonly text: string
  readonly isError: boolean
}

export interface MemoryServer {
  readonly scope: MemoryServerScope
  readonly tools: ReadonlyArray<MemoryServerTool>
  readonly call: (name: string, args: unknown) => Effect.Effect<MemoryServerResult>
}

/** With an agent, a user-wide search asks for this many hits before keeping the agent's (LcmMemory's maximum). */
const WIDE_SEARCH = 100

const DESCRIPTION: Record<MemoryToolName, string> = {
  status: "Sessions stored in anna's memory for this user: each session's messages, tokens and summaries.",
  search: [
    "Search the user's past conversations with anna (messages and summaries), best matches first. Ask with the",
    "distinctive words of what you need (names, numbers, identifiers, topic words); a whole question works too.",
    "Also: \"exact phrase\", prefix*, a OR b, NOT a, role:user|assistant|tool_result, tool:NAME. A summary hit (sum_N)",
    "covers older messages: call expand with its id for them."
  ].join(" "),
  describe: "Metadata, lineage and text of a summary (id such as sum_12): what it covers, when, its parents and constituents.",
  expand: "The messages (leaf summary) or summaries (condensed summary) a summary was made from, page by page (pass cursor to continue)."
}

const stripAction = (schema: ToolInputSchema): ToolInputSchema => {
  const { action: _, ...properties } = schema.properties
  return { ...schema, properties, required: schema.required.filter((k) => k !== "action") }
}

/**
 * The best `limit` of several sessions' hits. Each session ranks its own (a word's rarity is counted
 * within the session), so scores compare only roughly across sessions: good enough for a fallback.
 */
const best = (hits: ReadonlyArray<SearchHit>, limit: number): ReadonlyArray<SearchHit> => {
  const seen = new Set<string>()
  const unique = hits.filter((h) => {
    if (seen.has(h.id)) return false
    seen.add(h.id)
    return true
  })
  return unique.sort((a, b) => b.score - a.score || b.createdAt - a.createdAt).slice(0, limit)
}

export const make = (scope: MemoryServerScope) =>
  Effect.gen(function*() {
    const provider = yield* MemoryProvider
    const store = yield* MemoryStore
    const searcher = yield* Effect.serviceOption(Searcher)
    const explorer = yield* Effect.serviceOption(Explorer)
    const user: SearchScope = { _tag: "User", userId: scope.userId }

    /** The scope's sessions, read at every call: sessions made while serving are in it. */
    const sessions = store.listConversations({ userId: scope.userId, agentId: scope.agentId })
    const sessionKeys = Effect.map(sessions, (cs) => new Set(cs.filter((c) => c.userId === scope.userId).map((c) => c.sessionKey)))

    const scopedSearcher = (inner: Searcher["Service"]) =>
      Searcher.of({
        search: (query, options) =>
          Effect.gen(function*() {
            const agentId = scope.agentId
            if (agentId === undefined) return yield* inner.search(query, { ...options, scope: user })
            const limit = options.limit ?? MemoryTool.DEFAULT_SEARCH_HITS
            const keys = yield* sessionKeys
            if (keys.size === 0) return []
            const wide = yield* inner.search(query, { ...options, scope: user, limit: WIDE_SEARCH })
            const kept = wide.filter((h) => keys.has(h.sessionKey))
            if (kept.length >= limit || wide.length < WIDE_SEARCH) return kept.slice(0, limit)
            // Other agents' hits crowded the user-wide answer: ask each of this agent's sessions.
            const each = yield* Effect.forEach(
              [...keys],
              (sessionKey) => inner.search(query, { ...options, scope: { _tag: "Session", sessionKey }, limit })
            )
            return best(each.flat(), limit)
          })
      })

    const scopedExplorer = (inner: Explorer["Service"]) => {
      /** The summary if the scope may see it; otherwise exactly what an unknown id gets. */
      const owned = (summaryId: string) =>
        Effect.gen(function*() {
          const d = yield* inner.describe(summaryId, user)
          if (scope.agentId !== undefined && !(yield* sessionKeys).has(d.sessionKey)) return yield* new SummaryNotFound({ summaryId })
          return d
        })
      return Explorer.of({
        describe: (summaryId) => owned(summaryId),
        expand: (summaryId, options) => Effect.andThen(owned(summaryId), inner.expand(summaryId, { ...options, scope: user }))
      })
    }

    let build = MemoryTool.make
    if (Option.isSome(searcher)) build = build.pipe(Effect.provideService(Searcher, scopedSearcher(searcher.value)))
    if (Option.isSome(explorer)) build = build.pipe(Effect.provideService(Explorer, scopedExplorer(explorer.value)))
    const memoryTool = yield* build
    const context: ToolCallContext = { sessionKey: "", userId: scope.userId, agentId: scope.agentId ?? "" }

    const status = Effect.gen(function*() {
      const list = (yield* sessions).filter((c) => c.userId === scope.userId)
      const who = scope.agentId === undefined ? `user ${scope.userId}` : `user ${scope.userId} with agent ${scope.agentId}`
      if (list.length === 0) return `No stored sessions for ${who}.`
      const lines: Array<string> = []
      let messages = 0
      let summaries = 0
      for (const c of list) {
        const s = yield* provider.stats(c.sessionKey).pipe(Effect.option)
        if (Option.isNone(s)) continue
        messages += s.value.messages
        summaries += s.value.summaries
        const at = s.value.lastMessageAt
        const last = at === null ? "" : `, last message ${new Date(at).toISOString().slice(0, 16).replace("T", " ")}`
        lines.push(
          `- ${c.sessionKey}: ${s.value.messages} messages (${s.value.messageTokens} tokens), ${
            s.value.summaries === 0 ? "no summaries" : `${s.value.summaries} summaries (max depth ${s.value.maxDepth})`
          }${last}`
        )
      }
      return [`${who}: ${lines.length} sessions, ${messages} messages, ${summaries} summaries.`, ...lines].join("\n")
    }).pipe(Effect.catch((e) => Effect.succeed(`status failed: ${e.message}`)))

    const served = (a: MemoryTool.MemoryAction): a is MemoryToolName => a === "search" || a === "describe" || a === "expand"
    const names: Array<MemoryToolName> = ["status", ...memoryTool.actions.filter(served)]
    const tools: ReadonlyArray<MemoryServerTool> = names.map((name) => ({
      name,
      description: DESCRIPTION[name],
      inputSchema: stripAction(inputSchemaOf(MemoryTool.inputFor([name])))
    }))

    const call = (name: string, args: unknown): Effect.Effect<MemoryServerResult> => {
      const tool = tools.find((t) => t.name === name)
      if (tool === undefined) return Effect.succeed({ text: `unknown tool "${name}"; available: ${names.join(", ")}`, isError: true })
      if (tool.name === "status") return Effect.map(status, (text) => ({ text, isError: false }))
      const input = typeof args === "object" && args !== null ? { ...args, action: tool.name } : { action: tool.name }
      return memoryTool.execute(input, context).pipe(
        Effect.map((text): MemoryServerResult => ({ text, isError: false })),
        Effect.catch((e) => Effect.succeed({ text: e.reason, isError: true }))
      )
    }

    const server: MemoryServer = { scope, tools, call }
    return server
  })
