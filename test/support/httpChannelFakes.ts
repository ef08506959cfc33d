/**
 * Fakes for the HTTP channel's tests: a scripted Runtime (it records what it resolved and was
 * sent, and echoes `user|chat|agent: text` as a few text deltas), a ConfigStore that only knows
 * tokens (`tok-<userId>` is that user's token) and the gateway settings a test puts in
 * `fakeSettings`, and an AgentStore with "default", "coder" and a
 * disabled "off". The message text picks the script: "notice", "long", "gate", "hang", "/…".
 */
import { Deferred, Effect, Layer, Option, Stream } from "effect"
import type { Agent } from "../../src/domain/config/agent.ts"
import { AgentNotFound } from "../../src/domain/config/errors.ts"
import type { Usage } from "../../src/domain/model/types.ts"
import { Unauthorized } from "../../src/domain/runtime/errors.ts"
import { type ChatTarget, type ResolvedChat, sessionKeyOf, type TurnEvent, type UserMessage } from "../../src/domain/runtime/types.ts"
import { AgentStore } from "../../src/services/AgentStore.ts"
import { ConfigStore, type User } from "../../src/services/ConfigStore.ts"
import { Runtime } from "../../src/services/Runtime.ts"
import { sqliteTemp } from "./db.ts"

export const recorded = {
  targets: [] as Array<ChatTarget>,
  sends: [] as Array<{ readonly chat: ResolvedChat; readonly message: UserMessage }>,
  aborts: 0
}
export const resetRecorded = () => {
  recorded.targets.length = 0
  recorded.sends.length = 0
}

/** Set by a test before it sends "gate" (released by the test) or "hang" (completed when the turn's stream stops). */
export const control = {
  gate: Deferred.makeUnsafe<void>(),
  stopped: Deferred.makeUnsafe<void>()
}

const usage: Usage = { inputTokens: 11, outputTokens: 7, cacheReadTokens: 3, cacheWriteTokens: 0 }
const done = (stopReason: Extract<TurnEvent, { type: "done" }>["stopReason"] = "end_turn"): TurnEvent => ({
  type: "done",
  stopReason,
  usage,
  modelCalls: 1,
  toolCalls: 0
})
const text = (t: string): TurnEvent => ({ type: "text", text: t })

const describeMessage = (message: UserMessage): string =>
  typeof message === "string"
    ? message
    : message.map((b) =>
      b.type === "text" ? b.text : b.type === "image" ? (b.source.type === "base64" ? `[image base64 ${b.source.media_type}]` : "[image url]") : `[${b.type}]`
    ).join(" ")

/** `user|chat|agent: ` then the message word by word (spaces kept), as separate deltas. */
const echo = (chat: ResolvedChat, message: UserMessage): Array<TurnEvent> => [
  text(`${chat.userId}|${chat.chatId}|${chat.agentId}: `),
  ...(describeMessage(message).match(/\S+\s*/g) ?? []).map(text)
]

const script = (chat: ResolvedChat, message: UserMessage): Stream.Stream<TurnEvent> => {
  const said = typeof message === "string" ? message : ""
  if (said.startsWith("/")) return Stream.make(text(`command ${said} done`), done("command"))
  switch (said) {
    case "notice":
      return Stream.fromIterable([
        { type: "notice", text: "compacted 3 messages" },
        ...echo(chat, message),
        { type: "notice", text: "sandbox unavailable" },
        done("unavailable")
      ])
    case "long":
      return Stream.fromIterable([...echo(chat, message), done("max_tokens")])
    case "gate":
      return Stream.concat(
        Stream.make(text("before")),
        Stream.fromEffect(Deferred.await(control.gate)).pipe(Stream.flatMap(() => Stream.make(text("after"), done())))
      )
    case "hang":
      return Stream.concat(Stream.make(text("partial")), Stream.never).pipe(
        Stream.ensuring(Deferred.succeed(control.stopped, undefined))
      )
    default:
      return Stream.fromIterable([...echo(chat, message), done()])
  }
}

export const fakeRuntime = Layer.succeed(Runtime, Runtime.of({
  resolve: (target) =>
    Effect.sync(() => {
      recorded.targets.push(target)
      const userId = target.userId ?? target.externalUserId
      const agentId = target.agentId ?? "default"
      const chatId = target.chatId ?? "dm"
      return {
        userId,
        userName: target.userName ?? userId,
        agentId,
        platform: target.platform,
        chatId,
        isGroup: false,
        context: chatId,
        sessionKey: sessionKeyOf(agentId, target.platform, userId, chatId),
        model: ""
      }
    }),
  send: (chat, message) =>
    Stream.suspend(() => {
      recorded.sends.push({ chat, message })
      return script(chat, message)
    }),
  abort: () =>
    Effect.sync(() => {
      recorded.aborts++
      return false
    })
}))

const user = (id: string): User => ({
  id,
  name: id.charAt(0).toUpperCase() + id.slice(1),
  defaultAgentId: null,
  identities: [],
  createdAt: 0
})

const unused = Effect.die("not used by the HTTP channel")

/** Gateway settings (`anna settings set`) as the fake ConfigStore stores them; tests set and clear them. */
export const fakeSettings = new Map<string, string>()

export const fakeConfig = Layer.succeed(ConfigStore, ConfigStore.of({
  userForToken: (token) => {
    const id = /^tok-([a-z0-9]+)$/.exec(token)?.[1]
    return id === undefined ? Effect.fail(new Unauthorized({ reason: "unknown token" })) : Effect.succeed(user(id))
  },
  upsertUser: () => unused,
  claimIdentity: () => unused,
  getUser: () => unused,
  listUsers: unused,
  createUser: () => unused,
  renameUser: () => unused,
  linkIdentity: () => unused,
  unlinkIdentity: () => unused,
  setDefaultAgent: () => unused,
  setUserAttributes: () => unused,
  issueToken: () => unused,
  listTokens: () => unused,
  revokeToken: () => unused,
  removeUser: () => unused,
  unfinishedRemoval: () => unused,
  finishRemoval: () => unused,
  listChannels: unused,
  setChannel: () => unused,
  bindChat: () => unused,
  chatBinding: () => unused,
  chatAgent: () => unused,
  setChatAgent: () => unused,
  listBindings: unused,
  chatState: () => unused,
  setChatState: () => unused,
  getSetting: (key) => Effect.sync(() => Option.fromUndefinedOr(fakeSettings.get(key))),
  setSetting: () => unused,
  settingOnce: () => unused,
  deleteSetting: () => unused,
  snapshot: () => unused,
  version: unused
}))

const agent = (id: string, enabled: boolean, createdAt: number): Agent => ({
  id,
  name: id,
  providerId: "p",
  model: "",
  summaryProviderId: null,
  summaryModel: "",
  summaryMaxCalls: 10,
  summaryWindowSeconds: 3600,
  systemPrompt: "",
  sandboxImage: "",
  sandboxNetwork: "disabled",
  sandboxMemoryMb: 512,
  sandboxCpus: 1,
  sandboxPids: 128,
  sandboxWorkspace: "user",
  sandboxDiskMb: 1024,
  allowedModels: [],
  turnTimeoutSeconds: 900,
  contextTokens: 0,
  tools: null,
  maxTurns: 25,
  enabled,
  createdAt,
  updatedAt: createdAt
})

const agents = [agent("default", true, 1_700_000_000_000), agent("coder", true, 1_700_000_100_000), agent("off", false, 1_700_000_200_000)]

export const fakeAgents = Layer.succeed(AgentStore, AgentStore.of({
  list: Effect.succeed(agents),
  get: (id) => {
    const found = agents.find((a) => a.id === id)
    return found === undefined ? Effect.fail(new AgentNotFound({ id })) : Effect.succeed(found)
  },
  defaultAgent: Effect.succeed(Option.fromNullishOr(agents[0])),
  create: () => unused,
  update: () => unused,
  remove: () => unused
}))

/** With a database for what the channel keeps itself (Idempotency-Key claims). */
export const fakeServices = Layer.mergeAll(fakeRuntime, fakeConfig, fakeAgents, sqliteTemp)
