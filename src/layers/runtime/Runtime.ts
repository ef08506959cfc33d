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
import { Cause, Duration, Effect, Fiber, Layer, Option, Queue, RcMap, Schedule, Stream } from "effect"
import { join } from "node:path"
import { settingValue } from "../../domain/config/settings.ts"
import { workspaceIn } from "../../domain/sandbox/spec.ts"
import type { SandboxCaps, SandboxSpec } from "../../domain/sandbox/types.ts"
import { emptyUsage } from "../../domain/model/types.ts"
import { NoAgent, TurnDeadline } from "../../domain/runtime/errors.ts"
import { systemPrompt } from "../../domain/runtime/prompt.ts"
import { errorOf } from "../../domain/runtime/failure.ts"
import { type ChatTarget, type ResolvedChat, sessionKeyOf, type TurnError, type TurnEvent, type UserMessage } from "../../domain/runtime/types.ts"
import type { Tool } from "../../domain/tool.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { Compactor } from "../../services/Compactor.ts"
import type { ChatModelClient } from "../../services/ChatModel.ts"
import { ConfigStore, type Snapshot } from "../../services/ConfigStore.ts"
import { MemoryProvider } from "../../services/MemoryProvider.ts"
import { ProfileStore } from "../../services/ProfileStore.ts"
import { ProviderRegistry } from "../../services/ProviderRegistry.ts"
import { Runtime } from "../../services/Runtime.ts"
import { Sandbox, type SandboxSession } from "../../services/Sandbox.ts"
import type { ToolRegistry as ToolRegistryService } from "../../services/ToolRegistry.ts"
import { UsageLog } from "../../services/UsageLog.ts"
import * as MemoryTool from "../tools/memory.ts"
import { isCommand, runCommand } from "./commands.ts"
import { runTurn } from "./turn.ts"
import { modelAllowed, turnModel } from "./models.ts"
import { folderSource, workspaceSource } from "./presets.ts"
import { readSmallFile } from "../sandbox/confinedFs.ts"
import * as SessionLocks from "./SessionLocks.ts"
import * as ToolRegistry from "../tools/ToolRegistry.ts"
import * as AgentTool from "../tools/agent.ts"
import * as Bash from "../tools/bash.ts"
import * as Edit from "../tools/edit.ts"
import * as Read from "../tools/read.ts"
import * as Write from "../tools/write.ts"

export interface RuntimeOptions {
  /** How long an idle session keeps its runner and sandbox container (default 10 minutes). */
  readonly runnerIdle?: Duration.Input | undefined
  /**
   * How often live sandboxes are checked against their agent's current settings (default 2 s): a
   * changed network policy, tool list, image or limit closes the container at once, so a tightening
   * applies to running sessions too, not only to new ones.
   */
  readonly configPoll?: Duration.Input | undefined
}

const SANDBOX_TOOLS = ["bash", "read", "write", "edit"] as const
/** SYSTEM.md and SOUL.md larger than this are ignored (with a warning). */
const MAX_PROMPT_FILE_BYTES = 256 * 1024

const done = (stopReason: Extract<TurnEvent, { type: "done" }>["stopReason"], error?: TurnError): TurnEvent => ({
  type: "done",
  stopReason,
  usage: emptyUsage,
  modelCalls: 0,
  toolCalls: 0,
  ...(error === undefined ? {} : { error })
})

/** What a session's runner is built from; a different plan means a different runner. */
interface RunnerPlan {
  readonly sessionKey: string
  readonly agentId: string
  readonly spec: SandboxSpec
  readonly sandboxTools: ReadonlyArray<string>
  readonly memoryTool: boolean
}

/** The parts of a plan that, when they change, must replace the session's sandbox (caps excluded: they are counted at start). */
const fingerprint = (plan: RunnerPlan): string =>
  JSON.stringify([plan.spec.agentId, plan.spec.workspace, plan.spec.image, plan.spec.network, plan.spec.limits, plan.sandboxTools, plan.memoryTool])

interface Runner {
  readonly tools: ToolRegistryService["Service"]
  readonly sandbox: SandboxSession | undefined
}

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

    // Model clients by provider configuration: a changed key, URL or type builds a new client.
    const clients = new Map<string, { readonly config: string; readonly client: ChatModelClient }>()
    const clientFor = (snapshot: Snapshot) =>
      Effect.gen(function*() {
        const config = JSON.stringify(snapshot.provider)
        const known = clients.get(snapshot.provider.id)
        if (known !== undefined && known.config === config) return known.client
        const client = yield* registry.client(snapshot.provider.id)
        clients.set(snapshot.provider.id, { config, client })
        return client
      })

    // Runners by plan fingerprint; `live` says which plan each session's current runner has.
    const plans = new Map<string, RunnerPlan>()
    const live = new Map<string, { readonly key: string; readonly plan: RunnerPlan; sandbox: SandboxSession | undefined }>()
    const runners = yield* RcMap.make({
      lookup: (key: string) =>
        Effect.gen(function*() {
          const plan = plans.get(key)
          if (plan === undefined) return yield* Effect.die(new Error(`no plan for runner ${key}`))
          const tools: Array<Tool> = []
          let session: SandboxSession | undefined
          if (plan.sandboxTools.length > 0 && Option.isSome(sandbox)) {
            session = yield* sandbox.value.start(plan.spec)
            const makers = { bash: Bash.make, read: Read.make, write: Write.make, edit: Edit.make }
            for (const name of plan.sandboxTools) tools.push(makers[name as keyof typeof makers](session))
          }
          if (plan.memoryTool) tools.push(memoryTool)
          const entry = live.get(plan.sessionKey)
          if (entry !== undefined && entry.key === key) entry.sandbox = session
          yield* Effect.addFinalizer(() =>
            Effect.sync(() => {
              plans.delete(key)
              if (live.get(plan.sessionKey)?.key === key) live.delete(plan.sessionKey)
            })
          )
          const runner: Runner = { tools: yield* ToolRegistry.fromTools(tools), sandbox: session }
          return runner
        }),
      idleTimeToLive: options.runnerIdle ?? Duration.minutes(10)
    })

    const capsNow = Effect.gen(function*() {
      const read = (key: string) => Effect.map(config.getSetting(key).pipe(Effect.orElseSucceed(() => Option.none<string>())), (o) => Number(settingValue(key, Option.getOrUndefined(o))))
      return { perUser: yield* read("sandbox.max_per_user"), total: yield* read("sandbox.max_total") }
    })

    const planFor = (snapshot: Snapshot, chat: { readonly sessionKey: string; readonly userId: string }, caps: SandboxCaps): RunnerPlan => {
      const wants = (name: string) => snapshot.tools === null || snapshot.tools.includes(name)
      return {
        sessionKey: chat.sessionKey,
        agentId: snapshot.agent.id,
        spec: {
          ...snapshot.sandbox,
          userId: chat.userId,
          workspace: workspaceIn(snapshot.folder, snapshot.agent.sandboxWorkspace, chat.userId),
          caps
        },
        sandboxTools: Option.isSome(sandbox) ? SANDBOX_TOOLS.filter(wants) : [],
        memoryTool: wants("memory")
      }
    }

    /** Ends the session's runner if it no longer matches `plan`: its container is removed now, even mid-turn. */
    const retire = (sessionKey: string, reason: string) =>
      Effect.gen(function*() {
        const entry = live.get(sessionKey)
        if (entry === undefined) return
        live.delete(sessionKey)
        if (entry.sandbox !== undefined) yield* entry.sandbox.close(reason)
        yield* RcMap.invalidate(runners, entry.key)
      })

    /** The session's runner for `plan`, replacing one built from an older plan. */
    const runnerFor = (plan: RunnerPlan) =>
      Effect.gen(function*() {
        const key = `${plan.sessionKey}\u0000${fingerprint(plan)}`
        const entry = live.get(plan.sessionKey)
        if (entry !== undefined && entry.key !== key) yield* retire(plan.sessionKey, "the agent's sandbox settings changed")
        plans.set(key, plan)
        if (!live.has(plan.sessionKey)) live.set(plan.sessionKey, { key, plan, sandbox: undefined })
        return yield* RcMap.get(runners, key)
      })

    // Tightenings reach sessions that are idle or mid-turn: every live runner is compared with its agent's current settings.
    const sweep = Effect.gen(function*() {
      const caps = yield* capsNow
      const byAgent = new Map<string, Snapshot | undefined>()
      for (const [sessionKey, entry] of [...live]) {
        if (!byAgent.has(entry.plan.agentId)) {
          byAgent.set(entry.plan.agentId, Option.getOrUndefined(yield* Effect.option(config.snapshot(entry.plan.agentId))))
        }
        const snapshot = byAgent.get(entry.plan.agentId)
        const now = snapshot === undefined || !snapshot.agent.enabled
          ? undefined
          : planFor(snapshot, { sessionKey, userId: entry.plan.spec.userId }, caps)
        if (now === undefined || fingerprint(now) !== fingerprint(entry.plan)) {
          yield* Effect.logInfo(`runtime: closing the sandbox of ${sessionKey}: its agent's settings changed`)
          yield* retire(sessionKey, snapshot === undefined ? "the agent was removed or cannot run" : "the agent's sandbox settings changed")
        }
      }
    })
    yield* Effect.forkScoped(
      sweep.pipe(
        Effect.catchCause((c) => Effect.logWarning(`runtime: settings check failed: ${Cause.pretty(c)}`)),
        Effect.repeat(Schedule.spaced(options.configPoll ?? Duration.seconds(2)))
      )
    )

    /** The operator's prompt file, read without blocking and capped; a sandbox cannot reach this folder. */
    const promptFile = (folder: string, name: string) =>
      Effect.promise(() => readSmallFile(join(folder, name), MAX_PROMPT_FILE_BYTES))

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
        // A fresh view of the agent every turn: a change made with the CLI applies from this turn.
        const pool = yield* config.snapshot(chat.agentId).pipe(
          Effect.flatMap((snapshot) => Effect.map(clientFor(snapshot), (client) => ({ snapshot, client }))),
          Effect.result
        )
        if (pool._tag === "Failure") {
          yield* emit({ type: "notice", text: pool.failure.message })
          return yield* emit(done("unavailable", errorOf(pool.failure)))
        }
        const { snapshot, client } = pool.success
        const plan = planFor(snapshot, chat, yield* capsNow)
        const runner = yield* runnerFor(plan).pipe(Effect.result)
        if (runner._tag === "Failure") {
          yield* memory.append({ key: chat.sessionKey, agentId: chat.agentId, userId: chat.userId }, [{ role: "user", content: message }]).pipe(Effect.ignore)
          yield* emit({ type: "notice", text: `The sandbox is unavailable, so this agent cannot work now (nothing ran): ${runner.failure.message}` })
          return yield* emit(done("unavailable", errorOf(runner.failure)))
        }
        const tools = runner.success.tools
        const profile = Option.isSome(profiles) ? yield* profiles.value.getProfile(chat.userId, chat.agentId).pipe(Effect.orElseSucceed(() => "")) : ""
        const system = systemPrompt({
          systemMd: yield* promptFile(snapshot.folder, "SYSTEM.md"),
          soulMd: yield* promptFile(snapshot.folder, "SOUL.md"),
          agentPrompt: snapshot.agent.systemPrompt,
          profile,
          userName: chat.userName,
          now: new Date()
        })
        // Only a model the operator allows: a choice made before the list was tightened falls back to the agent's.
        const model = turnModel(snapshot.agent, snapshot.model, chat.model)
        // The agent tool is built per turn: its children inherit this turn's prompt and model.
        const presetSources = [
          folderSource(join(snapshot.folder, "agents")),
          ...(runner.success.sandbox === undefined ? [] : [workspaceSource(runner.success.sandbox)])
        ]
        const turnTools = snapshot.tools === null || snapshot.tools.includes(AgentTool.TOOL_NAME)
          ? yield* AgentTool.withAgentTool(
            tools,
            { client, defaultModel: model, baseSystem: system, usage, modelAllowed: (m) => modelAllowed(snapshot.agent, m) },
            presetSources
          )
          : tools
        const deadline = snapshot.agent.turnTimeoutSeconds
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
        }, message).pipe(
          Effect.timeoutOrElse({
            duration: Duration.seconds(deadline),
            orElse: () => Effect.fail(new TurnDeadline({ seconds: deadline }))
          }),
          Effect.result
        )
        if (outcome._tag === "Failure") {
          yield* emit({ type: "notice", text: `The turn failed: ${outcome.failure.message}` })
          return yield* emit(done("unavailable", errorOf(outcome.failure)))
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
