/**
 * The `notify` tool (issue 12): lets an agent send the user it is talking to a message on their chat
 * app — a reminder they asked for, the result of long work, a picture it made — through the
 * notification dispatcher (services/Notifier.ts: the user's most recent app among the running
 * channels that can push, at most NOTIFY_LIMIT a minute). Only the session's own user can be written
 * to (a chat user cannot make the agent message someone else), and only when the agent's `tools`
 * setting allows `notify`. The gateway registers this source once its channels run; where none can
 * push, the tool is not offered at all.
 *
 * `image`: a PNG, JPEG, GIF or WebP file in the session's workspace, read through the sandbox's
 * confined `readFile` (nothing outside the workspace, no symlink out, at most 10 MiB) and sent as a
 * photo with the text as its caption.
 */
import { Effect, Schema } from "effect"
import { PUSH_CHANNELS } from "../../domain/channels/notify.ts"
import { type Tool, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import type { OutboundImage } from "../../services/Channel.ts"
import type { Notifier } from "../../services/Notifier.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"
import type { ToolSource } from "../../services/ToolCatalog.ts"
import { MAX_IMAGE_BYTES, sniffImage } from "../channels/shared/images.ts"

export const TOOL_NAME = "notify"
/** A notification is a message, not a document. */
export const MAX_NOTIFY_CHARS = 4_000

const Input = Schema.Struct({
  text: Schema.String.annotate({ description: `The message (Markdown), at most ${MAX_NOTIFY_CHARS} characters.` }),
  channel: Schema.optionalKey(Schema.String.annotate({
    description: `Where (${PUSH_CHANNELS.join(", ")}); default: the app the user wrote from most recently.`
  })),
  image: Schema.optionalKey(Schema.String.annotate({
    description: "A PNG, JPEG, GIF or WebP file in your workspace (e.g. /workspace/chart.png) to send as a picture, the text as its caption."
  }))
})
const decode = Schema.decodeUnknownEffect(Input)

const fail = (reason: string) => new ToolError({ tool: TOOL_NAME, reason })

/** A workspace file as an image to send, or why not. */
const readImage = (sandbox: Effect.Effect<SandboxSession, unknown>, path: string) =>
  Effect.gen(function*() {
    const session = yield* sandbox.pipe(Effect.mapError(() => fail("the workspace is not available, so no image can be read")))
    const entry = yield* session.readFile(path, { maxBytes: MAX_IMAGE_BYTES, maxEntries: 1 }).pipe(Effect.mapError((e) => fail(e.message)))
    if (entry._tag !== "File") return yield* fail(`${path} is a folder, not an image`)
    const mediaType = sniffImage(entry.bytes)
    if (mediaType === undefined) return yield* fail(`${path} is not a PNG, JPEG, GIF or WebP image`)
    const image: OutboundImage = { mediaType, bytes: entry.bytes, name: path.split("/").pop() ?? "image" }
    return image
  })

export const notifyTool = (notifier: Notifier["Service"], sandbox: Effect.Effect<SandboxSession, unknown>): Tool => ({
  definition: {
    name: TOOL_NAME,
    description: [
      "Send the user you are talking to a message on their chat app, outside this conversation's reply:",
      "a reminder they asked for, word that long work is done, or a picture from your workspace. Not for",
      "answering them here (your answer reaches them anyway). Only they can be written to."
    ].join(" "),
    inputSchema: inputSchemaOf(Input)
  },
  execute: (raw, ctx) =>
    Effect.gen(function*() {
      const input = yield* decode(raw).pipe(Effect.mapError((e) => fail(`invalid input: ${e.message}`)))
      if (input.text.trim() === "" && input.image === undefined) return yield* fail("the message is empty")
      if (input.text.length > MAX_NOTIFY_CHARS) return yield* fail(`the message is longer than ${MAX_NOTIFY_CHARS} characters`)
      const images = input.image === undefined ? [] : [yield* readImage(sandbox, input.image)]
      const channel = yield* notifier.notify(ctx.userId, { text: input.text, ...(images.length > 0 ? { images } : {}) }, { channel: input.channel }).pipe(
        Effect.mapError((e) => fail(e.reason))
      )
      return `Delivered on ${channel}.`
    })
})

/** The tool source the gateway registers once its channels run: the tool when one can push, else nothing. */
export const notifySource = (notifier: Notifier["Service"]): ToolSource => ({
  id: TOOL_NAME,
  tools: (session) =>
    Effect.gen(function*() {
      if (!session.enabled(TOOL_NAME)) return []
      return (yield* notifier.channels).length === 0 ? [] : [notifyTool(notifier, session.sandbox)]
    })
})
