/**
 * The response side of the OpenAI-compatible channel, shaped as OpenAI's API sends it so that the
 * official SDKs (and every client built on them) read it unchanged:
 *
 * - errors: `{"error":{"message","type","param","code"}}` with OpenAI's types and codes;
 * - `chat.completion` objects, and `chat.completion.chunk` SSE frames: a first chunk with the
 *   role, one chunk per text delta, a last chunk with an empty delta and `finish_reason`, a usage
 *   chunk (`choices: []`) when `stream_options.include_usage` asked for it (every other chunk then
 *   carries `usage: null`), then `data: [DONE]`.
 *
 * What a turn streams becomes the assistant's text as follows (the same in both modes):
 * - `text` events are the answer;
 * - `notice` events about this answer (sandbox unavailable, stopped, the turn limit, …) are shown as a
 *   line of their own in brackets, `[sandbox unavailable …]`, because an OpenAI client has no other
 *   place a user would see them;
 * - status notices (`status: true`: compaction ran) are never in the message content, which clients
 *   parse: a non-streamed completion lists them in an extra top-level field,
 *   `"anna": {"status": ["compacted the conversation: 2741 → 1917 tokens"]}` (only when there are any;
 *   OpenAI's SDKs ignore unknown fields), and a stream sends each as an SSE comment line,
 *   `: anna-status compacted the conversation: …`, which every SSE parser skips. Nor are they part of
 *   a failed turn's error message;
 * - tool activity is not shown: the tools are anna's own and run inside the turn, so they are not
 *   OpenAI `tool_calls` (which would ask the client to run them), and text lines about them would
 *   pollute the answer a program reads;
 * - a turn the runtime could not answer (`done` with stopReason "unavailable": provider rate limit,
 *   timeout, context overflow, provider or sandbox down, the turn's deadline) is an error, not a
 *   completion: the status and error body of `ApiError.turnFailed`, with the notices as its message
 *   (also when streaming, if it failed before any output: the channel holds the 200 until then);
 *   in a stream whose answer had started, the 200 is out, so it ends with one
 *   `data: {"error":{"message","type","param","code"}}` frame (what OpenAI sends mid-stream; its
 *   SDKs throw an APIError on it) and then `data: [DONE]`, with no finish chunk;
 * - a turn still running when the server shuts down (after its grace) is an error too: 503
 *   `service_unavailable`, `ApiError.shuttingDown` (on a `shutdown` event, see `WireEvent`), or that
 *   error frame and `[DONE]` in a stream already answering. An `/abort` the user asked for is not an
 *   error: its completion says `[stopped]`;
 * - `finish_reason` is "length" when the model stopped at its output cap, "stop" otherwise;
 *   usage comes from the turn's `done` event (prompt = input tokens as the provider reports them,
 *   cached reads under `prompt_tokens_details.cached_tokens`).
 */
import { Schema, Stream } from "effect"
import type { Usage } from "../../../domain/model/types.ts"
import type { TurnError, TurnEvent } from "../../../domain/runtime/types.ts"

/** A request the API refuses, with the status and OpenAI error fields to answer it with. */
export class ApiError extends Schema.TaggedError<ApiError>()("ApiError", {
  status: Schema.Number,
  errorType: Schema.String,
  code: Schema.NullOr(Schema.String),
  param: Schema.NullOr(Schema.String),
  reason: Schema.String,
  /** Sent as `Retry-After` (seconds). */
  retryAfterSeconds: Schema.optionalKey(Schema.Number)
}) {
  override get message() {
    return this.reason
  }

  static badRequest(reason: string, param: string | null = null): ApiError {
    return new ApiError({ status: 400, errorType: "invalid_request_error", code: null, param, reason })
  }

  /** An `image_url` anna will not or could not fetch (OpenAI's code for an image it could not download). */
  static invalidImageUrl(reason: string): ApiError {
    return new ApiError({ status: 400, errorType: "invalid_request_error", code: "invalid_image_url", param: "messages", reason })
  }

  static unauthorized(reason: string): ApiError {
    return new ApiError({ status: 401, errorType: "invalid_request_error", code: "invalid_api_key", param: null, reason })
  }

  /** The user may not use this agent (its access policy). */
  static forbidden(reason: string): ApiError {
    return new ApiError({ status: 403, errorType: "permission_error", code: "access_denied", param: "model", reason })
  }

  static modelNotFound(model: string, detail?: string): ApiError {
    return new ApiError({
      status: 404,
      errorType: "invalid_request_error",
      code: "model_not_found",
      param: "model",
      reason: `The model \`${model}\` does not exist or you do not have access to it.${detail === undefined ? "" : ` (${detail})`}`
    })
  }

  static tooLarge(limitBytes: number): ApiError {
    return new ApiError({
      status: 413,
      errorType: "invalid_request_error",
      code: "request_too_large",
      param: null,
      reason: `The request body exceeds the limit of ${Math.round(limitBytes / 1024 / 1024)} MiB.`
    })
  }

  /** The newest user message is larger than memory stores as one message. */
  static messageTooLarge(problem: string): ApiError {
    return new ApiError({
      status: 413,
      errorType: "invalid_request_error",
      code: "message_too_large",
      param: "messages",
      reason: `The user message is too large to keep: ${problem}.`
    })
  }

  static notFound(method: string, path: string): ApiError {
    return new ApiError({ status: 404, errorType: "invalid_request_error", code: null, param: null, reason: `Invalid URL (${method} ${path})` })
  }

  /** The server shut down while the turn ran (the gateway stopping, or the channel restarting). */
  /** An `Idempotency-Key` already used with another request body (http/idempotency.ts). */
  static idempotencyKeyReused(): ApiError {
    return new ApiError({
      status: 422,
      errorType: "invalid_request_error",
      code: "idempotency_key_reused",
      param: null,
      reason: "This Idempotency-Key was used with another request (a key names one request); send a new key for a new request."
    })
  }

  /** The request with this `Idempotency-Key` is still being answered. */
  static idempotencyKeyInUse(): ApiError {
    return new ApiError({
      status: 409,
      errorType: "invalid_request_error",
      code: "idempotency_key_in_use",
      param: null,
      reason: "The request with this Idempotency-Key is still being answered; retry with the same key to get its answer.",
      retryAfterSeconds: 5
    })
  }

  static shuttingDown(): ApiError {
    return new ApiError({
      status: 503,
      errorType: "server_error",
      code: "service_unavailable",
      param: null,
      reason: "the gateway is shutting down (or restarting the HTTP channel); the answer was cut off before the turn ended"
    })
  }

  static server(reason: string): ApiError {
    return new ApiError({ status: 500, errorType: "server_error", code: null, param: null, reason })
  }

  /**
   * A turn that failed, as OpenAI would answer it: 429 (with Retry-After when the provider gave
   * one), 504 for a provider timeout or the turn's deadline, 400 `context_length_exceeded`, 502
   * when the provider refused anna's own request or key (nothing the client can fix), 503 otherwise.
   */
  static turnFailed(error: TurnError | undefined, reason: string): ApiError {
    const server = (status: number, code: string) => new ApiError({ status, errorType: "server_error", code, param: null, reason })
    switch (error?.kind) {
      case "rate_limit":
        return new ApiError({
          status: 429,
          errorType: "requests",
          code: "rate_limit_exceeded",
          param: null,
          reason,
          ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds })
        })
      case "timeout":
        return server(504, "timeout")
      case "too_large":
        return new ApiError({ status: 400, errorType: "invalid_request_error", code: "context_length_exceeded", param: "messages", reason })
      case "auth":
        return server(502, "upstream_auth_failed")
      case "invalid":
        return server(502, "upstream_invalid_request")
      default:
        return server(503, "service_unavailable")
    }
  }
}

export const errorBody = (e: ApiError) => ({
  error: { message: e.reason, type: e.errorType, param: e.param, code: e.code }
})

type DoneEvent = Extract<TurnEvent, { type: "done" }>

/** The server is shutting down and the turn had its grace: the answer ends now, with an error. */
export interface ShutdownEvent {
  readonly type: "shutdown"
}
export const SHUTDOWN: ShutdownEvent = { type: "shutdown" }

/** What the channel reads: a turn's events, maybe cut by a `shutdown` (the first of it or `done` ends the turn). */
export type WireEvent = TurnEvent | ShutdownEvent
export type FinishReason = "stop" | "length"

/** What every object of one completion shares. */
export interface CompletionMeta {
  readonly id: string
  /** Seconds since the epoch. */
  readonly created: number
  /** The agent id the client asked for. */
  readonly model: string
}

/** The turn could not be answered: the runtime said so with a `done` of stopReason "unavailable". */
export const failedTurn = (done: DoneEvent | undefined, notices: ReadonlyArray<string>): ApiError | undefined =>
  done?.stopReason !== "unavailable"
    ? undefined
    : ApiError.turnFailed(done.error, notices.length === 0 ? "The agent could not answer this turn." : notices.join(" "))

export const finishReasonOf = (done: DoneEvent | undefined): FinishReason => done?.stopReason === "max_tokens" ? "length" : "stop"

export const usageBody = (usage: Usage | undefined) => {
  const prompt = usage?.inputTokens ?? 0
  const completion = usage?.outputTokens ?? 0
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: usage?.cacheReadTokens ?? 0 }
  }
}

// ---------------------------------------------------------------------------------------------
// Turn events → assistant text

export interface RenderState {
  /** The last character sent ('' before any). */
  readonly last: string
  /** A notice line was the last thing sent, so text continues on a new line. */
  readonly afterNotice: boolean
}

export const initialRender: RenderState = { last: "", afterNotice: false }

/** The text one event adds to the answer ('' for events a client does not see, status notices included). */
export const renderEvent = (state: RenderState, event: WireEvent): readonly [RenderState, string] => {
  switch (event.type) {
    case "text": {
      if (event.text === "") return [state, ""]
      const out = (state.afterNotice && !event.text.startsWith("\n") ? "\n" : "") + event.text
      return [{ last: out.slice(-1), afterNotice: false }, out]
    }
    case "notice": {
      if (event.status === true) return [state, ""]
      const out = (state.last === "" || state.last === "\n" ? "" : "\n") + `[${event.text}]`
      return [{ last: "]", afterNotice: true }, out]
    }
    default:
      return [state, ""]
  }
}

export interface Collected {
  readonly content: string
  readonly done: DoneEvent | undefined
  /** Cut by the gateway's shutdown before the turn was done. */
  readonly shutdown: boolean
  /** The notices' texts (status notices aside), for the error message of a failed turn. */
  readonly notices: ReadonlyArray<string>
  /** The status notices' texts (compaction ran), for the completion's `anna.status`. */
  readonly status: ReadonlyArray<string>
}

interface CollectState extends Collected {
  readonly render: RenderState
}

const noticesAfter = (notices: ReadonlyArray<string>, event: WireEvent): ReadonlyArray<string> =>
  event.type === "notice" && event.status !== true ? [...notices, event.text] : notices

const statusAfter = (status: ReadonlyArray<string>, event: WireEvent): ReadonlyArray<string> =>
  event.type === "notice" && event.status === true ? [...status, event.text] : status

/** The texts of the notices among `events` that belong in a failed turn's error message (not status). */
export const errorNotices = (events: ReadonlyArray<WireEvent>): ReadonlyArray<string> =>
  events.reduce(noticesAfter, [] as ReadonlyArray<string>)

/** The turn is over: done, or cut by the shutdown (whichever came first). */
const ended = (s: { readonly done: DoneEvent | undefined; readonly shutdown: boolean }) => s.done !== undefined || s.shutdown

const collectStep = (s: CollectState, event: WireEvent): CollectState => {
  if (event.type === "done" || event.type === "shutdown") {
    if (ended(s)) return s
    return event.type === "done" ? { ...s, done: event } : { ...s, shutdown: true }
  }
  const [render, delta] = renderEvent(s.render, event)
  return { ...s, render, content: s.content + delta, notices: noticesAfter(s.notices, event), status: statusAfter(s.status, event) }
}

/** Runs a turn to its end and keeps what a non-streaming answer needs. */
export const collectTurn = (events: Stream.Stream<WireEvent>) =>
  Stream.runFold(
    events,
    (): CollectState => ({ render: initialRender, content: "", done: undefined, shutdown: false, notices: [], status: [] }),
    collectStep
  )

/** The error that answers a turn instead of a completion, if any (the shutdown, or a failed turn). */
export const turnError = (s: Pick<Collected, "done" | "shutdown" | "notices">): ApiError | undefined =>
  s.shutdown ? ApiError.shuttingDown() : failedTurn(s.done, s.notices)

export const completionBody = (meta: CompletionMeta, collected: Collected) => ({
  id: meta.id,
  object: "chat.completion",
  created: meta.created,
  model: meta.model,
  choices: [{
    index: 0,
    message: { role: "assistant", content: collected.content, refusal: null, annotations: [] },
    logprobs: null,
    finish_reason: finishReasonOf(collected.done)
  }],
  usage: usageBody(collected.done?.usage),
  system_fingerprint: null,
  ...(collected.status.length === 0 ? {} : { anna: { status: collected.status } })
})

// ---------------------------------------------------------------------------------------------
// Turn events → SSE frames

const frame = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`
export const DONE_FRAME = "data: [DONE]\n\n"
/** A status notice as an SSE comment (one line: a line break would end the comment and start a field). */
export const statusComment = (text: string): string => `: anna-status ${text.replace(/[\r\n]+/g, " ")}\n\n`

const chunk = (meta: CompletionMeta, includeUsage: boolean, choices: ReadonlyArray<unknown>, usage: unknown = null) => ({
  id: meta.id,
  object: "chat.completion.chunk",
  created: meta.created,
  model: meta.model,
  system_fingerprint: null,
  choices,
  ...(includeUsage ? { usage } : {})
})

const choice = (delta: Record<string, unknown>, finish: FinishReason | null = null) => ({
  index: 0,
  delta,
  logprobs: null,
  finish_reason: finish
})

interface SseState {
  readonly render: RenderState
  readonly done: DoneEvent | undefined
  readonly shutdown: boolean
  readonly notices: ReadonlyArray<string>
}

/** The SSE frames of a streamed completion, one per turn event that shows, ending with `[DONE]`. */
export const sseFrames = (meta: CompletionMeta, includeUsage: boolean) => (events: Stream.Stream<WireEvent>): Stream.Stream<string> =>
  Stream.concat(
    Stream.succeed(frame(chunk(meta, includeUsage, [choice({ role: "assistant", content: "", refusal: null })]))),
    events.pipe(
      Stream.mapAccum(
        (): SseState => ({ render: initialRender, done: undefined, shutdown: false, notices: [] }),
        (s, event): readonly [SseState, ReadonlyArray<string>] => {
          if (event.type === "done" || event.type === "shutdown") {
            if (ended(s)) return [s, []]
            return [event.type === "done" ? { ...s, done: event } : { ...s, shutdown: true }, []]
          }
          if (event.type === "notice" && event.status === true) return [s, [statusComment(event.text)]]
          const [render, delta] = renderEvent(s.render, event)
          const next = { ...s, render, notices: noticesAfter(s.notices, event) }
          return [next, delta === "" ? [] : [frame(chunk(meta, includeUsage, [choice({ content: delta })]))]]
        },
        {
          onHalt: (s) => {
            const failed = turnError(s)
            // The 200 is already out: say it as OpenAI does mid-stream (the SDKs throw on this frame).
            return failed !== undefined ? [frame(errorBody(failed)), DONE_FRAME] : [
            frame(chunk(meta, includeUsage, [choice({}, finishReasonOf(s.done))])),
            ...(includeUsage ? [frame(chunk(meta, includeUsage, [], usageBody(s.done?.usage)))] : []),
            DONE_FRAME
          ]
          }
        }
      )
    )
  )
