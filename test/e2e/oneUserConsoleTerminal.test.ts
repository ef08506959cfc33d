/**
 * One person, one user (issue 24): the OS user NAME who chats with `anna chat` (identity `cli:NAME`)
 * and logs in to the console as NAME is one anna user with one memory, whichever came first.
 * Through the real CLI (child processes, a pty for the question) and the admin API of a running
 * gateway (login, the user's sessions, the web chat, the password change).
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { userInfo } from "node:os"
import { annaEnv, finish, MAIN, newHome, start, waitForLine } from "../support/cli.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { ptyAnna } from "../support/pty.ts"
import { childEnv } from "../support/spawnAnna.ts"

const suite = fakeLlmSuite()

/** The OS user the children run as: `anna chat` is `cli:<this>`. */
const OS_USER = userInfo().username
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const PASSWORD = "one person, one user"

interface UserJson {
  readonly id: string
  readonly name: string
  readonly identities: ReadonlyArray<{ readonly platform: string; readonly externalId: string }>
}
interface AccountJson {
  readonly login: string
  readonly userId: string
  readonly role: string
}
interface Created {
  readonly account: AccountJson
  readonly userCreated: boolean
  readonly linkedTo: string | null
  readonly url: string
}

const onboarded = async () => {
  const home = suite.keep(newHome())
  const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-one-user", ...NO_DOCKER }
  const run = (...args: Array<string>) => annaEnv(home, env, ...args)
  const ok = async (...args: Array<string>) => {
    const r = await run(...args)
    assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stdout}${r.stderr}`)
    return r
  }
  const json = async <A>(...args: Array<string>) => JSON.parse((await ok(...args, "--json")).stdout) as A
  /** `anna admin create …` with the password on stdin (so no terminal: nothing is asked). */
  const create = (...args: Array<string>) => {
    const child = spawn(process.execPath, [MAIN, "admin", "create", ...args, "--password-stdin"], {
      env: { ...childEnv(home, env), ...env, ANNA_HOME: home, ANNA_LOG_LEVEL: "warn" },
      stdio: ["pipe", "pipe", "pipe"]
    })
    child.stdin.end(`${PASSWORD}\n`)
    return finish(child)
  }
  await ok("onboard", "--from-env")
  suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "noted." }] }))
  return { home, env, run, ok, json, create }
}

/** The users, as `anna user list --json` gives them. */
const usersOf = (json: <A>(...args: Array<string>) => Promise<A>) => json<ReadonlyArray<UserJson>>("user", "list")
const cliIdentity = (u: UserJson | undefined) => u?.identities.some((i) => i.platform === "cli" && i.externalId === OS_USER) ?? false

describe("e2e: the terminal user and the console account of one person are one user", () => {
  it("anna chat first, then anna admin create NAME: the account goes to that user, whose sessions the console and the terminal share", async () => {
    const { home, ok, json, create } = await onboarded()
    await ok("chat", "-p", "remember: my cat is called Miso")
    const [terminal] = await usersOf(json)
    assert.isDefined(terminal)
    assert.match(terminal?.id ?? "", /^u_/)
    assert.isTrue(cliIdentity(terminal))
    const userId = terminal?.id ?? ""

    const made = await create(OS_USER, "--json")
    assert.strictEqual(made.code, 0, made.stderr)
    const doc = JSON.parse(made.stdout) as Created
    assert.deepStrictEqual(
      [doc.account.login, doc.account.userId, doc.account.role, doc.userCreated, doc.linkedTo],
      [OS_USER, userId, "admin", false, userId]
    )
    assert.strictEqual(doc.url, "http://127.0.0.1:8787/")
    assert.deepStrictEqual((await usersOf(json)).map((u) => u.id), [userId], "one user, not two")
    const accounts = await json<ReadonlyArray<AccountJson>>("admin", "list")
    assert.deepStrictEqual(accounts.map((a) => [a.login, a.userId]), [[OS_USER, userId]])
    // The account is managed by the name one logs in with.
    await ok("admin", "role", OS_USER, "user")
    await ok("admin", "role", OS_USER, "admin")

    const gateway = start(home, ["gateway", "--port", "0"], "info", NO_DOCKER)
    const stopped = finish(gateway)
    try {
      const url = await waitForLine(gateway, (line) => /HTTP channel \(OpenAI-compatible\) on (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(line)?.[1])
      const logIn = async (password: string) => {
        const res = await fetch(`${url}/api/auth/login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: OS_USER, password })
        })
        assert.strictEqual(res.status, 200, await res.clone().text())
        const body = (await res.json()) as { user: string; login: string; csrfToken: string }
        return { user: body.user, login: body.login, csrf: body.csrfToken, cookie: (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "" }
      }
      const session = await logIn(PASSWORD)
      assert.strictEqual(session.user, userId, "logged in as the terminal's user")
      // The console names the person by the account's login, not the terminal user's generated id.
      assert.strictEqual(session.login, OS_USER)
      const me = (await (await fetch(`${url}/api/auth/me`, { headers: { cookie: session.cookie } })).json()) as { user: string; login?: string }
      assert.deepStrictEqual([me.user, me.login], [userId, OS_USER])
      const listed = await fetch(`${url}/api/sessions?user=${userId}`, { headers: { cookie: session.cookie } })
      const sessions = ((await listed.json()) as { sessions: ReadonlyArray<{ sessionKey: string }> }).sessions.map((s) => s.sessionKey)
      assert.include(sessions, `default:cli:${userId}:dm`, "the terminal's conversation, seen from the console")

      const chat = await fetch(`${url}/api/chat`, {
        method: "POST",
        headers: { cookie: session.cookie, "x-csrf-token": session.csrf, "content-type": "application/json" },
        body: JSON.stringify({ agent: "default", message: "hello from the browser" })
      })
      assert.include(await chat.text(), "noted.")

      // The console's own password change logs in again by the account's name, not the user id.
      const changed = await fetch(`${url}/api/auth/password`, {
        method: "PUT",
        headers: { cookie: session.cookie, "x-csrf-token": session.csrf, "content-type": "application/json" },
        body: JSON.stringify({ currentPassword: PASSWORD, newPassword: `${PASSWORD} again` })
      })
      assert.strictEqual(changed.status, 200, await changed.clone().text())
      assert.strictEqual((await logIn(`${PASSWORD} again`)).user, userId)
    } finally {
      gateway.kill("SIGTERM")
    }
    assert.strictEqual((await stopped).code, 0)

    // And from the terminal: both conversations are this one user's.
    const mine = await json<ReadonlyArray<{ sessionKey: string; userId: string }>>("memory", "sessions", "--user", userId)
    assert.sameMembers(mine.map((s) => s.sessionKey), [`default:cli:${userId}:dm`, `default:web:${userId}:default`])
  }, 120_000)

  it("says what it did in one line; --no-link keeps a separate user; --link and --no-link together are a usage error", async () => {
    const { ok, json, create, run } = await onboarded()
    await ok("chat", "-p", "hello")
    const [terminal] = await usersOf(json)
    const userId = terminal?.id ?? ""

    const both = await run("admin", "create", OS_USER, "--link", "--no-link")
    assert.strictEqual(both.code, 2, both.stderr)
    assert.include(both.stderr, "--link")

    const separate = await create(OS_USER, "--no-link", "--role", "user")
    assert.strictEqual(separate.code, 0, separate.stderr)
    assert.strictEqual(
      separate.stdout.split("\n")[0],
      `Created user account ${OS_USER} (and the user ${OS_USER}); the terminal user ${userId} (cli:${OS_USER}) stays a separate user with its own memory.`
    )
    assert.sameMembers((await usersOf(json)).map((u) => u.id), [userId, OS_USER])
    await ok("admin", "remove", OS_USER, "--yes")
    await ok("user", "remove", OS_USER, "--delete-sessions")

    const linked = await create(OS_USER)
    assert.strictEqual(linked.code, 0, linked.stderr)
    assert.strictEqual(
      linked.stdout.split("\n")[0],
      `Created admin account ${OS_USER} and linked it to the existing user ${userId} (who chats as cli:${OS_USER}); the web chat and \`anna chat\` share one memory.`
    )
    assert.deepStrictEqual((await usersOf(json)).map((u) => u.id), [userId])
  }, 120_000)

  it("on a terminal it asks, yes by default; answering no makes a separate user", async () => {
    const { home, env, ok, json } = await onboarded()
    await ok("chat", "-p", "hello")
    const [terminal] = await usersOf(json)
    const userId = terminal?.id ?? ""

    const asked = ptyAnna(home, ["admin", "create", OS_USER], env)
    await asked.screen(`share one memory?`)
    assert.include(asked.output(), `${userId}`)
    asked.type("n")
    await asked.screen("Password")
    asked.type(`${PASSWORD}\r`)
    await asked.screen("Password again")
    asked.type(`${PASSWORD}\r`)
    const no = await asked.done
    assert.strictEqual(no.code, 0, asked.output())
    assert.include(asked.output(), "stays a separate user")
    assert.sameMembers((await usersOf(json)).map((u) => u.id), [userId, OS_USER])
    await ok("user", "remove", OS_USER, "--delete-sessions")

    const again = ptyAnna(home, ["admin", "create", OS_USER], env)
    await again.screen(`share one memory?`)
    again.type("\r")
    await again.screen("Password")
    again.type(`${PASSWORD}\r`)
    await again.screen("Password again")
    again.type(`${PASSWORD}\r`)
    const yes = await again.done
    assert.strictEqual(yes.code, 0, again.output())
    assert.include(again.output(), `linked it to the existing user ${userId}`)
    assert.deepStrictEqual((await usersOf(json)).map((u) => u.id), [userId])
  }, 120_000)

  it("anna admin create NAME first, then anna chat as NAME: the terminal becomes that user's, said once", async () => {
    const { ok, json, create } = await onboarded()
    const made = await create(OS_USER, "--json")
    assert.strictEqual(made.code, 0, made.stderr)

    const first = await ok("chat", "-p", "hello from the terminal")
    assert.strictEqual(first.stdout.trim(), "noted.")
    assert.include(first.stderr, `anna: linked cli:${OS_USER} to the existing user ${OS_USER}, so \`anna chat\` and the web chat share one memory`)
    const users = await usersOf(json)
    assert.deepStrictEqual(users.map((u) => u.id), [OS_USER], "no u_… user")
    assert.isTrue(cliIdentity(users[0]))
    const second = await ok("chat", "-p", "and again")
    assert.notInclude(second.stderr, "linked cli:")
    const mine = await json<ReadonlyArray<{ sessionKey: string }>>("memory", "sessions", "--user", OS_USER)
    assert.deepStrictEqual(mine.map((s) => s.sessionKey), [`default:cli:${OS_USER}:dm`])
    // Nobody chatted in the terminal when the account was made: nothing to link then.
    assert.deepInclude(JSON.parse(made.stdout) as Created, { userCreated: true, linkedTo: null })
  }, 120_000)
})
