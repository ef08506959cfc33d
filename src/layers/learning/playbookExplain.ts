/**
 * Why each playbook rule was or was not chosen for a turn (`anna playbook context --json`): the same
 * walk as `selectRules` in src/domain/learning/context.ts (best score first; stop at 10 rules; skip
 * a score under 0.05 or a line past the 500-token budget), with the reason kept for every rule, and
 * rules of another user (never considered for this one) listed with their score. Pure.
 */
import { round4 } from "../../domain/learning/confidence.ts"
import { MAX_INJECTED_RULES, MAX_INJECTED_TOKENS, MIN_INJECTED_SCORE, type ScoredRule, scoreRules } from "../../domain/learning/context.ts"
import { type SourcedRule, visibleTo } from "../../domain/learning/rule.ts"

export const WHY_CHOSEN = "chosen"
export const WHY_LOW_SCORE = `score below ${MIN_INJECTED_SCORE}`
export const WHY_OVER_BUDGET = `over the ${MAX_INJECTED_TOKENS}-token budget`
export const WHY_TOO_MANY = `${MAX_INJECTED_RULES} rules already`
export const WHY_OTHER_USER = "scoped to another user"

export interface Considered {
  readonly id: string
  readonly source: SourcedRule["source"]
  readonly user: string | null
  readonly score: number
  readonly relevance: number
  /** Decayed confidence now. */
  readonly confidence: number
  readonly tokens: number
  readonly chosen: boolean
  readonly why: string
}

const row = (s: ScoredRule, source: SourcedRule["source"], chosen: boolean, why: string): Considered => ({
  id: s.rule.id,
  source,
  user: s.rule.user ?? null,
  score: round4(s.score),
  relevance: round4(s.relevance),
  confidence: round4(s.confidence),
  tokens: s.tokens,
  chosen,
  why
})

/** Every rule of `rules` with the reason it was chosen or not for `userId` and `tags` at `now`, best first. */
export const explainSelection = (
  rules: ReadonlyArray<SourcedRule>,
  userId: string,
  tags: ReadonlyArray<string>,
  now: number
): ReadonlyArray<Considered> => {
  const sourceOf = new Map(rules.map((s) => [s.rule.id, s.source]))
  const visible = rules.filter((s) => visibleTo(s.rule, userId)).map((s) => s.rule)
  const others = rules.filter((s) => !visibleTo(s.rule, userId)).map((s) => s.rule)
  const out: Array<Considered> = []
  let chosen = 0
  let tokens = 0
  for (const s of scoreRules(visible, tags, now)) {
    const source = sourceOf.get(s.rule.id) ?? "global"
    if (chosen >= MAX_INJECTED_RULES) out.push(row(s, source, false, WHY_TOO_MANY))
    else if (!(s.score >= MIN_INJECTED_SCORE)) out.push(row(s, source, false, WHY_LOW_SCORE))
    else if (tokens + s.tokens > MAX_INJECTED_TOKENS) out.push(row(s, source, false, WHY_OVER_BUDGET))
    else {
      chosen++
      tokens += s.tokens
      out.push(row(s, source, true, WHY_CHOSEN))
    }
  }
  for (const s of scoreRules(others, tags, now)) out.push(row(s, sourceOf.get(s.rule.id) ?? "global", false, WHY_OTHER_USER))
  return out
}
