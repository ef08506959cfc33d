/**
 * Runtime: routing (seed 001), pools and runners, turns, slash commands, abort.
 *
 * - A pool per agent (its Snapshot and model client) and a runner per session (its sandbox
 *   container and tools) are keyed resources with an idle time-to-live (RcMap): created on first
 *   use, released — container removed — when idle.
 * - Turns of one session are serialized by a per-session lock; each runs in the runtime's own
 *   scope, so a channel that goes away does not cut a turn short (it finishes and is stored), while
 *   /abort interrupts it (the turn then stores "aborted" results for pending tool calls).
 * - A runner that cannot start (Docker down, image missing, policy not enforceable) fails closed:
 *   the user gets a notice saying what is wrong and how to fix it, and nothing runs.
 */
import { Duration, Effect, Fiber, Layer, Option, Queue, RcMap, Stream } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { emptyUsage } from "../domain/model/types.ts"
import { NoAgent } from "../domain/runtime/errors.ts"
import { systemPrompt } from "../domain/runtime/prompt.ts"
import { type ChatTarget, type ResolvedChat, sessionKeyOf, type TurnEvent, type UserMessage } from "../domain/runtime/types.ts"
import type { Tool } from "../domain/tool.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { Compactor } from "../services/Compactor.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { MemoryProvider } from "../services/MemoryProvider.ts"
import { ProfileStore } from "../services/ProfileStore.ts"
import { ProviderRegistry } from "../services/ProviderRegistry.ts"
import { Runtime } from "../services/Runtime.ts"
import { Sandbox } from "../services/Sandbox.ts"
import { UsageLog } from "../services/UsageLog.ts"
import * as MemoryTool from "./MemoryTool.ts"
import { isCommand, runCommand } from "./runtime/commands.ts"
import { runTurn } from "./runtime/turn.ts"
import * as SessionLocks from "./SessionLocks.ts"
import * as ToolRegistry from "./ToolRegistry.ts"
import * as AgentTool from "./tools/agent.ts"
import * as Bash from "./tools/bash.ts"
import * as Edit from "./tools/edit.ts"
import * as Read from "./tools/read.ts"
import * as Write from "./tools/write.ts"

export interface RuntimeOptions {
  /** How long an unused agent pool is kept (default 10 minutes). */
  readonly poolIdle?: Duration.Input | undefined
  /** How long an idle session keeps its runner and sandbox container (default 10 minutes). */
  readonly runnerIdle?: Duration.Input | undefined
}

const SANDBOX_TOOLS = ["bash", "read", "write", "edit"] as const

const readOptional = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

const done = (stopReason: Extract<TurnEvent, { type: "done" }>["stopReason"]): TurnEvent => ({
  type: "done",
  stopReason,
  usage: emptyUsage,
  modelCalls: 0,
  toolCalls: 0
})

export const make = (options: RuntimeOptions = {}) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    const agents = yield* AgentStore
    const registry = yield* ProviderRegistry
    const memory = yield* MemoryProvider
    const compactor = yield* Effect.serviceOption(Compactor)
    const profiles = yield* Effect.serviceOption(ProfileStore)
    const usage = yield* UsageLog
    const sandbox = yield* Effect.serviceOption(Sandbox)
    const memoryTool = yield* MemoryTool.make
    const services = yield* Effect.context<ConfigStore | AgentStore | MemoryProvider | ProviderRegistry>()
    const locks = yield* SessionLocks.make()
    const scope = yield* Effect.scope
    const running = new Map<string, Fiber.Fiber<unknown, unknown>>()

    const pools = yield* RcMap.make({
      lookup: (agentId: string) =>
        Effect.gen(function*() {
          const snapshot = yield* config.snapshot(agentId)
          const client = yield* registry.client(snapshot.provider.id)
          return { snapshot, client }
        }),
      idleTimeToLive: options.poolIdle ?? Duration.minutes(10)
    })

    const runners = yield* RcMap.make({
      lookup: (sessionKey: string) =>
        Effect.gen(function*() {
          const { snapshot } = yield* RcMap.get(pools, sessionKey.split(":")[0] ?? "")
          const wants = (name: string) => snapshot.tools === null || snapshot.tools.includes(name)
          const tools: Array<Tool> = []
          const sandboxed = SANDBOX_TOOLS.filter(wants)
          if (sandboxed.length > 0 && Option.isSome(sandbox)) {
            const session = yield* sandbox.value.start(snapshot.sandbox)
            const makers = { bash: Bash.make, read: Read.make, write: Write.make, edit: Edit.make }
            for (const name of sandboxed) tools.push(makers[name](session))
          }
          if (wants("memory")) tools.push(memoryTool)
          return yield* ToolRegistry.fromTools(tools)
        }),
      idleTimeToLive: options.runnerIdle ?? Duration.minutes(10)
    })

    const resolve = Effect.fn("Runtime.resolve")(function*(target: ChatTarget) {
      const user = target.userId !== undefined
        ? Option.getOrUndefined(yield* config.getUser(target.userId))
        : yield* config.upsertUser(target.platform, target.externalUserId, target.userName)
      if (user === undefined) return yield* new NoAgent({ reason: `unknown user ${target.userId ?? ""}` })
      const enabled = (yield* agents.list).filter((a) => a.enabled)
      const isEnabled = (id: string | null | undefined) => id !== null && id !== undefined && enabled.some((a) => a.id === id)
      let agentId: string | undefined
      if (target.agentId !== undefined) {
        if (!isEnabled(target.agentId)) return yield* new NoAgent({ reason: `no enabled agent "${target.agentId}"` })
        agentId = target.agentId
      } else if (target.isGroup === true) {
        const bound = Option.getOrUndefined(yield* config.chatBinding(target.platform, target.chatId ?? "dm"))
        agentId = isEnabled(bound) ? bound : undefined
      }
      if (agentId === undefined && isEnabled(user.defaultAgentId)) agentId = user.defaultAgentId ?? undefined
      agentId ??= enabled[0]?.id
      if (agentId === undefined) {
        return yield* new NoAgent({
          reason: "no agent is configured: run anna onboard --from-env with a provider's key set, or anna agent set default --model PROVIDER/MODEL"
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
        model: state.model
      }
      return chat
    })

    const abort = (chat: ResolvedChat) =>
      Effect.suspend(() => {
        const fiber = running.get(chat.sessionKey)
        return fiber === undefined ? Effect.succeed(false) : Fiber.interrupt(fiber).pipe(Effect.as(true))
      })

    const turn = (chat: ResolvedChat, message: UserMessage, emit: (e: TurnEvent) => Effect.Effect<void>) =>
      Effect.scoped(Effect.gen(function*() {
        const pool = yield* RcMap.get(pools, chat.agentId).pipe(Effect.result)
        if (pool._tag === "Failure") {
          yield* emit({ type: "notice", text: pool.failure.message })
          return yield* emit(done("unavailable"))
        }
        const tools = yield* RcMap.get(runners, chat.sessionKey).pipe(Effect.result)
        if (tools._tag === "Failure") {
          yield* memory.append({ key: chat.sessionKey, agentId: chat.agentId, userId: chat.userId }, [{ role: "user", content: message }]).pipe(Effect.ignore)
          yield* emit({ type: "notice", text: `The sandbox is unavailable, so this agent cannot work now (nothing ran): ${tools.failure.message}` })
          return yield* emit(done("unavailable"))
        }
        const { snapshot, client } = pool.success
        const workspace = snapshot.sandbox.workspace
        const profile = Option.isSome(profiles) ? yield* profiles.value.getProfile(chat.userId, chat.agentId).pipe(Effect.orElseSucceed(() => "")) : ""
        const system = systemPrompt({
          systemMd: readOptional(join(workspace, "SYSTEM.md")),
          soulMd: readOptional(join(workspace, "SOUL.md")),
          agentPrompt: snapshot.agent.systemPrompt,
          profile,
          userName: chat.userName,
          now: new Date()
        })
        const model = chat.model === "" ? snapshot.model : chat.model
        // The agent tool is built per turn: its children inherit this turn's prompt and model.
        const turnTools = snapshot.tools === null || snapshot.tools.includes(AgentTool.TOOL_NAME)
          ? yield* AgentTool.withAgentTool(tools.success, { client, defaultModel: model, baseSystem: system, usage }, join(workspace, "agents"))
          : tools.success
        const outcome = yield* runTurn({
          chat,
          client,
          model,
          system,
          tools: turnTools,
          contextTokens: snapshot.contextTokens,
          maxTurns: snapshot.maxTurns,
          memory,
          compactor,
          usage,
          emit
        }, message).pipe(Effect.result)
        if (outcome._tag === "Failure") {
          yield* emit({ type: "notice", text: `The turn failed: ${outcome.failure.message}` })
          return yield* emit(done("unavailable"))
        }
        yield* emit({ type: "done", ...outcome.success })
      }))

    const send = (chat: ResolvedChat, message: UserMessage): Stream.Stream<TurnEvent> =>
      Stream.callback<TurnEvent>((queue) =>
        Effect.gen(function*() {
          const emit = (e: TurnEvent) => Queue.offer(queue, e).pipe(Effect.asVoid)
          if (typeof message === "string" && isCommand(message)) {
            const reply = yield* runCommand(chat, message, abort(chat)).pipe(
              Effect.provide(services),
              Effect.catch((e) => Effect.succeed(`The command failed: ${e.message}`))
            )
            yield* emit({ type: "text", text: reply })
            yield* emit(done("command"))
            return yield* Queue.end(queue)
          }
          const work = locks.withLock(chat.sessionKey)(
            Effect.withFiber((fiber) => {
              running.set(chat.sessionKey, fiber)
              return turn(chat, message, emit).pipe(Effect.ensuring(Effect.sync(() => running.delete(chat.sessionKey))))
            })
          ).pipe(
            Effect.onInterrupt(() => emit({ type: "notice", text: "stopped" }).pipe(Effect.andThen(emit(done("aborted"))))),
            Effect.ensuring(Queue.end(queue))
          )
          yield* Effect.forkIn(work, scope)
        })
      )

    return Runtime.of({ resolve, send, abort })
  })

/**
 * Needs ConfigStore, AgentStore, ProviderRegistry, UsageLog and a memory layer; with a Sandbox the
 * workspace tools are on (fail closed when it cannot start), without one they are left out.
 */
export const layer = (options: RuntimeOptions = {}) => Layer.effect(Runtime, make(options))
