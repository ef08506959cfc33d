/**
 * Ranking of a bounded set of candidates (the index has already said which query terms each one
 * matches). Per candidate, the text is tokenized as FTS5 sees it (text.ts) to count each term and
 * find where it occurs; then
 *
 *   score = bm25 × (COVERAGE_FLOOR + (1 − COVERAGE_FLOOR) × coverage) + PROXIMITY × proximity
 *
 * - bm25: Σ over matched terms of weight × idf × tf·(k1 + 1) / (tf + k1·(1 − b + b·len/avgLen));
 * - coverage: the idf-weighted share of the query's terms the candidate matches (bonus terms, such
 *   as a CJK run as a whole, add to bm25 but are not counted as missing), so a document with more
 *   of the question's words ranks above one that repeats a single word;
 * - proximity: for each pair of words next to each other in the query, found within a few words
 *   of each other in the text, the smaller idf of the two, less as they are further apart.
 *
 * Ties (equal scores) go to the newer row. The same analysis marks the matches for snippets.
 *
 * Context (issue 25): a candidate may carry the term counts of its neighbouring turns, each with a
 * weight below 1. It is then ranked as one document made of its own text and theirs, theirs counted
 * at their weight: tf = own tf + Σ weight × neighbour's tf (length likewise), and a term found only in
 * a neighbour covers the query at that neighbour's weight. Proximity and the snippet's marks stay on
 * the candidate's own text. So "Monday was my first day", right after "how's the new job?", answers
 * "When did I start the new job?".
 */
import type { Matcher, QueryPlan } from "./query.ts"
import { MARK_CLOSE, MARK_OPEN } from "./snippet.ts"
import { tokenize } from "./text.ts"

const K1 = 1.2
const B = 0.75
export const COVERAGE_FLOOR = 0.3
export const PROXIMITY = 1
/** Farthest apart (in words) that two adjacent query words still earn a proximity bonus. */
const NEAR = 8

/** Inverse document frequency of a term found in `df` of `n` documents (BM25's, never negative). */
export const idf = (df: number, n: number): number => {
  const docs = Math.max(n, df, 1)
  return Math.log(1 + (docs - df + 0.5) / (df + 0.5))
}

export interface Occurrences {
  /** Per group: token positions where it starts. */
  readonly positions: ReadonlyArray<ReadonlyArray<number>>
  /** Character spans of every match, sorted and merged where they touch. */
  readonly spans: ReadonlyArray<readonly [number, number]>
  /** Tokens of the text (words; CJK letters one by one). */
  readonly tokens: number
}

/** The first letters of every term of a plan's matchers (`tokenize` stems only words starting with one). */
const firstsOf = new WeakMap<QueryPlan, ReadonlySet<number>>()
const firstLetters = (plan: QueryPlan): ReadonlySet<number> => {
  const known = firstsOf.get(plan)
  if (known !== undefined) return known
  const firsts = new Set<number>()
  for (const g of plan.groups) for (const m of g.matchers) for (const t of m.terms) if (t.length > 0) firsts.add(t.charCodeAt(0))
  firstsOf.set(plan, firsts)
  return firsts
}

/** Where each group of the plan occurs in `text`. */
export const findOccurrences = (plan: QueryPlan, text: string): Occurrences => {
  const tokens = tokenize(text, firstLetters(plan))
  const positions: Array<Array<number>> = plan.groups.map(() => [])
  const raw: Array<[number, number]> = []
  // Matchers by their first term (a prefix matcher of one term is tried on every token).
  const byFirst = new Map<string, Array<readonly [number, Matcher]>>()
  const anywhere: Array<readonly [number, Matcher]> = []
  plan.groups.forEach((group, g) => {
    for (const m of group.matchers) {
      const first = m.terms[0]
      if (first === undefined) continue
      if (m.prefix && m.terms.length === 1) anywhere.push([g, m])
      else byFirst.set(first, [...(byFirst.get(first) ?? []), [g, m]])
    }
  })
  const matchesAt = (m: Matcher, p: number): boolean => {
    const n = m.terms.length
    if (p + n > tokens.length) return false
    for (let j = 0; j < n; j++) {
      const want = m.terms[j] ?? ""
      const got = tokens[p + j]?.term ?? ""
      if (!(m.prefix && j === n - 1 ? got.startsWith(want) : got === want)) return false
    }
    return true
  }
  for (let p = 0; p < tokens.length; p++) {
    const here = tokens[p]
    if (here === undefined) continue
    const tried = byFirst.get(here.term)
    if (tried === undefined && anywhere.length === 0) continue
    // Groups found at this position (few: an array, not a Set per token).
    const found: Array<number> = []
    for (const [g, m] of tried === undefined ? anywhere : anywhere.length === 0 ? tried : [...tried, ...anywhere]) {
      if (found.includes(g) || !matchesAt(m, p)) continue
      found.push(g)
      positions[g]?.push(p)
      raw.push([here.start, tokens[p + m.terms.length - 1]?.end ?? here.end])
    }
  }
  raw.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  const spans: Array<[number, number]> = []
  for (const s of raw) {
    const prev = spans[spans.length - 1]
    if (prev !== undefined && s[0] <= prev[1]) prev[1] = Math.max(prev[1], s[1])
    else spans.push([s[0], s[1]])
  }
  return { positions, spans, tokens: tokens.length }
}

/** `text` with the spans marked for `snippetAround`. */
export const markSpans = (text: string, spans: ReadonlyArray<readonly [number, number]>): string => {
  let out = ""
  let at = 0
  for (const [start, end] of spans) {
    out += text.slice(at, start) + MARK_OPEN + text.slice(start, end) + MARK_CLOSE
    at = end
  }
  return out + text.slice(at)
}

/** Smallest distance between two ascending lists of positions. */
const closest = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  let best = Infinity
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    const x = a[i] ?? 0
    const y = b[j] ?? 0
    best = Math.min(best, Math.abs(x - y))
    if (x < y) i++
    else j++
  }
  return best
}

/** A neighbouring turn of a candidate, as ranking sees it. */
export interface ContextPart {
  /** Per group: how often it occurs in the neighbour's text. */
  readonly tf: ReadonlyArray<number>
  readonly length: number
  /** Below 1: how much the neighbour counts, against the candidate's own text. */
  readonly weight: number
}

export interface Candidate {
  readonly id: number
  readonly text: string
  /** Length for BM25's normalisation (any unit, the same for every candidate of a source). */
  readonly length: number
  /** Groups of the plan the index says this row matches. */
  readonly matched: ReadonlyArray<number>
  readonly createdAt: number
  /** `findOccurrences(plan, text)`, when already known. */
  readonly occurrences?: Occurrences | undefined
  /** Its neighbouring turns, matched together with it at lower weights (none: its own text only). */
  readonly context?: ReadonlyArray<ContextPart> | undefined
}

/** Per group, how often it occurs (the `tf` of a `ContextPart`). */
export const termCounts = (occurrences: Occurrences): Array<number> => occurrences.positions.map((p) => p.length)

/** The groups that occur in a text, by its occurrences. */
export const groupsFound = (occurrences: Occurrences): Array<number> =>
  occurrences.positions.flatMap((p, g) => (p.length > 0 ? [g] : []))

export interface Ranked<C extends Candidate> {
  readonly candidate: C
  readonly score: number
  /** Labels of the (non-bonus) groups matched. */
  readonly matched: ReadonlyArray<string>
  readonly spans: ReadonlyArray<readonly [number, number]>
}

/** Scores candidates of one source; `idfs[g]` is group g's idf in the searched scope. */
export const rankCandidates = <C extends Candidate>(
  plan: QueryPlan,
  idfs: ReadonlyArray<number>,
  candidates: ReadonlyArray<C>
): Array<Ranked<C>> => {
  const lengthOf = (c: C) => Math.max(1, c.length) + (c.context ?? []).reduce((n, p) => n + p.weight * Math.max(1, p.length), 0)
  const avgLength = candidates.length === 0 ? 1 : Math.max(1, candidates.reduce((n, c) => n + lengthOf(c), 0) / candidates.length)
  const total = plan.groups.reduce((n, g, i) => n + (g.bonus ? 0 : g.weight * (idfs[i] ?? 0)), 0)
  return candidates.map((c) => {
    const occ = c.occurrences ?? findOccurrences(plan, c.text)
    const norm = K1 * (1 - B + (B * lengthOf(c)) / avgLength)
    const context = c.context ?? []
    let bm25 = 0
    let covered = 0
    const labels: Array<string> = []
    for (let g = 0; g < plan.groups.length; g++) {
      const group = plan.groups[g]
      if (group === undefined) continue
      const own = c.matched.includes(g)
      let around = 0
      let presence = 0
      for (const p of context) {
        const n = p.tf[g] ?? 0
        if (n === 0) continue
        around += p.weight * n
        presence = Math.max(presence, p.weight)
      }
      if (!own && around === 0) continue
      const tf = (own ? Math.max(1, occ.positions[g]?.length ?? 0) : 0) + around
      const w = group.weight * (idfs[g] ?? 0)
      bm25 += (w * tf * (K1 + 1)) / (tf + norm)
      if (!group.bonus) {
        covered += w * (own ? 1 : presence)
        if (own) labels.push(group.label)
      }
    }
    const coverage = total > 0 ? covered / total : 1
    let proximity = 0
    for (const [a, b] of plan.adjacent) {
      const pa = occ.positions[a] ?? []
      const pb = occ.positions[b] ?? []
      if (pa.length === 0 || pb.length === 0) continue
      const best = closest(pa, pb)
      if (best <= NEAR) proximity += Math.min(idfs[a] ?? 0, idfs[b] ?? 0) / Math.max(1, best)
    }
    const score = bm25 * (COVERAGE_FLOOR + (1 - COVERAGE_FLOOR) * coverage) + PROXIMITY * proximity
    return { candidate: c, score, matched: labels, spans: occ.spans }
  })
}

/** Best first; equal scores: newer first, then the higher id. */
export const byScore = <C extends Candidate>(a: Ranked<C>, b: Ranked<C>): number =>
  b.score - a.score || b.candidate.createdAt - a.candidate.createdAt || b.candidate.id - a.candidate.id
