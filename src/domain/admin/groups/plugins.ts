/**
 * `/api/plugins`: plugins and whether each is enabled (as `anna plugin list|enable|disable`); exactly
 * one memory plugin is enabled (enabling one disables the other). Plugin ids contain a slash
 * (`memory/lcm`), so they travel in the body, not the path.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors } from "../security.ts"

export const PluginView = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  enabled: Schema.Boolean,
  config: Schema.Record(Schema.String, Schema.Unknown)
})

export const PluginChange = Schema.Struct({ enabled: Schema.Array(Schema.String), disabled: Schema.Array(Schema.String) })

const which = Schema.Struct({ id: Schema.String })

export class PluginsGroup extends HttpApiGroup.make("plugins")
  .add(
    HttpApiEndpoint.get("list", "/", { success: Schema.Array(PluginView), error: CommonErrors }),
    HttpApiEndpoint.post("enable", "/enable", { payload: which, success: PluginChange, error: CommonErrors }),
    HttpApiEndpoint.post("disable", "/disable", { payload: which, success: PluginChange, error: CommonErrors })
  )
  .middleware(AdminAuth)
  .prefix("/plugins")
{}
