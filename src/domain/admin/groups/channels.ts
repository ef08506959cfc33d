/**
 * `/api/channels`: the chat channels (as `anna channel list|set|enable|disable|login`). Settings are
 * shown with secret-looking values masked as `anna channel list` shows them; `PUT …/settings` merges
 * KEY=VALUE pairs like `anna channel set` (an empty value removes a key) and checks them with the
 * channel's Schema. A running gateway restarts the channel with its new settings. WeChat logs in by
 * QR code: `POST /api/channels/wechat/login` starts it (the code's URL to show), `GET
 * /api/channels/wechat/login/:id` follows it until `confirmed` (saved) or a failure.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors } from "../security.ts"

export const ChannelView = Schema.Struct({
  id: Schema.String,
  enabled: Schema.Boolean,
  /** Settings, secrets masked. */
  config: Schema.Record(Schema.String, Schema.Unknown),
  /** The running gateway's view (absent when this process runs no channels). */
  state: Schema.optional(Schema.Literals(["starting", "running", "failed", "stopped"])),
  description: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String)
})

export const WechatLoginState = Schema.Struct({
  id: Schema.String,
  status: Schema.Literals(["waiting", "scanned", "confirmed", "failed"]),
  /** What the QR code encodes (show it as a code, or as a link to open on the phone). */
  qrcodeUrl: Schema.optional(Schema.String),
  botId: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String)
})

const id = { id: Schema.String }

export class ChannelsGroup extends HttpApiGroup.make("channels")
  .add(
    HttpApiEndpoint.get("list", "/", { success: Schema.Array(ChannelView), error: CommonErrors }),
    HttpApiEndpoint.put("setSettings", "/:id/settings", {
      params: id,
      /** KEY → VALUE as `--config KEY=VALUE`; "" removes the key. */
      payload: Schema.Struct({ config: Schema.Record(Schema.String, Schema.String) }),
      success: ChannelView,
      error: CommonErrors
    }),
    HttpApiEndpoint.post("enable", "/:id/enable", { params: id, success: ChannelView, error: CommonErrors }),
    HttpApiEndpoint.post("disable", "/:id/disable", { params: id, success: ChannelView, error: CommonErrors }),
    HttpApiEndpoint.post("wechatLoginStart", "/wechat/login", { success: WechatLoginState, error: CommonErrors }),
    HttpApiEndpoint.get("wechatLoginStatus", "/wechat/login/:id", { params: id, success: WechatLoginState, error: CommonErrors })
  )
  .middleware(AdminAuth)
  .prefix("/channels")
{}
