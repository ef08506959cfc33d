/**
 * The full-text index on PostgreSQL (issue 26): PostgreSQL's `tsvector` and `tsquery` written from
 * anna's own tokens (text.ts), so the index and the query agree by construction, and search finds
 * what it finds on SQLite's FTS5 index (migrations/0010, 0028).
 *
 * A row's vector holds, as lexemes:
 * - its words as `tokenize` cuts them (folded, Porter-stemmed; CJK letters one by one), at their
 *   positions (1, 2, …): the text's as they are (FTS5's `body`), the memory tool's own calls and
 *   results (`memory`) marked with a leading `~`, at positions after the text's with a gap, so no
 *   phrase spans both (a mark rather than a weight: a query with weights makes PostgreSQL read every
 *   matching row's vector again, 3× the cost of a common word's lookup);
 * - the letter pairs of each CJK run (FTS5's `cjk` column), at the position of their first letter:
 *   a pair never crosses two runs, so a CJK word is a phrase of pairs as on SQLite;
 * - the scope tokens `#c<conversation id>` and `#u<hex of the user id>` (no position): `#` is
 *   never in a word, so no text can match them;
 * - CAPPED_TOKEN `#p` (no position) when the row has more positions than the vector keeps (below).
 *
 * PostgreSQL's limits, and what they mean here: a position above 16,383 counts as 16,383 and a
 * lexeme keeps 256 positions, so the vector of a row with a word past position 16,383, or with a
 * word more than 256 times, cannot tell where all its words are. Such a row gets CAPPED_TOKEN, and
 * search (layers/memory/memorySearch.ts, `capSplit`) asks the index for a phrase — a quoted phrase,
 * a CJK word of three letters or more (a phrase of letter pairs), and `NOT` of either — only in the
 * rows without the token; in the rows with it, for the phrase's words anywhere
 * (`looseTsqueryOfMatcher`), then checks the phrase against the row's text with every position
 * (`textIndex`, `matcherMatches`): so a phrase is found wherever SQLite finds it. A word alone needs
 * no position and is found anywhere. A lexeme is cut to MAX_LEXEME characters (the query's terms are
 * cut the same way); a vector holds at most 1 MB, so words first seen after VECTOR_BUDGET bytes of a
 * row (a row of hundreds of thousands of distinct words) are not indexed (nor found by the check).
 * Vectors written before CAPPED_TOKEN got it from migrations/pg/0009.
 */
import type { SearchText } from "./memoryCalls.ts"
import type { Matcher } from "./query.ts"
import { isCjkLetter, tokenize } from "./text.ts"

/** PostgreSQL's highest position. */
export const MAX_POSITION = 16_383
/** Positions PostgreSQL keeps per lexeme. */
const MAX_POSITIONS = 256
/** Characters of a lexeme kept (PostgreSQL refuses lexemes of 2 KiB or more). */
export const MAX_LEXEME = 128
/** Bytes of lexemes and positions in one vector, at most (PostgreSQL's limit is 1 MiB). */
const VECTOR_BUDGET = 900_000

/** A term as the index holds it. */
export const lexemeOf = (term: string): string => {
  if (term.length <= MAX_LEXEME) return term
  const chars = Array.from(term)
  return chars.length <= MAX_LEXEME ? term : chars.slice(0, MAX_LEXEME).join("")
}

/** A lexeme quoted for `tsvector` and `tsquery` input. */
const quoteLexeme = (s: string): string => `'${s.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`

const hexOf = (s: string): string => Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, "0")).join("")

/** A user id longer than this (bytes) has no scope token (the same bound as SQLite's index). */
export const USER_TOKEN_BYTES = 64

/** The scope token of a conversation. */
export const conversationToken = (id: number): string => `#c${id}`
/** The scope token of a user, or null when the id is too long to have one (the scope is then a join). */
export const userToken = (userId: string): string | null =>
  new TextEncoder().encode(userId).length <= USER_TOKEN_BYTES ? `#u${hexOf(userId)}` : null

/** The scope tokens of a row of conversation `conversationId` of `userId`. */
export const scopeTokens = (conversationId: number, userId: string): ReadonlyArray<string> => {
  const user = userToken(userId)
  return user === null ? [conversationToken(conversationId)] : [conversationToken(conversationId), user]
}

/**
 * The token of a row whose text has more positions than its vector keeps (a lexeme past its 256th
 * occurrence, or a word past position 16,383): its vector cannot answer a phrase, so a phrase is
 * looked up in such rows by its words and checked against the row's text (`matcherMatches`). No
 * position; `#` is never in a word, so no text can match it.
 */
export const CAPPED_TOKEN = "#p"

/** What marks the lexemes of the memory tool's own calls and results (never in a word). */
const MEMORY_MARK = "~"

/**
 * Lexemes with all their positions (none dropped, none clamped), in the order first seen: what the
 * vector is written from, and what a row is checked against when its vector cannot answer a
 * phrase (`textIndex`).
 */
class Positions {
  readonly entries = new Map<string, Array<number>>()
  bytes = 0

  add(lexeme: string, position: number) {
    const list = this.entries.get(lexeme)
    if (list === undefined) {
      // The budget counts what the vector holds: a lexeme, and up to MAX_POSITIONS positions of it.
      const size = Buffer.byteLength(lexeme) + 8
      if (this.bytes + size > VECTOR_BUDGET) return
      this.bytes += size
      this.entries.set(lexeme, [position])
    } else {
      if (list.length < MAX_POSITIONS) this.bytes += 2
      list.push(position)
    }
  }

  /** Adds `text`'s words and CJK pairs (after `mark`) from position `from`; the next free position. */
  addText(text: string, from: number, mark: string): number {
    let position = from
    let previous: { readonly letter: string; readonly end: number; readonly position: number } | undefined
    for (const t of tokenize(text)) {
      // A word of marks only folds to nothing: it takes its place, but is not a lexeme.
      if (t.term !== "") this.add(mark + lexemeOf(t.term), position)
      if (t.cjk && isCjkLetter(t.term.codePointAt(0) ?? 0)) {
        // A pair of letters next to each other in the text (nothing between them), at the first one.
        if (previous !== undefined && previous.end === t.start) this.add(mark + previous.letter + t.term, previous.position)
        previous = { letter: t.term, end: t.end, position }
      } else previous = undefined
      position++
    }
    return position
  }
}

/** A row's searchable text as lexemes at their positions: the text's from 1, the memory tool's after a gap. */
const positionsOf = (text: SearchText): Positions => {
  const v = new Positions()
  const next = v.addText(text.body, 1, "")
  // The gap keeps a phrase from spanning the text and the memory tool's blocks.
  if (text.memory !== "") v.addText(text.memory, next + 1, MEMORY_MARK)
  return v
}

/** Whether a lexeme's positions are more than PostgreSQL keeps (positions in the vector are then not all true). */
const capped = (positions: ReadonlyArray<number>): boolean =>
  positions.length > MAX_POSITIONS || positions.some((p) => p > MAX_POSITION)

/** The `tsvector` input of a row: its searchable text split as memoryCalls.ts does, and its scope tokens. */
export const tsvectorOf = (text: SearchText, scope: ReadonlyArray<string>): string => {
  const parts: Array<string> = []
  let cut = false
  for (const [lexeme, positions] of positionsOf(text).entries) {
    cut ||= capped(positions)
    const kept = positions.length > MAX_POSITIONS ? positions.slice(0, MAX_POSITIONS) : positions
    parts.push(`${quoteLexeme(lexeme)}:${kept.map((p) => Math.min(Math.max(p, 1), MAX_POSITION)).join(",")}`)
  }
  if (cut) parts.push(quoteLexeme(CAPPED_TOKEN))
  for (const s of scope) parts.push(quoteLexeme(s))
  return parts.join(" ")
}

/**
 * A row's text as the index would hold it without PostgreSQL's limits: every position of every
 * lexeme. A row whose vector has the CAPPED_TOKEN is checked against it for the phrases of a query.
 */
export interface TextIndex {
  readonly positions: ReadonlyMap<string, ReadonlyArray<number>>
}

export const textIndex = (text: SearchText): TextIndex => ({ positions: positionsOf(text).entries })

/** Whether a matcher (`tsqueryOfMatcher`) matches a row of `index`: what PostgreSQL would answer with every position. */
export const matcherMatches = (index: TextIndex, m: Matcher, memoryCalls: boolean): boolean =>
  phraseIn(index, m, "") || (memoryCalls && phraseIn(index, m, MEMORY_MARK))

/** The positions of `lexeme` in `index`, or of every lexeme it begins when `prefix`. */
const positionsIn = (index: TextIndex, lexeme: string, prefix: boolean): ReadonlySet<number> => {
  if (!prefix) return new Set(index.positions.get(lexeme) ?? [])
  const out = new Set<number>()
  for (const [l, ps] of index.positions) if (l.startsWith(lexeme)) for (const p of ps) out.add(p)
  return out
}

const phraseIn = (index: TextIndex, m: Matcher, mark: string): boolean => {
  const terms = indexTerms(m)
  if (terms === null) return false
  const last = terms.length - 1
  const sets = terms.map((t, i) => positionsIn(index, mark + lexemeOf(t), m.prefix && i === last))
  const [first, ...rest] = sets
  if (first === undefined) return false
  for (const p of first) if (rest.every((s, i) => s.has(p + i + 1))) return true
  return false
}

/** A matcher's index terms (a CJK run's letter pairs), or null when one is empty (it matches nothing). */
const indexTerms = (m: Matcher): ReadonlyArray<string> | null => {
  const letters = m.terms
  const run = m.cjkRun === true && letters.length > 1
  const terms = run ? letters.slice(1).map((l, i) => `${letters[i] ?? ""}${l}`) : letters
  return terms.some((t) => t === "") ? null : terms
}

/** Whether a matcher is a phrase (two index terms or more): a vector with the CAPPED_TOKEN cannot answer it. */
export const isPhrase = (m: Matcher): boolean => (indexTerms(m)?.length ?? 0) > 1

/** A `tsquery` no row matches: `#` alone is neither a word nor a scope token. */
const NOTHING = "'#'"

/** One way a group matches, as a `tsquery`: consecutive terms, a CJK word as a phrase of pairs. */
export const tsqueryOfMatcher = (m: Matcher, memoryCalls: boolean): string =>
  memoryCalls ? `(${phrase(m, "")} | ${phrase(m, MEMORY_MARK)})` : phrase(m, "")

/** A matcher as a `tsquery` of lexemes after `mark`: a phrase (`<->`), or its terms anywhere (`&`) when `loose`. */
const phrase = (m: Matcher, mark: string, loose = false): string => {
  const terms = indexTerms(m)
  // An empty term (a word of marks only) is no lexeme: the matcher finds nothing, as on SQLite.
  if (terms === null) return NOTHING
  const last = terms.length - 1
  const parts = terms.map((t, i) => `${quoteLexeme(mark + lexemeOf(t))}${m.prefix && i === last ? ":*" : ""}`)
  return parts.length === 1 ? (parts[0] ?? "") : `(${parts.join(loose ? " & " : " <-> ")})`
}

/**
 * A matcher as a `tsquery` that matches every row it matches, whatever the vector's positions:
 * a phrase's terms anywhere in the row. The row is then checked in TypeScript (`matcherMatches`).
 */
export const looseTsqueryOfMatcher = (m: Matcher, memoryCalls: boolean): string =>
  memoryCalls ? `(${phrase(m, "", true)} | ${phrase(m, MEMORY_MARK, true)})` : phrase(m, "", true)

/** A group's alternatives (`a OR b`) as one `tsquery`. */
export const tsqueryOfMatchers = (matchers: ReadonlyArray<Matcher>, memoryCalls: boolean): string => {
  const parts = matchers.map((m) => tsqueryOfMatcher(m, memoryCalls))
  return parts.length === 1 ? (parts[0] ?? "") : `(${parts.join(" | ")})`
}

/** A scope token as a `tsquery` term. */
export const tsqueryOfToken = (token: string): string => quoteLexeme(token)
