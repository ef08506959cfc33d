/**
 * The checks the Anthropic Messages API makes on a request before it answers, as far as anna's
 * requests can break them, with the service's wording. They make the fake reject what the real
 * service rejects (a misplaced tool_result, a sampling parameter under API version 2026-10-21), so a
 * layer test that passes here does not meet a 400 in production.
 */
import type { RecordedRequest } from "./script.ts"

export interface Rejection {
  readonly status: number
  readonly message: string
}

/** The API version from which temperature, top_p and top_k are rejected ("Extra inputs are not permitted"). */
export const SAMPLING_REMOVED_IN = "2026-10-21"

const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"]
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/

type Obj = Readonly<Record<string, unknown>>
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v)
const blocksOf = (content: unknown): ReadonlyArray<Obj> =>
  Array.isArray(content) ? content.filter(isObj) : []
const invalid = (message: string): Rejection => ({ status: 400, message })

const headerValue = (request: RecordedRequest, name: string): string | undefined => {
  const v = request.headers[name]
  return Array.isArray(v) ? v[0] : v
}

const checkImage = (block: Obj, at: string): Rejection | undefined => {
  const source = block["source"]
  if (!isObj(source)) return invalid(`${at}.source: Field required`)
  if (source["type"] === "url") return typeof source["url"] === "string" ? undefined : invalid(`${at}.source.url.url: Field required`)
  if (source["type"] !== "base64") return invalid(`${at}.source: Input tag '${String(source["type"])}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'`)
  if (!IMAGE_TYPES.includes(String(source["media_type"]))) {
    return invalid(`${at}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`)
  }
  return typeof source["data"] === "string" && source["data"] !== "" ? undefined : invalid(`${at}.source.base64.data: Field required`)
}

const checkBlock = (role: string, block: Obj, at: string): Rejection | undefined => {
  const type = block["type"]
  switch (type) {
    case "text":
      if (typeof block["text"] !== "string") return invalid(`${at}.text: Field required`)
      return block["text"] === "" ? invalid(`${at}: text content blocks must be non-empty`) : undefined
    case "image":
      return role === "user" ? checkImage(block, at) : invalid(`${at}.type: Input tag 'image' is not allowed in assistant messages`)
    case "tool_use":
      if (role !== "assistant") return invalid(`${at}.type: tool_use blocks are only allowed in assistant messages`)
      if (typeof block["id"] !== "string" || typeof block["name"] !== "string") return invalid(`${at}: tool_use blocks need an id and a name`)
      return isObj(block["input"]) ? undefined : invalid(`${at}.input: Input should be a valid dictionary`)
    case "tool_result": {
      if (role !== "user") return invalid(`${at}.type: tool_result blocks are only allowed in user messages`)
      if (typeof block["tool_use_id"] !== "string") return invalid(`${at}.tool_use_id: Field required`)
      const content = block["content"]
      if (content === undefined || typeof content === "string") return undefined
      const inner = blocksOf(content)
      for (let k = 0; k < inner.length; k++) {
        const b = inner[k]
        const problem = b === undefined ? undefined : checkBlock("user", b, `${at}.content.${k}`)
        if (problem !== undefined) return problem
      }
      return undefined
    }
    default:
      return invalid(`${at}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags`)
  }
}

/**
 * Every tool_use of an assistant turn needs its tool_result in the next message, before any other
 * block there; every tool_result needs its tool_use in the message just before.
 */
const checkToolPairing = (messages: ReadonlyArray<Obj>): Rejection | undefined => {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    if (message === undefined) continue
    const previous = i > 0 ? messages[i - 1] : undefined
    const asked = previous?.["role"] === "assistant"
      ? blocksOf(previous["content"]).flatMap((b) => (b["type"] === "tool_use" ? [String(b["id"])] : []))
      : []
    const blocks = blocksOf(message["content"])
    const leading: Array<string> = []
    let leadingDone = false
    for (let j = 0; j < blocks.length; j++) {
      const b = blocks[j]
      if (b?.["type"] !== "tool_result") {
        leadingDone = true
        continue
      }
      const id = String(b["tool_use_id"])
      if (!asked.includes(id)) {
        return invalid(
          `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`
        )
      }
      if (!leadingDone) leading.push(id)
    }
    const unanswered = asked.filter((id) => !leading.includes(id))
    if (unanswered.length > 0) {
      return invalid(
        `messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`
      )
    }
  }
  return undefined
}

const checkTools = (tools: unknown): Rejection | undefined => {
  if (tools === undefined) return undefined
  if (!Array.isArray(tools)) return invalid("tools: Input should be a valid list")
  for (let k = 0; k < tools.length; k++) {
    const tool: unknown = tools[k]
    if (!isObj(tool) || typeof tool["name"] !== "string" || !TOOL_NAME.test(tool["name"])) {
      return invalid(`tools.${k}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`)
    }
    const schema = tool["input_schema"]
    if (!isObj(schema)) return invalid(`tools.${k}.custom.input_schema: Field required`)
    if (schema["type"] !== "object") return invalid(`tools.${k}.custom.input_schema.type: Input should be 'object'`)
  }
  return undefined
}

/** The first reason the real service would refuse this POST /v1/messages, if any. */
export const checkMessagesRequest = (request: RecordedRequest): Rejection | undefined => {
  const body = request.body
  if (!isObj(body)) return invalid("There was an error parsing the body of your request.")
  if (typeof body["model"] !== "string" || body["model"] === "") return invalid("model: Field required")
  const maxTokens = body["max_tokens"]
  if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens)) return invalid("max_tokens: Field required")
  if (maxTokens < 1) return invalid("max_tokens: Input should be greater than or equal to 1")
  const version = headerValue(request, "anthropic-version")
  if (version === undefined || version === "") return invalid("anthropic-version: header is required")
  for (const key of ["temperature", "top_p", "top_k"]) {
    if (body[key] === undefined) continue
    if (version >= SAMPLING_REMOVED_IN) return invalid(`${key}: Extra inputs are not permitted`)
    if (key === "temperature" && (typeof body[key] !== "number" || body[key] < 0 || body[key] > 1)) {
      return invalid("temperature: Input should be less than or equal to 1")
    }
  }
  const system = body["system"]
  if (system !== undefined && typeof system !== "string" && !Array.isArray(system)) return invalid("system: Input should be a valid string")
  const messages = body["messages"]
  if (!Array.isArray(messages)) return invalid("messages: Field required")
  if (messages.length === 0) return invalid("messages: at least one message is required")
  const objs = messages.filter(isObj)
  if (objs.length !== messages.length) return invalid("messages: Input should be a valid dictionary")
  for (let i = 0; i < objs.length; i++) {
    const m = objs[i]
    if (m === undefined) continue
    const role = m["role"]
    if (role !== "user" && role !== "assistant") return invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`)
    const content = m["content"]
    const last = i === objs.length - 1
    if (typeof content === "string") {
      if (content === "" && !(last && role === "assistant")) {
        return invalid(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`)
      }
      continue
    }
    if (!Array.isArray(content)) return invalid(`messages.${i}.content: Input should be a valid string or list`)
    if (content.length === 0 && !(last && role === "assistant")) {
      return invalid(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`)
    }
    const blocks = blocksOf(content)
    for (let j = 0; j < blocks.length; j++) {
      const b = blocks[j]
      const problem = b === undefined ? undefined : checkBlock(role, b, `messages.${i}.content.${j}`)
      if (problem !== undefined) return problem
    }
  }
  return checkToolPairing(objs) ?? checkTools(body["tools"])
}
