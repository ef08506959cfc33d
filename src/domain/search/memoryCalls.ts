/**
 * The memory tool's own calls and results, told apart from the rest of a message for search
 * (issue 24). A model that searches its memory writes the query's words into the conversation (the
 * call, `[tool call memory] {"action":"search","query":…}`) and gets back snippets holding them (the
 * result): searched like any other text, every earlier search for a question outranks its answer at
 * the next one, and every search adds more. So the index keeps these blocks in columns of their own
 * (migrations/0028_memory_calls_search.sql), which a search reads only when asked to
 * (`includeMemoryCalls`, or a `tool:memory` filter).
 *
 * A block is the memory tool's when it is a `tool_use` named `memory`, or a `tool_result` answering
 * one: a result names only the call's id, so the ids come from the message it answers (the nearest
 * assistant message before it). The rest of the message — its text, other tools' calls and results,
 * images — is its searchable text, written exactly as `messageText` writes it, so a message without
 * memory blocks is indexed as it always was.
 */
import { blocksText, type ContentBlock, type Content } from "../message.ts"

/** The memory tool's name (layers/tools/memory.ts offers it under this name). */
export const MEMORY_TOOL = "memory"

/** How a call of the memory tool begins in a message's text (`messageText`): what SQL looks for. */
export const MEMORY_CALL_MARK = `[tool call ${MEMORY_TOOL}] `

/** The ids of the memory tool's calls in `content`. */
export const memoryCallIds = (content: Content): ReadonlyArray<string> =>
  typeof content === "string" ? [] : content.flatMap((b) => (b.type === "tool_use" && b.name === MEMORY_TOOL ? [b.id] : []))

/** A message's searchable text in two parts. */
export interface SearchText {
  /** Everything but the memory tool's calls and results (the message's text when it has none). */
  readonly body: string
  /** The memory tool's calls and results ("" when it has none). */
  readonly memory: string
}

/**
 * Splits `content` into its searchable text and the memory tool's own blocks: its calls, and the
 * results answering `answered` (the memory call ids of the message it answers).
 */
export const searchText = (content: Content, answered: ReadonlyArray<string>): SearchText => {
  if (typeof content === "string") return { body: content, memory: "" }
  const isMemory = (b: ContentBlock) =>
    (b.type === "tool_use" && b.name === MEMORY_TOOL) || (b.type === "tool_result" && answered.includes(b.tool_use_id))
  const memory = content.filter(isMemory)
  if (memory.length === 0) return { body: blocksText(content), memory: "" }
  return { body: blocksText(content.filter((b) => !isMemory(b))), memory: blocksText(memory) }
}
