/**
 * `anna channel list|enable|disable|set|bind|unbind|bindings`: which channels the gateway runs, their
 * settings (secret-looking values always masked), and which agent answers a group chat.
 */
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { isValidId } from "../domain/config/agent.ts"
import { CHANNEL_IDS, type ChannelId, isChannelId, knownKeys, mergeChannelConfig, shownConfig, unknownChannel } from "../domain/config/channel.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { type Channel, ConfigStore } from "../services/ConfigStore.ts"
import { printJson, table, usageError } from "./output.ts"
import { Stores } from "./layers.ts"
import { json } from "./userCommands.ts"
import { loginCommand } from "./channelLogin.ts"

const channelId = Argument.String("id").pipe(Argument.withDescription(`Channel: ${CHANNEL_IDS.join(", ")}`))
const platform = Argument.String("platform").pipe(Argument.withDescription("Platform of the chat, e.g. telegram"))
const chatId = Argument.String("chatId").pipe(Argument.withDescription("The group chat's id on that platform"))

const shown = (c: Channel) => ({ ...c, config: shownConfig(c.config) })
const configText = (c: Channel) =>
  Object.entries(shownConfig(c.config)).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ") || "-"

/** A usage error of `anna channel <sub>`: exit 2 with its usage. */
const misuse = (sub: string, message: string) => usageError(["anna", "channel", sub], message)

/** The channel `id` names; any other id is a usage error of `anna channel <sub>`. */
const checkChannel = (id: string, sub: string) => (isChannelId(id) ? Effect.succeed<ChannelId>(id) : misuse(sub, unknownChannel(id)))

const current = (id: string) =>
  Effect.gen(function*() {
    const all = yield* (yield* ConfigStore).listChannels
    return Option.fromNullishOr(all.find((c) => c.id === id))
  })

const describe = (verb: string, c: Channel) => `${verb} channel ${c.id} (${c.enabled ? "enabled" : "disabled"}): ${configText(c)}`

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const stored = yield* (yield* ConfigStore).listChannels
    // Channels never configured are listed too, disabled, so every id the gateway knows shows up.
    const all: Array<Channel> = [
      ...stored,
      ...CHANNEL_IDS.filter((id) => !stored.some((c) => c.id === id)).map((id): Channel => ({ id, enabled: false, config: {} }))
    ].sort((a, b) => a.id.localeCompare(b.id))
    if (f.json) return yield* printJson(all.map(shown))
    yield* Console.log(table(["CHANNEL", "STATE", "CONFIG"], all.map((c) => [c.id, c.enabled ? "enabled" : "disabled", configText(c)])))
  })).pipe(Command.withDescription("List channels, whether each is enabled, and their settings"))

const toggle = (name: "enable" | "disable") =>
  Command.make(name, { id: channelId, json }, (f) =>
    Effect.gen(function*() {
      yield* checkChannel(f.id, name)
      const channel = yield* (yield* ConfigStore).setChannel(f.id, { enabled: name === "enable" })
      yield* f.json ? printJson(shown(channel)) : Console.log(describe(name === "enable" ? "Enabled" : "Disabled", channel))
    })).pipe(
      Command.withDescription(`${name === "enable" ? "Enable" : "Disable"} a channel (the gateway runs enabled channels)`)
    )

const set = Command.make("set", {
  id: channelId,
  // Not Flag.KeyValuePair: it refuses `KEY=` (an empty value), which removes a key here.
  config: Flag.String("config").pipe(
    Flag.atLeast(1),
    Flag.withDescription(
      `A setting KEY=VALUE (repeatable), checked by the channel's settings; ${
        CHANNEL_IDS.map((id) => `${id}: ${(knownKeys(id) ?? []).join(", ")}`).join("; ")
      }. An empty value removes a key (its default applies). A running gateway restarts the channel with the new settings.`
    )
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const id = yield* checkChannel(f.id, "set")
    const before = yield* current(id)
    const pairs: Record<string, string> = {}
    for (const item of f.config) {
      const eq = item.indexOf("=")
      if (eq <= 0) return yield* misuse("set", `--config takes KEY=VALUE, got "${item}"`)
      pairs[item.slice(0, eq)] = item.slice(eq + 1)
    }
    const merged = mergeChannelConfig(id, Option.match(before, { onNone: () => ({}), onSome: (c) => c.config }), pairs)
    if ("problem" in merged) return yield* misuse("set", merged.problem)
    const channel = yield* (yield* ConfigStore).setChannel(f.id, { config: merged.config })
    yield* f.json ? printJson(shown(channel)) : Console.log(describe("Updated", channel))
  })).pipe(Command.withDescription("Change a channel's settings"))

const checkChat = (p: string, chat: string, sub: string) =>
  !isValidId(p)
    ? misuse(sub, `platform "${p}" must be letters, digits, '.', '_' or '-'`)
    : chat.trim() === ""
    ? misuse(sub, "the chat id must not be empty")
    : Effect.void

const bind = Command.make("bind", {
  platform,
  chatId,
  agentId: Argument.String("agentId").pipe(Argument.withDescription("Agent that answers this chat")),
  json
}, (f) =>
  Effect.gen(function*() {
    yield* checkChat(f.platform, f.chatId, "bind")
    const agent = yield* (yield* AgentStore).get(f.agentId)
    yield* (yield* ConfigStore).bindChat(f.platform, f.chatId, agent.id)
    if (f.json) return yield* printJson({ platform: f.platform, chatId: f.chatId, agentId: agent.id })
    yield* Console.log(`Chat ${f.platform}/${f.chatId} is answered by agent ${agent.id}${agent.enabled ? "" : " (disabled: enable it first)"}.`)
  })).pipe(Command.withDescription("Bind a group chat to an agent"))

const unbind = Command.make("unbind", { platform, chatId, json }, (f) =>
  Effect.gen(function*() {
    yield* checkChat(f.platform, f.chatId, "unbind")
    const config = yield* ConfigStore
    const was = Option.getOrNull(yield* config.chatBinding(f.platform, f.chatId))
    yield* config.bindChat(f.platform, f.chatId, null)
    if (f.json) return yield* printJson({ platform: f.platform, chatId: f.chatId, agentId: null, was })
    yield* Console.log(
      was === null
        ? `Chat ${f.platform}/${f.chatId} was not bound; nothing changed.`
        : `Chat ${f.platform}/${f.chatId} is no longer bound to ${was}; it follows the routing rules again.`
    )
  })).pipe(Command.withDescription("Remove a group chat's binding"))

const bindings = Command.make("bindings", { json }, (f) =>
  Effect.gen(function*() {
    const all = yield* (yield* ConfigStore).listBindings
    const agents = yield* (yield* AgentStore).list
    const enabled = (agentId: string) => agents.some((a) => a.id === agentId && a.enabled)
    if (f.json) return yield* printJson(all.map((b) => ({ ...b, agentEnabled: enabled(b.agentId) })))
    if (all.length === 0) return yield* Console.log("No group chat is bound to an agent (bind one with anna channel bind PLATFORM CHAT_ID AGENT).")
    yield* Console.log(table(
      ["PLATFORM", "CHAT", "AGENT"],
      all.map((b) => [b.platform, b.chatId, enabled(b.agentId) ? b.agentId : `${b.agentId} (disabled: the chat follows the routing rules)`])
    ))
  })).pipe(Command.withDescription("List group chats bound to an agent"))

export const channelCommand = Command.make("channel").pipe(
  Command.withDescription("Channels: list, enable, disable, set (settings), bind/unbind (group chat → agent), bindings"),
  Command.withSubcommands([list, toggle("enable"), toggle("disable"), set, loginCommand, bind, unbind, bindings]),
  Command.provide(Stores)
)
