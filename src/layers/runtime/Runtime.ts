/**
 * Runtime: routing (seed 001) and slash commands, over the SessionPool that runs the turns.
 *
 * - `resolve` finds (or creates) the user behind a platform identity (on the terminal's first contact,
 *   the existing user of the OS user's name: ChatTarget.firstContactUser) and picks the agent: the one
 *   the channel names, else the group's binding (in a group) or the agent picked for this chat with
 *   /agent (elsewhere), else the user's default, else the first enabled agent; the chat's current
 *   context (moved on by /new) makes the session key.
 * - `send` answers slash commands (/new, /compact, /abort, /whoami, /model, /agent, /feedback, /reflect, /help) the same
 *   for every channel, and hands everything else to the SessionPool as a turn.
 * - A user removed meanwhile (by any process) has their live sessions ended at the next configuration
 *   change seen (see `endRemovedUsers`).
 */
import { EVERYONE, mayUse } from "../../domain/access/policy.ts"
import { Cause, Effect, Layer, Option, Stream } from "effect"
import { emptyUsage } from "../../domain/model/types.ts"
import { AccessDenied, NoAgent } from "../../domain/runtime/errors.ts"
import { type ChatTarget, type ResolvedChat, type SendOptions, sessionKeyOf, type TurnEvent, type UserMessage } from "../../domain/runtime/types.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { LiveConfig } from "../../services/LiveConfig.ts"
import type { MemoryProvider } from "../../services/MemoryProvider.ts"
import type { ProviderRegistry } from "../../services/ProviderRegistry.ts"
import { Runtime } from "../../services/Runtime.ts"
import { SessionPool } from "../../services/SessionPool.ts"
import { isCommand, replyText, runCommand } from "./commands.ts"

export const make = Effect.gen(function*() {
    const config = yield* ConfigStore
    const agents = yield* AgentStore
    const pool = yield* SessionPool
    const live = yield* LiveConfig
    const services = yield* Effect.context<ConfigStore | AgentStore | MemoryProvider | ProviderRegistry>()

    const resolve = Effect.fn("Runtime.resolve")(function*(target: ChatTarget) {
      // The terminal's first contact goes to the user of the OS user's name when there is one (issue 24).
      const claimed = target.userId === undefined && target.firstContactUser !== undefined
        ? Option.getOrUndefined(yield* config.claimIdentity(target.platform, target.externalUserId, target.firstContactUser))
        : undefined
      const user = claimed ?? (target.userId !== undefined
        ? Option.getOrUndefined(yield* config.getUser(target.userId))
        : yield* config.upsertUser(target.platform, target.externalUserId, target.userName))
      if (user === undefined) return yield* new NoAgent({ reason: `unknown user ${target.userId ?? ""}` })
      const all = yield* agents.list
      const enabled = all.filter((a) => a.enabled)
      const isEnabled = (id: string | null | undefined) => id !== null && id !== undefined && enabled.some((a) => a.id === id)
      // Every path into a turn comes through here: the agent's access policy decides (issue 13).
      const subject = { id: user.id, attributes: user.attributes ?? {} }
      const allowed = (id: string) => mayUse(enabled.find((a) => a.id === id)?.access ?? EVERYONE, subject)
      const refuse = (id: string, why: string) => new AccessDenied({ agentId: id, reason: why })
      let agentId: string | undefined
      if (target.agentId !== undefined) {
        if (!isEnabled(target.agentId)) return yield* new NoAgent({ reason: `no enabled agent "${target.agentId}"` })
        if (!allowed(target.agentId)) return yield* refuse(target.agentId, `Sorry, agent ${target.agentId} is not open to you; ask the operator for access.`)
        agentId = target.agentId
      } else if (target.isGroup === true) {
        const bound = Option.getOrUndefined(yield* config.chatBinding(target.platform, target.chatId ?? "dm"))
        if (bound !== undefined && isEnabled(bound) && !allowed(bound)) {
          return yield* refuse(bound, `Sorry, this group's agent ${bound} is not open to you; ask the operator for access.`)
        }
        agentId = isEnabled(bound) ? bound : undefined
      } else {
        // The agent picked with /agent for this chat comes before the user's default (issue 24).
        const chosen = Option.getOrUndefined(yield* config.chatAgent(target.platform, user.id, target.chatId ?? "dm"))
        if (chosen !== undefined && isEnabled(chosen) && allowed(chosen)) agentId = chosen
      }
      if (agentId === undefined && isEnabled(user.defaultAgentId) && allowed(user.defaultAgentId ?? "")) agentId = user.defaultAgentId ?? undefined
      agentId ??= enabled.find((a) => allowed(a.id))?.id
      if (agentId === undefined && enabled.length > 0) {
        return yield* refuse(enabled[0]?.id ?? "", "Sorry, no agent here is open to you; ask the operator for access.")
      }
      if (agentId === undefined) {
        return yield* new NoAgent({
          reason: all.length === 0
            ? "no agent is configured: run anna onboard (or anna onboard --from-env with a provider's key set), or anna agent set default --model PROVIDER/MODEL"
            : `no agent is enabled (${all.map((a) => a.id).join(", ")}): anna agent enable <id>, or give one a model with anna agent set <id> --model PROVIDER/MODEL`
        })
      }
      const chatId = target.chatId ?? "dm"
      const state = yield* config.chatState(agentId, target.platform, user.id, chatId)
      const context = state.context === "main" ? chatId : state.context
      const chat: ResolvedChat = {
        userId: user.id,
        userName: user.name,
        agentId,
        platform: target.platform,
        chatId,
        isGroup: target.isGroup === true,
        context,
        sessionKey: sessionKeyOf(agentId, target.platform, user.id, context),
        model: state.model,
        userUid: user.uid,
        ...(claimed === undefined ? {} : { claimedIdentity: true })
      }
      return chat
    })

    const abort = (chat: ResolvedChat) => pool.abort(chat.sessionKey)

    const send = (chat: ResolvedChat, message: UserMessage, options?: SendOptions): Stream.Stream<TurnEvent> =>
      typeof message === "string" && isCommand(message)
        ? Stream.fromEffect(
          runCommand(chat, message, abort(chat)).pipe(
            Effect.provide(services),
            Effect.catch((e) => Effect.succeed(`The command failed: ${e.message}`))
          )
        ).pipe(
          Stream.flatMap((reply) =>
            Stream.fromIterable<TurnEvent>([
              { type: "text", text: replyText(reply) },
              ...(typeof reply === "string" || reply.choices.options.length === 0 ? [] : [{ type: "choices" as const, choices: reply.choices }]),
              { type: "done", stopReason: "command", usage: emptyUsage, modelCalls: 0, toolCalls: 0 }
            ])
          )
        )
        : pool.send(chat, message, options)

    // A user removed while their sessions are live (`anna user remove`, the admin API; any process)
    // moves the configuration version: their running turns stop and their runners close (their
    // sandboxes with them) at the watcher's next look, so nothing of theirs runs on, and nothing held
    // for them serves a later user of the same id. A session's user is gone when the id has no user,
    // or a user of another incarnation (removed and made again meanwhile).
    const endRemovedUsers = Effect.gen(function*() {
      const now = new Map<string, string | undefined>()
      for (const s of yield* pool.live) {
        if (!now.has(s.userId)) now.set(s.userId, Option.match(yield* config.getUser(s.userId), { onNone: () => undefined, onSome: (u) => u.uid ?? "" }))
        const uid = now.get(s.userId)
        if (uid !== undefined && (s.userUid === undefined || s.userUid === "" || s.userUid === uid)) continue
        yield* Effect.logInfo(`runtime: ending session ${s.sessionKey}: its user ${s.userId} was removed`)
        yield* pool.abort(s.sessionKey)
        yield* pool.release(s.sessionKey, "its user was removed")
      }
    })
    yield* live.changes.pipe(
      Stream.runForEach(() => endRemovedUsers.pipe(Effect.catchCause((c) => Effect.logWarning(`runtime: checking for removed users failed: ${Cause.pretty(c)}`)))),
      Effect.forkScoped
    )

    return Runtime.of({ resolve, send, abort })
  })

/**
 * Needs SessionPool, LiveConfig, ConfigStore, AgentStore, ProviderRegistry and a memory layer (commands use the
 * Compactor and Explorer when present). src/programs/compose.ts puts it together with its pool.
 */
export const layer = Layer.effect(Runtime, make)
