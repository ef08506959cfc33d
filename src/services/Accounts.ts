/**
 * Accounts — who may log in to the admin API and the web console, and as what (issue 13, "accounts
 * and roles"). An account belongs to an anna user (the `users` row the chat platforms resolve to), so
 * a person who chats on Telegram and logs in to the console is one user with one memory.
 *
 * It owns: password hashes (a memory-hard KDF: scrypt, N=2^15, r=8, p=1, 16-byte salt, stored as
 * `scrypt$N$r$p$salt$hash`), roles, browser sessions (an opaque cookie value, stored only as its
 * SHA-256, with a CSRF token, an idle and an absolute expiry, revocable), the rate limit on failed
 * logins, and the role scope of API tokens. It does not own users, identities or the tokens' table
 * as such (ConfigStore's), nor HTTP (cookies, headers and CSRF checks are the admin API layer's).
 *
 * Roles: `admin` may do everything; `user` sees and changes only their own sessions, usage, tokens
 * and profile, and chats with the agents their access policies allow. A token's role never exceeds
 * its account's role at the time of use (an admin token of a user demoted to `user` acts as `user`;
 * a user without an account acts as `user` with any token).
 *
 * Layers: `SqliteAccounts.layer` (src/layers/admin/SqliteAccounts.ts).
 */
import { Context, type Effect, type Option } from "effect"
import type { AccountError, LoginRefused, LoginThrottled } from "../domain/admin/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"

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
}

export interface AccountInfo {
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

/** Browser sessions end after this long without a request… */
export const SESSION_IDLE_MS = 7 * 24 * 3600_000
/** …and after this long in any case. */
export const SESSION_MAX_MS = 30 * 24 * 3600_000

export class Accounts extends Context.Service<Accounts, {
  /**
   * An account for a user, created with the user when there is no such user yet (`name` defaults
   * to the id). AccountError when the user already has an account or the password is too short/long.
   */
  readonly create: (input: {
    readonly userId: string
    readonly password: string
    readonly role: Role
    readonly name?: string | undefined
  }) => Effect.Effect<AccountInfo, AccountError | StorageError>
  readonly get: (userId: string) => Effect.Effect<Option.Option<AccountInfo>, StorageError>
  readonly list: Effect.Effect<ReadonlyArray<AccountInfo>, StorageError>
  /** A new password; every browser session of the user ends. */
  readonly setPassword: (userId: string, password: string) => Effect.Effect<void, AccountError | StorageError>
  /** A new role; the user's browser sessions end (they log in again under the new role). */
  readonly setRole: (userId: string, role: Role) => Effect.Effect<AccountInfo, AccountError | StorageError>
  /** Removes the account (not the user) and ends its sessions. */
  readonly remove: (userId: string) => Effect.Effect<void, AccountError | StorageError>

  /**
   * Checks a username (the user id) and password. `client` identifies the caller for the rate
   * limit (e.g. the remote address) and is kept, trimmed, with the session. At most 5 failures per
   * username and 20 per client in 15 minutes; beyond that LoginThrottled, even for the right password.
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

  /** A new API token of a user scoped to `role` (shown once; listed and revoked with ConfigStore's tokens). */
  readonly issueToken: (userId: string, label: string, role: Role) => Effect.Effect<string, AccountError | StorageError>
}>()("anna/Accounts") {}
