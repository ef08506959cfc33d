/**
 * `anna user add|list|show|set|remove|token`: the people who talk to agents, their default agent and
 * their HTTP tokens (a token is printed once, on stdout alone, so `$(anna user token ID)` captures
 * it; only its hash is stored, and `token list` shows tokens by an id made from that hash). Users
 * met on a platform are created by the runtime, not here. `remove` (UserRemoval) leaves nothing to a
 * later user of the same id, and makes the operator choose what happens to the user's sessions: kept
 * under the id the user is removed as (readable by operators) or deleted for good (with the agents'
 * profiles of the user and their diary, which are drawn from them).
 */
import { Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { isValidId } from "../domain/config/agent.ts"
import { InvalidConfig } from "../domain/config/errors.ts"
import * as SqliteAccounts from "../layers/admin/SqliteAccounts.ts"
import * as UserRemovalLayer from "../layers/admin/UserRemoval.ts"
import * as SqliteDiary from "../layers/learning/SqliteDiary.ts"
import * as SqliteRuleVotes from "../layers/learning/SqliteRuleVotes.ts"
import * as SqliteSkillStats from "../layers/learning/SqliteSkillStats.ts"
import * as YamlPlaybook from "../layers/learning/YamlPlaybook.ts"
import * as SqliteJobStore from "../layers/scheduler/SqliteJobStore.ts"
import { Accounts, ROLES, type Role } from "../services/Accounts.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { ConfigStore, type TokenInfo, type User } from "../services/ConfigStore.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { UserRemoval } from "../services/UserRemoval.ts"
import { StoresWithMemory } from "./layers.ts"
import { iso, printJson, table, usageError } from "./output.ts"
import { describeRemoval } from "./userRemovalText.ts"

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
    ["attributes", Object.entries(u.attributes ?? {}).map(([k, v]) => `${k}=${v}`).join(", ") || "-"],
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
    if (!isValidId(f.id)) return yield* usageError(["anna", "user", "add"], `user id "${f.id}" must be 1–64 letters, digits, '.', '_' or '-'`)
    // Checked first, so a missing agent leaves no half-made user behind.
    if (Option.isSome(f.defaultAgent)) yield* (yield* AgentStore).get(f.defaultAgent.value)
    yield* config.createUser(f.id, Option.getOrElse(f.name, () => f.id))
    if (Option.isSome(f.defaultAgent)) yield* config.setDefaultAgent(f.id, f.defaultAgent.value)
    const user = yield* requireUser(f.id)
    yield* f.json ? printJson(user) : Console.log(`Created user ${user.id}.\n${describeUser(user)}`)
  })).pipe(Command.withDescription("Create a user (for HTTP tokens, or to set a default agent ahead of time)"))

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const users = yield* (yield* ConfigStore).listUsers
    if (f.json) return yield* printJson(users)
    if (users.length === 0) return yield* Console.log("No users yet. They appear when someone writes to a channel, or with anna user add.")
    yield* Console.log(table(
      ["USER", "NAME", "DEFAULT AGENT", "IDENTITIES", "CREATED"],
      users.map((u) => [u.id, u.name || "-", u.defaultAgentId ?? "-", identities(u), iso(u.createdAt)])
    ))
  })).pipe(Command.withDescription("List users and their platform identities"))

const show = Command.make("show", { id, json }, (f) =>
  Effect.gen(function*() {
    const user = yield* requireUser(f.id)
    yield* f.json ? printJson(user) : Console.log(describeUser(user))
  })).pipe(Command.withDescription("Show one user"))

const set = Command.make("set", {
  id,
  name,
  defaultAgent,
  noDefaultAgent: Flag.Boolean("no-default-agent").pipe(
    Flag.withDescription("Answer this user with the first enabled agent again"),
    Flag.withDefault(false)
  ),
  attr: Flag.KeyValuePair("attr").pipe(
    Flag.withDescription("An attribute KEY=VALUE for agents' access policies (repeatable), e.g. group=family"),
    Flag.optional
  ),
  removeAttr: Flag.String("remove-attr").pipe(Flag.withDescription("Removes the attribute KEY"), Flag.optional),
  json
}, (f) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    if (f.noDefaultAgent && Option.isSome(f.defaultAgent)) {
      return yield* usageError(["anna", "user", "set"], "--default-agent and --no-default-agent contradict each other")
    }
    if (Option.isNone(f.name) && Option.isNone(f.defaultAgent) && !f.noDefaultAgent && Option.isNone(f.attr) && Option.isNone(f.removeAttr)) {
      return yield* usageError(["anna", "user", "set"], "nothing to change: pass --name, --default-agent, --no-default-agent, --attr or --remove-attr")
    }
    yield* requireUser(f.id)
    if (Option.isSome(f.defaultAgent)) yield* config.setDefaultAgent(f.id, f.defaultAgent.value)
    if (f.noDefaultAgent) yield* config.setDefaultAgent(f.id, null)
    if (Option.isSome(f.name)) yield* config.renameUser(f.id, f.name.value)
    if (Option.isSome(f.attr) || Option.isSome(f.removeAttr)) {
      const changes: Record<string, string | null> = Object.fromEntries(Object.entries(Option.getOrElse(f.attr, () => ({}))).map(([k, v]) => [k.trim(), v.trim()]))
      if (Option.isSome(f.removeAttr)) changes[f.removeAttr.value.trim()] = null
      yield* config.setUserAttributes(f.id, changes)
    }
    const user = yield* requireUser(f.id)
    yield* f.json ? printJson(user) : Console.log(`Updated user ${user.id}.\n${describeUser(user)}`)
  })).pipe(Command.withDescription("Change a user's name, default agent or attributes"))

/** An identity as `PLATFORM:ID` (the first colon splits, so ids may hold colons). */
const identityArg = Argument.String("identity").pipe(
  Argument.withDescription("PLATFORM:ID, e.g. telegram:123456789 (see anna user list for the ones in use)")
)
const splitIdentity = (text: string, sub: "link" | "unlink") => {
  const colon = text.indexOf(":")
  return colon <= 0 || colon === text.length - 1
    ? usageError(["anna", "user", sub], `an identity is PLATFORM:ID, e.g. telegram:123456789; got "${text}"`)
    : Effect.succeed({ platform: text.slice(0, colon), externalId: text.slice(colon + 1) })
}

const link = Command.make("link", { id, identity: identityArg, json }, (f) =>
  Effect.gen(function*() {
    const { platform, externalId } = yield* splitIdentity(f.identity, "link")
    const user = yield* (yield* ConfigStore).linkIdentity(f.id, platform, externalId)
    yield* f.json ? printJson(user) : Console.log(`${platform}:${externalId} is now ${user.id}'s: messages from it reach them and their memory.`)
  })).pipe(Command.withDescription("Make a platform identity this user's (one person on several apps is one user)"))

const unlink = Command.make("unlink", { id, identity: identityArg, json }, (f) =>
  Effect.gen(function*() {
    const { platform, externalId } = yield* splitIdentity(f.identity, "unlink")
    const user = yield* (yield* ConfigStore).unlinkIdentity(f.id, platform, externalId)
    yield* f.json ? printJson(user) : Console.log(`${platform}:${externalId} is no longer ${user.id}'s; its next message makes a new user.`)
  })).pipe(Command.withDescription("Remove one of a user's platform identities"))

const issueOptions = {
  id,
  label: Flag.String("label").pipe(Flag.withDescription("What the token is for, e.g. laptop"), Flag.withDefault("")),
  role: Flag.Literals("role", ROLES).pipe(
    Flag.withDescription("The most the token may do: user (default) or admin (needs an admin account; the account's role caps it)"),
    Flag.withDefault("user")
  ),
  json
}
const issueToken = (f: { readonly id: string; readonly label: string; readonly role: Role; readonly json: boolean }) =>
  Effect.gen(function*() {
    const user = yield* requireUser(f.id)
    const issued = yield* (yield* Accounts).issueToken(f.id, f.label, f.role)
    if (f.json) return yield* printJson({ user, role: f.role, token: issued })
    yield* Console.error(
      `New ${f.role === "admin" ? "admin-scoped " : ""}HTTP token for ${user.id}; it is shown only this once (send it as "Authorization: Bearer …"):`
    )
    yield* Console.log(issued)
  })

const tokenIssue = Command.make("issue", issueOptions, issueToken).pipe(
  Command.withDescription("Issue an HTTP bearer token for a user (printed once); the same as anna user token <id>")
)

const tokenList = Command.make("list", {
  user: Argument.String("user").pipe(Argument.withDescription("Only this user's tokens"), Argument.optional),
  json
}, (f) =>
  Effect.gen(function*() {
    const tokens = yield* (yield* Accounts).listTokens(Option.getOrUndefined(f.user))
    if (f.json) return yield* printJson(tokens)
    if (tokens.length === 0) return yield* Console.log("No tokens. Issue one with: anna user token <user>")
    yield* Console.log(table(
      ["TOKEN ID", "USER", "ROLE", "LABEL", "CREATED", "MINTED BY", "MINTED"],
      tokens.map((t) => [t.id, t.userId, t.role, t.label || "-", iso(t.createdAt), t.mintedBy ?? "-", String(t.minted)])
    ))
  })).pipe(
    Command.withDescription(
      "List HTTP tokens by id (the start of their stored hash), never the tokens themselves; with the token that minted each, and how many live tokens each minted"
    )
  )

const describeToken = (t: TokenInfo) => `${t.id}${t.label === "" ? "" : ` (${t.label})`} of ${t.userId}`

const minted = (n: number) => `${n === 1 ? "the token" : `the ${n} tokens`} it minted (directly or not)`

const tokenRevoke = Command.make("revoke", {
  tokenId: Argument.String("token-id").pipe(Argument.withDescription("Token id from anna user token list (or enough of its start)")),
  cascade: Flag.Boolean("cascade").pipe(
    Flag.withDescription("Also revoke every token it minted, directly or not (works on a token revoked before, too)"),
    Flag.withDefault(false)
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const done = yield* (yield* Accounts).revokeToken(f.tokenId, { cascade: f.cascade })
    if (f.json) return yield* printJson(done)
    const n = done.cascaded.length
    if (done.revoked === null) {
      return yield* Console.log(`Token ${f.tokenId} was revoked already; ${n === 0 ? "it minted no token that still works." : `revoked ${minted(n)}; they are refused from now on.`}`)
    }
    yield* Console.log(`Revoked token ${describeToken(done.revoked)}${n === 0 ? "; it is" : ` and ${minted(n)}; they are`} refused from now on.`)
    if (done.remainingMinted > 0) {
      yield* Console.log(
        `${done.remainingMinted} token${done.remainingMinted === 1 ? "" : "s"} it minted (directly or not) still work: anna user token revoke ${done.revoked.id} --cascade revokes them.`
      )
    }
  })).pipe(
    Command.withDescription("Revoke an HTTP token (--cascade: and the tokens it minted): the HTTP channel refuses it (401) from the next request")
  )

const token = Command.make("token", issueOptions, issueToken).pipe(
  Command.withDescription("Issue an HTTP bearer token for a user (printed once); list and revoke tokens"),
  Command.withSubcommands([tokenList, tokenRevoke, tokenIssue])
)

/**
 * The removal's own stores (jobs, diary, skills' records, votes, playbook) over the group's: only `remove`
 * needs them.
 */
const UserRemovalLive = UserRemovalLayer.layer.pipe(
  Layer.provide(Layer.mergeAll(SqliteJobStore.layer, SqliteDiary.layer, SqliteSkillStats.layer, SqliteRuleVotes.layer, YamlPlaybook.layer))
)

const remove = Command.make("remove", {
  id,
  keepSessions: Flag.Boolean("keep-sessions").pipe(
    Flag.withDescription("Keep the user's sessions, profiles and diary under the id they are removed as (operators can still read them with anna memory)"),
    Flag.withDefault(false)
  ),
  deleteSessions: Flag.Boolean("delete-sessions").pipe(
    Flag.withDescription("Delete the user's sessions for good, as anna memory delete does, with the agents' profiles of the user and their diary"),
    Flag.withDefault(false)
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const REMOVE = ["anna", "user", "remove"]
    if (f.keepSessions && f.deleteSessions) return yield* usageError(REMOVE, "--keep-sessions and --delete-sessions contradict each other")
    const choice = f.keepSessions ? "keep" : f.deleteSessions ? "delete" : undefined
    // A removal that was cut short is finished with the choice it began with: no flag is needed then.
    if (choice === undefined && Option.isSome(yield* (yield* ConfigStore).getUser(f.id))) {
      const sessions = yield* (yield* MemoryStore).listConversations({ userId: f.id })
      return yield* usageError(
        REMOVE,
        `choose what happens to ${f.id}'s ${sessions.length} session(s): --keep-sessions (operators can still read them) or --delete-sessions (deleted for good)`
      )
    }
    const report = yield* (yield* UserRemoval).remove(f.id, choice)
    yield* f.json ? printJson(report) : Console.log(describeRemoval(report))
  })).pipe(
    Command.withDescription(
      "Remove a user for good: identities, tokens, chat states, account, scheduled jobs, own playbook rules, workspaces; choose --keep-sessions or --delete-sessions (a later user of the same id gets nothing of theirs)"
    ),
    Command.provide(UserRemovalLive)
  )

export const userCommand = Command.make("user").pipe(
  Command.withDescription("Users: add, list, show, set (name, default agent, attributes), link/unlink (platform identities), remove, token (HTTP bearer tokens: issue, list, revoke)"),
  Command.withSubcommands([add, list, show, set, link, unlink, remove, token]),
  Command.provide(SqliteAccounts.layer.pipe(Layer.provideMerge(StoresWithMemory)))
)
