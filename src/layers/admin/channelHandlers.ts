/**
 * `/api/channels` handlers: `anna channel list|set|enable|disable|login wechat` over ConfigStore,
 * settings merged and checked by `mergeChannelConfig` and shown by `shownConfig` (secrets masked) as
 * the CLI does, with the running gateway's state of each channel when `Channels` is there.
 *
 * WeChat's QR login runs in the background of this layer (a fiber per login, in the layer's scope):
 * `start` fetches a code and returns its URL at once, the fiber long-polls iLink until the code is
 * confirmed (the bot token saved in the wechat channel's settings, as `anna channel login wechat`),
 * expires or fails; `status` reads how far it got. Logins are forgotten an hour after they end.
 */
import { Clock, Effect, Option, Ref, Scope } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { randomUUID } from "node:crypto"
import { AdminApi } from "../../domain/admin/api.ts"
import type { WechatLoginState } from "../../domain/admin/groups/channels.ts"
import { BadRequest, NotFound } from "../../domain/admin/security.ts"
import { CHANNEL_IDS, type ChannelId, isChannelId, mergeChannelConfig, shownConfig, unknownChannel, WECHAT_DEFAULT_BASE_URL } from "../../domain/config/channel.ts"
import { type Channel, ConfigStore } from "../../services/ConfigStore.ts"
import { type ChannelStatus, Channels } from "../../services/Channels.ts"
import { getBotQrcode, getQrcodeStatus } from "../channels/wechat/api.ts"
import { answer } from "./errors.ts"

type LoginState = typeof WechatLoginState.Type

/** The whole login's time limit (as the CLI's). */
const LOGIN_LIMIT_MS = 10 * 60 * 1000
/** Logins kept at once (each holds a long poll). */
const MAX_LOGINS = 8

const isHttpUrl = (s: string | undefined): s is string => s !== undefined && /^https?:\/\/[^\s/]+(\/\S*)?$/i.test(s.trim())
const trimUrl = (s: string) => s.trim().replace(/\/+$/, "")

const checkChannel = (id: string): Effect.Effect<ChannelId, BadRequest | NotFound> =>
  isChannelId(id) ? Effect.succeed(id) : Effect.fail(NotFound.of(unknownChannel(id)))

export const layer = HttpApiBuilder.group(AdminApi, "channels", Effect.fn(function*(handlers) {
  const config = yield* ConfigStore
  const running = yield* Effect.serviceOption(Channels)
  const scope = yield* Scope.Scope
  const logins = yield* Ref.make(new Map<string, { readonly state: LoginState; readonly endedAt: number | undefined }>())

  const view = (c: Channel, statuses: ReadonlyArray<ChannelStatus>) => {
    const s = statuses.find((x) => x.id === c.id)
    const state: ChannelStatus["state"] | "stopped" | undefined = s?.state ?? (Option.isSome(running) ? "stopped" : undefined)
    return {
      id: c.id,
      enabled: c.enabled,
      config: shownConfig(c.config),
      ...(state === undefined ? {} : { state }),
      ...(s?.description === undefined ? {} : { description: s.description }),
      ...(s?.error === undefined ? {} : { error: s.error })
    }
  }
  const statuses = Option.isSome(running) ? running.value.status : Effect.succeed([])
  const stored = (id: string) => Effect.map(config.listChannels, (all) => all.find((c) => c.id === id))
  const shown = (c: Channel) => Effect.map(statuses, (s) => view(c, s))

  const setLogin = (id: string, state: LoginState, ended: boolean) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Ref.update(logins, (m) => new Map(m).set(id, { state, endedAt: ended ? now : undefined })))

  /** Follows one code until it is confirmed (and saved), expires or fails. */
  const follow = (id: string, baseUrl: string, qrcode: string, qrcodeUrl: string) =>
    Effect.gen(function*() {
      const deadline = (yield* Clock.currentTimeMillis) + LOGIN_LIMIT_MS
      let pollUrl = baseUrl
      const fail = (error: string) => setLogin(id, { id, status: "failed", qrcodeUrl, error }, true)
      for (;;) {
        if ((yield* Clock.currentTimeMillis) > deadline) return yield* fail("the login timed out; start it again")
        const s = yield* getQrcodeStatus(pollUrl, qrcode).pipe(Effect.result)
        if (s._tag === "Failure") return yield* fail(`cannot reach the WeChat iLink API at ${pollUrl} (${s.failure.description})`)
        const status = s.success
        if (status.status === "wait") continue
        if (status.status === "scaned") {
          yield* setLogin(id, { id, status: "scanned", qrcodeUrl }, false)
          continue
        }
        if (status.status === "scaned_but_redirect") {
          if (status.redirect_host !== undefined && /^[a-z0-9.-]+(:\d+)?$/i.test(status.redirect_host)) pollUrl = `https://${status.redirect_host}`
          continue
        }
        if (status.status === "expired") return yield* fail("the QR code expired; start the login again")
        if (status.status !== "confirmed") return yield* fail(`WeChat answered "${status.status.slice(0, 40)}"; start the login again`)
        const token = status.bot_token?.trim() ?? ""
        const botId = status.ilink_bot_id?.trim() ?? ""
        if (token === "" || botId === "") return yield* fail("WeChat confirmed the login but sent no bot token or bot id; start it again")
        const owner = status.ilink_user_id?.trim() ?? ""
        const current = (yield* stored("wechat"))?.config ?? {}
        const merged = mergeChannelConfig("wechat", current, {
          token,
          bot_id: botId,
          ...(owner === "" ? {} : { owner_id: owner }),
          ...(isHttpUrl(status.baseurl) ? { base_url: trimUrl(status.baseurl) } : {})
        })
        if ("problem" in merged) return yield* fail(merged.problem)
        yield* config.setChannel("wechat", { config: merged.config })
        return yield* setLogin(id, { id, status: "confirmed", qrcodeUrl, botId }, true)
      }
    }).pipe(Effect.catchCause(() => setLogin(id, { id, status: "failed", qrcodeUrl, error: "the login failed; see the gateway's log" }, true)))

  const startLogin = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    // Forget logins that ended over an hour ago; refuse when too many are still running.
    yield* Ref.update(logins, (m) => new Map([...m].filter(([, l]) => l.endedAt === undefined || now - l.endedAt < 3_600_000)))
    const live = [...(yield* Ref.get(logins)).values()].filter((l) => l.endedAt === undefined).length
    if (live >= MAX_LOGINS) return yield* BadRequest.of("too many WeChat logins are running; finish one first")
    const configured = (yield* stored("wechat"))?.config.base_url
    const baseUrl = trimUrl(typeof configured === "string" && isHttpUrl(configured) ? configured : WECHAT_DEFAULT_BASE_URL)
    const qr = yield* getBotQrcode(baseUrl).pipe(
      Effect.mapError((e) => BadRequest.of(`cannot reach the WeChat iLink API at ${baseUrl} (${e.description}); check base_url`))
    )
    const id = randomUUID()
    const state: LoginState = { id, status: "waiting", qrcodeUrl: qr.qrcode_img_content }
    yield* setLogin(id, state, false)
    yield* Effect.forkIn(follow(id, baseUrl, qr.qrcode, qr.qrcode_img_content), scope)
    return state
  })

  return handlers
    .handle("list", () =>
      answer(Effect.gen(function*() {
        const all = yield* config.listChannels
        const s = yield* statuses
        // Channels never configured are listed too, disabled, as `anna channel list` does.
        return CHANNEL_IDS.map((id) => all.find((c) => c.id === id) ?? { id, enabled: false, config: {} })
          .concat(all.filter((c) => !isChannelId(c.id)))
          .map((c) => view(c, s))
      })))
    .handle("setSettings", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        const id = yield* checkChannel(params.id)
        const merged = mergeChannelConfig(id, (yield* stored(id))?.config ?? {}, payload.config)
        if ("problem" in merged) return yield* BadRequest.of(merged.problem)
        return yield* shown(yield* config.setChannel(id, { config: merged.config }))
      })))
    .handle("enable", ({ params }) =>
      answer(Effect.flatMap(checkChannel(params.id), (id) => Effect.flatMap(config.setChannel(id, { enabled: true }), shown))))
    .handle("disable", ({ params }) =>
      answer(Effect.flatMap(checkChannel(params.id), (id) => Effect.flatMap(config.setChannel(id, { enabled: false }), shown))))
    .handle("wechatLoginStart", () => answer(startLogin))
    .handle("wechatLoginStatus", ({ params }) =>
      Effect.gen(function*() {
        const login = (yield* Ref.get(logins)).get(params.id)
        if (login === undefined) return yield* NotFound.of(`no WeChat login ${params.id} (they are forgotten an hour after they end)`)
        return login.state
      }))
}))
