/**
 * ConfigStore on SQLite (migrations/0004_runtime.sql): users and identities, hashed HTTP tokens,
 * channels, group-chat bindings, chat states, settings, and the per-agent Snapshot, read from
 * AgentStore and ProviderStore inside one read transaction so a pool never sees half an update.
 *
 * A removed user is recorded in removed_users (migrations/0025_user_removal.sql) until the rest of
 * their data is moved or deleted (UserRemoval); meanwhile their id cannot be given to a new user.
 *
 * Users met on a platform get a readable random id (`u_` + 10 base32 characters); tokens are
 * `anna_` + 32 random bytes (base64url) and only their SHA-256 is stored. Every read-then-write is
 * one IMMEDIATE transaction; plain reads take no write lock (upsertUser reads first for that reason:
 * it runs on every incoming message).
 */
import { Clock, Effect, Layer, Option, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { createHash, randomBytes } from "node:crypto"
import { checkAgentModel, isValidId } from "../../domain/config/agent.ts"
import { InvalidConfig } from "../../domain/config/errors.ts"
import { removedUserId } from "../../domain/config/removedUser.ts"
import { NoModel, Unauthorized } from "../../domain/runtime/errors.ts"
import { agentFolder, specFor } from "../../domain/sandbox/spec.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { AppConfig } from "../../services/AppConfig.ts"
import {
  type Channel,
  type ChatBinding,
  type ChatState,
  ConfigStore,
  DEFAULT_CONTEXT_TOKENS,
  type Removal,
  type RemovedUser,
  TOKEN_ID_LENGTH,
  type TokenInfo,
  type User
} from "../../services/ConfigStore.ts"
import { ProviderStore } from "../../services/ProviderStore.ts"
import { ROLES } from "../../services/Accounts.ts"
import * as Sqlite from "../sql/Sqlite.ts"
import * as SqlitePluginStore from "./SqlitePluginStore.ts"
import * as SqliteAgentStore from "./SqliteAgentStore.ts"
import * as SqliteProviderStore from "./SqliteProviderStore.ts"
import * as SqliteUsageLog from "./SqliteUsageLog.ts"
import { isPostgres } from "../sql/dialect.ts"
import { storageError } from "../sql/errors.ts"

const UserRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  default_agent_id: Schema.NullOr(Schema.String),
  attributes: Schema.String,
  created_at: Schema.Number,
  uid: Schema.String
})
const decodeAttributes = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Record(Schema.String, Schema.String)))

/** A user's stored attributes; anything unreadable counts as none (no policy matches on it). */
const storedAttributes = (json: string): Readonly<Record<string, string>> => {
  const r = decodeAttributes(json)
  return r._tag === "Success" ? r.success : {}
}

/** Why an attribute cannot be set, or undefined. */
export const attributeProblem = (key: string, value: string | null): string | undefined =>
  !/^[A-Za-z0-9_.@-]{1,64}$/.test(key)
    ? `attribute name "${key}" must be 1 to 64 letters, digits, _ . @ or -`
    : value !== null && (value.trim() === "" || value.length > 200 || value.includes(","))
    ? `attribute ${key} must have a value of 1 to 200 characters without commas`
    : undefined

/** How stale an identity's `last_seen_at` may get before a message from it writes the time again. */
const LAST_SEEN_EVERY_MS = 60_000
const IdentityRow = Schema.Struct({ platform: Schema.String, external_id: Schema.String, user_id: Schema.String, last_seen_at: Schema.Number })
const ChannelRow = Schema.Struct({
  id: Schema.String,
  enabled: Schema.Number,
  config: Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown))
})
const ChatStateRow = Schema.Struct({ context: Schema.String, model: Schema.String })
const BindingRow = Schema.Struct({ platform: Schema.String, chat_id: Schema.String, agent_id: Schema.String })
const decodeUsers = Schema.decodeUnknownEffect(Schema.Array(UserRow))
const decodeIdentities = Schema.decodeUnknownEffect(Schema.Array(IdentityRow))
const decodeChannels = Schema.decodeUnknownEffect(Schema.Array(ChannelRow))
const decodeChatStates = Schema.decodeUnknownEffect(Schema.Array(ChatStateRow))
const decodeBindings = Schema.decodeUnknownEffect(Schema.Array(BindingRow))

const toChannel = (r: typeof ChannelRow.Type): Channel => ({ id: r.id, enabled: r.enabled === 1, config: r.config })

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
const newUserId = Effect.sync(() => "u_" + Array.from(randomBytes(10), (b) => BASE32.charAt(b & 31)).join(""))
const newToken = Effect.sync(() => "anna_" + randomBytes(32).toString("base64url"))
export const hashToken = (token: string): string => createHash("sha256").update(token, "utf8").digest("hex")

const noUser = (id: string) => new InvalidConfig({ reason: `no user "${id}" (see: anna user list)` })

/** SQL and row-decoding failures become StorageError; the domain errors pass through. */
const storage = (operation: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    self,
    (e): e is Extract<E, SqlError | Schema.SchemaError> => isSqlError(e) || Schema.isSchemaError(e),
    (e) => Effect.fail(storageError(operation)(e))
  )

/** A platform's name as identities carry it (the channel ids: telegram, feishu, qq, wechat, http, cli…). */
const IDENTITY_PLATFORM = /^[a-z][a-z0-9_-]{0,31}$/
const hasControl = (text: string): boolean => [...text].some((ch) => (ch.codePointAt(0) ?? 0) < 0x20 || ch === "\u007f")

export const make = Effect.gen(function*() {
    const workspaces = (yield* AppConfig).workspaces
    const sql = yield* SqlClient.SqlClient
    const agents = yield* AgentStore
    const providers = yield* ProviderStore
    const immediate = Sqlite.immediate(sql)

    const readUsers = (where: "all" | { readonly id: string }) =>
      Effect.gen(function*() {
        const rows = yield* (where === "all"
          ? sql`SELECT id, name, default_agent_id, attributes, created_at, uid FROM users ORDER BY created_at, id`
          : sql`SELECT id, name, default_agent_id, attributes, created_at, uid FROM users WHERE id = ${where.id}`).pipe(Effect.flatMap(decodeUsers))
        const identities = yield* (where === "all"
          ? sql`SELECT platform, external_id, user_id, last_seen_at FROM user_identities ORDER BY platform, external_id`
          : sql`SELECT platform, external_id, user_id, last_seen_at FROM user_identities WHERE user_id = ${where.id}
              ORDER BY platform, external_id`).pipe(Effect.flatMap(decodeIdentities))
        return rows.map((r): User => ({
          id: r.id,
          name: r.name,
          defaultAgentId: r.default_agent_id,
          attributes: storedAttributes(r.attributes),
          identities: identities.filter((i) => i.user_id === r.id).map((i) => ({
            platform: i.platform,
            externalId: i.external_id,
            lastSeenAt: i.last_seen_at
          })),
          createdAt: r.created_at,
          uid: r.uid
        }))
      })
    const findUser = (id: string) => Effect.map(readUsers({ id }), (users) => Option.fromNullishOr(users[0]))
    const requireUser = (id: string) =>
      Effect.flatMap(findUser(id), (u) => (Option.isSome(u) ? Effect.succeed(u.value) : Effect.fail(noUser(id))))
    const userOfIdentity = (platform: string, externalId: string) =>
      sql<{ user_id: string }>`SELECT user_id FROM user_identities
        WHERE platform = ${platform} AND external_id = ${externalId}`.pipe(Effect.map((rows) => rows[0]?.user_id))
    /** A user found by identity must exist: the identity row cascades with its user. */
    const existing = (id: string) =>
      Effect.flatMap(findUser(id), (u) => (Option.isSome(u) ? Effect.succeed(u.value) : Effect.die(`identity of a missing user ${id}`)))

    const upsertUser = Effect.fn("ConfigStore.upsertUser")(function*(platform: string, externalId: string, name?: string) {
      const label = name?.trim() ?? ""
      const known = yield* userOfIdentity(platform, externalId)
      if (known !== undefined) {
        // When the user last wrote from here (notifications go to the most recent identity); written
        // at most once a minute, so most messages still cost no write.
        const seen = yield* Clock.currentTimeMillis
        yield* sql`UPDATE user_identities SET last_seen_at = ${seen}
          WHERE platform = ${platform} AND external_id = ${externalId} AND last_seen_at < ${seen - LAST_SEEN_EVERY_MS}`
        const user = yield* existing(known)
        if (label === "" || user.name !== "") return user
      }
      return yield* immediate(Effect.gen(function*() {
        const again = yield* userOfIdentity(platform, externalId)
        const now = yield* Clock.currentTimeMillis
        if (again !== undefined) {
          // Only a user without a name takes the platform's: a name set by the operator stays.
          yield* sql`UPDATE users SET name = ${label}, updated_at = ${now} WHERE id = ${again} AND name = ''`
          return yield* existing(again)
        }
        let id = ""
        for (let attempt = 0; id === "" && attempt < 5; attempt++) {
          const candidate = yield* newUserId
          const inserted = yield* sql<{ id: string }>`INSERT INTO users ${
            sql.insert({ id: candidate, name: label, default_agent_id: null, created_at: now, updated_at: now })
          } ON CONFLICT (id) DO NOTHING RETURNING id`
          if (inserted.length > 0) id = candidate
        }
        if (id === "") return yield* Effect.die("could not generate a free user id")
        yield* sql`INSERT INTO user_identities ${sql.insert({ platform, external_id: externalId, user_id: id, last_seen_at: now })}`
        return yield* existing(id)
      }))
    }, storage("upsert user"))

    const createUser = Effect.fn("ConfigStore.createUser")(function*(id: string, name: string) {
      if (!isValidId(id)) {
        return yield* new InvalidConfig({ reason: `user id "${id}" must be 1–64 letters, digits, '.', '_' or '-'` })
      }
      return yield* immediate(Effect.gen(function*() {
        // Data of the removed user may still be under the id: a new user must not find it.
        if (Option.isSome(yield* findRemoval(id))) {
          return yield* new InvalidConfig({ reason: `the removal of ${id} is not finished: run anna user remove ${id} again first` })
        }
        const now = yield* Clock.currentTimeMillis
        const inserted = yield* sql<{ id: string }>`INSERT INTO users ${
          sql.insert({ id, name: name.trim(), default_agent_id: null, created_at: now, updated_at: now })
        } ON CONFLICT (id) DO NOTHING RETURNING id`
        if (inserted.length === 0) return yield* new InvalidConfig({ reason: `a user "${id}" already exists` })
        return yield* existing(id)
      }))
    }, storage("create user"))

    const renameUser = Effect.fn("ConfigStore.renameUser")(function*(id: string, name: string) {
      return yield* immediate(Effect.gen(function*() {
        yield* requireUser(id)
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE users SET name = ${name.trim()}, updated_at = ${now} WHERE id = ${id}`
        return yield* existing(id)
      }))
    }, storage("rename user"))

    const identityProblem = (platform: string, externalId: string): string | undefined =>
      !IDENTITY_PLATFORM.test(platform)
        ? `platform "${platform}" must be 1–32 lowercase letters, digits, '_' or '-' (e.g. telegram)`
        : externalId.length === 0 || externalId.length > 256 || hasControl(externalId)
        ? "an identity's id must be 1–256 characters without control characters"
        : undefined

    const linkIdentity = Effect.fn("ConfigStore.linkIdentity")(function*(userId: string, platform: string, externalId: string) {
      const problem = identityProblem(platform, externalId)
      if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
      return yield* immediate(Effect.gen(function*() {
        yield* requireUser(userId)
        const owner = yield* userOfIdentity(platform, externalId)
        if (owner !== undefined && owner !== userId) {
          return yield* new InvalidConfig({ reason: `${platform}:${externalId} belongs to user ${owner}; unlink it there first` })
        }
        if (owner === undefined) {
          yield* sql`INSERT INTO user_identities ${sql.insert({ platform, external_id: externalId, user_id: userId, last_seen_at: 0 })}`
        }
        return yield* existing(userId)
      }))
    }, storage("link identity"))

    const claimIdentity = Effect.fn("ConfigStore.claimIdentity")(function*(platform: string, externalId: string, userId: string) {
      // A plain read first: on every start of `anna chat` after the first, the identity is held.
      if ((yield* userOfIdentity(platform, externalId)) !== undefined || identityProblem(platform, externalId) !== undefined) {
        return Option.none<User>()
      }
      return yield* immediate(Effect.gen(function*() {
        if ((yield* userOfIdentity(platform, externalId)) !== undefined || Option.isNone(yield* findUser(userId))) return Option.none<User>()
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO user_identities ${sql.insert({ platform, external_id: externalId, user_id: userId, last_seen_at: now })}`
        return Option.some(yield* existing(userId))
      }))
    }, storage("claim identity"))

    const unlinkIdentity = Effect.fn("ConfigStore.unlinkIdentity")(function*(userId: string, platform: string, externalId: string) {
      return yield* immediate(Effect.gen(function*() {
        yield* requireUser(userId)
        const removed = yield* sql<{ platform: string }>`DELETE FROM user_identities
          WHERE platform = ${platform} AND external_id = ${externalId} AND user_id = ${userId} RETURNING platform`
        if (removed.length === 0) return yield* new InvalidConfig({ reason: `user ${userId} has no identity ${platform}:${externalId}` })
        return yield* existing(userId)
      }))
    }, storage("unlink identity"))

    const setDefaultAgent = Effect.fn("ConfigStore.setDefaultAgent")(function*(userId: string, agentId: string | null) {
      yield* immediate(Effect.gen(function*() {
        yield* requireUser(userId)
        if (agentId !== null) yield* agents.get(agentId)
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE users SET default_agent_id = ${agentId}, updated_at = ${now} WHERE id = ${userId}`
      }))
    }, storage("set default agent"))

    const setUserAttributes = Effect.fn("ConfigStore.setUserAttributes")(function*(userId: string, changes: Readonly<Record<string, string | null>>) {
      for (const [k, v] of Object.entries(changes)) {
        const problem = attributeProblem(k, v)
        if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
      }
      yield* immediate(Effect.gen(function*() {
        yield* requireUser(userId)
        const rows = yield* sql<{ attributes: string }>`SELECT attributes FROM users WHERE id = ${userId}`
        const next: Record<string, string> = { ...storedAttributes(rows[0]?.attributes ?? "{}") }
        for (const [k, v] of Object.entries(changes)) {
          if (v === null) delete next[k]
          else next[k] = v
        }
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE users SET attributes = ${JSON.stringify(next)}, updated_at = ${now} WHERE id = ${userId}`
      }))
      const [user] = yield* readUsers({ id: userId })
      if (user === undefined) return yield* new InvalidConfig({ reason: `no user "${userId}"` })
      return user
    }, storage("set user attributes"))

    const issueToken = Effect.fn("ConfigStore.issueToken")(function*(userId: string, label: string) {
      const token = yield* newToken
      yield* immediate(Effect.gen(function*() {
        yield* requireUser(userId)
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO user_tokens ${
          sql.insert({ token_hash: hashToken(token), user_id: userId, label: label.trim(), created_at: now })
        }`
      }))
      return token
    }, storage("issue token"))

    const userForToken = Effect.fn("ConfigStore.userForToken")(function*(token: string) {
      const rows = yield* sql<{ user_id: string }>`SELECT user_id FROM user_tokens WHERE token_hash = ${hashToken(token)}`
      const id = rows[0]?.user_id
      if (id === undefined) return yield* new Unauthorized({ reason: "unknown or revoked token" })
      return yield* existing(id)
    }, storage("check token"))

    const TokenRow = Schema.Struct({
      token_hash: Schema.String,
      user_id: Schema.String,
      label: Schema.String,
      role: Schema.Literals(ROLES),
      created_at: Schema.Number
    })
    const decodeTokens = Schema.decodeUnknownEffect(Schema.Array(TokenRow))
    const toTokenInfo = (r: typeof TokenRow.Type): TokenInfo => ({
      id: r.token_hash.slice(0, TOKEN_ID_LENGTH),
      userId: r.user_id,
      label: r.label,
      role: r.role,
      createdAt: r.created_at
    })

    const listTokens = Effect.fn("ConfigStore.listTokens")(function*(userId?: string) {
      if (userId !== undefined) yield* requireUser(userId)
      const rows = yield* (userId === undefined
        ? sql`SELECT token_hash, user_id, label, role, created_at FROM user_tokens ORDER BY created_at, token_hash`
        : sql`SELECT token_hash, user_id, label, role, created_at FROM user_tokens WHERE user_id = ${userId}
            ORDER BY created_at, token_hash`).pipe(Effect.flatMap(decodeTokens))
      return rows.map(toTokenInfo)
    }, storage("list tokens"))

    const revokeToken = Effect.fn("ConfigStore.revokeToken")(function*(tokenId: string) {
      const prefix = tokenId.trim().toLowerCase()
      if (!/^[0-9a-f]{4,64}$/.test(prefix)) {
        return yield* new InvalidConfig({ reason: `"${tokenId}" is not a token id (see: anna user token list)` })
      }
      return yield* immediate(Effect.gen(function*() {
        const rows = yield* sql`SELECT token_hash, user_id, label, role, created_at FROM user_tokens
          WHERE substr(token_hash, 1, ${prefix.length}) = ${prefix}`.pipe(Effect.flatMap(decodeTokens))
        const [row, ...more] = rows
        if (row === undefined) return yield* new InvalidConfig({ reason: `no token "${tokenId}" (see: anna user token list)` })
        if (more.length > 0) {
          return yield* new InvalidConfig({ reason: `token id "${tokenId}" matches ${rows.length} tokens; give more of it` })
        }
        yield* sql`DELETE FROM user_tokens WHERE token_hash = ${row.token_hash}`
        return toTokenInfo(row)
      }))
    }, storage("revoke token"))

    const RemovalRow = Schema.Struct({
      removed_as: Schema.String,
      user_id: Schema.String,
      name: Schema.String,
      sessions: Schema.Literals(["keep", "delete"]),
      removed_at: Schema.Number,
      finished_at: Schema.NullOr(Schema.Number)
    })
    const decodeRemovals = Schema.decodeUnknownEffect(Schema.Array(RemovalRow))
    const findRemoval = (userId: string) =>
      sql`SELECT * FROM removed_users WHERE user_id = ${userId} AND finished_at IS NULL`.pipe(
        Effect.flatMap(decodeRemovals),
        Effect.map((rows) =>
          Option.map(Option.fromNullishOr(rows[0]), (r): Removal => ({
            userId: r.user_id,
            removedAs: r.removed_as,
            name: r.name,
            sessions: r.sessions,
            removedAt: r.removed_at,
            finishedAt: r.finished_at
          }))
        )
      )

    const removeUser = Effect.fn("ConfigStore.removeUser")(function*(userId: string, options: { readonly sessions: "keep" | "delete" } = { sessions: "keep" }) {
      return yield* immediate(Effect.gen(function*() {
        const user = yield* requireUser(userId)
        const count = (rows: ReadonlyArray<{ readonly n: number }>) => rows[0]?.n ?? 0
        const identities = count(yield* sql<{ n: number }>`SELECT count(*) AS n FROM user_identities WHERE user_id = ${userId}`)
        const tokens = count(yield* sql<{ n: number }>`SELECT count(*) AS n FROM user_tokens WHERE user_id = ${userId}`)
        const chatStates = count(yield* sql<{ n: number }>`SELECT count(*) AS n FROM chat_contexts WHERE user_id = ${userId}`)
        const account = count(yield* sql<{ n: number }>`SELECT count(*) AS n FROM accounts WHERE user_id = ${userId}`) > 0
        yield* sql`DELETE FROM user_identities WHERE user_id = ${userId}`
        yield* sql`DELETE FROM user_tokens WHERE user_id = ${userId}`
        yield* sql`DELETE FROM chat_contexts WHERE user_id = ${userId}`
        yield* sql`DELETE FROM chat_agent_choices WHERE user_id = ${userId}`
        // The account and its browser sessions (migration 0014) go too, foreign keys enforced or not.
        yield* sql`DELETE FROM web_sessions WHERE user_id = ${userId}`
        yield* sql`DELETE FROM accounts WHERE user_id = ${userId}`
        yield* sql`DELETE FROM users WHERE id = ${userId}`
        // A user made before migration 0025 without a uid still gets an id of their own to be kept under.
        const uid = user.uid !== undefined && user.uid !== "" ? user.uid : randomBytes(8).toString("hex")
        const now = yield* Clock.currentTimeMillis
        const removal: Removal = {
          userId,
          removedAs: removedUserId(userId, uid),
          name: user.name,
          sessions: options.sessions,
          removedAt: now,
          finishedAt: null
        }
        // Revoked tokens stay known by their lineage (migration 0023), as the removed user's, not the id's.
        yield* sql`UPDATE token_lineage SET user_id = ${removal.removedAs} WHERE user_id = ${userId}`
        yield* sql`INSERT INTO removed_users ${
          sql.insert({ removed_as: removal.removedAs, user_id: userId, name: user.name, sessions: options.sessions, removed_at: now, finished_at: null })
        }`
        const removed: RemovedUser = { userId, identities, tokens, chatStates, account, removal }
        return removed
      }))
    }, storage("remove user"))

    const finishRemoval = Effect.fn("ConfigStore.finishRemoval")(function*(removedAs: string) {
      const now = yield* Clock.currentTimeMillis
      yield* sql`UPDATE removed_users SET finished_at = ${now} WHERE removed_as = ${removedAs} AND finished_at IS NULL`
    }, storage("finish removing a user"))

    const readChannels = (id?: string) =>
      (id === undefined
        ? sql`SELECT id, enabled, config FROM channels ORDER BY id`
        : sql`SELECT id, enabled, config FROM channels WHERE id = ${id}`).pipe(
          Effect.flatMap(decodeChannels),
          Effect.map((rows) => rows.map(toChannel))
        )

    /** `config` replaces the stored configuration as a whole (the CLI merges keys before). */
    const setChannel = Effect.fn("ConfigStore.setChannel")(function*(
      id: string,
      patch: { readonly enabled?: boolean | undefined; readonly config?: Readonly<Record<string, unknown>> | undefined }
    ) {
      return yield* immediate(Effect.gen(function*() {
        const current = (yield* readChannels(id))[0]
        const next: Channel = {
          id,
          enabled: patch.enabled ?? current?.enabled ?? false,
          config: patch.config ?? current?.config ?? {}
        }
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO channels ${
          sql.insert({ id, enabled: next.enabled ? 1 : 0, config: JSON.stringify(next.config), updated_at: now })
        } ON CONFLICT (id) DO UPDATE SET enabled = excluded.enabled, config = excluded.config, updated_at = excluded.updated_at`
        return next
      }))
    }, storage("set channel"))

    const bindChat = Effect.fn("ConfigStore.bindChat")(function*(platform: string, chatId: string, agentId: string | null) {
      if (agentId === null) {
        yield* sql`DELETE FROM chat_agents WHERE platform = ${platform} AND chat_id = ${chatId}`
        return
      }
      yield* immediate(Effect.gen(function*() {
        yield* agents.get(agentId)
        yield* sql`INSERT INTO chat_agents ${sql.insert({ platform, chat_id: chatId, agent_id: agentId })}
          ON CONFLICT (platform, chat_id) DO UPDATE SET agent_id = excluded.agent_id`
      }))
    }, storage("bind chat"))

    const chatBinding = Effect.fn("ConfigStore.chatBinding")(function*(platform: string, chatId: string) {
      const rows = yield* sql<{ agent_id: string }>`SELECT agent_id FROM chat_agents
        WHERE platform = ${platform} AND chat_id = ${chatId}`
      return Option.fromNullishOr(rows[0]?.agent_id)
    }, storage("read chat binding"))

    const chatAgent = Effect.fn("ConfigStore.chatAgent")(function*(platform: string, userId: string, chatId: string) {
      const rows = yield* sql<{ agent_id: string }>`SELECT agent_id FROM chat_agent_choices
        WHERE platform = ${platform} AND user_id = ${userId} AND chat_id = ${chatId}`
      return Option.fromNullishOr(rows[0]?.agent_id)
    }, storage("read chat agent"))

    const setChatAgent = Effect.fn("ConfigStore.setChatAgent")(function*(platform: string, userId: string, chatId: string, agentId: string | null) {
      if (agentId === null) {
        yield* sql`DELETE FROM chat_agent_choices WHERE platform = ${platform} AND user_id = ${userId} AND chat_id = ${chatId}`
        return
      }
      yield* immediate(Effect.gen(function*() {
        yield* agents.get(agentId)
        yield* sql`INSERT INTO chat_agent_choices ${sql.insert({ platform, user_id: userId, chat_id: chatId, agent_id: agentId })}
          ON CONFLICT (platform, user_id, chat_id) DO UPDATE SET agent_id = excluded.agent_id`
      }))
    }, storage("set chat agent"))

    const listBindings = sql`SELECT platform, chat_id, agent_id FROM chat_agents ORDER BY platform, chat_id`.pipe(
      Effect.flatMap(decodeBindings),
      Effect.map((rows) => rows.map((r): ChatBinding => ({ platform: r.platform, chatId: r.chat_id, agentId: r.agent_id }))),
      storage("list chat bindings")
    )

    const readState = (agentId: string, platform: string, userId: string, chatId: string) =>
      sql`SELECT context, model FROM chat_contexts
        WHERE agent_id = ${agentId} AND platform = ${platform} AND user_id = ${userId} AND chat_id = ${chatId}`.pipe(
        Effect.flatMap(decodeChatStates),
        Effect.map((rows) => rows[0])
      )
    const writeState = (agentId: string, platform: string, userId: string, chatId: string, state: ChatState, keep: boolean) =>
      // `keep`: insert the defaults unless a row exists (a concurrent first use wins), and return what is stored.
      sql`INSERT INTO chat_contexts ${
        sql.insert({ agent_id: agentId, platform, user_id: userId, chat_id: chatId, context: state.context, model: state.model })
      } ON CONFLICT (agent_id, platform, user_id, chat_id) DO UPDATE SET
          context = CASE WHEN ${keep ? 1 : 0} = 1 THEN chat_contexts.context ELSE excluded.context END,
          model = CASE WHEN ${keep ? 1 : 0} = 1 THEN chat_contexts.model ELSE excluded.model END
        RETURNING context, model`.pipe(
        Effect.flatMap(decodeChatStates),
        Effect.flatMap((rows) => (rows[0] === undefined ? Effect.die("upsert returned no row") : Effect.succeed(rows[0])))
      )
    const DEFAULT_STATE: ChatState = { context: "main", model: "" }

    const chatState = Effect.fn("ConfigStore.chatState")(function*(agentId: string, platform: string, userId: string, chatId: string) {
      const found = yield* readState(agentId, platform, userId, chatId)
      return found ?? (yield* writeState(agentId, platform, userId, chatId, DEFAULT_STATE, true))
    }, storage("read chat state"))

    const setChatState = Effect.fn("ConfigStore.setChatState")(function*(
      agentId: string,
      platform: string,
      userId: string,
      chatId: string,
      patch: Partial<ChatState>
    ) {
      return yield* immediate(Effect.gen(function*() {
        const current = (yield* readState(agentId, platform, userId, chatId)) ?? DEFAULT_STATE
        const next = { context: patch.context ?? current.context, model: patch.model ?? current.model }
        return yield* writeState(agentId, platform, userId, chatId, next, false)
      }))
    }, storage("set chat state"))

    const getSetting = Effect.fn("ConfigStore.getSetting")(function*(key: string) {
      const rows = yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = ${key}`
      return Option.fromNullishOr(rows[0]?.value)
    }, storage("read setting"))

    const setSetting = Effect.fn("ConfigStore.setSetting")(function*(key: string, value: string) {
      yield* sql`INSERT INTO settings ${sql.insert({ key, value })} ON CONFLICT (key) DO UPDATE SET value = excluded.value`
    }, storage("set setting"))

    const settingOnce = Effect.fn("ConfigStore.settingOnce")(function*(key: string, make: () => string) {
      yield* sql`INSERT INTO settings ${sql.insert({ key, value: make() })} ON CONFLICT (key) DO NOTHING`
      const rows = yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = ${key}`
      const stored = rows[0]?.value
      return stored === undefined ? yield* Effect.die(new Error(`setting ${key} vanished`)) : stored
    }, storage("read setting"))

    const deleteSetting = Effect.fn("ConfigStore.deleteSetting")(function*(key: string) {
      yield* sql`DELETE FROM settings WHERE key = ${key}`
    }, storage("delete setting"))

    const snapshot = Effect.fn("ConfigStore.snapshot")(function*(agentId: string) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        const agent = yield* agents.get(agentId)
        const provider = agent.providerId === null
          ? undefined
          : yield* providers.get(agent.providerId).pipe(Effect.catchTag("ProviderNotFound", () => Effect.succeed(undefined)))
        const check = checkAgentModel(agent, provider)
        if (!check.ok) return yield* new NoModel({ agentId, reason: check.reason })
        const model = check.model
        return {
          agent,
          provider: check.provider,
          model,
          contextTokens: agent.contextTokens > 0 ? agent.contextTokens : DEFAULT_CONTEXT_TOKENS,
          maxTurns: agent.maxTurns,
          tools: agent.tools,
          folder: agentFolder(workspaces, agent.id),
          sandbox: specFor(workspaces, agent)
        }
      }))
    }, storage("read agent snapshot"))

    const version = sql<{ version: number }>`SELECT version FROM config_version WHERE id = 1`.pipe(
      Effect.map((rows) => rows[0]?.version ?? 0),
      storage("read configuration version")
    )

    // PostgreSQL: every change notifies `anna_config` (migrations/pg/0001), heard on a connection of
    // its own while the stream runs. The driver is loaded only there.
    const changes = isPostgres(sql)
      ? yield* Effect.gen(function*() {
        const { PgClient } = yield* Effect.promise(() => import("@effect/sql-pg"))
        const pg = yield* Effect.serviceOption(PgClient.PgClient)
        if (Option.isNone(pg)) return undefined
        return Stream.unwrap(Effect.map(pg.value.listen("anna_config"), (queue) => Stream.fromQueue(queue))).pipe(
          Stream.map((): void => undefined),
          Stream.mapError(storageError("hear configuration changes"))
        )
      })
      : undefined

    return ConfigStore.of({
      upsertUser,
      getUser: (id) => findUser(id).pipe(storage("read user")),
      listUsers: readUsers("all").pipe(storage("list users")),
      createUser,
      renameUser,
      linkIdentity,
      claimIdentity,
      unlinkIdentity,
      setDefaultAgent,
      setUserAttributes,
      issueToken,
      userForToken,
      listTokens,
      revokeToken,
      removeUser,
      unfinishedRemoval: (userId) => findRemoval(userId).pipe(storage("read user removal")),
      finishRemoval,
      listChannels: readChannels().pipe(storage("list channels")),
      setChannel,
      bindChat,
      chatBinding,
      chatAgent,
      setChatAgent,
      listBindings,
      chatState,
      setChatState,
      getSetting,
      setSetting,
      settingOnce,
      deleteSetting,
      snapshot,
      version,
      ...(changes === undefined ? {} : { changes })
    })
  })

/** ConfigStore; needs SqlClient, AgentStore, ProviderStore and AppConfig (where the workspaces are). */
export const layer = Layer.effect(ConfigStore, make)

/** ConfigStore with ProviderStore, AgentStore, UsageLog and PluginStore; needs SqlClient and AppConfig. */
export const layerStores = layer.pipe(
  Layer.provideMerge(Layer.mergeAll(SqliteAgentStore.layer, SqliteUsageLog.layer, SqlitePluginStore.layer)),
  Layer.provideMerge(SqliteProviderStore.layer)
)

/** `layerStores` on a home folder chosen by the caller (tests, custom deployments); needs SqlClient. */
export const layerWithStores = (annaHome: string) => layerStores.pipe(Layer.provide(AppConfig.at(annaHome)))
