/**
 * `/api/bindings`: group chats bound to an agent (as `anna channel bind|unbind|bindings`). A bound
 * chat is answered by its agent instead of the routing rules.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { AdminAuth, CommonErrors } from "../security.ts"

export const BindingView = Schema.Struct({
  platform: Schema.String,
  chatId: Schema.String,
  agentId: Schema.String,
  /** A binding to a disabled agent is kept, but the chat follows the routing rules meanwhile. */
  agentEnabled: Schema.Boolean
})

const chat = { platform: Schema.String, chatId: Schema.String }

export class BindingsGroup extends HttpApiGroup.make("bindings")
  .add(
    HttpApiEndpoint.get("list", "/", { success: Schema.Array(BindingView), error: CommonErrors }),
    HttpApiEndpoint.put("bind", "/:platform/:chatId", {
      params: chat,
      payload: Schema.Struct({ agentId: Schema.String }),
      success: BindingView,
      error: CommonErrors
    }),
    HttpApiEndpoint.delete("unbind", "/:platform/:chatId", { params: chat, success: HttpApiSchema.NoContent, error: CommonErrors })
  )
  .middleware(AdminAuth)
  .prefix("/bindings")
{}
