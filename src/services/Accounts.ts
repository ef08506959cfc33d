/**
 * Accounts — who may log in to the admin API and the web console, and as what (issue 13, "accounts
 * and roles"). An account belongs to an anna user (the `users` row the chat platforms resolve to), so
 * a person who chats on Telegram and logs in to the console is one user with one memory.
 *
 * It owns: password hashes (a memory-hard KDF: scrypt, N=2^15, r=8, p=1, 16-byte salt, stored as
 * `scrypt$N$r$p$salt$hash`), roles, browser sessions (an opaque cookie value, stored only as its
 * SHA-256, with a CSRF token, an idle and an absolute expiry, revocable), the login throttle (a
 * backoff per username and client address, src/domain/admin/throttle.ts), the role scope of API
 * tokens and their lineage (which token minted which; revoking a token with what it minted). It does
 * not own users, identities or the tokens' table as such (ConfigStore's), nor HTTP (cookies, headers,
 * CSRF checks and who the client is are the admin API layer's).
 *
 * An account logs in with its `login`, which is its user's id unless `anna admin create NAME` gave
 * the console account NAME to the user who already chats as `cli:NAME` (the terminal user `u_…` of
 * the OS user NAME: one person, one user; issue 24). Logins are unique, and never another user's id.
 *
 * Roles: `admin` may do everything; `user` sees and changes only their own sessions, usage, tokens
 * and profile, and chats with the agents their access policies allow. A token's role never exceeds
 * its account's role at the time of use (an admin token of a user demoted to `user` acts as `user`;
 * a user without an account acts as `user` with any token). A token that mints a token gives it at
 * most its own role, and only for its own user unless it acts as admin.
 *
 * Layers: `SqliteAccounts.layer` (src/layers/admin/SqliteAccounts.ts).
 */
import { Context, type Effect, type Option } from "effect"
import type { AccountError, LoginRefused, LoginThrottled } from "../domain/admin/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { TokenInfo } from "./ConfigStore.ts"

export type Role = "admin" | "user"
export const ROLES: ReadonlyArray<Role> = ["admin", "user"]

/** Passwords shorter than this are refused. */
export const MIN_PASSWORD_LENGTH = 8
/** Longer ones too (a KDF input has to end somewhere). */
export const MAX_PASSWORD_LENGTH = 1024

/** Who a request acts for, once authenticated. */
export interface Principal {
  readonly userId: string
  readonly role: Role
  /** How it was authenticated: a browser session cookie (CSRF applies) or a bearer API token. */
  readonly via: "session" | "token"
  /** The browser session's public id (`via: "session"` only). */
  readonly sessionId?: string | undefined
  /** The token the client must echo in `x-csrf-token` on state-changing requests (`via: "session"` only). */
  readonly csrfToken?: string | undefined
  /** The SHA-256 of the bearer token (`via: "token"` only): what a token it mints records as its minter. */
  readonly tokenHash?: string | undefined
}

export interface AccountInfo {
  /** The name to log in with: the user id, or the name the account was created as for another user (see above). */
  readonly login: string
  readonly userId: string
  readonly role: Role
  readonly createdAt: number
  readonly passwordChangedAt: number
}

/** A browser session as operators see it: never the cookie value, only a public id. */
export interface WebSessionInfo {
  readonly id: string
  readonly userId: string
  readonly createdAt: number
  readonly lastSeenAt: number
  readonly expiresAt: number
  /** The client's user agent at login (trimmed), for telling sessions apart. */
  readonly client: string
}

/** What a successful login gives: the cookie value (shown once, stored hashed) and its CSRF token. */
export interface LoginResult {
  readonly cookie: string
  readonly csrfToken: string
  readonly expiresAt: number
  readonly principal: Principal
}

/** A live API token with its lineage. */
export interface MintedTokenInfo extends TokenInfo {
  /** The id of the token that minted it (that token may be revoked since), or null when a person issued it. */
  readonly mintedBy: string | null
  /** How many live tokens it minted, directly or through others. */
  readonly minted: number
}

/** What revoking a token did. */
export interface RevokedTokens {
  /** The token named (null when it had been revoked before and only what it minted went now). */
  readonly revoked: TokenInfo | null
  /** The tokens it minted, directly or not, revoked with it (cascade). */
  readonly cascaded: ReadonlyArray<TokenInfo>
  /** The live tokens it minted, directly or not, that stay (no cascade). */
  readonly remainingMinted: number
}

/** Browser sessions end after this long without a request… */
export const SESSION_IDLE_MS = 7 * 24 * 3600_000
/** …and after this long in any case. */
export const SESSION_MAX_MS = 30 * 24 * 3600_000

export class Accounts extends Context.Service<Accounts, {
  /**
   * An account for a user, created with the user when there is no such user yet (`name` defaults
   * to the id). `login` (default: the user id) is the name to log in with; one that is not the user
   * id needs the user to exist and no user to have it as id. AccountError when the user already has
   * an account, the login is taken, or the password is too short/long.
   */
  readonly create: (input: {
    readonly userId: string
    readonly login?: string | undefined
    readonly password: string
    readonly role: Role
    readonly name?: string | undefined
  }) => Effect.Effect<AccountInfo, AccountError | StorageError>
  /** The account of a user (by user id). */
  readonly get: (userId: string) => Effect.Effect<Option.Option<AccountInfo>, StorageError>
  /** The account that logs in as `name`, else the account of the user `name`: what an operator names an account by. */
  readonly find: (name: string) => Effect.Effect<Option.Option<AccountInfo>, StorageError>
  readonly list: Effect.Effect<ReadonlyArray<AccountInfo>, StorageError>
  /** A new password; every browser session of the user ends. */
  readonly setPassword: (userId: string, password: string) => Effect.Effect<void, AccountError | StorageError>
  /** A new role; the user's browser sessions end (they log in again under the new role). */
  readonly setRole: (userId: string, role: Role) => Effect.Effect<AccountInfo, AccountError | StorageError>
  /** Removes the account (not the user) and ends its sessions. */
  readonly remove: (userId: string) => Effect.Effect<void, AccountError | StorageError>

  /**
   * Checks a username (the account's login) and password. `client.address` is who the throttle counts (the
   * client's IP address, as the admin API works it out); the user agent is kept, trimmed, with the
   * session. Failures back off per (username, address) and per address (src/domain/admin/throttle.ts);
   * while a wait is owed, LoginThrottled, even for the right password — alike for unknown usernames.
   */
  readonly login: (
    username: string,
    password: string,
    client: { readonly address: string; readonly userAgent: string }
  ) => Effect.Effect<LoginResult, LoginRefused | LoginThrottled | StorageError>
  /** The principal of a session cookie still valid (its idle expiry moves on), or none. */
  readonly authenticateSession: (cookie: string) => Effect.Effect<Option.Option<Principal>, StorageError>
  /** The principal of a bearer API token (role = min(token scope, account role)), or none. */
  readonly authenticateToken: (token: string) => Effect.Effect<Option.Option<Principal>, StorageError>
  /** Ends the session of this cookie (nothing when it is unknown). */
  readonly logout: (cookie: string) => Effect.Effect<void, StorageError>
  /** Live browser sessions of one user, or of everyone; newest first (of two made in the same millisecond, the later login first). */
  readonly listSessions: (userId?: string | undefined) => Effect.Effect<ReadonlyArray<WebSessionInfo>, StorageError>
  /** Ends one browser session by its public id (AccountError when there is none). */
  readonly revokeSession: (sessionId: string) => Effect.Effect<WebSessionInfo, AccountError | StorageError>

  /** Clears the throttle of a username from every address, or from `address` only (and that address's own count); the addresses cleared. */
  readonly unlock: (username: string, address?: string | undefined) => Effect.Effect<ReadonlyArray<string>, AccountError | StorageError>

  /**
   * A new API token of a user scoped to `role` (shown once). `mintedBy` (a token's hash, from its
   * Principal) records the token that asked for it; that token must still be live, and gives at most
   * its own role, only for its own user unless it acts as admin (AccountError otherwise).
   */
  readonly issueToken: (
    userId: string,
    label: string,
    role: Role,
    options?: { readonly mintedBy?: string | undefined }
  ) => Effect.Effect<string, AccountError | StorageError>
  /** Live tokens of one user (or of everyone), oldest first, with their lineage. AccountError when there is no such user. */
  readonly listTokens: (userId?: string | undefined) => Effect.Effect<ReadonlyArray<MintedTokenInfo>, AccountError | StorageError>
  /**
   * Revokes the one token whose id starts with `tokenId` (of `owner` only, when given) and, with
   * `cascade`, every live token it minted, directly or not — also when it was revoked before.
   * AccountError when no token or several match.
   */
  readonly revokeToken: (
    tokenId: string,
    options: { readonly cascade: boolean; readonly owner?: string | undefined }
  ) => Effect.Effect<RevokedTokens, AccountError | StorageError>
}>()("anna/Accounts") {}
