/**
 * `anna notify <user> <text> [--channel C] [--json]`: an operator's message to a user, delivered on
 * a chat platform where the user has written from — the identity they used most recently among the
 * enabled channels that can push, unless `--channel` names one. The text is Markdown, rendered and
 * split for the platform as agents' replies are. Nothing runs in the background: the channel's
 * sending side is used directly (a running gateway need not be asked, and may be down).
 *
 * Channels that can push: the chat platforms (layers/channels/platforms.ts). The HTTP channel cannot
 * (its clients ask, it answers).
 */
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { loadPlatform } from "../layers/channels/platforms.ts"
import { InvalidConfig } from "../domain/config/errors.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { PUSH_CHANNELS, pickChannel } from "../domain/channels/notify.ts"
import { printJson, usageError } from "./output.ts"
import { Stores } from "./layers.ts"

const refused = (reason: string) => new InvalidConfig({ reason })

export const notifyCommand = Command.make("notify", {
  user: Argument.String("user").pipe(Argument.withDescription("The anna user (anna user list)")),
  text: Argument.String("text").pipe(Argument.withDescription("The message (Markdown)")),
  channel: Flag.String("channel").pipe(
    Flag.withDescription(`Deliver on this channel (${PUSH_CHANNELS.join(", ")}); default: where the user wrote from most recently`),
    Flag.optional
  ),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
}, (f) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    if (f.text.trim() === "") return yield* usageError(["anna", "notify"], "the message is empty")
    if (Option.isSome(f.channel) && !(PUSH_CHANNELS as ReadonlyArray<string>).includes(f.channel.value)) {
      return yield* usageError(["anna", "notify"], `channel "${f.channel.value}" cannot deliver messages (use one of ${PUSH_CHANNELS.join(", ")})`)
    }
    const user = yield* config.getUser(f.user)
    if (Option.isNone(user)) return yield* refused(`no user "${f.user}" (anna user list)`)
    const channels = yield* config.listChannels
    const picked = pickChannel(user.value, channels.filter((c) => c.enabled).map((c) => c.id), Option.getOrUndefined(f.channel))
    if ("problem" in picked) return yield* refused(picked.problem)
    const stored = channels.find((c) => c.id === picked.channel)?.config ?? {}
    const platform = yield* loadPlatform(picked.channel)
    if (platform === undefined) return yield* refused(`channel ${picked.channel} cannot deliver messages`)
    const channel = yield* platform.sender(stored).pipe(Effect.mapError(refused))
    yield* channel.notify({ userId: user.value.id }, { text: f.text })
    yield* f.json
      ? printJson({ user: user.value.id, channel: picked.channel, delivered: true })
      : Console.log(`Delivered to ${user.value.id} on ${picked.channel}.`)
  })).pipe(
    Command.withDescription(
      "Send a user a message on a chat platform they have written from (the most recent one, or --channel)"
    ),
    Command.provide(Stores)
  )
