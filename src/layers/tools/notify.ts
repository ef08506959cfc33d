/**
 * The `notify` tool (issue 12): lets an agent send the user it is talking to a message on their chat
 * app — a reminder they asked for, the result of long work — through the gateway's channels. Only
 * the session's own user can be written to (a chat user cannot make the agent message someone
 * else), only on a channel that can push and is running, and only when the agent's `tools` setting
 * allows `notify`. The gateway registers this source once its channels run; where none can push,
 * the tool is not offered at all.
 */
import { Effect, Option, Schema } from "effect"
import { canPush, PUSH_CHANNELS, pickChannel } from "../../domain/channels/notify.ts"
import { type Tool, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import type { Channels } from "../../services/Channels.ts"
import type { ConfigStore } from "../../services/ConfigStore.ts"
import type { ToolSource } from "../../services/ToolCatalog.ts"

export const TOOL_NAME = "notify"
/** A notification is a message, not a document. */
export const MAX_NOTIFY_CHARS = 4_000

const Input = Schema.Struct({
  text: Schema.String.annotate({ description: `The message (Markdown), at most ${MAX_NOTIFY_CHARS} characters.` }),
  channel: Schema.optionalKey(Schema.String.annotate({
    description: `Where (${PUSH_CHANNELS.join(", ")}); default: the app the user wrote from most recently.`
  }))
})
const decode = Schema.decodeUnknownEffect(Input)

const fail = (reason: string) => new ToolError({ tool: TOOL_NAME, reason })

const running = (channels: Channels["Service"]) =>
  Effect.map(channels.status, (all) => all.filter((c) => c.state === "running" && canPush(c.id)).map((c) => c.id))

export const notifyTool = (channels: Channels["Service"], config: ConfigStore["Service"]): Tool => ({
  definition: {
    name: TOOL_NAME,
    description: [
      "Send the user you are talking to a message on their chat app, outside this conversation's reply:",
      "a reminder they asked for, or word that long work is done. Not for answering them here (your answer",
      "reaches them anyway). Only they can be written to."
    ].join(" "),
    inputSchema: inputSchemaOf(Input)
  },
  execute: (raw, ctx) =>
    Effect.gen(function*() {
      const input = yield* decode(raw).pipe(Effect.mapError((e) => fail(`invalid input: ${e.message}`)))
      if (input.text.trim() === "") return yield* fail("the message is empty")
      if (input.text.length > MAX_NOTIFY_CHARS) return yield* fail(`the message is longer than ${MAX_NOTIFY_CHARS} characters`)
      const user = yield* config.getUser(ctx.userId).pipe(Effect.mapError((e) => fail(e.message)))
      if (Option.isNone(user)) return yield* fail("this conversation has no user to write to")
      const picked = pickChannel(user.value, yield* running(channels), input.channel)
      if ("problem" in picked) return yield* fail(picked.problem)
      yield* channels.notify(picked.channel, { userId: user.value.id }, { text: input.text }).pipe(Effect.mapError((e) => fail(e.reason)))
      return `Delivered on ${picked.channel}.`
    })
})

/** The tool source the gateway registers once its channels run: the tool when one can push, else nothing. */
export const notifySource = (channels: Channels["Service"], config: ConfigStore["Service"]): ToolSource => ({
  id: TOOL_NAME,
  tools: (session) =>
    Effect.gen(function*() {
      if (!session.enabled(TOOL_NAME)) return []
      return (yield* running(channels)).length === 0 ? [] : [notifyTool(channels, config)]
    })
})
