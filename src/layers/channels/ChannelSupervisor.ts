/**
 * Channels: the gateway's enabled channels, each run with `Layer.launch` in a fiber of its own (a
 * FiberMap keyed by channel id), started when this layer is built and stopped when its scope closes.
 *
 * - Settings are decoded by the channel's own Schema; a bad value fails that channel with the key
 *   named (`channel http: port must be …`), and never the others.
 * - When the configuration version moves (LiveConfig), the channels are compared with what runs: a
 *   channel whose settings changed is stopped (its scope closed: an HTTP server lets answers in flight
 *   end) and started again with the new ones; a disabled one is stopped; a newly enabled one starts.
 * - At the gateway's start every enabled channel must come up: the first failure fails this layer
 *   (the gateway exits saying which channel and why). Later, a channel that fails to restart is
 *   reported in the log and in `status`, and the others go on.
 * - Each channel's state is the gauge `anna_channel_up`; deliveries (`notify`) count in
 *   `anna_channel_messages_total` as direction out.
 */
import { Cause, Context, Deferred, Effect, Exit, FiberMap, Layer, Result, Schema, Stream } from "effect"
import { ChannelError, ChannelStartFailed } from "../../domain/channels/errors.ts"
import { settingsProblem } from "../../domain/config/channel.ts"
import * as Metrics from "../../domain/observability/metrics.ts"
import { Channel, type ChannelDefinition } from "../../services/Channel.ts"
import { type ChannelStatus, Channels } from "../../services/Channels.ts"
import { LiveConfig } from "../../services/LiveConfig.ts"

/** A channel definition with its settings type hidden: stored config in, a layer (or what is wrong) out. */
export interface RunnableChannel<R> {
  readonly id: string
  readonly fromConfig: (config: Readonly<Record<string, unknown>>) => Result.Result<Layer.Layer<Channel, unknown, R>, string>
}

export const runnable = <S, E, R>(definition: ChannelDefinition<S, E, R>): RunnableChannel<R> => {
  const decode = Schema.decodeUnknownResult(definition.settings)
  return {
    id: definition.id,
    fromConfig: (config) => {
      const decoded = decode(config, { onExcessProperty: "error" })
      return decoded._tag === "Failure"
        ? Result.fail(settingsProblem(definition.id, decoded.failure))
        : Result.succeed(definition.layer(decoded.success))
    }
  }
}

export interface SupervisorOptions<R> {
  /** The kinds of channel this gateway can run (the composition root names them). */
  readonly channels: ReadonlyArray<RunnableChannel<R>>
  /** Settings that win over the stored ones, per channel id (the gateway's `--host`/`--port` for http). */
  readonly overrides?: Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined
  /**
   * Told every channel's status whenever one starts, fails or stops (the gateway publishes where its
   * HTTP channel listens); before the start is logged, so a reader of the log sees it done.
   */
  readonly onStatus?: ((status: ReadonlyArray<ChannelStatus>) => Effect.Effect<void>) | undefined
}

interface Running {
  /** The settings it was started with (JSON), to tell a change. */
  readonly settings: string
  status: ChannelStatus
  channel: Channel["Service"] | undefined
}

/** An error in words: its message, with what caused it when that says more (a server's listen error). */
export const describeError = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "_tag" in error && error._tag === "ChannelStartFailed" && "reason" in error) {
    return String(error.reason)
  }
  if (!(error instanceof Error)) return String(error)
  const own = error.message.trim()
  const inner = error.cause === undefined || error.cause === error ? "" : describeError(error.cause)
  if (own === "") return inner === "" ? error.name : inner
  return inner === "" || own.includes(inner) ? own : `${own}: ${inner}`
}

const reasonOf = (cause: Cause.Cause<unknown>): string => describeError(Cause.squash(cause))

export const make = <R>(options: SupervisorOptions<R>) =>
  Effect.gen(function*() {
    const live = yield* LiveConfig
    const context = yield* Effect.context<R>()
    const fibers = yield* FiberMap.make<string>()
    const running = new Map<string, Running>()
    const warnedUnknown = new Set<string>()
    const status = Effect.sync(() => [...running.values()].map((r) => r.status).sort((a, b) => a.id.localeCompare(b.id)))
    // Every channel kind's `anna_channel_up` (0 unless running: starting, failed, stopped or disabled), then the listener.
    const up = Effect.suspend(() => Metrics.channelsUp(options.channels.map((c) => ({ id: c.id, running: running.get(c.id)?.status.state === "running" }))))
    const changed = Effect.andThen(up, options.onStatus === undefined ? Effect.void : Effect.flatMap(status, options.onStatus))

    /** Starts one channel; the Deferred says when it is up or why it could not start. */
    let starting = true
    const launch = (channel: RunnableChannel<R>, config: Readonly<Record<string, unknown>>, settings: string) =>
      Effect.gen(function*() {
        const ready = yield* Deferred.make<void, ChannelStartFailed>()
        const entry: Running = { settings, status: { id: channel.id, state: "starting" }, channel: undefined }
        running.set(channel.id, entry)
        const failed = (reason: string) =>
          Effect.gen(function*() {
            entry.status = { id: channel.id, state: "failed", error: reason }
            entry.channel = undefined
            yield* changed
            // At the gateway's start the failure ends the gateway with this reason; later it is only logged.
            if (!starting) yield* Effect.logError(`channel ${channel.id} is down: ${reason}`)
            yield* Deferred.fail(ready, new ChannelStartFailed({ channel: channel.id, reason }))
          })
        const layer = channel.fromConfig(config)
        if (layer._tag === "Failure") {
          yield* failed(layer.failure)
          return ready
        }
        const up = layer.success.pipe(
          Layer.tap((built) =>
            Effect.gen(function*() {
              const service = Context.get(built, Channel)
              entry.channel = service
              entry.status = {
                id: channel.id,
                state: "running",
                description: service.description,
                ...(service.address === undefined ? {} : { address: service.address })
              }
              yield* changed
              yield* Effect.logInfo(`channel ${channel.id}: ${service.description}`)
              yield* Deferred.succeed(ready, undefined)
            })
          )
        )
        yield* FiberMap.run(
          fibers,
          channel.id,
          Layer.launch(up).pipe(
            Effect.provide(context),
            Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : failed(reasonOf(cause))))
          )
        )
        return ready
      })

    const stop = (id: string, why: string) =>
      Effect.gen(function*() {
        if (!running.has(id)) return
        yield* Effect.logInfo(`channel ${id}: stopping (${why})`)
        yield* FiberMap.remove(fibers, id)
        running.delete(id)
        yield* changed
      })

    /** Brings what runs in line with the configuration; the Deferreds of the channels it started. */
    const reconcile = Effect.gen(function*() {
      const configured = yield* live.channels
      const started: Array<Deferred.Deferred<void, ChannelStartFailed>> = []
      for (const stored of configured) {
        if (stored.enabled && !options.channels.some((c) => c.id === stored.id) && !warnedUnknown.has(stored.id)) {
          warnedUnknown.add(stored.id)
          yield* Effect.logWarning(`channel ${stored.id} is enabled, but this gateway cannot run it yet; it stays off`)
        }
      }
      for (const channel of options.channels) {
        const stored = configured.find((c) => c.id === channel.id)
        const current = running.get(channel.id)
        if (stored === undefined || !stored.enabled) {
          yield* stop(channel.id, "disabled")
          continue
        }
        const config = { ...stored.config, ...(options.overrides?.[channel.id] ?? {}) }
        const settings = JSON.stringify(config)
        if (current !== undefined && current.settings === settings) continue
        if (current !== undefined) yield* stop(channel.id, "its settings changed; starting it again with the new ones")
        started.push(yield* launch(channel, config, settings))
      }
      return started
    })

    // At start: every enabled channel up, or the first failure fails the gateway.
    for (const ready of yield* reconcile) yield* Deferred.await(ready)
    starting = false

    // The first value is the version current when the subscription starts (maybe newer than the one
    // just acted on), so it is acted on too: a redundant pass changes nothing, a skipped one would.
    yield* live.changes.pipe(
      Stream.runForEach(() =>
        reconcile.pipe(
          Effect.flatMap((started) => Effect.forEach(started, (ready) => Effect.ignore(Deferred.await(ready)), { discard: true })),
          Effect.catch((e) => Effect.logWarning(`channels: cannot read the configuration: ${e.message}`))
        )
      ),
      Effect.forkScoped
    )

    const notify = Effect.fn("Channels.notify")(function*(channelId: string, target: Parameters<Channel["Service"]["notify"]>[0], message: Parameters<Channel["Service"]["notify"]>[1]) {
      const channel = running.get(channelId)?.channel
      if (channel === undefined) {
        yield* Metrics.channelMessage(channelId, "out", "failed")
        return yield* new ChannelError({ channel: channelId, reason: running.has(channelId) ? "it is not running now" : "it is not enabled on this gateway" })
      }
      return yield* channel.notify(target, message).pipe(
        Effect.onExit((exit) => Metrics.channelMessage(channelId, "out", Exit.isSuccess(exit) ? "sent" : "failed"))
      )
    })

    return Channels.of({ status, notify })
  })

/**
 * Channels over the given channel kinds; needs LiveConfig and what the channels need (R). Building
 * it starts every enabled channel and fails when one cannot start.
 */
export const layer = <R>(options: SupervisorOptions<R>) => Layer.effect(Channels, make(options))
