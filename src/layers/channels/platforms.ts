/**
 * The chat platforms anna can run (issue 12): for each, its gateway channel, its `anna doctor`
 * check and its sending side (`anna notify`), each module loaded only when used. The composition
 * root (programs/layers.ts), `anna doctor` and `anna notify` read this table, so a new platform is
 * one module exporting a `PlatformChannel` and one line here.
 */
import { Effect, Layer, type Result } from "effect"
import { type ChannelId, channelSettingsSchema, decodeChannelSettings } from "../../domain/config/channel.ts"
import type { Channel } from "../../services/Channel.ts"
import type { ChannelLedger } from "../../services/ChannelLedger.ts"
import type { ConfigStore } from "../../services/ConfigStore.ts"
import type { Runtime } from "../../services/Runtime.ts"
import type { ChannelDefinition } from "../../services/Channel.ts"
import type { ChannelStartFailed } from "../../domain/channels/errors.ts"

/** A chat platform's channel with its checks, for settings `S`. */
export interface PlatformChannel<S> {
  readonly definition: ChannelDefinition<S, ChannelStartFailed, Runtime | ConfigStore | ChannelLedger>
  /**
   * `anna doctor`: asks the platform whether the credentials work (within `doctor`'s time limit);
   * one line of what runs (e.g. `bot @name (https://api.telegram.org)`), or what is wrong.
   */
  readonly check: (settings: S) => Effect.Effect<string, string>
  /** What to run when the check fails. */
  readonly fix: string
  /** The channel's sending side only (no inbound connection): `anna notify` delivers through it. */
  readonly sender: (settings: S) => Effect.Effect<Channel["Service"], never, ConfigStore>
}

/** A platform's module, its settings type erased behind decoding. */
export interface LoadedPlatform {
  readonly definition: ChannelDefinition<never, ChannelStartFailed, Runtime | ConfigStore | ChannelLedger>
  readonly check: (config: Readonly<Record<string, unknown>>) => Effect.Effect<string, string>
  readonly fix: string
  readonly sender: (config: Readonly<Record<string, unknown>>) => Effect.Effect<Channel["Service"], string, ConfigStore>
}

const erase = <S>(id: ChannelId, p: PlatformChannel<S>): LoadedPlatform => {
  const decode = (config: Readonly<Record<string, unknown>>): Result.Result<S, string> => decodeChannelSettings<S>(id, config)
  return {
    definition: p.definition as unknown as ChannelDefinition<never, ChannelStartFailed, Runtime | ConfigStore | ChannelLedger>,
    fix: p.fix,
    check: (config) => {
      const s = decode(config)
      return s._tag === "Failure" ? Effect.fail(s.failure) : p.check(s.success)
    },
    sender: (config) => {
      const s = decode(config)
      return s._tag === "Failure" ? Effect.fail(s.failure) : p.sender(s.success)
    }
  }
}

/** The chat platforms by channel id, each loaded on first use. */
export const PLATFORMS: Readonly<Record<string, () => Promise<LoadedPlatform>>> = {
  telegram: () => import("./TelegramChannel.ts").then((m) => erase("telegram", m.platformChannel)),
  feishu: () => import("./FeishuChannel.ts").then((m) => erase("feishu", m.platformChannel)),
  qq: () => import("./QqChannel.ts").then((m) => erase("qq", m.platformChannel)),
  wechat: () => import("./WechatChannel.ts").then((m) => erase("wechat", m.platformChannel))
}

/** The platform module for `id`, or undefined (the http channel, an unknown id). */
export const loadPlatform = (id: string): Effect.Effect<LoadedPlatform | undefined> => {
  const load = Object.hasOwn(PLATFORMS, id) ? PLATFORMS[id] : undefined
  return load === undefined ? Effect.succeed(undefined) : Effect.promise(load)
}

/**
 * The gateway's definition of platform `id` with its module loaded only when the channel starts
 * (an SDK nobody enabled is never imported); its settings are decoded by the Schema in
 * domain/config/channel.ts, the same one its module uses.
 */
export const lazyDefinition = (
  id: ChannelId
): ChannelDefinition<unknown, ChannelStartFailed, Runtime | ConfigStore | ChannelLedger> => ({
  id,
  settings: channelSettingsSchema(id),
  layer: (settings) =>
    Layer.unwrap(
      Effect.map(Effect.promise(() => PLATFORMS[id]?.() ?? Promise.reject(new Error(`no platform ${id}`))), (p) =>
        p.definition.layer(settings as never))
    )
})

/** The platforms' ids. */
export const PLATFORM_IDS = Object.keys(PLATFORMS) as ReadonlyArray<ChannelId>
