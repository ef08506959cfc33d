/**
 * A scripted `Runtime` for channel tests: each message is answered by a script of events, and
 * what the channel did (targets resolved, messages sent, aborts) is recorded. A script may wait
 * for an abort: it then emits "stopped" and `done` "aborted" like the real runtime.
 */
import { Deferred, Effect, Layer, Queue, Stream } from "effect"
import type { Usage } from "../../src/domain/model/types.ts"
import type { ChatTarget, ResolvedChat, TurnEvent, UserMessage } from "../../src/domain/runtime/types.ts"
import { Runtime } from "../../src/services/Runtime.ts"

export type Step = TurnEvent | { readonly type: "wait_for_abort" }

export type DoneReason = Extract<TurnEvent, { type: "done" }>["stopReason"]

export const usage: Usage = { inputTokens: 12, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 }

export const done = (stopReason: DoneReason): TurnEvent => ({ type: "done", stopReason, usage, modelCalls: 1, toolCalls: 0 })

export interface Recorded {
  readonly targets: Array<ChatTarget>
  readonly messages: Array<UserMessage>
  /** Bumped by every `abort` call. */
  aborts: number
}

/**
 * `script(message)` gives the events for a message. `started` completes when a script reaches
 * `wait_for_abort` (the turn is "running").
 */
export const makeFakeRuntime = (script: (message: string) => ReadonlyArray<Step>) =>
  Effect.gen(function*() {
    const recorded: Recorded = { targets: [], messages: [], aborts: 0 }
    const started = yield* Deferred.make<void>()
    let aborted = yield* Deferred.make<void>()
    const resolve = (target: ChatTarget) =>
      Effect.sync(() => {
        recorded.targets.push(target)
        const agentId = target.agentId ?? "default"
        const context = target.chatId ?? "dm"
        const chat: ResolvedChat = {
          userId: "u1",
          userName: target.userName ?? "",
          agentId,
          platform: target.platform,
          chatId: context,
          isGroup: false,
          context,
          sessionKey: `${agentId}:${target.platform}:u1:${context}`,
          model: ""
        }
        return chat
      })
    const send = (_chat: ResolvedChat, message: UserMessage): Stream.Stream<TurnEvent> =>
      Stream.callback<TurnEvent>((queue) =>
        Effect.gen(function*() {
          recorded.messages.push(message)
          for (const step of script(typeof message === "string" ? message : JSON.stringify(message))) {
            if (step.type === "wait_for_abort") {
              yield* Deferred.succeed(started, undefined)
              yield* Deferred.await(aborted)
              aborted = yield* Deferred.make<void>()
              yield* Queue.offer(queue, { type: "notice", text: "stopped" })
              yield* Queue.offer(queue, done("aborted"))
            } else {
              yield* Queue.offer(queue, step)
            }
          }
          yield* Queue.end(queue)
        })
      )
    const abort = (_chat: ResolvedChat) =>
      Effect.gen(function*() {
        recorded.aborts += 1
        return yield* Deferred.succeed(aborted, undefined)
      })
    const service = Runtime.of({ resolve, send, abort })
    return { layer: Layer.succeed(Runtime, service), service, recorded, started }
  })
