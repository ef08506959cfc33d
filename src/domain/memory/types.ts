/** Values exchanged with the memory services (results, reports, options). */
import type { Effect } from "effect"
import type { Message } from "../message.ts"

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
  readonly freshTail?: number | undefined
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

export type StopReason = "below_threshold" | "no_candidates" | "no_progress" | "max_iterations" | "spend_guard"

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
}

export interface CompactOptions {
  /** Full mode repeats leaf + condensed passes until nothing is left to do (at most 10 iterations). */
  readonly full?: boolean | undefined
  /** With a budget, compaction stops as soon as the context is at or below threshold × budget. */
  readonly budget?: number | undefined
  readonly freshTail?: number | undefined
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
}

export interface SearchHit {
  readonly kind: "message" | "summary"
  /** `msg_<n>` or `sum_<n>`. */
  readonly id: string
  readonly sessionKey: string
  readonly snippet: string
  /** Higher is better (negated bm25; recency-ordered matches without a rank score 0). */
  readonly score: number
  readonly createdAt: number
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
