/**
 * The conversation model shared by memory, providers and channels.
 *
 * A message has a role (`user`, `assistant`, or `tool_result` for the answers to tool calls) and
 * content that is either a plain string or Anthropic-style blocks (text, image, tool_use,
 * tool_result). Memory stores exactly this shape and gives it back unchanged.
 */
import { Schema } from "effect"

export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String
})
export type TextBlock = typeof TextBlock.Type

export const ImageSource = Schema.Union([
  Schema.Struct({ type: Schema.Literal("base64"), media_type: Schema.String, data: Schema.String }),
  Schema.Struct({ type: Schema.Literal("url"), url: Schema.String })
])

export const ImageBlock = Schema.Struct({
  type: Schema.Literal("image"),
  source: ImageSource
})
export type ImageBlock = typeof ImageBlock.Type

export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.Json
})
export type ToolUseBlock = typeof ToolUseBlock.Type

export const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  content: Schema.Union([Schema.String, Schema.Array(Schema.Union([TextBlock, ImageBlock]))]),
  is_error: Schema.optionalKey(Schema.Boolean)
})
export type ToolResultBlock = typeof ToolResultBlock.Type

export const ContentBlock = Schema.Union([TextBlock, ImageBlock, ToolUseBlock, ToolResultBlock])
export type ContentBlock = typeof ContentBlock.Type

export const Role = Schema.Literals(["user", "assistant", "tool_result"])
export type Role = typeof Role.Type

export const Content = Schema.Union([Schema.String, Schema.Array(ContentBlock)])
export type Content = typeof Content.Type

export const Message = Schema.Struct({
  role: Role,
  content: Content
})
export type Message = typeof Message.Type

/** A message on its way into memory; `createdAt` (ms since epoch) defaults to now. */
export interface NewMessage extends Message {
  readonly createdAt?: number
}

/** Tokens charged for one image, whatever its size (Anthropic bills ~1.6k for a 1.15-megapixel image). */
export const IMAGE_TOKENS = 1600
/** Fixed framing cost of one message (role, separators). */
export const MESSAGE_OVERHEAD_TOKENS = 4

const encoder = new TextEncoder()

/**
 * Token estimate used everywhere in memory: UTF-8 bytes / 4, rounded up (the seed's heuristic; it
 * gives CJK text ~0.75 token per character, close to real tokenizers).
 */
export const estimateTextTokens = (text: string): number => {
  if (text.length === 0) return 0
  // Fast path: pure ASCII strings have one byte per UTF-16 unit.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range \x00-\x7f is all of ASCII, control characters included, on purpose
  const bytes = /^[\x00-\x7f]*$/.test(text) ? text.length : encoder.encode(text).length
  return Math.ceil(bytes / 4)
}

const blockTokens = (block: ContentBlock): number => {
  switch (block.type) {
    case "text":
      return estimateTextTokens(block.text)
    case "image":
      return IMAGE_TOKENS
    case "tool_use":
      return estimateTextTokens(block.name) + estimateTextTokens(JSON.stringify(block.input) ?? "")
    case "tool_result":
      return typeof block.content === "string"
        ? estimateTextTokens(block.content)
        : block.content.reduce((n, b) => n + blockTokens(b), 0)
  }
}

export const estimateMessageTokens = (message: Message): number =>
  MESSAGE_OVERHEAD_TOKENS +
  (typeof message.content === "string"
    ? estimateTextTokens(message.content)
    : message.content.reduce((n, b) => n + blockTokens(b), 0))

const blockText = (block: ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
      return "[image]"
    case "tool_use":
      return `[tool call ${block.name}] ${JSON.stringify(block.input)}`
    case "tool_result": {
      const body = typeof block.content === "string" ? block.content : block.content.map(blockText).join("\n")
      return block.is_error === true ? `[tool error] ${body}` : `[tool result] ${body}`
    }
  }
}

/** Plain text of some of a message's blocks, as `messageText` writes them. */
export const blocksText = (blocks: ReadonlyArray<ContentBlock>): string => blocks.map(blockText).join("\n")

/** Plain text of a message: what search indexes and what summarizers read. */
export const messageText = (message: Message): string =>
  typeof message.content === "string" ? message.content : blocksText(message.content)

export const toolUseIds = (message: Message): ReadonlyArray<string> =>
  typeof message.content === "string"
    ? []
    : message.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : []))

export const toolResultIds = (message: Message): ReadonlyArray<string> =>
  typeof message.content === "string"
    ? []
    : message.content.flatMap((b) => (b.type === "tool_result" ? [b.tool_use_id] : []))

/** Han, Hiragana, Katakana, Hangul and CJK punctuation/compatibility ranges. */
const CJK = /[\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]|[\ud840-\ud87f][\udc00-\udfff]/

export const hasCjk = (text: string): boolean => CJK.test(text)

/**
 * Whether a message belongs to the same atomic unit as the message before it: a message carrying
 * tool results continues the assistant turn (or the tool results) just before it. Compaction and
 * assembly never cut a unit, so a tool_use is never separated from its results.
 */
export const continuesUnit = (
  message: Message,
  previous: { readonly role: Role; readonly hasToolResults: boolean } | undefined
): boolean => {
  if (previous === undefined || toolResultIds(message).length === 0) return false
  return previous.role === "assistant" || previous.hasToolResults
}
