/**
 * The SessionPool: agents' current configuration (LiveConfig) and model clients, runners per session
 * (RcMap with an idle time-to-live), the running turn of each session (FiberMap), and the watch that
 * closes live sandboxes when their agent's settings change.
 *
 * - A runner is built from a plan — the agent's sandbox settings and tool list for that session. A
 *   turn whose plan differs from the live runner's (the operator changed the image, the network,
 *   limits, the tools) replaces the runner, and when the configuration version moves, every live
 *   runner is compared with its agent's settings and a changed one is closed at once, even mid-turn.
 * - A runner's tools come from the ToolCatalog (one path for every tool source); the sandbox is
 *   started only when a source asks for it, and fails closed: the turn then tells the user why and
 *   runs nothing.
 * - Per turn nothing is read from disk: the agent's SYSTEM.md, SOUL.md and presets are cached until
 *   their files change (./agentFiles.ts), the presets a user wrote in their workspace until a tool
 *   that can change files ran in that session.
 */
import { Cause, Clock, Duration, Effect, Exit, Fiber, FiberMap, Layer, Option, Queue, RcMap, Scope, Stream } from "effect"
import { messageText } from "../../domain/message.ts"
import * as Metrics from "../../domain/observability/metrics.ts"
import * as Tracing from "../../domain/observability/tracing.ts"
import { emptyUsage } from "../../domain/model/types.ts"
import { SandboxFailure } from "../../domain/sandbox/errors.ts"
import { workspaceIn } from "../../domain/sandbox/spec.ts"
import { DEFAULT_CAPS, diskBoundOf, type SandboxCaps, type SandboxSpec } from "../../domain/sandbox/types.ts"
import { TurnDeadline } from "../../domain/runtime/errors.ts"
import { errorOf } from "../../domain/runtime/failure.ts"
import { systemPrompt } from "../../domain/runtime/prompt.ts"
import type { ResolvedChat, SendOptions, TurnError, TurnEvent, UserMessage } from "../../domain/runtime/types.ts"
import { type Tool, type ToolRegistry, toolRegistry } from "../../domain/tool.ts"
import type { ChatModelClient } from "../../services/ChatModel.ts"
import { Compactor } from "../../services/Compactor.ts"
import type { Snapshot } from "../../services/ConfigStore.ts"
import { Learning } from "../../services/Learning.ts"
import { LiveConfig } from "../../services/LiveConfig.ts"
import { MemoryProvider } from "../../services/MemoryProvider.ts"
import { ProfileStore } from "../../services/ProfileStore.ts"
import { ProviderRegistry } from "../../services/ProviderRegistry.ts"
import { Sandbox, type SandboxSession } from "../../services/Sandbox.ts"
import { SessionHash } from "../../services/SessionHash.ts"
import { SessionLocks } from "../../services/SessionLocks.ts"
import { type LiveSession, SessionPool } from "../../services/SessionPool.ts"
import { Skills } from "../../services/Skills.ts"
import { ToolCatalog } from "../../services/ToolCatalog.ts"
import { UsageLog } from "../../services/UsageLog.ts"
import * as AgentFiles from "./agentFiles.ts"
import * as AgentTool from "./agentTool.ts"
import { modelAllowed, turnModel } from "./models.ts"
import { loadPresets, mergePresets, type Preset, workspaceSource } from "./presets.ts"
import * as ToolsOff from "./toolsOff.ts"
import { notAnswered, runTurn } from "./turn.ts"

export interface SessionPoolOptions {
  /** How long an idle session keeps its runner and sandbox container (default 10 minutes). */
  readonly runnerIdle?: Duration.Input | undefined
}

/** A runner built while the sandbox could not start is replaced after this long (the next turn tries again). */
const SANDBOX_RETRY_MS = 60_000

/** The text of a user's message (what the playbook's tags are matched against). */
const userText = (message: UserMessage): string => messageText({ role: "user", content: message })

/** Tools that cannot change the workspace: running them leaves the workspace presets as they were. */
const READ_ONLY_TOOLS: ReadonlySet<string> = new Set(["read", "memory"])

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
  /** The agent's tool list (null: every tool). */
  readonly tools: ReadonlyArray<string> | null
  /** The tool sources' own state for the agent (plugins switched, MCP servers): ToolCatalog.version. */
  readonly toolsVersion: string
  /** The incarnation of the user id (ResolvedChat.userUid): a later user of a removed user's id gets a runner of their own. */
  readonly userUid: string
}

/** The parts of a plan that, when they change, must replace the session's runner (the caps are read live by the sandbox). */
const fingerprint = (plan: RunnerPlan): string =>
  JSON.stringify([plan.spec.agentId, plan.spec.workspace, plan.spec.image, plan.spec.network, plan.spec.limits, plan.tools, plan.toolsVersion, plan.userUid])

interface Runner {
  readonly tools: ToolRegistry
  /** Why the sandbox could not start (its tools are then left out), or undefined. */
  readonly sandboxProblem: string | undefined
  readonly createdAt: number
  /** Tools being off was handled for this runner: logged, and the user told unless told before (./toolsOff.ts). */
  told: boolean
  /** The presets in the session's workspace (read again only after a tool that can change files ran). */
  readonly workspacePresets: Effect.Effect<ReadonlyArray<Preset>>
}

interface LiveEntry {
  readonly key: string
  readonly plan: RunnerPlan
  sandbox: SandboxSession | undefined
  lastTurnAt: number
}

export const make = (options: SessionPoolOptions = {}) =>
  Effect.gen(function*() {
    const live = yield* LiveConfig
    const registry = yield* ProviderRegistry
    const memory = yield* MemoryProvider
    const catalog = yield* ToolCatalog
    const compactor = yield* Effect.serviceOption(Compactor)
    const profiles = yield* Effect.serviceOption(ProfileStore)
    const usage = yield* UsageLog
    const sandbox = yield* Effect.serviceOption(Sandbox)
    const locks = yield* SessionLocks
    const sessionHash = yield* SessionHash
    const files = yield* AgentFiles.make
    const toolsOff = yield* ToolsOff.make
    const skills = yield* Effect.serviceOption(Skills)
    const learning = yield* Effect.serviceOption(Learning)
    const scope = yield* Effect.scope
    const running = yield* FiberMap.make<string>()

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

    // The caps on live containers as set now: the sandbox reads them at every admission and command,
    // so a changed setting applies from the next tool call (an unreadable setting keeps the default).
    const capsNow: Effect.Effect<SandboxCaps> = Effect.gen(function*() {
      const read = (key: string, fallback: number) => Effect.map(live.setting(key), Number).pipe(Effect.orElseSucceed(() => fallback))
      return { perUser: yield* read("sandbox.max_per_user", DEFAULT_CAPS.perUser), total: yield* read("sandbox.max_total", DEFAULT_CAPS.total) }
    })

    /** A sandbox session for `spec`, when a container could start now (the engine is asked first). */
    const startSandbox = (spec: SandboxSpec) =>
      Option.isSome(sandbox)
        ? Effect.andThen(
          sandbox.value.check(spec),
          Effect.flatMap(
            live.setting("sandbox.disk_bound").pipe(Effect.orElseSucceed(() => "auto")),
            (bound) => sandbox.value.start(spec, { caps: capsNow, diskBound: diskBoundOf(bound) })
          )
        )
        : Effect.fail(new SandboxFailure({ operation: "start", detail: "this deployment has no sandbox (no Sandbox layer), so sandboxed tools cannot run" }))

    // Runners by plan fingerprint; `sessions` says which plan each session's current runner has.
    const plans = new Map<string, RunnerPlan>()
    const sessions = new Map<string, LiveEntry>()
    const runners = yield* RcMap.make({
      lookup: (key: string) =>
        Effect.gen(function*() {
          const plan = plans.get(key)
          if (plan === undefined) return yield* Effect.die(new Error(`no plan for runner ${key}`))
          const runnerScope = yield* Effect.scope
          yield* Effect.addFinalizer(() =>
            Effect.suspend(() => {
              plans.delete(key)
              // Still the session's runner: it was reaped for being idle (a retired one was unlinked
              // first), so the session's burst of work ended: reflection runs in the background.
              if (sessions.get(plan.sessionKey)?.key !== key) return Effect.void
              sessions.delete(plan.sessionKey)
              return Option.isSome(learning) && !closing ? learning.value.endBurst(plan.sessionKey, "idle") : Effect.void
            })
          )
          // The sandbox starts the first time a tool source asks for it (then the same one), and lives as
          // as long as the runner. When it cannot, the sources leave its tools out and `sandboxProblem` says why.
          let session: SandboxSession | undefined
          let sandboxProblem: string | undefined
          const sandboxOnce = yield* Effect.cached(startSandbox(plan.spec).pipe(
            Effect.provideService(Scope.Scope, runnerScope),
            Effect.tap((s) =>
              Effect.sync(() => {
                session = s
                const entry = sessions.get(plan.sessionKey)
                if (entry !== undefined && entry.key === key) entry.sandbox = s
              })
            ),
            Effect.tapError((e) =>
              Effect.sync(() => {
                sandboxProblem = e.message
              })
            )
          ))
          let dirty = true
          let cached: ReadonlyArray<Preset> = []
          const markDirty = Effect.sync(() => {
            dirty = true
          })
          const tools: Array<Tool> = (yield* catalog.tools({
            agentId: plan.agentId,
            userId: plan.spec.userId,
            sessionKey: plan.sessionKey,
            enabled: (name) => plan.tools === null || plan.tools.includes(name),
            sandbox: sandboxOnce
          })).map((tool) =>
            READ_ONLY_TOOLS.has(tool.definition.name)
              ? tool
              : { ...tool, execute: (input, context) => tool.execute(input, context).pipe(Effect.ensuring(markDirty)) }
          )
          const workspacePresets = Effect.suspend(() => {
            if (session === undefined) return Effect.succeed<ReadonlyArray<Preset>>([])
            if (!dirty) return Effect.succeed(cached)
            dirty = false
            return loadPresets([workspaceSource(session)]).pipe(Effect.tap((p) =>
              Effect.sync(() => {
                cached = p
              })
            ))
          })
          const runner: Runner = {
            tools: yield* toolRegistry(tools),
            workspacePresets,
            sandboxProblem,
            createdAt: yield* Clock.currentTimeMillis,
            told: false
          }
          return runner
        }),
      idleTimeToLive: options.runnerIdle ?? Duration.minutes(10)
    })
    // Registered after the runners, so it runs before they close: runners closed because the pool
    // shuts down did not go idle, and their bursts are not reflected on the way out (a shutdown must
    // not wait for a model; the messages stay, unreflected, for an explicit /reflect or the next burst).
    let closing = false
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closing = true
      })
    )

    const planFor = (
      snapshot: Snapshot,
      chat: { readonly sessionKey: string; readonly userId: string; readonly userUid?: string | undefined },
      toolsVersion: string
    ): RunnerPlan => ({
      sessionKey: chat.sessionKey,
      agentId: snapshot.agent.id,
      spec: {
        ...snapshot.sandbox,
        userId: chat.userId,
        workspace: workspaceIn(snapshot.folder, snapshot.agent.sandboxWorkspace, chat.userId)
      },
      tools: snapshot.tools,
      toolsVersion,
      userUid: chat.userUid ?? ""
    })

    /** Ends the session's runner now: its container is removed, even mid-turn. */
    const retire = (sessionKey: string, reason: string) =>
      Effect.gen(function*() {
        const entry = sessions.get(sessionKey)
        if (entry === undefined) return false
        sessions.delete(sessionKey)
        if (entry.sandbox !== undefined) yield* entry.sandbox.close(reason)
        yield* RcMap.invalidate(runners, entry.key)
        return true
      })

    /** The session's runner for `plan`, replacing one built from an older plan. */
    const runnerFor = (plan: RunnerPlan) =>
      Effect.gen(function*() {
        const key = `${plan.sessionKey}\u0000${fingerprint(plan)}`
        const entry = sessions.get(plan.sessionKey)
        if (entry !== undefined && entry.key !== key) {
          yield* retire(plan.sessionKey, entry.plan.userUid === plan.userUid ? "the agent's sandbox settings changed" : "its user was removed")
        }
        plans.set(key, plan)
        const now = yield* Clock.currentTimeMillis
        const current = sessions.get(plan.sessionKey)
        if (current === undefined) sessions.set(plan.sessionKey, { key, plan, sandbox: undefined, lastTurnAt: now })
        else current.lastTurnAt = now
        return yield* RcMap.get(runners, key)
      })

    // A configuration change reaches sessions that are idle or mid-turn: every live runner is compared
    // with its agent's current settings, and one that no longer matches is closed.
    const sweep = Effect.gen(function*() {
      const byAgent = new Map<string, { readonly snapshot: Snapshot | undefined; readonly toolsVersion: string }>()
      for (const [sessionKey, entry] of [...sessions]) {
        if (!byAgent.has(entry.plan.agentId)) {
          byAgent.set(entry.plan.agentId, {
            snapshot: Option.getOrUndefined(yield* Effect.option(live.snapshot(entry.plan.agentId))),
            toolsVersion: yield* catalog.version(entry.plan.agentId)
          })
        }
        const agentNow = byAgent.get(entry.plan.agentId)
        const snapshot = agentNow?.snapshot
        const now = snapshot === undefined || !snapshot.agent.enabled
          ? undefined
          : planFor(snapshot, { sessionKey, userId: entry.plan.spec.userId, userUid: entry.plan.userUid }, agentNow?.toolsVersion ?? "")
        if (now === undefined || fingerprint(now) !== fingerprint(entry.plan)) {
          yield* Effect.logInfo(`session pool: closing the runner of ${sessionKey}: its agent's settings changed`)
          yield* retire(sessionKey, snapshot === undefined ? "the agent was removed or cannot run" : "the agent's sandbox settings changed")
        }
      }
    })
    // The first value is the version current when the subscription starts (maybe newer than the one
    // just acted on), so it is acted on too: a redundant pass changes nothing, a skipped one would.
    yield* live.changes.pipe(
      Stream.runForEach(() => sweep.pipe(Effect.catchCause((c) => Effect.logWarning(`session pool: settings check failed: ${Cause.pretty(c)}`)))),
      Effect.forkScoped
    )

    const turn = (chat: ResolvedChat, message: UserMessage, emit: (e: TurnEvent) => Effect.Effect<void>, options?: SendOptions) =>
      Effect.scoped(Effect.gen(function*() {
        // The agent as configured now: a change made with the CLI applies from this turn.
        const agent = yield* live.snapshot(chat.agentId).pipe(
          Effect.flatMap((snapshot) => Effect.map(clientFor(snapshot), (client) => ({ snapshot, client }))),
          Effect.result
        )
        if (agent._tag === "Failure") {
          yield* emit({ type: "notice", text: agent.failure.message })
          return yield* emit(done("unavailable", errorOf(agent.failure)))
        }
        const { snapshot, client } = agent.success
        const plan = planFor(snapshot, chat, yield* catalog.version(snapshot.agent.id))
        let runner = yield* runnerFor(plan).pipe(Effect.result)
        // A runner built while the sandbox was down is replaced after a while, so a Docker that came back is used.
        if (runner._tag === "Success" && runner.success.sandboxProblem !== undefined && (yield* Clock.currentTimeMillis) - runner.success.createdAt > SANDBOX_RETRY_MS) {
          yield* retire(chat.sessionKey, "retrying the sandbox")
          runner = yield* runnerFor(plan).pipe(Effect.result)
        }
        if (runner._tag === "Failure") {
          yield* memory.append({ key: chat.sessionKey, agentId: chat.agentId, userId: chat.userId }, [
            { role: "user", content: message },
            notAnswered(`the agent's tools could not be prepared: ${runner.failure.message}`)
          ]).pipe(Effect.ignore)
          yield* emit({ type: "notice", text: `This agent cannot work now (nothing ran): ${runner.failure.message}` })
          return yield* emit(done("unavailable", errorOf(runner.failure)))
        }
        // The fix is the operator's (the log, `anna doctor`); the user hears one neutral line per conversation.
        if (runner.success.sandboxProblem !== undefined && !runner.success.told) {
          runner.success.told = true
          yield* toolsOff.logProblem(chat.sessionKey, chat.agentId, runner.success.sandboxProblem)
          if (yield* toolsOff.shouldTell(chat.sessionKey)) {
            yield* emit({ type: "notice", text: ToolsOff.TOOLS_OFF_NOTICE })
            // Recorded as the turn ends: by then the session is stored, even on its first turn.
            yield* Effect.addFinalizer(() => toolsOff.remember(chat.sessionKey))
          }
        }
        const own = yield* files.files(snapshot.folder)
        const profile = Option.isSome(profiles) ? yield* profiles.value.getProfile(chat.userId, chat.agentId).pipe(Effect.orElseSucceed(() => "")) : ""
        // The playbook rules that fit this turn (recorded as used in the session's burst).
        const guidelines = Option.isSome(learning)
          ? yield* learning.value.beforeTurn({ sessionKey: chat.sessionKey, agentId: chat.agentId, userId: chat.userId }, userText(message))
          : ""
        const system = systemPrompt({
          systemMd: own.systemMd,
          soulMd: own.soulMd,
          agentPrompt: snapshot.agent.systemPrompt,
          profile,
          userName: chat.userName,
          now: new Date(yield* Clock.currentTimeMillis),
          skills: Option.isSome(skills) ? yield* skills.value.forPrompt(chat.agentId) : [],
          guidelines
        })
        // Only a model the operator allows: a choice made before the list was tightened falls back to the agent's.
        const model = turnModel(snapshot.agent, snapshot.model, chat.model)
        // The agent tool is added per turn: its children inherit this turn's prompt and model.
        const tools = snapshot.tools === null || snapshot.tools.includes(AgentTool.TOOL_NAME)
          ? yield* AgentTool.withAgentTool(runner.success.tools, {
            client,
            defaultModel: model,
            baseSystem: system,
            usage,
            modelAllowed: (m) => modelAllowed(snapshot.agent, m),
            presets: yield* mergePresets(own.presets, yield* runner.success.workspacePresets, "/workspace/agents")
          })
          : runner.success.tools
        const deadline = snapshot.agent.turnTimeoutSeconds
        const outcome = yield* runTurn({
          chat,
          client,
          model,
          system,
          tools,
          contextTokens: snapshot.contextTokens,
          maxOutputTokens: snapshot.agent.maxOutputTokens,
          maxTurns: snapshot.maxTurns,
          memory,
          compactor,
          usage,
          emit,
          resumed: options?.resumed === true
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

    const send = (chat: ResolvedChat, message: UserMessage, options?: SendOptions): Stream.Stream<TurnEvent> =>
      Stream.callback<TurnEvent>((queue) =>
        Effect.gen(function*() {
          // The turn's outcome for the metrics: its done event's stop reason (a failed one says "unavailable").
          let outcome = "failed"
          const emit = (e: TurnEvent) => {
            if (e.type === "done") outcome = e.stopReason === "unavailable" ? "failed" : e.stopReason
            return Queue.offer(queue, e).pipe(Effect.asVoid)
          }
          // Turns of one session wait for each other; the one holding the lock is the session's running turn.
          const work = locks.withLock(`turn\u0000${chat.sessionKey}`)(
            Metrics.timed(
              Effect.flatMap(FiberMap.run(running, chat.sessionKey, turn(chat, message, emit, options)), Fiber.join),
              (seconds, exit) =>
                Metrics.turnDone({ agent: chat.agentId, channel: chat.platform, outcome: Exit.hasInterrupts(exit) ? "aborted" : outcome }, seconds)
            )
          ).pipe(
            // The turn's span: the root of its trace, unless the channel continues one (SendOptions.parentSpan).
            Effect.onExit((exit) => Effect.annotateCurrentSpan("anna.turn.outcome", Exit.hasInterrupts(exit) ? "aborted" : outcome)),
            Effect.withSpan("turn", {
              attributes: Tracing.turnAttributes(chat, sessionHash.of),
              ...(options?.parentSpan === undefined ? { root: true } : { parent: options.parentSpan })
            }),
            Effect.onInterrupt(() => emit({ type: "notice", text: "stopped" }).pipe(Effect.andThen(emit(done("aborted"))))),
            Effect.ensuring(Queue.end(queue))
          )
          yield* Effect.forkIn(work, scope)
        })
      )

    const abort = (sessionKey: string) =>
      Effect.flatMap(FiberMap.get(running, sessionKey), (fiber) =>
        Option.isNone(fiber) ? Effect.succeed(false) : Fiber.interrupt(fiber.value).pipe(Effect.as(true)))

    const liveSessions = Effect.gen(function*() {
      const out: Array<LiveSession> = []
      for (const [sessionKey, entry] of sessions) {
        out.push({
          sessionKey,
          agentId: entry.plan.agentId,
          userId: entry.plan.spec.userId,
          userUid: entry.plan.userUid,
          running: yield* FiberMap.has(running, sessionKey),
          sandbox: entry.sandbox !== undefined,
          lastTurnAt: entry.lastTurnAt
        })
      }
      return out.sort((a, b) => b.lastTurnAt - a.lastTurnAt) as ReadonlyArray<LiveSession>
    })

    return SessionPool.of({
      send,
      abort: Effect.fn("SessionPool.abort")(function*(sessionKey: string) {
        return yield* abort(sessionKey)
      }),
      live: liveSessions.pipe(Effect.withSpan("SessionPool.live")),
      release: Effect.fn("SessionPool.release")(function*(sessionKey: string, reason: string) {
        return yield* retire(sessionKey, reason)
      })
    })
  })

/**
 * SessionPool; needs LiveConfig, ProviderRegistry, UsageLog, ToolCatalog, SessionLocks (a turn holds
 * `turn\0{sessionKey}`, apart from memory's own locks) and a memory layer; with a Sandbox, tool
 * sources that need one get it (fail closed when it cannot start).
 */
export const layer = (options: SessionPoolOptions = {}) => Layer.effect(SessionPool, make(options))
