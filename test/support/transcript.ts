/**
 * Deterministic synthetic transcripts (seeded PRNG) in the import JSONL format: user/assistant
 * turns with tool calls (sometimes parallel) and their results, English and Chinese text.
 */
const WORDS = "the memory system keeps every message and compacts old context into summaries docker container sqlite index search budget tail agent tool result deploy config file path error retry backoff token window model provider channel gateway schedule review profile".split(" ")
const ZH = ["记忆系统", "容器", "配置文件", "数据库", "搜索", "摘要", "工具调用", "上下文窗口", "部署", "错误重试"]

export const prng = (seed: number) => {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return (s >>> 0) / 4294967296
  }
}

export interface TranscriptLine {
  readonly role: "user" | "assistant" | "tool_result"
  readonly content: unknown
  readonly ts: string
}

export const transcript = (count: number, seed = 1, start = Date.UTC(2026, 0, 1)): Array<TranscriptLine> => {
  const rnd = prng(seed)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(rnd() * xs.length)] as A
  const sentence = () => {
    const n = 6 + Math.floor(rnd() * 14)
    const ws = Array.from({ length: n }, () => (rnd() < 0.06 ? pick(ZH) : pick(WORDS)))
    return ws.join(" ") + "."
  }
  const text = () => Array.from({ length: 1 + Math.floor(rnd() * 4) }, sentence).join(" ")
  const out: Array<TranscriptLine> = []
  let t = start
  let call = 0
  const ts = () => {
    t += 1000 + Math.floor(rnd() * 60_000)
    return new Date(t).toISOString()
  }
  while (out.length < count) {
    out.push({ role: "user", content: text(), ts: ts() })
    if (out.length >= count) break
    if (rnd() < 0.2 && out.length + 3 <= count) {
      const n = rnd() < 0.3 ? 2 : 1
      const ids = Array.from({ length: n }, () => `toolu_${++call}`)
      out.push({
        role: "assistant",
        content: [
          { type: "text", text: text() },
          ...ids.map((id) => ({ type: "tool_use", id, name: "bash", input: { command: `ls ${pick(WORDS)}` } }))
        ],
        ts: ts()
      })
      out.push({
        role: "tool_result",
        content: ids.map((id) => ({ type: "tool_result", tool_use_id: id, content: text() })),
        ts: ts()
      })
      if (out.length >= count) break
    }
    out.push({ role: "assistant", content: text(), ts: ts() })
  }
  return out.slice(0, count)
}

export const toJsonl = (lines: ReadonlyArray<TranscriptLine>): string => lines.map((l) => JSON.stringify(l)).join("\n") + "\n"
