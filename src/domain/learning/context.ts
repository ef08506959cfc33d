/**
 * Context injection (issue 15): which playbook rules go into the system prompt before a turn, and
 * how they are written there. Rules are chosen by their tags against the conversation's current tags
 * (case-insensitive): `relevance = matching / total tags` (the rule's), `score = decayed confidence ×
 * relevance`, anti-patterns × 1.5; at most 10 rules and 500 tokens, nothing scoring under 0.05.
 * Pure.
 */
import { estimateTextTokens } from "../message.ts"
import { decayed } from "./confidence.ts"
import { normalTag, type PlaybookRule, visibleTo } from "./rule.ts"

export const MAX_INJECTED_RULES = 10
export const MAX_INJECTED_TOKENS = 500
export const MIN_INJECTED_SCORE = 0.05
export const ANTI_PATTERN_BOOST = 1.5

export interface ScoredRule {
  readonly rule: PlaybookRule
  /** Decayed confidence now. */
  readonly confidence: number
  readonly relevance: number
  readonly score: number
  /** Its line in the prompt. */
  readonly line: string
  readonly tokens: number
}

export interface SelectedContext {
  /** Positive rules, best first. */
  readonly rules: ReadonlyArray<ScoredRule>
  /** Rules to avoid, best first. */
  readonly antiPatterns: ReadonlyArray<ScoredRule>
  readonly totalScore: number
  /** Tokens of the chosen rules' lines (≤ MAX_INJECTED_TOKENS). */
  readonly tokenCount: number
}

/** Matching tags / the rule's tags (0 for a rule without tags: nothing says when it applies). */
export const relevance = (ruleTags: ReadonlyArray<string>, current: ReadonlySet<string>): number => {
  const own = [...new Set(ruleTags.map(normalTag).filter((t) => t !== ""))]
  if (own.length === 0) return 0
  return own.filter((t) => current.has(t)).length / own.length
}

const avoidText = (text: string): string => (/^AVOID:/i.test(text) ? text : `AVOID: ${text}`)

/** A rule's line without its number: `[MATURITY] text (confidence: x.xx)`, or `AVOID: … (confidence: x.xx)`. */
export const ruleLine = (rule: PlaybookRule, confidence: number): string =>
  rule.antiPattern
    ? `${avoidText(rule.text)} (confidence: ${confidence.toFixed(2)})`
    : `[${rule.maturity.toUpperCase()}] ${rule.text} (confidence: ${confidence.toFixed(2)})`

/** Every rule scored against `tags` at `now`, best first (ties by id), with its line; unfiltered. */
export const scoreRules = (rules: ReadonlyArray<PlaybookRule>, tags: ReadonlyArray<string>, now: number): ReadonlyArray<ScoredRule> => {
  const current = new Set(tags.map(normalTag).filter((t) => t !== ""))
  return rules
    .map((rule) => {
      const confidence = decayed(rule, now)
      const rel = relevance(rule.tags, current)
      const score = confidence * rel * (rule.antiPattern ? ANTI_PATTERN_BOOST : 1)
      const line = ruleLine(rule, confidence)
      return { rule, confidence, relevance: rel, score, line, tokens: estimateTextTokens(line) }
    })
    .sort((a, b) => b.score - a.score || a.rule.id.localeCompare(b.rule.id))
}

/**
 * The rules to inject: best score first, skipping any under MIN_INJECTED_SCORE and any whose line
 * would pass the token budget, until MAX_INJECTED_RULES are chosen.
 */
export const selectRules = (rules: ReadonlyArray<PlaybookRule>, tags: ReadonlyArray<string>, now: number): SelectedContext => {
  const chosen: Array<ScoredRule> = []
  let tokens = 0
  for (const s of scoreRules(rules, tags, now)) {
    if (chosen.length >= MAX_INJECTED_RULES) break
    if (!(s.score >= MIN_INJECTED_SCORE)) continue
    if (tokens + s.tokens > MAX_INJECTED_TOKENS) continue
    chosen.push(s)
    tokens += s.tokens
  }
  return {
    rules: chosen.filter((s) => !s.rule.antiPattern),
    antiPatterns: chosen.filter((s) => s.rule.antiPattern),
    totalScore: chosen.reduce((n, s) => n + s.score, 0),
    tokenCount: tokens
  }
}

/** The prompt section, in the design's format; "" when nothing was chosen. */
export const formatForPrompt = (context: SelectedContext): string => {
  const parts: Array<string> = []
  if (context.rules.length > 0) {
    parts.push(
      "## Relevant Guidelines\n\nThe following rules are based on past experience with similar tasks:\n\n" +
        context.rules.map((s, i) => `${i + 1}. ${s.line}`).join("\n")
    )
  }
  if (context.antiPatterns.length > 0) {
    parts.push(
      "## Patterns to Avoid\n\nThese patterns have caused problems in similar past work:\n\n" +
        context.antiPatterns.map((s, i) => `${i + 1}. ${s.line}`).join("\n")
    )
  }
  return parts.join("\n\n")
}

/** What goes into `userId`'s prompt for `tags` at `now`: the rules they may see, selected, and the section. */
export const injection = (
  rules: ReadonlyArray<PlaybookRule>,
  userId: string,
  tags: ReadonlyArray<string>,
  now: number
): SelectedContext & { readonly text: string } => {
  const selected = selectRules(rules.filter((r) => visibleTo(r, userId)), tags, now)
  return { ...selected, text: formatForPrompt(selected) }
}
