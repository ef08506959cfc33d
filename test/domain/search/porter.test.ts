/**
 * The TypeScript porter stemmer against SQLite's own (FTS5 `porter unicode61 remove_diacritics 2`,
 * read back through fts5vocab): the stems must be the same, or snippets would mark the wrong words.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import { DatabaseSync } from "node:sqlite"
import { porterStem } from "../../../src/domain/search/porter.ts"
import { fold, termOf, tokenize } from "../../../src/domain/search/text.ts"

/** What SQLite indexes for each word (one document per word). */
const sqliteStems = (words: ReadonlyArray<string>, tokenizer = "porter unicode61 remove_diacritics 2"): Array<string> => {
  const db = new DatabaseSync(":memory:")
  try {
    db.exec(`CREATE VIRTUAL TABLE f USING fts5 (x, tokenize = '${tokenizer}')`)
    db.exec("CREATE VIRTUAL TABLE v USING fts5vocab (f, 'instance')")
    const insert = db.prepare("INSERT INTO f (rowid, x) VALUES (?, ?)")
    words.forEach((w, i) => {
      insert.run(i + 1, w)
    })
    const out = words.map(() => "")
    for (const row of db.prepare("SELECT term, doc FROM v").iterate()) out[Number(row["doc"]) - 1] = String(row["term"])
    return out
  } finally {
    db.close()
  }
}

const SUFFIXES = [
  "", "s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "ly", "y", "ational", "tional", "enci", "anci", "izer", "logi",
  "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti",
  "iviti", "biliti", "icate", "ative", "alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able",
  "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "e", "ll",
  "at", "bl", "iz", "ated", "ating", "bled", "izing", "hopping", "filing", "failing"
] as const

const KNOWN = [
  "caresses", "ponies", "ties", "caress", "cats", "feed", "agreed", "plastered", "bled", "motoring", "sing", "conflated",
  "troubled", "sized", "hopping", "tanned", "falling", "hissing", "fizzed", "failing", "filing", "happy", "sky",
  "relational", "conditional", "rational", "valenci", "hesitanci", "digitizer", "conformabli", "radicalli", "differentli",
  "vileli", "analogousli", "vietnamization", "predication", "operator", "feudalism", "decisiveness", "hopefulness",
  "callousness", "formaliti", "sensitiviti", "sensibiliti", "triplicate", "formative", "formalize", "electriciti",
  "electrical", "hopeful", "goodness", "revival", "allowance", "inference", "airliner", "gyroscopic", "adjustable",
  "defensible", "irritant", "replacement", "adjustment", "dependent", "adoption", "homologou", "communism", "activate",
  "angulariti", "homologous", "effective", "bowdlerize", "probate", "rate", "cease", "controll", "roll", "deployment",
  "deploying", "deployed", "deploy", "kubernetes", "containers", "running", "went", "groups", "yesterday", "ye", "yyy",
  "aed", "ied", "oed", "eed", "yes", "café", "naïve", "straße", "über", "résumé", "x", "ab", "abc", "docker", "zebraquartz"
]

const letters = Schema.String.check(Schema.isPattern(/^[a-z]{1,9}$/))
const word = Arbitrary.all({
  stem: Arbitrary.schema(letters),
  suffix: Arbitrary.schema(Schema.Literals(SUFFIXES))
}).pipe(Arbitrary.map(({ stem, suffix }) => stem + suffix))

/** Letters with and without diacritics, Latin, Cyrillic and Greek, and combining diacritics. */
const LETTERS = Array.from("aeiouyncAEIOUYNCéèêëÉÀâäçñõøåæœßİıǖḯőȁṩąęłžščĳйЙёЁбвгдежзклмнопрстуфхцчшщъыьэюяάέήίόύώΆΈΪϋΐσςΣ")
const DIACRITICS = ["\u0300", "\u0301", "\u0302", "\u0303", "\u0308", "\u0327", "\u0331"]
const foreignWord = Arbitrary.array(Arbitrary.schema(Schema.Literals([...LETTERS, ...DIACRITICS])), { minLength: 1, maxLength: 8 }).pipe(
  Arbitrary.map((parts) => `x${parts.join("")}`)
)

describe("fold", () => {
  it("folds as unicode61 remove_diacritics 2: ASCII letters lose their diacritics, others keep them", () => {
    const words = ["café", "CAFÉ", "Ñandú", "ǖber", "İx", "мой", "Йод", "Ελλάδα", "большой", "ø", "ß", "e\u0301x", "xa\u0331b"]
    assert.deepStrictEqual(words.map(fold), sqliteStems(words, "unicode61 remove_diacritics 2"))
    assert.deepStrictEqual(words.map(fold), ["cafe", "cafe", "nandu", "uber", "ix", "мой", "йод", "ελλάδα", "большой", "ø", "ß", "ex", "xab"])
  })

  it.effect.prop("folds any word of Latin, Cyrillic and Greek letters and diacritics as SQLite does", {
    words: Arbitrary.array(foreignWord, { minLength: 50, maxLength: 100 })
  }, ({ words }) =>
    Effect.sync(() => {
      assert.deepStrictEqual(words.map(fold), sqliteStems(words, "unicode61 remove_diacritics 2"))
    }), { arbitrary: { runs: 30 } })
})

/** The terms SQLite indexes for a text, in order. */
const sqliteTerms = (text: string): Array<string> => {
  const db = new DatabaseSync(":memory:")
  try {
    db.exec("CREATE VIRTUAL TABLE f USING fts5 (x, tokenize = 'porter unicode61 remove_diacritics 2')")
    db.exec("CREATE VIRTUAL TABLE v USING fts5vocab (f, 'instance')")
    db.prepare("INSERT INTO f (rowid, x) VALUES (1, ?)").run(text)
    return Array.from(db.prepare("SELECT term FROM v ORDER BY offset").iterate(), (row) => String(row["term"]))
  } finally {
    db.close()
  }
}

describe("tokenize", () => {
  it("cuts words where unicode61 does: marks other than Latin diacritics separate them", () => {
    for (const text of ["❤️tomato soup", "a\u0483b", "नमस्ते", "cafe\u0301 crème", "x\u0331y", "שָׁלוֹם"]) {
      assert.deepStrictEqual(tokenize(text).map((t) => t.term), sqliteTerms(text), JSON.stringify(text))
    }
  })
})

describe("porterStem", () => {
  it("stems known words as SQLite does", () => {
    const expected = sqliteStems(KNOWN)
    assert.deepStrictEqual(KNOWN.map(termOf), expected)
  })

  it("passes tokens shorter than 3 or longer than 64 bytes through", () => {
    assert.strictEqual(porterStem("is"), "is")
    const long = "abilities".repeat(8)
    assert.strictEqual(porterStem(long), long)
    assert.strictEqual(fold("CAFÉ"), "cafe")
  })

  it.effect.prop("stems any letters-and-suffix word as SQLite does", { words: Arbitrary.array(word, { minLength: 100, maxLength: 300 }) }, ({ words }) =>
    Effect.sync(() => {
      assert.deepStrictEqual(words.map(porterStem), sqliteStems(words))
    }), { arbitrary: { runs: 50 } })
})
