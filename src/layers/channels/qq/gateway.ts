/**
 * The QQ WebSocket gateway (bot.q.qq.com/wiki, "事件订阅与通知"): one connection at a time, kept up
 * for as long as the effect runs.
 *
 * - Connect to the address `GET /gateway` gives; QQ sends op 10 Hello with `heartbeat_interval`.
 * - Without a session: op 2 Identify `{token: "QQBot <token>", intents, shard: [0, 1]}` → dispatch
 *   READY with `session_id`. With one (a dropped connection, or a restart with the session saved):
 *   op 6 Resume `{token, session_id, seq}` → QQ replays what came after `seq`, then RESUMED.
 * - op 1 Heartbeat every interval with the last `s` seen (null before any); op 11 is its ACK. A
 *   heartbeat without an ACK by the next one means a dead connection: closed and reconnected.
 * - op 7 Reconnect: reconnect and resume. op 9 Invalid Session: forget the session, identify anew.
 *   Close codes 4006/4007 (bad session, bad seq) also forget the session; 4004
 *   (bad token) fetches a new token; 4013/4014 (intents refused), 4914/4915 (bot offline, banned)
 *   are logged as errors and retried slowly.
 * - Every dispatch but READY/RESUMED goes to `onDispatch`, in order, then `onSeq` is told the new
 *   position (the channel keeps it as its cursor for a resume after a restart).
 *
 * Every frame is decoded by Schema; a malformed one is logged and skipped, never fatal.
 */
import { Duration, Effect, Queue, Schema } from "effect"
import WebSocket from "ws"
import type { QqApi } from "./api.ts"

/** GROUP_AND_C2C_EVENT: C2C_MESSAGE_CREATE, GROUP_AT_MESSAGE_CREATE, friend/group membership. */
export const INTENT_GROUP_AND_C2C = 1 << 25

/** The largest frame accepted from the gateway. */
const MAX_FRAME_BYTES = 4 * 1024 * 1024
const HANDSHAKE_TIMEOUT_MS = 15_000
/** Time for op 10 Hello to arrive once connected. */
const HELLO_TIMEOUT_MS = 30_000
/** Waits between reconnects: 1 s doubling to 30 s; 60 s after a refusal that will not pass by itself. */
const MAX_RECONNECT_DELAY_MS = 30_000
const FATAL_RECONNECT_DELAY_MS = 60_000

const SESSION_CLOSE_CODES = new Set([4006, 4007])
const TOKEN_CLOSE_CODES = new Set([4004])
const FATAL_CLOSE_CODES = new Set([4013, 4014, 4914, 4915])

export const Frame = Schema.Struct({
  op: Schema.Number,
  d: Schema.optional(Schema.Unknown),
  s: Schema.optional(Schema.NullOr(Schema.Number)),
  t: Schema.optional(Schema.NullOr(Schema.String)),
  id: Schema.optional(Schema.NullOr(Schema.String))
})

const Hello = Schema.Struct({ heartbeat_interval: Schema.Number.check(Schema.isGreaterThan(0)) })
const Ready = Schema.Struct({ session_id: Schema.String.check(Schema.isNonEmpty()) })

export interface GatewaySession {
  readonly sessionId: string
  readonly seq: number
}

export interface Dispatch {
  readonly t: string
  readonly d: unknown
  readonly s: number | undefined
}

export interface GatewayOptions {
  readonly api: QqApi
  readonly intents: number
  /** A session saved before a restart: resumed rather than identified anew. */
  readonly saved?: GatewaySession | undefined
  readonly onDispatch: (event: Dispatch) => Effect.Effect<void>
  /** The session and position after a dispatch (or READY); saved for a resume after a restart. */
  readonly onSeq?: ((session: GatewaySession) => Effect.Effect<void>) | undefined
  /** Milliseconds before reconnect number `attempt` (1 = the first after a drop). */
  readonly reconnectDelayMs?: ((attempt: number) => number) | undefined
}

type Event =
  | { readonly type: "frame"; readonly text: string }
  | { readonly type: "close"; readonly code: number; readonly reason: string }
  | { readonly type: "error"; readonly message: string }

/** Why a connection ended. */
type Ending =
  | { readonly kind: "closed"; readonly code: number; readonly reason: string }
  | { readonly kind: "reconnect" }
  | { readonly kind: "invalid-session" }
  | { readonly kind: "error"; readonly message: string }

interface State {
  sessionId: string | undefined
  seq: number | undefined
  /** Connections in a row that ended before a session was ready. */
  failures: number
}

const defaultDelay = (attempt: number): number => Math.min(MAX_RECONNECT_DELAY_MS, 1_000 * 2 ** Math.max(0, attempt - 1))

/** Runs the gateway until interrupted. */
export const runGateway = (g: GatewayOptions): Effect.Effect<never> => {
  const state: State = { sessionId: g.saved?.sessionId, seq: g.saved?.seq, failures: 0 }
  const delayOf = g.reconnectDelayMs ?? defaultDelay

  const connection: Effect.Effect<Ending> = Effect.scoped(
    Effect.gen(function*() {
      const url = yield* g.api.gatewayUrl
      const events = yield* Queue.unbounded<Event>()
      const ws = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const socket = new WebSocket(url, { maxPayload: MAX_FRAME_BYTES, handshakeTimeout: HANDSHAKE_TIMEOUT_MS })
          socket.on("message", (data: WebSocket.RawData) => {
            Queue.offerUnsafe(events, { type: "frame", text: rawText(data) })
          })
          socket.on("close", (code: number, reason: Buffer) => {
            Queue.offerUnsafe(events, { type: "close", code, reason: reason.toString("utf8").slice(0, 200) })
          })
          socket.on("error", (e: Error) => {
            Queue.offerUnsafe(events, { type: "error", message: e.message })
          })
          return socket
        }),
        (socket) =>
          Effect.sync(() => {
            socket.removeAllListeners()
            socket.on("error", () => undefined)
            if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) socket.terminate()
          })
      )
      const send = (payload: unknown) =>
        Effect.sync(() => {
          if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(payload))
        })
      let awaitingAck = false
      let greeted = false
      // A gateway that never says Hello is as good as gone.
      yield* Effect.forkScoped(
        Effect.sleep(Duration.millis(HELLO_TIMEOUT_MS)).pipe(Effect.andThen(Effect.sync(() => {
          if (!greeted) Queue.offerUnsafe(events, { type: "close", code: -1, reason: "no Hello from the gateway" })
        })))
      )
      // The position is read when each heartbeat goes out.
      const heartbeat = Effect.suspend(() => send({ op: 1, d: state.seq ?? null })).pipe(Effect.andThen(Effect.sync(() => {
        awaitingAck = true
      })))

      for (;;) {
        const event = yield* Queue.take(events)
        if (event.type === "close") return { kind: "closed", code: event.code, reason: event.reason } as const
        if (event.type === "error") return { kind: "error", message: event.message } as const
        const frame = decodeFrame(event.text)
        if (frame === undefined) {
          yield* Effect.logWarning(`qq: gateway sent a frame that is not a payload: ${event.text.slice(0, 120)}`)
          continue
        }
        switch (frame.op) {
          case 10: {
            greeted = true
            const hello = Schema.decodeUnknownOption(Hello)(frame.d)
            const interval = hello._tag === "Some" ? hello.value.heartbeat_interval : 45_000
            yield* Effect.forkScoped(
              Effect.gen(function*() {
                for (;;) {
                  yield* Effect.sleep(Duration.millis(interval))
                  if (awaitingAck) {
                    Queue.offerUnsafe(events, { type: "close", code: -1, reason: "no heartbeat ACK" })
                    return
                  }
                  yield* heartbeat
                }
              })
            )
            const token = yield* g.api.token.pipe(Effect.result)
            if (token._tag === "Failure") return { kind: "error", message: `no access token: ${token.failure.description}` } as const
            if (state.sessionId !== undefined && state.seq !== undefined) {
              yield* send({ op: 6, d: { token: `QQBot ${token.success}`, session_id: state.sessionId, seq: state.seq } })
            } else {
              yield* send({ op: 2, d: { token: `QQBot ${token.success}`, intents: g.intents, shard: [0, 1], properties: { $os: process.platform, $browser: "anna", $device: "anna" } } })
            }
            break
          }
          case 11:
            awaitingAck = false
            break
          case 1:
            yield* heartbeat
            break
          case 7:
            return { kind: "reconnect" } as const
          case 9:
            return { kind: "invalid-session" } as const
          case 0: {
            if (typeof frame.s === "number" && Number.isSafeInteger(frame.s)) state.seq = frame.s
            const t = frame.t ?? ""
            if (t === "READY") {
              const ready = Schema.decodeUnknownOption(Ready)(frame.d)
              if (ready._tag === "None") {
                yield* Effect.logWarning("qq: READY without a session id")
                break
              }
              state.sessionId = ready.value.session_id
              state.failures = 0
              yield* Effect.logInfo("qq: gateway session ready")
            } else if (t === "RESUMED") {
              state.failures = 0
              yield* Effect.logInfo("qq: gateway session resumed")
            } else {
              yield* g.onDispatch({ t, d: frame.d, s: frame.s ?? undefined })
            }
            if (g.onSeq !== undefined && state.sessionId !== undefined && state.seq !== undefined) {
              yield* g.onSeq({ sessionId: state.sessionId, seq: state.seq })
            }
            break
          }
          default:
            break
        }
      }
    })
  ).pipe(Effect.catch((e) => Effect.succeed({ kind: "error", message: e.description } as const)))

  const forgetSession = Effect.sync(() => {
    state.sessionId = undefined
    state.seq = undefined
  })

  const once = Effect.gen(function*() {
    const ending = yield* connection
    let delay: number
    switch (ending.kind) {
      case "reconnect":
        yield* Effect.logInfo("qq: gateway asked to reconnect")
        delay = 0
        break
      case "invalid-session":
        yield* Effect.logWarning("qq: gateway refused the session; identifying anew")
        yield* forgetSession
        delay = delayOf(1)
        break
      case "closed": {
        state.failures++
        if (SESSION_CLOSE_CODES.has(ending.code)) yield* forgetSession
        if (TOKEN_CLOSE_CODES.has(ending.code)) {
          const token = yield* g.api.token.pipe(Effect.option)
          if (token._tag === "Some") yield* g.api.invalidate(token.value)
        }
        const fatal = FATAL_CLOSE_CODES.has(ending.code)
        const text = `qq: gateway closed (${ending.code}${ending.reason === "" ? "" : ` ${ending.reason}`}); reconnecting`
        yield* fatal ? Effect.logError(`${text} — check the bot's status and intents on q.qq.com`) : Effect.logWarning(text)
        delay = fatal ? FATAL_RECONNECT_DELAY_MS : delayOf(state.failures)
        break
      }
      case "error":
        state.failures++
        yield* Effect.logWarning(`qq: gateway connection lost (${ending.message}); reconnecting`)
        delay = delayOf(state.failures)
        break
    }
    if (delay > 0) yield* Effect.sleep(Duration.millis(delay))
  })

  // Nothing ends the loop but interruption: a defect is logged and the connection made again.
  return Effect.forever(
    once.pipe(
      Effect.catchDefect((defect) =>
        Effect.logError("qq: the gateway connection failed unexpectedly; reconnecting", defect).pipe(
          Effect.andThen(Effect.sleep(Duration.millis(delayOf(1))))
        )
      )
    )
  )
}

const rawText = (data: WebSocket.RawData): string =>
  Array.isArray(data) ? Buffer.concat(data).toString("utf8") : Buffer.from(data instanceof ArrayBuffer ? new Uint8Array(data) : data).toString("utf8")

const decodeFrame = (text: string): typeof Frame.Type | undefined => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return undefined
  }
  const f = Schema.decodeUnknownOption(Frame)(json)
  return f._tag === "Some" ? f.value : undefined
}
