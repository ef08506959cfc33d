/**
 * `anna channel login wechat [--json]`: logs the WeChat bot in by QR code (iLink's
 * `get_bot_qrcode` / `get_qrcode_status`) and saves what iLink hands out — the bot token, the bot's
 * id, the id of the WeChat user who scanned, and the API address it names — in the wechat channel's
 * settings, checked like `anna channel set` (mergeChannelConfig).
 *
 * The code is drawn in the terminal with its URL below (open the URL elsewhere if the drawing does
 * not scan). States: waiting, scanned (confirm on the phone), confirmed (saved), expired (a new
 * code, at most MAX_CODES in all). With `--json` the code and the progress go to stderr and the
 * result to stdout. Ctrl-C stops it at any point; nothing is saved before confirmation.
 *
 * Part of the `channel` group (src/programs/channelCommands.ts), which
 * provides the stores.
 */
import { Clock, Console, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { mergeChannelConfig, WECHAT_DEFAULT_BASE_URL } from "../domain/config/channel.ts"
import { InvalidConfig } from "../domain/config/errors.ts"
import { getBotQrcode, getQrcodeStatus, type QrStatusResponse } from "../layers/channels/wechat/api.ts"
import type { PlatformCallError } from "../layers/channels/shared/calls.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { printJson } from "./output.ts"

/** QR codes shown before giving up (each lives a few minutes). */
export const MAX_CODES = 3
/** The whole login's time limit. */
const LOGIN_LIMIT_MS = 10 * 60 * 1000

const refused = (reason: string) => new InvalidConfig({ reason })

const trimUrl = (s: string) => s.trim().replace(/\/+$/, "")
const isHttpUrl = (s: string | undefined): s is string => s !== undefined && /^https?:\/\/[^\s/]+(\/\S*)?$/i.test(s.trim())

const unreachable = (baseUrl: string) => (e: PlatformCallError) =>
  refused(`cannot reach the WeChat iLink API at ${baseUrl} (${e.description}); check base_url with anna channel list`)

/** The login's outcome: what to save. */
interface Confirmed {
  readonly token: string
  readonly botId: string
  readonly ownerId: string | undefined
  readonly baseUrl: string | undefined
}

/** Shows codes and follows them until one is confirmed; fails on too many expiries or the time limit. */
const follow = (baseUrl: string, say: (line: string) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const deadline = (yield* Clock.currentTimeMillis) + LOGIN_LIMIT_MS
    for (let code = 1; code <= MAX_CODES; code++) {
      const qr = yield* getBotQrcode(baseUrl).pipe(Effect.mapError(unreachable(baseUrl)))
      const drawing = yield* Effect.tryPromise(() =>
        import("qrcode").then((QRCode) => QRCode.default.toString(qr.qrcode_img_content, { type: "terminal", small: true }))
      ).pipe(
        Effect.orElseSucceed(() => "")
      )
      yield* say(`${drawing}\nScan this QR code with WeChat${code > 1 ? ` (code ${code} of ${MAX_CODES})` : ""}, or open: ${qr.qrcode_img_content}`)
      yield* say("Waiting for the scan… (Ctrl-C to stop)")
      let pollUrl = baseUrl
      let last = "wait"
      for (;;) {
        if ((yield* Clock.currentTimeMillis) > deadline) return yield* refused("the login timed out; run anna channel login wechat again")
        const s: QrStatusResponse = yield* getQrcodeStatus(pollUrl, qr.qrcode).pipe(Effect.mapError(unreachable(pollUrl)))
        if (s.status === "wait") continue
        if (s.status === "scaned") {
          if (last !== "scaned") yield* say("Scanned: confirm the login in WeChat on your phone…")
          last = "scaned"
          continue
        }
        if (s.status === "scaned_but_redirect") {
          if (s.redirect_host !== undefined && /^[a-z0-9.-]+(:\d+)?$/i.test(s.redirect_host)) pollUrl = `https://${s.redirect_host}`
          continue
        }
        if (s.status === "expired") {
          yield* say(code < MAX_CODES ? "The QR code expired; here is a new one." : "The QR code expired.")
          break
        }
        if (s.status === "confirmed") {
          if (s.bot_token === undefined || s.bot_token.trim() === "" || s.ilink_bot_id === undefined || s.ilink_bot_id.trim() === "") {
            return yield* refused("WeChat confirmed the login but sent no bot token or bot id; run anna channel login wechat again")
          }
          const confirmed: Confirmed = {
            token: s.bot_token.trim(),
            botId: s.ilink_bot_id.trim(),
            ownerId: s.ilink_user_id?.trim() || undefined,
            baseUrl: isHttpUrl(s.baseurl) ? trimUrl(s.baseurl) : undefined
          }
          return confirmed
        }
        if (s.status === "need_verifycode" || s.status === "verify_code_blocked") {
          return yield* refused("WeChat asks for a verification code, which anna cannot enter; run anna channel login wechat again")
        }
        if (s.status === "binded_redirect") {
          return yield* refused("this WeChat bot is already bound to another client; unbind it in WeChat, then run anna channel login wechat again")
        }
        return yield* refused(`unexpected QR code status "${s.status.slice(0, 40)}"`)
      }
    }
    return yield* refused(`the QR code expired ${MAX_CODES} times; run anna channel login wechat again`)
  })

export const loginCommand = Command.make("login", {
  platform: Argument.String("platform").pipe(Argument.withDescription("The platform to log in to: wechat")),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
}, (f) =>
  Effect.gen(function*() {
    if (f.platform !== "wechat") {
      return yield* refused(`only wechat logs in by QR code; ${f.platform} takes its credentials with anna channel set ${f.platform} --config …`)
    }
    const config = yield* ConfigStore
    const stored = (yield* config.listChannels).find((c) => c.id === "wechat")
    const current = stored?.config ?? {}
    const configured = current.base_url
    const baseUrl = trimUrl(typeof configured === "string" && isHttpUrl(configured) ? configured : WECHAT_DEFAULT_BASE_URL)
    const say = (line: string) => (f.json ? Console.error(line) : Console.log(line))
    const done = yield* follow(baseUrl, say)
    const pairs: Record<string, string> = {
      token: done.token,
      bot_id: done.botId,
      ...(done.ownerId === undefined ? {} : { owner_id: done.ownerId }),
      ...(done.baseUrl === undefined ? {} : { base_url: done.baseUrl })
    }
    const merged = mergeChannelConfig("wechat", current, pairs)
    if ("problem" in merged) return yield* refused(merged.problem)
    const channel = yield* config.setChannel("wechat", { config: merged.config })
    const result = {
      channel: "wechat",
      botId: done.botId,
      ownerId: done.ownerId ?? null,
      baseUrl: typeof merged.config.base_url === "string" ? merged.config.base_url : WECHAT_DEFAULT_BASE_URL,
      enabled: channel.enabled
    }
    if (f.json) return yield* printJson(result)
    yield* Console.log(
      `Logged in: WeChat bot ${done.botId} is saved in the wechat channel's settings.${
        channel.enabled ? " A running gateway restarts the channel with it." : " Start it with: anna channel enable wechat"
      }`
    )
  })).pipe(
    Command.withDescription("Log a channel in by QR code (wechat: scan with WeChat; saves the bot token)")
  )
