/**
 * Anti-patterns (issue 15): a rule that keeps failing is proposed for inversion. An operator reviews
 * the proposals (`anna playbook review`) and applies the ones they approve (`anna playbook apply`):
 * the original is deprecated (confidence 0.0) and an `AVOID:` rule takes its place.
 */
import { INITIAL_CONFIDENCE, type PlaybookRule } from "./rule.ts"

/** A rule is an anti-pattern candidate with at least this many failures… */
export const ANTI_PATTERN_MIN_FAILURES = 3
/** …and more than this many times as many failures as successes. */
export const ANTI_PATTERN_FAILURE_RATIO = 2
/** Confidence of a new inverted rule. */
export const INVERSION_CONFIDENCE = INITIAL_CONFIDENCE

/** `failures ≥ 3 and failures > 2 × successes`. */
export const isAntiPatternCandidate = (rule: PlaybookRule): boolean =>
  rule.failureCount >= ANTI_PATTERN_MIN_FAILURES && rule.failureCount > ANTI_PATTERN_FAILURE_RATIO * rule.successCount

/** The inverted rule's text, exactly as the design words it. */
export const inversionText = (text: string, failures: number, successes: number): string =>
  `AVOID: ${text} -- this pattern has caused repeated issues (${failures} failures vs ${successes} successes).`

/** The id of the rule that inverts `id` (stable, so a proposal has the same id until applied). */
export const inversionId = (id: string): string => `${id.slice(0, 58)}-avoid`

export interface InversionProposal {
  /** The rule to deprecate (the proposal's id). */
  readonly original: PlaybookRule
  /** Its replacement, an anti-pattern. */
  readonly inverted: PlaybookRule
}

/** The proposal for `rule` at `now`. */
export const proposeInversion = (rule: PlaybookRule, now: number): InversionProposal => ({
  original: rule,
  inverted: {
    id: inversionId(rule.id),
    text: inversionText(rule.text, rule.failureCount, rule.successCount),
    confidence: INVERSION_CONFIDENCE,
    maturity: "nascent",
    successCount: 0,
    failureCount: 0,
    antiPattern: true,
    sourceEntries: rule.sourceEntries,
    tags: rule.tags,
    createdAt: now,
    lastAppliedAt: null,
    ...(rule.user === undefined ? {} : { user: rule.user })
  }
})

/**
 * Candidates across a playbook: not already anti-patterns, and not already inverted (an applied
 * inversion leaves the original at 0.0 next to its `-avoid` rule).
 */
export const scan = (rules: ReadonlyArray<PlaybookRule>, now: number): ReadonlyArray<InversionProposal> => {
  const ids = new Set(rules.map((r) => r.id))
  return rules
    .filter((r) => !r.antiPattern && isAntiPatternCandidate(r) && !ids.has(inversionId(r.id)))
    .map((r) => proposeInversion(r, now))
}

/** Applies a proposal: the original deprecated to 0.0, the inverted rule added (or replaced). */
export const applyInversion = (rules: ReadonlyArray<PlaybookRule>, proposal: InversionProposal): ReadonlyArray<PlaybookRule> => [
  ...rules.filter((r) => r.id !== proposal.inverted.id).map((r) => (r.id === proposal.original.id ? { ...r, confidence: 0 } : r)),
  proposal.inverted
]
