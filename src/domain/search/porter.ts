/**
 * The Porter stemmer as SQLite's FTS5 `porter` tokenizer applies it, so that TypeScript can tell
 * which words of a text a full-text match stands for (highlighting, term frequencies, proximity)
 * without asking SQLite. It works on UTF-8 bytes like FTS5 (tokens shorter than 3 or longer than 64
 * bytes pass through; bytes outside ASCII count as consonants), including FTS5's quirks: `y` is a
 * vowel after a consonant when measuring, but after any first letter when looking for a vowel.
 * test/domain/search/porter.test.ts checks it against SQLite itself.
 */

const A = 97
const E = 101
const I = 105
const O = 111
const U = 117
const Y = 121
const S = 115
const T = 116
const L = 108
const W = 119
const X = 120
const Z = 122

const code = (s: string): Array<number> => Array.from(s, (c) => c.charCodeAt(0))

const isVowel = (c: number | undefined, yIsVowel: boolean): boolean =>
  c === A || c === E || c === I || c === O || c === U || (yIsVowel && c === Y)

/** After the first vowel-consonant pair of `b[from, to)`, the index just past it (relative), or 0. */
const gobbleVC = (b: ReadonlyArray<number>, from: number, to: number, prevConsonant: boolean): number => {
  let consonant = prevConsonant
  let i = from
  for (; i < to; i++) {
    consonant = !isVowel(b[i], consonant)
    if (!consonant) break
  }
  for (i++; i < to; i++) {
    consonant = !isVowel(b[i], consonant)
    if (consonant) return i + 1 - from
  }
  return 0
}

/** m > 0 for the stem b[0, n). */
const mGt0 = (b: ReadonlyArray<number>, n: number) => gobbleVC(b, 0, n, false) !== 0
const mGt1 = (b: ReadonlyArray<number>, n: number) => {
  const k = gobbleVC(b, 0, n, false)
  return k !== 0 && gobbleVC(b, k, n, true) !== 0
}
const mEq1 = (b: ReadonlyArray<number>, n: number) => {
  const k = gobbleVC(b, 0, n, false)
  return k !== 0 && gobbleVC(b, k, n, true) === 0
}
/** *o: the stem ends consonant-vowel-consonant, the last not w, x or y. */
const endsCvc = (b: ReadonlyArray<number>, n: number) => {
  const last = b[n - 1]
  if (last === W || last === X || last === Y) return false
  let mask = 0
  let consonant = false
  for (let i = 0; i < n; i++) {
    consonant = !isVowel(b[i], consonant)
    mask = (mask << 1) + (consonant ? 1 : 0)
  }
  return (mask & 7) === 5
}
/** *v*: the stem has a vowel (y counts after the first letter). */
const hasVowel = (b: ReadonlyArray<number>, n: number) => {
  for (let i = 0; i < n; i++) if (isVowel(b[i], i > 0)) return true
  return false
}

const endsWith = (b: ReadonlyArray<number>, n: number, suffix: ReadonlyArray<number>) => {
  if (n <= suffix.length) return false
  for (let i = 0; i < suffix.length; i++) if (b[n - suffix.length + i] !== suffix[i]) return false
  return true
}

type Condition = (b: ReadonlyArray<number>, n: number) => boolean

interface Rule {
  readonly suffix: ReadonlyArray<number>
  readonly replacement: ReadonlyArray<number>
  readonly when: Condition
}

const rules = (when: Condition, pairs: ReadonlyArray<readonly [string, string]>): ReadonlyArray<Rule> =>
  pairs.map(([suffix, replacement]) => ({ suffix: code(suffix), replacement: code(replacement), when }))

const mGt1SorT: Condition = (b, n) => (b[n - 1] === S || b[n - 1] === T) && mGt1(b, n)

// Within a step only the first suffix that matches is considered, whether or not its condition holds.
const STEP2 = rules(mGt0, [
  ["ational", "ate"], ["tional", "tion"], ["enci", "ence"], ["anci", "ance"], ["izer", "ize"], ["logi", "log"],
  ["bli", "ble"], ["alli", "al"], ["entli", "ent"], ["eli", "e"], ["ousli", "ous"], ["ization", "ize"], ["ation", "ate"],
  ["ator", "ate"], ["alism", "al"], ["iveness", "ive"], ["fulness", "ful"], ["ousness", "ous"], ["aliti", "al"],
  ["iviti", "ive"], ["biliti", "ble"]
])
const STEP3 = rules(mGt0, [
  ["ical", "ic"], ["ness", ""], ["icate", "ic"], ["iciti", "ic"], ["ful", ""], ["ative", ""], ["alize", "al"]
])
const STEP4 = [
  ...rules(mGt1, [
    ["al", ""], ["ance", ""], ["ence", ""], ["er", ""], ["ic", ""], ["able", ""], ["ible", ""], ["ant", ""], ["ement", ""],
    ["ment", ""], ["ent", ""]
  ]),
  ...rules(mGt1SorT, [["ion", ""]]),
  ...rules(mGt1, [["ou", ""], ["ism", ""], ["ate", ""], ["iti", ""], ["ous", ""], ["ive", ""], ["ize", ""]])
]

/** Applies the first rule whose suffix matches; the new length. */
const applyRules = (b: Array<number>, n: number, list: ReadonlyArray<Rule>): number => {
  for (const r of list) {
    if (!endsWith(b, n, r.suffix)) continue
    const stem = n - r.suffix.length
    if (!r.when(b, stem)) return n
    b.splice(stem, b.length - stem, ...r.replacement)
    return stem + r.replacement.length
  }
  return n
}

const EED = code("eed")
const ED = code("ed")
const ING = code("ing")
const STEP1B2: ReadonlyArray<readonly [ReadonlyArray<number>, ReadonlyArray<number>]> = [
  [code("at"), code("ate")],
  [code("bl"), code("ble")],
  [code("iz"), code("ize")]
]

const stemBytes = (input: ReadonlyArray<number>): Array<number> => {
  const b = [...input]
  let n = b.length
  // Step 1a: plurals.
  if (b[n - 1] === S) {
    if (b[n - 2] === E) {
      n -= (n > 4 && b[n - 4] === S && b[n - 3] === S) || (n > 3 && b[n - 3] === I) ? 2 : 1
    } else if (b[n - 2] !== S) n -= 1
  }
  // Step 1b: -eed, -ed, -ing.
  let removed = false
  if (endsWith(b, n, EED)) {
    if (mGt0(b, n - 3)) n -= 1
  } else if (endsWith(b, n, ED)) {
    if (hasVowel(b, n - 2)) {
      n -= 2
      removed = true
    }
  } else if (endsWith(b, n, ING)) {
    if (hasVowel(b, n - 3)) {
      n -= 3
      removed = true
    }
  }
  b.length = n
  if (removed) {
    const restore = STEP1B2.find(([suffix]) => endsWith(b, n, suffix))
    if (restore !== undefined) {
      b.splice(n - 2, 2, ...restore[1])
      n = b.length
    } else {
      const c = b[n - 1]
      if (!isVowel(c, false) && c !== L && c !== S && c !== Z && c === b[n - 2]) n -= 1
      else if (mEq1(b, n) && endsCvc(b, n)) b[n++] = E
    }
  }
  b.length = n
  // Step 1c: -y after a vowel becomes -i.
  if (b[n - 1] === Y && hasVowel(b, n - 1)) b[n - 1] = I
  // Steps 2 to 4: derivational suffixes.
  n = applyRules(b, n, STEP2)
  b.length = n
  n = applyRules(b, n, STEP3)
  b.length = n
  n = applyRules(b, n, STEP4)
  b.length = n
  // Step 5a: a final -e.
  if (b[n - 1] === E && (mGt1(b, n - 1) || (mEq1(b, n - 1) && !endsCvc(b, n - 1)))) n -= 1
  // Step 5b: -ll.
  if (n > 1 && b[n - 1] === L && b[n - 2] === L && mGt1(b, n - 1)) n -= 1
  b.length = n
  return b
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const isAscii = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false
  return true
}

/** The stem FTS5's porter tokenizer indexes for `token` (already folded to lower case). */
export const porterStem = (token: string): string => {
  if (isAscii(token)) {
    if (token.length < 3 || token.length > 64) return token
    return String.fromCharCode(...stemBytes(code(token)))
  }
  const bytes = encoder.encode(token)
  if (bytes.length < 3 || bytes.length > 64) return token
  return decoder.decode(Uint8Array.from(stemBytes(Array.from(bytes))))
}
