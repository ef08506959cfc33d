/**
 * `/api/settings`: gateway-wide settings (as `anna settings list|get|set|unset`), checked by their
 * spec in src/domain/config/settings.ts; the next turn reads them.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors } from "../security.ts"

export const SettingView = Schema.Struct({
  key: Schema.String,
  /** What applies now: the stored value, or the default. */
  value: Schema.String,
  defaultValue: Schema.String,
  /** Whether a value is stored (else the default applies). */
  stored: Schema.Boolean,
  description: Schema.String
})

const key = { key: Schema.String }

export class SettingsGroup extends HttpApiGroup.make("settings")
  .add(
    HttpApiEndpoint.get("list", "/", { success: Schema.Array(SettingView), error: CommonErrors }),
    HttpApiEndpoint.put("set", "/:key", { params: key, payload: Schema.Struct({ value: Schema.String }), success: SettingView, error: CommonErrors }),
    HttpApiEndpoint.delete("unset", "/:key", { params: key, success: SettingView, error: CommonErrors })
  )
  .middleware(AdminAuth)
  .prefix("/settings")
{}
