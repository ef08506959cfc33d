/**
 * The heartbeat: every `scheduler.heartbeat_interval` (a setting, default 30m; `off` stops it), for
 * each enabled agent whose workspaces are per user (`user` mode), each user workspace that holds a
 * HEARTBEAT.md gets a turn in that user's `heartbeat` session (platform `scheduler`): the agent reads
 * the file with its own tools and acts on it. Its answer goes to that user through the Notifier —
 * unless it is HEARTBEAT_OK or empty (nothing to report: nobody hears anything). Each turn is
 * recorded in the run history as job `heartbeat:{agent}:{user}`. Agents with a `shared` workspace
 * have no heartbeat (whom it would speak for is not defined). A beat is taken in the database first
 * (JobStore.claimBeat): gateways sharing a database give each workspace one beat per interval.
 *
 * SECURITY: the host never opens anything in a user workspace (a user may plant a symlink or a FIFO
 * there): the check is one `lstat` of HEARTBEAT.md (no link followed, no open), and only a regular
 * file counts; the content is read inside the sandbox, by the agent's tools, during the turn.
 */
import { Clock, Duration, Effect, Option } from "effect"
import { lstatSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { agentFolder, specFor } from "../../domain/sandbox/spec.ts"
import { diskBoundOf } from "../../domain/sandbox/types.ts"
import { parseEvery } from "../../domain/scheduler/schedule.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { AppConfig } from "../../services/AppConfig.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { JobStore } from "../../services/JobStore.ts"
import { LiveConfig } from "../../services/LiveConfig.ts"
import type { Notifier } from "../../services/Notifier.ts"
import { Runtime } from "../../services/Runtime.ts"
import { Sandbox } from "../../services/Sandbox.ts"
import { runTurn, SCHEDULER_PLATFORM } from "./runJob.ts"

export const HEARTBEAT_FILE = "HEARTBEAT.md"
export const HEARTBEAT_OK = "HEARTBEAT_OK"
export const HEARTBEAT_PROMPT =
  `Read ${HEARTBEAT_FILE} in your workspace and act on it. If nothing needs the user's attention, answer exactly ${HEARTBEAT_OK}.`

/** Whether a heartbeat answer says nothing to anyone. */
export const isQuiet = (reply: string): boolean => {
  const t = reply.trim()
  return t === "" || t.replace(/[.!*`\s]/g, "") === HEARTBEAT_OK
}

export const heartbeatJobId = (agentId: string, userId: string) => `heartbeat:${agentId}:${userId}`

/**
 * The user ids whose workspace of the agent holds a regular HEARTBEAT.md (lstat only): a directory
 * listing and metadata, which never block on what a user put there. `ready` first mounts a
 * workspace's own filesystem where it has one (see Sandbox.prepare).
 */
const withHeartbeat = (workspaces: string, agentId: string, ready: (userId: string) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const users = join(agentFolder(workspaces, agentId), "users")
    let entries: ReadonlyArray<import("node:fs").Dirent> = []
    try {
      entries = readdirSync(users, { withFileTypes: true })
    } catch {
      return []
    }
    const found: Array<string> = []
    for (const e of entries) {
      if (!e.isDirectory()) continue
      yield* ready(e.name)
      try {
        if (lstatSync(join(users, e.name, HEARTBEAT_FILE)).isFile()) found.push(e.name)
      } catch {
        // no HEARTBEAT.md
      }
    }
    return found.sort()
  })

export const start = (notifier: Notifier["Service"] | undefined) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const runtime = yield* Runtime
    const live = yield* LiveConfig
    const agents = yield* AgentStore
    const config = yield* ConfigStore
    const workspaces = (yield* AppConfig).workspaces
    const sandbox = yield* Effect.serviceOption(Sandbox)
    const diskBound = live.setting("sandbox.disk_bound").pipe(
      Effect.map(diskBoundOf),
      Effect.orElseSucceed(() => "auto" as const)
    )

    const beat = (agentId: string, userId: string, intervalMs: number) =>
      Effect.gen(function*() {
        // Another gateway on this database beat this workspace less than half an interval ago.
        const jobId = heartbeatJobId(agentId, userId)
        if (!(yield* store.claimBeat(jobId, yield* Clock.currentTimeMillis, intervalMs / 2))) return
        const runId = yield* store.startRun(jobId, "heartbeat")
        const target = { platform: SCHEDULER_PLATFORM, externalUserId: userId, userId, agentId, chatId: "heartbeat" }
        const turn = yield* runTurn(runtime, target, HEARTBEAT_PROMPT, `heartbeat:${jobId}:${runId}`)
        if (turn.error !== undefined) return yield* store.finishRun(runId, { status: "error", reply: turn.reply || null, error: turn.error })
        if (isQuiet(turn.reply)) return yield* store.finishRun(runId, { status: "ok", reply: turn.reply })
        if (notifier === undefined) {
          return yield* store.finishRun(runId, { status: "error", reply: turn.reply, error: "no channel runs in this process, so the reply could not be delivered" })
        }
        const outcome = yield* notifier.notify(userId, { text: turn.reply }).pipe(
          Effect.map((channel) => ({ status: "ok" as const, reply: turn.reply, deliveredTo: `${userId}@${channel}` })),
          Effect.catch((e) => Effect.succeed({ status: "error" as const, reply: turn.reply, error: `delivery failed: ${e.message}` }))
        )
        yield* store.finishRun(runId, outcome)
      })

    const cycle = (intervalMs: number) => Effect.gen(function*() {
      for (const agent of yield* agents.list) {
        if (!agent.enabled || agent.sandboxWorkspace !== "user") continue
        const bound = yield* diskBound
        const ready = (userId: string) =>
          Option.isNone(sandbox) ? Effect.void : sandbox.value.prepare(specFor(workspaces, agent, { userId }), { diskBound: bound }).pipe(
            Effect.catch((e) => Effect.logWarning(`heartbeat: the workspace of ${userId} (agent ${agent.id}) is not ready: ${e.message}`)),
            Effect.asVoid
          )
        for (const userId of yield* withHeartbeat(workspaces, agent.id, ready)) {
          // The workspace of a user removed since is left alone.
          if (Option.isSome(yield* config.getUser(userId))) yield* beat(agent.id, userId, intervalMs)
        }
      }
    }).pipe(Effect.catch((e) => Effect.logError(`heartbeat: ${e.message}`)))

    /** The interval now (the setting is read every time: a change applies from the next beat). */
    const interval = live.setting("scheduler.heartbeat_interval").pipe(
      Effect.map((v) => {
        const every = v === "off" ? undefined : parseEvery(v)
        return every !== undefined && "ok" in every ? every.ok : undefined
      }),
      Effect.catch(() => Effect.succeed(undefined))
    )

    // Beats run one after another, so two never overlap; `off` is looked at again each minute, and
    // once more when a sleep ends (turned off meanwhile: no beat). The interval runs from the start,
    // then from the end of each beat — not from the end of the read of the setting, which takes time.
    const beatIfOn = Effect.flatMap(interval, (ms) => (ms === undefined ? Effect.void : cycle(ms)))
    let since = yield* Clock.currentTimeMillis
    yield* Effect.gen(function*() {
      const ms = yield* interval
      if (ms === undefined) yield* Effect.sleep(Duration.minutes(1))
      else {
        const now = yield* Clock.currentTimeMillis
        yield* Effect.sleep(Duration.millis(Math.max(0, since + ms - now)))
        yield* beatIfOn
      }
      since = yield* Clock.currentTimeMillis
    }).pipe(Effect.forever, Effect.forkScoped)
  })
