/**
 * The operator's side of adding a job (`anna schedule add`, the admin API): the agent, the owner
 * and the delivery target must exist before the JobStore checks the schedule. The owner is the
 * `--deliver` user; without a delivery target, `--user` names the owner (runs go through the
 * agent's access policy as that user), and one of the two is required.
 */
import { Effect, Option } from "effect"
import { canPush, PUSH_CHANNELS } from "../../domain/channels/notify.ts"
import { InvalidSchedule } from "../../domain/scheduler/errors.ts"
import { parseDeliver } from "../../domain/scheduler/schedule.ts"
import { type CatchUp, MAX_PROMPT_CHARS, type NewJob, type SessionMode } from "../../domain/scheduler/types.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { JobStore } from "../../services/JobStore.ts"
import { checkSchedule } from "./SqliteJobStore.ts"

export interface OperatorJob {
  readonly agent: string
  readonly cron?: string | undefined
  readonly every?: string | undefined
  readonly at?: string | undefined
  readonly tz?: string | undefined
  readonly prompt: string
  readonly sessionMode?: SessionMode | undefined
  /** `USER[@CHANNEL]` */
  readonly deliver?: string | undefined
  readonly user?: string | undefined
  readonly catchUp?: CatchUp | undefined
}

const invalid = (reason: string) => new InvalidSchedule({ reason })

/**
 * What is wrong with the job's values themselves, whatever is stored (the CLI's usage errors): the
 * delivery target's form and channel, `--user` against `--deliver`, an owner given at all, the prompt
 * and the schedule as the JobStore checks them. Whether the agent and the owner exist is not asked.
 */
export const operatorJobProblem = (input: OperatorJob, now: number): string | undefined => {
  const target = input.deliver === undefined ? undefined : parseDeliver(input.deliver)
  if (target !== undefined && "problem" in target) return target.problem
  const channel = target?.ok.channel ?? undefined
  if (channel !== undefined && !canPush(channel)) return `channel "${channel}" cannot deliver messages (use one of ${PUSH_CHANNELS.join(", ")})`
  const deliverUser = target?.ok.user
  if (input.user !== undefined && deliverUser !== undefined && input.user !== deliverUser) {
    return `--user ${input.user} and --deliver ${deliverUser} differ: a job delivers to its owner`
  }
  if (input.user === undefined && deliverUser === undefined) {
    return "give --deliver USER[@CHANNEL] (the owner, who gets the replies) or --user USER (the owner; replies stored only)"
  }
  if (input.prompt.trim() === "") return "the prompt is empty"
  if (input.prompt.length > MAX_PROMPT_CHARS) return `the prompt is longer than ${MAX_PROMPT_CHARS} characters`
  const schedule = checkSchedule({ ...input, agentId: input.agent, userId: "", createdBy: "operator" }, now)
  return "problem" in schedule ? schedule.problem : undefined
}

export const addOperatorJob = Effect.fn("Scheduler.addOperatorJob")(function*(input: OperatorJob) {
  const agents = yield* AgentStore
  const config = yield* ConfigStore
  yield* agents.get(input.agent)
  let deliverUser: string | undefined
  let deliverChannel: string | undefined
  if (input.deliver !== undefined) {
    const target = parseDeliver(input.deliver)
    if ("problem" in target) return yield* invalid(target.problem)
    deliverUser = target.ok.user
    deliverChannel = target.ok.channel ?? undefined
    if (deliverChannel !== undefined && !canPush(deliverChannel)) {
      return yield* invalid(`channel "${deliverChannel}" cannot deliver messages (use one of ${PUSH_CHANNELS.join(", ")})`)
    }
  }
  if (input.user !== undefined && deliverUser !== undefined && input.user !== deliverUser) {
    return yield* invalid(`--user ${input.user} and --deliver ${deliverUser} differ: a job delivers to its owner`)
  }
  const owner = input.user ?? deliverUser
  if (owner === undefined) return yield* invalid("give --deliver USER[@CHANNEL] (the owner, who gets the replies) or --user USER (the owner; replies stored only)")
  if (Option.isNone(yield* config.getUser(owner))) return yield* invalid(`no user "${owner}" (anna user list)`)
  const job: NewJob = {
    agentId: input.agent,
    userId: owner,
    cron: input.cron,
    every: input.every,
    at: input.at,
    tz: input.tz,
    prompt: input.prompt,
    sessionMode: input.sessionMode,
    deliverUser,
    deliverChannel,
    catchUp: input.catchUp,
    createdBy: "operator"
  }
  return yield* (yield* JobStore).add(job)
})
