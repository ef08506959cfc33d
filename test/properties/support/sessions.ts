/**
 * Generators for the memory property tests: a small Arbitrary spec (seed, length, rates) and a
 * deterministic seeded builder that turns it into a realistic session — user and assistant turns,
 * tool calls (single and parallel, answered by one tool_result message per call, by one message
 * carrying several results, or split over two), CJK text, emoji, control characters and lone
 * surrogates, occasional huge pastes, and timestamps that mostly increase but are sometimes equal
 * or go backwards.
 *
 * Every message is unique (text-only messages carry a marker, tool messages unique tool ids), so a
 * message in an assembled context can be traced back to its seq.
 */
import { Arbitrary, Schema } from "effect"
import type { ContentBlock, NewMessage } from "../../../src/domain/message.ts"
import type { CompactionConfig } from "../../../src/services/CompactionEngine.ts"

export const int = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

// ---------------------------------------------------------------------------------------------
// Seeded PRNG (mulberry32)

export interface Rng {
  readonly next: () => number
  readonly int: (lo: number, hi: number) => number
  readonly chance: (p: number) => boolean
  readonly pick: <A>(xs: ReadonlyArray<A>) => A
}

export const rng = (seed: number): Rng => {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1))
  const pick = <A>(xs: ReadonlyArray<A>): A => {
    if (xs.length === 0) throw new Error("pick from an empty list")
    return xs[int(0, xs.length - 1)]
  }
  return { next, int, chance: (p) => next() < p, pick }
}

// ---------------------------------------------------------------------------------------------
// Text

const LATIN = (
  "the docker container memory summary compaction budget token window search index query result " +
  "deploy kubernetes postgres sqlite backup restore schedule meeting tomorrow invoice customer " +
  "report error stack trace function variable refactor test suite coverage release version " +
  "coffee weather travel tokyo berlin paris music guitar novel chapter garden tomato recipe"
).split(" ")
const CJK = [
  "记忆系统", "数据库", "压缩", "上下文", "我们讨论了", "测试用例", "部署", "明天开会", "东京", "咖啡",
  "東京タワー", "ありがとう", "カタカナ", "ひらがな", "データベース", "会議",
  "안녕하세요", "메모리", "데이터", "검색"
]
const EMOJI = ["😀", "🚀", "👍🏽", "🇯🇵", "❤️", "🧪", "👨‍👩‍👧"]
const WEIRD = [
  "\"", "\"\"", "'", "\\", "\u0000", "\u0001", "\u001f", "\u007f", "\t", "\r\n", "%", "_", "*", "-", "NOT", "OR",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: "${x}" is a hostile input string on purpose, not a template
  "key:value", "(", ")", "^", "NEAR(", "</memory-summary>", "<memory-summary id=\"sum_1\">", "${x}", "\u200b",
  "\ufeff", "\ud800", "\udfff", "a\udc00b", "\u2028", "DROP TABLE ctx_messages;--"
]

export interface TextRates {
  /** 0..1 */
  readonly cjk: number
  readonly weird: number
}

const word = (r: Rng, rates: TextRates): string => {
  const x = r.next()
  if (x < rates.weird * 0.3) {
    // A random UTF-16 code unit now and then (lone surrogates included), or a nasty token.
    return r.chance(0.5) ? String.fromCharCode(r.int(0, 0xffff)) : r.pick(WEIRD)
  }
  if (x < rates.weird * 0.3 + rates.cjk) return r.pick(CJK)
  if (r.chance(0.03)) return r.pick(EMOJI)
  return r.pick(LATIN)
}

const sentence = (r: Rng, rates: TextRates): string => {
  const n = r.int(1, 18)
  const words: Array<string> = []
  for (let i = 0; i < n; i++) words.push(word(r, rates))
  return words.join(r.chance(0.1) ? "" : " ") + r.pick([".", ".", "!", "?", "。", "", "\n"])
}

export const text = (r: Rng, rates: TextRates): string => {
  const n = r.int(1, 4)
  const parts: Array<string> = []
  for (let i = 0; i < n; i++) parts.push(sentence(r, rates))
  return parts.join(" ")
}

/** A huge paste of 50–200 KB (UTF-8). */
export const hugeText = (r: Rng, rates: TextRates): string => {
  const targetBytes = r.int(50_000, 200_000)
  const paragraph = Array.from({ length: 12 }, () => sentence(r, rates)).join(" ")
  const bytes = Math.max(1, new TextEncoder().encode(paragraph).length)
  const parts: Array<string> = []
  for (let i = 0, total = 0; total < targetBytes; i++) {
    parts.push(`${i} ${paragraph}`)
    total += bytes + 8
  }
  return parts.join("\n")
}

// ---------------------------------------------------------------------------------------------
// Sessions

export const SessionSpec = Schema.Struct({
  seed: int(0, 2 ** 31 - 1),
  /** Target number of messages (a last tool unit is completed, so a few more may come). */
  length: int(0, 400),
  /** 0 makes a larger session (800–1,600 messages). */
  large: int(0, 24),
  /** Tenths: how many turns are tool calls, how much text is CJK, how weird text gets. */
  tools: int(0, 10),
  cjk: int(0, 10),
  weird: int(0, 10),
  /** 9–10 sprinkle huge messages (50–200 KB) over the session. */
  huge: int(0, 10)
})
export type SessionSpec = typeof SessionSpec.Type
export const sessionSpec = Arbitrary.schema(SessionSpec)

export const targetLength = (spec: SessionSpec): number => (spec.large === 0 ? 800 + spec.length * 2 : spec.length)

const jsonInput = (r: Rng, rates: TextRates): Schema.Json => {
  const input: Record<string, Schema.Json> = { query: text(r, rates) }
  if (r.chance(0.5)) input.n = r.int(-1000, 1000)
  if (r.chance(0.3)) input.flags = [r.chance(0.5), null, r.next()]
  if (r.chance(0.2)) input.nested = { a: { b: [text(r, rates)] } }
  return input
}

/**
 * Builds the messages of a session deterministically from its spec. `label` makes the markers and
 * tool ids unique across the sessions of one database.
 */
export const buildSession = (spec: SessionSpec, label = "s"): Array<NewMessage> => {
  const r = rng(spec.seed)
  const rates: TextRates = { cjk: spec.cjk / 10, weird: spec.weird / 20 }
  const target = targetLength(spec)
  const hugeRate = spec.huge >= 9 ? (spec.huge - 8) / 120 : 0
  const out: Array<NewMessage> = []
  let t = 1_700_000_000_000 + r.int(0, 1_000_000_000)
  let toolCounter = 0
  const nextTime = () => {
    const x = r.next()
    if (x < 0.85) t += r.int(1, 120_000)
    else if (x < 0.93) t += 0
    else t -= r.int(1, 3_600_000)
    return t
  }
  const body = () => (r.chance(hugeRate) ? hugeText(r, rates) : text(r, rates))
  const marked = () => `[${label}#${out.length}] ${body()}`
  const push = (m: NewMessage) => out.push(m)

  while (out.length < target) {
    const x = r.next()
    if (x < 0.4 * (1 - spec.tools / 20)) {
      // user turn
      const y = r.next()
      if (y < 0.7) push({ role: "user", content: marked(), createdAt: nextTime() })
      else {
        const blocks: Array<ContentBlock> = [{ type: "text", text: marked() }]
        if (r.chance(0.4)) {
          const image: ContentBlock = r.chance(0.5)
            ? { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }
            : { type: "image", source: { type: "url", url: `https://example.com/${r.int(0, 1e6)}.png` } }
          if (r.chance(0.5)) blocks.push(image)
          else blocks.unshift(image)
        }
        push({ role: "user", content: blocks, createdAt: nextTime() })
      }
    } else if (x < 1 - spec.tools / 10 * 0.5) {
      // assistant text turn
      push({
        role: "assistant",
        content: r.chance(0.6) ? marked() : [{ type: "text", text: marked() }],
        createdAt: nextTime()
      })
    } else {
      // tool unit: one assistant message with k tool_use blocks, then the results
      const k = r.chance(0.35) ? r.int(2, 4) : 1
      const ids = Array.from({ length: k }, () => `toolu_${label}_${toolCounter++}`)
      const blocks: Array<ContentBlock> = []
      if (r.chance(0.5)) blocks.push({ type: "text", text: marked() })
      for (const id of ids) {
        blocks.push({ type: "tool_use", id, name: r.pick(["bash", "search", "read_file", "web"]), input: jsonInput(r, rates) })
      }
      push({ role: "assistant", content: blocks, createdAt: nextTime() })
      const result = (id: string): ContentBlock => {
        const content = r.chance(0.6)
          ? body()
          : [{ type: "text" as const, text: body() }, ...(r.chance(0.2) ? [{ type: "text" as const, text: text(r, rates) }] : [])]
        return r.chance(0.15)
          ? { type: "tool_result", tool_use_id: id, content, is_error: r.chance(0.5) }
          : { type: "tool_result", tool_use_id: id, content }
      }
      const order = r.chance(0.2) ? [...ids].reverse() : ids
      const mode = r.next()
      if (mode < 0.5 || k === 1 && mode < 0.7) {
        for (const id of order) push({ role: "tool_result", content: [result(id)], createdAt: nextTime() })
      } else if (mode < 0.85 || k === 1) {
        const role = r.chance(0.3) ? "user" : "tool_result"
        const resultBlocks = order.map(result)
        if (role === "user" && r.chance(0.5)) resultBlocks.push({ type: "text", text: marked() })
        push({ role, content: resultBlocks, createdAt: nextTime() })
      } else {
        const cut = r.int(1, k - 1)
        push({ role: "tool_result", content: order.slice(0, cut).map(result), createdAt: nextTime() })
        push({ role: "tool_result", content: order.slice(cut).map(result), createdAt: nextTime() })
      }
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Compaction configuration (smaller chunks so small sessions form several)

export const EngineSpec = Schema.Struct({
  freshTail: int(0, 24),
  leafMinMessages: int(1, 12),
  condensedMin: int(2, 4),
  condensedFanIn: int(2, 8),
  chunkTokens: int(300, 6_000)
})
export type EngineSpec = typeof EngineSpec.Type
export const engineSpec = Arbitrary.schema(EngineSpec)

export const engineConfig = (spec: EngineSpec): CompactionConfig => ({
  threshold: 0.75,
  freshTail: spec.freshTail,
  leafMinMessages: spec.leafMinMessages,
  condensedMin: spec.condensedMin,
  condensedFanIn: Math.max(spec.condensedMin, spec.condensedFanIn),
  chunkTokens: spec.chunkTokens,
  maxIterations: 10
})
