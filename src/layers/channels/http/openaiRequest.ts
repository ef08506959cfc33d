/**
 * The request side of the OpenAI-compatible channel: the `POST /v1/chat/completions` body as
 * Schema, and the one thing anna takes from it — the newest user message, as our content blocks.
 *
 * Clients send the whole conversation every time; anna keeps the history itself (lossless memory),
 * so system, assistant, tool and developer messages in the request are ignored, and so are
 * sampling options (temperature, max_tokens, tools, …): the agent's configuration decides those.
 * Fields anna does not read are accepted and ignored, so any OpenAI client works unchanged.
 */
import { chatNameProblem } from "../../../domain/runtime/types.ts"
import { Effect, Result, Schema } from "effect"
import { sizeProblem } from "../../../domain/memory/storedSize.ts"
import type { ContentBlock } from "../../../domain/message.ts"
import type { UserMessage } from "../../../domain/runtime/types.ts"
import { ApiError } from "./openaiWire.ts"

const Maybe = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** A message of the request; only user messages are decoded further (see `UserContent`). */
const RequestMessage = Schema.Struct({
  role: Schema.String,
  content: Schema.optional(Schema.Unknown)
})

export const ChatCompletionRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(RequestMessage),
  stream: Maybe(Schema.Boolean),
  stream_options: Maybe(Schema.Struct({ include_usage: Maybe(Schema.Boolean) })),
  /** OpenAI's end-user id; anna reads it as the session name when no `X-Anna-Session` header is sent. */
  user: Maybe(Schema.String)
})
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
const ImagePart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String, detail: Maybe(Schema.String) })
})
const ContentPart = Schema.Union([TextPart, ImagePart])
const UserContent = Schema.Union([Schema.String, Schema.Array(ContentPart)])

const decodeRequest = Schema.decodeUnknownEffect(ChatCompletionRequest)
const decodeUserContent = Schema.decodeUnknownResult(UserContent)

/** One line, as OpenAI words its validation errors (Schema puts the path on a second line). */
const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, " ").trim()

/** Parses and checks the body text; malformed JSON and wrong types are 400s with OpenAI's error shape. */
export const parseChatRequest = (body: string): Effect.Effect<ChatCompletionRequest, ApiError> =>
  Effect.try({
    try: (): unknown => JSON.parse(body),
    catch: () =>
      ApiError.badRequest(
        "We could not parse the JSON body of your request. The API expects a JSON payload, but what was sent was not valid JSON."
      )
  }).pipe(
    Effect.flatMap((json) =>
      decodeRequest(json).pipe(Effect.mapError((e) => ApiError.badRequest(`Invalid request body: ${oneLine(e.message)}`)))
    )
  )

const DATA_URI = /^data:(image\/[A-Za-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)$/

/**
 * An `image_url` part as our image block: a base64 data URI or an http(s) URL. A URL never reaches the
 * provider as such: imageUrls.ts fetches it (behind the SSRF guard) or refuses it before the turn.
 */
const imageBlock = (url: string): Result.Result<ContentBlock, ApiError> => {
  const data = DATA_URI.exec(url)
  if (data !== null) {
    const [, mediaType = "", payload = ""] = data
    return Result.succeed({ type: "image", source: { type: "base64", media_type: mediaType, data: payload.replace(/\s/g, "") } })
  }
  if (/^https?:\/\//i.test(url)) return Result.succeed({ type: "image", source: { type: "url", url } })
  return Result.fail(ApiError.badRequest(
    "Invalid image_url: expected a base64 data URI (data:image/...;base64,...) or an http(s) URL.",
    "messages"
  ))
}

/**
 * The newest `user` message of the request as a UserMessage: a string stays a string (so slash
 * commands such as "/new" reach the runtime as typed), content parts become text and image blocks.
 */
export const newestUserMessage = (request: ChatCompletionRequest): Effect.Effect<UserMessage, ApiError> =>
  userMessage(request).pipe(
    // Memory refuses a message over its stored-size limit (below the body limit): say so now, as a
    // 413 the client can act on, rather than as a turn that fails after it started.
    Effect.flatMap((m) => {
      const problem = sizeProblem(m)
      return problem === undefined ? Effect.succeed(m) : Effect.fail(ApiError.messageTooLarge(problem))
    })
  )

const userMessage = (request: ChatCompletionRequest): Effect.Effect<UserMessage, ApiError> =>
  Effect.suspend((): Effect.Effect<UserMessage, ApiError> => {
    const last = request.messages.findLast((m) => m.role === "user")
    if (last === undefined) return Effect.fail(ApiError.badRequest("The request has no user message: anna answers the newest one.", "messages"))
    const content = decodeUserContent(last.content)
    if (Result.isFailure(content)) {
      return Effect.fail(ApiError.badRequest(
        `Invalid user message content (a string, or parts of type text and image_url): ${oneLine(content.failure.message)}`,
        "messages"
      ))
    }
    const value = content.success
    if (typeof value === "string") {
      return value.trim() === "" ? Effect.fail(ApiError.badRequest("The user message is empty.", "messages")) : Effect.succeed(value)
    }
    const blocks: Array<ContentBlock> = []
    for (const part of value) {
      if (part.type === "text") {
        if (part.text !== "") blocks.push({ type: "text", text: part.text })
        continue
      }
      const image = imageBlock(part.image_url.url)
      if (Result.isFailure(image)) return Effect.fail(image.failure)
      blocks.push(image.success)
    }
    return blocks.length === 0 ? Effect.fail(ApiError.badRequest("The user message is empty.", "messages")) : Effect.succeed(blocks)
  })

/** The chat (session) name: the `X-Anna-Session` header, else the body's `user` field, else "default". */
export const sessionName = (header: string | undefined, request: ChatCompletionRequest): Effect.Effect<string, ApiError> => {
  const raw = (header ?? request.user ?? "").trim()
  const name = raw === "" ? "default" : raw
  // The same rule as every chat name: no "#", which marks the conversations /new starts (so no name collides with one).
  const problem = chatNameProblem(name)
  return problem === undefined
    ? Effect.succeed(name)
    : Effect.fail(ApiError.badRequest(`Invalid session name (X-Anna-Session header or \`user\` field): ${problem}.`, header === undefined ? "user" : null))
}
