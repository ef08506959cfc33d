/**
 * What every chat platform does with an inbound message (issue 12), written once:
 *
 * - **Exactly-once**: `accept` claims the message in the ChannelLedger by the platform's id for it
 *   before anything acts on it; a second delivery (a reconnect, a redelivery, a restart before the
 *   platform saw our acknowledgement) is dropped. The reply's platform ids are recorded as they are
 *   sent; the message is marked answered when the whole reply is out. `resume` (once, at start)
 *   answers again what a crash left unanswered in the last day, into the messages already written
 *   (the user's message is not stored again when the first attempt stored it, and an answer it
 *   stored is given again rather than asked anew: SendOptions.resumed).
 * - **Who and where**: the platform's `read` says who sent it, in which chat, and what it asks (or
 *   that it is not for the bot); the Runtime resolves the user (created on first contact), the agent
 *   and the session `{agent}:{platform}:{user}:{context}`. A refusal (no agent) is answered politely.
 * - **Order and load**: messages of one chat are answered one at a time, in order; slash commands are
 *   answered at once (so /abort reaches a running turn). At most `maxTurns` turns run at once across
 *   all chats (the rest wait their turn); a chat's lock is dropped when nothing waits on it.
 * - **A turn**: "typing…" renewed while it runs, its events fed to the platform's reply writer
 *   (which shows the answer and the notices, never tool activity), then the writer finishes.
 * - **Counted**: `anna_channel_messages_total`, in (accepted, duplicate, ignored, refused) and out
 *   (the reply sent, or failed).
 *
 * A platform provides a `PlatformAdapter` and calls `accept` for every message its connection
 * delivers (after moving its cursor when it has one).
 */
import { Clock, Duration, Effect, Exit, Fiber, Schedule, Semaphore, Stream } from "effect"
import * as Metrics from "../../../domain/observability/metrics.ts"
import type { StorageError } from "../../../domain/storage/errors.ts"
import type { ChatTarget, TurnEvent, UserMessage } from "../../../domain/runtime/types.ts"
import { ChannelLedger } from "../../../services/ChannelLedger.ts"
import { Runtime } from "../../../services/Runtime.ts"
import type { PlatformCallError } from "./calls.ts"
import * as Tracing from "../../../domain/observability/tracing.ts"

/** Unanswered messages older than this are not answered again after a restart. */
export const RESUME_WINDOW_MS = 24 * 3600 * 1000
/** Answered messages are forgotten after this (a platform never redelivers that late). */
export const KEEP_MS = 7 * 24 * 3600 * 1000
/** Turns running at once on one channel, by default. */
export const DEFAULT_MAX_TURNS = 32

/** What an inbound message asks of the bot. */
export interface Incoming {
  readonly target: ChatTarget
  /** Messages with the same key are answered one at a time, in order (the platform's chat id). */
  readonly chatKey: string
  /** Text, or text and images (downloaded, as image blocks). */
  readonly message: UserMessage
}

/** Shows one reply as the turn streams, on one platform. */
export interface ReplyWriter {
  /** One event of the turn (text deltas, notices; the rest is ignored). */
  readonly event: (e: TurnEvent) => Effect.Effect<void, PlatformCallError>
  /** The turn is over: write the final answer and the notices. */
  readonly finish: Effect.Effect<void, PlatformCallError>
}

export interface PlatformAdapter<M> {
  readonly platform: string
  /** The platform's message back from the payload stored with its claim (a resumed reply). */
  readonly decode: (payload: string) => M | undefined
  /** What `m` asks, or undefined when it is not for the bot (group mode, allow-list, empty, a bot). */
  readonly read: (m: M) => Effect.Effect<Incoming | undefined, PlatformCallError>
  /**
   * The reply to `m`. `existing`: platform ids written into before a crash (a resumed reply writes
   * into them rather than sending again); `onMessages` is told the whole id list whenever it grows.
   */
  readonly reply: (
    m: M,
    existing: ReadonlyArray<string>,
    onMessages: (ids: ReadonlyArray<string>) => Effect.Effect<void>
  ) => Effect.Effect<ReplyWriter, PlatformCallError>
  /** Shows "typing…" once; repeated every `typingEvery` while a turn runs. */
  readonly typing?: ((m: M) => Effect.Effect<void, unknown>) | undefined
  readonly typingEvery?: Duration.Input | undefined
}

export interface InboundOptions {
  readonly maxTurns?: number | undefined
}

/** The text of a user message (for command detection). */
const textOf = (m: UserMessage): string =>
  typeof m === "string" ? m : m.flatMap((b) => (b.type === "text" ? [b.text] : [])).join(" ")

export const isCommand = (m: UserMessage): boolean => /^\/[a-z]+(\s|$)/i.test(textOf(m).trim())

/** Locks by key that are dropped when nobody holds or waits on them. */
export const makeKeyedLocks = () => {
  const locks = new Map<string, { readonly semaphore: Semaphore.Semaphore; users: number }>()
  const withLock = <A, E, R>(key: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      let entry = locks.get(key)
      if (entry === undefined) {
        entry = { semaphore: Semaphore.makeUnsafe(1), users: 0 }
        locks.set(key, entry)
      }
      const held = entry
      held.users++
      return held.semaphore.withPermits(1)(effect).pipe(
        Effect.ensuring(Effect.sync(() => {
          held.users--
          if (held.users === 0 && locks.get(key) === held) locks.delete(key)
        }))
      )
    })
  return { withLock, size: () => locks.size }
}

export const makeInbound = <M>(adapter: PlatformAdapter<M>, options: InboundOptions = {}) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const ledger = yield* ChannelLedger
    const scope = yield* Effect.scope
    const platform = adapter.platform
    const chats = makeKeyedLocks()
    const turns = Semaphore.makeUnsafe(Math.max(1, options.maxTurns ?? DEFAULT_MAX_TURNS))
    const typingEvery = Duration.fromInputUnsafe(adapter.typingEvery ?? Duration.seconds(4))

    const typingLoop = (m: M) =>
      adapter.typing === undefined
        ? Effect.void
        : adapter.typing(m).pipe(Effect.ignore, Effect.repeat(Schedule.spaced(typingEvery)), Effect.asVoid)

    /** Answers `m` (claimed as `key`) into `existing` messages or new ones. */
    const handle = (key: string, m: M, existing: ReadonlyArray<string>, resumed: boolean): Effect.Effect<void> =>
      Effect.gen(function*() {
        const incoming = yield* adapter.read(m)
        if (incoming === undefined) {
          yield* Effect.annotateCurrentSpan("anna.message.outcome", "ignored")
          yield* Metrics.channelMessage(platform, "in", "ignored")
          return yield* ledger.answered(platform, key)
        }
        const writer = yield* adapter.reply(m, existing, (ids) => ledger.recordReply(platform, key, ids).pipe(Effect.ignore))
        // The reply is out when the writer has finished (`failed`: a platform call failed for good).
        const finish = writer.finish.pipe(
          Effect.onExit((exit) => Metrics.channelMessage(platform, "out", Exit.isSuccess(exit) ? "sent" : "failed")),
          Effect.withSpan("channel.deliver")
        )
        // Routing (`Runtime.resolve`), the turn and the delivery are children of this message's span.
        const parentSpan = yield* Tracing.currentSpan
        const resolved = yield* Effect.result(runtime.resolve(incoming.target))
        if (resolved._tag === "Failure") {
          yield* Effect.annotateCurrentSpan("anna.message.outcome", "refused")
          yield* Metrics.channelMessage(platform, "in", "refused")
          yield* writer.event({ type: "notice", text: resolved.failure.message })
          yield* finish
          return yield* ledger.answered(platform, key)
        }
        yield* Effect.annotateCurrentSpan("anna.message.outcome", "accepted")
        yield* Metrics.channelMessage(platform, "in", "accepted")
        const turn = Effect.gen(function*() {
          const typing = yield* Effect.forkChild(typingLoop(m))
          yield* Stream.runForEach(runtime.send(resolved.success, incoming.message, { resumed, parentSpan, turnId: `${platform}:${key}` }), writer.event).pipe(
            Effect.ensuring(Fiber.interrupt(typing))
          )
          yield* finish
          yield* ledger.answered(platform, key)
        })
        yield* isCommand(incoming.message) ? turn : chats.withLock(incoming.chatKey, turns.withPermits(1)(turn))
      }).pipe(
        // One trace per message a platform delivered: its routing, turn and delivery (no text, no ids of users).
        Effect.withSpan("channel.message", { root: true, attributes: { "anna.channel": platform, "anna.resumed": resumed } }),
        Effect.catchCause((cause) => Effect.logError(`${platform}: message ${key} was not answered`, cause)),
        Effect.asVoid
      )

    /**
     * A message the platform delivered: claimed by `key` (false when it was seen before, and then
     * nothing happens) and answered in the background. `payload` is what `decode` reads back.
     */
    const accept = (key: string, m: M, payload: string = JSON.stringify(m)): Effect.Effect<boolean, StorageError> =>
      ledger.claim(platform, key, payload).pipe(
        Effect.tap((fresh) => (fresh ? Effect.forkIn(handle(key, m, [], false), scope) : Metrics.channelMessage(platform, "in", "duplicate")))
      )

    /** Answers again what a crash left unanswered in the last RESUME_WINDOW_MS; forgets old answered ones. */
    const resume = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const open = yield* ledger.open(platform, now - RESUME_WINDOW_MS)
      let resumed = 0
      for (const entry of open) {
        const m = adapter.decode(entry.payload)
        if (m === undefined) {
          yield* ledger.answered(platform, entry.key)
          continue
        }
        resumed++
        yield* Effect.forkIn(handle(entry.key, m, entry.reply, true), scope)
      }
      yield* ledger.prune(platform, now - KEEP_MS).pipe(Effect.ignore)
      if (resumed > 0) yield* Effect.logInfo(`${platform}: finishing ${resumed} repl${resumed === 1 ? "y" : "ies"} a restart interrupted`)
      return resumed
    })

    return { accept, resume }
  })

/** Parses stored JSON, or undefined. */
export const parseJson = (payload: string): unknown => {
  try {
    return JSON.parse(payload)
  } catch {
    return undefined
  }
}
