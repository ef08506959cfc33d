/**
 * Playbook rules (the third layer of the self-improving memory, issue 15): reusable, confidence-scored
 * guidance distilled from diary entries. Every number of the design is a named constant here or in
 * ./confidence.ts, ./context.ts and ./antiPattern.ts, and pinned by tests.
 *
 * Times are Unix milliseconds in code; the YAML file (./yaml.ts) writes them as ISO 8601.
 */

/** The plugin that switches the whole loop per agent (`anna plugin disable learning --agent A`; migration 0021). */
export const LEARNING_PLUGIN = "learning"

export type Maturity = "nascent" | "established" | "proven"
export const MATURITIES: ReadonlyArray<Maturity> = ["nascent", "established", "proven"]

export interface PlaybookRule {
  readonly id: string
  readonly text: string
  /** 0–1, as last written: decay is applied when read (./confidence.ts `decayed`). */
  readonly confidence: number
  readonly maturity: Maturity
  readonly successCount: number
  readonly failureCount: number
  readonly antiPattern: boolean
  /** Diary entries it was distilled from. */
  readonly sourceEntries: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
  readonly createdAt: number
  readonly lastAppliedAt: number | null
  /**
   * The user whose conversations it was learned from: it is injected for that user only, until an
   * operator promotes it (`anna playbook promote`). Absent: every user of the agent.
   */
  readonly user?: string | undefined
}

/** Confidence a new rule (proposed by reflection, by the agent, or written by hand without one) starts at. */
export const INITIAL_CONFIDENCE = 0.5

/** Where a rule came from when rules of an agent and the global playbook are shown together. */
export type RuleSource = "agent" | "global"

export interface SourcedRule {
  readonly rule: PlaybookRule
  readonly source: RuleSource
}

/** A rule's number of applications: every success and failure fed back to it. */
export const applications = (rule: PlaybookRule): number => rule.successCount + rule.failureCount

/** Whom a rule is for: its user, or everyone. */
export const visibleTo = (rule: PlaybookRule, userId: string): boolean => rule.user === undefined || rule.user === userId

/** Rule ids: lowercase letters, digits, `_` and `-`, 1–64 characters (safe in YAML, CLI and prompts). */
export const RULE_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/

/** A rule's text is one line of at most this many characters (it goes into system prompts). */
export const MAX_RULE_TEXT = 500
/** At most this many tags per rule, each at most this long. */
export const MAX_RULE_TAGS = 12
export const MAX_TAG_LENGTH = 40

/** A tag as it is compared: trimmed, lowercase. */
export const normalTag = (tag: string): string => tag.trim().toLowerCase()

/** The tags of a list, normalised, without empties or repeats, capped. */
export const cleanTags = (tags: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (const t of tags) {
    const n = normalTag(t).slice(0, MAX_TAG_LENGTH)
    if (n !== "" && !out.includes(n)) out.push(n)
    if (out.length >= MAX_RULE_TAGS) break
  }
  return out
}
