/**
 * Turning stored items into a conversation a model accepts: summaries become delimited user
 * messages that name their id, depth and time range (so the model can ask to expand them), and a
 * final repair pass guarantees tool pairing for the Anthropic and OpenAI APIs without ever adding
 * tokens (it only converts or drops what cannot be paired).
 */
import { type ContentBlock, estimateMessageTokens, type Message } from "../message.ts"
import { formatSummaryId } from "./session.ts"

export interface SummaryForRender {
  readonly id: number
  readonly kind: "leaf" | "condensed"
  readonly depth: number
  readonly earliestAt: number
  readonly latestAt: number
  readonly content: string
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/:\d\d\.\d{3}Z$/, "Z")

export const renderSummary = (s: SummaryForRender): Message => ({
  role: "user",
  content:
    `<memory-summary id="${formatSummaryId(s.id)}" kind="${s.kind}" depth="${s.depth}" from="${iso(s.earliestAt)}" to="${
      iso(s.latestAt)
    }">\n${s.content}\n</memory-summary>\n` +
    `(Compacted earlier conversation. For details, call the memory tool with action "expand" and id "${
      formatSummaryId(s.id)
    }".)`
})

export const summaryContextTokens = (s: SummaryForRender): number => estimateMessageTokens(renderSummary(s))

const isEmptyBlock = (b: ContentBlock): boolean => b.type === "text" && b.text.length === 0

/** A tool_result that lost its tool_use becomes its plain content (same tokens or fewer). */
const unpairResult = (b: ContentBlock): ReadonlyArray<ContentBlock> => {
  if (b.type !== "tool_result") return [b]
  if (typeof b.content === "string") return b.content.length > 0 ? [{ type: "text", text: b.content }] : []
  return b.content.filter((x) => !isEmptyBlock(x))
}

/**
 * Makes a message list valid for both APIs: every tool_use is answered by tool_result blocks in
 * the messages right after it, and every tool_result answers a tool_use right before it. Unpaired
 * tool_use blocks are dropped, unpaired tool_results become plain content, and messages left empty
 * are removed. Well-formed input comes back identical (same objects).
 */
export const repairPairing = (messages: ReadonlyArray<Message>): Array<Message> => {
  // Pass 1: which tool_use ids of each assistant message (by index) are answered in the results
  // that follow it. Per message, not per id: providers reuse ids across turns (`call_0`…), so an
  // answer to an earlier turn's call must not make a later, unanswered call with the same id pass.
  const answeredAt = new Map<number, Set<string>>()
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (m === undefined || m.role !== "assistant" || typeof m.content === "string") continue
    const uses = new Set(m.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])))
    if (uses.size === 0) continue
    const answered = new Set<string>()
    answeredAt.set(i, answered)
    for (let j = i + 1; j < messages.length; j++) {
      const r = messages[j]
      if (r === undefined || typeof r.content === "string" || r.role === "assistant") break
      // A message answering none of these calls (yet) ends the run: pass 2 turns its results into
      // plain content, so nothing after it is "right after" the tool_use any more.
      const ids = r.content.flatMap((b) =>
        b.type === "tool_result" && uses.has(b.tool_use_id) && !answered.has(b.tool_use_id) ? [b.tool_use_id] : []
      )
      if (ids.length === 0) break
      for (const id of ids) answered.add(id)
    }
  }
  // Pass 2: rewrite only what is unpaired.
  const out: Array<Message> = []
  let open = new Set<string>()
  for (const [i, m] of messages.entries()) {
    if (typeof m.content === "string") {
      open = new Set()
      if (m.content.length > 0) out.push(m)
      continue
    }
    let changed = false
    const blocks: Array<ContentBlock> = []
    const nextOpen = new Set<string>()
    let sawResult = false
    for (const b of m.content) {
      if (b.type === "tool_use") {
        if (m.role === "assistant" && answeredAt.get(i)?.has(b.id) === true && !nextOpen.has(b.id)) {
          nextOpen.add(b.id)
          blocks.push(b)
        } else changed = true
      } else if (b.type === "tool_result") {
        if (m.role !== "assistant" && open.has(b.tool_use_id)) {
          // One answer per call: a second result for the same id becomes plain content.
          open.delete(b.tool_use_id)
          sawResult = true
          blocks.push(b)
        } else {
          changed = true
          blocks.push(...unpairResult(b))
        }
      } else if (isEmptyBlock(b)) changed = true
      else blocks.push(b)
    }
    if (m.role === "assistant") open = nextOpen
    else if (!sawResult) open = new Set()
    if (blocks.length === 0) continue
    out.push(changed ? { role: m.role, content: blocks } : m)
  }
  return out
}
