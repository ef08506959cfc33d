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
 *   never in a word, so no text can match them.
 *
 * PostgreSQL's limits, and what they mean here: a position above 16,383 counts as 16,383 and a
 * lexeme keeps 256 positions, so a phrase is found within the first 16,383 words of a row (its
 * words anywhere); a lexeme is cut to MAX_LEXEME characters (the query's terms are cut the same
 * way); a vector holds at most 1 MB, so words first seen after VECTOR_BUDGET bytes of a row (a row
 * of hundreds of thousands of distinct words) are not indexed.
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

/** What marks the lexemes of the memory tool's own calls and results (never in a word). */
const MEMORY_MARK = "~"

/** Lexemes with their positions, in the order first seen. */
class Vector {
  readonly entries = new Map<string, Array<number>>()
  bytes = 0

  add(lexeme: string, position: number) {
    const at = Math.min(Math.max(position, 1), MAX_POSITION)
    const list = this.entries.get(lexeme)
    if (list === undefined) {
      const size = Buffer.byteLength(lexeme) + 8
      if (this.bytes + size > VECTOR_BUDGET) return
      this.bytes += size
      this.entries.set(lexeme, [at])
    } else if (list.length < MAX_POSITIONS) {
      this.bytes += 2
      list.push(at)
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

  text(scope: ReadonlyArray<string>): string {
    const parts: Array<string> = []
    for (const [lexeme, positions] of this.entries) parts.push(`${quoteLexeme(lexeme)}:${positions.join(",")}`)
    for (const s of scope) parts.push(quoteLexeme(s))
    return parts.join(" ")
  }
}

/** The `tsvector` input of a row: its searchable text split as memoryCalls.ts does, and its scope tokens. */
export const tsvectorOf = (text: SearchText, scope: ReadonlyArray<string>): string => {
  const v = new Vector()
  const next = v.addText(text.body, 1, "")
  // The gap keeps a phrase from spanning the text and the memory tool's blocks.
  if (text.memory !== "") v.addText(text.memory, next + 1, MEMORY_MARK)
  return v.text(scope)
}


/** A `tsquery` no row matches: `#` alone is neither a word nor a scope token. */
const NOTHING = "'#'"

/** One way a group matches, as a `tsquery`: consecutive terms, a CJK word as a phrase of pairs. */
export const tsqueryOfMatcher = (m: Matcher, memoryCalls: boolean): string =>
  memoryCalls ? `(${phrase(m, "")} | ${phrase(m, MEMORY_MARK)})` : phrase(m, "")

/** A matcher as a `tsquery` of lexemes after `mark`. */
const phrase = (m: Matcher, mark: string): string => {
  const letters = m.terms
  const run = m.cjkRun === true && letters.length > 1
  const terms = run ? letters.slice(1).map((l, i) => `${letters[i] ?? ""}${l}`) : letters
  const last = terms.length - 1
  // An empty term (a word of marks only) is no lexeme: the matcher finds nothing, as on SQLite.
  if (terms.some((t) => t === "")) return NOTHING
  const parts = terms.map((t, i) => `${quoteLexeme(mark + lexemeOf(t))}${m.prefix && i === last ? ":*" : ""}`)
  return parts.length === 1 ? (parts[0] ?? "") : `(${parts.join(" <-> ")})`
}

/** A group's alternatives (`a OR b`) as one `tsquery`. */
export const tsqueryOfMatchers = (matchers: ReadonlyArray<Matcher>, memoryCalls: boolean): string => {
  const parts = matchers.map((m) => tsqueryOfMatcher(m, memoryCalls))
  return parts.length === 1 ? (parts[0] ?? "") : `(${parts.join(" | ")})`
}

/** A scope token as a `tsquery` term. */
export const tsqueryOfToken = (token: string): string => quoteLexeme(token)
