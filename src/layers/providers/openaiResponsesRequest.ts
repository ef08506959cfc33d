/**
 * ChatRequest → OpenAI Responses API request body (pure). Stateless by design: the whole
 * conversation goes in `input` every time, `store: false`, never `previous_response_id`, because
 * memory (not the provider) owns the conversation and may compact it between turns.
 */
import type {
  FunctionTool,
  ResponseCreateParamsStreaming,
  ResponseInput,
  ResponseInputContent,
  ResponseInputItem,
  ResponseOutputText
} from "openai/resources/responses/responses"
import { splitToolResults } from "../../domain/model/collect.ts"
import type { ChatRequest } from "../../domain/model/types.ts"
import type { ContentBlock, ImageBlock, Message, ToolResultBlock } from "../../domain/message.ts"
import type { ToolDefinition } from "../../domain/tool.ts"

export const DEFAULT_MAX_OUTPUT_TOKENS = 4096

/**
 * An assistant turn replayed as input. The SDK only types assistant messages the way the API returns
 * them (with `id` and `status`); the service takes them without, and with `store: false` an id must
 * not be sent at all: the service would look the item up and answer 404.
 */
interface AssistantMessage {
  readonly type: "message"
  readonly role: "assistant"
  readonly content: ReadonlyArray<ResponseOutputText>
}

type InputItem = ResponseInputItem | AssistantMessage

const imagePart = (image: ImageBlock): ResponseInputContent => ({
  type: "input_image",
  detail: "auto",
  image_url: image.source.type === "base64" ? `data:${image.source.media_type};base64,${image.source.data}` : image.source.url
})

const userParts = (blocks: ReadonlyArray<ContentBlock>): Array<ResponseInputContent> =>
  blocks.flatMap((b): Array<ResponseInputContent> =>
    b.type === "text" ? (b.text === "" ? [] : [{ type: "input_text", text: b.text }]) : b.type === "image" ? [imagePart(b)] : []
  )

const userMessage = (content: Array<ResponseInputContent>): ResponseInputItem => ({ type: "message", role: "user", content })

const resultText = (result: ToolResultBlock): string => {
  const text = typeof result.content === "string"
    ? result.content
    : result.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n")
  // function_call_output has no error flag: say it in the text so the model knows the call failed.
  return result.is_error === true ? `Error: ${text}` : text
}

const resultImages = (result: ToolResultBlock): ReadonlyArray<ImageBlock> =>
  typeof result.content === "string" ? [] : result.content.flatMap((b) => (b.type === "image" ? [b] : []))

/** Our messages as Responses input items, in order. */
export const toInputItems = (messages: ReadonlyArray<Message>): ResponseInput => {
  const items: Array<InputItem> = []
  // function_call_output takes only text: images a tool returned follow the run of outputs in a user
  // message (inserting it between two outputs would split the answers to one assistant turn).
  let toolImages: Array<ResponseInputContent> = []
  const push = (item: InputItem) => {
    if (item.type !== "function_call_output" && toolImages.length > 0) {
      items.push(userMessage(toolImages))
      toolImages = []
    }
    items.push(item)
  }
  for (const message of messages) {
    if (message.role === "assistant") {
      let text: Array<ResponseOutputText> = []
      const flushText = () => {
        if (text.length > 0) push({ type: "message", role: "assistant", content: text })
        text = []
      }
      const blocks = typeof message.content === "string" ? [{ type: "text" as const, text: message.content }] : message.content
      for (const b of blocks) {
        if (b.type === "text" && b.text !== "") text.push({ type: "output_text", text: b.text, annotations: [] })
        if (b.type === "tool_use") {
          flushText()
          push({ type: "function_call", call_id: b.id, name: b.name, arguments: JSON.stringify(b.input) })
        }
        // Images and results have no place in an assistant output message; our model never puts them there.
      }
      flushText()
      continue
    }
    const { results, rest } = splitToolResults(message.content)
    for (const result of results) {
      const images = resultImages(result)
      const text = resultText(result)
      push({
        type: "function_call_output",
        call_id: result.tool_use_id,
        output: text === "" && images.length > 0 ? "(the images follow in the next message)" : text
      })
      if (images.length > 0) {
        toolImages.push({ type: "input_text", text: `Images returned by tool call ${result.tool_use_id}:` }, ...images.map(imagePart))
      }
    }
    const parts = userParts(rest)
    if (parts.length > 0) push(userMessage(parts))
  }
  if (toolImages.length > 0) items.push(userMessage(toolImages))
  return items as ResponseInput
}

export const toFunctionTool = (tool: ToolDefinition): FunctionTool => ({
  type: "function",
  name: tool.name,
  description: tool.description,
  parameters: { ...tool.inputSchema },
  // Our schemas are written for every provider; strict mode would demand additionalProperties: false
  // and every property required, which they do not promise.
  strict: false
})

export const toResponsesParams = (request: ChatRequest, defaultModel: string): ResponseCreateParamsStreaming => ({
  model: request.model === "" ? defaultModel : request.model,
  input: toInputItems(request.messages),
  ...(request.system === undefined || request.system === "" ? {} : { instructions: request.system }),
  ...(request.tools === undefined || request.tools.length === 0 ? {} : { tools: request.tools.map(toFunctionTool) }),
  max_output_tokens: request.maxTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
  ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
  store: false,
  stream: true
})
