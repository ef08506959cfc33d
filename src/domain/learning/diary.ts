/**
 * Diary entries (the second layer of the self-improving memory, issue 15): after a burst of work the
 * agent reflects, and what it did, decided, struggled with and learned is kept as one entry.
 *
 * A burst is the messages of a session since its previous entry (`fromSeq`..`toSeq` of the session's
 * stored messages); it ends when the session goes idle (its runner is reaped), on `/new`, or on demand.
 */
import { Schema } from "effect"

export type DiaryStatus = "success" | "failure" | "mixed"
export const DIARY_STATUSES: ReadonlyArray<DiaryStatus> = ["success", "failure", "mixed"]

/** What ended the burst. */
export type BurstTrigger = "idle" | "new" | "demand" | "startup"

export interface DiaryEntry {
  /** `diary_<time36>_<random>`. */
  readonly id: string
  readonly sessionKey: string
  readonly agentId: string
  readonly userId: string
  /** The burst: the session's stored messages with seq in [fromSeq, toSeq]. */
  readonly fromSeq: number
  readonly toSeq: number
  readonly accomplishments: ReadonlyArray<string>
  readonly decisions: ReadonlyArray<string>
  readonly challenges: ReadonlyArray<string>
  readonly keyLearnings: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
  readonly status: DiaryStatus
  /** 0–1. */
  readonly qualityScore: number
  readonly createdAt: number
  /** Who wrote it: the summary model, or the heuristic fallback when no model answered. */
  readonly source: "model" | "heuristic"
  readonly trigger: BurstTrigger
}

/** At most this many items per list and characters per item are kept from a reflection. */
export const MAX_DIARY_ITEMS = 10
export const MAX_DIARY_ITEM_LENGTH = 500

const Items = Schema.Array(Schema.String)

/** A rule the reflection proposes for the playbook. */
export const ProposedRule = Schema.Struct({
  text: Schema.String,
  tags: Schema.optionalKey(Schema.Array(Schema.String)),
  anti_pattern: Schema.optionalKey(Schema.Boolean)
})
export type ProposedRule = typeof ProposedRule.Type

/**
 * The JSON the summary model must answer with (checked by this Schema; a reply that does not decode
 * is asked for once more, then the heuristic fallback writes the entry).
 */
export const ReflectionAnswer = Schema.Struct({
  accomplishments: Items,
  decisions: Items,
  challenges: Items,
  key_learnings: Items,
  tags: Items,
  status: Schema.Literals(["success", "failure", "mixed"]),
  quality_score: Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 })),
  rules: Schema.optionalKey(Schema.Array(ProposedRule))
})
export type ReflectionAnswer = typeof ReflectionAnswer.Type
