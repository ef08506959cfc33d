/**
 * LiveConfig over ConfigStore: snapshots, settings and channels cached under the configuration
 * version they were read at. A read costs one query (`ConfigStore.version`) while nothing changed;
 * after a change anywhere (another process included) the next read reloads. A watcher fiber polls
 * the version and publishes it (`changes`) for as long as the layer's scope is open; where the store
 * hears changes as they happen (PostgreSQL's notifications), they are published at once.
 */
import { Duration, Effect, Layer, Option, Schedule, Stream, SubscriptionRef } from "effect"
import { settingValue } from "../../domain/config/settings.ts"
import { type Channel, ConfigStore, type Snapshot } from "../../services/ConfigStore.ts"
import { LiveConfig } from "../../services/LiveConfig.ts"

export interface LiveConfigOptions {
  /** How often the watcher reads the version (default 1 s). Reads on demand never wait for it. */
  readonly pollInterval?: Duration.Input | undefined
}

interface Cached<A> {
  readonly version: number
  readonly value: A
}

export const make = (options: LiveConfigOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* ConfigStore
    const snapshots = new Map<string, Cached<Snapshot>>()
    const settings = new Map<string, Cached<string>>()
    let channelList: Cached<ReadonlyArray<Channel>> | undefined

    /** `load` again only when the version moved since `cached` was read. */
    const current = <A, E>(cached: Cached<A> | undefined, load: Effect.Effect<A, E>) =>
      Effect.gen(function*() {
        const version = yield* store.version
        if (cached !== undefined && cached.version === version) return cached
        return { version, value: yield* load }
      })

    const snapshot = Effect.fn("LiveConfig.snapshot")(function*(agentId: string) {
      const next = yield* current(snapshots.get(agentId), store.snapshot(agentId)).pipe(
        Effect.tapError(() => Effect.sync(() => snapshots.delete(agentId)))
      )
      snapshots.set(agentId, next)
      return next.value
    })

    const setting = Effect.fn("LiveConfig.setting")(function*(key: string) {
      const stored = store.getSetting(key).pipe(Effect.map((o) => settingValue(key, o._tag === "Some" ? o.value : undefined)))
      const next = yield* current(settings.get(key), stored)
      settings.set(key, next)
      return next.value
    })

    const channels = Effect.gen(function*() {
      channelList = yield* current(channelList, store.listChannels)
      return channelList.value
    }).pipe(Effect.withSpan("LiveConfig.channels"))

    const seen = yield* SubscriptionRef.make(yield* store.version.pipe(Effect.orElseSucceed(() => 0)))
    // Only a new version is published; the poll and the notifications may both read it, so the
    // check and the write are one step.
    const publish = Effect.flatMap(store.version, (v) => SubscriptionRef.updateSome(seen, (old) => (v > old ? Option.some(v) : Option.none())))
    yield* publish.pipe(
      Effect.catch((e) => Effect.logWarning(`configuration watcher: ${e.message}`)),
      Effect.repeat(Schedule.spaced(options.pollInterval ?? Duration.seconds(1))),
      Effect.forkScoped
    )
    // Where the database notifies changes (PostgreSQL), they are published at once; the poll stays
    // as the net under a lost connection (the listener starts again after a failure).
    const changes = store.changes
    if (changes !== undefined) {
      yield* Stream.runForEach(changes, () => publish).pipe(
        Effect.catch((e) => Effect.logWarning(`configuration watcher: ${e.message}; listening again in 5 s`)),
        Effect.andThen(Effect.sleep(Duration.seconds(5))),
        Effect.forever,
        Effect.forkScoped
      )
    }

    return LiveConfig.of({
      snapshot,
      setting,
      channels,
      version: store.version,
      changes: SubscriptionRef.changes(seen)
    })
  })

/** LiveConfig; needs ConfigStore. */
export const layer = (options: LiveConfigOptions = {}) => Layer.effect(LiveConfig, make(options))
