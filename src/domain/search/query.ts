/**
 * Turns anything a user or a model types into a search plan. Nothing of the input reaches SQL as
 * syntax: every term is re-quoted into an FTS5 phrase on a named column, so unbalanced quotes,
 * `NEAR`, `*`, `-`, `%`, `:` or emoji give results or an empty list, never an SQL error.
 *
 * Syntax (README "Search syntax"): words, `"exact phrases"`, `prefix*`, `a OR b` (also `|`),
 * `a AND b`, `NOT a`, and the filters `role:user|assistant|tool_result`, `tool:NAME` and
 * `kind:message|summary` (`NOT` works on filters too). Parentheses are ignored.
 *
 * Ranked mode (the default) analyses the query: stop words are dropped, each remaining word is an
 * optional term (documents matching more of them rank higher), a quoted phrase is one term worth
 * double, Chinese and Japanese runs are cut into words (ICU's
 * dictionary, `Intl.Segmenter`), and terms joined by `AND` are required. Strict mode requires every
 * term, keeps stop words, and takes a CJK run as one exact string.
 *
 * Each term becomes a group with its FTS5 expression (see text.ts for the columns) and matchers
 * that tell TypeScript which words of a text it stands for (ranking, snippets).
 *
 * The memory tool's own calls and results are left out unless asked for (`includeMemoryCalls`, or a
 * `tool:memory` filter, which asks for nothing else): their text is in columns of its own
 * (memoryCalls.ts), which the expressions name only then.
 */
import { MEMORY_TOOL } from "./memoryCalls.ts"
import { isStopWord } from "./stopwords.ts"
import { bigramsOf, fold, isCjkLetter, tokenize } from "./text.ts"
import { porterStem } from "./porter.ts"

export type SearchMode = "ranked" | "strict"

/** One way a group matches, as consecutive index terms (CJK letters one by one). */
export interface Matcher {
  readonly terms: ReadonlyArray<string>
  /** The last term matches any index term it begins. */
  readonly prefix: boolean
  /** The terms are the letters of one CJK run, looked up as its letter pairs (tsvector.ts). */
  readonly cjkRun?: boolean
}

export interface SearchGroup {
  /** The query words the group stands for, as typed. */
  readonly label: string
  /** FTS5 expression on the `body` / `cjk` columns. */
  readonly match: string
  /** One per alternative (`a OR b`). */
  readonly matchers: ReadonlyArray<Matcher>
  readonly weight: number
  /** Every hit must match it (strict mode; `AND` in ranked mode). */
  readonly required: boolean
  /** Counts when matched, but a document without it is not less covered (a CJK run as a whole). */
  readonly bonus: boolean
}

export type SearchKind = "message" | "summary"

export interface SearchFilters {
  /** Message roles allowed (any of them); null when not filtered. */
  readonly roles: ReadonlyArray<string> | null
  readonly notRoles: ReadonlyArray<string>
  /** Tool names: the message calls one of them or carries the results of such a call. */
  readonly tools: ReadonlyArray<string>
  readonly notTools: ReadonlyArray<string>
  /** What is searched: role and tool filters leave summaries out. */
  readonly kinds: ReadonlyArray<SearchKind>
  /** The memory tool's own calls and results are searched too (memoryCalls.ts). */
  readonly memoryCalls: boolean
}

export interface PlanOptions {
  /** Search the memory tool's own calls and results too (a `tool:memory` filter implies it). */
  readonly includeMemoryCalls?: boolean | undefined
}

export interface QueryPlan {
  readonly _tag: "Query"
  readonly mode: SearchMode
  /** Positive terms; none when only filters were given (then the newest rows that pass them). */
  readonly groups: ReadonlyArray<SearchGroup>
  /** FTS5 expressions of `NOT` terms. */
  readonly exclude: ReadonlyArray<string>
  /** The same `NOT` terms as matchers (PostgreSQL's index, tsvector.ts). */
  readonly excludeMatchers: ReadonlyArray<Matcher>
  readonly filters: SearchFilters
  /** Pairs of groups next to each other in the query: found close together, they rank higher. */
  readonly adjacent: ReadonlyArray<readonly [number, number]>
}

export type SearchPlan = QueryPlan | { readonly _tag: "Empty" }

/** A query names at most this many terms (each costs an index lookup); the rest is ignored. */
export const MAX_GROUPS = 24
/** Weight of a quoted phrase in ranked mode (a word weighs 1). */
export const PHRASE_WEIGHT = 2

// ---------------------------------------------------------------------------------------------
// Lexing

type Lexeme =
  | { readonly type: "word"; readonly text: string }
  | { readonly type: "phrase"; readonly text: string }
  | { readonly type: "filter"; readonly key: string; readonly value: string }

const SPACE = /\s/u
const FILTER = /^(role|tool|kind):(.+)$/iu
const FILTER_KEY = /^(role|tool|kind):$/iu

const lex = (input: string): Array<Lexeme> => {
  // FTS5 reads a MATCH expression as a C string (a NUL would end it); parentheses group nothing here.
  const s = input.normalize("NFC").replaceAll("\u0000", " ").replace(/[()]/gu, " ")
  const out: Array<Lexeme> = []
  let i = 0
  while (i < s.length) {
    const c = s[i] ?? ""
    if (SPACE.test(c)) {
      i++
      continue
    }
    if (c === "\"") {
      const close = s.indexOf("\"", i + 1)
      // An unbalanced quote is dropped; what follows it is read as words.
      if (close >= 0) out.push({ type: "phrase", text: s.slice(i + 1, close) })
      i = close >= 0 ? close + 1 : i + 1
      continue
    }
    let j = i
    while (j < s.length && !SPACE.test(s[j] ?? " ") && s[j] !== "\"") j++
    const word = s.slice(i, j)
    const key = FILTER_KEY.exec(word)
    const close = s[j] === "\"" ? s.indexOf("\"", j + 1) : -1
    if (key !== null && close > j) {
      out.push({ type: "filter", key: (key[1] ?? "").toLowerCase(), value: s.slice(j + 1, close) })
      i = close + 1
      continue
    }
    const filter = FILTER.exec(word)
    if (filter !== null) out.push({ type: "filter", key: (filter[1] ?? "").toLowerCase(), value: filter[2] ?? "" })
    else out.push({ type: "word", text: word })
    i = j
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Terms

const quote = (s: string): string => `"${s.replaceAll("\"", "\"\"")}"`

/** The index columns a term is looked up in: a row's text, and with it the memory tool's own blocks. */
interface Columns {
  readonly body: string
  readonly cjk: string
}
const TEXT: Columns = { body: "body", cjk: "cjk" }
const WITH_MEMORY_CALLS: Columns = { body: "{body memory}", cjk: "{cjk memory_cjk}" }

/** The longest start of `word` that porter leaves as it is, so `deploy*` also finds "deployment". */
const stablePrefix = (word: string): string => {
  for (let n = word.length; n > 0; n--) {
    const p = word.slice(0, n)
    if (porterStem(p) === p) return p
  }
  return word
}

interface Alternative {
  readonly label: string
  readonly match: string
  readonly matcher: Matcher
}

/** A piece of text as one exact term: a word, a phrase, or a CJK string (the strict reading). */
const exact = (columns: Columns, label: string, text: string, prefix: boolean): Alternative | undefined => {
  const tokens = tokenize(text)
  const last = tokens[tokens.length - 1]
  if (last === undefined) return undefined
  const contiguous = tokens.every((t, i) => i === 0 || t.start === tokens[i - 1]?.end)
  if (tokens.every((t) => t.cjk) && contiguous) {
    const letters = tokens.map((t) => t.term)
    const match = letters.length === 1
      ? `${columns.body} : ${quote(letters[0] ?? "")}`
      : `${columns.cjk} : ${quote(bigramsOf(letters.join("")).join(" "))}`
    return { label, match, matcher: { terms: letters, prefix: false, cjkRun: true } }
  }
  const words = tokens.map((t) => (t.cjk ? t.term : fold(text.slice(t.start, t.end))))
  const isPrefix = prefix && !last.cjk
  if (isPrefix) words[words.length - 1] = stablePrefix(words[words.length - 1] ?? "")
  const terms = words.map((w, i) => (tokens[i]?.cjk === true || (isPrefix && i === words.length - 1) ? w : porterStem(w)))
  return {
    label,
    match: `${columns.body} : ${quote(words.join(" "))}${isPrefix ? " *" : ""}`,
    matcher: { terms, prefix: isPrefix }
  }
}

let segmenter: Intl.Segmenter | null | undefined
const cjkSegmenter = (): Intl.Segmenter | null => {
  if (segmenter === undefined) {
    segmenter = typeof Intl.Segmenter === "function" ? new Intl.Segmenter("zh", { granularity: "word" }) : null
  }
  return segmenter
}

/** Words of a CJK run (ICU's dictionary), single letters in a row joined back (names), stop words out. */
const cjkWords = (run: string): Array<{ readonly word: string; readonly stop: boolean }> => {
  const seg = cjkSegmenter()
  const pieces = seg === null
    ? [run]
    : Array.from(seg.segment(run)).filter((s) => s.isWordLike === true).map((s) => s.segment)
  const out: Array<{ word: string; stop: boolean }> = []
  let single = ""
  const flush = () => {
    if (single !== "") out.push({ word: single, stop: isStopWord(single) })
    single = ""
  }
  for (const p of pieces) {
    if (Array.from(p).length === 1 && !isStopWord(p)) single += p
    else {
      flush()
      out.push({ word: p, stop: isStopWord(p) })
    }
  }
  flush()
  return out
}

interface Draft {
  readonly alternatives: Array<Alternative>
  weight: number
  required: boolean
  readonly bonus: boolean
  readonly stop: boolean
  /** Position among the query's words, for adjacency (null: not a word). */
  readonly order: number | null
}

/** Splits a bare word into Latin pieces and CJK runs (text between their tokens included). */
const pieces = (text: string): Array<{ readonly text: string; readonly cjk: boolean }> => {
  const out: Array<{ text: string; cjk: boolean }> = []
  let from = -1
  let to = -1
  let cjk = false
  for (const t of tokenize(text)) {
    if (from >= 0 && t.cjk !== cjk) {
      out.push({ text: text.slice(from, to), cjk })
      from = -1
    }
    if (from < 0) {
      from = t.start
      cjk = t.cjk
    }
    to = t.end
  }
  if (from >= 0) out.push({ text: text.slice(from, to), cjk })
  return out
}

const isCjkOnly = (s: string): boolean => Array.from(s).every((ch) => isCjkLetter(ch.codePointAt(0) ?? 0))

// ---------------------------------------------------------------------------------------------
// Planning

type Pending = "none" | "or" | "and"

const ROLE_ALIASES: Readonly<Record<string, string>> = { tool: "tool_result", tools: "tool_result", tool_results: "tool_result" }
const KIND_ALIASES: Readonly<Record<string, string>> = {
  message: "message",
  messages: "message",
  msg: "message",
  summary: "summary",
  summaries: "summary",
  sum: "summary"
}

export const planSearch = (input: string, mode: SearchMode = "ranked", options: PlanOptions = {}): SearchPlan => {
  const memoryCalls = options.includeMemoryCalls === true
  const columns = memoryCalls ? WITH_MEMORY_CALLS : TEXT
  const drafts: Array<Draft> = []
  const exclude: Array<string> = []
  const excludeMatchers: Array<Matcher> = []
  const roles: Array<string> = []
  const notRoles: Array<string> = []
  const tools: Array<string> = []
  const notTools: Array<string> = []
  const kinds: Array<string> = []
  const notKinds: Array<string> = []
  let words = 0

  let pending: Pending = "none"
  let negate = false
  /** The draft the last positive atom went into (OR and AND attach to it). */
  let last: Draft | undefined

  const lexemes = lex(input)
  for (let k = 0; k < lexemes.length; k++) {
    const lx = lexemes[k]
    if (lx === undefined) continue
    if (lx.type === "word") {
      if (lx.text === "OR" || lx.text === "|" || lx.text === "||") {
        if (last !== undefined) pending = "or"
        continue
      }
      if (lx.text === "AND" || lx.text === "&&" || lx.text === "&") {
        if (last !== undefined) pending = "and"
        continue
      }
      if (lx.text === "NOT") {
        negate = true
        continue
      }
      if (lx.text === "NEAR") continue
    }
    if (lx.type === "filter") {
      const value = lx.value.trim()
      if (value === "") {
        negate = false
        continue
      }
      if (lx.key === "role") {
        const role = ROLE_ALIASES[value.toLowerCase()] ?? value.toLowerCase()
        ;(negate ? notRoles : roles).push(role)
      } else if (lx.key === "tool") (negate ? notTools : tools).push(value)
      else (negate ? notKinds : kinds).push(KIND_ALIASES[value.toLowerCase()] ?? `?${value}`)
      negate = false
      continue
    }
    // A term: a phrase, or a bare word (`*` marks a prefix; leading -, + and * mean nothing).
    const phrase = lx.type === "phrase"
    const raw = phrase ? lx.text : lx.text.replace(/^[*\-+]+/u, "")
    const prefix = !phrase && raw.endsWith("*")
    const text = phrase ? raw : raw.replace(/\*+$/u, "")
    const strictForm = exact(columns, phrase ? text.trim() : lx.text, text, prefix)
    if (strictForm === undefined) continue
    if (negate) {
      exclude.push(strictForm.match)
      excludeMatchers.push(strictForm.matcher)
      negate = false
      pending = "none"
      continue
    }
    const joined = pending
    pending = "none"
    const next = lexemes[k + 1]
    const operatorFollows = next?.type === "word" && ["OR", "|", "||", "AND", "&&", "&"].includes(next.text)
    if (joined === "or" && last !== undefined) {
      last.alternatives.push(strictForm)
      continue
    }
    // A term next to an operator is read literally; a free one is analysed in ranked mode.
    const literal = mode === "strict" || joined === "and" || operatorFollows
    if (joined === "and" && last !== undefined) last.required = true
    const required = mode === "strict" || joined === "and"
    if (literal || prefix || phrase) {
      last = {
        alternatives: [strictForm],
        weight: phrase && mode === "ranked" ? PHRASE_WEIGHT : 1,
        required,
        bonus: false,
        stop: false,
        order: phrase ? null : words++
      }
      drafts.push(last)
      continue
    }
    // Ranked analysis of a free term.
    // An English possessive is the name: Nico's → Nico.
    const parts = pieces(text.replace(/(\p{L})['’]s$/iu, "$1"))
    const analysed: Array<Draft> = []
    for (const p of parts) {
      if (!p.cjk) {
        const alt = exact(columns, p.text, p.text, false)
        if (alt === undefined) continue
        const single = tokenize(p.text).length === 1
        analysed.push({ alternatives: [alt], weight: 1, required: false, bonus: false, stop: single && isStopWord(p.text), order: words++ })
        continue
      }
      const cjk = cjkWords(p.text)
      for (const w of cjk) {
        const alt = exact(columns, w.word, w.word, false)
        if (alt !== undefined) analysed.push({ alternatives: [alt], weight: 1, required: false, bonus: false, stop: w.stop, order: words++ })
      }
      // The run as a whole, when it was cut in several words.
      if (cjk.length > 1 && isCjkOnly(p.text)) {
        const whole = exact(columns, p.text, p.text, false)
        if (whole !== undefined) analysed.push({ alternatives: [whole], weight: 1, required: false, bonus: true, stop: false, order: null })
      }
    }
    drafts.push(...analysed)
    // A compound such as 记住FACT-9648备份 also counts as one phrase, as a bonus.
    if (parts.length > 1) drafts.push({ alternatives: [strictForm], weight: 1, required: false, bonus: true, stop: false, order: null })
    last = drafts[drafts.length - 1]
  }

  // Stop words go, unless nothing else is left to look for.
  const content = drafts.filter((d) => !d.bonus)
  const kept = content.every((d) => d.stop) ? drafts : drafts.filter((d) => !d.stop)

  // One group per distinct expression (the first keeps its place), at most MAX_GROUPS.
  const groups: Array<SearchGroup> = []
  const orders: Array<number | null> = []
  const byMatch = new Map<string, number>()
  for (const d of kept) {
    const match = d.alternatives.length === 1 ? (d.alternatives[0]?.match ?? "") : `(${d.alternatives.map((a) => a.match).join(" OR ")})`
    const seen = byMatch.get(match)
    if (seen !== undefined) {
      const g = groups[seen]
      if (g !== undefined) {
        groups[seen] = { ...g, weight: Math.max(g.weight, d.weight), required: g.required || d.required, bonus: g.bonus && d.bonus }
      }
      continue
    }
    if (groups.length >= MAX_GROUPS) continue
    byMatch.set(match, groups.length)
    orders.push(d.order)
    groups.push({
      label: d.alternatives.map((a) => a.label).join(" OR "),
      match,
      matchers: d.alternatives.map((a) => a.matcher),
      weight: d.weight,
      required: d.required,
      bonus: d.bonus
    })
  }
  const adjacent: Array<readonly [number, number]> = []
  let prev: number | undefined
  for (let i = 0; i < groups.length; i++) {
    if (orders[i] === null) continue
    if (prev !== undefined) adjacent.push([prev, i])
    prev = i
  }

  const hasFilters = roles.length + notRoles.length + tools.length + notTools.length + kinds.length + notKinds.length > 0
  if (groups.length === 0 && !hasFilters) return { _tag: "Empty" }
  // `tool:memory` asks for the memory tool's calls and results: they cannot be left out.
  if (!memoryCalls && tools.includes(MEMORY_TOOL)) return planSearch(input, mode, { includeMemoryCalls: true })
  const messagesOnly = roles.length + notRoles.length + tools.length + notTools.length > 0
  const wanted: Array<SearchKind> = (["message", "summary"] as const).filter((k) =>
    (kinds.length === 0 || kinds.includes(k)) && !notKinds.includes(k) && (k === "message" || !messagesOnly)
  )
  return {
    _tag: "Query",
    mode,
    groups,
    exclude,
    excludeMatchers,
    filters: { roles: roles.length > 0 ? roles : null, notRoles, tools, notTools, kinds: wanted, memoryCalls },
    adjacent
  }
}
