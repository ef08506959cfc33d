/**
 * `anna admin create|list|passwd|role|remove|sessions|revoke|unlock`: accounts for the web console
 * and the admin API (src/services/Accounts.ts), their roles, their browser sessions and the login
 * throttle (kept in the database, so `unlock` works while the gateway runs).
 *
 * A password never comes from the command line (argv is visible to every user of the machine in
 * `ps` and lands in shell history): it is typed on the terminal (hidden, twice) or, with
 * `--password-stdin`, read from the first line of stdin. Without a terminal and without that flag
 * the command says so in one line and exits 2.
 */
import { Console, Effect, Layer, Option, Redacted, Schema, Stdio, Stream } from "effect"
import { Argument, Command, Flag, Prompt } from "effect/cli"
import { AccountError } from "../domain/admin/errors.ts"
import { passwordProblem } from "../domain/admin/password.ts"
import { isValidId } from "../domain/config/agent.ts"
import { HTTP_DEFAULT_HOST, HTTP_DEFAULT_PORT, HttpSettings, httpOptions } from "../domain/config/channel.ts"
import * as SqliteAccounts from "../layers/admin/SqliteAccounts.ts"
import { type AccountInfo, Accounts, ROLES, type WebSessionInfo } from "../services/Accounts.ts"
import { AppConfig } from "../services/AppConfig.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { localUrl, runningGateway } from "./gatewayPresence.ts"
import { Stores } from "./layers.ts"
import { iso, printJson, table } from "./output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const user = Argument.String("user").pipe(Argument.withDescription("User id (the username to log in with)"))
const passwordStdin = Flag.Boolean("password-stdin").pipe(
  Flag.withDescription("Read the password from the first line of stdin instead of asking on the terminal"),
  Flag.withDefault(false)
)

const NO_TERMINAL =
  "anna: stdin is not a terminal, so the password cannot be asked for: pipe it in with --password-stdin (it is never taken from the command line)"

/** Says that no password can be had (one line, exit code 2); the command then ends, having changed nothing. */
const noTerminal = Effect.gen(function*() {
  yield* Console.error(NO_TERMINAL)
  yield* Effect.sync(() => {
    process.exitCode = 2
  })
  return Option.none<string>()
})

/** The password: the first line of stdin, or typed twice on the terminal, hidden; none without a terminal. */
const readPassword = (fromStdin: boolean) =>
  Effect.gen(function*() {
    const stdio = yield* Stdio.Stdio
    if (fromStdin) {
      const line = yield* stdio.stdin.pipe(Stream.decodeText, Stream.splitLines, Stream.runHead, Effect.orDie)
      if (Option.isNone(line)) return yield* new AccountError({ reason: "no password on stdin (--password-stdin reads its first line)" })
      return Option.some(line.value.replace(/\r$/, ""))
    }
    if (!(yield* stdio.stdinIsTerminal)) return yield* noTerminal
    const ask = (message: string) => Prompt.run(Prompt.Hidden({ message })).pipe(Effect.map(Redacted.value))
    const quit = () => Console.error("anna: cancelled; nothing was changed.").pipe(Effect.andThen(Effect.interrupt))
    for (;;) {
      const first = yield* ask("Password").pipe(Effect.catchTag("QuitError", quit))
      const problem = passwordProblem(first)
      if (problem !== undefined) {
        yield* Console.error(`${problem}; try again.`)
        continue
      }
      const again = yield* ask("Password again").pipe(Effect.catchTag("QuitError", quit))
      if (again === first) return Option.some(first)
      yield* Console.error("The passwords differ; try again.")
    }
  })

const decodeHttp = Schema.decodeUnknownOption(HttpSettings)

/**
 * Where the gateway serves the console: where the running gateway published that it listens (which
 * `anna gateway --port` or port 0 may have moved), else the http channel's configured address (a
 * wildcard host is this machine).
 */
const consoleUrl = Effect.gen(function*() {
  const running = yield* runningGateway((yield* AppConfig).home)
  if (Option.isSome(running) && running.value.url !== null) return { url: `${running.value.url}/`, enabled: true, serving: true }
  const channels = yield* (yield* ConfigStore).listChannels
  const http = channels.find((c) => c.id === "http")
  const o = httpOptions(Option.getOrElse(decodeHttp(http?.config ?? {}), () => ({ host: HTTP_DEFAULT_HOST, port: HTTP_DEFAULT_PORT })))
  return { url: `${localUrl(o.host, o.port)}/`, enabled: http?.enabled ?? false, serving: false }
})

const role = Flag.Literals("role", ROLES).pipe(
  Flag.withDescription("admin (everything; the default, as the command's name says) or user (their own sessions, usage, tokens and profile)"),
  Flag.withDefault("admin")
)

const create = Command.make("create", {
  user,
  role,
  name: Flag.String("name").pipe(Flag.withDescription("Display name, when the user is created too (default: the id)"), Flag.optional),
  passwordStdin,
  json
}, (f) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const config = yield* ConfigStore
    if (Option.isSome(yield* accounts.get(f.user))) {
      return yield* new AccountError({ reason: `user "${f.user}" already has an account (see: anna admin passwd, anna admin role)` })
    }
    const existed = Option.isSome(yield* config.getUser(f.user))
    // Before the password is asked for, so a typo in the id does not cost the typing.
    if (!existed && !isValidId(f.user)) {
      return yield* new AccountError({ reason: `user id "${f.user}" must be 1–64 letters, digits, '.', '_' or '-'` })
    }
    const password = yield* readPassword(f.passwordStdin)
    if (Option.isNone(password)) return
    const account = yield* accounts.create({ userId: f.user, password: password.value, role: f.role, name: Option.getOrUndefined(f.name) })
    const where = yield* consoleUrl
    if (f.json) return yield* printJson({ account, userCreated: !existed, url: where.url })
    yield* Console.log(`Created ${account.role} account ${account.userId}${existed ? "" : ` (and the user ${account.userId})`}.`)
    yield* Console.log(
      where.serving
        ? `Open ${where.url} and log in as ${account.userId} (the gateway serves it now).`
        : `Open ${where.url} and log in as ${account.userId} (start the gateway with \`npm start\` or \`anna gateway\` if it is not running` +
          (where.enabled ? ")." : "; the http channel serves it: anna channel enable http).")
    )
  })).pipe(Command.withDescription("Create a login for the web console and admin API (the user too, if there is none); the password is asked for, or read with --password-stdin"))

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const all = yield* (yield* Accounts).list
    if (f.json) return yield* printJson(all)
    if (all.length === 0) return yield* Console.log("No accounts yet. Create the first admin with: anna admin create <user>")
    yield* Console.log(table(
      ["USER", "ROLE", "CREATED", "PASSWORD CHANGED"],
      all.map((a: AccountInfo) => [a.userId, a.role, iso(a.createdAt), iso(a.passwordChangedAt)])
    ))
  })).pipe(Command.withDescription("List accounts and their roles"))

const passwd = Command.make("passwd", { user, passwordStdin, json }, (f) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    if (Option.isNone(yield* accounts.get(f.user))) {
      return yield* new AccountError({ reason: `user "${f.user}" has no account (see: anna admin list)` })
    }
    const password = yield* readPassword(f.passwordStdin)
    if (Option.isNone(password)) return
    yield* accounts.setPassword(f.user, password.value)
    yield* f.json
      ? printJson({ userId: f.user, passwordChanged: true })
      : Console.log(`Changed the password of ${f.user}; their browser sessions were ended.`)
  })).pipe(Command.withDescription("Set a new password (asked for, or read with --password-stdin); ends the user's browser sessions"))

const roleCommand = Command.make("role", {
  user,
  role: Argument.Literals("role", ROLES).pipe(Argument.withDescription("admin or user")),
  json
}, (f) =>
  Effect.gen(function*() {
    const account = yield* (yield* Accounts).setRole(f.user, f.role)
    yield* f.json ? printJson(account) : Console.log(`${account.userId} is now ${account.role}; their browser sessions were ended.`)
  })).pipe(Command.withDescription("Change an account's role (admin or user); ends its browser sessions, and caps its API tokens at once"))

const remove = Command.make("remove", {
  user,
  yes: Flag.Boolean("yes").pipe(Flag.withDescription("Yes, remove the account"), Flag.withDefault(false)),
  json
}, (f) =>
  Effect.gen(function*() {
    if (!f.yes) {
      return yield* new AccountError({ reason: `this removes ${f.user}'s login (the user, their chats and tokens stay); pass --yes to go ahead` })
    }
    yield* (yield* Accounts).remove(f.user)
    yield* f.json
      ? printJson({ removed: f.user })
      : Console.log(`Removed the account of ${f.user} and ended their browser sessions; the user stays (anna user remove removes it).`)
  })).pipe(Command.withDescription("Remove an account (not the user) and end its browser sessions; needs --yes"))

const sessions = Command.make("sessions", {
  user: Flag.String("user").pipe(Flag.withDescription("Only this user's sessions"), Flag.optional),
  json
}, (f) =>
  Effect.gen(function*() {
    const live = yield* (yield* Accounts).listSessions(Option.getOrUndefined(f.user))
    if (f.json) return yield* printJson(live)
    if (live.length === 0) return yield* Console.log("No browser sessions.")
    yield* Console.log(table(
      ["SESSION", "USER", "CREATED", "LAST SEEN", "EXPIRES", "CLIENT"],
      live.map((s: WebSessionInfo) => [s.id, s.userId, iso(s.createdAt), iso(s.lastSeenAt), iso(s.expiresAt), s.client || "-"])
    ))
  })).pipe(Command.withDescription("List live browser sessions (by public id, never the cookie), newest first"))

const revoke = Command.make("revoke", {
  sessionId: Argument.String("session-id").pipe(Argument.withDescription("Session id from anna admin sessions")),
  json
}, (f) =>
  Effect.gen(function*() {
    const ended = yield* (yield* Accounts).revokeSession(f.sessionId)
    yield* f.json ? printJson({ revoked: ended }) : Console.log(`Ended session ${ended.id} of ${ended.userId}; its next request must log in again.`)
  })).pipe(Command.withDescription("End one browser session at once"))

const unlock = Command.make("unlock", {
  username: Argument.String("username").pipe(Argument.withDescription("The username whose failed logins to forget (it need not exist)")),
  address: Flag.String("address").pipe(
    Flag.withDescription("Only the failed logins from this IP address (an IPv6 address counts by its /64), and that address's own count across usernames"),
    Flag.optional
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const address = Option.getOrUndefined(f.address)
    const cleared = yield* (yield* Accounts).unlock(f.username, address)
    if (f.json) return yield* printJson({ user: f.username, address: address ?? null, cleared })
    if (cleared.length === 0 && address === undefined) return yield* Console.log(`No failed logins of ${f.username} to clear.`)
    const from = address !== undefined
      ? address
      : `${cleared.length} address${cleared.length === 1 ? "" : "es"} (${cleared.join(", ")})`
    yield* Console.log(`Cleared the failed logins of ${f.username} from ${from}; they may log in at once.`)
  })).pipe(Command.withDescription("Forget a username's failed logins (the login throttle), from every address or one; the running gateway sees it at once"))

/** Accounts over the stores (users are ConfigStore's). */
export const AccountsLive = SqliteAccounts.layer.pipe(Layer.provideMerge(Stores))

export const adminCommand = Command.make("admin").pipe(
  Command.withDescription("Web console and admin API logins: create, list, passwd, role, remove, sessions, revoke, unlock"),
  Command.withSubcommands([create, list, passwd, roleCommand, remove, sessions, revoke, unlock]),
  Command.provide(AccountsLive)
)
