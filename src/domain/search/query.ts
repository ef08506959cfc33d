/**
 * Turns anything a user types into a safe full-text search plan. Nothing of the input reaches SQL
 * as syntax: every term is re-quoted, so unbalanced quotes, `NOT`, `key:value`, `*`, `-`, `%` or
 * emoji give results or an empty list, never an SQL error.
 *
 * Supported on purpose: "exact phrases", `prefix*`, and `a OR b`; all other terms must all match.
 * Queries with CJK text go to the trigram index (substring match; terms shorter than three
 * characters, such as most two-character Chinese words, are matched by a scan of the candidate rows).
 */
import { hasCjk } from "../message.ts"

export interface LatinPlan {
  readonly _tag: "Latin"
  /** FTS5 MATCH expression for the porter/unicode61 index. */
  readonly match: string
}

export interface CjkPlan {
  readonly _tag: "Cjk"
  /** FTS5 MATCH expression for the trigram index (terms of 3+ characters), if any. */
  readonly match: string | null
  /**
   * Clauses that must all hold, each a list of lower-cased alternatives of which one must occur as
   * a substring (clauses with a term under 3 characters, which the trigram index cannot look up).
   */
  readonly substrings: ReadonlyArray<ReadonlyArray<string>>
}

export type SearchPlan = LatinPlan | CjkPlan | { readonly _tag: "Empty" }

interface Term {
  readonly text: string
  readonly phrase: boolean
  readonly prefix: boolean
  /** Joined to the previous term with OR. */
  readonly or: boolean
}

const WORD = /[\p{L}\p{N}\p{M}]+/gu
const quote = (s: string): string => `"${s.replaceAll('"', '""')}"`

const parseTerms = (input: string): Array<Term> => {
  const terms: Array<Term> = []
  let pendingOr = false
  // FTS5 reads a MATCH expression as a C string: a NUL would end it inside a quoted term
  // ("unterminated string"), so NUL separates terms like whitespace.
  for (const m of input.normalize("NFC").replaceAll("\u0000", " ").matchAll(/"([^"]*)"|(\S+)/g)) {
    const phrase = m[1] !== undefined
    const raw = (m[1] ?? m[2] ?? "").replaceAll('"', "")
    if (!phrase && (raw === "OR" || raw === "|")) {
      pendingOr = terms.length > 0
      continue
    }
    if (!phrase && (raw === "AND" || raw === "NOT" || raw === "NEAR")) continue
    const prefix = !phrase && raw.endsWith("*")
    const text = raw.replace(/^[*\-+]+|[*]+$/g, "").trim()
    if ((text.match(WORD) ?? []).length === 0) continue
    terms.push({ text, phrase, prefix, or: pendingOr })
    pendingOr = false
  }
  return terms
}

/** Groups terms into AND-ed clauses of OR-ed alternatives. */
const clauses = (terms: ReadonlyArray<Term>): Array<Array<Term>> => {
  const out: Array<Array<Term>> = []
  for (const t of terms) {
    const last = out[out.length - 1]
    if (t.or && last !== undefined) last.push(t)
    else out.push([t])
  }
  return out
}

const joinClauses = (parts: ReadonlyArray<ReadonlyArray<string>>): string =>
  parts.map((alts) => (alts.length === 1 ? alts[0] ?? "" : `(${alts.join(" OR ")})`)).join(" AND ")

export const planSearch = (input: string): SearchPlan => {
  const terms = parseTerms(input)
  if (terms.length === 0) return { _tag: "Empty" }
  if (!terms.some((t) => hasCjk(t.text))) {
    const latin = clauses(terms).map((alts) =>
      alts.map((t) => {
        const words = (t.text.match(WORD) ?? []).join(" ")
        return t.prefix ? `${quote(words)}*` : quote(words)
      })
    )
    return { _tag: "Latin", match: joinClauses(latin) }
  }
  // Trigram route: a clause whose alternatives are all 3+ characters is looked up in the index;
  // a clause with a shorter one is checked as substrings on the candidate rows.
  const long: Array<Array<string>> = []
  const substrings: Array<Array<string>> = []
  for (const alts of clauses(terms)) {
    if (alts.every((t) => [...t.text].length >= 3)) long.push(alts.map((t) => quote(t.text)))
    else substrings.push(alts.map((t) => t.text.toLowerCase()))
  }
  return { _tag: "Cjk", match: long.length > 0 ? joinClauses(long) : null, substrings }
}

/** A snippet around the first occurrence of any needle, needles marked with «». */
export const makeSnippet = (text: string, needles: ReadonlyArray<string>, radius = 60): string => {
  const lower = text.toLowerCase()
  let at = -1
  let len = 0
  for (const n of needles) {
    const i = lower.indexOf(n.toLowerCase())
    if (i >= 0 && (at < 0 || i < at)) {
      at = i
      len = n.length
    }
  }
  if (at < 0) return text.slice(0, radius * 2).replace(/\s+/g, " ")
  const start = Math.max(0, at - radius)
  const end = Math.min(text.length, at + len + radius)
  const body = `${text.slice(start, at)}«${text.slice(at, at + len)}»${text.slice(at + len, end)}`
  return `${start > 0 ? "…" : ""}${body}${end < text.length ? "…" : ""}`.replace(/\s+/g, " ")
}
