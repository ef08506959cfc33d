/**
 * ConfigStore — the runtime's configuration in SQLite: users and their platform identities, HTTP
 * tokens (stored hashed), channels, group-chat bindings, each chat's current session context and
 * chosen model, and settings. Agents and providers have their own stores (AgentStore,
 * ProviderStore); `snapshot` reads one agent's whole runtime view from all of them at once, and
 * `version` says whether any of it changed.
 *
 * Layers: `SqliteConfigStore.layer` (src/layers/config/SqliteConfigStore.ts).
 */
import { Context, type Effect, type Option, type Stream } from "effect"
import type { Role } from "./Accounts.ts"
import type { Agent } from "../domain/config/agent.ts"
import type { AgentNotFound, InvalidConfig, ProviderNotFound } from "../domain/config/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { ProviderConfig } from "../domain/model/types.ts"
import type { NoModel, Unauthorized } from "../domain/runtime/errors.ts"
import type { SandboxSpec } from "../domain/sandbox/types.ts"

export interface User {
  readonly id: string
  readonly name: string
  readonly defaultAgentId: string | null
  readonly identities: ReadonlyArray<{
    readonly platform: string
    readonly externalId: string
    /** When the user last wrote from this identity (ms; 0 = never since it was recorded). */
    readonly lastSeenAt?: number | undefined
  }>
  /** What agents' access policies can match on (e.g. group=family); absent = none. */
  readonly attributes?: Readonly<Record<string, string>> | undefined
  readonly createdAt: number
  /**
   * This incarnation of the id (random, set when the user is made): a user removed and made again
   * with the same id has another, so what was held for the old one is told apart from the new one.
   */
  readonly uid?: string | undefined
}

export interface Channel {
  readonly id: string
  readonly enabled: boolean
  readonly config: Readonly<Record<string, unknown>>
}

/** A group chat bound to an agent (`anna channel bind`). */
export interface ChatBinding {
  readonly platform: string
  readonly chatId: string
  readonly agentId: string
}

export interface ChatState {
  readonly context: string
  readonly model: string
}

/** One agent as a turn sees it: everything of its configuration the runtime needs, read at once. */
export interface Snapshot {
  readonly agent: Agent
  readonly provider: ProviderConfig
  /** The main model id (the provider's default when the agent names none). */
  readonly model: string
  /** Context budget in tokens (the agent's `context_tokens`, else 128,000). */
  readonly contextTokens: number
  readonly maxTurns: number
  /** The agent's own folder ($ANNA_HOME/workspaces/{agent}): SYSTEM.md, SOUL.md, agents/*.md; never mounted. */
  readonly folder: string
  /** Enabled tool names; null = every available tool. */
  readonly tools: ReadonlyArray<string> | null
  readonly sandbox: SandboxSpec
}

/** An HTTP token as operators see it: never the token itself, only an id made from its hash. */
export interface TokenInfo {
  /** The first TOKEN_ID_LENGTH hex digits of the token's stored SHA-256. */
  readonly id: string
  readonly userId: string
  readonly label: string
  /** The most the token acts as; its account's role caps it at the time of use (see Accounts). */
  readonly role: Role
  readonly createdAt: number
}

export const TOKEN_ID_LENGTH = 12

/** What removing a user took with it (their sessions are memory's, and stay unless deleted there). */
export interface RemovedUser {
  readonly userId: string
  readonly identities: number
  readonly tokens: number
  readonly chatStates: number
  /** Whether they had a console account (it went, with its browser sessions). */
  readonly account: boolean
  /** The removal as recorded: the rest of the user's data is to be moved or deleted, then `finishRemoval`. */
  readonly removal: Removal
}

/** A user's removal as recorded (see migrations/0025_user_removal.sql). */
export interface Removal {
  readonly userId: string
  /** The id the user's kept data is moved to (domain/config/removedUser.ts): no user can be given it. */
  readonly removedAs: string
  readonly name: string
  /** What the operator chose for the user's sessions. */
  readonly sessions: "keep" | "delete"
  readonly removedAt: number
  /** Null while part of the removal is still to be done. */
  readonly finishedAt: number | null
}

export const DEFAULT_CONTEXT_TOKENS = 128_000

export class ConfigStore extends Context.Service<ConfigStore, {
  /** The user behind a platform identity, created on first contact (name from the platform). */
  readonly upsertUser: (platform: string, externalId: string, name?: string | undefined) => Effect.Effect<User, StorageError>
  readonly getUser: (id: string) => Effect.Effect<Option.Option<User>, StorageError>
  readonly listUsers: Effect.Effect<ReadonlyArray<User>, StorageError>
  readonly createUser: (id: string, name: string) => Effect.Effect<User, InvalidConfig | StorageError>
  /** Changes a user's display name (InvalidConfig when there is no such user). */
  readonly renameUser: (id: string, name: string) => Effect.Effect<User, InvalidConfig | StorageError>
  /**
   * Makes a platform identity (e.g. telegram + the Telegram user id) this user's, so messages from it
   * reach this user and their memory; InvalidConfig when it belongs to another user (unlink it there
   * first) or is malformed. Linking an identity the user already has changes nothing.
   */
  readonly linkIdentity: (userId: string, platform: string, externalId: string) => Effect.Effect<User, InvalidConfig | StorageError>
  /**
   * On first contact, gives a platform identity that no user holds to the existing user `userId`
   * instead of a new user: `anna chat` by the OS user NAME (`cli:NAME`) is the user NAME, made by
   * `anna admin create NAME` or `anna user add NAME` (one person, one user). The user when it linked
   * the identity now; none when someone holds it already or there is no user `userId`.
   */
  readonly claimIdentity: (platform: string, externalId: string, userId: string) => Effect.Effect<Option.Option<User>, StorageError>
  /** Removes one of the user's identities (its next message makes a new user); InvalidConfig when they have no such identity. */
  readonly unlinkIdentity: (userId: string, platform: string, externalId: string) => Effect.Effect<User, InvalidConfig | StorageError>
  readonly setDefaultAgent: (userId: string, agentId: string | null) => Effect.Effect<void, AgentNotFound | InvalidConfig | StorageError>
  /** Sets (a text) or removes (null) a user's attributes; the user as stored after. */
  readonly setUserAttributes: (
    userId: string,
    changes: Readonly<Record<string, string | null>>
  ) => Effect.Effect<User, InvalidConfig | StorageError>
  /** A new bearer token for the HTTP channel; only its hash is stored, so it is shown once. */
  readonly issueToken: (userId: string, label: string) => Effect.Effect<string, InvalidConfig | StorageError>
  readonly userForToken: (token: string) => Effect.Effect<User, Unauthorized | StorageError>
  /** Tokens of one user (or of everyone), oldest first. */
  readonly listTokens: (userId?: string | undefined) => Effect.Effect<ReadonlyArray<TokenInfo>, InvalidConfig | StorageError>
  /**
   * Revokes the one token whose id starts with `tokenId` (InvalidConfig when none or several do);
   * `userForToken` refuses it from then on.
   */
  readonly revokeToken: (tokenId: string) => Effect.Effect<TokenInfo, InvalidConfig | StorageError>
  /**
   * Removes a user with their identities, tokens, chat states, account and browser sessions, in one
   * transaction, and records the removal as unfinished: the caller moves or deletes the rest of the
   * user's data (UserRemoval does), then `finishRemoval`. Until then `createUser` refuses the id.
   * `sessions` (default keep) is recorded, so finishing the removal later does what it began with.
   */
  readonly removeUser: (
    userId: string,
    options?: { readonly sessions: "keep" | "delete" } | undefined
  ) => Effect.Effect<RemovedUser, InvalidConfig | StorageError>
  /** The unfinished removal of a user id, if there is one. */
  readonly unfinishedRemoval: (userId: string) => Effect.Effect<Option.Option<Removal>, StorageError>
  /** Marks a removal (by its `removedAs`) done: the id may be given to a new user again. */
  readonly finishRemoval: (removedAs: string) => Effect.Effect<void, StorageError>

  readonly listChannels: Effect.Effect<ReadonlyArray<Channel>, StorageError>
  readonly setChannel: (
    id: string,
    patch: { readonly enabled?: boolean | undefined; readonly config?: Readonly<Record<string, unknown>> | undefined }
  ) => Effect.Effect<Channel, StorageError>

  readonly bindChat: (platform: string, chatId: string, agentId: string | null) => Effect.Effect<void, AgentNotFound | StorageError>
  readonly chatBinding: (platform: string, chatId: string) => Effect.Effect<Option.Option<string>, StorageError>
  /** Every group-chat binding, by platform and chat id. */
  readonly listBindings: Effect.Effect<ReadonlyArray<ChatBinding>, StorageError>
  /**
   * The agent a user picked with /agent for one (non-group) chat of theirs, before their default;
   * `null` clears it (the default applies again).
   */
  readonly chatAgent: (platform: string, userId: string, chatId: string) => Effect.Effect<Option.Option<string>, StorageError>
  readonly setChatAgent: (platform: string, userId: string, chatId: string, agentId: string | null) => Effect.Effect<void, AgentNotFound | StorageError>

  /** The chat's current context and model, created ("main", agent's model) on first use. */
  readonly chatState: (agentId: string, platform: string, userId: string, chatId: string) => Effect.Effect<ChatState, StorageError>
  readonly setChatState: (
    agentId: string,
    platform: string,
    userId: string,
    chatId: string,
    patch: Partial<ChatState>
  ) => Effect.Effect<ChatState, StorageError>

  readonly getSetting: (key: string) => Effect.Effect<Option.Option<string>, StorageError>
  readonly setSetting: (key: string, value: string) => Effect.Effect<void, StorageError>
  /**
   * The stored value of `key`; when there is none, `make()`'s is stored first. The first writer wins:
   * processes starting together on one home all get the value stored (state generated once, such as
   * a secret).
   */
  readonly settingOnce: (key: string, make: () => string) => Effect.Effect<string, StorageError>
  /** Removes a stored setting (its default applies again). */
  readonly deleteSetting: (key: string) => Effect.Effect<void, StorageError>

  readonly snapshot: (agentId: string) => Effect.Effect<Snapshot, AgentNotFound | ProviderNotFound | NoModel | StorageError>

  /**
   * A number that moves on with every change to agents, providers, channels, settings, plugins or
   * group bindings, whichever process makes it: reading it tells a long-running reader (LiveConfig)
   * whether what it cached is still current, for the price of one row.
   */
  readonly version: Effect.Effect<number, StorageError>
  /**
   * Emits when the configuration may have changed, in any process, as soon as it did — where the
   * database can tell (PostgreSQL's notifications, issue 26). Absent: read `version` now and then.
   */
  readonly changes?: Stream.Stream<void, StorageError> | undefined
}>()("anna/ConfigStore") {}
