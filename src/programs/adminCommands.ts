/**
 * `anna admin create|list|passwd|role|remove|sessions|revoke|unlock`: accounts for the web console
 * and the admin API (src/services/Accounts.ts), their roles, their browser sessions and the login
 * throttle (kept in the database, so `unlock` works while the gateway runs). An account is named by
 * the name it logs in with (or its user's id).
 *
 * One person, one user (issue 24): `anna chat` by the OS user NAME is the identity `cli:NAME`, which
 * makes a user `u_…` on first contact. `anna admin create NAME` with no user NAME but such a terminal
 * user gives the account NAME to that user (asked on a terminal, yes by default; `--link` and
 * `--no-link` decide without asking; without a terminal it links), so the web chat and the terminal
 * chat share one memory instead of two users keeping two. The other order is the runtime's: the
 * first `anna chat` of NAME goes to the user NAME (ConfigStore.claimIdentity).
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
import { iso, printJson, table, usageError } from "./output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const user = Argument.String("user").pipe(Argument.withDescription("The name the account logs in with (its user's id, unless it was linked to a terminal user)"))

/** The user of the account named `name` (its login, or its user's id); AccountError when there is none. */
const accountUser = (name: string) =>
  Effect.gen(function*() {
    const found = yield* (yield* Accounts).find(name)
    if (Option.isNone(found)) return yield* new AccountError({ reason: `user "${name}" has no account (see: anna admin list)` })
    return found.value.userId
  })
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

/** `cli:NAME`: who `anna chat` by the OS user NAME is (TerminalChannel's platform). */
const terminalIdentity = (name: string) => `cli:${name}`

/** Whether to give the account to the terminal user: asked on a terminal (yes by default), else yes. */
const askLink = (name: string, terminalUser: string) =>
  Effect.gen(function*() {
    if (!(yield* (yield* Stdio.Stdio).stdinIsTerminal)) return true
    const message = `There is no user ${name}, but ${terminalUser} chats as ${terminalIdentity(name)} (\`anna chat\` by the OS user ${name}). ` +
      `Give the console account ${name} to ${terminalUser}, so the web chat and \`anna chat\` share one memory?`
    return yield* Prompt.run(Prompt.Confirm({ message, initial: true })).pipe(
      Effect.catchTag("QuitError", () => Console.error("anna: cancelled; nothing was changed.").pipe(Effect.andThen(Effect.interrupt)))
    )
  })

const create = Command.make("create", {
  user,
  role,
  name: Flag.String("name").pipe(Flag.withDescription("Display name, when the user is created too (default: the id)"), Flag.optional),
  link: Flag.Boolean("link").pipe(
    Flag.withDescription(
      "When there is no user <user> but one chats as cli:<user> (`anna chat` by that OS user): --link gives the account to that user, --no-link makes a separate user <user>; without either it is asked on a terminal (yes by default), else linked"
    ),
    Flag.optional
  ),
  passwordStdin,
  json
}, (f) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const config = yield* ConfigStore
    const taken = yield* accounts.find(f.user)
    if (Option.isSome(taken)) {
      return yield* new AccountError({
        reason: taken.value.userId === f.user
          ? `user "${f.user}" already has an account (see: anna admin passwd, anna admin role)`
          : `the console account ${f.user} already exists (the user ${taken.value.userId}'s; see: anna admin list)`
      })
    }
    const existed = Option.isSome(yield* config.getUser(f.user))
    // Before the password is asked for, so a typo in the id does not cost the typing.
    if (!existed && !isValidId(f.user)) {
      return yield* usageError(["anna", "admin", "create"], `user id "${f.user}" must be 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit`)
    }
    // One person, one user: the terminal user of the OS user of this name (identities are unique: one at most).
    const terminal = (yield* config.listUsers).find((u) =>
      u.id !== f.user && u.identities.some((i) => i.platform === "cli" && i.externalId === f.user)
    )
    let linkTo: string | undefined
    if (!existed && terminal !== undefined && !Option.contains(f.link, false)) {
      const theirs = yield* accounts.get(terminal.id)
      if (Option.isSome(theirs)) {
        return yield* new AccountError({
          reason: `${terminal.id}, who chats as ${terminalIdentity(f.user)}, already has the console account ${theirs.value.login}: ` +
            `log in as ${theirs.value.login}, or pass --no-link for a separate user ${f.user}`
        })
      }
      if (Option.isSome(f.link) || (yield* askLink(f.user, terminal.id))) linkTo = terminal.id
    }
    const password = yield* readPassword(f.passwordStdin)
    if (Option.isNone(password)) return
    const account = yield* accounts.create({
      userId: linkTo ?? f.user,
      login: f.user,
      password: password.value,
      role: f.role,
      name: linkTo === undefined ? Option.getOrUndefined(f.name) : undefined
    })
    const where = yield* consoleUrl
    const userCreated = !existed && linkTo === undefined
    if (f.json) return yield* printJson({ account, userCreated, linkedTo: linkTo ?? null, url: where.url })
    const cli = terminal === undefined ? "" : terminalIdentity(f.user)
    yield* Console.log(
      linkTo !== undefined
        ? `Created ${account.role} account ${account.login} and linked it to the existing user ${linkTo} (who chats as ${cli}); the web chat and \`anna chat\` share one memory.`
        : `Created ${account.role} account ${account.login}${userCreated ? ` (and the user ${account.userId})` : ""}` +
          (terminal === undefined ? "." : `; the terminal user ${terminal.id} (${cli}) stays a separate user with its own memory.`)
    )
    if (existed && terminal !== undefined) {
      // Split before: say how to make the terminal this user's (the terminal user's sessions stay with it).
      yield* Console.log(`To chat in the terminal as ${f.user}: anna user unlink ${terminal.id} ${cli} && anna user link ${f.user} ${cli} (${terminal.id}'s sessions stay ${terminal.id}'s).`)
    }
    yield* Console.log(
      where.serving
        ? `Open ${where.url} and log in as ${account.login} (the gateway serves it now).`
        : `Open ${where.url} and log in as ${account.login} (start the gateway with \`npm start\` or \`anna gateway\` if it is not running` +
          (where.enabled ? ")." : "; the http channel serves it: anna channel enable http).")
    )
  })).pipe(
    Command.withDescription(
      "Create a login for the web console and admin API (the user too, if there is none, unless the OS user of that name chats with `anna chat`: then that user, see --link); the password is asked for, or read with --password-stdin"
    )
  )

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const all = yield* (yield* Accounts).list
    if (f.json) return yield* printJson(all)
    if (all.length === 0) return yield* Console.log("No accounts yet. Create the first admin with: anna admin create <user>")
    yield* Console.log(table(
      ["LOGIN", "USER", "ROLE", "CREATED", "PASSWORD CHANGED"],
      all.map((a: AccountInfo) => [a.login, a.userId, a.role, iso(a.createdAt), iso(a.passwordChangedAt)])
    ))
  })).pipe(Command.withDescription("List accounts and their roles"))

const passwd = Command.make("passwd", { user, passwordStdin, json }, (f) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const userId = yield* accountUser(f.user)
    const password = yield* readPassword(f.passwordStdin)
    if (Option.isNone(password)) return
    yield* accounts.setPassword(userId, password.value)
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
    const account = yield* (yield* Accounts).setRole(yield* accountUser(f.user), f.role)
    yield* f.json ? printJson(account) : Console.log(`${account.login} is now ${account.role}; their browser sessions were ended.`)
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
    yield* (yield* Accounts).remove(yield* accountUser(f.user))
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
