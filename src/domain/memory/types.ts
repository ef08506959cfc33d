/** Values exchanged with the memory services (results, reports, options). */
import type { Effect } from "effect"
import type { Message, Role } from "../message.ts"

export const DEFAULT_FRESH_TAIL = 20
export const DEFAULT_CONTEXT_THRESHOLD = 0.75
export const DEFAULT_LEAF_CHUNK_SIZE = 10
export const DEFAULT_CONDENSED_MIN = 2
/** Upper bound of the input of one summarizer call, so a chunk fits a summarizer model's window. */
export const DEFAULT_CHUNK_TOKENS = 20_000
/** At most this many summaries are condensed into one. */
export const DEFAULT_CONDENSED_FAN_IN = 8
export const MAX_FULL_ITERATIONS = 10
/** A message whose stored JSON exceeds this is refused (8 MiB: large pastes and images fit, a runaway does not). */
export const MAX_MESSAGE_BYTES = 8 * 1024 * 1024

export interface AssembleOptions {
  readonly budget: number
  /** At most this many messages in the fresh tail (default 20). */
  readonly freshTail?: number | undefined
  /** And at most this share of the budget (default 0.4, see fit.ts); the newest unit always. */
  readonly tailShare?: number | undefined
}

export interface Assembled {
  readonly messages: ReadonlyArray<Message>
  /** Estimated tokens of `messages`. */
  readonly tokens: number
  /** How many of the messages at the end are the fresh tail, kept verbatim whatever the budget. */
  readonly freshTailMessages: number
  readonly summaries: number
  /** Older context items left out because they did not fit. */
  readonly omittedItems: number
}

export interface SessionStats {
  readonly sessionKey: string
  readonly agentId: string
  readonly userId: string
  readonly messages: number
  readonly messageTokens: number
  readonly summaries: number
  readonly maxDepth: number
  readonly contextItems: number
  readonly contextTokens: number
  readonly firstMessageAt: number | null
  readonly lastMessageAt: number | null
}

export interface SessionInfo {
  readonly sessionKey: string
  readonly agentId: string
  readonly userId: string
  readonly createdAt: number
  readonly updatedAt: number
  readonly messages: number
  readonly info: Readonly<Record<string, unknown>>
}

export type StopReason =
  | "below_threshold"
  | "no_candidates"
  | "no_progress"
  | "max_iterations"
  | "spend_guard"
  /** `maxSummarizerCalls` reached: the rest waits for the next compaction. */
  | "call_limit"

export interface CompactionReport {
  readonly compacted: boolean
  readonly passes: number
  readonly leafSummaries: number
  readonly condensedSummaries: number
  readonly tokensBefore: number
  readonly tokensAfter: number
  readonly stopReason: StopReason
  /**
   * The summaries this run committed (`sum_<n>`), in commit order; some may already be inside a
   * condensed summary committed later in the same run. Added after the first release: readers of
   * older reports may not find it.
   */
  readonly summaryIds: ReadonlyArray<string>
  /** Handoff compaction (memory/simple) only: the summary it wrote, which `/compact` shows. */
  readonly summary?: { readonly id: string; readonly content: string } | undefined
  /** Summarizer calls this run made (an escalation to aggressive is a second call); added with issue 11. */
  readonly summarizerCalls?: number | undefined
  /** With stopReason `spend_guard`: the limit that stopped the run and who set it (issue 24). */
  readonly spendGuard?: SpendGuardStop | undefined
}

/** The spend guard that stopped a compaction: `calls` of `limit` in the last `windowSeconds`. */
export interface SpendGuardStop {
  readonly calls: number
  readonly limit: number
  readonly windowSeconds: number
  readonly setBy: "agent" | "default" | "run"
  readonly agentId: string
}

/** The report's copy of a spend guard refusal (SpendGuardExceeded's fields, without the session). */
export const spendGuardStop = (e: SpendGuardStop): SpendGuardStop => ({
  calls: e.calls,
  limit: e.limit,
  windowSeconds: e.windowSeconds,
  setBy: e.setBy,
  agentId: e.agentId
})

export interface CompactOptions {
  /** Full mode repeats leaf + condensed passes until nothing is left to do (at most 10 iterations). */
  readonly full?: boolean | undefined
  /**
   * With a budget, compaction stops as soon as the context is at or below threshold × budget, and
   * fits it (fresh tail, summary and input sizes as shares of it; see domain/memory/fit.ts).
   */
  readonly budget?: number | undefined
  /**
   * With a budget: stop once the context is at or below this many tokens instead of threshold ×
   * budget (the runtime asks for a little below it, so that one compaction frees a meaningful share
   * and the next turns do not compact again at once).
   */
  readonly target?: number | undefined
  readonly freshTail?: number | undefined
  /** Stop before a step that could take the run past this many summarizer calls (at least 2 to make any). */
  readonly maxSummarizerCalls?: number | undefined
  /** Called after every committed summary (for progress displays). */
  readonly onProgress?: ((progress: CompactionProgress) => Effect.Effect<void>) | undefined
}

export interface CompactionProgress {
  readonly pass: number
  readonly kind: "leaf" | "condensed"
  /** Steps done and planned in the current pass. */
  readonly step: number
  readonly steps: number
  readonly leafSummaries: number
  readonly condensedSummaries: number
}

export type SearchScope =
  | { readonly _tag: "Session"; readonly sessionKey: string }
  | { readonly _tag: "User"; readonly userId: string }
  /** Every session: for the operator's CLI only, never reachable from a chat. */
  | { readonly _tag: "All" }

export interface SearchOptions {
  readonly scope: SearchScope
  readonly limit?: number | undefined
  /**
   * `ranked` (the default): the query is analysed (stop words dropped, terms stemmed and OR-ed) and
   * results ranked by relevance; `strict`: every term must match (the syntax of README "Search syntax").
   */
  readonly mode?: "ranked" | "strict" | undefined
  /** Add this many messages before and after each message hit (0, the default, to 10). */
  readonly context?: number | undefined
  /**
   * Search the memory tool's own calls and results too (default false: a model's earlier searches
   * would otherwise be the best hits of its next one; a `tool:memory` filter implies true).
   */
  readonly includeMemoryCalls?: boolean | undefined
  /**
   * Ranked mode: match each message (and summary) together with its neighbouring turns, at a lower
   * weight, so a question finds the turn whose context holds its words (default true; false: the
   * row's own text only, as before issue 25). Strict mode always matches the row's own text.
   */
  readonly neighbours?: boolean | undefined
  /**
   * Ranked mode: the query's vector from the searching agent's embedding model (issue 25). With it
   * the lexical ranking is fused (reciprocal rank) with the nearest stored vectors of that model in
   * the scope; without it (or in strict mode) the search is lexical only, as before.
   */
  readonly dense?: DenseQuery | undefined
}

/** A query embedded with `model` (the agent's PROVIDER/MODEL, as vectors are stored under). */
export interface DenseQuery {
  readonly model: string
  readonly vector: Float32Array
}

/** The raw messages below a summary (`anna memory expand` shows them). */
export interface SearchCoverage {
  readonly firstSeq: number
  readonly lastSeq: number
  readonly earliestAt: number
  readonly latestAt: number
}

/** A message next to a message hit (`SearchOptions.context`); `text` is cut at 600 characters. */
export interface SearchContextMessage {
  /** `msg_<n>`. */
  readonly id: string
  readonly seq: number
  readonly role: Role
  readonly createdAt: number
  readonly text: string
}

export interface SearchHit {
  readonly kind: "message" | "summary"
  /** `msg_<n>` or `sum_<n>`. */
  readonly id: string
  readonly sessionKey: string
  readonly snippet: string
  /** Higher is better (relevance; matches of a query with filters only score 0, newest first). */
  readonly score: number
  readonly createdAt: number
  /** Query terms this hit matches, as typed (added with issue 11). */
  readonly matched: ReadonlyArray<string>
  /** Message hits: the message's position in its session and its role. */
  readonly seq?: number | undefined
  readonly role?: Role | undefined
  /** Summary hits: the messages the summary covers. */
  readonly covers?: SearchCoverage | undefined
  /** Message hits, with `context`: the messages around it, in order (the hit itself left out). */
  readonly context?: ReadonlyArray<SearchContextMessage> | undefined
  /**
   * Dense search only (`SearchOptions.dense`): the cosine similarity of the hit's vector to the
   * query's, when the dense side found it (a hit without it was found by the words alone; one with
   * it and no `matched` terms by meaning alone). `score` is then the fused reciprocal-rank score.
   */
  readonly similarity?: number | undefined
  /**
   * Ranked search (issue 25): set on a hit found through the best hit's words rather than the query's
   * (a second hop: the words of the best hit, which the query did not have, searched again), with
   * those words. Such a hit has no `matched` query terms; its snippet marks the words that found it.
   */
  readonly hop?: ReadonlyArray<string> | undefined
}

export interface SummaryDescription {
  readonly id: string
  readonly sessionKey: string
  readonly kind: "leaf" | "condensed"
  readonly depth: number
  readonly mode: "normal" | "aggressive" | "truncated"
  readonly tokens: number
  readonly sourceTokens: number
  readonly earliestAt: number
  readonly latestAt: number
  readonly createdAt: number
  /** Condensed summaries that contain this one (at most one in a DAG built by anna). */
  readonly parents: ReadonlyArray<string>
  /** Direct constituents: summaries for a condensed summary, none for a leaf. */
  readonly childSummaries: ReadonlyArray<string>
  /** Direct source messages (leaf only). */
  readonly childMessages: number
  /** The whole span of raw messages below this summary. */
  readonly sourceRange: { readonly firstSeq: number; readonly lastSeq: number; readonly messages: number }
  /** Whether the summary is in the live context (not yet condensed into another). */
  readonly live: boolean
  readonly content: string
}

export type ExpandedItem =
  | {
    readonly kind: "message"
    readonly id: string
    readonly seq: number
    readonly createdAt: number
    readonly message: Message
    readonly tokens: number
  }
  | {
    readonly kind: "summary"
    readonly id: string
    readonly depth: number
    readonly earliestAt: number
    readonly latestAt: number
    readonly content: string
    readonly tokens: number
  }

export interface ExpandOptions {
  /** Token limit of one page (default 4,000); the first item is always returned whole. */
  readonly maxTokens?: number | undefined
  /** Where to continue, from a previous page's `nextCursor`. */
  readonly cursor?: number | undefined
}

export interface ExpandResult {
  readonly summaryId: string
  readonly kind: "leaf" | "condensed"
  readonly items: ReadonlyArray<ExpandedItem>
  readonly totalItems: number
  readonly tokens: number
  /** Pass as `cursor` to get the next page; null when this page is the last. */
  readonly nextCursor: number | null
}

export interface ReviewBatch {
  readonly sessionKey: string
  readonly agentId: string
  readonly userId: string
  readonly unreviewedMessages: number
  readonly fromSeq: number
  readonly toSeq: number
}

export interface ReviewContext {
  readonly sessionKey: string
  readonly toSeq: number
  readonly transcript: string
}
