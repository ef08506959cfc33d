/**
 * The `memory` tool, generated from the memory capabilities present (seed: Tool Auto-Generation):
 * `status` always; `search` with a Searcher; `describe`/`expand` with an Explorer;
 * `profile_get`/`profile_update` with a ProfileStore. Its input schema (and so the JSON schema the
 * model sees), description and dispatch all follow the same action list, so a smaller memory layer
 * yields a smaller tool.
 *
 * Every action acts for the calling session's user: search and explore are scoped to that user's
 * sessions (or to the session when the user is unknown), profiles to (user, agent).
 */
import { Effect, Option, Schema, Struct } from "effect"
import { formatSummaryId } from "../../domain/memory/session.ts"
import type { SearchHit, SearchScope } from "../../domain/memory/types.ts"
import { messageText } from "../../domain/message.ts"
import { MEMORY_TOOL } from "../../domain/search/memoryCalls.ts"
import { oneLine } from "../../domain/text.ts"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import { Explorer } from "../../services/Explorer.ts"
import { MemoryProvider } from "../../services/MemoryProvider.ts"
import { ProfileStore } from "../../services/ProfileStore.ts"
import { Embedder } from "../../services/Embedder.ts"
import { Searcher } from "../../services/Searcher.ts"
import type { ToolSource } from "../../services/ToolCatalog.ts"
import * as ToolCatalogLayer from "./ToolCatalog.ts"

export const TOOL_NAME = MEMORY_TOOL

export type MemoryAction = "status" | "search" | "describe" | "expand" | "profile_get" | "profile_update"

export const DEFAULT_SEARCH_HITS = 10
export const MAX_SEARCH_HITS = 50
export const MAX_SEARCH_CONTEXT = 5

/** The arguments besides `action`; each is offered only with the actions that use it. */
const Arguments = {
  query: Schema.optionalKey(
    Schema.String.annotate({
      description: "search: a question or key words, e.g. \"when did Caroline go to the support group\" or \"deploy staging database\"."
    })
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_SEARCH_HITS })).annotate({
      description: `search: at most this many hits (${DEFAULT_SEARCH_HITS}).`
    })
  ),
  strict: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "search: true to require every word (default false: best matches of any of the words first)." })
  ),
  context: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: MAX_SEARCH_CONTEXT })).annotate({
      description: `search: also show this many messages before and after each message hit (0–${MAX_SEARCH_CONTEXT}; answers often follow the question).`
    })
  ),
  include_memory_calls: Schema.optionalKey(
    Schema.Boolean.annotate({
      description: "search: true to also search the memory tool's own earlier calls and their results (left out by default)."
    })
  ),
  id: Schema.optionalKey(Schema.String.annotate({ description: "describe/expand: a summary id such as sum_12." })),
  cursor: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({ description: "expand: nextCursor of the previous page." })),
  content: Schema.optionalKey(Schema.String.annotate({ description: "profile_update: the complete new notes." }))
}

const ARGUMENTS_OF: Record<MemoryAction, ReadonlyArray<keyof typeof Arguments>> = {
  status: [],
  search: ["query", "limit", "strict", "context", "include_memory_calls"],
  describe: ["id"],
  expand: ["id", "cursor"],
  profile_get: [],
  profile_update: ["content"]
}

/**
 * The input of a memory tool offering `actions`: `action` is one of them, and only their arguments
 * are fields. (Typed with every argument: they are all optional, so the decoded type is the same.)
 */
export const inputFor = (actions: ReadonlyArray<MemoryAction>) =>
  Schema.Struct({
    action: Schema.Literals(actions).annotate({ description: "What to do." }),
    ...Struct.pick(Arguments, Array.from(new Set(actions.flatMap((a) => ARGUMENTS_OF[a]))))
  })
type Input = ReturnType<typeof inputFor>["Type"]

const ACTION_TEXT: Record<MemoryAction, string> = {
  status: "status: size of this conversation (messages, tokens, summaries).",
  search: [
    "search: find past messages and summaries (\"query\"). Ask with the distinctive words of what you need — names, numbers,",
    "  identifiers, topic words; a whole question works too (small words are ignored, word forms match: \"deploying\" finds \"deployed\").",
    "  Hits come best first, those with more of your words first. Also: \"exact phrase\", prefix*, a OR b, a AND b, NOT a,",
    "  role:user|assistant|tool_result, tool:NAME. \"context\": N adds the messages around each hit (an answer is often the next",
    "  message); a summary hit (sum_N) names the messages it covers: expand it for the details. Nothing found? Try other",
    "  words or synonyms, or fewer words."
  ].join("\n"),
  describe: "describe: metadata and lineage of a summary (\"id\", e.g. sum_12).",
  expand: "expand: the messages or summaries a summary was made from (\"id\"; pass \"cursor\" to continue).",
  profile_get: "profile_get: read your persistent notes about this user.",
  profile_update: "profile_update: replace your persistent notes about this user (\"content\")."
}

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ")

/** One search hit for the model: a line, then its neighbours (indented) when asked for. */
const hitText = (h: SearchHit): string => {
  if (h.covers !== undefined) {
    const c = h.covers
    return `${h.id} [summary of messages #${c.firstSeq}–#${c.lastSeq}, ${iso(c.earliestAt)} to ${iso(c.latestAt)}; expand ${h.id} for them] ${h.snippet}`
  }
  // A hit found by meaning alone (dense retrieval) matches none of the words: say so.
  // One found through its neighbouring turns (ranked search, issue 25) matches none either.
  // One found by a second hop (the best hit's other words) says which words found it.
  const meaning = h.hop !== undefined
    ? `, through the first hit's words: ${h.hop.join(", ")}`
    : h.matched.length > 0 || h.score <= 0
    ? ""
    : h.similarity !== undefined
    ? ", by meaning"
    : ", by the turns around it"
  const line = `${h.id} [${h.kind}, ${iso(h.createdAt)}${meaning}] ${h.snippet}`
  const around = h.context ?? []
  if (around.length === 0) return line
  const neighbour = (m: (typeof around)[number]) => `  ${m.seq < (h.seq ?? 0) ? "before" : "after"}: ${m.id} [${m.role}] ${oneLine(m.text, 300)}`
  return [
    ...around.filter((m) => m.seq < (h.seq ?? 0)).map(neighbour),
    line,
    ...around.filter((m) => m.seq > (h.seq ?? 0)).map(neighbour)
  ].join("\n")
}
const fail = (reason: string) => Effect.fail(new ToolError({ tool: TOOL_NAME, reason }))

export const make = Effect.gen(function*() {
  const provider = yield* MemoryProvider
  const searcher = yield* Effect.serviceOption(Searcher)
  const embedder = yield* Effect.serviceOption(Embedder)
  const explorer = yield* Effect.serviceOption(Explorer)
  const profiles = yield* Effect.serviceOption(ProfileStore)

  const actions: Array<MemoryAction> = ["status"]
  if (Option.isSome(searcher)) actions.push("search")
  if (Option.isSome(explorer)) actions.push("describe", "expand")
  if (Option.isSome(profiles)) actions.push("profile_get", "profile_update")

  const input = inputFor(actions)
  const decode = Schema.decodeUnknownEffect(input)
  /** The decoder's message for an action outside the enum would not list the ones this deployment has. */
  const unknownAction = (raw: unknown): string | undefined => {
    const action = typeof raw === "object" && raw !== null && "action" in raw ? raw.action : undefined
    return typeof action === "string" && !actions.some((a) => a === action)
      ? `unknown action "${action}"; available: ${actions.join(", ")}`
      : undefined
  }

  const scopeOf = (ctx: ToolCallContext): SearchScope =>
    ctx.userId === "" ? { _tag: "Session", sessionKey: ctx.sessionKey } : { _tag: "User", userId: ctx.userId }

  const run = (input: Input, ctx: ToolCallContext): Effect.Effect<string, ToolError> => {
    switch (input.action) {
      case "status":
        return provider.stats(ctx.sessionKey).pipe(
          Effect.map((s) =>
            `${s.messages} messages (${s.messageTokens} tokens) stored; live context ${s.contextTokens} tokens in ${s.contextItems} items; ${
              s.summaries === 0 ? "no summaries yet" : `${s.summaries} ${s.summaries === 1 ? "summary" : "summaries"}, max depth ${s.maxDepth}`
            }.`
          ),
          Effect.catchTag("SessionNotFound", () => Effect.succeed("This conversation has no stored messages yet."))
        ).pipe(Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: e.message })))
      case "search": {
        if (Option.isNone(searcher)) return fail("search is not available")
        const query = input.query?.trim() ?? ""
        if (query === "") return fail("search needs a non-empty \"query\"")
        const strict = input.strict === true
        // With the agent's embedding model, the query's vector (undefined without one, or on a failure).
        const dense = strict || Option.isNone(embedder)
          ? Effect.succeed(undefined)
          : embedder.value.queryVector(ctx.agentId, query, { sessionKey: ctx.sessionKey, userId: ctx.userId })
        return Effect.flatMap(dense, (vector) =>
          searcher.value.search(query, {
            scope: scopeOf(ctx),
            limit: input.limit ?? DEFAULT_SEARCH_HITS,
            mode: strict ? "strict" : "ranked",
            context: input.context ?? 0,
            includeMemoryCalls: input.include_memory_calls === true,
            ...(vector === undefined ? {} : { dense: vector })
          })).pipe(
          Effect.map((hits) =>
            hits.length === 0
              ? `No matches for ${JSON.stringify(query)}.`
              : hits.map(hitText).join("\n")
          ),
          Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: e.message }))
        )
      }
      case "describe": {
        if (Option.isNone(explorer)) return fail("describe is not available")
        if (input.id === undefined) return fail("describe needs an \"id\" such as sum_12")
        return explorer.value.describe(input.id, scopeOf(ctx)).pipe(
          Effect.map((d) =>
            [
              `${d.id}: ${d.kind} summary, depth ${d.depth}, ${d.tokens} tokens from ${d.sourceTokens} source tokens`,
              `covers messages ${d.sourceRange.firstSeq}–${d.sourceRange.lastSeq} (${d.sourceRange.messages}), ${
                iso(d.earliestAt)
              } to ${iso(d.latestAt)}`,
              `parents: ${d.parents.join(", ") || "none (in the live context)"}`,
              d.kind === "condensed"
                ? `constituents: ${d.childSummaries.join(", ")}`
                : `constituents: ${d.childMessages} messages`,
              "",
              d.content
            ].join("\n")
          ),
          Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: e.message }))
        )
      }
      case "expand": {
        if (Option.isNone(explorer)) return fail("expand is not available")
        if (input.id === undefined) return fail("expand needs an \"id\" such as sum_12")
        return explorer.value.expand(input.id, { scope: scopeOf(ctx), cursor: input.cursor }).pipe(
          Effect.map((r) => {
            const body = r.items.map((it) =>
              it.kind === "message"
                ? `[${it.id} ${it.message.role} ${iso(it.createdAt)}]\n${messageText(it.message)}`
                : `[${it.id} depth ${it.depth}, ${iso(it.earliestAt)} to ${iso(it.latestAt)}]\n${it.content}`
            )
            const more = r.nextCursor === null
              ? `(end of ${r.summaryId}: ${r.totalItems} items)`
              : `(showing up to item ${r.nextCursor} of ${r.totalItems}; call expand with id ${r.summaryId} and cursor ${r.nextCursor} for more)`
            return [...body, more].join("\n\n")
          }),
          Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: e.message }))
        )
      }
      case "profile_get":
        if (Option.isNone(profiles)) return fail("profile_get is not available")
        return profiles.value.getProfile(ctx.userId, ctx.agentId).pipe(
          Effect.map((c) => (c === "" ? "(no notes about this user yet)" : c)),
          Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: e.message }))
        )
      case "profile_update":
        if (Option.isNone(profiles)) return fail("profile_update is not available")
        if (input.content === undefined) return fail("profile_update needs \"content\" (the complete new notes)")
        if (ctx.userId === "") return fail("profile notes need a known user")
        return profiles.value.setProfile(ctx.userId, ctx.agentId, input.content).pipe(
          Effect.as(`Saved notes (${input.content.length} characters).`),
          Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: e.message }))
        )
    }
  }

  const tool: Tool & { readonly actions: ReadonlyArray<MemoryAction> } = {
    actions,
    definition: {
      name: TOOL_NAME,
      description: [
        "Long-term memory of this conversation and of your notes about the user. Older parts of the conversation",
        `are compacted into summaries such as ${formatSummaryId(12)}; use them to recall details. Actions:`,
        ...actions.map((a) => `- ${ACTION_TEXT[a]}`)
      ].join("\n"),
      inputSchema: inputSchemaOf(input)
    },
    execute: (raw, ctx) =>
      decode(raw).pipe(
        Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: unknownAction(raw) ?? `invalid input: ${e.message}` })),
        Effect.flatMap((input) => run(input, ctx))
      )
  }
  return tool
})

/** The memory tool as a ToolCatalog source (its actions follow the memory capabilities present). */
export const layer = ToolCatalogLayer.register(Effect.map(make, (tool): ToolSource => ({ id: "memory", tools: () => Effect.succeed([tool]) })))
