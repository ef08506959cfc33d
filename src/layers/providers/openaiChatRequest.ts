/**
 * Our request (Anthropic-style blocks, `domain/message.ts`) → an OpenAI Chat Completions request
 * (pure). Owns the shape rules that API imposes:
 *
 * - the system prompt is the first message, `{role: "system"}`;
 * - images are `image_url` parts (base64 as a `data:` URI); only user messages may carry them;
 * - an assistant's tool_use blocks are its `tool_calls`, arguments as JSON text;
 * - every tool result is its own `{role: "tool", tool_call_id}` message with text content, and all
 *   tool messages answering one assistant turn must follow it directly; images a tool returned (and
 *   any other user content sent with the results) go into one user message after them.
 */
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool
} from "openai/resources/chat/completions"
import { splitToolResults } from "../../domain/model/collect.ts"
import type { ChatRequest, ProviderConfig } from "../../domain/model/types.ts"
import type { ContentBlock, ImageBlock, Message, ToolResultBlock } from "../../domain/message.ts"
import type { ToolDefinition } from "../../domain/tool.ts"

export const DEFAULT_MAX_TOKENS = 4096
/** The SDK's own default, given explicitly so the SDK never falls back to `OPENAI_BASE_URL`. */
export const OPENAI_BASE_URL = "https://api.openai.com/v1"

/**
 * OpenAI's own endpoint wants `max_completion_tokens` (its reasoning models reject the deprecated
 * `max_tokens`); OpenAI-compatible servers (Ollama, vLLM, llama.cpp) all understand `max_tokens`,
 * and not all of them know the newer name, which they would silently ignore.
 */
export const usesMaxCompletionTokens = (baseUrl: string): boolean => {
  if (baseUrl.trim() === "") return true
  try {
    return new URL(baseUrl).hostname === "api.openai.com"
  } catch {
    return false
  }
}

export const toChatParams = (config: ProviderConfig, request: ChatRequest): ChatCompletionCreateParamsStreaming => {
  const maxTokens = request.maxTokens ?? DEFAULT_MAX_TOKENS
  const tools = request.tools ?? []
  return {
    model: request.model === "" ? config.defaultModel : request.model,
    messages: toMessages(request.system, request.messages),
    stream: true,
    // Without it a streamed answer carries no usage at all.
    stream_options: { include_usage: true },
    ...(usesMaxCompletionTokens(config.baseUrl) ? { max_completion_tokens: maxTokens } : { max_tokens: maxTokens }),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(tools.length === 0 ? {} : { tools: tools.map(toTool) })
  }
}

export const toTool = (tool: ToolDefinition): ChatCompletionTool => ({
  type: "function",
  function: { name: tool.name, description: tool.description, parameters: { ...tool.inputSchema } }
})

export const imageUrl = (image: ImageBlock): string =>
  image.source.type === "base64" ? `data:${image.source.media_type};base64,${image.source.data}` : image.source.url

/** A block that the target message cannot carry, as text, so the model still sees that it was there. */
const blockAsText = (block: ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
      return "[image]"
    case "tool_use":
      return `[tool call ${block.name}] ${JSON.stringify(block.input)}`
    case "tool_result":
      return `[tool result ${block.tool_use_id}] ${resultText(block)}`
  }
}

const userParts = (blocks: ReadonlyArray<ContentBlock>): Array<ChatCompletionContentPart> =>
  blocks.map((b): ChatCompletionContentPart =>
    b.type === "image" ? { type: "image_url", image_url: { url: imageUrl(b) } } : { type: "text", text: blockAsText(b) }
  )

const resultText = (result: ToolResultBlock): string =>
  typeof result.content === "string"
    ? result.content
    : result.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n")

const resultImages = (result: ToolResultBlock): ReadonlyArray<ImageBlock> =>
  typeof result.content === "string" ? [] : result.content.flatMap((b) => (b.type === "image" ? [b] : []))

/** One tool message; its images, which a tool message cannot hold, come back to be sent after. */
const toToolMessage = (result: ToolResultBlock): { message: ChatCompletionMessageParam; carried: Array<ChatCompletionContentPart> } => {
  const images = resultImages(result)
  const text = resultText(result)
  // The API has no error flag on tool results: say it in words the model reads.
  const body = result.is_error === true ? `Error: ${text}` : text
  const note = images.length === 0 ? "" : `${body === "" ? "" : "\n"}(${images.length} image(s) follow in the next user message)`
  return {
    message: { role: "tool", tool_call_id: result.tool_use_id, content: body + note },
    carried: images.length === 0
      ? []
      : [{ type: "text", text: `Image(s) returned by tool call ${result.tool_use_id}:` }, ...userParts(images)]
  }
}

const toAssistant = (content: Message["content"]): ChatCompletionAssistantMessageParam => {
  if (typeof content === "string") return { role: "assistant", content }
  const text = content.flatMap((b) => (b.type === "tool_use" ? [] : [blockAsText(b)])).join("")
  const calls = content.flatMap((b) =>
    b.type === "tool_use"
      ? [{ id: b.id, type: "function" as const, function: { name: b.name, arguments: JSON.stringify(b.input) } }]
      : []
  )
  if (calls.length === 0) return { role: "assistant", content: text }
  // An assistant turn made only of tool calls has null content, as the API itself returns it.
  return { role: "assistant", content: text === "" ? null : text, tool_calls: calls }
}

export const toMessages = (system: string | undefined, messages: ReadonlyArray<Message>): Array<ChatCompletionMessageParam> => {
  const out: Array<ChatCompletionMessageParam> = []
  if (system !== undefined && system !== "") out.push({ role: "system", content: system })
  // User content that arrived with tool results waits until every tool message of the turn is out.
  let carried: Array<ChatCompletionContentPart> = []
  const flush = () => {
    if (carried.length > 0) out.push({ role: "user", content: carried })
    carried = []
  }
  for (const message of messages) {
    if (message.role === "assistant") {
      flush()
      out.push(toAssistant(message.content))
      continue
    }
    const { results, rest } = splitToolResults(message.content)
    if (results.length === 0) {
      flush()
      if (typeof message.content === "string") out.push({ role: "user", content: message.content })
      else if (rest.length > 0) out.push({ role: "user", content: userParts(rest) })
      continue
    }
    for (const result of results) {
      const { message: toolMessage, carried: more } = toToolMessage(result)
      out.push(toolMessage)
      carried.push(...more)
    }
    carried.push(...userParts(rest))
  }
  flush()
  return out
}
