/**
 * One run of a job: the turn goes through `Runtime.resolve` as the job's owner (so the agent's
 * access policy applies) on the platform `scheduler`, in the chat `job-ID` (session mode reuse:
 * one session per job) or `job-ID-RUN` (new: a fresh session per run); the reply is the turn's
 * text, delivered through the Notifier when the job has a target. What fails is the run's error.
 */
import { Effect, Stream } from "effect"
import type { Job } from "../../domain/scheduler/types.ts"
import type { ChatTarget } from "../../domain/runtime/types.ts"
import type { Notifier } from "../../services/Notifier.ts"
import type { Runtime } from "../../services/Runtime.ts"
import type { RunOutcome } from "../../services/JobStore.ts"

export const SCHEDULER_PLATFORM = "scheduler"

export interface TurnResult {
  readonly reply: string
  /** Why the turn gave no answer, when it failed. */
  readonly error: string | undefined
}

/** Runs one turn and collects its answer (text events) or its failure (notices before a failed `done`). */
export const runTurn = (runtime: Runtime["Service"], target: ChatTarget, prompt: string, turnId?: string) =>
  Effect.gen(function*() {
    const chat = yield* runtime.resolve(target)
    const state = { text: "", notices: [] as Array<string>, stop: "" }
    yield* runtime.send(chat, prompt, { turnId }).pipe(
      Stream.runForEach((e) =>
        Effect.sync(() => {
          if (e.type === "text") state.text += e.text
          else if (e.type === "restart") Object.assign(state, { text: "", notices: [] }) // started over on another node
          else if (e.type === "notice" && e.status !== true) state.notices.push(e.text)
          else if (e.type === "done") state.stop = e.stopReason
        })
      )
    )
    const failed = state.stop === "unavailable" || state.stop === "aborted" || state.stop === ""
    const error = failed
      ? (state.notices.join(" ").trim() || (state.stop === "aborted" ? "the run was aborted" : "the agent could not answer"))
      : undefined
    return { reply: state.text.trim(), error } satisfies TurnResult
  }).pipe(Effect.catch((e) => Effect.succeed({ reply: "", error: e.message } satisfies TurnResult)))

/** The chat a run talks in. */
export const chatOf = (job: Job, runId: number): string => (job.sessionMode === "reuse" ? job.id : `${job.id}-${runId}`)

/** A run of `job` (recorded as `runId`): the turn, then the delivery. */
export const runJob = (runtime: Runtime["Service"], notifier: Notifier["Service"] | undefined, job: Job, runId: number) =>
  Effect.gen(function*() {
    const target: ChatTarget = {
      platform: SCHEDULER_PLATFORM,
      externalUserId: job.userId,
      userId: job.userId,
      agentId: job.agentId,
      chatId: chatOf(job, runId)
    }
    const turn = yield* runTurn(runtime, target, job.prompt, `job:${job.id}:${runId}`)
    if (turn.error !== undefined) return { status: "error", reply: turn.reply || null, error: turn.error } satisfies RunOutcome
    if (job.deliverUser === null) return { status: "ok", reply: turn.reply } satisfies RunOutcome
    if (turn.reply === "") return { status: "ok", reply: "", error: "the reply was empty, so nothing was delivered" } satisfies RunOutcome
    if (notifier === undefined) {
      return { status: "error", reply: turn.reply, error: "no channel runs in this process, so the reply could not be delivered" } satisfies RunOutcome
    }
    return yield* notifier.notify(job.deliverUser, { text: turn.reply }, { channel: job.deliverChannel ?? undefined }).pipe(
      Effect.map((channel): RunOutcome => ({ status: "ok", reply: turn.reply, deliveredTo: `${job.deliverUser}@${channel}` })),
      Effect.catch((e) => Effect.succeed<RunOutcome>({ status: "error", reply: turn.reply, error: `delivery failed: ${e.message}` }))
    )
  })
