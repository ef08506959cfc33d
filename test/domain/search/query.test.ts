import { assert, describe, it } from "@effect/vitest"
import { makeSnippet, planSearch, type SearchPlan } from "../../../src/domain/search/query.ts"

const latin = (match: string): SearchPlan => ({ _tag: "Latin", match })
const cjk = (match: string | null, substrings: ReadonlyArray<ReadonlyArray<string>>): SearchPlan => ({
  _tag: "Cjk",
  match,
  substrings
})

describe("planSearch", () => {
  it("quotes every term and ANDs them", () => {
    assert.deepStrictEqual(planSearch("docker compose"), latin(`"docker" AND "compose"`))
  })

  it("keeps exact phrases", () => {
    assert.deepStrictEqual(planSearch(`"exact phrase" foo`), latin(`"exact phrase" AND "foo"`))
  })

  it("supports prefix*", () => {
    assert.deepStrictEqual(planSearch("dock*"), latin(`"dock"*`))
    assert.deepStrictEqual(planSearch("dock* compose"), latin(`"dock"* AND "compose"`))
    assert.deepStrictEqual(planSearch("*"), { _tag: "Empty" })
  })

  it("supports OR (and |) between terms", () => {
    assert.deepStrictEqual(planSearch("cat OR dog"), latin(`("cat" OR "dog")`))
    assert.deepStrictEqual(planSearch("cat OR dog fish"), latin(`("cat" OR "dog") AND "fish"`))
    assert.deepStrictEqual(planSearch("cat | dog"), latin(`("cat" OR "dog")`))
    assert.deepStrictEqual(planSearch("a OR b OR c"), latin(`("a" OR "b" OR "c")`))
  })

  it("ignores a dangling OR", () => {
    assert.deepStrictEqual(planSearch("OR foo"), latin(`"foo"`))
    assert.deepStrictEqual(planSearch("foo OR"), latin(`"foo"`))
  })

  it("drops NOT, AND and NEAR operators instead of passing them to FTS5", () => {
    assert.deepStrictEqual(planSearch("foo NOT bar"), latin(`"foo" AND "bar"`))
    assert.deepStrictEqual(planSearch("foo AND bar"), latin(`"foo" AND "bar"`))
    assert.deepStrictEqual(planSearch("NOT"), { _tag: "Empty" })
    assert.deepStrictEqual(planSearch("-foo +bar"), latin(`"foo" AND "bar"`))
  })

  it("turns column syntax key:value into a phrase", () => {
    assert.deepStrictEqual(planSearch("key:value"), latin(`"key value"`))
    assert.deepStrictEqual(planSearch("text:secret"), latin(`"text secret"`))
  })

  it("treats LIKE wildcards % and _ as nothing", () => {
    assert.deepStrictEqual(planSearch("%"), { _tag: "Empty" })
    assert.deepStrictEqual(planSearch("_"), { _tag: "Empty" })
    assert.deepStrictEqual(planSearch("% _ %%"), { _tag: "Empty" })
    assert.deepStrictEqual(planSearch("100%"), latin(`"100"`))
    assert.deepStrictEqual(planSearch("foo_bar"), latin(`"foo bar"`))
  })

  it("is Empty for emoji, punctuation and blank input", () => {
    assert.deepStrictEqual(planSearch("😀🎉"), { _tag: "Empty" })
    assert.deepStrictEqual(planSearch("!!! ??? ..."), { _tag: "Empty" })
    assert.deepStrictEqual(planSearch(""), { _tag: "Empty" })
    assert.deepStrictEqual(planSearch("   \t\n"), { _tag: "Empty" })
    assert.deepStrictEqual(planSearch(`""`), { _tag: "Empty" })
  })

  it("survives unbalanced and embedded quotes", () => {
    assert.deepStrictEqual(planSearch(`"hello world`), latin(`"hello" AND "world"`))
    assert.deepStrictEqual(planSearch(`hello "world`), latin(`"hello" AND "world"`))
    assert.deepStrictEqual(planSearch(`a"b`), latin(`"ab"`))
  })

  it("always produces balanced quotes", () => {
    for (const q of [`"`, `"""`, `a "b" "c`, `x"y"z`, `"OR" OR "AND"`, `'single'`, `NEAR(a b)`, "C++ c#", `"记忆 "系统`]) {
      const plan = planSearch(q)
      const exprs = plan._tag === "Latin" ? [plan.match] : plan._tag === "Cjk" && plan.match !== null ? [plan.match] : []
      for (const e of exprs) {
        // every quoted string closes: removing escaped "" pairs leaves an even count
        const count = (e.replaceAll(`""`, "").match(/"/g) ?? []).length
        assert.strictEqual(count % 2, 0, `${q} → ${e}`)
      }
    }
  })

  it("keeps accented Latin words", () => {
    assert.deepStrictEqual(planSearch("café"), latin(`"café"`))
  })

  it("routes CJK terms of 3+ characters to the trigram MATCH", () => {
    assert.deepStrictEqual(planSearch("记忆系统"), cjk(`"记忆系统"`, []))
    assert.deepStrictEqual(planSearch("東京で会議"), cjk(`"東京で会議"`, []))
    assert.deepStrictEqual(planSearch("记忆系统 OR 压缩算法"), cjk(`("记忆系统" OR "压缩算法")`, []))
  })

  it("routes CJK terms under 3 characters to substring filters", () => {
    assert.deepStrictEqual(planSearch("记忆"), cjk(null, [["记忆"]]))
    assert.deepStrictEqual(planSearch("东京"), cjk(null, [["东京"]]))
    assert.deepStrictEqual(planSearch("记忆 压缩"), cjk(null, [["记忆"], ["压缩"]]))
    // OR among short terms is kept: either word may occur.
    assert.deepStrictEqual(planSearch("东京 OR 大阪"), cjk(null, [["东京", "大阪"]]))
    assert.deepStrictEqual(planSearch("记忆系统 OR 压缩 数据库"), cjk(`"数据库"`, [["记忆系统", "压缩"]]))
  })

  it("mixes long terms (MATCH) and short terms (substrings) in one CJK query", () => {
    assert.deepStrictEqual(planSearch("记忆 docker"), cjk(`"docker"`, [["记忆"]]))
    assert.deepStrictEqual(planSearch("记忆系统 AI"), cjk(`"记忆系统"`, [["ai"]]))
  })
})

describe("makeSnippet", () => {
  it("marks the needle with «»", () => {
    assert.strictEqual(makeSnippet("The quick brown fox jumps", ["brown"]), "The quick «brown» fox jumps")
  })

  it("is case-insensitive and keeps the original case", () => {
    assert.strictEqual(makeSnippet("Hello World", ["world"]), "Hello «World»")
  })

  it("marks the earliest of several needles", () => {
    assert.strictEqual(makeSnippet("alpha beta gamma", ["gamma", "beta"]), "alpha «beta» gamma")
  })

  it("cuts around the needle with ellipses", () => {
    const text = "x".repeat(100) + " needle " + "y".repeat(100)
    assert.strictEqual(makeSnippet(text, ["needle"], 10), "…xxxxxxxxx «needle» yyyyyyyyy…")
  })

  it("works with CJK needles", () => {
    assert.strictEqual(makeSnippet("我们讨论了记忆系统的设计", ["记忆"]), "我们讨论了«记忆»系统的设计")
  })

  it("returns the start of the text when no needle occurs, whitespace collapsed", () => {
    assert.strictEqual(makeSnippet("no  match\nhere", ["zzz"]), "no match here")
    assert.strictEqual(makeSnippet("a".repeat(300), ["zzz"], 10).length, 20)
  })
})
