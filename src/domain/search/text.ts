/**
 * How text is cut into searchable tokens, shared by the index and the query so both agree.
 *
 * The index (migrations/0010_search.sql) is FTS5 with `porter unicode61 remove_diacritics 2`.
 * unicode61 has no word boundaries inside Chinese, Japanese or Korean text (a run such as
 * `记住FACT-9648备份` is one token), so rows with CJK letters are indexed through `indexColumns`:
 * `body` is the text with a space on each side of every CJK letter (so each letter is a token and
 * Latin words glued to Chinese stand apart), and `cjk` holds the overlapping two-letter pairs
 * (bigrams) of each CJK run, so that a two-letter word is one index lookup and a longer word a
 * phrase of bigrams. Rows without CJK letters are indexed as they are (by a trigger, in SQL).
 *
 * `tokenize` reproduces what FTS5 sees in `body` (folded, stemmed, with offsets into the original
 * text) so matches can be marked and counted in TypeScript for ranking and snippets.
 */
import { porterStem } from "./porter.ts"

/**
 * CJK letters: Han ideographs (with extensions), kana, bopomofo, Hangul syllables and jamo, and the
 * iteration marks 々〆〇. All of them are inside `hasCjk` (domain/message.ts), which decides the
 * rows that get this treatment. CJK punctuation and full-width forms are not letters.
 */
export const isCjkLetter = (cp: number): boolean =>
  (cp >= 0x4e00 && cp <= 0x9fff) ||
  (cp >= 0x3400 && cp <= 0x4dbf) ||
  (cp >= 0x3041 && cp <= 0x3096) ||
  (cp >= 0x309d && cp <= 0x309f) ||
  (cp >= 0x30a1 && cp <= 0x30fa) ||
  (cp >= 0x30fc && cp <= 0x30ff) ||
  (cp >= 0xac00 && cp <= 0xd7a3) ||
  (cp >= 0x3005 && cp <= 0x3007) ||
  (cp >= 0x3105 && cp <= 0x312f) ||
  (cp >= 0x3131 && cp <= 0x318e) ||
  (cp >= 0x31f0 && cp <= 0x31ff) ||
  (cp >= 0xf900 && cp <= 0xfaff) ||
  (cp >= 0xff66 && cp <= 0xff9f) ||
  (cp >= 0x20000 && cp <= 0x2ffff)

const CJK_LETTER = /[\u3005-\u3007\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3105-\u312f\u3131-\u318e\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff66-\uff9f]|[\ud840-\ud87f][\udc00-\udfff]/u

export const hasCjkLetter = (text: string): boolean => CJK_LETTER.test(text)

/** Separates bigrams of different CJK runs in the `cjk` column, so no phrase spans two runs. */
export const RUN_BREAK = "0"

/** The FTS5 columns of a row: `body` and `cjk` as described above. */
export const indexColumns = (text: string): { readonly body: string; readonly cjk: string } => {
  if (!hasCjkLetter(text)) return { body: text, cjk: "" }
  let body = ""
  const pairs: Array<string> = []
  let prev: string | undefined
  let run = 0
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0
    if (isCjkLetter(cp)) {
      body += ` ${ch} `
      if (prev !== undefined) pairs.push(prev + ch)
      prev = ch
      run++
    } else {
      body += ch
      if (run > 1) pairs.push(RUN_BREAK)
      prev = undefined
      run = 0
    }
  }
  return { body, cjk: pairs.join(" ") }
}

/** A CJK word as the FTS5 query of the `cjk` column: its bigrams as a phrase (one letter has none). */
export const bigramsOf = (word: string): ReadonlyArray<string> => {
  const letters = Array.from(word)
  return letters.slice(1).map((ch, i) => `${letters[i] ?? ""}${ch}`)
}

/** Text as `body` holds it: CJK letters spaced out (a query phrase must be cut the same way). */
export const spaceCjk = (text: string): string => (hasCjkLetter(text) ? indexColumns(text).body : text)

export interface Token {
  /** Folded (lower case, no diacritics) and, outside CJK, stemmed: the term FTS5 indexes. */
  readonly term: string
  /** UTF-16 offsets of the token in the text. */
  readonly start: number
  readonly end: number
  readonly cjk: boolean
}

const isAscii = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false
  return true
}
/**
 * The combining marks `unicode61` takes for diacritics and drops (U+0300–U+0331, SQLite's
 * `sqlite3Fts5UnicodeIsdiacritic` masks); it keeps every other mark.
 */
const isDiacritic = (c: number): boolean =>
  c >= 0x300 && c <= 0x331 && (c < 0x320 ? (0x08029fdf & (1 << (c - 0x300))) !== 0 : (0x000361f8 & (1 << (c - 0x320))) !== 0)

/**
 * unicode61's token characters: letters, numbers, private use, and the diacritics it removes; any
 * other mark separates words there (U+FE0F after an emoji, Devanagari vowel signs), so here too.
 */
const WORD = new RegExp(
  `[\\p{L}\\p{N}\\p{Co}${
    Array.from({ length: 0x32 }, (_, i) => 0x300 + i).filter(isDiacritic).map((c) => `\\u${c.toString(16).padStart(4, "0")}`).join("")
  }]+`,
  "gu"
)

/** A letter whose decomposition is an ASCII letter and diacritics (é, ǖ, İ) as that letter; others as they are. */
const withoutDiacritics = (ch: string): string => {
  const cp = ch.codePointAt(0) ?? 0
  if (isDiacritic(cp)) return ""
  if (cp < 0xc0) return ch
  const d = ch.normalize("NFD")
  const base = d.charCodeAt(0)
  if (d.length < 2 || !isAsciiWordCode(base) || base <= 57) return ch
  for (let i = 1; i < d.length; i++) if (!isDiacritic(d.charCodeAt(i))) return ch
  return d.charAt(0)
}

/**
 * Lower case without diacritics, as `unicode61 remove_diacritics 2` folds a token: only letters that
 * are an ASCII letter with diacritics lose them (café → cafe), and diacritics standing alone go
 * (e + U+0301 → e); Cyrillic й or Greek ά keep theirs, as in SQLite's index (a query folded further
 * found nothing there). Checked against SQLite in test/domain/search/porter.test.ts.
 */
export const fold = (word: string): string => {
  if (isAscii(word)) return word.toLowerCase()
  let out = ""
  for (const ch of word) out += withoutDiacritics(ch)
  // unicode61 has no final sigma: ς folds to σ.
  return out.toLowerCase().replaceAll("ς", "σ")
}

/** Stems already computed (words repeat a lot; ranking tokenizes hundreds of texts per search). */
const terms = new Map<string, string>()
const TERM_CACHE = 50_000

/** What a word is indexed as: folded, then stemmed. */
export const termOf = (word: string): string => {
  const known = terms.get(word)
  if (known !== undefined) return known
  const term = porterStem(fold(word))
  if (terms.size >= TERM_CACHE) terms.clear()
  terms.set(word, term)
  return term
}

/** An ASCII letter or digit (unicode61's token characters below 0x80). */
const isAsciiWordCode = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57)

/**
 * `tokenize` for a text of ASCII only (most of what is searched): the same tokens by a scan of its
 * char codes, without the Unicode regular expression and the CJK checks (ranking tokenizes a few
 * hundred texts of up to 4,000 characters per search: half of its time at 1M messages went there).
 */
const tokenizeAscii = (text: string, firsts: ReadonlySet<number> | undefined): Array<Token> => {
  const out: Array<Token> = []
  const n = text.length
  let i = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (!isAsciiWordCode(c)) {
      i++
      continue
    }
    const start = i
    while (i < n && isAsciiWordCode(text.charCodeAt(i))) i++
    const wanted = firsts === undefined || firsts.has(c >= 65 && c <= 90 ? c + 32 : c)
    out.push({ term: wanted ? termOf(text.slice(start, i)) : "", start, end: i, cjk: false })
  }
  return out
}

/**
 * The tokens FTS5 finds in `body` for `text`, in order. With `firsts` (lower-case char codes), a
 * token of an ASCII text whose first letter is not among them gets the term "" (it is not stemmed):
 * for a caller that only compares terms with ones starting with those letters (the Porter stemmer
 * keeps a word's first letter, test/domain/search/text.test.ts).
 */
export const tokenize = (text: string, firsts?: ReadonlySet<number>): Array<Token> => {
  if (isAscii(text)) return tokenizeAscii(text, firsts)
  const out: Array<Token> = []
  for (const m of text.matchAll(WORD)) {
    const word = m[0]
    const at = m.index
    if (!hasCjkLetter(word)) {
      out.push({ term: termOf(word), start: at, end: at + word.length, cjk: false })
      continue
    }
    // Split CJK letters off as tokens of their own; what lies between them is a word.
    let from = 0
    let i = 0
    for (const ch of word) {
      const cp = ch.codePointAt(0) ?? 0
      if (isCjkLetter(cp)) {
        if (i > from) {
          const rest = word.slice(from, i)
          out.push({ term: termOf(rest), start: at + from, end: at + i, cjk: false })
        }
        out.push({ term: ch, start: at + i, end: at + i + ch.length, cjk: true })
        from = i + ch.length
      }
      i += ch.length
    }
    if (from < word.length) out.push({ term: termOf(word.slice(from)), start: at + from, end: at + word.length, cjk: false })
  }
  return out
}

/** The terms of `text` (for query words, phrases and matchers). */
export const termsOf = (text: string): Array<string> => tokenize(text).map((t) => t.term)
