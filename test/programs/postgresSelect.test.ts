/**
 * Selecting PostgreSQL (issue 26) as a user does, with the built binary and a real server:
 * `ANNA_DATABASE_URL` and `anna gateway --database-url` (the flag wins), a malformed URL (exit 2, one
 * line), an unreachable server (named by host:port), `anna doctor`'s database checks, two processes
 * migrating a fresh database at once, and the URL's password printed nowhere.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { existsSync, readdirSync, rmSync } from "node:fs"
import { join, resolve } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import OpenAI from "openai"
import { afterAll, beforeAll } from "vitest"
import { annaEnv, finish, MAIN, newHome, type Run, start, waitForOutput } from "../support/cli.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { DB_PASSWORD, freshDatabaseUrl } from "../support/processDatabases.ts"
import { postgresEnabled } from "../support/postgres.ts"
import { freePort } from "../support/ports.ts"
import { childEnv } from "../support/spawnAnna.ts"

const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const MIGRATIONS = readdirSync(resolve(import.meta.dirname, "../../migrations/pg")).filter((f) => /^\d+_.+\.sql$/.test(f)).length

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}

const printed = (r: Run) => r.stdout + r.stderr

interface Check {
  readonly area: string
  readonly name: string
  readonly ok: boolean
  readonly detail: string
  readonly fix?: string
}

const doctorJson = async (h: string, env: Record<string, string>) => {
  const r = await annaEnv(h, { ...NO_DOCKER, ...env }, "doctor", "--json")
  assert.notInclude(printed(r), DB_PASSWORD)
  return { run: r, checks: (JSON.parse(r.stdout) as { checks: Array<Check> }).checks.filter((c) => c.area === "database") }
}

/** `anna` with stdin (for `anna admin create --password-stdin`). */
const annaIn = (h: string, env: Record<string, string>, input: string, ...args: ReadonlyArray<string>): Promise<Run> => {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...childEnv(h, env), ANNA_LOG_LEVEL: "warn", ...env }, stdio: ["pipe", "pipe", "pipe"] })
  child.stdin.end(input)
  return finish(child)
}

describe("selecting the database: refusals", () => {
  it("a URL that is not postgres:// is one line and exit 2, without its password; so is a bad --database-url", async () => {
    const h = home()
    for (const url of [`mysql://anna:${DB_PASSWORD}@db.example/anna`, `postgres//anna:${DB_PASSWORD}@db.example/anna`]) {
      const r = await annaEnv(h, { ANNA_DATABASE_URL: url }, "agent", "list")
      assert.strictEqual(r.code, 2, printed(r))
      assert.strictEqual(r.stderr.trim().split("\n").length, 1, r.stderr)
      assert.match(r.stderr, /^anna: ANNA_DATABASE_URL (has the scheme "mysql"|is not a URL): expected postgres:\/\//)
      assert.notInclude(printed(r), DB_PASSWORD)
    }
    const flag = await annaEnv(h, {}, "gateway", "--port", "0", "--database-url", `http://anna:${DB_PASSWORD}@db.example/anna`)
    assert.strictEqual(flag.code, 2, printed(flag))
    assert.include(flag.stderr, "anna: --database-url has the scheme \"http\"")
    assert.notInclude(printed(flag), DB_PASSWORD)
    assert.isFalse(existsSync(join(h, "anna.db")))
  })

  it("an unreachable server: one line naming host:port and the masked URL, exit 1, no stack", async () => {
    const h = home()
    const port = await freePort()
    const r = await annaEnv(h, { ANNA_DATABASE_URL: `postgres://anna:${DB_PASSWORD}@127.0.0.1:${port}/anna` }, "memory", "sessions")
    assert.strictEqual(r.code, 1, printed(r))
    assert.deepStrictEqual(r.stderr.trim().split("\n"), [
      `anna: could not open the PostgreSQL database at 127.0.0.1:${port} (postgres://anna:***@127.0.0.1:${port}/anna): connect ECONNREFUSED 127.0.0.1:${port}`
    ])
    // doctor says the same as a finding, within its short timeout.
    const doctor = await doctorJson(h, { ANNA_DATABASE_URL: `postgres://anna:${DB_PASSWORD}@127.0.0.1:${port}/anna` })
    assert.strictEqual(doctor.run.code, 1)
    assert.deepStrictEqual(doctor.checks.map((c) => [c.name, c.ok]), [["connection", false]])
    assert.include(doctor.checks[0]?.fix, `127.0.0.1:${port}`)
  })
})

describe.skipIf(!postgresEnabled())("selecting the database: PostgreSQL", () => {
  it("doctor checks the connection, the version, the migrations and the privileges, and masks the URL", async () => {
    const h = home()
    const url = await freshDatabaseUrl()
    const { run, checks } = await doctorJson(h, { ANNA_DATABASE_URL: url })
    assert.deepStrictEqual(checks.map((c) => [c.name, c.ok]), [["connection", true], ["version", true], ["migrations", true], ["privileges", true], ["state", true]], run.stdout)
    assert.match(checks[1]?.detail ?? "", /^PostgreSQL 1\d\.\d+.*\(14 or newer is needed\)$/)
    // doctor looked before opening the stores (which migrated it).
    assert.match(checks[2]?.detail ?? "", new RegExp(`^0 of ${MIGRATIONS} applied; 1_`))
    assert.include(checks[0]?.detail, "postgres://anna:***@127.0.0.1:")
    assert.isFalse(existsSync(join(h, "anna.db")))
    const again = await doctorJson(h, { ANNA_DATABASE_URL: url })
    assert.strictEqual(again.checks[2]?.detail, `${MIGRATIONS} of ${MIGRATIONS} applied (effect_sql_migrations)`)
    const text = await annaEnv(h, { ...NO_DOCKER, ANNA_DATABASE_URL: url }, "doctor")
    assert.include(text.stdout, "ok   database/privileges: role anna may create in the schema public")
    assert.notInclude(printed(text), DB_PASSWORD)
  }, 60_000)

  it("doctor names what a role without write privileges lacks", async () => {
    const h = home()
    const url = await freshDatabaseUrl()
    assert.strictEqual((await annaEnv(h, { ANNA_DATABASE_URL: url }, "agent", "list")).code, 0)
    // As the owner: a role that may only read.
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe("CREATE ROLE anna_reader LOGIN")
      yield* sql.unsafe("GRANT SELECT ON ALL TABLES IN SCHEMA public TO anna_reader")
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))))
    const reader = new URL(url)
    reader.username = "anna_reader"
    const { run, checks } = await doctorJson(h, { ANNA_DATABASE_URL: reader.toString() })
    assert.strictEqual(run.code, 1)
    const privileges = checks.find((c) => c.name === "privileges")
    assert.strictEqual(privileges?.ok, false)
    assert.include(privileges?.detail, "role anna_reader cannot CREATE in the schema public")
    assert.include(privileges?.detail, "lacks SELECT, INSERT, UPDATE or DELETE on ")
    assert.include(privileges?.detail, "ctx_messages")
    assert.include(privileges?.fix, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO anna_reader")
  }, 60_000)

  it("two processes starting at once on a fresh database migrate it once", async () => {
    const h = home()
    const url = await freshDatabaseUrl()
    const runs = await Promise.all([0, 1, 2].map(() => annaEnv(h, { ANNA_DATABASE_URL: url }, "agent", "list", "--json")))
    for (const r of runs) assert.deepStrictEqual([r.code, r.stdout.trim()], [0, "[]"], r.stderr)
    const { checks } = await doctorJson(h, { ANNA_DATABASE_URL: url })
    assert.strictEqual(checks.find((c) => c.name === "migrations")?.detail, `${MIGRATIONS} of ${MIGRATIONS} applied (effect_sql_migrations)`)
  }, 60_000)

  it("the gateway on --database-url (winning over ANNA_DATABASE_URL): a conversation over HTTP, the admin API lists it, the CLI sees it", async () => {
    const h = home()
    const url = await freshDatabaseUrl()
    // The environment names a server that is not there: the flag must win.
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-pg", ANNA_DATABASE_URL: `postgres://anna:${DB_PASSWORD}@127.0.0.1:${await freePort()}/none` }
    const pg = { ...env, ANNA_DATABASE_URL: url }
    fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "stored in PostgreSQL" }] }))
    const gateway = start(h, ["gateway", "--port", "0", "--database-url", url], "info", env)
    let out = ""
    gateway.stderr?.on("data", (d: Buffer) => (out += d.toString()))
    const done = finish(gateway)
    try {
      await waitForOutput(gateway, "press Ctrl+C")
      const base = /web console and admin API on (http:\/\/\S+)\/;/.exec(out)?.[1]
      assert.isDefined(base, out)
      assert.include(out, "anna gateway: database PostgreSQL postgres://anna:***@127.0.0.1:")
      assert.strictEqual((await annaEnv(h, pg, "user", "add", "pia")).code, 0)
      const token = (await annaEnv(h, pg, "user", "token", "pia")).stdout.trim()
      const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: token, maxRetries: 0 })
      const r = await client.chat.completions.create({ model: "default", user: "pg-chat", messages: [{ role: "user", content: "Where do you keep this?" }] })
      assert.include(r.choices[0]?.message.content, "stored in PostgreSQL")

      assert.strictEqual((await annaIn(h, pg, "correct horse battery staple\n", "admin", "create", "root", "--role", "admin", "--password-stdin")).code, 0)
      const admin = (await annaEnv(h, pg, "user", "token", "root", "--role", "admin")).stdout.trim()
      const listed = await fetch(`${base}/api/sessions`, { headers: { authorization: `Bearer ${admin}` } })
      assert.strictEqual(listed.status, 200)
      assert.include(await listed.text(), "pg-chat")
      const sessions = await annaEnv(h, pg, "memory", "sessions", "--json")
      assert.include(sessions.stdout, "pg-chat")
    } finally {
      gateway.kill("SIGTERM")
    }
    const run = await done
    assert.strictEqual(run.code, 0, run.stderr)
    assert.notInclude(printed(run), DB_PASSWORD)
    assert.isFalse(existsSync(join(h, "anna.db")))
  }, 90_000)
})
