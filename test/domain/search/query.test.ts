import { assert, describe, it } from "@effect/vitest"
import { type QueryPlan, planSearch, type SearchGroup, type SearchPlan } from "../../../src/domain/search/query.ts"
import { indexColumns, tokenize } from "../../../src/domain/search/text.ts"

const query = (plan: SearchPlan): QueryPlan => {
  if (plan._tag === "Empty") throw new Error("expected a query plan")
  return plan
}
/** label → FTS5 expression, with the flags that differ from a plain optional word. */
const groups = (input: string, mode: "ranked" | "strict" = "ranked") =>
  query(planSearch(input, mode)).groups.map((g: SearchGroup) =>
    [g.label, g.match, ...(g.required ? ["required"] : []), ...(g.bonus ? ["bonus"] : []), ...(g.weight !== 1 ? [`×${g.weight}`] : [])].join(" | ")
  )

describe("planSearch, ranked (the default)", () => {
  it("drops stop words and ORs the rest: a question becomes its key words", () => {
    assert.deepStrictEqual(groups("When did Caroline go to the LGBTQ support group?"), [
      "Caroline | body : \"caroline\"",
      "go | body : \"go\"",
      "LGBTQ | body : \"lgbtq\"",
      "support | body : \"support\"",
      "group | body : \"group\"",
    ])
    // neighbours in the query (stop words skipped) earn a proximity bonus
    assert.deepStrictEqual(query(planSearch("support the group")).adjacent, [[0, 1]])
  })

  it("keeps stop words when nothing else is left", () => {
    assert.deepStrictEqual(groups("what is it"), ["what | body : \"what\"", "is | body : \"is\"", "it | body : \"it\""])
  })

  it("keeps a word with inner punctuation as one phrase (an identifier)", () => {
    assert.deepStrictEqual(groups("FACT-9648"), ["FACT-9648 | body : \"fact 9648\""])
    assert.deepStrictEqual(groups("key:value foo_bar"), ["key:value | body : \"key value\"", "foo_bar | body : \"foo bar\""])
  })

  it("weighs a quoted phrase double", () => {
    assert.deepStrictEqual(groups(`"connection refused" docker`), [
      "connection refused | body : \"connection refused\" | ×2",
      "docker | body : \"docker\""
    ])
  })

  it("makes terms joined by AND required, and reads them literally", () => {
    assert.deepStrictEqual(groups("docker AND compose logs"), [
      "docker | body : \"docker\" | required",
      "compose | body : \"compose\" | required",
      "logs | body : \"logs\""
    ])
  })

  it("cuts CJK runs into words (ICU), joins single letters back, drops particles, and adds the run as a bonus", () => {
    assert.deepStrictEqual(groups("配置文件"), [
      "配置 | cjk : \"配置\"",
      "文件 | cjk : \"文件\"",
      "配置文件 | cjk : \"配置 置文 文件\" | bonus"
    ])
    assert.deepStrictEqual(groups("卡罗琳的支持小组"), [
      "卡罗琳 | cjk : \"卡罗 罗琳\"",
      "支持 | cjk : \"支持\"",
      "小组 | cjk : \"小组\"",
      "卡罗琳的支持小组 | cjk : \"卡罗 罗琳 琳的 的支 支持 持小 小组\" | bonus"
    ])
    assert.deepStrictEqual(groups("猫"), ["猫 | body : \"猫\""])
  })

  it("separates ASCII glued to Chinese, and keeps the whole as a bonus phrase", () => {
    assert.deepStrictEqual(groups("记住FACT-9648备份"), [
      "记住 | cjk : \"记住\"",
      "FACT-9648 | body : \"fact 9648\"",
      "备份 | cjk : \"备份\"",
      "记住FACT-9648备份 | body : \"记 住 fact 9648 备 份\" | bonus"
    ])
  })

  it("caps the number of terms", () => {
    const many = Array.from({ length: 60 }, (_, i) => `word${i}x`).join(" ")
    assert.strictEqual(query(planSearch(many)).groups.length, 24)
  })
})

describe("planSearch, strict", () => {
  it("requires every term, stop words included", () => {
    assert.deepStrictEqual(groups("the docker compose", "strict"), [
      "the | body : \"the\" | required",
      "docker | body : \"docker\" | required",
      "compose | body : \"compose\" | required"
    ])
  })

  it("keeps exact phrases and OR groups", () => {
    assert.deepStrictEqual(groups(`"exact phrase" foo`, "strict"), ["exact phrase | body : \"exact phrase\" | required", "foo | body : \"foo\" | required"])
    assert.deepStrictEqual(groups("cat OR dog fish", "strict"), ["cat OR dog | (body : \"cat\" OR body : \"dog\") | required", "fish | body : \"fish\" | required"])
    assert.deepStrictEqual(groups("cat | dog", "strict"), ["cat OR dog | (body : \"cat\" OR body : \"dog\") | required"])
    assert.deepStrictEqual(groups("OR foo", "strict"), ["foo | body : \"foo\" | required"])
    assert.deepStrictEqual(groups("foo OR", "strict"), ["foo | body : \"foo\" | required"])
  })

  it("takes a CJK run as one exact string: a bigram phrase, a letter, or a spaced phrase when mixed", () => {
    assert.deepStrictEqual(groups("记忆系统", "strict"), ["记忆系统 | cjk : \"记忆 忆系 系统\" | required"])
    assert.deepStrictEqual(groups("记忆", "strict"), ["记忆 | cjk : \"记忆\" | required"])
    assert.deepStrictEqual(groups("記", "strict"), ["記 | body : \"記\" | required"])
    assert.deepStrictEqual(groups("東京で会議", "strict"), ["東京で会議 | cjk : \"東京 京で で会 会議\" | required"])
    assert.deepStrictEqual(groups("记忆系统AI", "strict"), ["记忆系统AI | body : \"记 忆 系 统 ai\" | required"])
  })
})

describe("planSearch, syntax", () => {
  it("supports prefix*, widening a prefix that porter would change", () => {
    assert.deepStrictEqual(groups("kube*"), ["kube* | body : \"kube\" *"])
    // porter turns "deploy" into "deploi" (which misses "deployment", indexed as "deploy")
    assert.deepStrictEqual(groups("deploy*"), ["deploy* | body : \"deplo\" *"])
    assert.deepStrictEqual(planSearch("*"), { _tag: "Empty" })
  })

  it("NOT excludes a term; a query of exclusions only is empty", () => {
    const plan = query(planSearch("docker NOT compose"))
    assert.deepStrictEqual(plan.groups.map((g) => g.label), ["docker"])
    assert.deepStrictEqual(plan.exclude, ["body : \"compose\""])
    assert.deepStrictEqual(planSearch("NOT docker"), { _tag: "Empty" })
    assert.deepStrictEqual(planSearch("NOT"), { _tag: "Empty" })
  })

  it("reads role:, tool: and kind: as filters, with NOT too", () => {
    const plan = query(planSearch("role:assistant tool:bash NOT tool:read docker"))
    assert.deepStrictEqual(plan.groups.map((g) => g.label), ["docker"])
    assert.deepStrictEqual(plan.filters, { roles: ["assistant"], notRoles: [], tools: ["bash"], notTools: ["read"], kinds: ["message"], memoryCalls: false })
    // filters only: the newest rows that pass them
    const only = query(planSearch("role:tool NOT role:user"))
    assert.deepStrictEqual(only.groups, [])
    assert.deepStrictEqual([only.filters.roles, only.filters.notRoles], [["tool_result"], ["user"]])
    assert.deepStrictEqual(query(planSearch("kind:summary docker")).filters.kinds, ["summary"])
    assert.deepStrictEqual(query(planSearch("NOT kind:summary docker")).filters.kinds, ["message"])
    assert.deepStrictEqual(query(planSearch(`tool:"my tool" x`)).filters.tools, ["my tool"])
    // an unknown key is text
    assert.deepStrictEqual(groups("text:secret"), ["text:secret | body : \"text secret\""])
  })

  it("is Empty for emoji, punctuation, wildcards and blank input", () => {
    for (const q of ["😀🎉", "!!! ??? ...", "", "   \t\n", `""`, "%", "_", "% _ %%", "(", "NEAR"]) {
      assert.deepStrictEqual(planSearch(q), { _tag: "Empty" }, JSON.stringify(q))
    }
  })

  it("survives unbalanced and embedded quotes, and quotes every term", () => {
    assert.deepStrictEqual(groups(`"hello world`), ["hello | body : \"hello\"", "world | body : \"world\""])
    for (const q of [`"`, `"""`, `a "b" "c`, `x"y"z`, `"OR" OR "AND"`, `'single'`, `NEAR(a b)`, "C++ c#", `"记忆 "系统`, "a\u0000b", `say "a""b"`]) {
      const plan = planSearch(q)
      if (plan._tag === "Empty") continue
      for (const g of plan.groups) {
        // every quoted string closes: removing escaped "" pairs leaves an even count
        const count = (g.match.replaceAll(`""`, "").match(/"/g) ?? []).length
        assert.strictEqual(count % 2, 0, `${q} → ${g.match}`)
        assert.notInclude(g.match, "\u0000")
      }
    }
  })
})

describe("index columns and tokens", () => {
  it("spaces CJK letters out in body and lists the bigrams of each run in cjk", () => {
    assert.deepStrictEqual(indexColumns("plain text"), { body: "plain text", cjk: "" })
    const c = indexColumns("记住FACT-9648备份。好")
    assert.strictEqual(c.body, " 记  住 FACT-9648 备  份 。 好 ")
    assert.strictEqual(c.cjk, "记住 0 备份 0")
  })

  it("tokenizes as FTS5 does: folded, stemmed, CJK letter by letter, with offsets", () => {
    assert.deepStrictEqual(tokenize("Running 记住FACT-9648 café").map((t) => [t.term, t.start, t.end]), [
      ["run", 0, 7],
      ["记", 8, 9],
      ["住", 9, 10],
      ["fact", 10, 14],
      ["9648", 15, 19],
      ["cafe", 20, 24]
    ])
  })
})
