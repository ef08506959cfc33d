import { assert, describe, it } from "@effect/vitest"
import { extractiveSummary, keywords, truncateAtSentence } from "../../../src/domain/memory/summaryText.ts"
import { estimateTextTokens } from "../../../src/domain/message.ts"

const EN = "The first sentence is short. The second sentence is a little longer than the first. " +
  "The third one rambles on and on about nothing in particular until it finally ends."
const ZH = "这是第一句话。这是第二句话，稍微长一点。第三句话更长，一直说下去没有尽头。"
const JA = "今日は晴れです！明日は雨が降るでしょうか？週末は東京で会議があります。"
const EMOJI = "😀".repeat(40)
const MIXED = "a😀b😀c😀 ".repeat(30)

/** A lone surrogate (half of a broken pair). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

describe("truncateAtSentence", () => {
  it("returns text that fits unchanged (trimmed)", () => {
    assert.strictEqual(truncateAtSentence("  Short enough.  ", 100), "Short enough.")
    assert.strictEqual(truncateAtSentence(EN, 1000), EN)
  })

  it("never exceeds the limit and is never empty", () => {
    for (const text of [EN, ZH, JA, EMOJI, MIXED, "x".repeat(500), "word ".repeat(200)]) {
      for (let limit = 1; limit <= 60; limit++) {
        const out = truncateAtSentence(text, limit)
        assert.isAtMost(estimateTextTokens(out), limit, `limit ${limit}: ${JSON.stringify(out)}`)
        assert.isAbove(out.length, 0)
      }
    }
  })

  it("treats limits below 1 as 1 and floors fractional limits", () => {
    assert.isAtMost(estimateTextTokens(truncateAtSentence(EN, 0)), 1)
    assert.isAtMost(estimateTextTokens(truncateAtSentence(EN, -5)), 1)
    assert.isAtMost(estimateTextTokens(truncateAtSentence(EN, 7.9)), 7)
  })

  it("cuts at the last sentence boundary that fits, marked with an ellipsis", () => {
    assert.strictEqual(truncateAtSentence(EN, 12), "The first sentence is short. …")
    assert.strictEqual(
      truncateAtSentence(EN, 25),
      "The first sentence is short. The second sentence is a little longer than the first. …"
    )
  })

  it("cuts at Chinese and Japanese sentence marks", () => {
    assert.strictEqual(truncateAtSentence(ZH, 10), "这是第一句话。 …")
    assert.strictEqual(truncateAtSentence(ZH, 20), "这是第一句话。这是第二句话，稍微长一点。 …")
    assert.strictEqual(truncateAtSentence(JA, 16), "今日は晴れです！ …")
    assert.strictEqual(truncateAtSentence(JA, 17), "今日は晴れです！明日は雨が降るでしょうか？ …")
  })

  it("falls back to a word boundary when no sentence fits", () => {
    const text = "this sentence has no end and keeps going with many more words after it"
    const out = truncateAtSentence(text, 8)
    assert.isTrue(out.endsWith(" …"))
    const head = out.slice(0, -2)
    assert.isTrue(text.startsWith(head))
    // the cut is right before a space of the original text
    assert.strictEqual(text.charAt(head.length), " ")
  })

  it("never breaks a surrogate pair", () => {
    for (const text of [EMOJI, MIXED, "x" + EMOJI, "ab" + EMOJI, "汉字😀".repeat(30)]) {
      for (let limit = 1; limit <= 40; limit++) {
        const out = truncateAtSentence(text, limit)
        assert.notMatch(out, LONE_SURROGATE, `limit ${limit}`)
      }
    }
  })
})

describe("keywords", () => {
  it("orders content words by frequency, skipping stop words and short words", () => {
    assert.deepStrictEqual(
      keywords("docker docker docker kubernetes kubernetes the the the and and pods ok", 3),
      ["docker", "kubernetes", "pods"]
    )
  })

  it("does not count trailing punctuation as part of a word", () => {
    assert.deepStrictEqual(keywords("We use docker. Docker is fast. I like docker", 1), ["docker"])
    assert.deepStrictEqual(keywords("Containers. containers, containers", 5), ["containers"])
  })

  it("keeps file paths and dotted names", () => {
    assert.include(keywords("edit src/main.ts then src/main.ts again", 2), "src/main.ts")
  })

  it("prefers identifiers to common words and shows their spelling; never dates, numbers or roles", () => {
    const text = "The user asked about the deploy. The assistant said the deploy of FACT-3003 failed on 2026-03-01 " +
      "at 10:30, port 6543. The user asked again about the deploy and FACT-3003."
    // FACT-3003 twice (an identifier counts double) beats deploy three times
    assert.deepStrictEqual(keywords(text, 3), ["FACT-3003", "deploy", "asked"])
    for (const k of keywords(text, 20)) assert.notMatch(k, /^(user|assistant|about|2026-03-01|6543|10|30)$/i)
  })
})

describe("extractiveSummary", () => {
  const entries = Array.from({ length: 30 }, (_, i) => ({
    label: `user ${i}`,
    text: `Message ${i} talks about docker containers. Then more details follow in a second sentence that is long.`
  }))

  it("stays within the target in both modes", () => {
    for (const target of [5, 10, 30, 50, 100, 300, 1000, 5000]) {
      for (const aggressive of [false, true]) {
        const out = extractiveSummary(entries, target, aggressive)
        assert.isAtMost(estimateTextTokens(out), target, `target ${target}, aggressive ${aggressive}`)
        assert.isAbove(out.length, 0)
      }
    }
  })

  it("keeps each entry's first sentence in order and names keywords", () => {
    const out = extractiveSummary(entries.slice(0, 3), 1000, false)
    const lines = out.split("\n")
    assert.deepStrictEqual(lines.slice(0, 3), [
      "- user 0: Message 0 talks about docker containers.",
      "- user 1: Message 1 talks about docker containers.",
      "- user 2: Message 2 talks about docker containers."
    ])
    assert.match(lines[3] ?? "", /^Expand for details about: .*docker/)
  })

  it("keeps shorter excerpts in aggressive mode", () => {
    const long = Array.from({ length: 20 }, (_, i) => ({
      label: `m${i}`,
      text: `Entry ${i} has a long first sentence that goes on about the deployment of the gateway, its ` +
        `configuration, the database migrations and the channels that need to be restarted afterwards. Short.`
    }))
    const normal = extractiveSummary(long, 2000, false)
    const aggressive = extractiveSummary(long, 2000, true)
    assert.isBelow(estimateTextTokens(aggressive), estimateTextTokens(normal))
    // every entry keeps its place in both modes
    for (let i = 0; i < 20; i++) {
      assert.include(normal, `- m${i}: Entry ${i} `)
      assert.include(aggressive, `- m${i}: Entry ${i} `)
    }
  })

  it("keeps every CJK entry in order within the target", () => {
    const zh = Array.from({ length: 12 }, (_, i) => ({
      label: `m${i}`,
      text: `今天我们讨论了第${i}个问题，关于记忆系统的压缩算法如何在长时间运行的会话中保持上下文。另外还提到了数据库的索引设计。`
    }))
    const source = zh.reduce((n, e) => n + estimateTextTokens(e.text), 0)
    const target = Math.floor(source / 3)
    const out = extractiveSummary(zh, target, false)
    assert.isAtMost(estimateTextTokens(out), target)
    let at = -1
    for (let i = 0; i < zh.length; i++) {
      const next = out.indexOf(`- m${i}: 今天我们讨论了第${i}`)
      assert.isAbove(next, at, `entry ${i} missing or out of order`)
      at = next
    }
    // CJK clauses are not keywords
    assert.notInclude(out, "关于记忆系统的压缩算法如何在长时间运行的会话中保持上下文,")
  })

  it("names the topics of a condensed summary, not the roles, ids and dates of its sources' lines", () => {
    // Leaf summaries as the deterministic summarizer writes them, then one made of those.
    const leaf = (texts: ReadonlyArray<string>, day: string) =>
      extractiveSummary(
        texts.map((text, i) => ({ label: `${i % 2 === 0 ? "user" : "assistant"} ${day} 09:${String(30 + i)}`, text })),
        1000,
        false
      )
    const first = leaf([
      "The staging database FACT-3003 is on port 6543.",
      "Noted: staging points at FACT-3003, see deploy/staging.env.",
      "Can you rotate the backups of the wiki too?",
      "Backups now rotate weekly under /srv/backups."
    ], "2026-03-01")
    const second = leaf([
      "The nginx.conf needs the new upstream.",
      "I added the upstream to nginx.conf and reloaded nginx.",
      "Does the wiki backup still run?",
      "Yes, /srv/backups has last night's wiki backup."
    ], "2026-03-02")
    const condensed = extractiveSummary([
      { label: "sum_1 2026-03-01 09:30–2026-03-01 09:33", text: first },
      { label: "sum_2 2026-03-02 09:30–2026-03-02 09:33", text: second }
    ], 1000, false)
    const footer = condensed.split("\n").at(-1) ?? ""
    assert.match(footer, /^Expand for details about: /)
    const topics = footer.slice("Expand for details about: ".length).split(", ")
    for (const noise of ["user", "assistant", "2026-03-01", "2026-03-02", "sum_1", "expand", "details", "about"]) {
      assert.notInclude(topics.map((t) => t.toLowerCase()), noise, footer)
    }
    for (const topic of ["FACT-3003", "nginx.conf", "/srv/backups"]) assert.include(topics, topic, footer)
  })

  it("gives the footer at most a quarter of the target", () => {
    const many = Array.from({ length: 5 }, (_, i) => ({
      label: `e${i}`,
      text: `alphabetical bureaucracy catastrophe dinosaur elephant flamingo gorilla ${i}.`
    }))
    const out = extractiveSummary(many, 40, false)
    const footer = out.split("\n").find((l) => l.startsWith("Expand for details about:")) ?? ""
    assert.isTrue(footer.startsWith("Expand for details about: "), out)
    assert.isAtMost(estimateTextTokens(footer), 10)
    assert.isAtMost(estimateTextTokens(out), 40)
  })
})
