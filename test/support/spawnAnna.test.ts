/**
 * What an `anna` a test starts inherits from the shell that runs the tests (issue 26): never the
 * shell's own database or provider keys — a developer's `ANNA_DATABASE_URL` once reached every
 * process the suite started, which would have written test users and sessions into that database —
 * and, when the whole suite runs on PostgreSQL, its home's own database.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { childEnv } from "./spawnAnna.ts"
import { suiteOnPostgres } from "./suiteDatabase.ts"

const saved = { ...process.env }
afterEach(() => {
  for (const k of ["ANNA_DATABASE_URL", "OPENAI_API_KEY", "ANNA_TEST_DATABASE"]) {
    if (saved[k] === undefined) delete process.env[k]
    else process.env[k] = saved[k]
  }
})

describe("a test's anna processes", () => {
  it("never inherit the shell's ANNA_DATABASE_URL or provider keys; the home is theirs", () => {
    process.env.ANNA_DATABASE_URL = "postgres://prod:secret@db.example/anna"
    process.env.OPENAI_API_KEY = "sk-live-of-the-developer"
    delete process.env.ANNA_TEST_DATABASE
    const env = childEnv("/tmp/some-home", {})
    assert.isUndefined(env["ANNA_DATABASE_URL"])
    assert.isUndefined(env["OPENAI_API_KEY"])
    assert.strictEqual(env["ANNA_HOME"], "/tmp/some-home")
  })

  it("a database the test chooses itself is left to it (it is merged after)", () => {
    process.env.ANNA_TEST_DATABASE = "postgres"
    const env = childEnv("/tmp/other-home", { ANNA_DATABASE_URL: "postgres://anna@127.0.0.1:1/chosen" })
    assert.isUndefined(env["ANNA_DATABASE_URL"], "not made for the home: the caller's own goes on top")
  })

  it("ANNA_TEST_DATABASE takes sqlite or postgres, and nothing else", () => {
    delete process.env.ANNA_TEST_DATABASE
    assert.isFalse(suiteOnPostgres())
    process.env.ANNA_TEST_DATABASE = "sqlite"
    assert.isFalse(suiteOnPostgres())
    process.env.ANNA_TEST_DATABASE = "postgres"
    assert.isTrue(suiteOnPostgres())
    process.env.ANNA_TEST_DATABASE = "mysql"
    assert.throws(() => suiteOnPostgres(), /ANNA_TEST_DATABASE=mysql: expected sqlite \(the default\) or postgres/)
  })
})
