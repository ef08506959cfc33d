/**
 * Our conversation (`domain/message.ts`) as an Anthropic Messages request (pure).
 *
 * The stored history is Anthropic-shaped already, but the API is stricter than what memory keeps:
 * - roles alternate user/assistant; our `tool_result` role is a user turn, and consecutive turns of
 *   one role are merged into one message;
 * - every tool_use of an assistant turn is answered by a tool_result in the very next user message,
 *   the results first and any text or image after them. A call left without result (a turn cut off
 *   between the call and its result) gets an error result, and a result whose call is not in the
 *   turn before becomes text: otherwise the API refuses the whole history with a 400 on every turn
 *   from then on;
 * - text blocks are non-empty, images are jpeg/png/gif/webp, tool inputs are objects.
 * - API version 2026-10-21 (the one this SDK sends) rejects temperature/top_p/top_k with a 400
 *   ("Extra inputs are not permitted"), so temperature is sent only to a provider whose headers pin
 *   an older `anthropic-version` (e.g. an Anthropic-compatible server that still takes it).
 */
import type {
  ContentBlockParam,
  ImageBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam
} from "@anthropic-ai/sdk/resources/messages"
import type { ContentBlock, ImageBlock, Message, ToolResultBlock } from "../../domain/message.ts"
import type { ChatRequest, ProviderConfig } from "../../domain/model/types.ts"

export const DEFAULT_MAX_TOKENS = 4096
/** First API version without sampling parameters. */
export const SAMPLING_REMOVED_IN = "2026-10-21"
export const MISSING_RESULT = "No result was recorded for this tool call: the turn was interrupted."

const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const
type ImageType = (typeof IMAGE_TYPES)[number]

type Role = "user" | "assistant"
interface Turn {
  readonly role: Role
  readonly blocks: ReadonlyArray<ContentBlock>
  /** The message's content when it was one plain string, sent back as such. */
  readonly plain?: string
}

const text = (t: string): TextBlockParam => ({ type: "text", text: t })

const imageType = (mediaType: string): ImageType | undefined => {
  const t = mediaType.toLowerCase() === "image/jpg" ? "image/jpeg" : mediaType.toLowerCase()
  return IMAGE_TYPES.find((x) => x === t)
}

const image = (block: ImageBlock): ImageBlockParam | TextBlockParam => {
  if (block.source.type === "url") return { type: "image", source: { type: "url", url: block.source.url } }
  const mediaType = imageType(block.source.media_type)
  return mediaType === undefined
    ? text(`[image omitted: ${block.source.media_type} is not a format the model reads]`)
    : { type: "image", source: { type: "base64", media_type: mediaType, data: block.source.data } }
}

const resultText = (block: ToolResultBlock): string => {
  const body = typeof block.content === "string"
    ? block.content
    : block.content.map((b) => (b.type === "text" ? b.text : "[image]")).join("\n")
  return `[${block.is_error === true ? "tool error" : "tool result"} ${block.tool_use_id}] ${body}`
}

const toolResult = (block: ToolResultBlock): ToolResultBlockParam => {
  const content = typeof block.content === "string"
    ? block.content
    : block.content.flatMap((b) => (b.type === "text" ? (b.text === "" ? [] : [text(b.text)]) : [image(b)]))
  return {
    type: "tool_result",
    tool_use_id: block.tool_use_id,
    content,
    ...(block.is_error === true ? { is_error: true } : {})
  }
}

const isRecord = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === "object" && v !== null && !Array.isArray(v)

/** One block as the API takes it in a message of `role` (tool results are placed by `pairResults`). */
const block = (role: Role, b: ContentBlock): ContentBlockParam => {
  switch (b.type) {
    case "text":
      return text(b.text)
    case "image":
      return role === "user" ? image(b) : text("[image]")
    case "tool_use":
      return role === "assistant"
        ? { type: "tool_use", id: b.id, name: b.name, input: isRecord(b.input) ? b.input : { value: b.input } }
        : text(`[tool call ${b.name}] ${JSON.stringify(b.input)}`)
    case "tool_result":
      return text(resultText(b))
  }
}

const toTurn = (m: Message): Turn => {
  const role: Role = m.role === "assistant" ? "assistant" : "user"
  if (typeof m.content === "string") return m.content === "" ? { role, blocks: [] } : { role, blocks: [{ type: "text", text: m.content }], plain: m.content }
  return { role, blocks: m.content.filter((b) => !(b.type === "text" && b.text === "")) }
}

/** Drops empty messages and merges consecutive messages of one role. */
const mergeTurns = (messages: ReadonlyArray<Message>): ReadonlyArray<Turn> => {
  const out: Array<Turn> = []
  for (const turn of messages.map(toTurn)) {
    if (turn.blocks.length === 0) continue
    const last = out[out.length - 1]
    if (last !== undefined && last.role === turn.role) out[out.length - 1] = { role: turn.role, blocks: [...last.blocks, ...turn.blocks] }
    else out.push(turn)
  }
  return out
}

/** The user turn after an assistant turn that called `asked`: its results first, one per call. */
const pairResults = (asked: ReadonlyArray<string>, turn: Turn | undefined): Array<ContentBlockParam> => {
  const answered = new Set<string>()
  const results: Array<ContentBlockParam> = []
  const rest: Array<ContentBlockParam> = []
  for (const b of turn?.blocks ?? []) {
    if (b.type === "tool_result" && asked.includes(b.tool_use_id) && !answered.has(b.tool_use_id)) {
      answered.add(b.tool_use_id)
      results.push(toolResult(b))
    } else {
      rest.push(block("user", b))
    }
  }
  for (const id of asked) {
    if (!answered.has(id)) results.push({ type: "tool_result", tool_use_id: id, content: MISSING_RESULT, is_error: true })
  }
  return [...results, ...rest]
}

export const toMessages = (messages: ReadonlyArray<Message>): Array<MessageParam> => {
  const turns = mergeTurns(messages)
  const out: Array<MessageParam> = []
  for (let i = 0; i < turns.length; i++) {
    const turn = turns[i]
    if (turn === undefined) continue
    if (turn.role === "assistant") {
      out.push({ role: "assistant", content: turn.plain ?? turn.blocks.map((b) => block("assistant", b)) })
      const asked = turn.blocks.flatMap((b) => (b.type === "tool_use" ? [b.id] : []))
      if (asked.length === 0) continue
      const next = turns[i + 1]
      // A conversation that ends on the call is left as is: nothing has answered it yet.
      if (next === undefined) continue
      out.push({ role: "user", content: pairResults(asked, next) })
      i++
    } else {
      out.push({ role: "user", content: turn.plain ?? turn.blocks.map((b) => block("user", b)) })
    }
  }
  return out
}

export const toTools = (request: ChatRequest): Array<Tool> =>
  (request.tools ?? []).map((t) => ({
    name: t.name,
    ...(t.description === "" ? {} : { description: t.description }),
    input_schema: { ...t.inputSchema, type: "object" }
  }))

/** Whether the provider pins an API version that still takes temperature. */
export const acceptsSampling = (config: ProviderConfig): boolean => {
  const pinned = Object.entries(config.headers).find(([k]) => k.toLowerCase() === "anthropic-version")?.[1]
  return pinned !== undefined && pinned < SAMPLING_REMOVED_IN
}

export type AnthropicParams = MessageCreateParamsStreaming & { readonly temperature?: number }

export const toParams = (config: ProviderConfig, request: ChatRequest): AnthropicParams => {
  const tools = toTools(request)
  return {
    model: request.model === "" ? config.defaultModel : request.model,
    max_tokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
    messages: toMessages(request.messages),
    stream: true,
    ...(request.system === undefined || request.system === "" ? {} : { system: request.system }),
    ...(tools.length === 0 ? {} : { tools }),
    ...(request.temperature !== undefined && acceptsSampling(config) ? { temperature: request.temperature } : {})
  }
}
