/**
 * Confidence math of playbook rules (issue 15, the design's numbers): time decay, asymmetric
 * feedback, maturity progression and the maintenance sweep. Pure.
 */
import { applications, type Maturity, type PlaybookRule } from "./rule.ts"

/** A rule loses half its confidence every this many days without being applied. */
export const HALF_LIFE_DAYS = 90
/** Feedback: a success adds this much confidence… */
export const SUCCESS_INCREMENT = 0.05
/** …and a failure takes this much away (4× asymmetry: one bug outweighs several successes). */
export const FAILURE_DECREMENT = 0.2

/** nascent → established: confidence ≥ this and at least ESTABLISHED_MIN_APPLICATIONS applications. */
export const ESTABLISHED_MIN_CONFIDENCE = 0.5
export const ESTABLISHED_MIN_APPLICATIONS = 3
/** established → proven: confidence > this (strictly) and at least PROVEN_MIN_APPLICATIONS applications. */
export const PROVEN_MIN_CONFIDENCE = 0.8
export const PROVEN_MIN_APPLICATIONS = 10
/** proven → established below this confidence. */
export const PROVEN_DEMOTE_BELOW = 0.5
/** established → nascent below this confidence. */
export const ESTABLISHED_DEMOTE_BELOW = 0.3
/** The sweep flags a rule below this confidence as a demotion candidate… */
export const DEMOTION_CANDIDATE_BELOW = 0.2
/** …and below this one, with more failures than successes, as a removal candidate. */
export const REMOVAL_CANDIDATE_BELOW = 0.1

export const DAY_MS = 86_400_000

const clamp01 = (x: number): number => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0)

/** Days since the rule was last applied (else created), never negative. */
export const idleDays = (rule: PlaybookRule, now: number): number =>
  Math.max(0, now - (rule.lastAppliedAt ?? rule.createdAt)) / DAY_MS

/** `confidence × 0.5^(days since last applied (else created) / 90)`, in [0, 1]. */
export const decayed = (rule: PlaybookRule, now: number): number =>
  clamp01(rule.confidence * 0.5 ** (idleDays(rule, now) / HALF_LIFE_DAYS))

export type Outcome = "success" | "failure"

/**
 * The next maturity by one step (or the same): promotion and demotion move one level at a time.
 * The bands never overlap (promotion needs ≥ 0.5 / > 0.8, demotion < 0.3 / < 0.5), so steps settle.
 */
export const maturityStep = (maturity: Maturity, confidence: number, applied: number): Maturity => {
  switch (maturity) {
    case "nascent":
      return confidence >= ESTABLISHED_MIN_CONFIDENCE && applied >= ESTABLISHED_MIN_APPLICATIONS ? "established" : "nascent"
    case "established":
      if (confidence > PROVEN_MIN_CONFIDENCE && applied >= PROVEN_MIN_APPLICATIONS) return "proven"
      return confidence < ESTABLISHED_DEMOTE_BELOW ? "nascent" : "established"
    case "proven":
      return confidence < PROVEN_DEMOTE_BELOW ? "established" : "proven"
  }
}

/** Steps until the maturity no longer moves (at most two steps: three levels). */
export const settledMaturity = (maturity: Maturity, confidence: number, applied: number): Maturity => {
  let current = maturity
  for (let i = 0; i < 3; i++) {
    const next = maturityStep(current, confidence, applied)
    if (next === current) return current
    current = next
  }
  return current
}

/**
 * Feedback on a rule applied at `now`: the decay it had until now is kept (it is applied to the
 * confidence first), then +0.05 or −0.20, clamped to [0, 1]; counts and `last_applied_at` move, and
 * the maturity takes at most one step.
 *
 * The maturity is judged on the confidence as stored (four decimals): 0.7 − 0.2 is
 * 0.49999999999999994 in floating point, which would demote a proven rule that is stored at 0.5.
 * `last_applied_at` never moves back (a clock stepped backwards): that would decay again, at the
 * next read, time that was already decayed here, so a success could lower the confidence.
 */
export const applyFeedback = (rule: PlaybookRule, outcome: Outcome, now: number): PlaybookRule => {
  const base = decayed(rule, now)
  const confidence = round4(clamp01(outcome === "success" ? base + SUCCESS_INCREMENT : base - FAILURE_DECREMENT))
  const successCount = rule.successCount + (outcome === "success" ? 1 : 0)
  const failureCount = rule.failureCount + (outcome === "failure" ? 1 : 0)
  return {
    ...rule,
    confidence,
    successCount,
    failureCount,
    lastAppliedAt: Math.max(now, rule.lastAppliedAt ?? now),
    maturity: maturityStep(rule.maturity, confidence, successCount + failureCount)
  }
}

/** Four decimals are kept in files: a YAML round trip is then exact. */
export const round4 = (x: number): number => Math.round(x * 10_000) / 10_000

export interface SweepReport {
  readonly promoted: number
  readonly demoted: number
  readonly flagged: number
  /** Rules whose decayed confidence is under DEMOTION_CANDIDATE_BELOW. */
  readonly demotionCandidates: ReadonlyArray<string>
  /** Rules under REMOVAL_CANDIDATE_BELOW with more failures than successes. */
  readonly removalCandidates: ReadonlyArray<string>
}

/**
 * The maintenance sweep at `now`: each rule's maturity is settled against its decayed confidence
 * (one level per step, stepping until none applies, so that a second sweep the same day changes
 * nothing), and candidates for demotion and removal are flagged. The stored confidence is left as
 * it is: decay is a function of time, applied whenever a rule is read, so sweeping twice never
 * decays twice. `flagged` counts rules flagged either way.
 */
export const sweep = (rules: ReadonlyArray<PlaybookRule>, now: number): { readonly rules: ReadonlyArray<PlaybookRule>; readonly report: SweepReport } => {
  let promoted = 0
  let demoted = 0
  const demotionCandidates: Array<string> = []
  const removalCandidates: Array<string> = []
  const out = rules.map((rule) => {
    const c = decayed(rule, now)
    const maturity = settledMaturity(rule.maturity, c, applications(rule))
    const level = (m: Maturity) => (m === "nascent" ? 0 : m === "established" ? 1 : 2)
    if (level(maturity) > level(rule.maturity)) promoted++
    if (level(maturity) < level(rule.maturity)) demoted++
    if (c < DEMOTION_CANDIDATE_BELOW) demotionCandidates.push(rule.id)
    if (c < REMOVAL_CANDIDATE_BELOW && rule.failureCount > rule.successCount) removalCandidates.push(rule.id)
    return maturity === rule.maturity ? rule : { ...rule, maturity }
  })
  const flagged = new Set([...demotionCandidates, ...removalCandidates]).size
  return { rules: out, report: { promoted, demoted, flagged, demotionCandidates, removalCandidates } }
}
