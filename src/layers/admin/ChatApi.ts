/**
 * Handlers of the admin API's `chat` group (src/domain/admin/groups/chat.ts): the web console's
 * chat, a channel like the others. The target is `{platform: "web", externalUserId: <user id>,
 * userId: <user id>, chatId: <session name>, agentId}` — the principal already is the anna user, so
 * (as in the HTTP channel) the platform's external id IS the user id. It goes through
 * `Runtime.resolve` (the agent's access policy: AccessDenied → 403) and `Runtime.send` (slash
 * commands answered as on every channel; turns through the SessionPool, stored in memory).
 *
 * The fold of a turn's events is the other channels': text deltas as they come, notices, status
 * notices (compaction ran) apart, tool activity not shown, the `done` last; a turn the runtime could
 * not answer (`done` with stopReason "unavailable") is preceded by an `error` event with its notices.
 *
 * Images (data: URLs, checked by src/domain/admin/chatImages.ts) go to the model as every channel
 * gives them (shared/images.ts `withImages`: image blocks, then the text). No model is asked whether it
 * sees images — no channel does: a model that cannot take them answers with an error, which reaches
 * the user as this turn's `error` event, as it reaches the other channels' users as a notice.
 * `bodyLimitLayer` caps the request body before it is read whole; the message as memory keeps it is
 * measured as the HTTP channel measures it (413 either way).
 */
import { ByteSize, Effect, Layer, Option, Stream } from "effect"
import { HttpIncomingMessage, HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { EVERYONE, mayUse } from "../../domain/access/policy.ts"
import { AdminApi } from "../../domain/admin/api.ts"
import { MAX_CHAT_BODY_BYTES, mib, parseImageDataUrl } from "../../domain/admin/chatImages.ts"
import { type ChatEvent, ChatBodyLimit, DEFAULT_WEB_CHAT, WEB_PLATFORM } from "../../domain/admin/groups/chat.ts"
import { BadRequest, CurrentPrincipal, Forbidden, NotFound, TooLarge } from "../../domain/admin/security.ts"
import { sizeProblem } from "../../domain/memory/storedSize.ts"
import type { ImageBlock } from "../../domain/message.ts"
import { chatNameProblem, type TurnEvent } from "../../domain/runtime/types.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { Runtime } from "../../services/Runtime.ts"
import { withImages } from "../channels/shared/images.ts"
import { storage } from "./SessionsApi.ts"
import * as Tracing from "../../domain/observability/tracing.ts"

const bodyTooLarge = () => TooLarge.of(`the request is larger than ${mib(MAX_CHAT_BODY_BYTES)} MiB; send fewer or smaller images`, "request_too_large")

/** A body read past the limit: an HttpServerError whose reason says so (the API's JSON decoding makes it a defect). */
const isBodyTooLarge = (defect: unknown): boolean => {
  const reason = typeof defect === "object" && defect !== null && "reason" in defect ? defect.reason : undefined
  return typeof reason === "object" && reason !== null && "_tag" in reason && reason._tag === "RequestParseError" &&
    "reason" in reason && reason.reason === "BodyTooLarge"
}

/** `ChatBodyLimit`: a declared length over the limit is refused unread; an undeclared one is cut at it. */
export const bodyLimitLayer = Layer.succeed(ChatBodyLimit, (httpEffect) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (Number(request.headers["content-length"] ?? 0) > MAX_CHAT_BODY_BYTES) return yield* bodyTooLarge()
    return yield* httpEffect.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_CHAT_BODY_BYTES)),
      Effect.catchDefect((defect) => (isBodyTooLarge(defect) ? Effect.fail(bodyTooLarge()) : Effect.die(defect)))
    )
  }))

/** The message's images as image blocks, or a 400 naming the one refused and why. */
const imageBlocks = (urls: ReadonlyArray<string>) =>
  Effect.forEach(urls, (url, i) => {
    const image = parseImageDataUrl(url)
    return typeof image === "string"
      ? Effect.fail(BadRequest.of(`image ${i + 1}: ${image}`, "invalid_image"))
      : Effect.succeed<ImageBlock>({ type: "image", source: { type: "base64", media_type: image.mediaType, data: image.data } })
  })

/** A turn's events as the web chat shows them (see the header); `notices` collects this turn's. */
export const foldEvent = (notices: Array<string>) => (e: TurnEvent): ReadonlyArray<ChatEvent> => {
  switch (e.type) {
    case "text":
      return e.text === "" ? [] : [{ type: "text", text: e.text }]
    case "notice":
      if (e.status === true) return [{ type: "status", text: e.text }]
      notices.push(e.text)
      return [{ type: "notice", text: e.text }]
    case "done": {
      const done: ChatEvent = {
        type: "done",
        stopReason: e.stopReason,
        usage: e.usage,
        modelCalls: e.modelCalls,
        toolCalls: e.toolCalls
      }
      if (e.stopReason !== "unavailable") return [done]
      const message = notices.length === 0 ? "The agent could not answer this turn." : notices.join(" ")
      return [{ type: "error", message, kind: e.error?.kind ?? null }, done]
    }
    // Tool activity is the agent's own business (as on every channel); pickers have no place here:
    // the command's text lists the same choices, numbered.
    case "tool_start":
    case "tool_end":
    case "choices":
      return []
    // The turn started over on another gateway node (restart.ts): the page drops the answer so far.
    case "restart":
      notices.length = 0
      return [{ type: "restart" }]
  }
}

export const layer = HttpApiBuilder.group(AdminApi, "chat", (handlers) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const agents = yield* AgentStore
    const config = yield* ConfigStore

    return handlers
      .handle("send", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const chatId = payload.session?.trim() || DEFAULT_WEB_CHAT
          const problem = chatNameProblem(chatId)
          if (problem !== undefined) return yield* BadRequest.of(`session: ${problem}`)
          const images = yield* imageBlocks(payload.images ?? [])
          if (payload.message.trim() === "" && images.length === 0) return yield* BadRequest.of("message: must not be empty")
          const message = images.length === 0 ? payload.message : withImages(payload.message, images)
          // Memory refuses a message over its stored-size limit: said now, as the HTTP channel says it.
          const tooBig = sizeProblem(message)
          if (tooBig !== undefined) return yield* TooLarge.of(`the message is too large to keep (${tooBig}); send fewer or smaller images`, "message_too_large")
          const chat = yield* runtime.resolve({
            platform: WEB_PLATFORM,
            externalUserId: principal.userId,
            userId: principal.userId,
            chatId,
            agentId: payload.agent
          }).pipe(Effect.catchTags({
            NoAgent: (e) => Effect.fail(NotFound.of(`no agent ${payload.agent} to talk to: ${e.reason}`, "agent_not_found")),
            AccessDenied: (e) => Effect.fail(Forbidden.of(e.reason, "access_denied")),
            StorageError: (e) => storage(Effect.fail(e))
          }))
          const notices: Array<string> = []
          const start: ChatEvent = { type: "start", sessionKey: chat.sessionKey, agentId: chat.agentId, chat: chat.chatId }
          // The turn's span continues this request's.
          const parentSpan = yield* Tracing.currentSpan
          return Stream.concat(
            Stream.succeed(start),
            runtime.send(chat, message, { parentSpan }).pipe(Stream.flatMap((e) => Stream.fromIterable(foldEvent(notices)(e))))
          )
        }))
      .handle("agents", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const user = Option.getOrUndefined(yield* config.getUser(principal.userId).pipe(storage))
          const subject = { id: principal.userId, attributes: user?.attributes ?? {} }
          const open = (yield* agents.list.pipe(storage)).filter((a) => a.enabled && mayUse(a.access ?? EVERYONE, subject))
          // The agent a message naming none would reach: what the Runtime's routing picks for this user.
          const fallback = yield* runtime.resolve({ platform: WEB_PLATFORM, externalUserId: principal.userId, userId: principal.userId }).pipe(
            Effect.map((c) => c.agentId),
            Effect.orElseSucceed(() => "")
          )
          return open.map((a) => ({ id: a.id, name: a.name, isDefault: a.id === fallback }))
        }))
  }))
