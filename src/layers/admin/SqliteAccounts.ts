/**
 * Accounts on SQLite (migrations/0014_accounts.sql): accounts with scrypt password hashes and roles,
 * browser sessions, the login rate limit, and role-scoped API tokens in ConfigStore's `user_tokens`.
 * An account is found by its login (migrations/0029_account_login.sql) when someone logs in, by its
 * user everywhere else: sessions, principals and tokens carry the user id.
 *
 * - A session's cookie value is 32 random bytes (base64url) and only its SHA-256 is stored; the
 *   public id operators see is short and random, and so is the CSRF token. A session ends after
 *   SESSION_IDLE_MS without a request (the idle expiry slides, written at most once a minute so most
 *   requests cost no write) and after SESSION_MAX_MS in any case.
 * - The login throttle is a backoff per (username, client address) and per address, kept in the
 *   database (loginThrottle.ts; the schedule in src/domain/admin/throttle.ts), so a stranger's
 *   guesses never refuse the account's owner from elsewhere and `anna admin unlock` reaches it.
 * - Token lineage and revocation with what a token minted: tokenLineage.ts.
 * - All times come from `Clock` (TestClock in tests).
 *
 * Needs SqlClient and ConfigStore (users are ConfigStore's: an account is created with its user when
 * there is none).
 */
import { Clock, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { createHash, randomBytes } from "node:crypto"
import { isIP } from "node:net"
import { plainAddress, throttleKey } from "../../domain/admin/clientAddress.ts"
import { AccountError, LoginRefused, LoginThrottled } from "../../domain/admin/errors.ts"
import { hashPassword, passwordProblem, spendVerifyTime, verifyPassword } from "../../domain/admin/password.ts"
import { isValidId } from "../../domain/config/agent.ts"
import {
  type AccountInfo,
  Accounts,
  type Principal,
  type Role,
  ROLES,
  SESSION_IDLE_MS,
  SESSION_MAX_MS,
  type WebSessionInfo
} from "../../services/Accounts.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import * as Sqlite from "../sql/Sqlite.ts"
import { storageError } from "../sql/errors.ts"
import * as LoginThrottle from "./loginThrottle.ts"
import * as TokenLineage from "./tokenLineage.ts"

/** How stale `last_seen_at` may get before a request writes the time again. */
const SEEN_EVERY_MS = 60_000
/** Kept of a client's user agent. */
const MAX_CLIENT_LENGTH = 200

const RoleSchema = Schema.Literals(ROLES)
const AccountRow = Schema.Struct({
  login: Schema.String,
  user_id: Schema.String,
  role: RoleSchema,
  password_hash: Schema.String,
  created_at: Schema.Number,
  password_changed_at: Schema.Number
})
const SessionRow = Schema.Struct({
  id: Schema.String,
  user_id: Schema.String,
  client: Schema.String,
  csrf_token: Schema.String,
  created_at: Schema.Number,
  last_seen_at: Schema.Number,
  expires_at: Schema.Number
})
const SessionWithRole = Schema.Struct({ ...SessionRow.fields, role: RoleSchema })
const TokenRoles = Schema.Struct({ user_id: Schema.String, token_role: RoleSchema, account_role: Schema.NullOr(RoleSchema) })
const decodeAccounts = Schema.decodeUnknownEffect(Schema.Array(AccountRow))
const decodeSessions = Schema.decodeUnknownEffect(Schema.Array(SessionRow))
const decodeSessionsWithRole = Schema.decodeUnknownEffect(Schema.Array(SessionWithRole))
const decodeTokenRoles = Schema.decodeUnknownEffect(Schema.Array(TokenRoles))

const toAccount = (r: typeof AccountRow.Type): AccountInfo => ({
  login: r.login,
  userId: r.user_id,
  role: r.role,
  createdAt: r.created_at,
  passwordChangedAt: r.password_changed_at
})
const toSession = (r: typeof SessionRow.Type): WebSessionInfo => ({
  id: r.id,
  userId: r.user_id,
  createdAt: r.created_at,
  lastSeenAt: r.last_seen_at,
  expiresAt: r.expires_at,
  client: r.client
})

/** The lesser of two roles: what a token scoped to `a` of an account with role `b` acts as. */
export const minRole = (a: Role, b: Role): Role => (a === "admin" && b === "admin" ? "admin" : "user")

const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
const newSessionId = () => "ws_" + Array.from(randomBytes(12), (b) => BASE32.charAt(b & 31)).join("")
const newSecret = () => randomBytes(32).toString("base64url")
/** The same form as ConfigStore's tokens (`anna_` + 32 random bytes), so both tell them apart alike. */
const newApiToken = () => "anna_" + randomBytes(32).toString("base64url")
/** A cookie value this layer could have made (anything else is not looked up). */
const plausibleCookie = (cookie: string): boolean => /^[A-Za-z0-9_-]{16,128}$/.test(cookie)

/** Printable, trimmed, bounded: a user agent as shown to operators. */
const cleanClient = (userAgent: string): string =>
  userAgent.replace(/[\p{Cc}\p{Cf}]/gu, "").trim().slice(0, MAX_CLIENT_LENGTH)

/** SQL and row-decoding failures become StorageError; the domain errors pass through. */
const storage = (operation: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    self,
    (e): e is Extract<E, SqlError | Schema.SchemaError> => isSqlError(e) || Schema.isSchemaError(e),
    (e) => Effect.fail(storageError(operation)(e))
  )

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const config = yield* ConfigStore
  const immediate = Sqlite.immediate(sql)
  const throttle = LoginThrottle.make(sql)
  const lineage = TokenLineage.make(sql)

  const readAccount = (userId: string) =>
    sql`SELECT login, user_id, role, password_hash, created_at, password_changed_at FROM accounts WHERE user_id = ${userId}`.pipe(
      Effect.flatMap(decodeAccounts),
      Effect.map((rows) => Option.fromNullishOr(rows[0]))
    )
  /** The account that logs in as `login`. */
  const readLogin = (login: string) =>
    sql`SELECT login, user_id, role, password_hash, created_at, password_changed_at FROM accounts WHERE login = ${login}`.pipe(
      Effect.flatMap(decodeAccounts),
      Effect.map((rows) => Option.fromNullishOr(rows[0]))
    )
  const requireAccount = (userId: string) =>
    Effect.flatMap(readAccount(userId), (a) =>
      Option.isSome(a)
        ? Effect.succeed(a.value)
        : Effect.fail(new AccountError({ reason: `user "${userId}" has no account (see: anna admin list)` })))
  const endSessions = (userId: string) => sql`DELETE FROM web_sessions WHERE user_id = ${userId}`
  const tokenRoles = (hash: string) =>
    sql`SELECT t.user_id, t.role AS token_role, a.role AS account_role
      FROM user_tokens t LEFT JOIN accounts a ON a.user_id = t.user_id WHERE t.token_hash = ${hash}`.pipe(Effect.flatMap(decodeTokenRoles))

  const create = Effect.fn("Accounts.create")(function*(input: {
    readonly userId: string
    readonly login?: string | undefined
    readonly password: string
    readonly role: Role
    readonly name?: string | undefined
  }) {
    const login = input.login ?? input.userId
    const ownName = login === input.userId
    if (!ownName && !isValidId(login)) {
      return yield* new AccountError({ reason: `login "${login}" must be 1–64 letters, digits, '.', '_' or '-'` })
    }
    const problem = passwordProblem(input.password)
    if (problem !== undefined) return yield* new AccountError({ reason: problem })
    // Hashed before the write lock is taken: the KDF takes tens of milliseconds.
    const hash = yield* hashPassword(input.password)
    return yield* immediate(Effect.gen(function*() {
      const user = yield* config.getUser(input.userId)
      if (Option.isNone(user)) {
        // Another name is only ever given to a user who is already there (the terminal's).
        if (!ownName) return yield* new AccountError({ reason: `no user "${input.userId}" (see: anna user list)` })
        yield* config.createUser(input.userId, input.name ?? input.userId).pipe(
          Effect.catchTag("InvalidConfig", (e) => Effect.fail(new AccountError({ reason: e.reason })))
        )
      }
      // A login that is another user's id would log in as someone other than the user of that name.
      if (!ownName && Option.isSome(yield* config.getUser(login))) {
        return yield* new AccountError({ reason: `"${login}" is another user's id; only that user's account may log in as ${login}` })
      }
      if (Option.isSome(yield* readAccount(input.userId))) {
        return yield* new AccountError({ reason: `user "${input.userId}" already has an account (see: anna admin passwd, anna admin role)` })
      }
      const taken = yield* readLogin(login)
      if (Option.isSome(taken)) {
        return yield* new AccountError({ reason: `the console account ${login} already exists (the user ${taken.value.user_id}'s; see: anna admin list)` })
      }
      const now = yield* Clock.currentTimeMillis
      yield* sql`INSERT INTO accounts ${
        sql.insert({ login, user_id: input.userId, role: input.role, password_hash: hash, created_at: now, password_changed_at: now })
      }`
      return yield* requireAccount(input.userId).pipe(Effect.map(toAccount))
    }))
  }, storage("create account"))

  const list = sql`SELECT login, user_id, role, password_hash, created_at, password_changed_at FROM accounts ORDER BY created_at, user_id`.pipe(
    Effect.flatMap(decodeAccounts),
    Effect.map((rows) => rows.map(toAccount)),
    storage("list accounts")
  )

  const setPassword = Effect.fn("Accounts.setPassword")(function*(userId: string, password: string) {
    const problem = passwordProblem(password)
    if (problem !== undefined) return yield* new AccountError({ reason: problem })
    yield* requireAccount(userId)
    const hash = yield* hashPassword(password)
    yield* immediate(Effect.gen(function*() {
      yield* requireAccount(userId)
      const now = yield* Clock.currentTimeMillis
      yield* sql`UPDATE accounts SET password_hash = ${hash}, password_changed_at = ${now} WHERE user_id = ${userId}`
      yield* endSessions(userId)
    }))
  }, storage("set password"))

  const setRole = Effect.fn("Accounts.setRole")(function*(userId: string, role: Role) {
    return yield* immediate(Effect.gen(function*() {
      yield* requireAccount(userId)
      yield* sql`UPDATE accounts SET role = ${role} WHERE user_id = ${userId}`
      yield* endSessions(userId)
      return toAccount(yield* requireAccount(userId))
    }))
  }, storage("set role"))

  const remove = Effect.fn("Accounts.remove")(function*(userId: string) {
    yield* immediate(Effect.gen(function*() {
      yield* requireAccount(userId)
      yield* endSessions(userId)
      yield* sql`DELETE FROM accounts WHERE user_id = ${userId}`
    }))
  }, storage("remove account"))

  const login = Effect.fn("Accounts.login")(function*(
    username: string,
    password: string,
    client: { readonly address: string; readonly userAgent: string }
  ) {
    const now = yield* Clock.currentTimeMillis
    const address = throttleKey(client.address)
    // Counted as failed until it succeeds (see loginThrottle.ts); the same for unknown usernames.
    const wait = yield* throttle.begin(username, address, now)
    if (wait > 0) return yield* new LoginThrottled({ retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)) })
    const account = yield* readLogin(username)
    if (Option.isNone(account)) {
      yield* spendVerifyTime(password)
      return yield* new LoginRefused()
    }
    if (!(yield* verifyPassword(password, account.value.password_hash))) return yield* new LoginRefused()
    yield* throttle.succeeded(username, address)

    const cookie = newSecret()
    const csrfToken = newSecret()
    const id = newSessionId()
    const expiresAt = Math.min(now + SESSION_IDLE_MS, now + SESSION_MAX_MS)
    yield* immediate(Effect.gen(function*() {
      // Expired sessions are dropped here, so the table holds live ones and a few stale ones at most.
      yield* sql`DELETE FROM web_sessions WHERE expires_at <= ${now}`
      yield* sql`INSERT INTO web_sessions ${
        sql.insert({
          id,
          token_hash: sha256(cookie),
          user_id: account.value.user_id,
          csrf_token: csrfToken,
          client: cleanClient(client.userAgent),
          created_at: now,
          last_seen_at: now,
          expires_at: expiresAt
        })
      }`
    }))
    const principal: Principal = { userId: account.value.user_id, role: account.value.role, via: "session", sessionId: id, csrfToken }
    return { cookie, csrfToken, expiresAt, principal }
  }, storage("log in"))

  const authenticateSession = Effect.fn("Accounts.authenticateSession")(function*(cookie: string) {
    if (!plausibleCookie(cookie)) return Option.none<Principal>()
    const hash = sha256(cookie)
    const rows = yield* sql`SELECT s.id, s.user_id, s.client, s.csrf_token, s.created_at, s.last_seen_at, s.expires_at, a.role
      FROM web_sessions s JOIN accounts a ON a.user_id = s.user_id WHERE s.token_hash = ${hash}`.pipe(
      Effect.flatMap(decodeSessionsWithRole)
    )
    const s = rows[0]
    if (s === undefined) return Option.none<Principal>()
    const now = yield* Clock.currentTimeMillis
    if (s.expires_at <= now || s.created_at + SESSION_MAX_MS <= now) {
      yield* sql`DELETE FROM web_sessions WHERE id = ${s.id}`
      return Option.none<Principal>()
    }
    if (now - s.last_seen_at >= SEEN_EVERY_MS) {
      const expiresAt = Math.min(now + SESSION_IDLE_MS, s.created_at + SESSION_MAX_MS)
      yield* sql`UPDATE web_sessions SET last_seen_at = ${now}, expires_at = ${expiresAt} WHERE id = ${s.id}`
    }
    return Option.some<Principal>({ userId: s.user_id, role: s.role, via: "session", sessionId: s.id, csrfToken: s.csrf_token })
  }, storage("check session"))

  const authenticateToken = Effect.fn("Accounts.authenticateToken")(function*(token: string) {
    const hash = sha256(token)
    const rows = yield* tokenRoles(hash)
    const t = rows[0]
    if (t === undefined) return Option.none<Principal>()
    return Option.some<Principal>({ userId: t.user_id, role: minRole(t.token_role, t.account_role ?? "user"), via: "token", tokenHash: hash })
  }, storage("check token"))

  const logout = Effect.fn("Accounts.logout")(function*(cookie: string) {
    if (!plausibleCookie(cookie)) return
    yield* sql`DELETE FROM web_sessions WHERE token_hash = ${sha256(cookie)}`
  }, storage("log out"))

  const listSessions = Effect.fn("Accounts.listSessions")(function*(userId?: string) {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* (userId === undefined
      ? sql`SELECT id, user_id, client, csrf_token, created_at, last_seen_at, expires_at FROM web_sessions
          WHERE expires_at > ${now} ORDER BY created_at DESC, rowid DESC`
      : sql`SELECT id, user_id, client, csrf_token, created_at, last_seen_at, expires_at FROM web_sessions
          WHERE expires_at > ${now} AND user_id = ${userId} ORDER BY created_at DESC, rowid DESC`).pipe(Effect.flatMap(decodeSessions))
    return rows.map(toSession)
  }, storage("list sessions"))

  const revokeSession = Effect.fn("Accounts.revokeSession")(function*(sessionId: string) {
    const rows = yield* sql`DELETE FROM web_sessions WHERE id = ${sessionId}
      RETURNING id, user_id, client, csrf_token, created_at, last_seen_at, expires_at`.pipe(Effect.flatMap(decodeSessions))
    const row = rows[0]
    if (row === undefined) return yield* new AccountError({ reason: `no session "${sessionId}" (see: anna admin sessions)` })
    return toSession(row)
  }, storage("revoke session"))

  const issueToken = Effect.fn("Accounts.issueToken")(function*(
    userId: string,
    label: string,
    role: Role,
    options: { readonly mintedBy?: string | undefined } = {}
  ) {
    const token = newApiToken()
    const hash = sha256(token)
    yield* immediate(Effect.gen(function*() {
      if (Option.isNone(yield* config.getUser(userId))) {
        return yield* new AccountError({ reason: `no user "${userId}" (see: anna user list)` })
      }
      if (options.mintedBy !== undefined) {
        // No more than the minter: its own role at most, its own user unless it acts as admin.
        const minter = (yield* tokenRoles(options.mintedBy))[0]
        if (minter === undefined) return yield* new AccountError({ reason: "the token asking for a new one has just been revoked" })
        const acts = minRole(minter.token_role, minter.account_role ?? "user")
        if (acts !== "admin" && (role === "admin" || userId !== minter.user_id)) {
          return yield* new AccountError({ reason: "a token acting as user mints only tokens of role user, for its own user" })
        }
      }
      if (role === "admin") {
        const account = yield* readAccount(userId)
        if (Option.isNone(account) || account.value.role !== "admin") {
          return yield* new AccountError({
            reason: `an admin token needs an admin account, and ${userId} ${Option.isNone(account) ? "has no account" : "is a user"} (see: anna admin role)`
          })
        }
      }
      const now = yield* Clock.currentTimeMillis
      yield* sql`INSERT INTO user_tokens ${sql.insert({ token_hash: hash, user_id: userId, label: label.trim(), role, created_at: now })}`
      yield* lineage.record(hash, userId, options.mintedBy, now)
    }))
    return token
  }, storage("issue token"))

  const listTokens = Effect.fn("Accounts.listTokens")(function*(userId?: string) {
    if (userId !== undefined && Option.isNone(yield* config.getUser(userId))) {
      return yield* new AccountError({ reason: `no user "${userId}" (see: anna user list)` })
    }
    return yield* lineage.list(userId)
  }, storage("list tokens"))

  const unlock = Effect.fn("Accounts.unlock")(function*(username: string, address?: string) {
    if (address !== undefined && isIP(plainAddress(address)) === 0) {
      return yield* new AccountError({ reason: `"${address}" is not an IP address` })
    }
    return yield* throttle.clear(username, address === undefined ? undefined : throttleKey(address))
  }, storage("unlock"))

  return Accounts.of({
    create,
    get: (userId) => readAccount(userId).pipe(Effect.map(Option.map(toAccount)), storage("read account")),
    find: (name) =>
      readLogin(name).pipe(
        Effect.flatMap((byLogin) => (Option.isSome(byLogin) ? Effect.succeed(byLogin) : readAccount(name))),
        Effect.map(Option.map(toAccount)),
        storage("find account")
      ),
    list,
    setPassword,
    setRole,
    remove,
    login,
    authenticateSession,
    authenticateToken,
    logout,
    listSessions,
    revokeSession,
    unlock,
    issueToken,
    listTokens,
    revokeToken: (tokenId, options) => lineage.revoke(tokenId, options).pipe(storage("revoke token"))
  })
})

/** Accounts; needs SqlClient and ConfigStore. */
export const layer = Layer.effect(Accounts, make)
