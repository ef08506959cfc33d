/**
 * `/api/chat`: the web console's chat, a channel like the others (platform `web`, the logged-in
 * user as the identity): `POST /api/chat` sends one message — a turn of the agent, or a slash command
 * (/new /compact /abort /whoami /model /agent) answered as on every channel — and streams the turn as
 * Server-Sent Events; `GET /api/chat/agents` lists the agents this user may talk to.
 *
 * The turn goes through the Runtime, so the agent's access policy applies (403 `access_denied` for a
 * user it is closed to; 404 for an agent that does not exist or is disabled). Tool activity is not
 * shown (the same fold as the other channels). Events, each an SSE `data:` line of JSON:
 * `start` (the session the message went to), `text` deltas in order, `notice` (something the user
 * should read), `status` (what anna did, e.g. compaction ran), then `done` — or `error` when the turn
 * could not be answered (then `done` follows with stopReason `unavailable`). A closed connection does
 * not stop the turn (it finishes and is stored); `/abort` or `POST /api/sessions/{key}/abort` does.
 *
 * Images come as `data:` URLs in `images` (../chatImages.ts: PNG, JPEG, GIF or WebP by their bytes,
 * at most MAX_CHAT_IMAGES; 400 `invalid_image` otherwise) and reach the model as image blocks beside
 * the text, as every channel's do. A body over MAX_CHAT_BODY_BYTES, or a message larger than memory
 * keeps, is a 413 (`ChatBodyLimit`), as on the HTTP channel.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema } from "effect/http-api"
import { MAX_CHAT_IMAGES } from "../chatImages.ts"
import { AdminAuth, CommonErrors, Forbidden, TooLarge, UserAllowed } from "../security.ts"

/** The web chat's platform name in chat targets and session keys. */
export const WEB_PLATFORM = "web"
/** The chat (session) name when the request names none. */
export const DEFAULT_WEB_CHAT = "default"

export const ChatRequest = Schema.Struct({
  agent: Schema.String,
  /** The chat's name (default "default"); /new moves it to a fresh context as on any channel. */
  session: Schema.optional(Schema.String),
  /** May be empty when images come with it. */
  message: Schema.String,
  /** Images as `data:image/…;base64,…` URLs. */
  images: Schema.optional(Schema.Array(Schema.String).check(Schema.isMaxLength(MAX_CHAT_IMAGES)))
})

const Usage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cacheReadTokens: Schema.Number,
  cacheWriteTokens: Schema.Number
})

export const ChatEvent = Schema.Union([
  Schema.Struct({ type: Schema.Literal("start"), sessionKey: Schema.String, agentId: Schema.String, chat: Schema.String }),
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("notice"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("status"), text: Schema.String }),
  /** The turn started over (its gateway node stopped mid-answer): the answer so far is void, the new one follows. */
  Schema.Struct({ type: Schema.Literal("restart") }),
  Schema.Struct({ type: Schema.Literal("error"), message: Schema.String, kind: Schema.NullOr(Schema.String) }),
  Schema.Struct({
    type: Schema.Literal("done"),
    /** `end_turn`, `max_tokens`, `aborted`, `command`, `unavailable`, … */
    stopReason: Schema.String,
    usage: Usage,
    modelCalls: Schema.Number,
    toolCalls: Schema.Number
  })
])
export type ChatEvent = typeof ChatEvent.Type

export const ChatAgent = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  /** The agent this user's chats go to when they name none (their default, else the first open). */
  isDefault: Schema.Boolean
})

/** Caps the chat's request bodies at MAX_CHAT_BODY_BYTES (413 beyond), before they are read whole. */
export class ChatBodyLimit extends HttpApiMiddleware.Service<ChatBodyLimit>()("anna/admin/ChatBodyLimit", { error: TooLarge }) {}

export class ChatGroup extends HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.post("send", "/", {
      payload: ChatRequest,
      success: HttpApiSchema.StreamSse({ data: ChatEvent }),
      error: [...CommonErrors, Forbidden, TooLarge]
    }),
    HttpApiEndpoint.get("agents", "/agents", { success: Schema.Array(ChatAgent), error: CommonErrors })
  )
  .annotate(UserAllowed, true)
  .middleware(ChatBodyLimit)
  .middleware(AdminAuth)
  .prefix("/chat")
{}
