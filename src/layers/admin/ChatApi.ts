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
 */
import { Effect, Option, Stream } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { EVERYONE, mayUse } from "../../domain/access/policy.ts"
import { AdminApi } from "../../domain/admin/api.ts"
import { type ChatEvent, DEFAULT_WEB_CHAT, WEB_PLATFORM } from "../../domain/admin/groups/chat.ts"
import { BadRequest, CurrentPrincipal, Forbidden, NotFound } from "../../domain/admin/security.ts"
import { chatNameProblem, type TurnEvent } from "../../domain/runtime/types.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { Runtime } from "../../services/Runtime.ts"
import { storage } from "./SessionsApi.ts"

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
          if (payload.message.trim() === "") return yield* BadRequest.of("message: must not be empty")
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
          return Stream.concat(
            Stream.succeed(start),
            runtime.send(chat, payload.message).pipe(Stream.flatMap((e) => Stream.fromIterable(foldEvent(notices)(e))))
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
