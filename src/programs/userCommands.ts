/**
 * `anna user add|list|show|set|token`: the people who talk to agents, their default agent and their
 * HTTP tokens (a token is printed once, on stdout alone, so `$(anna user token ID)` captures it;
 * only its hash is stored). Users met on a platform are created by the runtime, not here.
 */
import { Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { InvalidConfig } from "../domain/config/errors.ts"
import * as SqliteRuntimeConfig from "../layers/SqliteRuntimeConfig.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { ConfigStore, type User } from "../services/ConfigStore.ts"
import { annaHome, database } from "./env.ts"
import { iso, printJson, table } from "./output.ts"

/** ConfigStore with the provider and agent stores on `$ANNA_HOME/anna.db`. */
export const runtimeConfigLayer = Layer.unwrap(Effect.map(annaHome, SqliteRuntimeConfig.layerWithStores)).pipe(
  Layer.provideMerge(database)
)

export const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const id = Argument.String("id").pipe(Argument.withDescription("User id"))
const name = Flag.String("name").pipe(Flag.withDescription("Display name"), Flag.optional)
const defaultAgent = Flag.String("default-agent").pipe(
  Flag.withDescription("Agent that answers this user unless a chat is bound to another"),
  Flag.optional
)

const identities = (u: User) => u.identities.map((i) => `${i.platform}:${i.externalId}`).join(", ") || "-"

const describeUser = (u: User) =>
  table(["", ""], [
    ["user", u.id],
    ["name", u.name || "-"],
    ["default agent", u.defaultAgentId ?? "(first enabled agent)"],
    ["identities", identities(u)],
    ["created", iso(u.createdAt)]
  ]).split("\n").slice(1).join("\n")

const requireUser = (userId: string) =>
  Effect.gen(function*() {
    const user = yield* (yield* ConfigStore).getUser(userId)
    if (Option.isNone(user)) return yield* new InvalidConfig({ reason: `no user "${userId}" (see: anna user list)` })
    return user.value
  })

const add = Command.make("add", { id, name, defaultAgent, json }, (f) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    // Checked first, so a missing agent leaves no half-made user behind.
    if (Option.isSome(f.defaultAgent)) yield* (yield* AgentStore).get(f.defaultAgent.value)
    yield* config.createUser(f.id, Option.getOrElse(f.name, () => f.id))
    if (Option.isSome(f.defaultAgent)) yield* config.setDefaultAgent(f.id, f.defaultAgent.value)
    const user = yield* requireUser(f.id)
    yield* f.json ? printJson(user) : Console.log(`Created user ${user.id}.\n${describeUser(user)}`)
  })).pipe(Command.withDescription("Create a user (for HTTP tokens, or to set a default agent ahead of time)"), Command.provide(runtimeConfigLayer))

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const users = yield* (yield* ConfigStore).listUsers
    if (f.json) return yield* printJson(users)
    if (users.length === 0) return yield* Console.log("No users yet. They appear when someone writes to a channel, or with anna user add.")
    yield* Console.log(table(
      ["USER", "NAME", "DEFAULT AGENT", "IDENTITIES", "CREATED"],
      users.map((u) => [u.id, u.name || "-", u.defaultAgentId ?? "-", identities(u), iso(u.createdAt)])
    ))
  })).pipe(Command.withDescription("List users and their platform identities"), Command.provide(runtimeConfigLayer))

const show = Command.make("show", { id, json }, (f) =>
  Effect.gen(function*() {
    const user = yield* requireUser(f.id)
    yield* f.json ? printJson(user) : Console.log(describeUser(user))
  })).pipe(Command.withDescription("Show one user"), Command.provide(runtimeConfigLayer))

const set = Command.make("set", {
  id,
  name,
  defaultAgent,
  noDefaultAgent: Flag.Boolean("no-default-agent").pipe(
    Flag.withDescription("Answer this user with the first enabled agent again"),
    Flag.withDefault(false)
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    if (f.noDefaultAgent && Option.isSome(f.defaultAgent)) {
      return yield* new InvalidConfig({ reason: "--default-agent and --no-default-agent contradict each other" })
    }
    if (Option.isNone(f.name) && Option.isNone(f.defaultAgent) && !f.noDefaultAgent) {
      return yield* new InvalidConfig({ reason: "nothing to change: pass --name, --default-agent or --no-default-agent" })
    }
    yield* requireUser(f.id)
    if (Option.isSome(f.defaultAgent)) yield* config.setDefaultAgent(f.id, f.defaultAgent.value)
    if (f.noDefaultAgent) yield* config.setDefaultAgent(f.id, null)
    if (Option.isSome(f.name)) yield* config.renameUser(f.id, f.name.value)
    const user = yield* requireUser(f.id)
    yield* f.json ? printJson(user) : Console.log(`Updated user ${user.id}.\n${describeUser(user)}`)
  })).pipe(Command.withDescription("Change a user's name or default agent"), Command.provide(runtimeConfigLayer))

const token = Command.make("token", {
  id,
  label: Flag.String("label").pipe(Flag.withDescription("What the token is for, e.g. laptop"), Flag.withDefault("")),
  json
}, (f) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    const user = yield* requireUser(f.id)
    const issued = yield* config.issueToken(f.id, f.label)
    if (f.json) return yield* printJson({ user, token: issued })
    yield* Console.error(`New HTTP token for ${user.id}; it is shown only this once (send it as "Authorization: Bearer …"):`)
    yield* Console.log(issued)
  })).pipe(Command.withDescription("Issue an HTTP bearer token for a user (printed once)"), Command.provide(runtimeConfigLayer))

export const userCommand = Command.make("user").pipe(
  Command.withDescription("Users: add, list, show, set (name, default agent), token (HTTP bearer tokens)"),
  Command.withSubcommands([add, list, show, set, token])
)
