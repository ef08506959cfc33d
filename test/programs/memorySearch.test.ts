/**
 * `anna memory search` as a user runs it (real processes, a real ANNA_HOME): a question finds its
 * answer and `--strict` keeps the all-words semantics; `--context N` shows the messages around a
 * hit; a summary hit names the messages it covers (text and JSON); ASCII glued to Chinese is found;
 * filters work from the command line; a bad `--context` is a usage error.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { SearchHit } from "../../src/domain/memory/types.ts"
import { anna, annaJson, newHome } from "../support/cli.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const KEY = "a1:cli:caroline:dm"

/** A home with one imported session: filler, the LGBTQ message and its answer, a Chinese fact. */
const homeWithSession = async (extra: ReadonlyArray<string> = []) => {
  const home = newHome()
  homes.push(home)
  const texts = [
    "Good morning! Did you sleep well?",
    "I slept fine, thanks. The weather looks nice today.",
    "I went to a LGBTQ support group yesterday.",
    "That sounds wonderful, how did it go?",
    "记住FACT-9648备份存储桶是 s3://archive-9648，别告诉别人。",
    "好的，我记住了。",
    ...extra
  ]
  const lines = texts.map((content, i) =>
    JSON.stringify({ role: i % 2 === 0 ? "user" : "assistant", content, ts: new Date(Date.UTC(2026, 4, 1, 10, i)).toISOString() })
  )
  const file = join(home, "t.jsonl")
  writeFileSync(file, `${lines.join("\n")}\n`)
  const r = await anna(home, "memory", "import", KEY, file)
  assert.strictEqual(r.code, 0, r.stderr)
  return home
}

describe("anna memory search", () => {
  it("answers a question (ranked), --strict wants every word, and finds ASCII glued to Chinese", async () => {
    const home = await homeWithSession()
    const question = "When did Caroline go to the LGBTQ support group?"
    const ranked = await annaJson<Array<SearchHit>>(home, "memory", "search", question, "--session", KEY)
    assert.strictEqual(ranked[0]?.id, "msg_3")
    assert.strictEqual(ranked[0]?.snippet, "I went to a «LGBTQ» «support» «group» yesterday.")
    assert.deepStrictEqual([ranked[0]?.seq, ranked[0]?.role, ranked[0]?.matched], [3, "user", ["LGBTQ", "support", "group"]])
    assert.deepStrictEqual(await annaJson<Array<SearchHit>>(home, "memory", "search", question, "--session", KEY, "--strict"), [])
    const strict = await annaJson<Array<SearchHit>>(home, "memory", "search", "LGBTQ support group", "--strict")
    assert.deepStrictEqual(strict.map((h) => h.id), ["msg_3"])
    const fact = await annaJson<Array<SearchHit>>(home, "memory", "search", "FACT-9648")
    assert.deepStrictEqual(fact.map((h) => h.id), ["msg_5"])
    assert.include(fact[0]?.snippet ?? "", "记住«FACT-9648»备份存储桶是")
    // the text view
    const text = await anna(home, "memory", "search", question, "--session", KEY)
    assert.strictEqual(text.code, 0, text.stderr)
    const [header, first] = text.stdout.split("\n")
    assert.match(header ?? "", /^SCORE +KIND +ID +SESSION +WHEN +SEQ +SNIPPET$/)
    assert.match(first ?? "", /message +msg_3 +a1:cli:caroline:dm +2026-05-01T10:02:00Z +#3 +I went to a «LGBTQ»/)
  }, 60_000)

  it("--context N shows the messages around each message hit", async () => {
    const home = await homeWithSession()
    const json = await annaJson<Array<SearchHit>>(home, "memory", "search", "LGBTQ support group", "--context", "1")
    assert.deepStrictEqual(json[0]?.context?.map((m) => [m.id, m.seq, m.role, m.text]), [
      ["msg_2", 2, "assistant", "I slept fine, thanks. The weather looks nice today."],
      ["msg_4", 4, "assistant", "That sounds wonderful, how did it go?"]
    ])
    const text = await anna(home, "memory", "search", "LGBTQ support group", "--context", "1")
    assert.strictEqual(text.code, 0, text.stderr)
    // the first hit's block (the turns found through their neighbours follow it)
    assert.deepStrictEqual(text.stdout.split("\n\n")[0]?.trimEnd().split("\n"), [
      `1. msg_3: message #3 (user) in ${KEY}, 2026-05-01T10:02:00Z, score ${json[0]?.score.toPrecision(3)}`,
      "     #2 assistant   I slept fine, thanks. The weather looks nice today.",
      "   > #3 user        I went to a «LGBTQ» «support» «group» yesterday.",
      "     #4 assistant   That sounds wonderful, how did it go?"
    ])
    const bad = await anna(home, "memory", "search", "x", "--context", "11")
    assert.strictEqual(bad.code, 2)
    assert.include(bad.stderr, "--context must be between 0 and 10, got 11")
  }, 60_000)

  it("a summary hit names the messages it covers", async () => {
    const filler = Array.from({ length: 60 }, (_, i) => `ordinary message number ${i} about the garden, the weather and lunch plans`)
    const home = await homeWithSession(filler)
    const compact = await anna(home, "memory", "compact", KEY, "--full")
    assert.strictEqual(compact.code, 0, compact.stderr)
    // only the deterministic summaries say "Expand for details about"
    const json = await annaJson<Array<SearchHit>>(home, "memory", "search", "expand details", "--session", KEY, "--limit", "20")
    const summary = json.find((h) => h.kind === "summary")
    assert.isDefined(summary)
    const covers = summary?.covers
    assert.isDefined(covers)
    assert.isAtLeast(covers?.firstSeq ?? 0, 1)
    assert.isAbove(covers?.lastSeq ?? 0, covers?.firstSeq ?? 0)
    // the same range as describe gives
    const described = await annaJson<{ sourceRange: { firstSeq: number; lastSeq: number } }>(home, "memory", "describe", summary?.id ?? "")
    assert.deepStrictEqual([covers?.firstSeq, covers?.lastSeq], [described.sourceRange.firstSeq, described.sourceRange.lastSeq])
    // text: the SEQ column shows the range, and the way to expand it
    const text = await anna(home, "memory", "search", "expand details", "--session", KEY, "--limit", "20")
    const row = text.stdout.split("\n").find((l) => l.includes(` ${summary?.id} `)) ?? ""
    assert.include(row, `#${covers?.firstSeq}–#${covers?.lastSeq}`)
    assert.match(text.stdout, /A summary covers the messages under SEQ; anna memory expand sum_\d+ shows what it was made from\./)
    const blocks = await anna(home, "memory", "search", "expand details", "--session", KEY, "--limit", "20", "--context", "2")
    assert.include(blocks.stdout, `${summary?.id}: summary of messages #${covers?.firstSeq}–#${covers?.lastSeq} in ${KEY}`)
    assert.include(blocks.stdout, `(anna memory expand ${summary?.id} shows what it was made from)`)
  }, 60_000)

  it("takes filters and operators from the command line", async () => {
    const home = await homeWithSession()
    const assistant = await annaJson<Array<SearchHit>>(home, "memory", "search", "role:assistant")
    assert.deepStrictEqual(assistant.map((h) => h.id), ["msg_6", "msg_4", "msg_2"])
    const not = await annaJson<Array<SearchHit>>(home, "memory", "search", "weather OR group NOT LGBTQ", "--strict")
    assert.deepStrictEqual(not.map((h) => h.id), ["msg_2"])
  }, 60_000)
})
